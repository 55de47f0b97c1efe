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

Acceptance defaults per model family, each from a published figure; a family without one needs the
acceptance given (never invented):

* DeepSeek-V3 (and V3.2-Exp, the same MTP module): "the acceptance rate of the second token
  prediction ranges between 85% and 90%" (DeepSeek-V3 Technical Report, arXiv:2412.19437, §5.4.3,
  with one MTP module, k = 1). The default is the low end, 0.85, for position 1 only; a deeper
  draft (k > 1) needs the acceptance of positions 2..k given.

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

# family prefix (catalogue model name) -> (acceptance per drafted position, source)
FAMILY_ACCEPTANCE: dict[str, tuple[tuple[float, ...], str]] = {
    "deepseek-v3": ((0.85,), "DeepSeek-V3 Technical Report (arXiv:2412.19437) §5.4.3: 85-90% acceptance of the "
                             "second token with MTP; the low end"),
}


def family_default(model_name: str) -> tuple[tuple[float, ...], str] | None:
    """(acceptance per position, source) of the model's family, or None when no figure is published."""
    name = model_name.lower()
    for prefix, value in FAMILY_ACCEPTANCE.items():
        if name.startswith(prefix):
            return value
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
    the user), k values, or None for the family default (which covers only the positions it was
    published for). ``draft`` None = "mtp"; "mtp" needs the model (a ``Model``) to ship MTP modules."""
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
        default = family_default(model_name) if draft == MTP else None
        if default is None:
            raise SpecError(f"no published acceptance for {model_name}" + ("" if draft == MTP else
                            f" drafted by {draft}"), field="acceptance",
                            fix="give the acceptance per drafted position in {acceptance} (e.g. 0.8)")
        acc, source = default
        if len(acc) < k:
            raise SpecError(f"the published default ({source}) covers {len(acc)} drafted position(s), not {k}",
                            field="acceptance", fix=f"give {k} values, one per drafted position")
        acc = acc[:k]
    elif len(acc) == 1 and k > 1:
        acc = acc * k
    return Speculation(k=k, acceptance=acc, draft=draft, acceptance_source=source)


def speculation_candidates(model, *, max_k: int | None, acceptance=None, draft: str | None = None) -> tuple:
    """One Speculation per k = 1..max_k, for a search (the planner; k = 0, plain decoding, is always
    searched beside them): ``acceptance`` one value (every position), at least max_k values (the first
    k for each k), or None (the family default, which must cover max_k positions)."""
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
