"""Model spec: a decoder-only transformer, dense or MoE, with MHA/GQA/MQA, MLA, sliding or
chunked local layers, and DeepSeek sparse attention (DSA).

Facts live in frozen dataclasses; every count is derived. Parameter counting conventions
(checked against published totals in tests/test_model_params.py, method of
``reference/models/README.md``): gated MLPs (SwiGLU/GeGLU) have 3 matrices of d x f, plain MLPs
2; RMSNorm has d weights, LayerNorm 2d; an untied output head counts V x d again; biases, sinks,
router biases are counted where the architecture has them. Multi-token-prediction layers
(``num_nextn_predict_layers``) are not part of the main model and are not counted.

Reading a Hugging Face ``config.json`` into this spec is ``hf_config.model_from_hf_config``.
Symbols used in docstrings here and elsewhere (N_total, N_active, S, E, k, kv, W, B, L, ...), their
units and code names: docs/notation.md.
"""

from __future__ import annotations

import math

from dataclasses import dataclass, field, replace

import numpy as np

from ..dtypes import DType, get_dtype
from ..errors import SpecError, require_choice, require_whole

ATTENTION_KINDS = ("mha", "gqa", "mqa", "mla")


@dataclass(frozen=True, kw_only=True)
class Attention:
    """Attention block shape. For MLA, ``head_dim`` is the q/k dim (nope + rope) per head."""

    kind: str
    n_heads: int
    n_kv_heads: int
    head_dim: int
    v_head_dim: int
    q_lora_rank: int = 0
    kv_lora_rank: int = 0
    qk_rope_head_dim: int = 0
    qkv_bias: bool = False
    o_bias: bool = False
    qk_norm: bool = False
    sinks: bool = False
    index_n_heads: int = 0
    index_head_dim: int = 0
    index_topk: int = 0

    def __post_init__(self) -> None:
        owner = "attention"
        require_choice("kind", self.kind, ATTENTION_KINDS, owner=owner)
        for name in ("n_heads", "n_kv_heads", "head_dim", "v_head_dim"):
            require_whole(name, getattr(self, name), owner=owner)
        if self.kind == "mla":
            require_whole("kv_lora_rank", self.kv_lora_rank, owner=f"{owner} (MLA)")
        elif self.n_heads % self.n_kv_heads:
            raise SpecError(f"{owner}: num_attention_heads ({self.n_heads}) must be a multiple of "
                            f"num_key_value_heads ({self.n_kv_heads}); fix the config")
        if (self.index_topk > 0) != (self.index_head_dim > 0):
            raise SpecError(f"{owner}: sparse attention needs both index_topk and index_head_dim")

    @property
    def is_sparse(self) -> bool:
        """DeepSeek sparse attention: a lightning indexer picks ``index_topk`` tokens per query."""
        return self.index_topk > 0

    def params_per_layer(self, d_model: int) -> int:
        """Weights of one attention block (projections, biases, q/k norms, sinks, DSA indexer)."""
        n, h = self.n_heads, self.head_dim
        if self.kind == "mla":
            nope = h - self.qk_rope_head_dim
            if self.q_lora_rank:
                q = d_model * self.q_lora_rank + self.q_lora_rank + self.q_lora_rank * n * h
            else:
                q = d_model * n * h
            kv = (d_model * (self.kv_lora_rank + self.qk_rope_head_dim) + self.kv_lora_rank
                  + self.kv_lora_rank * n * (nope + self.v_head_dim))
            out = n * self.v_head_dim * d_model
            params = q + kv + out
        else:
            kvw = self.n_kv_heads * h
            params = d_model * n * h + 2 * d_model * kvw + n * self.v_head_dim * d_model
            if self.qkv_bias:
                params += n * h + 2 * kvw
        if self.o_bias:
            params += d_model
        if self.qk_norm:
            params += 2 * h
        if self.sinks:
            params += n
        if self.is_sparse:
            # DeepSeek-V3.2-Exp inference/model.py Indexer: wq_b (q_lora -> heads*dim), wk (d -> dim),
            # k_norm LayerNorm(dim) with bias, weights_proj (d -> heads).
            params += (self.q_lora_rank * self.index_n_heads * self.index_head_dim
                       + d_model * self.index_head_dim + 2 * self.index_head_dim + d_model * self.index_n_heads)
        return params

    def kv_elements_per_token(self) -> int:
        """Cached values per token per layer: K and V for each KV head, or MLA's latent + rope key."""
        if self.kind == "mla":
            return self.kv_lora_rank + self.qk_rope_head_dim
        return 2 * self.n_kv_heads * self.head_dim

    def score_value_dims(self, *, absorbed: bool) -> tuple[int, int]:
        """Per-head dims of the q.k product and the weights.v product.

        MLA decode runs "absorbed" (DeepSeek-V2 §2.1.2): scores and values over the compressed
        latent (kv_lora + rope, kv_lora); the absorbed projections equal kv_b's weights, which
        the per-token matmul count already includes. Prefill runs unabsorbed (nope+rope, v).
        """
        if self.kind == "mla" and absorbed:
            return self.kv_lora_rank + self.qk_rope_head_dim, self.kv_lora_rank
        return self.head_dim, self.v_head_dim


