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


def _storage(dtype: str) -> str:
    """The ``dtypes`` name of a kernel dtype (fp8_block: fp8 with 128-block scales)."""
    return "fp8" if dtype == "fp8_block" else dtype


def gemm_s(profile: EfficiencyProfile, chip: Accelerator, *, m, n, k, dtype: str = "bf16"):
    """Seconds of one GEMM C[m,n] = A[m,k]·B[k,n] on ``chip``: the slower of its FLOPs at
    η·peak and its bytes (A, B read, C written, all in ``dtype``) at the achieved bandwidth, plus
    the kernel floor, with the profile's ``gemm_terms(dtype)``: η = fraction·r(m)·r(n)·r(k),
    r(x) = x/(x + x_half) (a legacy profile has only the m ramp). With ``IDEAL`` this is the
    kernel's roofline (a lower bound)."""
    m, n, k = (np.asarray(x, dtype=float) for x in (m, n, k))
    t = profile.gemm_terms(dtype)
    flops = 2.0 * m * n * k
    moved = (m * k + k * n + m * n) * get_dtype(_storage(dtype)).bytes
    return np.maximum(flops / (t.efficiency(m, n, k) * chip.peak(_storage(dtype))),
                      moved / (t.hbm_fraction * chip.hbm_bandwidth_bytes_per_s)) + t.floor_s


def elementwise_s(profile: EfficiencyProfile, chip: Accelerator, *, bytes_moved):
    """Seconds of a memory-bound kernel moving ``bytes_moved`` (read + written)."""
    return (np.asarray(bytes_moved, dtype=float) / (profile.elementwise_fraction * chip.hbm_bandwidth_bytes_per_s)
            + profile.elementwise_floor_s)


def copy_s(profile: EfficiencyProfile, chip: Accelerator, *, bytes_moved):
    """Seconds of a device copy moving ``bytes_moved`` (read + written) at hbm_fraction·BW."""
    return np.asarray(bytes_moved, dtype=float) / (profile.hbm_fraction * chip.hbm_bandwidth_bytes_per_s)


def _causal_sum(x, window):
    """sum_{p=1}^{x} min(p, W) per row (W <= 0: no window): ``spec.model``'s causal count, by row."""
    x = np.asarray(x, dtype=float)
    w = np.asarray(window, dtype=float)
    return np.where((w <= 0) | (x <= w), x * (x + 1.0) / 2.0, w * (w + 1.0) / 2.0 + (x - w) * w)


def prefill_attention_s(profile: EfficiencyProfile, chip: Accelerator, *, batch, isl, heads, kv_heads, head_dim,
                        window=0, kv_dtype: str = "bf16", attn_bytes: float = 2.0):
    """Seconds of one causal prefill attention kernel: ``batch`` prompts of ``isl`` tokens, ``heads``
    query and ``kv_heads`` KV heads of ``head_dim`` on this chip, sliding ``window`` (0: none),
    priced with ``profile.attention_terms("prefill", kv_dtype)`` (``AttentionTerms``). FLOPs:
    4·b·h·d·S(isl), S(x) = sum_p min(p, W + window_pad) (score and value products, FlashAttention);
    bytes: Q, K, V read and O written once. With ``IDEAL``: its roofline. Omitted: softmax, masks."""
    from ..spec.efficiency import ramp

    t = profile.attention_terms("prefill", kv_dtype)
    b, s, h, g, d, w = (np.asarray(x, dtype=float) for x in (batch, isl, heads, kv_heads, head_dim, window))
    flops = 4.0 * b * h * d * _causal_sum(s, np.where(w > 0, w + t.window_pad, 0.0))
    moved = b * s * (2.0 * h + 2.0 * g) * d * attn_bytes
    eff = t.fraction * ramp(s, t.isl_half) * ramp(d, t.head_dim_half)
    return (np.maximum(flops / (eff * chip.peak("bf16")), moved / (t.hbm_fraction * chip.hbm_bandwidth_bytes_per_s))
            + t.item_s * b * h * np.ceil(s / 128.0) + t.floor_s)


def decode_attention_s(profile: EfficiencyProfile, chip: Accelerator, *, batch, kv_len, heads, kv_heads, head_dim,
                       window=0, kv_dtype: str = "bf16"):
    """Seconds of one decode attention kernel: ``batch`` sequences each attending ``kv_len`` cached
    tokens (min(kv_len, window) with a window), priced with ``profile.attention_terms("decode",
    kv_dtype)``: FLOPs 4·b·h·d·L at fraction·bf16 peak, or the KV read (2·b·g·d·(L+1)·bytes, one
    token written) at hbm_fraction·r(b·g)·BW, plus item_s per (sequence, KV head) and the floor.
    Omitted: split-KV reduction, page-table reads."""
    from ..spec.efficiency import ramp

    t = profile.attention_terms("decode", kv_dtype)
    b, L, h, g, d, w = (np.asarray(x, dtype=float) for x in (batch, kv_len, heads, kv_heads, head_dim, window))
    held = np.where(w > 0, np.minimum(L, w), L)
    flops = 4.0 * b * h * d * held
    kv = 2.0 * b * g * d * (held + 1.0) * get_dtype(_storage(kv_dtype)).bytes
    bw = t.hbm_fraction * ramp(b * g, t.items_half) * chip.hbm_bandwidth_bytes_per_s
    return np.maximum(flops / (t.fraction * chip.peak("bf16")), kv / bw) + t.item_s * b * g + t.floor_s


def moe_skew_factors(profile: EfficiencyProfile, distribution: str = "balanced") -> tuple[float, float]:
    """(compute factor, weight factor) of a routing distribution (``moe_skew``; (1, 1) for
    balanced or one the profile does not know)."""
    for name, compute, weights in profile.moe_skew:
        if name == distribution:
            return compute, weights
    return 1.0, 1.0


def moe_layer_s(profile: EfficiencyProfile, chip: Accelerator, *, flops, weight_bytes, act_bytes, rows_per_expert,
                inter=None, hidden=None, dtype: str = "bf16", distribution: str = "balanced"):
    """Seconds of one MoE FFN layer on one GPU shard (communication excluded): its grouped-GEMM
    FLOPs at fraction·r(rows per expert)·r(inter)·r(hidden)·peak (``inter`` = expert width on this
    shard, ``hidden`` = d; where given) or its touched expert weights at the achieved bandwidth,
    whichever is slower, plus the activation traffic of the permute, gated activation and
    un-permute kernels (``act_bytes``) at the same bandwidth, plus the layer floor. A skewed
    routing (``moe_skew``) scales the token work (FLOPs, activations) by its compute factor (the
    measured rank's extra pairs) and the weights by its weight factor (fewer distinct experts
    touched). The profile's ``moe_terms(dtype)``, else its GEMM terms. Omitted: the router GEMM and
    top-k (outside the measured op), expert-parallel traffic."""
    t = profile.moe_terms(dtype) or profile.gemm_terms(dtype)
    compute, weights = moe_skew_factors(profile, distribution)
    bw = t.hbm_fraction * chip.hbm_bandwidth_bytes_per_s
    eff = t.efficiency(rows_per_expert, inter, hidden)
    return (np.maximum(compute * np.asarray(flops, dtype=float) / (eff * chip.peak(_storage(dtype))),
                       weights * np.asarray(weight_bytes, dtype=float) / bw)
            + compute * np.asarray(act_bytes, dtype=float) / bw + t.floor_s)


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


