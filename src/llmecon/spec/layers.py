"""Layer building blocks of a ``Model``: attention, MoE and linear-attention / state-space mixers.

A decoder layer has a token mixer (softmax attention, a linear-attention or state-space mixer, or
none) and a feed-forward part (a dense FFN, an MoE block, both, or none). ``Model`` holds one
``Attention`` (plus an optional second one for windowed layers with their own head counts), at
most one ``LinearMixer`` and one ``MoE``, and per-layer tuples saying which layer uses what.

Parameter conventions are those of ``spec/model.py``. Sources per block are in the docstrings.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..dtypes import get_dtype
from ..errors import SpecError, require_choice, require_whole

ATTENTION_KINDS = ("mha", "gqa", "mqa", "mla")
LINEAR_KINDS = ("gated_deltanet", "kda", "mamba2", "mamba1", "short_conv", "lightning", "rglru")


@dataclass(frozen=True, kw_only=True)
class Attention:
    """Attention block shape. For MLA, ``head_dim`` is the q/k dim (nope + rope) per head.

    ``k_eq_v``: keys double as values (Gemma 4 global layers, ``attention_k_eq_v``): no v
    projection and one cached tensor per KV head. ``output_gate``: a sigmoid gate on the attention
    output computed by widening the query projection (Qwen3-Next/3.5 ``attn_output_gate``: q_proj
    emits 2·N·H) or, for MLA (Kimi ``mla_use_output_gate``), a d -> N·d_v projection.
    """

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
    k_eq_v: bool = False
    output_gate: bool = False
    index_n_heads: int = 0
    index_head_dim: int = 0
    index_topk: int = 0
    o_lora_rank: int = 0
    o_groups: int = 0
    compressed_kv: bool = False

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
        if self.compressed_kv:
            for name in ("q_lora_rank", "o_lora_rank", "o_groups"):
                require_whole(name, getattr(self, name), owner=f"{owner} (compressed KV)")
            if self.n_heads % self.o_groups or not (self.k_eq_v and self.n_kv_heads == 1):
                raise SpecError(f"{owner}: compressed-KV attention needs one K = V head and o_groups "
                                f"({self.o_groups}) dividing the heads ({self.n_heads}); fix the config")

    @property
    def is_sparse(self) -> bool:
        """DeepSeek sparse attention: a lightning indexer picks ``index_topk`` tokens per query."""
        return self.index_topk > 0

    def indexer_params(self, d_model: int) -> int:
        """DSA lightning indexer weights. DeepSeek-V3.2-Exp inference/model.py Indexer: wq_b
        (q_lora -> heads·dim), wk (d -> dim), k_norm LayerNorm(dim) with bias, weights_proj
        (d -> heads). Without a q LoRA (GQA models) the indexer query is taken from the hidden
        state (d -> heads·dim): an inference, no reference code for those models is read here."""
        if not self.is_sparse:
            return 0
        q_in = self.q_lora_rank or d_model
        return (q_in * self.index_n_heads * self.index_head_dim + d_model * self.index_head_dim
                + 2 * self.index_head_dim + d_model * self.index_n_heads)

    def params_per_layer(self, d_model: int, *, indexer: bool = True) -> int:
        """Weights of one attention block (projections, biases, q/k norms, sinks, gate and, with
        ``indexer``, the DSA indexer)."""
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
            params = q + kv + out + (d_model * n * self.v_head_dim if self.output_gate else 0)
        else:
            kvw = self.n_kv_heads * h
            n_kv_mats = 1 if self.k_eq_v else 2
            q_out = n * h * (2 if self.output_gate else 1)
            params = d_model * q_out + n_kv_mats * d_model * kvw + n * self.v_head_dim * d_model
            if self.qkv_bias:
                params += q_out + n_kv_mats * kvw
        if self.o_bias:
            params += d_model
        if self.qk_norm:
            params += 2 * h
        if self.sinks:
            params += n
        if indexer:
            params += self.indexer_params(d_model)
        return params

    def kv_elements_per_token(self) -> int:
        """Cached values per token per layer: K (head_dim) and V (v_head_dim) for each KV head (K
        only when K = V), or MLA's latent + rope key."""
        if self.kind == "mla":
            return self.kv_lora_rank + self.qk_rope_head_dim
        return self.n_kv_heads * (self.head_dim + (0 if self.k_eq_v else self.v_head_dim))

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
    """Routed experts (top-k of E) plus always-on shared experts, in the layers marked MoE.

    ``latent_dim`` > 0: routed experts run in a smaller latent space (NVIDIA Nemotron-3 "latent
    MoE", ``moe_latent_size``; Kimi ``routed_expert_hidden_size``): one d -> latent and one
    latent -> d projection per MoE layer, always active, and experts of latent x width. Shared
    experts stay at d. ``latent_norm`` adds an RMSNorm of ``latent_dim`` weights.
    ``hash_layers``: the first MoE layers pick experts from a token-id table (DeepSeek-V4
    ``num_hash_layers``; SGLang ``HashTopK``): the gate still scores the picked experts (its weights
    are used) but has no bias; the int32 table (vocab x k) is a lookup, not counted as weights.
    """

    n_routed: int
    top_k: int
    expert_ffn_dim: int
    n_shared: int = 0
    shared_ffn_dim: int = 0
    router_bias: bool = False
    expert_bias: bool = False
    latent_dim: int = 0
    latent_norm: bool = False
    hash_layers: int = 0

    def __post_init__(self) -> None:
        owner = "moe"
        require_whole("n_routed", self.n_routed, owner=owner)
        if not 1 <= self.top_k <= self.n_routed:
            raise SpecError(f"{owner}: experts per token ({self.top_k}) must be between 1 and the expert count "
                            f"({self.n_routed})")
        require_whole("expert_ffn_dim", self.expert_ffn_dim, owner=owner)
        require_whole("n_shared", self.n_shared, 0, owner=owner)
        require_whole("latent_dim", self.latent_dim, 0, owner=owner)
        require_whole("hash_layers", self.hash_layers, 0, owner=owner)


