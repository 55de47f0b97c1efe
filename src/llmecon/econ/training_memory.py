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

from ..errors import SpecError

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
