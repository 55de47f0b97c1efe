"""A family's own names for common config fields, read before the field policy (``hf_config``).

Older and non-Llama decoders name the same quantities differently (``d_model``, ``n_heads``,
``ffn_dim``, ``dff``, ``num_kv_heads``...) and state some structure with switches of their own
(OPT's ``enable_bias``, Falcon's ``new_decoder_architecture``, GPT-Neo's ``attention_layers``).
``normalize`` rewrites them, for the model types listed here only (a name means something in its
family: Mamba-2's ``num_heads`` are SSM heads, GPT-Neo's attention heads), into the names the reader
reads, before the field policy sees the config. Each rule cites the transformers class it follows
(transformers 5.23.0, ``models/<type>/configuration_<type>.py`` and ``modeling_<type>.py``). A switch
at a value llmecon does not model is refused, naming it.
"""

from __future__ import annotations

from ..errors import CatalogError
from .hf_fields import rename

# model_type -> {family name: common name}; renamed only when the common name is absent.
ALIASES: dict[str, dict[str, str]] = {
    "ctrl": {"dff": "intermediate_size"},                                       # CTRLConfig
    "openai-gpt": {"afn": "hidden_act"},                                       # OpenAIGPTConfig
    "opt": {"ffn_dim": "intermediate_size"},                                   # OPTConfig
    "xglm": {"d_model": "hidden_size", "attention_heads": "num_attention_heads", "ffn_dim": "intermediate_size",
             "num_layers": "num_hidden_layers"},                               # XGLMConfig
    "gpt_neo": {"num_heads": "num_attention_heads", "num_layers": "num_hidden_layers",
                "window_size": "sliding_window"},                              # GPTNeoConfig
    "falcon": {"ffn_hidden_size": "intermediate_size"},                        # FalconConfig
    "mpt": {"d_model": "hidden_size", "n_heads": "num_attention_heads", "n_layers": "num_hidden_layers",
            "max_seq_len": "max_position_embeddings"},                         # MptConfig
    # LFM2 hub configs also carry their training code's names for the same sizes (Lfm2Config reads none of
    # them): checked equal to the names transformers reads, else refused
    "cpmant": {"dim_ff": "intermediate_size", "dim_head": "head_dim", "eps": "rms_norm_eps"},  # CpmAntConfig
    "lfm2": {"block_dim": "hidden_size", "conv_dim": "hidden_size", "conv_dim_out": "hidden_size",
             "block_ff_dim": "intermediate_size", "num_heads": "num_attention_heads", "block_norm_eps": "norm_eps"},
}


def normalize(flat: dict, where: str) -> None:
    """Rewrite ``flat`` (a flattened config) in place for its model type's own names and switches."""
    model_type = flat.get("model_type")
    if not isinstance(model_type, str):
        return
    for old, new in ALIASES.get(model_type, {}).items():
        rename(flat, old, new, where)
    rule = _RULES.get(model_type)
    if rule is not None:
        rule(flat, where)


def _bias_switch(flat: dict, key: str, *, inverted: bool = False) -> None:
    """One switch for every linear bias (attention q/k/v/o and the MLP): ``attention_bias`` and
    ``mlp_bias`` as the reader reads them (the family's output projection follows ``attention_bias``)."""
    if key not in flat:
        return
    value = flat.pop(key)
    if not isinstance(value, bool):
        return
    on = (not value) if inverted else value
    flat.setdefault("attention_bias", on)
    flat.setdefault("mlp_bias", on)


def _opt(flat: dict, where: str) -> None:
    # OPTDecoder: embed_tokens of word_embed_proj_dim with project_in/out when it differs from hidden_size
    proj = flat.pop("word_embed_proj_dim", None)
    if proj not in (None, flat.get("hidden_size")):
        raise CatalogError(f"{where}: word_embed_proj_dim = {proj} differs from hidden_size (OPT-350m's projected "
                           "embeddings) and is not modelled; only word_embed_proj_dim = hidden_size is read")
    _bias_switch(flat, "enable_bias")
    if flat.pop("layer_norm_elementwise_affine", True) is False:
        flat["_norms_without_weights"] = True
    flat.pop("do_layer_norm_before", None)  # pre- or post-norm: the same norms and matmuls (residual dataflow)


