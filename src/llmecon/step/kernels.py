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


MLA_DIMS = {"kv_lora_rank": 512, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128, "v_head_dim": 128}
"""The MLA shape of the ``mla`` tables: DeepSeek-V3's (the model the tables' module variants name,
``deepseek-ai/DeepSeek-V3``; Kimi-K2.5 and DeepSeek-V3.2 share it, GLM-5 has nope 192, v 256)."""


def mla_work(family: str, *, batch, heads, isl=None, kv_len=None, kv_bytes=2.0, dims=None) -> tuple:
    """(FLOPs, bytes) of one MLA attention kernel as llmecon counts them (``spec.layers.Attention.
    score_value_dims``; ``spec.model.Model.prefill_attention_flops``), ``dims`` as ``MLA_DIMS``:

    * prefill (``context_mla``), unabsorbed (DeepSeek-V2 §2.1.2), causal over ``isl`` tokens:
      FLOPs 2·b·h·S(isl)·(d_qk + d_v), d_qk = nope + rope, S(x) = x(x+1)/2; bytes: Q and K read
      (h·d_qk each per token), V read and O written (h·d_v each), bf16 (the table's ``mla_dtype``);
    * decode (``generation_mla``), absorbed, one query token over L = ``kv_len`` cached tokens:
      FLOPs 2·b·h·L·(r + rope + r), r = kv_lora_rank (scores over the latent and rope key,
      values over the latent); bytes: the latent cache read once per sequence (shared by all
      heads), b·(L + 1)·(r + rope)·``kv_bytes`` (one token written), plus the absorbed query read
      and output written in bf16, b·h·(2r + rope)·2.

    Omitted (so both stay lower bounds): fp8 scales, page tables, the split-KV reduction."""
    d = dims or MLA_DIMS
    b, h = np.asarray(batch, dtype=float), np.asarray(heads, dtype=float)
    r, rope = float(d["kv_lora_rank"]), float(d["qk_rope_head_dim"])
    if family == "context_mla":
        s = np.asarray(isl, dtype=float)
        dqk, dv = float(d["qk_nope_head_dim"]) + rope, float(d["v_head_dim"])
        return 2.0 * b * h * _causal_sum(s, 0.0) * (dqk + dv), b * s * h * (2.0 * dqk + 2.0 * dv) * 2.0
    L = np.asarray(kv_len, dtype=float)
    return (2.0 * b * h * L * (2.0 * r + rope),
            b * (L + 1.0) * (r + rope) * np.asarray(kv_bytes, dtype=float) + b * h * (2.0 * r + rope) * 2.0)


def mla_prefill_s(profile: EfficiencyProfile, chip: Accelerator, *, batch, isl, heads, kv_dtype: str = "bf16",
                  dims=None):
    """Seconds of one causal MLA prefill attention kernel (unabsorbed: ``batch`` prompts of ``isl``
    tokens, ``heads`` query heads per GPU), priced with ``profile.attention_terms("mla_prefill",
    kv_dtype)``: FLOPs and bytes of ``mla_work`` (``dims``: the model's MLA
    shape, default DeepSeek-V3's) at fraction·r(isl; isl_half)·bf16 peak or hbm_fraction·BW,
    whichever is slower, plus ``item_s`` per (sequence, head, 128-token query tile) and the floor.
    With ``IDEAL``: its roofline. Omitted: softmax, the rope split, the KV up-projection GEMM
    (a separate kernel)."""
    from ..spec.efficiency import ramp

    t = profile.attention_terms("mla_prefill", kv_dtype)
    b, s, h = (np.asarray(x, dtype=float) for x in (batch, isl, heads))
    flops, moved = mla_work("context_mla", batch=b, heads=h, isl=s, dims=dims)
    eff = t.fraction * ramp(s, t.isl_half)
    return (np.maximum(flops / (eff * chip.peak("bf16")), moved / (t.hbm_fraction * chip.hbm_bandwidth_bytes_per_s))
            + t.item_s * b * h * np.ceil(s / 128.0) + t.floor_s)


def mla_decode_s(profile: EfficiencyProfile, chip: Accelerator, *, batch, kv_len, heads, kv_dtype: str = "bf16",
                 dims=None):
    """Seconds of one absorbed MLA decode kernel (FlashMLA-style: ``batch`` sequences, one query
    token each over ``kv_len`` cached latents, ``heads`` query heads per GPU), priced with
    ``profile.attention_terms("mla_decode", kv_dtype)``: FLOPs (``mla_work``) at fraction·bf16
    peak, or the latent read at hbm_fraction·r(b; items_half)·BW (few sequences cannot fill the
    chip: one latent stream per sequence), plus ``item_s`` per sequence and the floor. With
    ``IDEAL``: its roofline. Omitted: split-KV reduction, page tables, fp8 dequantisation cost."""
    from ..spec.efficiency import ramp

    t = profile.attention_terms("mla_decode", kv_dtype)
    b, L, h = (np.asarray(x, dtype=float) for x in (batch, kv_len, heads))
    flops, moved = mla_work("generation_mla", batch=b, heads=h, kv_len=L,
                            kv_bytes=get_dtype(_storage(kv_dtype)).bytes, dims=dims)
    bw = t.hbm_fraction * ramp(b, t.items_half) * chip.hbm_bandwidth_bytes_per_s
    return np.maximum(flops / (t.fraction * chip.peak("bf16")), moved / bw) + t.item_s * b + t.floor_s


