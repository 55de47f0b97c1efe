"""Memory per pipeline rank of a training job, laid out as Megatron-LM-style frameworks lay it out.

Model states (Rajbhandari et al. 2020, arXiv:1910.02054 §3; Megatron-LM's distributed optimizer is
ZeRO-1): bf16 weights 2 B + bf16 gradients 2 B + fp32 master, Adam m and v 12 B per parameter; ZeRO
stage 1 shards the 12 B, stage 2 also the gradients, stage 3 also the weights, over the data-parallel
× context-parallel group (Megatron shards the distributed optimizer over dp·cp); routed-expert states
over that group / ep (the expert-data-parallel group). Each rank holds its own layers, the first rank
the input embedding, the last the output head (and a copy of a tied embedding when pp > 1).

Stages: ``n`` layers over pp·v chunks (v virtual stages per rank, interleaved), as evenly as whole
layers allow, the extra layers on the earliest chunks; ``pp_trim`` layers fewer on the first and on the
last chunk (Llama 3 paper, Dubey et al. 2024, arXiv:2407.21783 §3.3.2: "we reduce one Transformer
layer each from the first and the last stages ... the first model chunk on the first stage has only
the embedding, and the last model chunk on the last stage has only output projection and loss").

Activations: the bytes one layer keeps per micro-batch (:func:`~llmecon.econ.training_step.layer_activation_bytes`,
Korthikanti et al. 2022, arXiv:2205.05198 Table 2: 34·s·b·h + 5·a·s²·b with dropout, sequence
parallelism divides by t, selective recomputation keeps 34·s·b·h/t) times the layer-micro-batches a
rank holds at its peak, which we get by walking the rank's schedule:
  * 1F1B (Narayanan et al. 2021, arXiv:2104.04473 §2.2; Megatron-LM ``forward_backward_pipelining_
    without_interleaving``): rank r runs pp − r − 1 warm-up forwards, then one forward and one backward
    in turn; it holds min(pp − r, M) micro-batches at its peak (the first rank: pp);
  * interleaved (ibid., Megatron ``..._with_interleaving``): (pp − r − 1)·2 + (v − 1)·pp warm-up
    forwards of micro-batch chunks in groups of pp per chunk, backwards from the last chunk down;
    with equal chunks the first rank holds p·(1 + (p − 1)/(p·v)) stages' worth (Korthikanti §4.2);
  * zero-bubble (ZB-H1, Qi et al. 2023, arXiv:2401.10241): 1F1B's peak (the split weight-gradient
    pass frees no later than 1F1B's backward);
  * GPipe: all M micro-batches;
  * DualPipe (DeepSeek-AI 2024, arXiv:2412.19437 §3.2.1, Table 2): each rank holds two stages (2×
    parameters) and PP + 1 micro-batch-stages of activations (Table 2). Split as the reference
    implementation's step counts give it (github.com/deepseek-ai/DualPipe ``dualpipe.py``, recalled, not
    re-read: 2·(PP/2 − h − 1) forwards of the rank's own-direction chunk, then h + 1 of both, then the
    steady phase adds one more of the first): rank r with h = min(r, PP − 1 − r) holds PP − h
    micro-batches of model stage h and h + 1 of stage PP − 1 − h (PP + 1 in all; rank 0: PP of stage 0
    and one of the last stage).
Full recomputation keeps each layer's input and adds one layer's working set (its selective
activations) while the backward recomputes it; the last rank adds the fp32 logits of one micro-batch.
``reserve`` (bytes per GPU: CUDA context, NCCL buffers, allocator fragmentation) is an input, 0 unless
given: no source fixes it for every framework.

Options (each off by default; DeepSeek-V3, arXiv:2412.19437, sets them all; the report's details are
recalled, not re-read): fp32 gradients
(``grad_fp32``), bf16 Adam moments (``bf16_moments``), an EMA of the weights on the GPU or not (``ema``),
recomputed RMSNorms and MLA up-projections, FP8-cached activations (:func:`layer_activation_bytes`),
multi-token-prediction modules on the last stage (``mtp``: their layer, the projection, a second fp32
logits tensor; the embedding they share with the main model is copied onto the last rank unless that
rank already holds it, as DualPipe's rank 0 does, §3.2.3).

Omitted: FP8 weight copies (Transformer Engine caches), the stage-boundary send/receive buffers
(Llama 3 deallocates them), temporary buffers of collectives and of the optimizer step. Each layer's
parameters and activations are its kind's (:func:`layer_params`; attention and norms spread evenly).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InfeasibleError, SpecError, require_number
from ..spec.hardware import System
from ..spec.model import Model

ACT_BYTES = 2.0           # bf16 activations (Korthikanti et al. 2022)
MASK_BYTES = 1.0          # dropout masks, one byte per element (ibid.)
LOGIT_BYTES = 4.0         # fp32 logits for the cross-entropy on the last stage
WEIGHT_BYTES = 2.0        # bf16 weights        } mixed-precision Adam:
GRAD_BYTES = 2.0          # bf16 gradients      } 2 + 2 + 12 = 16 bytes per parameter
OPTIMIZER_BYTES = 12.0    # fp32 master + m + v } (Rajbhandari et al. 2020, §3.1, K = 12)
MASTER_BYTES = 4.0        # fp32 master weights (kept in fp32 by DeepSeek-V3 too, §3.3.3)
EMA_BYTES = 4.0           # an fp32 exponential moving average of the weights, when kept on the GPU
# DeepSeek-V3 (arXiv:2412.19437 §3.3.3) caches Linear inputs in FP8 with one fp32 scale per 1×128 tile,
# and the attention output (the input of the Linear after attention) in E5M6 (12 bits).
FP8_BYTES = 1.0 + 4.0 / 128
E5M6_BYTES = 1.5 + 4.0 / 128


@dataclass(frozen=True, kw_only=True)
class RankMemory:
    """Bytes on one pipeline rank (every tp/cp/dp replica of it holds the same)."""

    rank: int
    layers: int
    weights: float
    gradients: float
    optimizer: float
    activations: float
    reserve: float = 0.0
    dense_params: float = 0.0    # parameters this GPU holds before ZeRO sharding: non-expert (after tp)
    expert_params: float = 0.0   # and routed experts (after tp and ep): what its data-parallel sync reduces

    @property
    def total(self) -> float:
        return self.weights + self.gradients + self.optimizer + self.activations + self.reserve


def chunk_layers(n_layers: int, pp: int, chunks: int = 1, trim: int = 0) -> tuple[int, ...]:
    """Layers of each of the pp·v model chunks, in model order (chunk i runs on rank i mod pp):
    n + 2·trim spread evenly (extras on the earliest chunks), then ``trim`` fewer on the first and last.
    Llama 3 405B, 126 layers, pp 16, trim 1: 7, 8 × 14, 7."""
    c = pp * chunks
    if trim < 0:
        raise SpecError("must be >= 0", field="pp_trim", value=trim)
    if c == 1:
        if trim:
            raise SpecError("needs pipeline stages (pp > 1)", field="pp_trim", value=trim)
        return (n_layers,)
    total = n_layers + 2 * trim
    q, r = divmod(total, c)
    out = [q + (1 if i < r else 0) for i in range(c)]
    out[0] -= trim
    out[-1] -= trim
    if min(out) < 0:
        raise SpecError(f"leaves a negative number of layers on the first or last of {c} chunks of "
                        f"{n_layers} layers", field="pp_trim", value=trim)
    return tuple(out)


def rank_layers(layers: tuple[int, ...], pp: int, schedule: str) -> list[tuple[int, ...]]:
    """Layers of each chunk a rank runs, in its virtual-stage order. DualPipe: rank r runs stage r and
    stage pp − 1 − r (its mirror)."""
    if schedule == "dualpipe":
        return [(layers[r], layers[pp - 1 - r]) for r in range(pp)]
    return [tuple(layers[r::pp]) for r in range(pp)]


def peak_in_flight(schedule: str, *, rank: int, pp: int, microbatches: int, chunk_sizes: tuple[float, ...]) -> float:
    """Peak of Σ (micro-batches in flight on a chunk × that chunk's size) on ``rank`` over its schedule
    (module docstring). ``chunk_sizes``: bytes (or layers) one micro-batch keeps in each chunk."""
    m, v = microbatches, len(chunk_sizes)
    if pp == 1:
        return sum(chunk_sizes)
    if schedule == "gpipe":
        return m * sum(chunk_sizes)
    if schedule == "dualpipe":  # (stage r, stage pp − 1 − r); the rank's own-direction stage is hr
        half_rank = min(rank, pp - 1 - rank)
        near, far = chunk_sizes if rank == half_rank else chunk_sizes[::-1]
        half_m = max(m // 2, 1)
        return min(pp - half_rank, half_m) * near + min(half_rank + 1, half_m) * far
    if schedule in ("1f1b", "zero-bubble"):
        return min(pp - rank, m) * chunk_sizes[0]
    # interleaved: walk Megatron's order of micro-batch chunks
    total = m * v
    warm = min((pp - rank - 1) * 2 + (v - 1) * pp, total)

    def fwd_chunk(k: int) -> int:
        return (k // pp) % v

    def bwd_chunk(k: int) -> int:
        return v - 1 - (k // pp) % v

    held = peak = 0.0
    f = b = 0
    for _ in range(warm):
        held += chunk_sizes[fwd_chunk(f)]
        f += 1
        peak = max(peak, held)
    while f < total:
        held += chunk_sizes[fwd_chunk(f)]
        f += 1
        peak = max(peak, held)
        held -= chunk_sizes[bwd_chunk(b)]
        b += 1
    return peak


@dataclass(frozen=True, kw_only=True)
class TrainMemory:
    """Bytes per GPU on the fullest pipeline rank (the worst rank decides "fits"); ``ranks`` holds
    every rank's breakdown (:mod:`llmecon.econ.training_memory`)."""

    weights: float
    gradients: float
    optimizer: float
    activations: float
    hbm: float
    reserve: float = 0.0
    rank: int = 0
    ranks: tuple = ()

    @property
    def total(self) -> float:
        return self.weights + self.gradients + self.optimizer + self.activations + self.reserve

    @property
    def fits(self) -> bool:
        return self.total <= self.hbm


def require_fit(memory: TrainMemory, *, model_name: str, plan_label: str, system_name: str) -> None:
    """Raise InfeasibleError when the fullest pipeline rank of ``memory`` does not fit its HBM: a plan that
    cannot run is an error, not numbers with a warning (``llmecon train``, ``/api/train``; a published run
    that did run is shown with ``fits`` false instead)."""
    if memory.fits:
        return
    from ..units import fmt_bytes  # local: formatting only for the message

    raise InfeasibleError(f"{model_name} under {plan_label} needs {fmt_bytes(memory.total)} per GPU on pipeline "
                          f"rank {memory.rank} but {system_name} has {fmt_bytes(memory.hbm)} of HBM",
                          fix="raise {zero}, {tp} or {pp}, use {recompute} full, or shrink {micro_batch}")


# ---- activations ---------------------------------------------------------------------------------


def layer_activation_bytes(model: Model, *, seq: float, microbatch: float, tp: int, recompute: str,
                           moe_layer: bool, window: int = 0, dropout: bool = True, norms_recomputed: bool = False,
                           mla_up_recomputed: bool = False, fp8_cache: bool = False) -> float:
    """Activation bytes one transformer layer keeps for the backward pass, per micro-batch, per GPU.

    Korthikanti et al. 2022 (arXiv:2205.05198) Table 2 with sequence parallelism, in general form
    (s tokens, b sequences, h hidden, a heads): attention 2sbh (QKV input) + 2sb·(q+2k) (Q, K, V)
    + 2sb·o (output-projection input) + sbh (dropout mask); scores 5·a·s·s'·b (softmax 2, mask 1,
    dropout output 2; s' = min(s, window)); two norms 4sbh; MLP sbh (mask) + 2sbh (input) + g·sb·f
    with g = 4 (fc1 and GELU outputs) or 6 (gate, up and their product, gated); MoE: router input
    shared, k dispatched copies of 2sbh + g·sb·f_e, shared experts as a dense MLP. GPT-3 shapes give
    sbh(34 + 5as/h) exactly. All of it divides by tp (sequence parallelism). ``recompute``: none
    keeps the scores; selective (= FlashAttention) drops them; full keeps the layer input 2sbh;
    reversible keeps nothing per layer (the stage boundary is counted by the caller). Without
    ``dropout`` (Llama, DeepSeek: no dropout in pretraining) the two 1-byte masks and the scores'
    mask and dropout output go: 32·s·b·h + 2·a·s²·b for GPT-3 shapes.

    MLA (DeepSeek-V2/V3) also keeps its compressed latents: the query and KV down-projection outputs
    (inputs of their RMSNorms, 2sb·(r_q + r_kv)) and their normed copies (inputs of the up-projections,
    2sb·(r_q + r_kv)); Q, K, V are the up-projected heads. DeepSeek-V3's options (arXiv:2412.19437):

    * ``norms_recomputed`` (§3.2.3, "we recompute all RMSNorm operations ... during back-propagation"):
      every norm's output that feeds a Linear (QKV/down-projection input, MLP input, the normed MLA
      latents) is recomputed from the norm's input, which stays;
    * ``mla_up_recomputed`` (§3.2.3, "and MLA up-projections"): Q, K, V are recomputed from the
      latents; the attention output (o) stays (FlashAttention's backward and the output projection
      need it);
    * ``fp8_cache`` (§3.3.3, "Low-Precision Activation"): Linear inputs are cached in FP8 with an fp32
      scale per 1×128 tile (1.03 B), the output projection's input in E5M6 (1.53 B); in MoE layers the
      dispatched tokens and the SwiGLU inputs are cached in FP8 and the SwiGLU output (the down-
      projection input) is recomputed. Shared experts are treated as the routed ones (they belong to
      the MoE layer: assumed); a dense layer's SwiGLU input stays bf16 and its down-projection input
      is FP8. Norm inputs, Q/K/V and the router's input stay bf16 (§3.3.1 keeps attention, norms and
      gating in BF16/FP32).

    Omitted: the router's probabilities (n_routed fp32 per token) and the expert outputs the combine's
    backward may keep; RoPE keeps nothing (its backward is a rotation).
    """
    s, b, h = float(seq), float(microbatch), float(model.d_model)
    a = model.attention
    if recompute == "reversible":
        return 0.0
    if recompute == "full":
        return ACT_BYTES * s * b * h / tp
    mla = a.kind == "mla"
    if mla_up_recomputed and not mla:
        raise SpecError(f"{model.name} has no MLA up-projections ({a.kind} attention)", field="recompute_mla_up",
                        value=True)
    q = a.n_heads * a.head_dim
    k = a.n_heads * a.head_dim if mla else a.n_kv_heads * a.head_dim
    v = a.n_heads * a.v_head_dim if mla else a.n_kv_heads * a.v_head_dim
    o = a.n_heads * a.v_head_dim
    sb = s * b
    mask = MASK_BYTES if dropout else 0.0
    linear_in = FP8_BYTES if fp8_cache else ACT_BYTES     # a cached Linear input
    normed = 0.0 if norms_recomputed else linear_in        # a norm's output feeding a Linear
    latents = (a.q_lora_rank + a.kv_lora_rank) if mla else 0
    attention = sb * (normed * h + ACT_BYTES * latents + normed * latents
                      + (0.0 if mla_up_recomputed else ACT_BYTES * (q + k + v))
                      + (E5M6_BYTES if fp8_cache else ACT_BYTES) * o) + mask * sb * h
    norms = 2 * ACT_BYTES * sb * h
    g_in = 2.0 if model.ffn_gated else 1.0                 # activation-function inputs per f (gate and up)
    mlp = mask * sb * h + (0.0 if norms_recomputed else ACT_BYTES if moe_layer else linear_in) * sb * h  # input
    if moe_layer:
        m = model.moe
        if fp8_cache:  # §3.3.3: FP8 dispatch and SwiGLU inputs, SwiGLU output recomputed
            per_f = g_in * FP8_BYTES
            mlp += m.top_k * (FP8_BYTES * sb * h + per_f * sb * m.expert_ffn_dim)
        else:
            per_f = ACT_BYTES * (g_in + 1.0)
            mlp += m.top_k * (ACT_BYTES * sb * h + per_f * sb * m.expert_ffn_dim)
        mlp += m.n_shared * per_f * sb * (m.shared_ffn_dim or m.expert_ffn_dim)
    else:
        mlp += (ACT_BYTES * g_in + linear_in) * sb * model.dense_ffn_dim
    total = attention + norms + mlp
    if recompute == "none":
        attended = s if window == 0 else min(s, float(window))
        scores = 2 * ACT_BYTES + MASK_BYTES if dropout else ACT_BYTES
        total += scores * a.n_heads * s * attended * b
    return total / tp


def _layer_mix(model: Model):
    """(share of layers, is MoE, window) for each distinct kind of layer."""
    n = model.n_layers
    kinds = list(zip(model.moe_layers, model.layer_windows))
    return [(kinds.count(k) / n, k[0], k[1]) for k in sorted(set(kinds))]


def _activation_options(plan) -> dict:
    return dict(norms_recomputed=plan.recompute_norms, mla_up_recomputed=plan.recompute_mla_up,
                fp8_cache=plan.fp8_activations)


def _layer_bytes(model: Model, plan, seq: float) -> tuple[np.ndarray, float]:
    """(bytes each decoder layer keeps per micro-batch, in model order; one layer's working set while
    recomputed)."""
    kinds, working = {}, 0.0
    for _, is_moe, window in _layer_mix(model):
        kw = dict(seq=seq, microbatch=plan.microbatch, tp=plan.tp, moe_layer=is_moe, window=window,
                  dropout=plan.dropout, **_activation_options(plan))
        keep = "selective" if plan.flash_attention and plan.recompute == "none" else plan.recompute
        kinds[(is_moe, window)] = layer_activation_bytes(model, recompute=keep, **kw)
        working = max(working, layer_activation_bytes(model, recompute="selective", **kw))
    per_layer = np.array([kinds[k] for k in zip(model.moe_layers, model.layer_windows)])
    return per_layer, (working if plan.recompute in ("full", "reversible") else 0.0)


def layer_params(model: Model) -> tuple[np.ndarray, np.ndarray]:
    """(non-expert, routed-expert) parameters of each decoder layer in model order: a dense layer's FFN
    (``dense_ffn`` spread over the layers with an FFN, by width), a MoE layer's shared experts, router and
    routed experts (spread over the MoE layers); attention, norms and every other per-layer weight spread
    evenly (exact for uniform attention; hybrid mixers averaged). DeepSeek-V3: its three dense layers
    are placed where they are, on the first stage."""
    p, n = model.params, model.n_layers
    moe = np.array(model.moe_layers, dtype=bool)
    widths = np.array([float(w or 0) for w in model.layer_ffn_dims])
    rest = p.total - p.routed_experts - p.embedding - p.lm_head - p.dense_ffn - p.shared_experts - p.router
    dense = np.full(n, rest / n)
    if widths.sum() > 0:
        dense += p.dense_ffn * widths / widths.sum()
    elif p.dense_ffn:
        dense += p.dense_ffn / n
    n_moe = int(moe.sum())
    expert = np.zeros(n)
    if n_moe:
        dense[moe] += (p.shared_experts + p.router) / n_moe
        expert[moe] = p.routed_experts / n_moe
    return dense, expert


def in_flight_microbatches(plan, microbatches: int) -> float:
    """Micro-batches whose activations the first stage holds at once: GPipe all M; 1F1B and
    zero-bubble (ZB-H1) min(P, M); interleaved P·(1 + (P−1)/(P·v)) (Korthikanti et al. 2022 §4.2);
    DualPipe P + 1 (DeepSeek-V3 Table 2). Closed forms for equal chunks; :func:`memory_per_gpu` walks
    the schedule (:func:`llmecon.econ.training_memory.peak_in_flight`)."""
    p, m = plan.pp, microbatches
    if p == 1:
        return 1.0
    if plan.schedule == "gpipe":
        return float(m)
    if plan.schedule == "interleaved":
        return min(float(m), p * (1.0 + (p - 1.0) / (p * plan.chunks)))
    if plan.schedule == "dualpipe":
        return float(p + 1)
    return float(min(p, m))


def stage_layers(model: Model, plan) -> list[int]:
    """Layers on each pipeline rank (both DualPipe stages counted)."""
    layers = chunk_layers(model.n_layers, plan.pp, plan.chunks, plan.pp_trim)
    return [sum(c) for c in rank_layers(layers, plan.pp, plan.schedule)]


def state_bytes_per_param(plan) -> tuple[float, float, float]:
    """(weights, gradients, optimizer states) bytes per parameter under ``plan``: bf16 weights; bf16
    gradients, or fp32 with ``grad_fp32`` (gradients accumulated over micro-batches in fp32: Megatron's
    ``main_grad``, DeepSeek-V3 §3.3.3 "gradients (used for batch size accumulation) ... in FP32");
    fp32 master + Adam m and v (12 B), the moments in bf16 with ``bf16_moments`` (DeepSeek-V3 §3.3.3:
    8 B); an fp32 EMA of the weights adds 4 B to the optimizer states when ``ema`` is "gpu" (sharded
    with them; "cpu": DeepSeek-V3 §3.2.3 keeps it in host memory, 0 on the GPU)."""
    optimizer = MASTER_BYTES + (4.0 if plan.bf16_moments else 8.0) + (EMA_BYTES if plan.ema == "gpu" else 0.0)
    return WEIGHT_BYTES, (4.0 if plan.grad_fp32 else GRAD_BYTES), optimizer


def mtp_params(model: Model, plan) -> tuple[float, float]:
    """(non-expert, routed-expert) parameters of the multi-token-prediction modules ``plan`` trains
    (DeepSeek-V3 §2.2: D modules on the last stage; embedding and head shared, not counted)."""
    if not plan.mtp:
        return 0.0, 0.0
    p, last = model.params, model.n_layers - 1
    routed = model.mtp_layers * p.routed_experts / model.n_moe_layers if model.moe_layers[last] else 0.0
    return p.mtp - routed, routed


def memory_per_gpu(model: Model, system: System, plan, *, seq_len: int, microbatches: int,
                   reserve: float = 0.0) -> TrainMemory:
    """Weights, gradients, optimizer states and activations of every pipeline rank; the fullest decides
    (layout, schedules and omissions: :mod:`llmecon.econ.training_memory`)."""
    reserve = require_number("reserve", reserve, minimum=0)
    p, n = model.params, model.n_layers
    layers = chunk_layers(n, plan.pp, plan.chunks, plan.pp_trim)
    bounds = np.concatenate([[0], np.cumsum(layers)]).astype(int)
    layer_dense, layer_expert = layer_params(model)
    shard_dense, shard_expert = plan.dp * plan.cp, plan.dp * plan.cp // plan.ep
    seq = seq_len / plan.cp
    per_layer, working = _layer_bytes(model, plan, seq)
    boundary = ACT_BYTES * seq * plan.microbatch * model.d_model / plan.tp  # a reversible stage's (x1, x2)
    logits = LOGIT_BYTES * seq * plan.microbatch * model.vocab_size / plan.tp
    mtp_dense, mtp_expert = mtp_params(model, plan)
    mtp_acts = 0.0
    if plan.mtp:  # one layer of the last layer's kind, two norm inputs (2·2sbh) and the projection's input (2h)
        last = n - 1
        kw = dict(seq=seq, microbatch=plan.microbatch, tp=plan.tp, moe_layer=model.moe_layers[last],
                  window=model.layer_windows[last], dropout=plan.dropout, **_activation_options(plan))
        keep = "selective" if plan.flash_attention and plan.recompute == "none" else plan.recompute
        proj = 0.0 if plan.recompute_norms else FP8_BYTES if plan.fp8_activations else ACT_BYTES
        sbh = seq * plan.microbatch * model.d_model / plan.tp
        mtp_acts = model.mtp_layers * (layer_activation_bytes(model, recompute=keep, **kw) + (2 * ACT_BYTES + proj)
                                       * 2 * sbh)
    w_b, g_b, o_b = state_bytes_per_param(plan)
    dual = plan.schedule == "dualpipe"
    ranks = []
    for r in range(plan.pp):
        ids = (r, plan.pp - 1 - r) if dual else tuple(range(r, plan.pp * plan.chunks, plan.pp))
        spans = [slice(bounds[c], bounds[c + 1]) for c in ids]
        mine = int(sum(layers[c] for c in ids))
        first, last = r == 0 or dual and r == plan.pp - 1, r == plan.pp - 1 or (dual and r == 0)
        # the last stage needs the embedding for MTP (DualPipe's end ranks hold it, DeepSeek-V3 §3.2.3) and, when
        # tied, as its output head: one copy unless that rank holds the embedding already
        tied = model.tie_embeddings
        vocab = (p.embedding if first or (last and (tied or plan.mtp and plan.pp > 1)) else 0) + (
            p.lm_head if last and not tied else 0)
        dense = (sum(layer_dense[sp].sum() for sp in spans) + vocab + (mtp_dense if last else 0.0)) / plan.tp
        expert = (sum(layer_expert[sp].sum() for sp in spans) + (mtp_expert if last else 0.0)) / (plan.tp * plan.ep)

        def sharded(bytes_per_param: float, from_stage: int) -> float:
            if plan.zero < from_stage:
                return bytes_per_param * (dense + expert)
            return bytes_per_param * (dense / shard_dense + expert / shard_expert)

        sizes = [boundary if plan.recompute == "reversible" else float(per_layer[sp].sum()) for sp in spans]
        if last and plan.mtp:  # the MTP modules run after the last chunk of the model
            sizes[(1 if r == 0 else 0) if dual else -1] += mtp_acts
        acts = peak_in_flight(plan.schedule, rank=r, pp=plan.pp, microbatches=microbatches, chunk_sizes=tuple(sizes))
        acts += (working if mine else 0.0) + (logits * (1 + (model.mtp_layers if plan.mtp else 0)) if last else 0.0)
        ranks.append(RankMemory(rank=r, layers=mine, weights=sharded(w_b, 3), gradients=sharded(g_b, 2),
                                optimizer=sharded(o_b, 1), activations=acts, reserve=reserve,
                                dense_params=dense, expert_params=expert))
    worst = max(ranks, key=lambda x: x.total)
    return TrainMemory(weights=worst.weights, gradients=worst.gradients, optimizer=worst.optimizer,
                       activations=worst.activations, hbm=system.accelerator.hbm_bytes, reserve=reserve,
                       rank=worst.rank, ranks=tuple(ranks))