@dataclass(frozen=True, kw_only=True)
class LinearMixer:
    """A linear-attention or state-space token mixer: a fixed-size recurrent state per sequence
    replaces the growing KV cache.

    Kinds and their shapes (``n_heads`` value heads of ``value_dim``; ``n_key_heads`` key heads
    of ``key_dim``):

    - ``gated_deltanet``: Gated DeltaNet (Yang, Kautz, Hatamizadeh, arXiv:2412.06464), as in
      Qwen3-Next / Qwen3.5 (transformers ``Qwen3NextGatedDeltaNet``): in_proj_qkvz d -> 2·nk·dk +
      2·nv·dv, in_proj_ba d -> 2·nv, a depthwise causal conv over q,k,v (no bias), dt_bias and
      A_log per value head, a gated RMSNorm of dv, out_proj nv·dv -> d. State per layer: one
      dk x dv matrix per value head.
    - ``kda``: Kimi Delta Attention (Kimi Team, "Kimi Linear", arXiv:2510.26692), as in
      flash-linear-attention ``KimiDeltaAttention``: q,k,v projections d -> H·dk, short convs on
      each (no bias), a low-rank channel-wise forget gate f (d -> dv -> H·dk), beta (d -> H),
      A_log (H), dt_bias (H·dk), a low-rank output gate g (d -> dv -> H·dv), gated RMSNorm dv,
      o_proj. State: dk x dv per head. ``full_rank_gates``: f and g projected straight from d (d -> H·dk,
      d -> H·dv; transformers ``BailingHybridDeltaAttention``).
    - ``mamba2``: Mamba-2 SSD (Dao & Gu, arXiv:2405.21060), as in transformers
      ``NemotronHMamba2Mixer``: in_proj d -> 2·d_inner + 2·G·N + H (z, x, B, C, dt), a conv over
      x,B,C, dt_bias, A_log and D per head, a gated RMSNorm of d_inner, out_proj d_inner -> d.
      Here ``n_heads`` = H, ``value_dim`` = head dim P, ``n_key_heads`` = groups G, ``key_dim`` =
      state size N. State: P x N per head.

    - ``mamba1``: Mamba selective SSM (Gu & Dao, arXiv:2312.00752), as in transformers ``MambaMixer``
      / ``JambaMambaMixer``: in_proj d -> 2·d_inner (x, z), a depthwise conv over x, x_proj d_inner
      -> R + 2N (dt, B, C; no bias), dt_proj R -> d_inner with bias, A_log d_inner x N, D d_inner,
      out_proj d_inner -> d; Jamba adds RMSNorms of dt, B and C (``dt_norms``: R + 2N weights). Here
      ``n_heads`` = d_inner channels, ``value_dim`` = 1, ``n_key_heads`` = 1, ``key_dim`` = state
      size N, ``dt_rank`` = R. State: N per channel.
    - ``short_conv``: a gated short convolution (LFM2, transformers ``Lfm2ShortConv``): in_proj d ->
      3d (B, C, x), a depthwise causal conv of ``conv_kernel`` over B·x, out_proj d -> d. Here
      ``n_heads`` = d channels, ``value_dim`` = ``key_dim`` = ``n_key_heads`` = 1. No recurrent
      state: only the conv state.
    - ``lightning``: MiniMax-01 lightning attention (arXiv:2501.08313; transformers
      ``MiniMaxLightningAttention``): qkv_proj d -> 3·H·h, an output gate d -> H·h, an RMSNorm of H·h,
      out_proj H·h -> d; no convolution. Here ``n_heads`` = ``n_key_heads`` = H, ``key_dim`` =
      ``value_dim`` = h. State: h x h per head (decayed sum of k v^T); no conv state.
    - ``rglru``: Griffin's recurrent block (De et al., arXiv:2402.19427; transformers
      ``RecurrentGemmaRecurrentBlock``): linear_y and linear_x d -> w with bias, a depthwise conv over
      x (kernel taps + bias), the RG-LRU (a recurrence parameter per channel and two block-diagonal
      gates of H blocks of w/H, with biases), linear_out w -> d with bias. Here ``n_heads`` = H,
      ``value_dim`` = w/H, ``n_key_heads`` = ``key_dim`` = 1. State: one value per channel (w).

    Every kind also keeps the last ``conv_kernel - 1`` conv inputs per sequence (the conv state).
    """

    kind: str
    n_heads: int
    n_key_heads: int
    key_dim: int
    value_dim: int
    conv_kernel: int
    conv_bias: bool = False
    proj_bias: bool = False
    state_dtype: str = "fp32"
    conv_state_dtype: str = "bf16"
    dt_rank: int = 0
    dt_norms: bool = False
    full_rank_gates: bool = False

    def __post_init__(self) -> None:
        owner = "linear mixer"
        require_choice("kind", self.kind, LINEAR_KINDS, owner=owner)
        for name in ("n_heads", "n_key_heads", "key_dim", "value_dim", "conv_kernel"):
            require_whole(name, getattr(self, name), owner=owner)
        if self.kind == "mamba1":
            require_whole("dt_rank", self.dt_rank, owner=owner)
        if self.kind in ("gated_deltanet", "kda") and self.n_heads % self.n_key_heads:
            raise SpecError(f"{owner}: value heads ({self.n_heads}) must be a multiple of key heads "
                            f"({self.n_key_heads})")
        get_dtype(self.state_dtype)
        get_dtype(self.conv_state_dtype)

    @property
    def inner_dim(self) -> int:
        """Width of the mixer's value path (nv·dv; Mamba-2 d_inner = H·P)."""
        return self.n_heads * self.value_dim

    @property
    def conv_channels(self) -> int:
        """Channels of the short causal convolution."""
        if self.kind == "gated_deltanet":
            return 2 * self.n_key_heads * self.key_dim + self.inner_dim
        if self.kind == "kda":
            return 2 * self.n_heads * self.key_dim + self.inner_dim
        if self.kind in ("mamba1", "short_conv", "rglru"):
            return self.inner_dim
        return self.inner_dim + 2 * self.n_key_heads * self.key_dim

    def params_per_layer(self, d_model: int) -> int:
        """Weights of one mixer (shapes in the class docstring)."""
        d, nv, dv, dk, inner = d_model, self.n_heads, self.value_dim, self.key_dim, self.inner_dim
        conv = self.conv_channels * self.conv_kernel + (self.conv_channels if self.conv_bias else 0)
        if self.kind == "gated_deltanet":
            proj = d * (2 * self.n_key_heads * dk + 2 * inner) + d * 2 * nv
            return proj + conv + 2 * nv + dv + inner * d
        if self.kind == "kda":
            qkv = d * (2 * nv * dk + inner)
            gates = (d * dv + dv * nv * dk) + d * nv + (d * dv + dv * inner)
            if self.full_rank_gates:  # Bailing hybrid: f and g projected straight from d (d -> H·dk, d -> H·dv)
                gates = d * nv * dk + d * nv + d * inner
            return qkv + conv + gates + nv + nv * dk + dv + inner * d
        if self.kind == "lightning":
            return d * 3 * inner + d * inner + inner + inner * d
        if self.kind == "rglru":
            gates = 2 * (nv * dv * dv + inner)  # input and recurrence gates: H blocks of (w/H)² plus biases
            return 2 * (d * inner + inner) + conv + inner + gates + inner * d + d
        if self.kind in ("mamba1", "short_conv"):
            return self._conv_mixer_params(d, conv)
        in_proj = d * (2 * inner + 2 * self.n_key_heads * dk + nv)
        bias = (2 * inner + 2 * self.n_key_heads * dk + nv + d) if self.proj_bias else 0
        return in_proj + conv + 3 * nv + inner + inner * d + bias

    def _conv_mixer_params(self, d: int, conv: int) -> int:
        """Mamba-1 and short-conv weights (shapes in the class docstring)."""
        inner, bias = self.inner_dim, self.proj_bias
        if self.kind == "short_conv":
            return d * 3 * inner + conv + inner * d + ((3 * inner + d) if bias else 0)
        n, r = self.key_dim, self.dt_rank
        params = d * 2 * inner + conv + inner * (r + 2 * n) + (r * inner + inner) + inner * n + inner + inner * d
        return params + ((2 * inner + d) if bias else 0) + ((r + 2 * n) if self.dt_norms else 0)

    def state_elements(self) -> int:
        """Recurrent state per sequence per layer: dk·dv per head (DeltaNet, KDA), P·N per head
        (Mamba-2), N per channel (Mamba-1); none for a short convolution."""
        if self.kind == "short_conv":
            return 0
        return self.n_heads * self.key_dim * self.value_dim

    def conv_state_elements(self) -> int:
        """Conv state per sequence per layer: the last kernel-1 inputs of every conv channel (none for
        lightning attention, which has no convolution)."""
        if self.kind == "lightning":
            return 0
        return (self.conv_kernel - 1) * self.conv_channels

    def state_bytes(self) -> float:
        """Bytes of constant per-sequence state of one layer (recurrent + conv state)."""
        return (self.state_elements() * get_dtype(self.state_dtype).bytes
                + self.conv_state_elements() * get_dtype(self.conv_state_dtype).bytes)

    def recurrent_flops_per_token(self) -> float:
        """FLOPs per token of one layer's state recurrence and conv, beyond its projections.

        Delta rule (GDN, KDA), per head with a dk x dv state S: S^T k (2·dk·dv), the rank-1
        update S += k (beta (v - S^T k))^T (2·dk·dv), the decay (dk·dv) and the read-out S^T q
        (2·dk·dv): 7·dk·dv. Mamba-2 per head with a P x N state: decay (P·N), B x^T update
        (2·P·N), C read-out (2·P·N): 5·P·N; Mamba-1 the same with P = 1 per channel; lightning
        attention 5·h² per head. Conv: 2·kernel FLOPs per channel. Gates, norms and
        the chunked (parallel) prefill form's extra intra-chunk work are omitted.
        """
        if self.kind == "short_conv":  # the conv and the two gating products (B·x before, C·y after)
            return 2.0 * self.conv_kernel * self.conv_channels + 2.0 * self.conv_channels
        if self.kind == "rglru":  # gates are block matmuls (in the weights); h = a·h + b·x: 3 per channel
            return 3.0 * self.inner_dim + 2.0 * self.conv_kernel * self.conv_channels
        if self.kind == "lightning":  # decay (h²), k v^T update (2h²), q S read-out (2h²) per head; no conv
            return self.n_heads * 5.0 * self.key_dim * self.value_dim
        per_head = (5.0 if self.kind in ("mamba2", "mamba1") else 7.0) * self.key_dim * self.value_dim
        return self.n_heads * per_head + 2.0 * self.conv_kernel * self.conv_channels
