"""Efficiency profiles: what a real accelerator achieves against its datasheet (calibrated mode).

Ideal mode prices every kernel at the datasheet peak and the whole step at max(compute, memory,
comm): a lower bound. A profile says how far real kernels fall short, per accelerator:

* ``hbm_fraction``: achieved share of HBM bandwidth when streaming weights, KV and copies;
* ``matmul_fraction`` and ``matmul_m_half``: a GEMM with m rows (tokens) reaches
  ``matmul_fraction · m / (m + m_half)`` of the dense peak (small m cannot fill the tensor cores;
  the m/(m+m_half) ramp is the simplest saturating form; fitted, not derived);
* ``kernel_floor_s``: fixed cost per GEMM / attention kernel (launch, ramp-up, tail);
* ``elementwise_fraction`` / ``elementwise_floor_s``: norms, residual adds, activations, rope;
* ``attention_fraction``: flash-attention FLOPs against the dense peak;
* ``step_overhead_s``: per forward step (framework, sampling, host sync);
* ``layer_overhead_s``: per layer of a forward step (what a step pays per layer beyond the kernels'
  own floors: per-layer host work, graph nodes, synchronisation; fitted on end-to-end rows);
* ``request_overhead_s``: once per request, in its TTFT (admission, tokenisation, scheduling and
  the first token's return; ``serving.steady_state``);
* ``engine_floor_scale``: the share of the per-kernel floors and per-collective overheads (measured
  one kernel at a time, eagerly) that a whole step still pays in an engine that captures its
  steps as CUDA graphs and uses its own all-reduce (fitted on step-level data; 1 = eager);
* ``iteration_overhead_s``, ``prefill_stall_factor`` and ``ttft_prefill_factor``: the serving
  loop (``serving.steady_state``); ``ttft_prefill_factor`` multiplies the prefill a newcomer waits
  for (fitted per engine on the silicon rows);
* ``prefill_cohort_share``: the share of a closed loop's requests that arrive in step with the
  other running ones (a benchmark of fixed output length keeps its clients in step) and so wait
  for the prefills of the cohort ahead of them, in [0, 1] (0, every shipped profile: each arrives
  alone; ``serving.steady_state`` step 5; fitted in place of ``ttft_prefill_factor`` it priced held-out
  TTFT worse, docs/engines.md);
* per network tier (``scale_up``, ``scale_out``): a per-call overhead, a per-algorithm-step latency
  and the achieved share of the link bandwidth. These come on top of the catalogue's per-operation
  latency floor, which ideal mode charges alone (one collective: ``op_overhead_s + latency floor +
  steps·step_latency_s + bytes/(bandwidth_fraction·BW)``, ``step.kernels.collective_s``);
* ``all_to_all`` (optional, kernel-table profiles): the same three terms for the expert-parallel
  dispatch/combine all-to-all inside the scale-up domain, fitted on NCCL's one-node all-to-all
  (the ``scale_up`` terms are the engine's all-reduce's; without ``all_to_all`` they price it).

One GEMM then takes ``max(2mnk/(η(m)·peak), (mk+kn+mn)·bytes/(hbm_fraction·BW)) + kernel_floor``
(``step.kernels.gemm_s``); ``step.calibrated`` applies the same terms class by class to whole
steps. Profiles are TOML files read strictly by ``catalog.efficiency`` ("did you mean" on unknown
keys); the defaults in ``catalog/profiles/`` say in ``derivation`` exactly how they were fitted
and on which rows (``llmecon calibrate``).
``IDEAL`` is the identity profile: fractions 1, no floors, no overheads.

Kernel-table profiles (``fidelity.kernel_fit``, fitted on NVIDIA's measured per-kernel tables) add
shape-dependent terms per dtype (``KernelTerms``): ``gemm`` (per GEMM dtype: asymptotic FLOP
fraction with saturating ramps in m, n and k, achieved bandwidth on memory-bound shapes, floor),
``moe`` (per expert dtype: the MoE layer's grouped GEMMs, ramp in tokens per expert) with
``moe_skew`` (per routing distribution: the compute factor of the measured rank's extra tokens
and the weight factor of the fewer distinct experts a skewed routing touches), and the attention kernels' floors
(``prefill_attention`` and ``decode_attention`` per KV dtype: ``AttentionTerms``; a step takes the
scalar ``attention_fraction``, ``hbm_fraction`` and ``attention_floor_s``, set from the bf16 ones). \
A profile without them (the vidur-fitted ones) prices
every GEMM with the scalar ``matmul_fraction``/``matmul_m_half``/``hbm_fraction``/``kernel_floor_s``
exactly as before (``gemm_terms``).

A *transferred* profile (``fidelity.transfer``: a chip without measurements, priced with measured
chips' dimensionless terms through its own datasheet) carries its provenance in ``transfer``
(source, method, rule, date, expected leave-one-chip-out error); ``label``, ``fidelity`` and
``fidelity_fields`` say so in every report.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np

from ..errors import require_number
from .hardware import Link, System

TIERS = ("scale_up", "scale_out")
MODES = ("ideal", "calibrated")


@dataclass(frozen=True, kw_only=True)
class LinkEfficiency:
    """A network tier in practice: ``op_overhead_s`` per collective call (``p2p_overhead_s`` per
    point-to-point send, default the same), ``step_latency_s`` per algorithm step (ring hop; None
    or 0: none), ``bandwidth_fraction`` of the link's bandwidth. All three come on top of the
    link's per-operation latency floor (``Link.latency_s``), which ideal mode charges alone, so
    every overhead >= 0 keeps a calibrated collective at or above its ideal time."""

    op_overhead_s: float = 0.0
    p2p_overhead_s: float | None = None
    step_latency_s: float | None = None
    bandwidth_fraction: float = 1.0

    @property
    def p2p_s(self) -> float:
        return self.op_overhead_s if self.p2p_overhead_s is None else self.p2p_overhead_s

    def apply(self, link: Link) -> Link:
        """``link`` as this profile sees it: bandwidth x ``bandwidth_fraction`` and this per-step
        latency (None keeps the link's, 0 on a catalogue link); the per-operation floor stays."""
        if self.bandwidth_fraction == 1.0 and self.step_latency_s is None:
            return link  # nothing to change (ideal mode's tiers): no copy, no re-validation
        step = link.step_latency_s if self.step_latency_s is None else self.step_latency_s
        return dataclasses.replace(link, bandwidth_bytes_per_s=link.bandwidth_bytes_per_s * self.bandwidth_fraction,
                                   step_latency_s=step)


def ramp(x, half: float):
    """The saturating ramp x/(x + half) (1 when ``half`` is 0): the share of a kernel's asymptotic
    rate reached at size x (tiles not filling the SMs, prologue/epilogue per tile). Fitted, not derived."""
    x = np.asarray(x, dtype=float)
    return x / (x + half) if half else 1.0 + 0 * x


def _check_terms(terms, owner: str, where: str, non_negative: tuple[str, ...]) -> None:
    """Kernel terms are valid when ``fraction`` and ``hbm_fraction`` lie in (0, 1] and the other
    named terms are >= 0."""
    for name in ("fraction", "hbm_fraction"):
        require_number(f"{where}.{name}", getattr(terms, name), minimum=0, exclusive=True, maximum=1, owner=owner)
    for name in non_negative:
        require_number(f"{where}.{name}", getattr(terms, name), minimum=0, owner=owner)


@dataclass(frozen=True, kw_only=True)
class KernelTerms:
    """One kernel family at one dtype: seconds = max(F / (fraction·r(m)·r(n)·r(k)·peak),
    bytes / (hbm_fraction·BW)) + floor_s, with r(x) = x/(x + x_half) (``ramp``). ``m_half`` is the
    row ramp (tokens; for MoE tokens per expert), ``n_half``/``k_half`` the weight-shape ramps."""

    fraction: float = 1.0
    m_half: float = 0.0
    n_half: float = 0.0
    k_half: float = 0.0
    hbm_fraction: float = 1.0
    floor_s: float = 0.0

    def check(self, owner: str, where: str) -> None:
        _check_terms(self, owner, where, ("m_half", "n_half", "k_half", "floor_s"))

    def efficiency(self, m, n=None, k=None):
        """Achieved share of the dense peak at rows m (and weight shape n x k where given)."""
        e = self.fraction * ramp(m, self.m_half)
        if n is not None:
            e = e * ramp(n, self.n_half)
        if k is not None:
            e = e * ramp(k, self.k_half)
        return e


KERNEL_TERM_KEYS = ("fraction", "m_half", "n_half", "k_half", "hbm_fraction", "floor_s")


@dataclass(frozen=True, kw_only=True)
class AttentionTerms:
    """One attention kernel (prefill or decode) at one KV dtype, as ``step.kernels`` prices it:

    * prefill: FLOPs (window W counted as W + ``window_pad``: tiles straddling the window edge)
      at fraction·r(isl; isl_half)·r(head_dim; head_dim_half) of the bf16 peak, or Q/K/V/O bytes
      at hbm_fraction·BW, plus ``item_s`` per (sequence, head, 128-token query tile), plus floor;
    * decode: FLOPs at fraction·peak, or KV bytes at hbm_fraction·r(b·g; items_half)·BW (few
      independent (sequence, KV head) items cannot fill the chip), plus ``item_s`` per
      (sequence, KV head), plus floor.
    """

    fraction: float = 1.0
    isl_half: float = 0.0
    head_dim_half: float = 0.0
    window_pad: float = 0.0
    hbm_fraction: float = 1.0
    items_half: float = 0.0
    item_s: float = 0.0
    floor_s: float = 0.0

    def check(self, owner: str, where: str) -> None:
        _check_terms(self, owner, where, ("isl_half", "head_dim_half", "window_pad", "items_half", "item_s", "floor_s"))


ATTENTION_TABLES = ("prefill_attention", "decode_attention", "mla_prefill", "mla_decode", "gdn")
"""Profile tables of ``AttentionTerms`` per KV dtype: GQA/MHA prefill and decode
(``step.kernels.prefill_attention_s``/``decode_attention_s``) and MLA prefill (unabsorbed) and
decode (absorbed) (``step.kernels.mla_prefill_s``/``mla_decode_s``); and ``gdn``, per Gated
DeltaNet kernel (chunk, recurrent, conv, conv_update: ``step.kernels.gdn_kernel_s``)."""
ATTENTION_TERM_KEYS = ("fraction", "isl_half", "head_dim_half", "window_pad", "hbm_fraction", "items_half", "item_s",
                       "floor_s")


_FRACTIONS = ("hbm_fraction", "matmul_fraction", "elementwise_fraction", "attention_fraction", "engine_floor_scale")
_TIMES = ("kernel_floor_s", "elementwise_floor_s", "step_overhead_s", "iteration_overhead_s", "layer_overhead_s",
          "request_overhead_s")


@dataclass(frozen=True, kw_only=True)
class EfficiencyProfile:
    """Achieved fractions and fixed costs of one accelerator family (see the module docstring)."""

    name: str
    accelerators: tuple[str, ...] = ()
    derivation: str = ""
    source: str = ""
    hbm_fraction: float = 1.0
    matmul_fraction: float = 1.0
    matmul_m_half: float = 0.0
    kernel_floor_s: float = 0.0
    elementwise_fraction: float = 1.0
    elementwise_floor_s: float = 0.0
    attention_fraction: float = 1.0
    step_overhead_s: float = 0.0
    layer_overhead_s: float = 0.0
    request_overhead_s: float = 0.0
    engine_floor_scale: float = 1.0
    iteration_overhead_s: float = 0.0
    prefill_stall_factor: float = 1.0
    ttft_prefill_factor: float = 1.0
    prefill_cohort_share: float = 0.0
    scale_up: LinkEfficiency = field(default_factory=LinkEfficiency)
    scale_out: LinkEfficiency = field(default_factory=LinkEfficiency)
    all_to_all: LinkEfficiency | None = None
    attention_floor_s: float | None = None
    prefill_attention: tuple[tuple[str, AttentionTerms], ...] = ()
    decode_attention: tuple[tuple[str, AttentionTerms], ...] = ()
    mla_prefill: tuple[tuple[str, AttentionTerms], ...] = ()
    mla_decode: tuple[tuple[str, AttentionTerms], ...] = ()
    gdn: tuple[tuple[str, AttentionTerms], ...] = ()
    gemm: tuple[tuple[str, KernelTerms], ...] = ()
    moe: tuple[tuple[str, KernelTerms], ...] = ()
    moe_skew: tuple[tuple[str, float, float], ...] = ()
    engine: str = ""
    fit: dict = field(default_factory=dict, compare=False)
    transfer: dict = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        owner = f"profile {self.name}"
        if self.attention_floor_s is not None:
            require_number("attention_floor_s", self.attention_floor_s, minimum=0, owner=owner)
        for table in ("gemm", "moe") + ATTENTION_TABLES:
            for dt, terms in getattr(self, table):
                terms.check(owner, f"{table}.{dt}")
        for dist, compute, weights in self.moe_skew:
            require_number(f"moe_skew.{dist}.compute_factor", compute, minimum=0, exclusive=True, owner=owner)
            require_number(f"moe_skew.{dist}.weight_factor", weights, minimum=0, exclusive=True, maximum=1,
                           owner=owner)
        for name in _FRACTIONS:
            require_number(name, getattr(self, name), minimum=0, exclusive=True, maximum=1, owner=owner)
        for name in _TIMES + ("matmul_m_half",):
            require_number(name, getattr(self, name), minimum=0, owner=owner)
        for name in ("prefill_stall_factor", "ttft_prefill_factor"):
            require_number(name, getattr(self, name), minimum=1, owner=owner)
        require_number("prefill_cohort_share", self.prefill_cohort_share, minimum=0, maximum=1, owner=owner)
        for tier in TIERS + (("all_to_all",) if self.all_to_all is not None else ()):
            e = getattr(self, tier)
            require_number(f"{tier}.bandwidth_fraction", e.bandwidth_fraction, minimum=0, exclusive=True, maximum=1,
                           owner=owner)
            for key in ("op_overhead_s", "step_latency_s", "p2p_overhead_s"):
                if getattr(e, key) is not None:
                    require_number(f"{tier}.{key}", getattr(e, key), minimum=0, owner=owner)

    @property
    def is_ideal(self) -> bool:
        return self is IDEAL or self == IDEAL  # identity first: == compares every field

    @property
    def mode(self) -> str:
        """'ideal' for the identity profile, else 'calibrated'."""
        return "ideal" if self.is_ideal else "calibrated"

    @property
    def transferred(self) -> bool:
        """True for a profile derived from other chips' measurements (``fidelity.transfer``)."""
        return bool(self.transfer)

    @property
    def label(self) -> str:
        """The profile as a report names it: its name, or for a transferred profile
        '<chip>, transferred from <source>, ±X% TPOT <error_protocol>' (default leave-one-chip-out)."""
        if not self.transfer:
            return self.name
        t = self.transfer
        err = dict(t.get("expected_error", {}))
        tpot = err.get("tpot_median")
        protocol = t.get("error_protocol", "leave-one-chip-out")  # how the expected error was measured
        tail = f", ±{100 * tpot:.0f}% TPOT {protocol}" if tpot is not None else ", error not measured"
        chip = self.accelerators[0] if self.accelerators else self.name
        return f"{chip}, transferred from {t.get('source', '?')}{tail}"

    @property
    def fidelity(self) -> str:
        """'ideal' or 'calibrated (<label>)': what a report says it priced with."""
        return "ideal" if self.is_ideal else f"calibrated ({self.label})"

    @property
    def fidelity_fields(self) -> dict:
        """Machine-readable fidelity for JSON output: ``transferred`` and, for a transferred profile,
        ``transferred_from``, ``transfer_method`` and ``expected_error`` (shares, not percent)."""
        if not self.transfer:
            return {"transferred": False}
        t = self.transfer
        return {"transferred": True, "transferred_from": t.get("source"), "transfer_method": t.get("method"),
                "expected_error": dict(t.get("expected_error", {}))}

    @property
    def all_reduce_algorithm(self) -> str:
        """The all-reduce this mode prices (``step.collectives.all_reduce_s``): ideal mode takes
        ``"best"``, the fastest algorithm the link supports (in-switch reduction where it has it),
        as a lower bound must; calibrated mode keeps ``"auto"`` (ring or one-shot), the algorithms
        the shipped profiles were fitted on (vidur's H100 NCCL data show no NVLS: docs/assumptions.md)."""
        return "best" if self.is_ideal else "auto"

    def matmul_efficiency(self, m):
        """Achieved share of the dense peak of a GEMM with ``m`` rows: fraction · m/(m + m_half)."""
        m = np.asarray(m, dtype=float)
        return (self.matmul_fraction * m / (m + self.matmul_m_half) if self.matmul_m_half
                else self.matmul_fraction + 0 * m)

    def gemm_terms(self, dtype: str = "") -> KernelTerms:
        """The GEMM terms for weights of ``dtype`` (fp8 falls back to fp8_block and back, then to
        bf16); a profile with no ``gemm`` table gives its scalar terms (matmul_fraction, m_half,
        hbm_fraction, kernel_floor_s), as every profile priced before kernel tables existed."""
        table = dict(self.gemm)
        for key in _dtype_chain(dtype):
            if key in table:
                return table[key]
        return KernelTerms(fraction=self.matmul_fraction, m_half=self.matmul_m_half, hbm_fraction=self.hbm_fraction,
                           floor_s=self.kernel_floor_s)

    def moe_terms(self, dtype: str = "") -> KernelTerms | None:
        """The MoE layer's terms for experts of ``dtype`` (same fallbacks as ``gemm_terms``), or
        None when the profile has no MoE table (expert GEMMs then price as ``gemm_terms``)."""
        table = dict(self.moe)
        for key in _dtype_chain(dtype):
            if key in table:
                return table[key]
        return None

    @property
    def decode_attention_floor_s(self) -> float:
        """Floor of one attention kernel in a step (``kernel_floor_s`` where not fitted apart)."""
        return self.kernel_floor_s if self.attention_floor_s is None else self.attention_floor_s

    def attention_terms(self, phase: str, kv_dtype: str = "bf16") -> AttentionTerms:
        """The ``prefill`` or ``decode`` (GQA/MHA) or ``mla_prefill`` or ``mla_decode`` attention
        kernel's terms at ``kv_dtype`` (falling back as ``gemm_terms``); an MLA phase the profile
        has no table for takes the GQA phase's terms; without any table: the scalar
        attention_fraction, hbm_fraction and attention floor, no ramps."""
        tables = {"prefill": (self.prefill_attention,), "decode": (self.decode_attention,),
                  "mla_prefill": (self.mla_prefill, self.prefill_attention),
                  "mla_decode": (self.mla_decode, self.decode_attention)}
        for table in tables[phase]:
            table = dict(table)
            for key in _dtype_chain(kv_dtype):
                if key in table:
                    return table[key]
        return AttentionTerms(fraction=self.attention_fraction, hbm_fraction=self.hbm_fraction,
                              floor_s=self.decode_attention_floor_s)

    def system(self, system: System, op: str = "") -> System:
        """``system`` with its links as this profile sees them (bandwidth share, step latency); with
        ``op="all_to_all"`` the scale-up link as the profile's ``all_to_all`` terms see it (the EP
        dispatch/combine inside a node; the ``scale_up`` terms where the profile has none)."""
        up_eff = self.all_to_all if op == "all_to_all" and self.all_to_all is not None else self.scale_up
        up = up_eff.apply(system.scale_up) if system.scale_up is not None else None
        out = self.scale_out.apply(system.scale_out) if system.scale_out is not None else None
        if up is system.scale_up and out is system.scale_out:
            return system  # the profile sees the links as they are (ideal): the same object, not a copy
        return dataclasses.replace(system, scale_up=up, scale_out=out)

    def as_toml(self) -> str:
        """The profile as TOML text that ``load_profile`` reads back."""
        lines = [f"name = {_q(self.name)}", f"accelerators = [{', '.join(_q(a) for a in self.accelerators)}]",
                 f"derivation = {_q(self.derivation)}"] + (
                     [f"source = {_q(self.source)}"] if self.source else []) + [""]
        for key in ("hbm_fraction", "matmul_fraction", "matmul_m_half", "kernel_floor_s", "elementwise_fraction",
                    "elementwise_floor_s", "attention_fraction", "step_overhead_s", "engine_floor_scale",
                    "iteration_overhead_s",
                    "prefill_stall_factor", "ttft_prefill_factor"):
            lines.append(f"{key} = {getattr(self, key)!r}")
        for key in ("layer_overhead_s", "request_overhead_s", "prefill_cohort_share"):  # only when set (engine fits)
            if getattr(self, key):
                lines.append(f"{key} = {getattr(self, key)!r}")
        for tier in TIERS + (("all_to_all",) if self.all_to_all is not None else ()):
            e = getattr(self, tier)
            lines += ["", f"[{tier}]", f"op_overhead_s = {e.op_overhead_s!r}",
                      f"bandwidth_fraction = {e.bandwidth_fraction!r}"]
            for key in ("step_latency_s", "p2p_overhead_s"):
                if getattr(e, key) is not None:
                    lines.append(f"{key} = {getattr(e, key)!r}")
        extra = [f"attention_floor_s = {self.attention_floor_s!r}"] if self.attention_floor_s is not None else []
        if self.engine:
            extra.append(f"engine = {_q(self.engine)}")
        if extra:
            first_tier = lines.index(f"[{TIERS[0]}]") - 1
            lines[first_tier:first_tier] = extra
        for table in ("gemm", "moe") + ATTENTION_TABLES:
            keys = KERNEL_TERM_KEYS if table in ("gemm", "moe") else ATTENTION_TERM_KEYS
            for dt, terms in getattr(self, table):
                lines += ["", f"[{table}.{dt}]"] + [f"{k} = {getattr(terms, k)!r}" for k in keys]
        for d, compute, weights in self.moe_skew:
            lines += ["", f"[moe_skew.{_q(d)}]", f"compute_factor = {compute!r}", f"weight_factor = {weights!r}"]
        if self.fit:
            lines += ["", "[fit]"] + [f"{k} = {_q(v) if isinstance(v, str) else repr(v)}" for k, v in self.fit.items()]
        if self.transfer:
            flat = {k: v for k, v in self.transfer.items() if not isinstance(v, dict)}
            lines += ["", "[transfer]"] + [f"{k} = {_value(v)}" for k, v in flat.items()]
            for k, v in self.transfer.items():
                if isinstance(v, dict):
                    lines += ["", f"[transfer.{k}]"] + [f"{kk} = {_value(vv)}" for kk, vv in v.items()]
        return "\n".join(lines) + "\n"


def _dtype_chain(dtype: str) -> tuple[str, ...]:
    """Keys to look a kernel dtype up by, best first: itself, its fp8 twin, bf16."""
    d = {"bfloat16": "bf16", "float16": "bf16", "fp16": "bf16"}.get(str(dtype), str(dtype))
    twins = {"fp8": ("fp8", "fp8_block"), "fp8_block": ("fp8_block", "fp8"), "nvfp4": ("nvfp4", "fp4", "mxfp4"),
             "fp4": ("fp4", "nvfp4", "mxfp4"), "mxfp4": ("mxfp4", "nvfp4", "fp4")}
    return tuple(dict.fromkeys(twins.get(d, (d,)) + ("bf16",)))


def _value(v) -> str:
    """A TOML value: a string, a number, or a list of strings."""
    if isinstance(v, str):
        return _q(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_q(x) for x in v) + "]"
    return repr(float(v)) if isinstance(v, float) else repr(v)


def _q(s: str) -> str:
    return '"' + str(s).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


IDEAL = EfficiencyProfile(name="ideal", derivation="datasheet peaks, no floors or overheads (a lower bound)")
