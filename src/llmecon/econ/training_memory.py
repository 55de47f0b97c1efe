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
    parameters) and PP + 1 micro-batches of one stage's activations.
Full recomputation keeps each layer's input and adds one layer's working set (its selective
activations) while the backward recomputes it; the last rank adds the fp32 logits of one micro-batch.
``reserve`` (bytes per GPU: CUDA context, NCCL buffers, allocator fragmentation) is an input, 0 unless
given: no source fixes it for every framework.

Omitted: fp32 gradient-accumulation buffers some frameworks keep (Megatron ``main_grad``: +2 B per
parameter), FP8 weight and activation copies (Transformer Engine caches; DeepSeek-V3 stores some
activations in FP8), the stage-boundary send/receive buffers (Llama 3 deallocates them), per-layer
differences inside a stage (dense and MoE layers of one model are averaged), temporary buffers of
collectives and of the optimizer step.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import SpecError, require_number
from ..spec.hardware import System
from ..spec.model import Model

ACT_BYTES = 2.0           # bf16 activations (Korthikanti et al. 2022)
MASK_BYTES = 1.0          # dropout masks, one byte per element (ibid.)
LOGIT_BYTES = 4.0         # fp32 logits for the cross-entropy on the last stage
WEIGHT_BYTES = 2.0        # bf16 weights        } mixed-precision Adam:
GRAD_BYTES = 2.0          # bf16 gradients      } 2 + 2 + 12 = 16 bytes per parameter
OPTIMIZER_BYTES = 12.0    # fp32 master + m + v } (Rajbhandari et al. 2020, §3.1, K = 12)


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
    if schedule == "dualpipe":
        return (pp + 1) * max(chunk_sizes)
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


# ---- activations ---------------------------------------------------------------------------------


def layer_activation_bytes(model: Model, *, seq: float, microbatch: float, tp: int, recompute: str,
                           moe_layer: bool, window: int = 0, dropout: bool = True) -> float:
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
    """
    s, b, h = float(seq), float(microbatch), float(model.d_model)
    a = model.attention
    if recompute == "reversible":
        return 0.0
    if recompute == "full":
        return ACT_BYTES * s * b * h / tp
    q = a.n_heads * a.head_dim
    k = a.n_heads * a.head_dim if a.kind == "mla" else a.n_kv_heads * a.head_dim
    v = a.n_heads * a.v_head_dim if a.kind == "mla" else a.n_kv_heads * a.v_head_dim
    o = a.n_heads * a.v_head_dim
    sb = s * b
    mask = MASK_BYTES if dropout else 0.0
    attention = ACT_BYTES * sb * (h + q + k + v + o) + mask * sb * h
    norms = 2 * ACT_BYTES * sb * h
    g = 6.0 if model.ffn_gated else 4.0
    mlp = mask * sb * h + ACT_BYTES * sb * h
    if moe_layer:
        m = model.moe
        mlp += m.top_k * (ACT_BYTES * sb * h + g * sb * m.expert_ffn_dim)
        mlp += m.n_shared * g * sb * (m.shared_ffn_dim or m.expert_ffn_dim)
    else:
        mlp += g * sb * model.dense_ffn_dim
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


def _layer_bytes(model: Model, plan, seq: float) -> tuple[float, float]:
    """(bytes one average layer keeps per micro-batch, one layer's working set while recomputed)."""
    per_layer, working = 0.0, 0.0
    for share, is_moe, window in _layer_mix(model):
        kw = dict(seq=seq, microbatch=plan.microbatch, tp=plan.tp, moe_layer=is_moe, window=window,
                  dropout=plan.dropout)
        keep = "selective" if plan.flash_attention and plan.recompute == "none" else plan.recompute
        per_layer += share * layer_activation_bytes(model, recompute=keep, **kw)
        working = max(working, layer_activation_bytes(model, recompute="selective", **kw))
    return per_layer, (working if plan.recompute in ("full", "reversible") else 0.0)


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


def memory_per_gpu(model: Model, system: System, plan, *, seq_len: int, microbatches: int,
                   reserve: float = 0.0) -> TrainMemory:
    """Weights, gradients, optimizer states and activations of every pipeline rank; the fullest decides
    (layout, schedules and omissions: :mod:`llmecon.econ.training_memory`)."""
    reserve = require_number("reserve", reserve, minimum=0)
    p, n = model.params, model.n_layers
    layers = chunk_layers(n, plan.pp, plan.chunks, plan.pp_trim)
    per_rank = rank_layers(layers, plan.pp, plan.schedule)
    layer_dense = (p.total - p.routed_experts - p.embedding - p.lm_head) / n
    layer_expert = p.routed_experts / n
    shard_dense, shard_expert = plan.dp * plan.cp, plan.dp * plan.cp // plan.ep
    seq = seq_len / plan.cp
    per_layer, working = _layer_bytes(model, plan, seq)
    boundary = ACT_BYTES * seq * plan.microbatch * model.d_model / plan.tp  # a reversible stage's (x1, x2)
    logits = LOGIT_BYTES * seq * plan.microbatch * model.vocab_size / plan.tp
    ranks = []
    for r, chunks in enumerate(per_rank):
        mine = sum(chunks)
        first, last = r == 0 or plan.schedule == "dualpipe" and r == plan.pp - 1, r == plan.pp - 1 or (
            plan.schedule == "dualpipe" and r == 0)
        vocab = (p.embedding if first else 0) + (p.lm_head if last and not (model.tie_embeddings and plan.pp == 1)
                                                 else 0)
        dense = (mine * layer_dense + vocab) / plan.tp
        expert = mine * layer_expert / (plan.tp * plan.ep)

        def sharded(bytes_per_param: float, from_stage: int) -> float:
            if plan.zero < from_stage:
                return bytes_per_param * (dense + expert)
            return bytes_per_param * (dense / shard_dense + expert / shard_expert)

        sizes = tuple(boundary if plan.recompute == "reversible" else c * per_layer for c in chunks)
        acts = peak_in_flight(plan.schedule, rank=r, pp=plan.pp, microbatches=microbatches, chunk_sizes=sizes)
        acts += (working if mine else 0.0) + (logits if last else 0.0)
        ranks.append(RankMemory(rank=r, layers=mine, weights=sharded(WEIGHT_BYTES, 3),
                                gradients=sharded(GRAD_BYTES, 2), optimizer=sharded(OPTIMIZER_BYTES, 1),
                                activations=acts, reserve=reserve))
    worst = max(ranks, key=lambda x: x.total)
    return TrainMemory(weights=worst.weights, gradients=worst.gradients, optimizer=worst.optimizer,
                       activations=worst.activations, hbm=system.accelerator.hbm_bytes, reserve=reserve,
                       rank=worst.rank, ranks=tuple(ranks))
