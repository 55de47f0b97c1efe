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
* ``engine_floor_scale``: the share of the per-kernel floors and per-collective overheads (measured
  one kernel at a time, eagerly) that a whole step still pays in an engine that captures its
  steps as CUDA graphs and uses its own all-reduce (fitted on step-level data; 1 = eager);
* ``iteration_overhead_s``, ``prefill_stall_factor`` and ``ttft_prefill_factor``: the serving
  loop (``serving.steady_state``);
* per network tier (``scale_up``, ``scale_out``): a per-call overhead, a per-algorithm-step latency
  and the achieved share of the link bandwidth. These come on top of the catalogue's per-operation
  latency floor, which ideal mode charges alone (one collective: ``op_overhead_s + latency floor +
  steps·step_latency_s + bytes/(bandwidth_fraction·BW)``, ``step.kernels.collective_s``).

One GEMM then takes ``max(2mnk/(η(m)·peak), (mk+kn+mn)·bytes/(hbm_fraction·BW)) + kernel_floor``
(``step.kernels.gemm_s``); ``step.calibrated`` applies the same terms class by class to whole
steps. Profiles are TOML files read strictly by ``catalog.efficiency`` ("did you mean" on unknown
keys); the defaults in ``catalog/profiles/`` say in ``derivation`` exactly how they were fitted
and on which rows (``llmecon calibrate``).
``IDEAL`` is the identity profile: fractions 1, no floors, no overheads.
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
        step = link.step_latency_s if self.step_latency_s is None else self.step_latency_s
        return dataclasses.replace(link, bandwidth_bytes_per_s=link.bandwidth_bytes_per_s * self.bandwidth_fraction,
                                   step_latency_s=step)


_FRACTIONS = ("hbm_fraction", "matmul_fraction", "elementwise_fraction", "attention_fraction", "engine_floor_scale")
_TIMES = ("kernel_floor_s", "elementwise_floor_s", "step_overhead_s", "iteration_overhead_s")


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
    engine_floor_scale: float = 1.0
    iteration_overhead_s: float = 0.0
    prefill_stall_factor: float = 1.0
    ttft_prefill_factor: float = 1.0
    scale_up: LinkEfficiency = field(default_factory=LinkEfficiency)
    scale_out: LinkEfficiency = field(default_factory=LinkEfficiency)
    fit: dict = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        owner = f"profile {self.name}"
        for name in _FRACTIONS:
            require_number(name, getattr(self, name), minimum=0, exclusive=True, maximum=1, owner=owner)
        for name in _TIMES + ("matmul_m_half",):
            require_number(name, getattr(self, name), minimum=0, owner=owner)
        for name in ("prefill_stall_factor", "ttft_prefill_factor"):
            require_number(name, getattr(self, name), minimum=1, owner=owner)
        for tier in TIERS:
            e = getattr(self, tier)
            require_number(f"{tier}.bandwidth_fraction", e.bandwidth_fraction, minimum=0, exclusive=True, maximum=1,
                           owner=owner)
            for key in ("op_overhead_s", "step_latency_s", "p2p_overhead_s"):
                if getattr(e, key) is not None:
                    require_number(f"{tier}.{key}", getattr(e, key), minimum=0, owner=owner)

    @property
    def is_ideal(self) -> bool:
        return self == IDEAL

    @property
    def mode(self) -> str:
        """'ideal' for the identity profile, else 'calibrated'."""
        return "ideal" if self.is_ideal else "calibrated"

    @property
    def fidelity(self) -> str:
        """'ideal' or 'calibrated (<name>)': what a report says it priced with."""
        return "ideal" if self.is_ideal else f"calibrated ({self.name})"

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
        return self.matmul_fraction * m / (m + self.matmul_m_half) if self.matmul_m_half else self.matmul_fraction + 0 * m

    def system(self, system: System) -> System:
        """``system`` with its links as this profile sees them (bandwidth share, step latency)."""
        up = self.scale_up.apply(system.scale_up) if system.scale_up is not None else None
        out = self.scale_out.apply(system.scale_out) if system.scale_out is not None else None
        return dataclasses.replace(system, scale_up=up, scale_out=out)

    def as_toml(self) -> str:
        """The profile as TOML text that ``load_profile`` reads back."""
        lines = [f"name = {_q(self.name)}", f"accelerators = [{', '.join(_q(a) for a in self.accelerators)}]",
                 f"derivation = {_q(self.derivation)}"] + ([f"source = {_q(self.source)}"] if self.source else []) + [""]
        for key in ("hbm_fraction", "matmul_fraction", "matmul_m_half", "kernel_floor_s", "elementwise_fraction",
                    "elementwise_floor_s", "attention_fraction", "step_overhead_s", "engine_floor_scale",
                    "iteration_overhead_s",
                    "prefill_stall_factor", "ttft_prefill_factor"):
            lines.append(f"{key} = {getattr(self, key)!r}")
        for tier in TIERS:
            e = getattr(self, tier)
            lines += ["", f"[{tier}]", f"op_overhead_s = {e.op_overhead_s!r}", f"bandwidth_fraction = {e.bandwidth_fraction!r}"]
            for key in ("step_latency_s", "p2p_overhead_s"):
                if getattr(e, key) is not None:
                    lines.append(f"{key} = {getattr(e, key)!r}")
        if self.fit:
            lines += ["", "[fit]"] + [f"{k} = {_q(v) if isinstance(v, str) else repr(v)}" for k, v in self.fit.items()]
        return "\n".join(lines) + "\n"


def _q(s: str) -> str:
    return '"' + str(s).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


IDEAL = EfficiencyProfile(name="ideal", derivation="datasheet peaks, no floors or overheads (a lower bound)")
