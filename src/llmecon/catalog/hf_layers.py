"""Per-layer structure, linear mixers, weight formats and field policy for ``hf_config``.

``read_structure`` turns the per-layer fields of a Hugging Face config (``layer_types``,
``hybrid_override_pattern``, ``layers_block_type``, Kimi's ``linear_attn_config``, MiMo's
``hybrid_layer_pattern``, DeciLM ``block_configs``, per-layer ``moe_layer_freq`` lists,
``mlp_layer_types``, GLM's ``indexer_types``, MiniMax's ``sparse_attention_config``) into the
per-layer tuples of ``Model``. It follows the lists exactly: one entry per decoder layer, every
entry a known kind, else an error naming the field and the entry.

``weight_formats`` reads ``quantization_config`` and an ``hf_quant_config.json`` (NVIDIA
ModelOpt) into the default weight formats per tensor group (non-expert, dense FFN/shared
experts, routed experts).

``COSMETIC_FIELDS`` / ``COSMETIC_PATTERNS`` list keys that do not change parameter counts, bytes or
FLOPs (ignored); ``MATH_FIELDS_REFUSED`` lists keys that do change them but are not modelled
(refused unless at their neutral value). Any other unknown key is refused naming it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from ..errors import CatalogError
from ..spec.layers import Attention, LinearMixer

# ---- field policy ------------------------------------------------------------------------------
COSMETIC_FIELDS: dict[str, frozenset[str]] = {
    # Generation defaults (transformers PretrainedConfig/GenerationConfig): sampling, not shapes.
    "generation": frozenset({
        "bad_words_ids", "begin_suppress_tokens", "diversity_penalty", "do_sample", "early_stopping",
        "encoder_no_repeat_ngram_size", "exponential_decay_length_penalty", "forced_bos_token_id",
        "forced_eos_token_id", "length_penalty", "max_length", "min_length", "no_repeat_ngram_size",
        "num_beam_groups", "num_beams", "num_return_sequences", "output_scores", "remove_invalid_values",
        "repetition_penalty", "return_dict_in_generate", "suppress_tokens", "temperature", "top_k", "top_p",
        "typical_p", "num_logits_to_keep"}),
    # transformers bookkeeping: task heads, outputs, serialisation, encoder-decoder flags off.
    "bookkeeping": frozenset({
        "add_cross_attention", "chunk_size_feed_forward", "cross_attention_hidden_size", "finetuning_task",
        "id2label", "label2id", "is_decoder", "output_attentions", "output_hidden_states", "prefix",
        "problem_type", "pruned_heads", "tf_legacy_loss", "tie_encoder_decoder", "tokenizer_class",
        "ignore_index", "language_model_only", "use_mamba_kernels", "use_bidirectional_attention"}),
    # Numerics that leave every shape alone: norm epsilons, init, residual precision, activation
    # constants, router scoring/scaling, positional-encoding variants (RoPE has no weights).
    "numerics": frozenset({
        "layernorm_epsilon", "norm_eps", "rescale_prenorm_residual", "residual_in_fp32", "time_step_floor",
        "time_step_limit", "time_step_max", "time_step_min", "time_step_rank", "mamba_hidden_act",
        "mlp_hidden_act", "activation_situ_beta", "activation_situ_linear_beta", "swiglu_alpha",
        "attention_value_scale", "moe_router_scaling_factor", "moe_router_activation_func", "moe_renormalize",
        "moe_router_dtype", "moe_shared_expert_overlap", "use_grouped_topk", "num_expert_group", "rotary_dim",
        "compress_rope_theta", "swa_rope_theta", "use_mrope", "rope_interleave", "indexer_rope_interleave",
        "qk_norm_type", "use_gemma_norm", "mla_use_nope", "hc_eps", "hc_sinkhorn_iters", "chunk_size",
        "index_share_for_mtp_iteration", "mamba_ssm_cache_dtype", "mamba_ssm_dtype", "gate_lower_bound",
        "output_gate_type", "attn_output_gate_type",
        # Kimi Attention Residuals (block size of the depth-wise softmax over earlier block outputs):
        # one d-vector query and norm per layer (< 0.01% of parameters) and O(blocks·d) FLOPs per
        # token, both omitted.
        "attn_res_block_size"}),
    # Multimodal wrapper: special tokens and the vision/audio towers, which are not counted (the
    # language model is what serving cost is computed for; say so in the model's assumptions).
    "multimodal": frozenset({
        "audio_config", "vision_soft_tokens_per_image", "image_grid_pinpoints", "image_seq_length",
        "img_token_compression_config", "multimodal_projector_bias", "process_image_mode",
        "projector_hidden_act", "projector_hidden_size", "vision_feature_layer", "vision_feature_select_strategy",
        "image_placeholder", "video_placeholder", "use_unified_vision_chunk", "num_reward_heads"}),
}
COSMETIC_PATTERNS = (
    re.compile(r".*_token_(id|index)s?$"),   # special-token ids
    re.compile(r".*(dropout|_pdrop)$"),     # training-only
    re.compile(r"^(vision|audio|image|video)_.*"),  # multimodal towers and tokens (not counted)
)
MATH_FIELDS_REFUSED: dict[str, tuple[object, str]] = {
    # key: (neutral value, what it would change)
    "hidden_size_per_layer_input": (0, "per-layer input embeddings (Gemma 3n style) add parameters"),
    "num_kv_shared_layers": (0, "layers sharing another layer's KV cache change KV bytes"),
    "use_double_wide_mlp": (False, "double-width MLP layers change FFN parameters"),
    "moe_latent_size_per_layer": (None, "per-layer latent sizes"),
}


def is_cosmetic(key: str) -> bool:
    return any(key in group for group in COSMETIC_FIELDS.values()) or any(p.match(key) for p in COSMETIC_PATTERNS)


def check_refused(flat: Mapping, where: str) -> None:
    for key, (neutral, why) in MATH_FIELDS_REFUSED.items():
        if key in flat and flat[key] not in (neutral, None):
            raise CatalogError(f"{where}: field '{key}' = {flat[key]!r} is not modelled ({why}); only "
                               f"{neutral!r} is read")


# ---- per-layer structure -----------------------------------------------------------------------
def _int_list(f, key: str, n: int | None, where: str) -> list[int]:
    values = f.get(key, list)
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        raise CatalogError(f"{where}: field '{key}' must be a list of whole numbers")
    if n is not None and len(values) != n:
        raise CatalogError(f"{where}: field '{key}' has {len(values)} entries for {n} layers")
    return values


def _pattern_kinds(f, n_layers: int, where: str) -> list[str] | None:
    """Nemotron-H: one block per layer: M = Mamba-2, * = attention, - = MLP, E = MoE."""
    if f.has("hybrid_override_pattern"):
        pattern = f.get("hybrid_override_pattern", str)
        table = {"M": "mamba", "*": "attention", "-": "mlp", "E": "moe"}
        key = "hybrid_override_pattern"
    elif f.has("layers_block_type"):
        pattern = f.get("layers_block_type", list)
        table = {"mamba": "mamba", "attention": "attention", "mlp": "mlp", "moe": "moe"}
        key = "layers_block_type"
    else:
        return None
    if len(pattern) != n_layers:
        raise CatalogError(f"{where}: field '{key}' has {len(pattern)} entries for {n_layers} layers")
    out = []
    for i, c in enumerate(pattern):
        if c not in table:
            raise CatalogError(f"{where}: {key}[{i}] = {c!r} is not one of {', '.join(map(repr, table))}")
        out.append(table[c])
    return out


def read_structure(f, *, n_layers: int, d: int, attention: Attention, windows: list[int], moe_mask: list[bool],
                   dense_width: int | None, where: str, assumptions: list[str]) -> dict:
    """Per-layer Model fields beyond windows and MoE mask (which may be replaced here)."""
    out: dict = {}
    mixers = ["attention"] * n_layers
    ffn = [0 if m else (dense_width or 0) for m in moe_mask]
    kinds = _pattern_kinds(f, n_layers, where)
    if kinds is not None:
        mixers = ["linear" if k == "mamba" else ("attention" if k == "attention" else "none") for k in kinds]
        moe_mask = [k == "moe" for k in kinds]
        ffn = [dense_width or 0 if k == "mlp" else 0 for k in kinds]
        if "mlp" in kinds and not dense_width:
            raise CatalogError(f"{where}: MLP layers in the pattern need 'intermediate_size'")
        if "mamba" in kinds:
            out["linear"] = _mamba2(f, d, where)
        out["norms_per_layer"] = 1
        assumptions.append("hybrid pattern: each layer is one block (Mamba-2, attention, MLP or MoE) with one "
                           "pre-norm (Nemotron-H)")
    if f.has("layer_types"):
        types = f.get("layer_types", list)
        if len(types) != n_layers:
            raise CatalogError(f"{where}: field 'layer_types' has {len(types)} entries for {n_layers} layers")
        if "linear_attention" in types:
            mixers = ["linear" if t == "linear_attention" else "attention" for t in types]
            out["linear"] = _gated_deltanet(f, where)
    if f.has("linear_attn_config"):
        mixers, linear = _kimi_linear(f, n_layers, where)
        out["linear"] = linear
    if f.has("moe_layer_freq") and isinstance(f.config.get("moe_layer_freq"), list):
        moe_mask = [bool(v) for v in _int_list(f, "moe_layer_freq", n_layers, where)]
        width = f.first(("dense_intermediate_size", "intermediate_size"), int, minimum=1)
        ffn = [0 if m else (width or 0) for m in moe_mask]
    if f.has("mlp_layer_types"):
        types = f.get("mlp_layer_types", list)
        table = {"dense": False, "sparse": True}
        if len(types) != n_layers or any(t not in table for t in types):
            raise CatalogError(f"{where}: field 'mlp_layer_types' must list 'dense' or 'sparse' for each of "
                               f"{n_layers} layers")
        if [table[t] for t in types] != moe_mask:
            raise CatalogError(f"{where}: field 'mlp_layer_types' disagrees with first_k_dense_replace/moe_layer_freq")
    if f.has("block_configs"):
        mixers, ffn, kv_heads = _decilm_blocks(f, n_layers, d, where)
        out["decilm_kv_heads"] = kv_heads
    out.update(layer_mixers=tuple(mixers), layer_ffn_dims=tuple(ffn), moe_layers=tuple(moe_mask),
               layer_windows=tuple(w if m == "attention" else 0 for w, m in zip(windows, mixers)))
    if any(m == "none" for m in mixers) and kinds is None:
        assumptions.append(f"{mixers.count('none')} layers without attention (no-op blocks)")
    out["layer_sparsity"] = _sparsity(f, n_layers, attention, where)
    return out


def _sparsity(f, n_layers: int, attention: Attention, where: str) -> tuple[str, ...] | tuple:
    if not attention.is_sparse:
        return ()
    if f.has("indexer_types"):
        types = f.get("indexer_types", list)
        table = {"full": "indexed", "shared": "shared"}
        if len(types) != n_layers or any(t not in table for t in types):
            raise CatalogError(f"{where}: field 'indexer_types' must list 'full' or 'shared' for each of "
                               f"{n_layers} layers")
        return tuple(table[t] for t in types)
    freq = (f.config.get("sparse_attention_config") or {}).get("sparse_attention_freq")
    if freq is not None:
        if not isinstance(freq, list) or len(freq) != n_layers or any(v not in (0, 1) for v in freq):
            raise CatalogError(f"{where}: sparse_attention_config.sparse_attention_freq must list 0 or 1 for each "
                               f"of {n_layers} layers")
        return tuple("indexed" if v else "dense" for v in freq)
    for key in ("index_topk_freq", "index_skip_topk_offset", "index_topk_pattern"):
        if f.has(key):
            raise CatalogError(f"{where}: field '{key}' without 'indexer_types' is not read; give indexer_types")
    return ()


def _gated_deltanet(f, where: str) -> LinearMixer:
    need = ("linear_num_value_heads", "linear_num_key_heads", "linear_key_head_dim", "linear_value_head_dim",
            "linear_conv_kernel_dim")
    v = {k: f.get(k, int, required=True, minimum=1) for k in need}
    return LinearMixer(kind="gated_deltanet", n_heads=v["linear_num_value_heads"],
                       n_key_heads=v["linear_num_key_heads"], key_dim=v["linear_key_head_dim"],
                       value_dim=v["linear_value_head_dim"], conv_kernel=v["linear_conv_kernel_dim"],
                       state_dtype=_state_dtype(f, "mamba_ssm_dtype"))


def _state_dtype(f, key: str) -> str:
    raw = f.get(key, str, default="float32")
    return {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}.get(raw, "fp32")


def _mamba2(f, d: int, where: str) -> LinearMixer:
    heads = f.get("mamba_num_heads", int, required=True, minimum=1)
    head_dim = f.get("mamba_head_dim", int, required=True, minimum=1)
    return LinearMixer(kind="mamba2", n_heads=heads, value_dim=head_dim,
                       n_key_heads=f.get("n_groups", int, required=True, minimum=1),
                       key_dim=f.get("ssm_state_size", int, required=True, minimum=1),
                       conv_kernel=f.get("conv_kernel", int, required=True, minimum=1),
                       conv_bias=f.get("use_conv_bias", bool, default=True),
                       proj_bias=f.get("use_bias", bool, default=False) or f.get("mamba_proj_bias", bool, default=False),
                       state_dtype=_state_dtype(f, "mamba_ssm_cache_dtype"))


def _kimi_linear(f, n_layers: int, where: str) -> tuple[list[str], LinearMixer]:
    """Kimi Linear ``linear_attn_config``: ``kda_layers`` and ``full_attn_layers`` are 1-based
    layer numbers (Kimi-Linear-48B-A3B config.json: kda_layers [1, 2, 3, 5, ...], full [4, 8, ...])."""
    cfg = f.get("linear_attn_config", dict)
    kda, full = cfg.get("kda_layers"), cfg.get("full_attn_layers")
    if not isinstance(kda, list) or not isinstance(full, list):
        raise CatalogError(f"{where}: linear_attn_config needs 'kda_layers' and 'full_attn_layers' lists")
    if sorted(kda + full) != list(range(1, n_layers + 1)):
        raise CatalogError(f"{where}: linear_attn_config kda_layers + full_attn_layers must number the layers "
                           f"1..{n_layers} once each")
    for key in ("num_heads", "head_dim", "short_conv_kernel_size"):
        if not isinstance(cfg.get(key), int) or cfg[key] < 1:
            raise CatalogError(f"{where}: linear_attn_config is missing '{key}' (a whole number)")
    kda_set = set(kda)
    mixers = ["linear" if i + 1 in kda_set else "attention" for i in range(n_layers)]
    return mixers, LinearMixer(kind="kda", n_heads=cfg["num_heads"], n_key_heads=cfg["num_heads"],
                               key_dim=cfg["head_dim"], value_dim=cfg["head_dim"],
                               conv_kernel=cfg["short_conv_kernel_size"])


def _decilm_blocks(f, n_layers: int, d: int, where: str) -> tuple[list[str], list[int], list[int]]:
    """DeciLM / Llama-Nemotron NAS ``block_configs``: per layer, attention is a no-op or GQA with
    n_heads / n_heads_in_group KV heads; the FFN width is ffn_mult·2d/3 rounded up to a multiple of
    256 (nvidia/Llama-3_3-Nemotron-Super-49B-v1 modeling_decilm.py ``_ffn_mult_to_intermediate_size``)."""
    blocks = f.get("block_configs", list)
    if len(blocks) != n_layers:
        raise CatalogError(f"{where}: field 'block_configs' has {len(blocks)} entries for {n_layers} layers")
    mixers, ffn, kv = [], [], []
    for i, b in enumerate(blocks):
        att, mlp = (b or {}).get("attention", {}), (b or {}).get("ffn", {})
        for part, key in ((att, "attention"), (mlp, "ffn")):
            for bad in ("replace_with_linear", "sparsify", "window_length", "num_sink_tokens"):
                if part.get(bad) not in (None, False):
                    raise CatalogError(f"{where}: block_configs[{i}].{key}.{bad} = {part[bad]!r} is not modelled")
        if att.get("no_op"):
            mixers.append("none")
            kv.append(0)
        else:
            group = att.get("n_heads_in_group")
            if not isinstance(group, int) or group < 1:
                raise CatalogError(f"{where}: block_configs[{i}].attention.n_heads_in_group must be a whole number")
            mixers.append("attention")
            kv.append(group)
        if mlp.get("no_op"):
            ffn.append(0)
        else:
            mult = mlp.get("ffn_mult")
            if not isinstance(mult, (int, float)) or mult <= 0:
                raise CatalogError(f"{where}: block_configs[{i}].ffn.ffn_mult must be a positive number")
            width = int(2 * mult * d / 3)
            ffn.append(-(-width // 256) * 256)
    return mixers, ffn, kv


# ---- weight formats ---------------------------------------------------------------------------
_ATTN_MARKERS = ("self_attn", "attn", "linear_attn", "mixer")


def _bits_format(num_bits, kind, group) -> str | None:
    if num_bits == 4 and kind == "float":
        return {16: "nvfp4", 32: "mxfp4"}.get(group)
    if num_bits == 4 and kind == "int":
        return "int4"
    if num_bits == 8:
        return "fp8" if kind == "float" else "int8"
    return None


def weight_formats(quant: Mapping, hf_quant: Mapping | None, base: str, is_moe: bool,
                   assumptions: list[str]) -> tuple[str, str, str] | None:
    """(non-expert, dense-FFN/shared, routed-expert) weight formats, or None when not understood.

    ModelOpt ``hf_quant_config.json`` (``quantization.quant_algo`` NVFP4 / FP8 / MIXED_PRECISION,
    ``exclude_modules``) and compressed-tensors ``config_groups`` (num_bits, type, group_size;
    ``ignore``). 4-bit float with 16-element groups is NVFP4 (fp8 scale / 16), with 32 MXFP4
    (e8m0 scale / 32); their scale bytes are in the dtype. Excluded modules stay at ``base``: when
    the exclusions name attention, attention stays; shared experts likewise.
    """
    algo, excluded, fmt = "", [], None
    if hf_quant:
        q = hf_quant.get("quantization", hf_quant)
        algo = str(q.get("quant_algo") or "").upper()
        excluded = q.get("exclude_modules") or []
        group = q.get("group_size")
        if algo == "MIXED_PRECISION":
            layers = q.get("quantized_layers") or {}
            algos = {str(v.get("quant_algo", "")).upper() for v in layers.values() if isinstance(v, Mapping)}
            expert_algos = {str(v.get("quant_algo", "")).upper() for k, v in layers.items()
                            if "expert" in k and isinstance(v, Mapping)}
            pick = expert_algos or algos
            if pick == {"NVFP4"}:
                fmt = "nvfp4"
            elif pick == {"FP8"}:
                fmt = "fp8"
            else:
                assumptions.append(f"hf_quant_config mixed precision {sorted(algos)} not modelled per tensor: "
                                   f"weights taken as {base}")
                return None
        else:
            fmt = {"NVFP4": "nvfp4", "FP8": "fp8", "MXFP4": "mxfp4"}.get(algo)
            if algo == "NVFP4" and group not in (None, 16):
                fmt = None
    elif quant.get("config_groups"):
        groups = [g for g in quant["config_groups"].values() if isinstance(g, Mapping)]
        weights = [g.get("weights") or {} for g in groups]
        fmts = {_bits_format(w.get("num_bits"), w.get("type"), w.get("group_size")) for w in weights}
        if len(fmts) == 1 and None not in fmts:
            fmt = fmts.pop()
        excluded = quant.get("ignore") or []
    if fmt is None:
        return None
    text = " ".join(map(str, excluded)) if not isinstance(excluded, str) else excluded
    attn_kept = any(m in text for m in _ATTN_MARKERS)
    shared_kept = "shared_expert" in text
    if is_moe:
        non_expert = base if attn_kept else fmt
        ffn = base if shared_kept else fmt
        assumptions.append(f"weights: routed experts {fmt}, dense FFN/shared experts {ffn}, attention, "
                           f"embeddings and head {non_expert} (quantization config)")
        return non_expert, ffn, fmt
    non_expert = base if attn_kept else fmt
    assumptions.append(f"weights: FFN {fmt}, attention/embeddings/head {non_expert} (quantization config)")
    return non_expert, fmt, fmt


# ---- multimodal encoders (counted apart) ------------------------------------------------------
def vision_tower_params(cfg: Mapping | None) -> int:
    """Estimated weights of a ViT vision encoder from its ``vision_config``: ``depth`` blocks of
    attention (q, k, v, o with biases: 4h² + 4h), a 2-matrix MLP with biases (2·h·i + h + i) and
    two LayerNorms (4h); a patch embedding (channels·patch²·temporal·h + h), learned position
    embeddings (positions·h) and, when ``out_hidden_size`` is given, the Qwen-VL patch merger
    (LayerNorm, (h·m²)² + h·m² and h·m² x out + out with m = spatial_merge_size). An estimate for
    the answer to "is the vision tower in the published size": llmecon's ``total`` never counts
    it (serving cost is the language model's); DeepStack mergers, gated MLPs and audio towers
    are omitted. 0 when the config gives no depth or width."""
    if not isinstance(cfg, Mapping):
        return 0
    depth = cfg.get("depth") or cfg.get("num_hidden_layers")
    h, i = cfg.get("hidden_size"), cfg.get("intermediate_size")
    if not all(isinstance(v, int) and v > 0 for v in (depth, h, i)):
        return 0
    block = 4 * h * h + 4 * h + 2 * h * i + h + i + 4 * h
    patch = cfg.get("patch_size") or 0
    embed = (cfg.get("in_channels") or 3) * patch * patch * (cfg.get("temporal_patch_size") or 1) * h + h
    positions = (cfg.get("num_position_embeddings") or cfg.get("position_embedding_size") or 0) * h
    merger = 0
    out = cfg.get("out_hidden_size")
    if isinstance(out, int) and out > 0:
        hm = h * (cfg.get("spatial_merge_size") or 1) ** 2
        merger = 2 * h + hm * hm + hm + hm * out + out
    return int(depth * block + embed + positions + merger)
