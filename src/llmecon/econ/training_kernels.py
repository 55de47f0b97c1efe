"""Kernel efficiencies of a training step in calibrated mode, from the same measured kernel-table
profiles serving uses (``catalog/profiles``, ``step.kernels``): η of the layers' GEMMs, of the
expert GEMMs, of FlashAttention and of the element-wise kernels, each a share of the dense peak (or of
HBM bandwidth) at the step's shapes.

  * non-expert GEMMs: ``profile.gemm_terms(precision).efficiency(m, n, k)`` with m = s·b/cp tokens of a
    micro-batch (sequence parallelism gathers the sequence before each column-parallel GEMM) and the
    mean weight of one GEMM taken as square, n = k = sqrt(weight elements per layer / GEMMs per layer
    / tp) (the approximation ``step.calibrated`` makes for serving);
  * expert GEMMs: the profile's MoE terms (``step.calibrated.expert_terms``) at m = rows per expert
    = s·b/cp · top_k · ep / routed experts, n = expert width, k = d_model;
  * attention: the prefill attention terms at the sequence length s/cp and the head dimension;
  * element-wise kernels: ``elementwise_fraction`` of HBM bandwidth.

Assumed: the backward pass runs at the forward's efficiency (its dgrad and wgrad GEMMs have the same
sizes transposed; FlashAttention's backward is slower per FLOP than its forward in practice, so this
flatters long-context steps); kernel floors and launch overheads are negligible at training sizes
(milliseconds per GEMM). Collectives keep the catalogue's link bandwidths (no fitted training
collective share exists). Omitted: fp8 quantisation kernels, optimizer-step time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..spec.efficiency import EfficiencyProfile, ramp
from ..spec.model import Model
from ..step.calibrated import _gemm_counts, expert_terms


@dataclass(frozen=True, kw_only=True)
class KernelEfficiency:
    """Achieved shares of peak: layer GEMMs (non-expert and expert, FLOP-weighted), head GEMM,
    attention core, element-wise bandwidth."""

    layer_gemm: float
    head_gemm: float
    attention: float
    elementwise: float
    source: str = ""


def ideal(efficiency: float = 1.0, source: str = "") -> KernelEfficiency:
    """One efficiency for every FLOP, the element-wise kernels at full bandwidth (the legacy model)."""
    return KernelEfficiency(layer_gemm=efficiency, head_gemm=efficiency, attention=efficiency, elementwise=1.0,
                            source=source)


def calibrated(model: Model, profile: EfficiencyProfile, *, seq: float, microbatch: int, tp: int, cp: int,
               ep: int, precision: str) -> KernelEfficiency:
    """Per-class efficiencies of ``profile`` at a training step's shapes (module docstring)."""
    m = seq / cp * microbatch
    mm = model.matmul_flops_per_token()
    p = model.params
    n_ne, _ = _gemm_counts(model)
    head = 2.0 * p.head_matmul
    layer_ne = (mm.non_expert - head) / model.n_layers  # FLOPs per token per layer = 2 · weight elements
    side = math.sqrt(max(layer_ne / 2.0 / n_ne / tp, 1.0))
    g = profile.gemm_terms(precision)
    eta_ne = float(g.efficiency(m, side, side))
    eta = eta_ne
    if model.is_moe and mm.expert > 0:
        e = expert_terms(profile, precision)
        mo = model.moe
        rows = m * mo.top_k * ep / mo.n_routed
        shape = {} if profile.moe_terms(precision) is None else {"n": mo.expert_ffn_dim / tp, "k": model.d_model}
        eta_ex = float(e.efficiency(rows, **shape))
        ne, ex = mm.non_expert - head, mm.expert
        eta = (ne + ex) / (ne / eta_ne + ex / eta_ex)
    hb = profile.gemm_terms("bf16")
    eta_head = float(hb.efficiency(m, model.vocab_size / tp, model.d_model))
    a = profile.attention_terms("prefill", "bf16")
    head_dim = model.attention.head_dim
    eta_attn = float(a.fraction * ramp(seq / cp, a.isl_half) * ramp(head_dim, a.head_dim_half))
    return KernelEfficiency(layer_gemm=eta, head_gemm=eta_head, attention=eta_attn,
                            elementwise=profile.elementwise_fraction, source=f"profile {profile.name}")
