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
  * attention: the prefill attention terms (MLA prefill's for MLA models, which train in the expanded
    form) at the sequence length s/cp and the head dimension;
  * element-wise kernels: ``elementwise_fraction`` of HBM bandwidth.

Assumed: the backward pass runs at the forward's efficiency (its dgrad and wgrad GEMMs have the same
sizes transposed; FlashAttention's backward is slower per FLOP than its forward in practice, so this
flatters long-context steps); kernel floors and launch overheads are negligible at training sizes
(milliseconds per GEMM). Collectives: the links at the share of their bandwidth NCCL's large
collectives reach in measurements of the chip (``MEASURED_LINKS``; the catalogue link where none
exists). Omitted: fp8 quantisation kernels, optimizer-step time.
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
    scale_up_share: float = 1.0    # measured NCCL ring (reduce-scatter/all-gather) share of scale-up bandwidth
    scale_out_share: float = 1.0   # measured NCCL send/recv share of scale-out bandwidth
    links_source: str = ""
    sustained_share: float = 1.0   # share of the GEMM and attention rates a long run sustains (SUSTAINED_SHARES)
    sustained_source: str = ""


@dataclass(frozen=True, kw_only=True)
class SustainedShare:
    """The share of a profile's GEMM and attention rates that published training runs sustain, and what it
    was fitted on."""

    value: float
    source: str


# A profile's kernel tables are measured on short kernels under ideal conditions (aiconfigurator: "CUDA events,
# CUDA graphs, warm-up and locked clocks", ../shared/validation/aiconfigurator/README.md); a training run
# sustains less of them for hours (clocks under the power limit, FlashAttention's slower backward, framework
# overheads: not measured apart). ONE scalar, fitted on published runs by benchmarks/fit_training_share.py (which
# prints the out-of-sample errors); ``train_step(kernel_share=...)`` / ``llmecon train --kernel-share`` override it.
# Fitted on Llama 3 405B's three Table 4 runs (arXiv:2407.21783, recalled: 430, 400, 380 TFLOP/s per GPU) on the
# H100 TensorRT-LLM tables. Out of sample: each Llama run with the share fitted on the other two, and DeepSeek-V3's
# GPU-hours (benchmarks/results/training_published_2026-11-27.md). DeepSeek-V3 was not fitted on, but it decided
# which profiles carry a share: the vllm and sglang H100 profiles, fitted the same way, miss it by about +50%
# (their fp8_block MoE tables), so they get none and price their tables as measured.
H100_TRTLLM_SHARE = 0.7787
_TRANSFERRED = ("transferred from h100-sxm/trtllm (assumed: the same engine's tables, measured the same way; no "
                "published training run on this chip), so that chips compare on one footing")
SUSTAINED_SHARES = {
    "h100-sxm/trtllm": SustainedShare(value=H100_TRTLLM_SHARE,
                                      source="fitted on Llama 3 405B's three published runs"),
    **{f"{chip}/trtllm": SustainedShare(value=H100_TRTLLM_SHARE, source=_TRANSFERRED)
       for chip in ("h200", "b200", "b300", "gb200", "gb300")},
}


def sustained_share(profile: EfficiencyProfile) -> SustainedShare | None:
    """The fitted sustained share of ``profile`` (by name), or None when no published run fits one."""
    return SUSTAINED_SHARES.get(profile.name)


@dataclass(frozen=True, kw_only=True)
class MeasuredLinks:
    """What NCCL's large collectives reach on a chip's links, as shares of the catalogue bandwidth."""

    scale_up: float
    scale_out: float
    source: str


# Training's collectives are large NCCL rings and sends (sequence-parallel reduce-scatter/all-gather,
# DP reduce-scatter/all-gather, PP send/recv), not the engines' small custom all-reduces the serving
# profiles fit: their shares come from NCCL measurements, per accelerator, never from training runs. A system
# with another link on the same die (hgx-h800: H100 with 200 GB/s NVLink) takes the die's shares (assumed).
MEASURED_LINKS = {
    # scale-up: fidelity.comm_fit.ring_bandwidth_share on aiconfigurator h100_sxm/comm/nccl/2.29.2 (bf16
    # reduce-scatter and all-gather, 8 GPUs, 16-512 MiB: median 0.662 of 450 GB/s; 0.72 at 256 MiB);
    # scale-out: vidur h100_dgx send_recv across two nodes, 35.9 GB/s fitted (benchmarks/fit_link_latency.py,
    # docs/assumptions.md) over the catalogue's 50 GB/s ConnectX-7: 0.718.
    "h100-sxm": MeasuredLinks(scale_up=0.662, scale_out=35.9 / 50.0,
                              source="NCCL RS/AG (aiconfigurator h100_sxm nccl 2.29.2), IB send/recv (vidur h100_dgx)"),
    # scale-up only (same fit on aiconfigurator's NCCL 2.29.2 table of the chip); scale-out not measured
    "h200": MeasuredLinks(scale_up=0.677, scale_out=1.0, source="NCCL RS/AG (aiconfigurator h200_sxm nccl 2.29.2)"),
    "b200": MeasuredLinks(scale_up=0.560, scale_out=1.0, source="NCCL RS/AG (aiconfigurator b200_sxm nccl 2.29.2)"),
    "b300": MeasuredLinks(scale_up=0.567, scale_out=1.0, source="NCCL RS/AG (aiconfigurator b300_sxm nccl 2.29.2)"),
    # scale-up: vidur a100_dgx ring all-reduce p = 8, 151.9 GB/s of the 300 GB/s NVLink3 (docs/assumptions.md);
    # scale-out not measured on a comparable cluster (vidur's a100_dgx IB reaches 7.8 GB/s: a different NIC
    # layout from the catalogue's 25 GB/s per GPU), kept at the catalogue link.
    "a100-80gb": MeasuredLinks(scale_up=151.9 / 300.0, scale_out=1.0,
                               source="NCCL ring all-reduce (vidur a100_dgx); scale-out not measured"),
}


def ideal(efficiency: float = 1.0, source: str = "") -> KernelEfficiency:
    """One efficiency for every FLOP, the element-wise kernels at full bandwidth (the legacy model)."""
    return KernelEfficiency(layer_gemm=efficiency, head_gemm=efficiency, attention=efficiency, elementwise=1.0,
                            source=source, sustained_source="none: one efficiency for every FLOP, no profile")


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
    # MLA trains in its expanded (per-head K/V) form, the form MLA prefill kernels run
    a = profile.attention_terms("mla_prefill" if model.attention.kind == "mla" else "prefill", "bf16")
    head_dim = model.attention.head_dim
    eta_attn = float(a.fraction * ramp(seq / cp, a.isl_half) * ramp(head_dim, a.head_dim_half))
    links = next((MEASURED_LINKS[a] for a in profile.accelerators if a in MEASURED_LINKS), None)
    shares = {} if links is None else dict(scale_up_share=links.scale_up, scale_out_share=links.scale_out,
                                           links_source=links.source)
    return KernelEfficiency(layer_gemm=eta, head_gemm=eta_head, attention=eta_attn,
                            elementwise=profile.elementwise_fraction, source=f"profile {profile.name}", **shares)
