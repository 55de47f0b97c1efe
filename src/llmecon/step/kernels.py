"""One kernel's time under an efficiency profile (calibrated mode; ``IDEAL`` gives its roofline):
a GEMM, an element-wise kernel, a device copy, a collective. ``calibrated`` applies the same terms
class by class to whole steps; ``fidelity.calibrate`` fits a profile to measured kernels with them.
"""

from __future__ import annotations

import numpy as np

from ..dtypes import get_dtype
from ..errors import SpecError
from ..spec.efficiency import EfficiencyProfile
from ..spec.hardware import Accelerator, System
from .collectives import all_reduce_s, p2p_s, two_tier_all_reduce_s


def gemm_s(profile: EfficiencyProfile, chip: Accelerator, *, m, n, k, dtype: str = "bf16"):
    """Seconds of one GEMM C[m,n] = A[m,k]·B[k,n] on ``chip``: the slower of its FLOPs at
    η(m)·peak and its bytes (A, B read, C written, all in ``dtype``) at hbm_fraction·BW, plus the
    kernel floor. With ``IDEAL`` this is the kernel's roofline (a lower bound)."""
    m, n, k = (np.asarray(x, dtype=float) for x in (m, n, k))
    flops = 2.0 * m * n * k
    moved = (m * k + k * n + m * n) * get_dtype(dtype).bytes
    return np.maximum(flops / (profile.matmul_efficiency(m) * chip.peak(dtype)),
                      moved / (profile.hbm_fraction * chip.hbm_bandwidth_bytes_per_s)) + profile.kernel_floor_s


def elementwise_s(profile: EfficiencyProfile, chip: Accelerator, *, bytes_moved):
    """Seconds of a memory-bound kernel moving ``bytes_moved`` (read + written)."""
    return (np.asarray(bytes_moved, dtype=float) / (profile.elementwise_fraction * chip.hbm_bandwidth_bytes_per_s)
            + profile.elementwise_floor_s)


def copy_s(profile: EfficiencyProfile, chip: Accelerator, *, bytes_moved):
    """Seconds of a device copy moving ``bytes_moved`` (read + written) at hbm_fraction·BW."""
    return np.asarray(bytes_moved, dtype=float) / (profile.hbm_fraction * chip.hbm_bandwidth_bytes_per_s)


def collective_s(profile: EfficiencyProfile, system: System, *, kind: str, message_bytes, participants: int,
                 chips_per_node: int):
    """Seconds of one all-reduce or send/recv of ``message_bytes`` among ``participants`` chips,
    ``chips_per_node`` to a scale-up domain, on the profile's links (the per-operation latency
    floor, the profile's per-step latency and bandwidth share), plus the per-call overhead of the
    slowest tier used. The all-reduce is ``profile.all_reduce_algorithm``: with ``IDEAL`` the
    fastest the link supports, alpha + f·S/BW (a lower bound); calibrated, ring or one-shot."""
    sys_ = profile.system(system)
    across = participants > chips_per_node
    tier = "scale_out" if across else "scale_up"
    link = sys_.scale_out if across else sys_.scale_up
    if link is None:
        raise SpecError(f"system {system.name}: no {tier} link to time a {kind} on")
    eff = getattr(profile, tier)
    overhead = eff.op_overhead_s
    if kind == "send_recv":
        return p2p_s(message_bytes=message_bytes, link=link) + eff.p2p_s
    if kind != "all_reduce":
        raise SpecError(f"collective kind must be all_reduce or send_recv, got {kind!r}")
    if across:
        return two_tier_all_reduce_s(message_bytes=message_bytes, participants=participants,
                                     domain_chips=chips_per_node, scale_up=sys_.scale_up,
                                     scale_out=sys_.scale_out, algorithm=profile.all_reduce_algorithm) + overhead
    return all_reduce_s(message_bytes=message_bytes, participants=participants, link=link,
                        algorithm=profile.all_reduce_algorithm) + overhead


