"""Speculative decoding as a deployment option: k draft tokens per step, the acceptance of each
drafted position, and what drafts them (the model's own multi-token-prediction modules, "mtp", or a
separate draft model by catalogue name).

Expected tokens per verify step (Leviathan, Kalman & Matias 2023, "Fast Inference from
Transformers via Speculative Decoding", eq. 1; Chen et al. 2023, "Accelerating Large Language
Model Decoding with Speculative Sampling"): with a_i the probability that drafted position i is
accepted given positions 1..i-1 were (the chain stops at the first rejection, and the verify step
always yields one token of its own — the correction or the bonus token),

    E = 1 + sum_{i=1..k} prod_{j<=i} a_j,

which for i.i.d. acceptance a is 1 + a + ... + a^k = (1 - a^(k+1)) / (1 - a). k = 0 is plain
decoding (E = 1).

Acceptance defaults per model family, for MTP drafts: the first drafted position from a published figure
(a family without one needs the acceptance given: never invented), later positions decaying from it
(``decaying``) by a fitted ratio:

    a_1 = the published first-draft acceptance,   a_i = a_1 · δ^(i-1)   (i >= 2),

a chain of conditional acceptances that falls geometrically. Why it decays: a model ships one MTP
module trained to predict the token after next; engines draft k > 1 tokens by running it again on
its own drafted hidden states and tokens (TensorRT-LLM, SGLang and vLLM do so for DeepSeek's single
MTP layer), inputs further from what it was trained on at each step, so each later guess is accepted
less often. δ is not published; it is fitted (``MTP_DECAY``) and scored out of sample
(``benchmarks/speculative_mtp.py``, results in ``benchmarks/results/speculative_2026-11-28.md``).

* DeepSeek-V3 (and V3.1, V3.2-Exp, the same MTP module): "the acceptance rate of the second token
  prediction ranges between 85% and 90%" (DeepSeek-V3 Technical Report, arXiv:2412.19437, §5.4.3,
  with one MTP module, k = 1). a_1 = 0.85, the low end. DeepSeek-R1 has the same architecture and an
  MTP module of the same shape but no published acceptance: it takes V3's, labelled as transferred.
* δ = ``MTP_DECAY`` = 0.70: fitted on the 88 DeepSeek-R1 TensorRT-LLM rows of NVIDIA's silicon set
  that ran MTP (``fidelity.silicon.SPECULATIVE_RUNS``; B200; k = 3 assumed, the number of MTP draft
  steps of TensorRT-LLM's published low-latency DeepSeek-R1 configurations), a grid of 0.05 minimising
  the median |log(pred/meas)|; leave-one-(prompt, output)-shape-out it prices their TPOT within
  9.1% at the median (p90 28%) against 19.7% (p90 44%) with a_i = 0.85 at every position. One model,
  one chip, one engine: treat it as a transferred figure elsewhere.

Omitted: tree drafts (several candidates per position; EAGLE-2, Medusa), the rejection-sampling
arithmetic itself (a few element-wise ops on the logits), acceptance that varies with the request
(a single mean per position stands for all), and the draft's own KV cache when a draft model is used.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import SpecError

MTP = "mtp"
MAX_SPEC_TOKENS = 32
"""Input bound on draft tokens per verify step (a sanity limit, not a published figure): the expected tokens per
step saturate at 1 / (1 - a) for acceptance a, so deeper chains only add verify and draft cost."""

MTP_DECAY = 0.70
"""δ, the ratio of each drafted position's conditional acceptance to the one before (position 2 on): fitted
on measured MTP serving rows (module docstring; ``benchmarks/speculative_mtp.py``), not published."""
_V3 = ("DeepSeek-V3 Technical Report (arXiv:2412.19437) §5.4.3: 85-90% acceptance of the second token with MTP; "
       "the low end")
_DECAY = (f"positions >= 2 decay by {MTP_DECAY} each (fitted on NVIDIA's measured DeepSeek-R1 MTP rows, "
          "benchmarks/speculative_mtp.py)")

# family prefix (model name without its org, lower case) -> (first-position acceptance, decay, source)
FAMILY_ACCEPTANCE: dict[str, tuple[float, float, str]] = {
    "deepseek-v3": (0.85, MTP_DECAY, _V3),
    "deepseek-r1": (0.85, MTP_DECAY, f"transferred from DeepSeek-V3 (same architecture and MTP module shape): {_V3}"),
}


def _family_name(model_name: str) -> str:
    """'deepseek-ai--DeepSeek-R1_config' or 'deepseek-ai/DeepSeek-R1' -> 'deepseek-r1' (the catalogue's
    names and Hugging Face config files alike)."""
    name = model_name.lower().replace("\\", "/").rsplit("/", 1)[-1]
    name = name.split("--", 1)[-1]
    for suffix in (".json", "_config"):
        name = name.removesuffix(suffix)
    return name


def decaying(first: float, decay: float, k: int) -> tuple[float, ...]:
    """a_i = first · decay^(i-1), i = 1..k (module docstring)."""
    return tuple(float(first) * float(decay) ** i for i in range(k))


def family_default(model_name: str, k: int = 1) -> tuple[tuple[float, ...], str] | None:
    """(acceptance of positions 1..k, source) of the model's family, or None when no figure is published; the
    source names the fitted decay when k > 1 uses it."""
    name = _family_name(model_name)
    for prefix, (first, decay, source) in FAMILY_ACCEPTANCE.items():
        if name.startswith(prefix):
            return decaying(first, decay, k), (source if k == 1 else f"{source}; {_DECAY}")
    return None


def expected_tokens_per_step(acceptance) -> float:
    """E = 1 + sum_i prod_{j<=i} a_j (Leviathan et al. 2023, eq. 1; see the module docstring)."""
    total, run = 1.0, 1.0
    for a in acceptance:
        run *= float(a)
        total += run
    return total


@dataclass(frozen=True, kw_only=True)
class Speculation:
    """k draft tokens per verify step; ``acceptance[i]`` the probability that drafted position i+1 is
    accepted given the earlier ones were (one value per position, length k); ``draft``: "mtp" (the
    model's multi-token-prediction modules) or a catalogue model name (a draft model);
    ``acceptance_source``: where the acceptance came from ("given" or the family default's source)."""

    k: int
    acceptance: tuple[float, ...]
    draft: str = MTP
    acceptance_source: str = "given"

    def __post_init__(self) -> None:
        if isinstance(self.k, bool) or not isinstance(self.k, int) or self.k < 0:
            raise SpecError("must be a whole number >= 0 (draft tokens per verify step)", field="spec_tokens",
                            value=self.k)
        acc = tuple(float(a) for a in self.acceptance)
        object.__setattr__(self, "acceptance", acc)
        if len(acc) != self.k:
            raise SpecError(f"needs one value per drafted position ({self.k}), got {len(acc)}", field="acceptance",
                            value=",".join(f"{a:g}" for a in acc), fix="give k comma-separated probabilities")
        for a in acc:
            if not 0.0 < a < 1.0:
                raise SpecError("each value must lie in (0, 1)", field="acceptance", value=a)
        if not isinstance(self.draft, str) or not self.draft:
            raise SpecError("must be 'mtp' or a draft model's catalogue name", field="draft", value=self.draft)

    @property
    def tokens_per_step(self) -> float:
        """Expected tokens one sequence emits per verify step (E; 1 at k = 0)."""
        return expected_tokens_per_step(self.acceptance)

    @property
    def is_mtp(self) -> bool:
        return self.draft == MTP

    def as_dict(self) -> dict:
        return {"spec_tokens": self.k, "acceptance": list(self.acceptance), "draft": self.draft,
                "acceptance_source": self.acceptance_source, "tokens_per_step": self.tokens_per_step}


def parse_acceptance(text) -> tuple[float, ...] | None:
    """'0.85' or '0.9,0.8' (CLI, CSV cell) -> a tuple; '' or None -> None (the family default)."""
    if text is None:
        return None
    if isinstance(text, (int, float)):
        return (float(text),)
    if isinstance(text, (list, tuple)):
        return tuple(float(a) for a in text)
    text = str(text).strip()
    if not text:
        return None
    try:
        return tuple(float(a) for a in text.replace(";", ",").split(","))
    except ValueError:
        raise SpecError("must be comma-separated probabilities in (0, 1)", field="acceptance", value=text) from None


def speculation_for(model, *, k: int | None, acceptance=None, draft: str | None = None) -> Speculation | None:
    """The Speculation of a deployment: None for no speculative decoding (k None or 0 with no acceptance).
    ``acceptance``: one value (applied to every position — an i.i.d. draft, a documented choice of
    the user), k values, or None for the family default (the published first position, later ones
    decaying: ``family_default``). ``draft`` None = "mtp"; "mtp" needs the model (a ``Model``) to ship MTP modules."""
    model_name, mtp_layers = model.name, model.mtp_layers
    acc = parse_acceptance(acceptance)
    if k is None:
        if acc is None:
            if draft:
                raise SpecError("given without spec_tokens (plain decoding)", field="draft", value=draft,
                                fix="give {spec_tokens} > 0 with it, or leave it out")
            return None
        k = len(acc)
    if isinstance(k, float) and k.is_integer():
        k = int(k)
    if isinstance(k, bool) or not isinstance(k, int) or k < 0:
        raise SpecError("must be a whole number >= 0 (draft tokens per verify step)", field="spec_tokens", value=k)
    if k > MAX_SPEC_TOKENS:
        raise SpecError(f"at most {MAX_SPEC_TOKENS} draft tokens per verify step", field="spec_tokens", value=k,
                        fix="draft fewer tokens: the expected tokens per step saturate at 1 / (1 - acceptance)")
    if k == 0:
        if acc is not None or draft:
            raise SpecError("given with spec_tokens 0 (plain decoding)", field="acceptance" if acc else "draft",
                            value=acceptance if acc else draft, fix="give {spec_tokens} > 0, or leave it out")
        return None
    draft = draft or MTP
    if draft == MTP and mtp_layers <= 0:
        raise SpecError(f"model {model_name} ships no multi-token-prediction modules", field="draft", value=draft,
                        fix="name a draft model in {draft} or choose a model with MTP layers")
    source = "given"
    if acc is None:
        default = family_default(model_name, k) if draft == MTP else None
        if default is None:
            raise SpecError(f"no published acceptance for {model_name}" + ("" if draft == MTP else
                            f" drafted by {draft}"), field="acceptance",
                            fix="give the acceptance per drafted position in {acceptance} (e.g. 0.8)")
        acc, source = default
    elif len(acc) == 1 and k > 1:
        acc = acc * k
    return Speculation(k=k, acceptance=acc, draft=draft, acceptance_source=source)


def speculation_candidates(model, *, max_k: int | None, acceptance=None, draft: str | None = None) -> tuple:
    """One Speculation per k = 1..max_k, for a search (the planner; k = 0, plain decoding, is always
    searched beside them): ``acceptance`` one value (every position), at least max_k values (the first
    k for each k), or None (the family default, decaying with the position)."""
    if max_k is None or max_k == 0:
        if acceptance is not None and parse_acceptance(acceptance) is not None:
            raise SpecError("is given without draft tokens to search", field="acceptance",
                            fix="give {spec_tokens} K to search k = 0..K")
        if draft:
            raise SpecError("is given without draft tokens to search", field="draft", value=draft,
                            fix="give {spec_tokens} K to search k = 0..K")
        return ()
    speculation_for(model, k=max_k, acceptance=acceptance, draft=draft)  # validates K, the acceptance and the draft
    acc = parse_acceptance(acceptance)
    return tuple(speculation_for(model, k=k, draft=draft, acceptance=None if acc is None else
                                 (acc if len(acc) == 1 else acc[:k])) for k in range(1, max_k + 1))