@dataclass(frozen=True, kw_only=True)
class MoE:
    """Routed experts (top-k of E) plus always-on shared experts, in the layers marked MoE."""

    n_routed: int
    top_k: int
    expert_ffn_dim: int
    n_shared: int = 0
    shared_ffn_dim: int = 0
    router_bias: bool = False
    expert_bias: bool = False

    def __post_init__(self) -> None:
        owner = "moe"
        require_whole("n_routed", self.n_routed, owner=owner)
        if not 1 <= self.top_k <= self.n_routed:
            raise SpecError(f"{owner}: experts per token ({self.top_k}) must be between 1 and the expert count "
                            f"({self.n_routed})")
        require_whole("expert_ffn_dim", self.expert_ffn_dim, owner=owner)
        require_whole("n_shared", self.n_shared, 0, owner=owner)



def _fp32_block_scales(elements: int, block: int = 128) -> float:
    """Bytes of one fp32 scale per ``block`` values (DeepSeek's fp8 caches: 128-value blocks)."""
    return 4.0 * math.ceil(elements / block)

@dataclass(frozen=True, kw_only=True)
class Model:
    """A decoder-only transformer. ``layer_windows[i]`` is 0 for full attention, else the number of
    most recent tokens layer i attends to (sliding window, or chunk size for chunked attention)."""

    name: str
    d_model: int
    n_layers: int
    vocab_size: int
    attention: Attention
    dense_ffn_dim: int
    ffn_gated: bool = True
    ffn_bias: bool = False
    moe: MoE | None = None
    moe_layers: tuple[bool, ...] = ()
    layer_windows: tuple[int, ...] = ()
    kv_holding: tuple[bool, ...] = ()
    tie_embeddings: bool = False
    norm: str = "rms"
    norms_per_layer: int = 2
    lm_head_bias: bool = False
    weight_dtype: str = "bf16"
    expert_weight_dtype: str = ""
    kv_dtype: str = "bf16"
    index_dtype: str = "fp8"
    max_context: int = 0
    source: str = ""
    assumptions: tuple[str, ...] = ()
    unrecognized_fields: tuple[str, ...] = ()
    extra_layers_not_counted: int = 0
    _cache: dict = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        owner = f"model {self.name}"
        for name in ("d_model", "n_layers", "vocab_size"):
            require_whole(name, getattr(self, name), owner=owner)
        require_choice("norm", self.norm, ("rms", "layer"), owner=owner)
        if not self.moe_layers:
            object.__setattr__(self, "moe_layers", (self.moe is not None,) * self.n_layers)
        if not self.layer_windows:
            object.__setattr__(self, "layer_windows", (0,) * self.n_layers)
        if not self.kv_holding:
            object.__setattr__(self, "kv_holding", (True,) * self.n_layers)
        if not self.expert_weight_dtype:
            object.__setattr__(self, "expert_weight_dtype", self.weight_dtype)
        for name in ("moe_layers", "layer_windows"):
            if len(getattr(self, name)) != self.n_layers:
                raise SpecError(f"{owner}: {name} has {len(getattr(self, name))} entries for {self.n_layers} layers")
        if any(w < 0 for w in self.layer_windows):
            raise SpecError(f"{owner}: layer windows must be >= 0")
        if len(self.kv_holding) != self.n_layers or not any(self.kv_holding):
            raise SpecError(f"{owner}: kv_holding needs one flag per layer ({self.n_layers}) and at least one layer "
                            "holding KV")
        if self.moe is None and any(self.moe_layers):
            raise SpecError(f"{owner}: MoE layers marked but no MoE spec")
        if self.n_dense_layers and self.dense_ffn_dim < 1:
            raise SpecError(f"{owner}: {self.n_dense_layers} dense layers need an FFN width >= 1")
        for name in ("weight_dtype", "expert_weight_dtype", "kv_dtype", "index_dtype"):
            get_dtype(getattr(self, name))

    # ---- layer structure -------------------------------------------------------------------
    @property
    def n_moe_layers(self) -> int:
        return sum(self.moe_layers)

    @property
    def n_dense_layers(self) -> int:
        return self.n_layers - self.n_moe_layers

    @property
    def is_moe(self) -> bool:
        return self.moe is not None and self.n_moe_layers > 0

    @property
    def attention_label(self) -> str:
        """Human label: 'gqa', 'mla+dsa', 'gqa+sliding(4096)', 'gqa+local(1024):global 5:1'..."""
        label = self.attention.kind + ("+dsa" if self.attention.is_sparse else "")
        windows = [w for w in self.layer_windows if w]
        if windows:
            w = max(set(windows), key=windows.count)
            n_local = len(windows)
            if n_local == self.n_layers:
                label += f"+sliding({w})"
            else:
                label += f"+local({w})/global {n_local}:{self.n_layers - n_local}"
        return label

    def window_groups(self, *, holding_only: bool = False) -> tuple[tuple[int, int], ...]:
        """(window, layer count) pairs; window 0 = full attention (cached: called per step).

        ``holding_only`` counts only layers that keep their own KV cache (cross-layer sharing).
        """
        key = "kv_window_groups" if holding_only else "window_groups"
        groups = self._cache.get(key)
        if groups is None:
            counts: dict[int, int] = {}
            for w, holds in zip(self.layer_windows, self.kv_holding):
                if holds or not holding_only:
                    counts[w] = counts.get(w, 0) + 1
            groups = self._cache[key] = tuple(sorted(counts.items()))
        return groups

    @property
    def kv_sharing_factor(self) -> float:
        """Layers per distinct KV cache (1 without cross-layer sharing; CLA2 = 2)."""
        return self.n_layers / sum(self.kv_holding)

    def with_kv_sharing(self, factor: int) -> "Model":
        """This model with every ``factor`` adjacent layers sharing one KV cache: cross-layer
        attention (Brandon et al. 2024, arXiv:2405.12981; Character.AI's 2024 inference note).

        The first layer of each group holds the cache, the others attend to it. Held KV bytes
        fall by ~``factor``; bytes *read* per decode step do not, because each layer still reads
        the cache it attends (layers run one after another). Parameter counts are unchanged
        (the sharing layers' K/V projections are not removed). The layer's own window is kept.
        """
        if not (isinstance(factor, int) and 1 <= factor <= self.n_layers):
            raise SpecError(f"model {self.name}: kv sharing factor must be a whole number from 1 to "
                            f"{self.n_layers} (layers per shared cache), got {factor!r}")
        holding = tuple(i % factor == 0 for i in range(self.n_layers))
        name = self.name if factor == 1 else f"{self.name} (KV shared x{factor})"
        return replace(self, name=name, kv_holding=holding, _cache={})

    # ---- parameters ------------------------------------------------------------------------
    def _ffn_params(self, width: int) -> int:
        mats = 3 if self.ffn_gated else 2
        params = mats * self.d_model * width
        if self.ffn_bias:
            params += (2 if self.ffn_gated else 1) * width + self.d_model
        return params

    def _expert_params(self, width: int) -> int:
        mats = 3 if self.ffn_gated else 2
        params = mats * self.d_model * width
        if self.moe is not None and self.moe.expert_bias:
            params += (2 if self.ffn_gated else 1) * width + self.d_model
        return params

    @property
    def params(self) -> "ParamCounts":
        """Parameter counts per component (exact integers)."""
        if "params" not in self._cache:
            self._cache["params"] = self._count_params()
        return self._cache["params"]

    def _count_params(self) -> "ParamCounts":
        d, v = self.d_model, self.vocab_size
        norm_w = d if self.norm == "rms" else 2 * d
        attention = self.n_layers * self.attention.params_per_layer(d)
        dense_ffn = self.n_dense_layers * self._ffn_params(self.dense_ffn_dim)
        routed = shared = router = 0
        expert = 0
        if self.moe is not None:
            m = self.moe
            expert = self._expert_params(m.expert_ffn_dim)
            routed = self.n_moe_layers * m.n_routed * expert
            shared = self.n_moe_layers * m.n_shared * self._expert_params(m.shared_ffn_dim or m.expert_ffn_dim)
            router = self.n_moe_layers * (d * m.n_routed + (m.n_routed if m.router_bias else 0))
        norms = self.n_layers * self.norms_per_layer * norm_w + norm_w
        embedding = v * d
        lm_head = (0 if self.tie_embeddings else v * d) + (v if self.lm_head_bias else 0)
        routed_active = 0 if self.moe is None else self.n_moe_layers * self.moe.top_k * expert
        return ParamCounts(embedding=embedding, lm_head=lm_head, attention=attention, dense_ffn=dense_ffn,
                           routed_experts=routed, routed_experts_active=routed_active, shared_experts=shared,
                           router=router, norms=norms, head_matmul=v * d)

    @property
    def sparsity(self) -> float:
        """S = N_total / N_active >= 1 (SPEC conventions)."""
        p = self.params
        return p.total / p.active

    # ---- bytes -------------------------------------------------------------------------------
    def weight_bytes(self, weight_dtype: str | DType | None = None) -> "WeightBytes":
        """Stored weight bytes, split into non-expert (dense) and routed-expert parts.

        ``weight_dtype`` overrides both the dense and the expert format; None keeps the native
        ones (gpt-oss: MXFP4 experts, bf16 elsewhere). Shared experts use the expert format.
        """
        key = ("weight_bytes", weight_dtype)
        if key in self._cache:  # every step of a sweep asks again: computed once per format
            return self._cache[key]
        p = self.params
        dense_b = get_dtype(weight_dtype or self.weight_dtype).bytes
        expert_b = get_dtype(weight_dtype or self.expert_weight_dtype).bytes
        non_expert = (p.total - p.routed_experts - p.shared_experts) * dense_b + p.shared_experts * expert_b
        out = self._cache[key] = WeightBytes(non_expert=non_expert, routed_experts=p.routed_experts * expert_b,
                                             input_embedding=0.0 if self.tie_embeddings else p.embedding * dense_b)
        return out

    def kv_bytes_per_token(self, kv_dtype: str | DType | None = None) -> float:
        """KV-cache bytes per token summed over all layers, at short context (every layer holds it).

        MHA/GQA/MQA: 2·K·H per layer; MLA: kv_lora + rope per layer (DeepSeek-V3 bf16: 61·576·2 =
        70,272 B); DSA adds the indexer's key cache. Sliding layers hold at most their window: see
        ``kv_bytes``. The fp8 layouts of DSA are DeepSeek's own (``_kv_layer_bytes``).
        """
        return float(self.kv_bytes(1, kv_dtype))

    def _kv_layer_bytes(self, kv_dtype: str | DType | None) -> tuple[float, float]:
        """(cache bytes, indexer-key bytes) per token per layer.

        DSA at 8 bits uses DeepSeek's published layouts (FlashMLA README, "FP8 KV cache" of the
        sparse kernels; DeepSeek-V3.2-Exp inference/model.py): the latent in fp8 with one fp32 scale
        per 128 values and the rope key kept in bf16, 512 + 4·4 + 64·2 = 656 B; the indexer key in
        fp8 with one fp32 scale per 128 values, 128 + 4 = 132 B. Other 8-bit caches (dense MLA, GQA)
        are counted with per-tensor scales (no per-token bytes) and every element at 8 bits.
        """
        key = ("kv_layer_bytes", kv_dtype)
        if key not in self._cache:  # computed once per format
            kv = get_dtype(kv_dtype or self.kv_dtype)
            a = self.attention
            main = a.kv_elements_per_token() * kv.bytes
            index = 0.0
            if a.is_sparse:
                idx = get_dtype(self.index_dtype)
                index = a.index_head_dim * idx.bytes + (_fp32_block_scales(a.index_head_dim) if idx.bits == 8 else 0.0)
                if a.kind == "mla" and kv.bits == 8:
                    main = a.kv_lora_rank * kv.bytes + _fp32_block_scales(a.kv_lora_rank) + a.qk_rope_head_dim * 2.0
            self._cache[key] = (main, index)
        return self._cache[key]

    def kv_bytes(self, context, kv_dtype: str | DType | None = None):
        """KV bytes held for one sequence of ``context`` tokens (broadcasts over numpy arrays)."""
        return self._kv_sum(context, kv_dtype, self.window_groups(holding_only=True), sparse=False)

    def dense_kv_read_bytes(self, context, kv_dtype: str | DType | None = None):
        """What dense attention over the same cache layout would read at ``context`` (no indexer, no
        top-k): the comparison DSA's savings are stated against (SPEC B7)."""
        return self._kv_sum(context, kv_dtype, self.window_groups(), sparse=False, indexer=False)

    def kv_read_bytes(self, context, kv_dtype: str | DType | None = None, *, sparse: bool = True):
        """KV bytes one decode step reads for one sequence at ``context`` tokens.

        Every attending layer reads its cache (a layer sharing another's cache reads it again).
        Dense attention reads all it holds; DSA (``sparse``) reads the whole indexer cache plus
        the top-k selected entries: L·b_index + min(L, k)·b_kv per layer (SPEC B7).
        """
        return self._kv_sum(context, kv_dtype, self.window_groups(), sparse=sparse and self.attention.is_sparse)

    def _kv_sum(self, context, kv_dtype, groups, *, sparse: bool, indexer: bool = True):
        context = np.asarray(context, dtype=float)
        main, index = self._kv_layer_bytes(kv_dtype)
        index = index if indexer else 0.0
        total = 0.0
        for window, count in groups:
            held = context if window == 0 else np.minimum(context, window)
            selected = np.minimum(held, self.attention.index_topk) if sparse else held
            total = total + count * (index * held + main * selected)
        return total

    # ---- FLOPs ---------------------------------------------------------------------------------
    def attention_flops_per_token(self, context, *, absorbed: bool = True):
        """Score and value FLOPs of one query token attending ``context`` cached tokens.

        Per layer ``2·N·(d_qk + d_v)·L_eff`` (Kaplan et al. 2020 form, 4·N·H·L for d_qk = d_v = H),
        with L_eff = min(L, window) and, for DSA, min(L, top-k) plus the indexer's
        2·index_heads·index_dim·L. Softmax and masking are omitted.
        """
        context = np.asarray(context, dtype=float)
        a = self.attention
        d_qk, d_v = a.score_value_dims(absorbed=absorbed)
        per_token = 2.0 * a.n_heads * (d_qk + d_v)
        total = 0.0
        for window, count in self.window_groups():
            held = context if window == 0 else np.minimum(context, window)
            attended = np.minimum(held, a.index_topk) if a.is_sparse else held
            total = total + count * per_token * attended
            if a.is_sparse:
                total = total + count * 2.0 * a.index_n_heads * a.index_head_dim * held
        return total

    def prefill_attention_flops(self, prompt_tokens, cached_tokens=0):
        """Causal attention FLOPs for ``prompt_tokens`` new tokens after ``cached_tokens`` cached ones.

        Token at position p (1-based) attends min(p, window) tokens; the sum over the prompt is
        closed-form: S(L0+T) - S(L0) with S(x) = sum_{p<=x} min(p, W). Unabsorbed MLA dims.
        DSA prefill is counted as dense (its top-k applies per query; at p <= k they coincide).
        """
        t = np.asarray(prompt_tokens, dtype=float)
        l0 = np.asarray(cached_tokens, dtype=float)
        a = self.attention
        d_qk, d_v = a.score_value_dims(absorbed=False)
        per_token = 2.0 * a.n_heads * (d_qk + d_v)
        total = 0.0
        for window, count in self.window_groups():
            attended = _causal_sum(l0 + t, window) - _causal_sum(l0, window)
            if a.is_sparse:
                k = float(a.index_topk)
                attended = _causal_sum(l0 + t, k) - _causal_sum(l0, k)
                full = _causal_sum(l0 + t, window) - _causal_sum(l0, window)
                total = total + count * 2.0 * a.index_n_heads * a.index_head_dim * full
            total = total + count * per_token * attended
        return total

    def matmul_flops_per_token(self) -> "MatmulFlops":
        """2 FLOPs per weight used by one token (FLOPs, not MACs), split dense vs expert."""
        p = self.params
        dense = 2.0 * (p.attention + p.dense_ffn + p.router + p.head_matmul)
        expert = 2.0 * (p.shared_experts + p.routed_experts_active)
        return MatmulFlops(non_expert=dense, expert=expert)


def _causal_sum(x, window):
    """sum_{p=1}^{x} min(p, W) for W > 0, or x(x+1)/2 for W = 0 (full attention)."""
    x = np.asarray(x, dtype=float)
    full = x * (x + 1.0) / 2.0
    if not window:
        return full
    w = float(window)
    return np.where(x <= w, full, w * (w + 1.0) / 2.0 + (x - w) * w)


@dataclass(frozen=True, kw_only=True)
class ParamCounts:
    """Parameter counts per component. ``head_matmul`` is V·d used by the output matmul even when
    tied (then it is not stored twice)."""

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

    @property
    def total(self) -> int:
        return (self.embedding + self.lm_head + self.attention + self.dense_ffn + self.routed_experts
                + self.shared_experts + self.router + self.norms)

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