def _falcon(flat: dict, where: str) -> None:
    # FalconAttention: KV heads = num_kv_heads if new_decoder_architecture or not multi_query, else 1;
    # FalconDecoderLayer: 2 LayerNorms (ln_attn, ln_mlp) with the new architecture (num_ln_in_parallel_attn
    # default 2), else 1 in a parallel block and 2 in a sequential one.
    new = flat.pop("new_decoder_architecture", False)
    kv = flat.pop("num_kv_heads", None)
    if new or not flat.get("multi_query", False):
        flat.pop("multi_query", None)
        if kv is not None:
            flat["num_key_value_heads"] = kv
    n_ln = flat.pop("num_ln_in_parallel_attn", None)
    parallel = flat.pop("parallel_attn", True)
    flat["_norms_per_layer"] = (n_ln or 2) if new else (1 if parallel else 2)
    _bias_switch(flat, "bias")


def _gpt_neo(flat: dict, where: str) -> None:
    # GPTNeoConfig.attention_layers: one "global" / "local" per layer (local: a window of window_size)
    layers = flat.pop("attention_layers", None)
    flat.pop("attention_types", None)  # the compact form attention_layers is expanded from
    if isinstance(layers, list):
        table = {"global": "full_attention", "local": "sliding_attention"}
        bad = [t for t in layers if t not in table]
        if bad:
            raise CatalogError(f"{where}: attention_layers entry {bad[0]!r} is not 'global' or 'local'")
        flat["layer_types"] = [table[t] for t in layers]


def _mpt(flat: dict, where: str) -> None:
    # MptConfig: expansion_ratio · d_model MLP; no_bias drops every bias; attn_config holds ALiBi and
    # clamps (values) and the attention kind, which must be plain multi-head ("multihead_attention")
    ratio = flat.pop("expansion_ratio", None)
    if isinstance(ratio, (int, float)) and flat.get("intermediate_size") is None and isinstance(
            flat.get("hidden_size"), int):
        flat["intermediate_size"] = int(ratio * flat["hidden_size"])
    _bias_switch(flat, "no_bias", inverted=True)
    attn = flat.pop("attn_config", None) or {}
    kind = attn.get("attn_type", "multihead_attention") if isinstance(attn, dict) else None
    if kind != "multihead_attention":
        raise CatalogError(f"{where}: attn_config.attn_type = {kind!r} is not modelled; only multihead_attention")
    if attn.get("qk_ln") is True:  # llm-foundry's q/k LayerNorms over d (transformers' MptAttention has none)
        flat["_assumptions"] = ["attn_config.qk_ln: q and k LayerNorms (4·d weights per layer) omitted"]
    norm = flat.pop("norm_type", "low_precision_layernorm")
    if "layernorm" not in str(norm):
        raise CatalogError(f"{where}: norm_type = {norm!r} is not modelled; only LayerNorm kinds")
    flat.pop("embedding_fraction", None)  # scales the embedding's gradient: training only
    for key in ("init_config", "verbose", "learned_pos_emb"):  # init; logging; MptModel builds no position table
        flat.pop(key, None)


def _kimi_linear(flat: dict, where: str) -> None:
    # KimiLinearConfig: linear_num_heads x linear_head_dim KDA heads, linear_conv_kernel_dim, and the layer
    # pattern in layer_types; the hub config.json states them as linear_attn_config (read by hf_layers).
    if "linear_attn_config" in flat or not isinstance(flat.get("layer_types"), list):
        return
    types = flat["layer_types"]
    cfg = {"num_heads": flat.pop("linear_num_heads", None), "head_dim": flat.pop("linear_head_dim", None),
           "short_conv_kernel_size": flat.pop("linear_conv_kernel_dim", None),
           "kda_layers": [i + 1 for i, t in enumerate(types) if t == "linear_attention"],
           "full_attn_layers": [i + 1 for i, t in enumerate(types) if t != "linear_attention"]}
    flat["linear_attn_config"] = cfg
    flat["layer_types"] = ["full_attention" if t == "linear_attention" else t for t in types]  # the mixers: cfg


