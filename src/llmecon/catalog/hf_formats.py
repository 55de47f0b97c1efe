"""Field policy, weight formats and multimodal encoders for ``hf_config``.

``COSMETIC_FIELDS`` / ``COSMETIC_PATTERNS`` list keys that do not change parameter counts, bytes or
FLOPs (ignored); ``MATH_FIELDS_REFUSED`` lists keys that do change them but are not modelled
(refused unless at their neutral value). Any other unknown key is refused by ``hf_config``,
naming it. ``weight_formats`` reads ``quantization_config`` and an ``hf_quant_config.json``
(NVIDIA ModelOpt) into default weight formats per tensor group; ``vision_tower_params``
estimates a multimodal wrapper's vision encoder (reported apart, never in the totals).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from ..errors import CatalogError

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
        "index_share_for_mtp_iteration", "gate_lower_bound",
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
    "num_kv_shared_layers": (0, "layers sharing another layer's KV cache change KV bytes"),
    "use_double_wide_mlp": (False, "double-width MLP layers change FFN parameters"),
    "moe_latent_size_per_layer": (None, "per-layer latent sizes"),
    # PretrainedConfig keys that are cosmetic at their default but add layers when set
    "add_cross_attention": (False, "cross-attention blocks over an encoder's output add parameters and FLOPs"),
    "cross_attention_hidden_size": (None, "the width of an encoder the cross-attention blocks read"),
}


def is_cosmetic(key: str) -> bool:
    return any(key in group for group in COSMETIC_FIELDS.values()) or any(p.match(key) for p in COSMETIC_PATTERNS)


def check_refused(flat: Mapping, where: str) -> None:
    for key, (neutral, why) in MATH_FIELDS_REFUSED.items():
        if key in flat and flat[key] not in (neutral, None):
            raise CatalogError(f"{where}: field '{key}' = {flat[key]!r} is not modelled ({why}); only "
                               f"{neutral!r} is read")


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


_DTYPES = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}
_EXPERT_DTYPES = {"fp4": "mxfp4", "fp8": "fp8"}  # DeepSeek-V4 ``expert_dtype``


def _fp8_format(quant: Mapping, where: str, assumptions: list[str]) -> str:
    """``fp8_block`` for an fp8 checkpoint with ``weight_block_size`` (one scale per block of weights:
    DeepSeek-V3/R1/V3.2/V4, Kimi-K2, MiMo-V2-Flash, [128, 128]), else per-tensor ``fp8``. The bytes and
    peak are the same; the step prices the block-scaled kernels' measured terms (dtypes.fp8_block), as
    engines serve a block checkpoint with them (SGLang/vLLM ``fp8.py`` block path, TensorRT-LLM FP8
    block scales) and as ``fidelity.silicon`` reads the same configs. Another block shape is priced
    with the 128x128 kernels' terms (the only block-scaled tables measured), said in the assumptions."""
    block = quant.get("weight_block_size")
    if not block:
        return "fp8"
    if not (isinstance(block, (list, tuple)) and len(block) == 2
            and all(type(b) is int and b > 0 for b in block)):
        raise CatalogError(f"{where}: field 'quantization_config.weight_block_size' = {block!r} is not two "
                           "positive integers (rows, columns of a weight block, e.g. [128, 128])")
    if list(block) != [128, 128]:
        assumptions.append(f"quantization_config weight_block_size {list(block)}: priced with the 128x128 "
                           "block-scaled fp8 kernels' terms (the only block shape measured)")
    return "fp8_block"


def weight_dtypes(f, where: str, assumptions: list[str], hf_quant: Mapping | None = None,
                   is_moe: bool = False) -> tuple[str, str, str]:
    """(non-expert, routed-expert, dense-FFN/shared) default weight formats from torch_dtype,
    quantization_config and an hf_quant_config.json (``hf_layers.weight_formats``)."""
    quant = f.get("quantization_config", dict, default={})
    method = str(quant.get("quant_method", "")).lower()
    raw = f.first(("torch_dtype", "dtype"), str)
    base = _DTYPES.get(raw or "", None)
    if base is None:
        base = "bf16"
        assumptions.append(f"torch_dtype {'absent' if raw is None else repr(raw)}: weights taken as bf16")
    expert_raw = f.get("expert_dtype", str)
    if expert_raw is not None and expert_raw not in _EXPERT_DTYPES:
        raise CatalogError(f"{where}: field 'expert_dtype' = {expert_raw!r} is not one of {', '.join(_EXPERT_DTYPES)}")
    fp8 = _fp8_format(quant, where, assumptions) if method == "fp8" else ""
    if method == "fp8" and not hf_quant:
        if expert_raw is not None:  # DeepSeek-V4: routed experts fp4, the rest (shared experts too) fp8 blocks
            expert = fp8 if expert_raw == "fp8" else _EXPERT_DTYPES[expert_raw]
            assumptions.append(f"expert_dtype {expert_raw}: routed experts {expert} (DeepSeek-V4 fp4 = e2m1 with one "
                               f"ue8m0 scale per 32 values, SGLang fp8.py), shared experts and the rest {fp8}")
            return fp8, expert, fp8
        return fp8, fp8, ""
    if method == "fp8" and hf_quant:
        base = fp8  # modules the ModelOpt config leaves out keep the checkpoint's fp8 (blocks)
        assumptions.append(f"quantization_config fp8 beside an hf_quant_config: modules it excludes stay {fp8}")
    if method == "mxfp4" and not hf_quant:
        # gpt-oss: modules_to_not_convert keeps attention, router, embeddings, head in bf16.
        return base, "mxfp4", ""
    formats = weight_formats(quant, hf_quant, base, is_moe, assumptions)
    if formats is not None:
        non_expert, ffn, expert = formats
        return non_expert, expert, ffn
    if method or hf_quant:
        assumptions.append(f"quantization {method or 'hf_quant_config'} not modelled: weights taken as {base}")
    return base, base, ""


def sibling_quant_config(path: Path) -> Mapping | None:
    """The ModelOpt ``hf_quant_config.json`` published beside a config: ``hf_quant_config.json`` in
    the same folder, or ``<name>_hf_quant_config.json`` beside ``<name>_config.json``."""
    stem = path.name[:-len("config.json")] if path.name.endswith("config.json") else None
    if stem is None:
        return None
    candidate = path.with_name(f"{stem}hf_quant_config.json")
    if not candidate.is_file():
        return None
    from ..files import parse_json, read_text  # not UTF-8, too deep, unreadable: one line naming the file

    data = parse_json(read_text(candidate, what="quantization config", max_bytes=16 << 20), str(candidate))
    if not isinstance(data, Mapping):
        raise CatalogError(f"{candidate}: must be a JSON object")
    return data
