"""Calibrated step time: the work ``inference`` counts, priced kernel class by kernel class with
an efficiency profile (``efficiency``), then summed (kernels run one after another).

Per stage-step on the critical chip, four kernel classes, each max(FLOPs at the achieved FLOP
rate, bytes at the achieved bandwidth) (the roofline of that class, Williams et al. 2009, with
``efficiency`` fractions):

* non-expert GEMMs (attention projections, dense FFN, router, head): η(m) with m = tokens per
  attention group; bytes = the non-expert weights this chip reads;
* expert GEMMs: η(m) with m = tokens per touched expert on the busiest expert group (its
  token-expert pairs over its distinct experts, ``expert_load``); bytes = its touched experts' weights;
* attention core: FLOPs at ``attention_fraction`` of the bf16 peak; bytes = KV read + written;
* element-wise kernels: activation traffic, per token per layer (2·norms + 6)·d·2 bytes on each
  attention group (norm read+write, two residual adds reading 2d writing d) plus 3·F·2 bytes of
  the gated activation (F = active FFN width) spread over the stage — at ``elementwise_fraction``.

plus a floor per kernel (GEMM/attention kernels: ``kernel_floor_s``; element-wise:
``elementwise_floor_s``) and communication on the profile's links with a per-call overhead —
floors and call overheads scaled by ``engine_floor_scale`` (what an engine with CUDA graphs and
its own all-reduce still pays) — and ``step_overhead_s`` once per iteration plus ``layer_overhead_s``
per layer of the iteration (pp stages of ceil(L/pp) layers). Communication is *not* overlapped with compute (TP
all-reduces sit between dependent GEMMs); with pp > 1 every micro-batch pays its stage-step.

With a kernel-table profile (``EfficiencyProfile.gemm``/``moe``, fitted on NVIDIA's measured
kernels) each class takes its own dtype's terms: non-expert GEMMs the weight dtype's fraction,
m ramp, n/k ramps (at the class's mean GEMM taken square, ``_shape_ramp``), achieved bandwidth and
floor; expert GEMMs the MoE layer's terms (ramp in tokens per expert, one floor per MoE layer for
its grouped kernels, routing and permutation); attention the decode kernel floor; MLA models the
MLA attention terms of the phase and KV dtype (``attention_rates``), Gated DeltaNet layers'
recurrence the ``gdn`` kernel terms (``attention_class_s``). The MoE tables'
routing-skew factors are not applied here: the busiest group's load is ``expert_load``'s (with the
user's ``expert_imbalance``). The prefill attention prompt-length ramp is omitted (constant rate
keeps the serving simulator's exact split of attention by sequence).

Summing kernel classes makes calibrated time >= the ideal roofline whenever every fraction is <= 1
(sum of maxes >= max of sums), which tests check. Omitted: rope and softmax traffic, sampling,
GEMM tile quantisation beyond the m ramp, fused kernels (a fused norm+GEMM would save one floor),
CUDA-graph capture (which removes most launch cost), overlap of communication with compute.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..dtypes import get_dtype
from ..spec.efficiency import EfficiencyProfile
from ..spec.model import Model
from ..spec.plan import Plan
from .roofline import StepTime


@dataclass(frozen=True, kw_only=True)
class Work:
    """What one stage-step of one micro-batch does on the critical chip (from ``inference``)."""

    tokens: object              # adp x the busiest attention group's tokens (the micro-batch's when balanced)
    ne_flops: object            # non-expert matmul FLOPs on this chip
    ex_flops: object            # expert matmul FLOPs on this chip (hottest rank)
    attn_flops: object          # attention score/value FLOPs on this chip
    ne_bytes: object            # non-expert weight bytes read
    ex_bytes: object            # routed-expert weight bytes read
    kv_bytes: object            # KV bytes read + written
    expert_rows: object         # tokens per touched expert on the busiest expert group (0 for dense)
    ne_peak: float
    ex_peak: float
    attn_peak: float
    bandwidth: float            # datasheet HBM bytes/s of the chip
    ne_dtype: str = ""          # weight dtype of the non-expert GEMMs ("" = the profile's scalar terms)
    ex_dtype: str = ""          # weight dtype of the expert GEMMs
    phase: str = ""             # "prefill" or "decode" ("": the scalar attention terms)
    kv_dtype: str = ""          # KV-cache dtype (picks the MLA attention terms)
    lin_flops: object = 0.0     # Gated DeltaNet recurrence FLOPs on this chip (part of attn_flops)
    lin_state: object = 0.0     # Gated DeltaNet state bytes read on this chip (part of kv_bytes)


def kernels_per_layer(model: Model) -> tuple[float, float]:
    """(GEMM + attention kernels, element-wise kernels) per layer, averaged over layers: fused QKV
    and O projections (MLA: q down/up, kv down, absorbed k/v up, o = 5), one attention kernel,
    gate-up and down (MoE layers: router, grouped gate-up, grouped down, + 2 for shared experts);
    element-wise: the norms, two residual adds, the activation and rope."""
    attn = 5.0 if model.attention.kind == "mla" else 2.0
    moe_share = model.n_moe_layers / model.n_layers
    ffn_moe = 3.0 + (2.0 if model.is_moe and model.moe.n_shared else 0.0)
    gemm = attn + 1.0 + (1 - moe_share) * 2.0 + moe_share * ffn_moe
    return gemm, float(model.norms_per_layer + 4)


def active_ffn_width(model: Model) -> float:
    """Active FFN width per token averaged over layers (dense F, or k·F_e + shared)."""
    if not model.is_moe:
        return float(model.dense_ffn_dim)
    moe = model.moe
    moe_w = moe.top_k * moe.expert_ffn_dim + moe.n_shared * moe.shared_ffn_dim
    share = model.n_moe_layers / model.n_layers
    return share * moe_w + (1 - share) * model.dense_ffn_dim


@dataclass(frozen=True, kw_only=True)
class StageTime:
    """Seconds of one stage-step: FLOP time and byte time summed over kernel classes, the kernel
    floors, and ``kernels`` = the sum of the per-class maxima + floors (the calibrated time)."""

    compute_s: object
    memory_s: object
    floors_s: object
    kernels_s: object


def _gemm_counts(model: Model) -> tuple[float, float]:
    """(non-expert GEMM kernels, grouped expert GEMM kernels) per layer, averaged over layers
    (``kernels_per_layer``'s count less the attention kernel)."""
    attn = 5.0 if model.attention.kind == "mla" else 2.0
    moe_share = model.n_moe_layers / model.n_layers
    shared = 2.0 if model.is_moe and model.moe.n_shared else 0.0
    return attn + (1 - moe_share) * 2.0 + moe_share * (1.0 + shared), moe_share * 2.0


def expert_terms(profile: EfficiencyProfile, dtype: str = ""):
    """The terms expert GEMMs are priced with: the profile's MoE-layer terms for ``dtype`` where
    it has them, else its GEMM terms."""
    return profile.moe_terms(dtype) or profile.gemm_terms(dtype)


def _shape_ramp(terms, flops, m, kernels):
    """r(n)·r(k) of the kernel-table GEMM terms at the class's mean GEMM: its weight elements per
    kernel n·k = FLOPs/(2·m·kernels), taken as a square n = k (an approximation: the class mixes
    column- and row-parallel shapes). 1 for terms without shape ramps."""
    if not (terms.n_half or terms.k_half):
        return 1.0
    side = np.sqrt(np.asarray(flops, dtype=float) / (2.0 * np.maximum(m, 1.0) * np.maximum(kernels, 1e-9)))
    return (side / (side + terms.n_half)) * (side / (side + terms.k_half))


def attention_rates(model: Model, profile: EfficiencyProfile, phase: str = "", kv_dtype: str = "") -> tuple:
    """(FLOP fraction, bandwidth share, per-kernel floor seconds) of the attention core class. MLA
    models on a profile with MLA tables (``mla_prefill``/``mla_decode``, fitted on the ``mla``
    kernel tables) take the ``phase``'s fraction and hbm_fraction at the KV dtype, and the decode
    kernel's floor in both phases; every other model (and MLA without those tables, or no phase):
    the scalar attention_fraction, hbm_fraction and attention floor, as before. Omitted, as for
    GQA: the ramps, per-item and per-tile terms and a per-phase floor — the serving simulator
    splits a step exactly into X(tokens) + max(sum of per-sequence compute, sum of KV times)
    (``serving.steptime_calibrated``), which needs rates linear in each sequence's work and
    floors the same in both phases."""
    table = profile.mla_decode if phase == "decode" else profile.mla_prefill
    if model.attention.kind != "mla" or not phase or not table or not profile.mla_decode:
        return profile.attention_fraction, profile.hbm_fraction, profile.decode_attention_floor_s
    t = profile.attention_terms(f"mla_{phase}", kv_dtype or "bf16")
    return t.fraction, t.hbm_fraction, profile.attention_terms("mla_decode", kv_dtype or "bf16").floor_s


def gdn_rates(model: Model, profile: EfficiencyProfile, phase: str = ""):
    """(FLOP fraction, bandwidth share, state factor) of the Gated DeltaNet layers' recurrence in
    ``phase`` from the profile's ``gdn`` terms (decode: the ``recurrent`` kernel, the state read
    and written, factor 2 on the state bytes the work counts once, as the kernel fit counts them;
    prefill: the ``chunk`` kernel, factor 1), or None (no such layers, terms or phase)."""
    lin = model.linear
    if lin is None or lin.kind != "gated_deltanet" or not model.n_linear_layers or phase not in ("decode", "prefill"):
        return None
    t = dict(profile.gdn).get("recurrent" if phase == "decode" else "chunk")
    if t is None:
        return None
    return t.fraction, t.hbm_fraction, 2.0 if phase == "decode" else 1.0


def attention_class_s(model: Model, profile: EfficiencyProfile, *, phase: str, kv_dtype: str, flops, kv_bytes,
                      lin_flops=0.0, lin_state=0.0, peak: float, bandwidth: float):
    """(compute seconds, byte seconds) of attention work on the critical chip — linear in the work,
    so additive over sequences (the serving simulator sums it per sequence): FLOPs and KV bytes at
    ``attention_rates``; the Gated DeltaNet share (``lin_flops``, ``lin_state``, inside ``flops``
    and ``kv_bytes``) at ``gdn_rates`` where the profile has them. Per-kernel floors and item
    costs stay with the attention floor (one per layer, the same in both phases)."""
    frac, share, _ = attention_rates(model, profile, phase, kv_dtype)
    g = gdn_rates(model, profile, phase)
    if g is None:
        return flops / (frac * peak), kv_bytes / (share * bandwidth)
    f_lin, b_lin, factor = g
    return ((flops - lin_flops) / (frac * peak) + lin_flops / (f_lin * peak),
            (kv_bytes - lin_state) / (share * bandwidth) + factor * lin_state / (b_lin * bandwidth))


def stage_time(model: Model, plan: Plan, work: Work, profile: EfficiencyProfile) -> StageTime:
    """Seconds of one stage-step by kernel class (``StageTime``)."""
    phi = plan.stage_fraction(model)
    layers = phi * model.n_layers
    n_ne, n_ex = _gemm_counts(model)
    m_ne = np.asarray(work.tokens, dtype=float) / plan.adp
    g = profile.gemm_terms(work.ne_dtype)
    gemm_c = work.ne_flops / (g.efficiency(m_ne) * _shape_ramp(g, work.ne_flops, m_ne, layers * n_ne)
                              * work.ne_peak)
    gemm_m = work.ne_bytes / (g.hbm_fraction * work.bandwidth)
    ex_c = ex_m = 0.0 * m_ne
    e = expert_terms(profile, work.ex_dtype)
    if model.is_moe:
        m_ex = np.maximum(work.expert_rows, 1.0)
        shape = ({} if profile.moe_terms(work.ex_dtype) is None else  # the MoE tables' expert-width / hidden ramps
                 {"n": model.moe.expert_ffn_dim / plan.expert_tp, "k": model.d_model})
        ex_c = work.ex_flops / (e.efficiency(m_ex, **shape) * work.ex_peak)
        ex_m = work.ex_bytes / (e.hbm_fraction * work.bandwidth)
    elif np.any(np.asarray(work.ex_flops) > 0):  # a dense model has no expert work
        ex_c = work.ex_flops / (g.efficiency(m_ne) * work.ex_peak)
    at_floor = attention_rates(model, profile, work.phase, work.kv_dtype)[2]
    at_c, at_m = attention_class_s(model, profile, phase=work.phase, kv_dtype=work.kv_dtype, flops=work.attn_flops,
                                   kv_bytes=work.kv_bytes, lin_flops=work.lin_flops, lin_state=work.lin_state,
                                   peak=work.attn_peak, bandwidth=work.bandwidth)
    act = get_dtype("bf16").bytes
    elem_bytes = layers * act * (m_ne * (2 * model.norms_per_layer + 6) * model.d_model
                                 + 3.0 * work.tokens * active_ffn_width(model) / plan.width)
    elem = elem_bytes / (profile.elementwise_fraction * work.bandwidth)
    _, n_elem = kernels_per_layer(model)
    moe_floor = (e.floor_s if profile.moe_terms(work.ex_dtype) is not None else 2.0 * e.floor_s) * (n_ex / 2.0)
    floors = profile.engine_floor_scale * layers * (n_ne * g.floor_s + at_floor + moe_floor
                                                    + n_elem * profile.elementwise_floor_s)
    kernels = np.maximum(gemm_c, gemm_m) + np.maximum(ex_c, ex_m) + np.maximum(at_c, at_m) + elem + floors
    return StageTime(compute_s=gemm_c + ex_c + at_c, memory_s=gemm_m + ex_m + at_m + elem, floors_s=floors,
                     kernels_s=kernels)


def comm_overhead_s(model: Model, plan: Plan, tiers: dict, profile: EfficiencyProfile) -> float:
    """Per-call overhead of one iteration's collectives: 2 TP all-reduces per layer, 2 all-to-alls
    per MoE layer (inside a scale-up domain: the profile's ``all_to_all`` terms where it has them),
    one per pipeline hop, each at its tier's ``op_overhead_s``."""
    phi = plan.stage_fraction(model)

    def cost(tier, p2p: bool = False, a2a: bool = False):
        if not isinstance(tier, str):  # one tier per plan (``spec.plan_array.CodedTier``)
            return tier.lookup(lambda name: cost(name, p2p, a2a))
        if tier == "none":
            return 0.0
        eff = profile.scale_up if tier == "scale_up" else profile.scale_out
        if a2a and tier == "scale_up" and profile.all_to_all is not None:
            eff = profile.all_to_all
        return eff.p2p_s if p2p else eff.op_overhead_s

    calls = plan.pp * phi * model.n_layers * 2 * cost(tiers.get("tp", "none"))
    if model.is_moe:
        calls += plan.pp * phi * model.n_moe_layers * 2 * cost(tiers.get("ep", "none"), a2a=True)
    calls += (plan.pp - 1) * cost(tiers.get("pp", "none"), p2p=True)
    return profile.engine_floor_scale * calls


def calibrated_time(model: Model, plan: Plan, work: Work, profile: EfficiencyProfile, *, comm_s,
                    comm_tiers: dict) -> StepTime:
    """The iteration's calibrated StepTime: pp stage-steps + communication + overheads, no
    overlap (``serial_s``); ``overhead_s`` holds the kernel floors and the step overhead."""
    st = stage_time(model, plan, work, profile)
    pp = plan.pp
    comm = comm_s + comm_overhead_s(model, plan, comm_tiers, profile)
    fixed = profile.step_overhead_s + pp * plan.stage_fraction(model) * model.n_layers * profile.layer_overhead_s
    overhead = pp * st.floors_s + fixed
    return StepTime(compute_s=pp * st.compute_s, memory_s=pp * st.memory_s, comm_s=comm,
                    overhead_s=overhead, serial_s=pp * st.kernels_s + comm + fixed)
