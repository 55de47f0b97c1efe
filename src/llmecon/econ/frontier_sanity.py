"""Sanity of frontiers across chips (issue 35 item 5): on the same model, a system that is at least as fast on
every datasheet axis must not come out slower unless a named term of its efficiency profile says why.

``at_least_as_fast(a, b)``: every dense peak b publishes, HBM capacity and bandwidth, and the scale-up and
scale-out links' bandwidth (not their latency: higher) and domain size of ``a`` are >= ``b``'s.
``slower_terms(fast, slow)``: the profile terms that charge ``fast`` more than ``slow`` (a lower achieved
fraction, a higher floor or overhead, ``TERMS``): the names a user reads when a faster chip comes out slower.
In ideal mode (both IDEAL) there is no such term, so a faster system is never slower (tested).

Found this way (2026-11-28, ``benchmarks/results/frontier_2026-11-28.md``): calibrated GB200 capped DeepSeek-V3
below H100 and B200 because gb200/trtllm's fitted ``engine_floor_scale`` is 0.99 (the kernel floors measured one
kernel at a time, paid nearly whole) against 0.49 on b200/trtllm and 0.13 on the legacy h100-sxm profile, and
the H100 frontier was topped by a pp2 decode point no engine recipe runs (``econ.engine_layouts``).
"""

from __future__ import annotations

from ..spec.efficiency import EfficiencyProfile
from ..spec.hardware import System

HIGHER_IS_WORSE = ("engine_floor_scale", "step_overhead_s", "layer_overhead_s", "kernel_floor_s",
                   "elementwise_floor_s", "attention_floor_s", "iteration_overhead_s")
LOWER_IS_WORSE = ("hbm_fraction", "matmul_fraction", "elementwise_fraction", "attention_fraction")
TERMS = HIGHER_IS_WORSE + LOWER_IS_WORSE


def at_least_as_fast(a: System, b: System, *, max_chips: int | None = None) -> bool:
    """Whether ``a`` is at least as fast as ``b`` on every datasheet axis (module docstring) a replica of up to
    ``max_chips`` uses: the scale-out link only when ``max_chips`` (None: any) exceeds ``b``'s domain."""
    x, y = a.accelerator, b.accelerator
    peaks = all(x.peak_flops_per_s.get(d, 0.0) >= v for d, v in y.peak_flops_per_s.items())
    memory = x.hbm_bytes >= y.hbm_bytes and x.hbm_bandwidth_bytes_per_s >= y.hbm_bandwidth_bytes_per_s
    pairs = [(a.scale_up, b.scale_up)] + ([(a.scale_out, b.scale_out)] if max_chips is None or max_chips > b.chips
                                         else [])
    links = all(lb is None or (la is not None and la.bandwidth_bytes_per_s >= lb.bandwidth_bytes_per_s)
                for la, lb in pairs)
    return peaks and memory and links and a.chips >= b.chips


def slower_terms(fast: EfficiencyProfile, slow: EfficiencyProfile) -> tuple[str, ...]:
    """The terms of ``TERMS`` in which ``fast``'s profile charges more than ``slow``'s (module docstring)."""
    def value(profile, term, unset):
        v = getattr(profile, term)
        return unset if v is None else v  # an unset term: no cost (floors, overheads) or the full share

    out = [t for t in HIGHER_IS_WORSE if value(fast, t, 0.0) > value(slow, t, 0.0)]
    out += [t for t in LOWER_IS_WORSE if value(fast, t, 1.0) < value(slow, t, 1.0)]
    return tuple(out)
