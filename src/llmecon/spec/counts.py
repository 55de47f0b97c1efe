"""Parameter, weight-byte and FLOP counts of a ``Model`` (result objects of ``spec/model.py``)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def _causal_sum(x, window):
    """sum_{p=1}^{x} min(p, W) for W > 0, or x(x+1)/2 for W = 0 (full attention)."""
    x = np.asarray(x, dtype=float)
    full = x * (x + 1.0) / 2.0
    if not window:
        return full
    w = float(window)
    return np.where(x <= w, full, w * (w + 1.0) / 2.0 + (x - w) * w)


def _reach(context, spec, window: int, sparsity: str, ratio: int, *, sparse: bool):
    """(entries held, entries attended, entries the indexer scores) of one attention layer at
    ``context`` (``spec`` an ``Attention``).

    Raw tokens: min(L, W) (all L without a window). A compressed layer (DeepSeek-V4, ratio r) also
    holds L/r entries (the partly filled next entry sits in the compressor state, counted apart);
    its top-k and indexer act on the compressed entries, its window is attended whole. Without
    compression the top-k and indexer act on the raw tokens (DSA)."""
    raw = context if window == 0 else np.minimum(context, window)
    pool = context / ratio if ratio else raw
    picked = np.minimum(pool, spec.index_topk) if sparse and sparsity != "dense" else pool
    if ratio:
        return raw + pool, raw + picked, pool
    return raw, picked, raw



@dataclass(frozen=True, kw_only=True)
class ParamCounts:
    """Parameter counts per component. ``head_matmul`` is V·d used by the output matmul even when
    tied (then it is not stored twice). ``linear_mixers``: linear-attention / state-space mixers;
    ``moe_latent``: latent-MoE down/up projections (always active); ``mtp``: multi-token-prediction
    modules, a separate count not in ``total`` (published totals exclude them: DeepSeek-V3's 671B);
    ``hyper_connections``: DeepSeek-V4's mHC mixing maps (always active, in ``total``);
    ``per_layer_embedding`` / ``per_layer_projections``: Gemma 3n/4 per-layer input embeddings, the
    looked-up table and the matmuls that mix it into each layer (``Model.per_layer_input_dim``)."""

    embedding: int
    lm_head: int
    attention: int
    dense_ffn: int
    routed_experts: int
    routed_experts_active: int
    shared_experts: int
    router: int
    norms: int
    head_matmul: int
    linear_mixers: int = 0
    moe_latent: int = 0
    mtp: int = 0
    hyper_connections: int = 0
    per_layer_embedding: int = 0
    per_layer_projections: int = 0

    @property
    def total(self) -> int:
        return (self.embedding + self.lm_head + self.attention + self.dense_ffn + self.routed_experts
                + self.shared_experts + self.router + self.norms + self.linear_mixers + self.moe_latent
                + self.hyper_connections + self.per_layer_embedding + self.per_layer_projections)

    @property
    def total_with_mtp(self) -> int:
        """Total plus the multi-token-prediction modules shipped beside the main model."""
        return self.total + self.mtp

    @property
    def active(self) -> int:
        """Parameters one token uses, embedding and head included (model-card convention)."""
        return self.total - self.routed_experts + self.routed_experts_active

    @property
    def active_excluding_embedding(self) -> int:
        return self.active - self.embedding

    @property
    def non_embedding(self) -> int:
        """Total without the input embedding and an untied head (Qwen cards' 'non-embedding')."""
        return self.total - self.embedding - self.lm_head

    def as_dict(self) -> dict[str, int]:
        return {"embedding": self.embedding, "lm_head": self.lm_head, "attention": self.attention,
                "dense_ffn": self.dense_ffn, "routed_experts": self.routed_experts,
                "shared_experts": self.shared_experts, "router": self.router, "norms": self.norms,
                "linear_mixers": self.linear_mixers, "moe_latent": self.moe_latent, "mtp": self.mtp,
                "hyper_connections": self.hyper_connections, "per_layer_embedding": self.per_layer_embedding,
                "per_layer_projections": self.per_layer_projections,
                "total": self.total, "active": self.active}


@dataclass(frozen=True, kw_only=True)
class WeightBytes:
    """Stored weight bytes: everything but routed experts (incl. the input embedding), and the
    routed experts."""

    non_expert: float
    routed_experts: float
    input_embedding: float = 0.0

    @property
    def non_expert_read_per_step(self) -> float:
        """Non-expert bytes a step reads: an untied input embedding is only looked up (B rows,
        omitted); a tied one is read whole as the output head."""
        return self.non_expert - self.input_embedding

    @property
    def total(self) -> float:
        return self.non_expert + self.routed_experts


@dataclass(frozen=True, kw_only=True)
class MatmulFlops:
    """Matmul FLOPs per token: non-expert (attention projections, dense FFN, router, head) and
    expert (shared + top-k routed)."""

    non_expert: float
    expert: float

    @property
    def total(self) -> float:
        return self.non_expert + self.expert