def _bailing_hybrid(flat: dict, where: str) -> None:
    # BailingHybridConfig: Kimi-Linear-style KDA layers (linear_num_heads x linear_head_dim, short conv of
    # short_conv_kernel_size = linear_conv_kernel_dim) whose forget and output gates are full-rank projections
    # from d (BailingHybridDeltaAttention f_proj, g_proj), MLA full-attention layers; layer_group_size is the
    # period layer_types is written from
    if isinstance(flat.get("layer_types"), list):
        flat.pop("layer_group_size", None)
    size = flat.pop("short_conv_kernel_size", None)
    if size is not None and flat.get("linear_conv_kernel_dim") not in (None, size):
        raise CatalogError(f"{where}: short_conv_kernel_size ({size}) and linear_conv_kernel_dim "
                           f"({flat['linear_conv_kernel_dim']}) disagree; fix one of them")
    _kimi_linear(flat, where)
    if isinstance(flat.get("linear_attn_config"), dict):
        flat["linear_attn_config"]["full_rank_gates"] = True


def _longcat_flash(flat: dict, where: str) -> None:
    # LongcatFlashConfig / LongcatFlashDecoderLayer: each of num_layers layers holds two sub-layers, each an MLA
    # attention and a dense MLP of ffn_hidden_size with 2 RMSNorms, plus one MoE (expert_ffn_hidden_size,
    # n_routed_experts, moe_topk) beside the first sub-layer (shortcut-connected MoE). Read as 2·num_layers
    # layers, every one with a dense MLP, MoE on the even ones. zero_expert_num identity experts have no
    # weights: the router scores them (n_routed + zero columns: d x zero omitted, < 0.01%) and top-k picks
    # them too, so the active expert count counted here (all moe_topk picks real) is an upper bound.
    n = flat.pop("num_layers", None)
    if not isinstance(n, int) or "num_hidden_layers" in flat:
        return
    flat["num_hidden_layers"] = 2 * n
    for old, new in (("ffn_hidden_size", "intermediate_size"), ("expert_ffn_hidden_size", "moe_intermediate_size")):
        if old in flat:
            flat[new] = flat.pop(old)
    flat["moe_layers"] = list(range(0, 2 * n, 2))
    zero = flat.pop("zero_expert_num", None)
    notes = [f"LongCat-Flash: {n} layers of 2 attention + 2 dense-MLP sub-layers read as {2 * n} layers, the MoE "
             "beside every first sub-layer"]
    if zero:
        notes.append(f"{zero} zero (identity) experts: no weights; top-k counted as all real experts (upper bound "
                     "on active expert FLOPs)")
    flat["_assumptions"] = notes


def _deepseek_v4(flat: dict, where: str) -> None:
    # DeepseekV4Config: layer_types names each layer's attention ("sliding_attention" = window only,
    # "compressed_sparse_attention" / "heavily_compressed_attention" with compress_rates[type]);
    # mlp_layer_types "hash_moe" for the first MoE layers routed by token id. Written here as the
    # per-layer compress_ratios and num_hash_layers the reference config.json states (hf_dsv4).
    rates, types = flat.get("compress_rates"), flat.get("layer_types")
    if not isinstance(rates, dict) or not isinstance(types, list) or "compress_ratios" in flat:
        return
    table = {"sliding_attention": 0, **rates}
    bad = [t for t in types if t not in table]
    if bad:
        raise CatalogError(f"{where}: layer_types entry {bad[0]!r} is not sliding_attention or a key of "
                           f"compress_rates {sorted(rates)}")
    flat["compress_ratios"] = [table[t] for t in types]
    del flat["compress_rates"], flat["layer_types"]
    mlp = flat.get("mlp_layer_types")
    if isinstance(mlp, list):
        hashed = [t == "hash_moe" for t in mlp]
        n_hash = sum(hashed)
        if hashed != [True] * n_hash + [False] * (len(mlp) - n_hash) or any(t not in ("hash_moe", "moe") for t in mlp):
            raise CatalogError(f"{where}: mlp_layer_types must be hash_moe layers first, then moe layers")
        flat["num_hash_layers"] = n_hash
        del flat["mlp_layer_types"]


