"""One training step on a cluster: time, MFU/HFU, communication and memory per GPU (SPEC F21, F23).

A cluster is ``gpus`` accelerators of a catalogue system: scale-up domains of ``system.chips``
joined by ``system.scale_out`` (one NIC per GPU, as in DGX/HGX and NVL72). Rank order, innermost
first: tp, cp, dp (ep is carved from dp), pp — Megatron-LM's default. A process group of stride s
and size g stays in one domain when s·g <= chips; otherwise its ring is bottlenecked by the
per-GPU scale-out link.

Time (per step; Narayanan et al. 2021, arXiv:2104.04473, §2-3):
  per micro-batch on the slowest stage: (forward + backward + recomputed FLOPs; FlashAttention's backward
  recomputes the scores, :func:`attention_passes`) / (tp·cp) /
  (peak·efficiency) + memory-bound element-wise kernels (bytes / HBM bandwidth, see
  :func:`layer_elementwise_bytes`) + tensor-parallel all-reduces + expert all-to-alls + pipeline hops, all
  exposed (Megatron-LM runs them on the critical path); context-parallel ring traffic is hidden
  behind attention compute up to its length;
  pipeline: M micro-batches / (1 − bubble fraction of the schedule);
  data-parallel gradient sync once per step (hierarchical when a group has several ranks per
  domain), hidden behind the last micro-batch's backward by
  ``dp_overlap`` (bucketed overlap; 0 = none); ZeRO-3 parameter all-gathers per micro-batch,
  hidden behind its compute by the same fraction; DualPipe hides all-to-alls and pipeline sends
  behind the paired chunk's compute.
Omitted: optimizer-step time (memory-bound, ~16 bytes/parameter read once), kernel launch and
framework overheads (folded into ``efficiency``), congestion, stragglers, load imbalance of MoE
routing, the learned-position embedding.

Memory per GPU (Rajbhandari et al. 2020, arXiv:1910.02054 §3; Korthikanti et al. 2022,
arXiv:2205.05198 §4): mixed-precision Adam holds 2 (bf16 weights) + 2 (bf16 grads) + 12 (fp32
master, m, v) bytes per parameter; ZeRO stage 1/2/3 shards the optimizer / + grads / + weights
over the data-parallel group. Activations per layer follow Korthikanti's accounting (2-byte
tensors, 1-byte dropout masks, sequence parallelism whenever tp > 1) generalised to GQA, gated
and MoE MLPs and sliding windows — see :func:`layer_activation_bytes`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from ..errors import SpecError, require_number, require_whole, unknown_name
from ..spec.hardware import System
from ..spec.model import Model
from .training import SCHEDULES, bubble_fraction
from ..spec.efficiency import EfficiencyProfile
from .training_comm import (data_parallel_comm, expert_exchange_s, group_link,  # noqa: F401 (re-exported)
                            hierarchical_all_reduce_s, members_per_domain, model_parallel_comm)
from .training_kernels import (KernelEfficiency, calibrated as calibrated_kernels, ideal as uniform_kernels,
                               sustained_share)
from .training_memory import (  # noqa: F401  (re-exported: the step's public memory API)
    ACT_BYTES, FP8_BYTES, GRAD_BYTES, MASK_BYTES, OPTIMIZER_BYTES, WEIGHT_BYTES, RankMemory, TrainMemory, _layer_mix,
    in_flight_microbatches, layer_activation_bytes, memory_per_gpu, stage_layers)

RECOMPUTE = ("none", "selective", "full", "reversible")
EMA_PLACES = ("none", "gpu", "cpu")
PRECISIONS = ("bf16", "fp8", "fp8_block")
SECONDS_PER_DAY = 86400.0
# the most GPUs a training plan may span (an input bound: 2^20, 64 times the largest published run in
# catalog/training_runs.toml); it bounds the rank arrays the collectives' placement is worked out on
# (econ/training_comm.py), so that no input can exhaust memory
MAX_TRAIN_GPUS = 1 << 20

# Kernel efficiency (achieved / dense peak on the matmul FLOPs) fitted to Megatron-LM's measured
# weak scaling on A100 (Narayanan et al. 2021, Table 1; shared/validation/training_megatron2021.yaml)
# by tests/test_training_step.py::test_megatron_table_1. Moving it to other chips or frameworks is
# an assumption; ``efficiency=1`` gives the ideal (lower-bound) step.
MEGATRON_A100_EFFICIENCY = 0.65

@dataclass(frozen=True, kw_only=True)
class TrainPlan:
    """Parallelism and memory strategy of a training job. gpus = tp·cp·dp·pp; ep divides dp."""

    tp: int = 1
    pp: int = 1
    dp: int = 1
    ep: int = 1
    cp: int = 1
    microbatch: int = 1          # sequences per micro-batch
    schedule: str = "1f1b"
    chunks: int = 1              # virtual stages per GPU (interleaved schedule)
    zero: int = 1                # ZeRO stage 0-3 (Megatron's distributed optimizer is stage 1)
    recompute: str = "selective"  # none, selective (attention core), full, reversible
    flash_attention: bool = True  # False: eager attention materialises the s×s scores in HBM
    dropout: bool = False         # dropout masks kept (GPT-3/Megatron 2021: yes; Llama, DeepSeek: no)
    pp_trim: int = 0              # layers fewer on the first and last pipeline chunk (Llama 3: 1)
    # memory options (econ/training_memory.py; DeepSeek-V3, arXiv:2412.19437, §3.2.3 and §3.3.3, sets all;
    # the report's details here and below are recalled, not re-read)
    grad_fp32: bool = False        # gradients accumulated in fp32 (4 B/param; Megatron main_grad, DeepSeek-V3)
    bf16_moments: bool = False     # Adam m and v in bf16 (DeepSeek-V3 §3.3.3): 8 B/param of optimizer states
    ema: str = "none"              # an fp32 EMA of the weights: none, gpu (+4 B/param, sharded), cpu (§3.2.3)
    recompute_norms: bool = False  # RMSNorm outputs recomputed in the backward (§3.2.3)
    recompute_mla_up: bool = False  # MLA up-projections recomputed (§3.2.3; MLA models only)
    fp8_activations: bool = False  # Linear inputs cached in FP8, MoE SwiGLU output recomputed (§3.3.3)
    mtp: bool = False              # train the model's multi-token-prediction modules (§2.2) on the last stage
    # expert-parallel traffic (DeepSeek-V3): FP8 dispatch (§3.3.3), node-limited routing M (§2.1.2: 4), and
    # the share of SMs the communication kernels take from compute (§3.2.2: 20 of the H800's 132)
    fp8_dispatch: bool = False
    ep_node_limit: int = 0         # 0: no limit (each routed copy sent on its own)
    comm_sm_share: float = 0.0

    def __post_init__(self) -> None:
        for name in ("tp", "pp", "dp", "ep", "cp", "microbatch", "chunks"):
            # field "micro_batch": the front-ends' spelling of ``microbatch``
            require_whole(name.replace("microbatch", "micro_batch"), getattr(self, name))
        require_whole("zero", self.zero, 0)
        require_whole("pp_trim", self.pp_trim, 0)
        require_whole("ep_node_limit", self.ep_node_limit, 0)
        require_number("comm_sm_share", self.comm_sm_share, minimum=0, maximum=0.9)
        if self.zero > 3:
            raise SpecError(f"ZeRO stages are 0, 1, 2 or 3, got {self.zero}", field="zero", value=self.zero,
                            show_value=False)
        if self.ema not in EMA_PLACES:
            raise unknown_name("EMA placement", self.ema, EMA_PLACES, field="ema")
        if self.schedule not in SCHEDULES:
            raise unknown_name("pipeline schedule", self.schedule, SCHEDULES)
        if self.recompute not in RECOMPUTE:
            raise unknown_name("recompute mode", self.recompute, RECOMPUTE)
        if self.chunks > 1 and self.schedule != "interleaved":
            raise SpecError("virtual chunks need {schedule} interleaved", field="chunks", value=self.chunks)
        if self.schedule == "dualpipe" and self.pp % 2:
            raise SpecError("DualPipe pairs stage r with stage pp − 1 − r: needs an even {pp}", field="pp",
                            value=self.pp)
        if self.gpus > MAX_TRAIN_GPUS:
            raise SpecError(f"tp·cp·dp·pp = {self.gpus:,} GPUs is over {MAX_TRAIN_GPUS:,}, more than any cluster "
                            "llmecon plans for", field="dp", value=self.dp, show_value=False,
                            fix="shrink {dp}, {tp}, {cp} or {pp}")
        if self.dp % self.ep:
            raise SpecError(f"expert parallelism is carved from data parallelism, so it must divide {{dp}} {self.dp}",
                            field="ep", value=self.ep)

    @property
    def gpus(self) -> int:
        return self.tp * self.cp * self.dp * self.pp

    def label(self) -> str:
        return (f"tp{self.tp}·cp{self.cp}·dp{self.dp}·pp{self.pp}" + (f"·ep{self.ep}" if self.ep > 1 else "")
                + f" mb{self.microbatch} {self.schedule}" + (f"(v={self.chunks})" if self.chunks > 1 else "")
                + f" zero{self.zero} {self.recompute}" + (f" trim{self.pp_trim}" if self.pp_trim else "")
                + "".join(f" {name}" for name, on in (
                    ("grad-fp32", self.grad_fp32), ("bf16-moments", self.bf16_moments),
                    (f"ema-{self.ema}", self.ema != "none"), ("recompute-norms", self.recompute_norms),
                    ("recompute-mla-up", self.recompute_mla_up), ("fp8-activations", self.fp8_activations),
                    ("mtp", self.mtp), ("fp8-dispatch", self.fp8_dispatch),
                    (f"node-limit{self.ep_node_limit}", self.ep_node_limit > 0),
                    (f"comm-sms{self.comm_sm_share:.0%}", self.comm_sm_share > 0)) if on))


@dataclass(frozen=True, kw_only=True)
class TrainStep:
    """One optimizer step of ``global_batch_tokens`` tokens; seconds are wall time of the step."""

    plan: TrainPlan
    seq_len: int
    global_batch_tokens: float
    microbatches: int
    efficiency: float
    compute_s: float          # M micro-batches of matmul/attention FLOPs on the slowest stage
    elementwise_s: float      # memory-bound norms, activations, dropout, eager softmax (HBM bytes / BW)
    tp_comm_s: float
    ep_comm_s: float
    cp_comm_s: float          # exposed part only
    pp_comm_s: float
    zero3_gather_s: float     # exposed part only
    bubble_s: float
    dp_comm_s: float          # exposed part only (per micro-batch from ZeRO 2, once per step otherwise)
    model_flops: float        # 6·N·D + attention (no recomputation)
    hardware_flops: float     # model FLOPs + recomputed FLOPs
    peak_flops_per_gpu: float
    memory: TrainMemory
    tiers: dict
    precision: str = "bf16"
    kernels: KernelEfficiency | None = None

    @property
    def gpus(self) -> int:
        return self.plan.gpus

    @property
    def step_s(self) -> float:
        return (self.compute_s + self.elementwise_s + self.tp_comm_s + self.ep_comm_s + self.cp_comm_s + self.pp_comm_s
                + self.zero3_gather_s + self.bubble_s + self.dp_comm_s)

    @property
    def bubble_fraction(self) -> float:
        return self.bubble_s / self.step_s

    @property
    def mfu(self) -> float:
        """Model FLOPs utilisation: useful FLOPs / (step · GPUs · dense peak) (Chowdhery et al. 2022)."""
        return self.model_flops / (self.step_s * self.gpus * self.peak_flops_per_gpu)

    @property
    def hfu(self) -> float:
        """Hardware FLOPs utilisation: counts recomputed FLOPs too (>= MFU)."""
        return self.hardware_flops / (self.step_s * self.gpus * self.peak_flops_per_gpu)

    @property
    def tflops_per_gpu(self) -> float:
        """Model FLOP/s per GPU in TFLOP/s (MFU basis: recomputation does not count)."""
        return self.model_flops / (self.step_s * self.gpus) / 1e12

    @property
    def hardware_tflops_per_gpu(self) -> float:
        return self.hardware_flops / (self.step_s * self.gpus) / 1e12

    @property
    def tokens_per_s(self) -> float:
        return self.global_batch_tokens / self.step_s

    def train_s(self, tokens) -> float:
        """Wall time to train on ``tokens`` at this step rate."""
        return require_number("tokens", tokens, minimum=0, exclusive=True) / self.tokens_per_s


def layer_elementwise_bytes(model: Model, *, seq: float, microbatch: float, tp: int, flash_attention: bool,
                            moe_layer: bool, window: int = 0, dropout: bool = True) -> float:
    """HBM bytes the non-matmul kernels of one layer's forward pass read and write, per GPU.

    Same tensors as :func:`layer_activation_bytes`: two norms (read + write 2sbh each: 8sbh), two
    bias-dropout-residual adds (read 4sbh, write 2sbh + 1-byte mask: 14sbh), the MLP activation
    (GELU reads and writes 2sbf: 4sbf; gated reads 4sbf, writes 2sbf: 6sbf; MoE: k routed copies plus
    shared experts); eager attention adds softmax and dropout over the scores (read 2 + write 2,
    read 2 + write 2 + 1-byte mask: 9·a·s·s'·b); FlashAttention keeps them on chip (0). GPT-3:
    38sbh + 9as²b. Divided by tp (sequence parallelism). These kernels are memory-bound, so they
    take bytes / HBM bandwidth; backward moves about twice the forward bytes. Without ``dropout``
    (Llama, DeepSeek) the 1-byte masks go: 36sbh (+ 8·a·s·s'·b eager).
    """
    s, b, h = float(seq), float(microbatch), float(model.d_model)
    sb = s * b
    g = 6.0 if model.ffn_gated else 4.0
    if moe_layer:
        m = model.moe
        mlp = g * sb * (m.top_k * m.expert_ffn_dim + m.n_shared * (m.shared_ffn_dim or m.expert_ffn_dim))
    else:
        mlp = g * sb * model.dense_ffn_dim
    mask = MASK_BYTES if dropout else 0.0
    total = 2 * 2 * ACT_BYTES * sb * h + 2 * (3 * ACT_BYTES + mask) * sb * h + mlp
    if not flash_attention:
        attended = s if window == 0 else min(s, float(window))
        total += (4 * ACT_BYTES + mask) * model.attention.n_heads * s * attended * b
    return total / tp


# ---- the step ------------------------------------------------------------------------------------


def _validate(model: Model, system: System, plan: TrainPlan, seq_len: int, global_batch_tokens: float) -> int:
    a = model.attention
    if a.n_heads % plan.tp:
        raise SpecError(f"{model.name} has {a.n_heads} attention heads", field="tp", value=plan.tp,
                        fix=f"use a divisor of {a.n_heads}")
    if a.kind != "mla" and a.n_kv_heads % plan.tp and plan.tp % a.n_kv_heads:
        raise SpecError(f"{model.name} has {a.n_kv_heads} KV heads", field="tp", value=plan.tp,
                        fix="tp must divide it or be a multiple of it")
    if plan.ep > 1 and (not model.is_moe or model.moe.n_routed % plan.ep):
        raise SpecError("needs a MoE model whose routed experts divide by it"
                        + (f" ({model.moe.n_routed} experts)" if model.is_moe else f" ({model.name} is dense)"),
                        field="ep", value=plan.ep)
    if (plan.fp8_dispatch or plan.ep_node_limit) and plan.ep <= 1:
        flag = "fp8_dispatch" if plan.fp8_dispatch else "ep_node_limit"
        raise SpecError("applies to expert-parallel all-to-alls; this plan has ep 1", field=flag,
                        value=getattr(plan, flag), fix="give {ep} > 1 on a MoE model, or leave the option out")
    if plan.mtp and not model.mtp_layers:
        raise SpecError(f"{model.name} has no multi-token-prediction modules", field="mtp", value=True)
    if plan.recompute_mla_up and a.kind != "mla":
        raise SpecError(f"{model.name} has {a.kind} attention, no MLA up-projections", field="recompute_mla_up",
                        value=True)
    if plan.pp * plan.chunks > model.n_layers + 2 * plan.pp_trim:
        raise SpecError(f"more pipeline chunks ({plan.pp} × {{chunks}} {plan.chunks}) than the {model.n_layers} "
                        f"layers of {model.name}", field="pp", value=plan.pp)
    if seq_len % plan.cp:
        raise SpecError(f"must divide by {{cp}} {plan.cp}", field="seq_len", value=seq_len)
    seqs = global_batch_tokens / seq_len
    if seqs != round(seqs):
        raise SpecError(f"must be a whole number of {seq_len}-token sequences", field="global_batch_tokens",
                        value=global_batch_tokens)
    per_replica = plan.dp * plan.microbatch
    if round(seqs) % per_replica:
        raise SpecError(f"{round(seqs)} sequences do not split into dp {plan.dp} × micro-batch {plan.microbatch}",
                        field="global_batch_tokens", fix=f"use a multiple of {per_replica * seq_len} tokens")
    m = round(seqs) // per_replica
    if plan.schedule == "interleaved" and plan.pp > 1 and m % plan.pp:
        raise SpecError(f"{m} micro-batches must be a multiple of {{pp}} {plan.pp} (Megatron-LM's requirement)",
                        field="schedule", value="interleaved", fix="change the global batch or micro-batch")
    return m


def train_step(model: Model, system: System, plan: TrainPlan, *, seq_len: int, global_batch_tokens: float,
               efficiency: float = MEGATRON_A100_EFFICIENCY, dp_overlap: float = 1.0,
               precision: str = "bf16", reserve: float = 0.0,
               profile: EfficiencyProfile | None = None, kernel_share: float | None = None) -> TrainStep:
    """Time, FLOPs and memory of one step (formulas and omissions in the module docstring).
    ``precision`` fp8 runs the layers' GEMMs at the chip's fp8 peak and the attention core, head,
    element-wise kernels and communication as in bf16 (DeepSeek-V3 §3.3: embedding, output head,
    gating, norms and attention stay in BF16/FP32); MFU stays on the bf16 peak. fp8 is per-tensor scaled
    FP8 (Transformer Engine's recipe); fp8_block is DeepSeek-V3's fine-grained scaling (§3.3.2: 1×128
    activation tiles, 128×128 weight blocks): the same peak in ideal mode, the profile's fp8_block GEMM and
    MoE kernel tables in calibrated mode (block-scaled kernels run slower than per-tensor ones). ``reserve``: bytes
    per GPU held back for the framework (:func:`memory_per_gpu`). ``profile`` (calibrated mode): kernel
    efficiencies from a measured profile (:mod:`llmecon.econ.training_kernels`) replace ``efficiency``;
    ``kernel_share`` scales its GEMM and attention rates (the share of the kernel tables' rates a long run
    sustains): None takes the profile's fitted share (``training_kernels.SUSTAINED_SHARES``, 1 where none is
    fitted), 1 prices them as measured.

    The phases, each its own function: the inputs checked (``_check_inputs``), the kernel efficiencies
    (``_kernels``), the compute of one micro-batch on the slowest rank (``_compute``), the model-parallel
    collectives (``training_comm.model_parallel_comm``), the data-parallel ones
    (``training_comm.data_parallel_comm``), then the step: micro-batches, pipeline bubble and FLOPs."""
    eff, overlap, m_count = _check_inputs(model, system, plan, seq_len=seq_len, global_batch_tokens=global_batch_tokens,
                                          dp_overlap=dp_overlap, efficiency=efficiency, precision=precision)
    ke = _kernels(model, plan, profile, efficiency=eff, kernel_share=kernel_share, seq_len=seq_len, precision=precision)
    c = _compute(model, system, plan, ke, seq_len=seq_len, precision=precision)
    mp = model_parallel_comm(model, system, plan, ke, ring="auto" if profile is None else "ring", seq_len=seq_len,
                             stage_layers=c.stage_layers, attn_core_mb=c.attn_core_mb, compute_mb=c.compute_mb)
    memory = memory_per_gpu(model, system, plan, seq_len=seq_len, microbatches=m_count, reserve=reserve)
    dp = data_parallel_comm(system, plan, ke, memory=memory, overlap=overlap, compute_mb=c.compute_mb,
                            backward_mb=c.backward_mb)

    pp = plan.pp
    per_mb = c.compute_mb + c.elementwise_mb + mp.tp_mb + mp.ep_mb + mp.cp_mb + mp.pp_mb + dp.zero3_mb + dp.dp_mb
    ideal = m_count * per_mb
    frac = float(bubble_fraction(plan.schedule, stages=pp, microbatches=m_count, chunks=plan.chunks)) if pp > 1 else 0.0
    bubble = ideal * frac / (1.0 - frac)

    n, s = model.n_layers, float(seq_len)
    tokens = float(global_batch_tokens)
    model_flops = 3.0 * (tokens * (c.mm_total + c.n_mtp * (2.0 * model.mtp_active_params() + c.head))
                         + tokens / s * c.attn_fwd * (1.0 + c.mtp_layer_equiv / n))
    # hardware FLOPs add what is recomputed: attention beyond its 3 passes, the layers' forward under full
    # recomputation, the MLA up-projections under --recompute-mla-up
    recomputed = ((c.attn_passes - 3.0) * tokens / s * c.attn_fwd + (tokens * c.layer_mm if c.again else 0.0)
                  + tokens * n * c.up_flops)
    return TrainStep(
        plan=plan, seq_len=seq_len, global_batch_tokens=tokens, microbatches=m_count, efficiency=ke.layer_gemm,
        kernels=ke,
        compute_s=m_count * c.compute_mb, elementwise_s=m_count * c.elementwise_mb, tp_comm_s=m_count * mp.tp_mb,
        ep_comm_s=m_count * mp.ep_mb,
        cp_comm_s=m_count * mp.cp_mb, pp_comm_s=m_count * mp.pp_mb, zero3_gather_s=m_count * dp.zero3_mb,
        bubble_s=bubble, dp_comm_s=m_count * dp.dp_mb + dp.dp_exposed, model_flops=model_flops,
        hardware_flops=model_flops + recomputed, peak_flops_per_gpu=system.accelerator.peak("bf16"), memory=memory,
        tiers={**mp.tiers, "dp": dp.tier}, precision=precision)


def _check_inputs(model: Model, system: System, plan: TrainPlan, *, seq_len, global_batch_tokens, dp_overlap,
                  efficiency, precision) -> tuple[float, float, int]:
    """(efficiency, dp_overlap, micro-batches per step) after checking the step's inputs (``_validate``, the
    precision), in the order the step always checked them."""
    require_whole("seq_len", seq_len)
    require_number("global_batch_tokens", global_batch_tokens, minimum=0, exclusive=True)
    eff = require_number("efficiency", efficiency, minimum=0, exclusive=True, maximum=1.0,
                         hint="a fraction of the dense peak, e.g. 0.5")
    overlap = require_number("dp_overlap", dp_overlap, minimum=0, maximum=1.0)
    m_count = _validate(model, system, plan, seq_len, global_batch_tokens)
    if precision not in PRECISIONS:
        raise unknown_name("training precision", precision, PRECISIONS, field="precision")
    chip = system.accelerator
    if precision != "bf16" and "fp8" not in chip.peak_flops_per_s:
        raise SpecError(f"{chip.name} has no fp8 peak in the catalogue (no FP8 tensor cores)", field="precision",
                        value=precision, fix="train in {precision} bf16 on this chip")
    return eff, overlap, m_count


def _kernels(model: Model, plan: TrainPlan, profile: EfficiencyProfile | None, *, efficiency, kernel_share, seq_len,
             precision) -> KernelEfficiency:
    """The kernel efficiencies: ``efficiency`` (checked) everywhere (ideal or the Megatron fit), or a profile's
    measured kernels scaled by the sustained share (``kernel_share``, else the profile's fitted one, else 1)."""
    if kernel_share is not None:
        require_number("kernel_share", kernel_share, minimum=0, exclusive=True, maximum=1.0)
        if profile is None:
            raise SpecError("scales a measured profile's kernel rates: give it with a profile (calibrated mode)",
                            field="kernel_share", value=kernel_share)
    if profile is None:
        return uniform_kernels(efficiency)
    ke = calibrated_kernels(model, profile, seq=float(seq_len), microbatch=plan.microbatch, tp=plan.tp, cp=plan.cp,
                            ep=plan.ep, precision=precision)
    fitted = sustained_share(profile)
    share, why = ((float(kernel_share), "given") if kernel_share is not None else
                  (fitted.value, fitted.source) if fitted is not None else (1.0, "none fitted: as measured"))
    return dataclasses.replace(ke, layer_gemm=ke.layer_gemm * share, head_gemm=ke.head_gemm * share,
                               attention=ke.attention * share, sustained_share=share, sustained_source=why)


@dataclass(frozen=True, kw_only=True)
class _Compute:
    """One micro-batch's compute on the slowest rank (seconds) and the FLOP terms the step's totals reuse."""

    tokens_mb: float
    stage_layers: float       # layers of the slowest rank (MTP modules as layer equivalents)
    gemm_fwd: float
    head_fwd: float
    attn_fwd_s: float
    compute_mb: float
    backward_mb: float        # everything but the first forward (the window gradient syncs hide behind)
    elementwise_mb: float
    attn_core_mb: float
    mm_total: float
    layer_mm: float
    head: float
    attn_fwd: float           # causal attention FLOPs of one sequence's forward
    attn_passes: float
    again: bool               # the forward runs again (full or reversible recomputation)
    up_flops: float
    n_mtp: int
    mtp_layer_equiv: float


def _compute(model: Model, system: System, plan: TrainPlan, ke: KernelEfficiency, *, seq_len, precision) -> _Compute:
    """FLOPs and seconds of one micro-batch on the slowest rank: forward per micro-batch on that rank (its
    layers, plus the head on the last rank; a DualPipe rank runs each of its two stages for half the
    micro-batches), backward and recomputation as multiples of it, and the element-wise kernels' traffic."""
    chip = system.accelerator
    peak, gemm_peak = chip.peak("bf16"), chip.peak(precision)
    n, p, pp = model.n_layers, model.params, plan.pp
    s, b = float(seq_len), float(plan.microbatch)
    tokens_mb = s * b
    mm = model.matmul_flops_per_token()
    head = 2.0 * p.head_matmul
    layer_mm = mm.total - head
    attn_fwd = float(np.sum(model.prefill_attention_flops(s, 0)))  # causal, per sequence
    half = 0.5 if plan.schedule == "dualpipe" else 1.0
    heads = [half if (r == pp - 1 or (half < 1 and r == 0)) else 0.0 for r in range(pp)]
    # MTP modules (DeepSeek-V3 §2.2) run after the last stage: priced as layers of equal matmul FLOPs
    # (2·active MTP weights per token; their attention and element-wise work as an average layer's) plus
    # one more pass through the shared head each.
    n_mtp = model.mtp_layers if plan.mtp else 0
    mtp_layer_equiv = n_mtp * 2.0 * model.mtp_active_params() / (layer_mm / n) if n_mtp else 0.0
    stages = [(lay * half + (mtp_layer_equiv * hd), hd * (1 + n_mtp))
              for lay, hd in zip(stage_layers(model, plan), heads)]
    # the slowest rank by time at peak: layer GEMMs at the precision's peak, the head and attention at bf16's
    stage_l, head_share = max(stages, key=lambda x: tokens_mb * (x[0] / n * layer_mm / gemm_peak + head * x[1] / peak)
                              + b * x[0] / n * attn_fwd / peak)
    phi = stage_l / n
    again = plan.recompute in ("full", "reversible")
    split = plan.tp * plan.cp
    gemm_fwd = tokens_mb * phi * layer_mm / (gemm_peak * ke.layer_gemm)  # layer GEMMs: fp8 under precision fp8
    head_fwd = tokens_mb * head * head_share / (peak * ke.head_gemm)
    attn_fwd_s = b * phi * attn_fwd / (peak * ke.attention)
    # recomputed MLA up-projections (DeepSeek-V3 §3.2.3): their forward GEMMs once more per layer
    up_flops = mla_up_flops_per_token(model) if plan.recompute_mla_up and not again else 0.0
    up_fwd = tokens_mb * stage_l * up_flops / (gemm_peak * ke.layer_gemm)
    attn_passes = attention_passes(plan)
    compute_mb = ((3.0 + again) * gemm_fwd + up_fwd + 3.0 * head_fwd
                  + attn_passes * attn_fwd_s) / split / (1.0 - plan.comm_sm_share)
    elementwise = sum(share * layer_elementwise_bytes(model, seq=s / plan.cp, microbatch=b, tp=plan.tp,
                                                      flash_attention=plan.flash_attention, moe_layer=is_moe,
                                                      window=window, dropout=plan.dropout)
                      for share, is_moe, window in _layer_mix(model))
    passes = 3.0 + (1.0 if again else 0.0)
    return _Compute(
        tokens_mb=tokens_mb, stage_layers=stage_l, gemm_fwd=gemm_fwd, head_fwd=head_fwd, attn_fwd_s=attn_fwd_s,
        compute_mb=compute_mb,
        backward_mb=compute_mb - (gemm_fwd + head_fwd + attn_fwd_s) / split / (1.0 - plan.comm_sm_share),
        elementwise_mb=passes * stage_l * elementwise / (ke.elementwise * chip.hbm_bandwidth_bytes_per_s),
        attn_core_mb=attn_passes * attn_fwd_s / split, mm_total=mm.total, layer_mm=layer_mm, head=head,
        attn_fwd=attn_fwd, attn_passes=attn_passes, again=again, up_flops=up_flops, n_mtp=n_mtp,
        mtp_layer_equiv=mtp_layer_equiv)


def attention_passes(plan: TrainPlan) -> float:
    """Attention-core FLOPs of a training step over its forward's. Eager attention: forward 1 + backward 2,
    + 1 forward again under selective or full recomputation (Korthikanti et al. 2022). FlashAttention:
    forward 1 + backward 2.5, its backward recomputing the scores (5 matmuls against the forward's 2: Dao
    2023, arXiv:2307.08691, the FLOP count its benchmarks use), so selective recomputation adds nothing;
    + 1 forward under full recomputation."""
    if plan.flash_attention:
        return 3.5 + (1.0 if plan.recompute in ("full", "reversible") else 0.0)
    return 3.0 + (1.0 if plan.recompute != "none" else 0.0)


def mla_up_flops_per_token(model: Model) -> float:
    """Forward FLOPs per token of one layer's MLA up-projections (query r_q → heads·d_qk, KV r_kv →
    heads·(d_nope + d_v)); 0 for other attention."""
    a = model.attention
    if a.kind != "mla":
        return 0.0
    nope = a.head_dim - a.qk_rope_head_dim
    q_in = a.q_lora_rank or model.d_model
    return 2.0 * (q_in * a.n_heads * a.head_dim + a.kv_lora_rank * a.n_heads * (nope + a.v_head_dim))


def megatron_flops_per_step(*, batch, seq_len, layers, hidden, vocab):
    """FLOPs Megatron-LM counts per step for a GPT model with full activation recomputation:
    96·B·s·l·h²·(1 + s/(6h) + V/(16·l·h)) (Narayanan et al. 2021, arXiv:2104.04473, eq. 3).
    It counts non-causal attention and the recomputed forward, so it sits between MFU and HFU."""
    b, s, ll, h, v = (float(x) for x in (batch, seq_len, layers, hidden, vocab))
    return 96.0 * b * s * ll * h * h * (1.0 + s / (6.0 * h) + v / (16.0 * ll * h))