GDN_KERNELS = {"chunk_gated_delta_rule": "chunk", "chunk_gated_delta_rule_flashinfer": "chunk",
               "fused_recurrent_gated_delta_rule": "recurrent",
               "fused_recurrent_gated_delta_rule_packed_decode": "recurrent", "causal_conv1d_fn": "conv",
               "causal_conv1d_update": "conv_update"}
"""Gated DeltaNet kernels of the ``linear_attention`` tables -> the profile's ``gdn`` keys:
``chunk`` (prefill recurrence), ``recurrent`` (decode recurrence), ``conv`` / ``conv_update``
(the short causal convolution in prefill / decode)."""


def gdn_work(kernel: str, *, batch, seq_len, key_heads, key_dim, value_heads, value_dim, conv_kernel=4) -> tuple:
    """(FLOPs, bytes, items) of one Gated DeltaNet kernel on one GPU (one layer; ``batch``
    sequences of ``seq_len`` new tokens, T = batch·seq_len; nk key heads of dk, nv value heads of
    dv; state fp32, activations bf16), as ``spec.layers.LinearMixer`` counts the work:

    * ``chunk``/``recurrent``: FLOPs 7·dk·dv per value head per token (``recurrent_flops_per_token``;
      the chunked form's intra-chunk work is omitted); bytes q, k, v read and o written in bf16,
      T·(2·nk·dk + 2·nv·dv)·2, plus the fp32 state: written once per sequence (``chunk``) or read
      and written (``recurrent``), nv·dk·dv·4 each;
    * ``conv``/``conv_update``: C = 2·nk·dk + nv·dv channels (``conv_channels``), FLOPs 2·K per
      channel per token; bytes the input read and output written, T·C·2·2, plus the conv state
      ((K-1)·C in bf16) written (``conv``) or read and written (``conv_update``).

    ``items`` = the independent pieces a kernel spreads over the chip: b·nv·⌈seq_len/64⌉ (64-token
    chunks) for prefill kernels, b·nv for decode ones. Omitted: gates, norms, the chunked form's
    extra FLOPs (so both counts stay lower bounds)."""
    b, s = np.asarray(batch, dtype=float), np.asarray(seq_len, dtype=float)
    nk, dk, nv, dv, k = (np.asarray(x, dtype=float) for x in (key_heads, key_dim, value_heads, value_dim,
                                                                 conv_kernel))
    t = b * s
    state, chan = b * nv * dk * dv * 4.0, 2.0 * nk * dk + nv * dv
    if kernel in ("chunk", "recurrent"):
        moved = t * (2.0 * nk * dk + 2.0 * nv * dv) * 2.0 + state * (1.0 if kernel == "chunk" else 2.0)
        flops = t * nv * 7.0 * dk * dv
    elif kernel in ("conv", "conv_update"):
        conv_state = b * (k - 1.0) * chan * 2.0
        moved = t * chan * 4.0 + conv_state * (1.0 if kernel == "conv" else 2.0)
        flops = t * chan * 2.0 * k
    else:
        raise SpecError(f"gdn kernel must be one of chunk, recurrent, conv, conv_update, got {kernel!r}")
    items = b * nv * (np.ceil(s / 64.0) if kernel in ("chunk", "conv") else 1.0)
    return flops, moved, items


def gdn_kernel_s(profile: EfficiencyProfile, chip: Accelerator, kernel: str, **shape):
    """Seconds of one Gated DeltaNet kernel (``gdn_work``'s shape keywords), with the profile's
    ``gdn`` terms of ``kernel``: max(FLOPs at fraction·bf16 peak, bytes at
    hbm_fraction·r(items; items_half)·BW) + item_s·items + floor_s. Without terms for ``kernel``
    (or with ``IDEAL``): its roofline."""
    from ..spec.efficiency import AttentionTerms, ramp

    t = dict(profile.gdn).get(kernel, AttentionTerms())
    flops, moved, items = gdn_work(kernel, **shape)
    bw = t.hbm_fraction * ramp(items, t.items_half) * chip.hbm_bandwidth_bytes_per_s
    return np.maximum(flops / (t.fraction * chip.peak("bf16")), moved / bw) + t.item_s * items + t.floor_s