def _mamba(flat: dict, where: str) -> None:
    # MambaConfig / FalconMambaConfig: every layer is one RMSNorm + a Mamba-1 mixer of intermediate_size
    # channels (expand·d), state_size N, time_step_rank R, no MLP and no attention: the one-block-per-layer
    # pattern of Nemotron-H ("M" per layer). FalconMamba's mixer RMSNorms have no weights (FalconMamba
    # WeightlessRMSNorm).
    n = flat.get("num_hidden_layers")
    if not isinstance(n, int) or "hybrid_override_pattern" in flat:
        return
    flat["hybrid_override_pattern"] = "M" * n
    for old, new in (("intermediate_size", "mamba_d_inner"), ("state_size", "ssm_state_size"),
                     ("time_step_rank", "mamba_dt_rank"), ("use_bias", "mamba_proj_bias")):
        if old in flat:
            flat[new] = flat.pop(old)
    flat.pop("expand", None)  # intermediate_size states the width; expand is what it was made from
    for key in ("use_associative_scan", "use_mambapy", "time_step_init_scheme"):  # which scan runs; init
        flat.pop(key, None)
    # MambaConfig stores pad_vocab_size_multiple but builds vocab_size rows (vocab_size is the padded count);
    # rms_norm: MambaRMSNorm is built whatever it says
    flat.pop("pad_vocab_size_multiple", None)
    flat.pop("rms_norm", None)


def _mamba2(flat: dict, where: str) -> None:
    # Mamba2Config: one RMSNorm + a Mamba-2 mixer per layer (num_heads x head_dim = expand·d, n_groups,
    # state_size), no MLP, no attention; time_step_rank is stored but shapes nothing (Mamba2Mixer's dt is
    # one per head, in in_proj).
    n = flat.get("num_hidden_layers")
    if not isinstance(n, int) or "hybrid_override_pattern" in flat:
        return
    flat["hybrid_override_pattern"] = "M" * n
    for old, new in (("num_heads", "mamba_num_heads"), ("head_dim", "mamba_head_dim"),
                     ("state_size", "ssm_state_size"), ("use_bias", "mamba_proj_bias")):
        if old in flat:
            flat[new] = flat.pop(old)
    expand, d = flat.pop("expand", None), flat.get("hidden_size")
    heads, dim = flat.get("mamba_num_heads"), flat.get("mamba_head_dim")
    if all(isinstance(v, int) for v in (expand, d, heads, dim)) and expand * d != heads * dim:
        raise CatalogError(f"{where}: expand x hidden_size ({expand} x {d}) differs from num_heads x head_dim "
                           f"({heads} x {dim}); fix one of them")
    flat.pop("time_step_rank", None)
    # Mamba2Config: norm_before_gate orders the gated RMSNorm (dataflow, the same weights); rms_norm is stored,
    # MambaRMSNormGated is built whatever it says
    flat.pop("norm_before_gate", None)
    flat.pop("rms_norm", None)


def _jamba(flat: dict, where: str) -> None:
    # JambaConfig: attention at layer i iff i % attn_layer_period == attn_layer_offset, else a Mamba-1 mixer
    # (mamba_expand·d channels, mamba_d_state, mamba_dt_rank, RMSNorms of dt, B, C); MoE at i iff
    # i % expert_layer_period == expert_layer_offset, else the gated MLP (JambaConfig.layers_block_type,
    # layers_num_experts).
    n = flat.get("num_hidden_layers")
    keys = ("attn_layer_period", "attn_layer_offset", "expert_layer_period", "expert_layer_offset")
    if not isinstance(n, int) or not all(isinstance(flat.get(k), int) for k in keys):
        return
    ap, ao, ep, eo = (flat.pop(k) for k in keys)
    if ap < 1 or ep < 1:
        raise CatalogError(f"{where}: attn_layer_period and expert_layer_period must be >= 1")
    flat.setdefault("layer_types", ["full_attention" if i % ap == ao else "linear_attention" for i in range(n)])
    flat.setdefault("moe_layers", [i for i in range(n) if i % ep == eo])
    d, expand = flat.get("hidden_size"), flat.pop("mamba_expand", None)
    if isinstance(d, int) and isinstance(expand, int):
        flat["mamba_d_inner"] = expand * d
    rank = flat.get("mamba_dt_rank")
    if rank == "auto" and isinstance(d, int):
        flat["mamba_dt_rank"] = -(-d // 16)  # JambaConfig: math.ceil(hidden_size / 16)
    flat["mamba_dt_norms"] = True
    for key in ("use_associative_scan", "use_mambapy"):
        flat.pop(key, None)


def _lfm2_legacy(flat: dict, where: str) -> None:
    # the training code's switches: a SwiGLU MLP (the family's gated MLP) and RoPE; initialisation scales
    if flat.pop("block_use_swiglu", True) is not True:
        raise CatalogError(f"{where}: block_use_swiglu false (a non-gated MLP) is not what Lfm2MLP builds")
    flat.pop("use_pos_enc", None)
    for key in [k for k in flat if k.endswith(("_init_scale", "_use_xavier_init"))]:
        flat.pop(key)


def _lfm2(flat: dict, where: str) -> None:
    _lfm2_legacy(flat, where)
    # Lfm2Config: layer_types "conv" (gated short convolution, conv_L_cache taps, conv_bias) or
    # "full_attention"; the MLP width is int(2·intermediate_size/3), times block_ffn_dim_multiplier rounded
    # up to block_multiple_of, when block_auto_adjust_ff_dim (Lfm2MLP).
    types = flat.get("layer_types")
    if isinstance(types, list):
        flat["layer_types"] = ["linear_attention" if t == "conv" else t for t in types]
    flat.pop("full_attn_idxs", None)  # the compact form layer_types is made from
    if "conv_L_cache" in flat:
        flat["short_conv_kernel"] = flat.pop("conv_L_cache")
    flat["short_conv_bias"] = flat.pop("conv_bias", False)
    width, auto = flat.get("intermediate_size"), flat.pop("block_auto_adjust_ff_dim", False)
    mult, multiple = flat.pop("block_ffn_dim_multiplier", None), flat.pop("block_multiple_of", 256)
    if auto and isinstance(width, int):
        width = int(2 * width / 3)
        if mult is not None:
            width = int(mult * width)
            width = multiple * ((width + multiple - 1) // multiple)
        flat["intermediate_size"] = width


def _gpt_neox_japanese(flat: dict, where: str) -> None:
    # GPTNeoXJapaneseMLP: int(hidden_size · intermediate_multiple_size) wide
    mult, d = flat.pop("intermediate_multiple_size", None), flat.get("hidden_size")
    if isinstance(mult, (int, float)) and isinstance(d, int) and flat.get("intermediate_size") is None:
        flat["intermediate_size"] = int(d * mult)
    flat.pop("is_decoder", None)


def _lfm3(flat: dict, where: str) -> None:
    # Lfm3Config: LFM2's conv / attention layers (sliding ones too) with intermediate_size as is, a per-head
    # attention gate (use_attention_gate: d -> heads, Lfm3Attention) and, with use_sandwich_norm, norms after
    # both blocks as well (4 per layer, Lfm3DecoderLayer)
    flat.setdefault("block_auto_adjust_ff_dim", False)
    _lfm2(flat, where)
    if flat.pop("use_attention_gate", False) is True:
        flat.setdefault("gating", "per-head")
    if flat.pop("use_sandwich_norm", False) is True:
        flat["_norms_per_layer"] = 4


def _minimax(flat: dict, where: str) -> None:
    # MiniMaxConfig (MiniMax-Text-01): layer_types linear_attention = lightning attention with the attention
    # heads (MiniMaxLightningAttention), block_size its kernel's chunk length (tiling: the same recurrence);
    # *_alpha_factor / *_beta_factor scale the residual and the block output (MiniMaxDecoderLayer): values.
    flat.pop("block_size", None)
    for key in [k for k in flat if k.endswith(("_alpha_factor", "_beta_factor"))]:
        flat.pop(key)
    if isinstance(flat.get("layer_types"), list) and "linear_attention" in flat["layer_types"]:
        flat["lightning_attention"] = True


def _modernbert_decoder(flat: dict, where: str) -> None:
    # ModernBertDecoderConfig: decoder_bias = the output head's bias; local_attention is the encoder's two-sided
    # window (the decoder's sliding layers use sliding_window: ModernBertDecoderAttention); norm_bias adds a
    # bias to every LayerNorm (without it a LayerNorm has d weights, as an RMSNorm)
    if "decoder_bias" in flat:
        flat.setdefault("lm_head_bias", flat.pop("decoder_bias"))
    flat.pop("local_attention", None)
    if flat.pop("norm_bias", False) is True:
        flat["_norm"] = "layer"


def _recurrent_gemma(flat: dict, where: str) -> None:
    # RecurrentGemmaConfig: block_types repeated over the layers (layers_block_type): "recurrent" = a Griffin
    # recurrent block of lru_width channels (conv1d_width taps, the attention heads as RG-LRU gate blocks),
    # "attention" = local attention over attention_window_size tokens; the MLP is gated, intermediate_size // 2
    # wide (RecurrentGemmaMlp), with biases; the attention output projection has a bias
    blocks, n = flat.pop("block_types", None), flat.get("num_hidden_layers")
    if not isinstance(blocks, list) or not isinstance(n, int) or not blocks:
        return
    table = {"recurrent": "linear_attention", "attention": "sliding_attention"}
    if any(b not in table for b in blocks):
        raise CatalogError(f"{where}: block_types entries must be 'recurrent' or 'attention', got {blocks}")
    flat["layer_types"] = [table[blocks[i % len(blocks)]] for i in range(n)]
    if "attention_window_size" in flat:
        flat["sliding_window"] = flat.pop("attention_window_size")
    if isinstance(flat.get("intermediate_size"), int):
        flat["intermediate_size"] //= 2
    flat["rglru_width"] = flat.pop("lru_width", flat.get("hidden_size"))
    flat["rglru_conv_width"] = flat.pop("conv1d_width", 4)
    for key in ("w_init_variance_scale", "final_w_init_variance_scale"):  # initialisation
        flat.pop(key, None)
    flat.setdefault("mlp_bias", True)


def _doge(flat: dict, where: str) -> None:
    # DogeConfig / DogeDecoderLayer: is_moe switches the MLP to a cross-domain MoE of num_experts single-neuron
    # experts (DogeCDMoE: product-key router, up/down embeddings), not modelled: refused. With is_moe false the
    # num_experts / num_experts_per_tok / router fields build nothing. keep_window_size: the dynamic mask keeps
    # the top keep_window_size keys per query (DogeAttention, only past that length); every key stays in the
    # cache and transformers computes every score before masking, so bytes are unchanged and the FLOPs counted
    # are those of full attention (what transformers runs; a kernel that skips masked keys would do less).
    # input_residual / post_attention_residual are d-weight vectors per layer: counted as two more norms.
    if flat.get("is_moe") is True:
        raise CatalogError(f"{where}: field 'is_moe' = True (Doge's cross-domain MoE of single-neuron experts with "
                           "a product-key router) is not modelled by llmecon; workaround: none (set is_moe false "
                           "only for the dense model)")
    if flat.pop("is_moe", False) is False:
        for key in ("num_experts", "num_experts_per_tok", "norm_topk_prob", "output_router_logits",
                    "router_aux_loss_coef"):
            flat.pop(key, None)
    flat.pop("keep_window_size", None)
    flat["_norms_per_layer"] = 4


def _cpmant(flat: dict, where: str) -> None:
    # CpmAntForCausalLM (CPM-Ant): pre-norm layers (CpmAntLayerNorm: a weight, no bias), q/k/v/o without bias,
    # a gated GELU FFN (w_0, w_1, w_out), a T5-style relative position bias (position_bias_*: heads x buckets
    # + segment-pair weights added to the scores, positional). Its input table has vocab_size +
    # prompt_types·prompt_length rows and a segment table of segment_types rows (looked up per token, not
    # matmuls): both omitted (4.3M, 0.05% of the default), with the position bias (49k). The head has
    # vocab_size rows, a tensor of its own whatever tie_word_embeddings says (CpmAntForCausalLM._tied_weights_keys
    # is empty: the shapes differ).
    for key in ("init_std", "position_bias_max_distance", "position_bias_num_buckets", "prompt_length",
                "prompt_types", "segment_types"):
        flat.pop(key, None)
    flat["tie_word_embeddings"] = False


# model_type -> its rule (after the aliases)
_RULES = {
    "opt": _opt, "falcon": _falcon, "gpt_neo": _gpt_neo, "mpt": _mpt, "gpt_neox_japanese": _gpt_neox_japanese,
    "kimi_linear": _kimi_linear, "bailing_hybrid": _bailing_hybrid, "deepseek_v4": _deepseek_v4,
    "mamba": _mamba, "falcon_mamba": _mamba, "mamba2": _mamba2, "jamba": _jamba, "lfm2": _lfm2, "lfm3": _lfm3,
    "recurrent_gemma": _recurrent_gemma, "minimax": _minimax, "modernbert-decoder": _modernbert_decoder,
    "longcat_flash": _longcat_flash, "doge": _doge, "cpmant": _cpmant,
}
