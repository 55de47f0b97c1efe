"""Read a Hugging Face ``config.json`` into a ``Model``.

Field names and the defaults transformers applies when a field is absent are documented in
``reference/models/README.md`` ("What a parser must handle"); each default used here is recorded
in ``Model.assumptions`` so the user sees it. Dispatch is on ``architectures`` (Kimi K2 is
``model_type: kimi_k2`` with ``DeepseekV3ForCausalLM``). An architecture not in ``FAMILIES`` is
read as a Llama-style pre-norm decoder, and that assumption is recorded too.

Strictness: missing or mistyped required fields are errors naming the field; a key that is not
known but looks like a known one (a typo) is an error with "did you mean"; other unknown keys are
kept in ``Model.unrecognized_fields`` (configs carry many fields irrelevant to cost).
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Mapping
from pathlib import Path

from ..errors import CatalogError, SpecError
from ..spec.model import Attention, Model, MoE
from . import hf_dsv4
from .hf_formats import check_refused, is_cosmetic, sibling_quant_config, vision_tower_params, weight_dtypes
from .hf_layers import block_sparse_index, layer_attention, mtp_layers, read_structure

# Per-architecture facts that are not config fields (transformers modeling code / model cards).
_LLAMA = {"gated": True, "norm": "rms", "norms_per_layer": 2, "tie": False}
FAMILIES: dict[str, dict] = {
    "LlamaForCausalLM": _LLAMA,
    "MistralForCausalLM": _LLAMA,
    "MixtralForCausalLM": _LLAMA,
    "Qwen2ForCausalLM": {**_LLAMA, "qkv_bias": True},
    "Qwen2MoeForCausalLM": {**_LLAMA, "qkv_bias": True},
    "Qwen3ForCausalLM": {**_LLAMA, "qk_norm": True},
    "Qwen3MoeForCausalLM": {**_LLAMA, "qk_norm": True},
    # Gemma 3: 4 RMSNorms per layer, q/k norms, tied embeddings; Gemma3TextConfig defaults.
    "Gemma3ForCausalLM": {**_LLAMA, "norms_per_layer": 4, "qk_norm": True, "tie": True,
                          "defaults": {"vocab_size": 262208, "sliding_window_pattern": 6}},
    "Gemma3ForConditionalGeneration": {**_LLAMA, "norms_per_layer": 4, "qk_norm": True, "tie": True,
                                       "defaults": {"vocab_size": 262208, "sliding_window_pattern": 6}},
    # Llama 4: one always-on shared expert per MoE layer (Llama4TextMoe), NoPE global layer every 4th.
    "Llama4ForConditionalGeneration": {**_LLAMA, "shared_experts": 1, "qk_norm_field": "use_qk_norm",
                                       "defaults": {"use_qk_norm": True, "no_rope_layer_interval": 4,
                                                    "interleave_moe_layer_step": 1}},
    "Llama4ForCausalLM": {**_LLAMA, "shared_experts": 1, "qk_norm_field": "use_qk_norm",
                          "defaults": {"use_qk_norm": True, "no_rope_layer_interval": 4,
                                       "interleave_moe_layer_step": 1}},
    "DeepseekV2ForCausalLM": _LLAMA,
    "DeepseekV3ForCausalLM": _LLAMA,
    "DeepseekV32ForCausalLM": _LLAMA,
    # DeepSeek-V4: compressed attention, mHC, hash-routed first MoE layers (catalog/hf_dsv4.py).
    "DeepseekV4ForCausalLM": _LLAMA,
    # gpt-oss: biases on q,k,v,o, per-head sinks, router and expert biases (gpt_oss/torch/model.py).
    "GptOssForCausalLM": {**_LLAMA, "qkv_bias": True, "o_bias": True, "sinks": True, "router_bias": True,
                          "expert_bias": True},
    # Phi-2: parallel block with one LayerNorm, 2-matrix GELU MLP, every Linear biased incl. lm_head.
    # GPT-2 / Megatron GPT: pre-LayerNorm, 2-matrix GELU MLP of width n_inner (default 4·d), every
    # Linear biased, tied embeddings (GPT2Config, transformers gpt2/modeling_gpt2.py).
    "GPT2LMHeadModel": {"gated": False, "norm": "layer", "norms_per_layer": 2, "tie": True, "qkv_bias": True,
                        "o_bias": True, "ffn_bias": True, "ffn_width_default_mult": 4, "learned_positions": True},
    # Qwen3.5 / 3.6: Qwen3-Next layout (q/k norms, Gated DeltaNet linear layers from layer_types).
    "Qwen3_5ForConditionalGeneration": {**_LLAMA, "qk_norm": True, "multimodal": "vision"},
    "Qwen3_5MoeForConditionalGeneration": {**_LLAMA, "qk_norm": True, "multimodal": "vision"},
    "Qwen3VLForConditionalGeneration": {**_LLAMA, "qk_norm": True, "multimodal": "vision"},
    "Qwen3VLMoeForConditionalGeneration": {**_LLAMA, "qk_norm": True, "multimodal": "vision"},
    # Nemotron-H / Nemotron-3: hybrid Mamba-2 / attention / MLP / MoE blocks, 2-matrix relu² MLPs,
    # e_score_correction_bias on the router (transformers nemotron_h modeling).
    "NemotronHForCausalLM": {**_LLAMA, "gated": False, "norms_per_layer": 1, "router_bias": True},
    # Gemma 4: Gemma 3 layout; global layers have their own KV heads and head dim (K = V).
    "Gemma4ForConditionalGeneration": {**_LLAMA, "norms_per_layer": 4, "qk_norm": True, "tie": True,
                                       "multimodal": "vision and audio", "moe_plus_dense": True},
    "MiMoV2FlashForCausalLM": {**_LLAMA, "router_bias": True},
    "MiMoForCausalLM": _LLAMA,
    "DeciLMForCausalLM": _LLAMA,
    "KimiLinearForCausalLM": {**_LLAMA, "router_bias": True},
    "MiniMaxM2ForCausalLM": {**_LLAMA, "qk_norm": True},
    "MiniMaxM3ForCausalLM": {**_LLAMA, "qk_norm": True},
    "MiniMaxM3SparseForCausalLM": {**_LLAMA, "qk_norm": True, "multimodal": "vision"},
    "GlmMoeDsaForCausalLM": _LLAMA,
    "Step3p7FlashForCausalLM": _LLAMA,
    "PhiForCausalLM": {"gated": False, "norm": "layer", "norms_per_layer": 1, "tie": False, "qkv_bias": True,
                       "o_bias": True, "ffn_bias": True, "lm_head_bias": True},
}

# Fields this parser reads.
USED_FIELDS = {
    "architectures", "model_type", "hidden_size", "num_hidden_layers", "num_attention_heads",
    "num_key_value_heads", "head_dim", "vocab_size", "intermediate_size", "intermediate_size_mlp",
    "moe_intermediate_size", "n_routed_experts", "num_local_experts", "num_experts", "num_experts_per_tok",
    "experts_per_token", "n_shared_experts", "shared_expert_intermediate_size", "first_k_dense_replace",
    "moe_layer_freq", "decoder_sparse_step", "mlp_only_layers", "interleave_moe_layer_step", "moe_layers",
    "q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim", "index_n_heads",
    "index_head_dim", "index_topk", "sliding_window", "use_sliding_window", "layer_types",
    "sliding_window_pattern", "attention_chunk_size", "no_rope_layer_interval", "no_rope_layers",
    "tie_word_embeddings", "attention_bias", "mlp_bias", "use_qk_norm", "qk_layernorm", "torch_dtype",
    "dtype", "quantization_config", "max_position_embeddings", "num_nextn_predict_layers", "topk_method",
    "text_config", "multi_query", "n_embd", "n_layer", "n_head", "n_inner", "n_positions",
    # per-layer structure and hybrid layers (hf_layers.read_structure)
    "hybrid_override_pattern", "layers_block_type", "mamba_num_heads", "mamba_head_dim", "n_groups",
    "ssm_state_size", "conv_kernel", "use_conv_bias", "use_bias", "mamba_proj_bias", "expand",
    "linear_num_value_heads", "linear_num_key_heads", "linear_key_head_dim", "linear_value_head_dim",
    "linear_conv_kernel_dim", "full_attention_interval", "linear_attn_config", "hybrid_layer_pattern",
    "block_configs", "mlp_layer_types", "indexer_types", "index_topk_freq", "index_skip_topk_offset",
    "index_topk_pattern", "sparse_attention_config", "dense_intermediate_size", "attention_head_dim",
    "swa_num_attention_heads", "swa_num_key_value_heads", "swa_head_dim", "swa_v_head_dim", "sliding_window_size",
    "add_swa_attention_sink_bias", "add_full_attention_sink_bias", "global_head_dim", "num_global_key_value_heads",
    "attention_k_eq_v", "attn_output_gate", "attention_output_gate", "mla_use_output_gate", "qk_head_dim",
    "hidden_size_per_layer_input", "vocab_size_per_layer_input", "num_kv_shared_layers", "use_double_wide_mlp",
    # MoE variants
    "num_experts_per_token", "top_k_experts", "num_shared_experts", "moe_shared_expert_intermediate_size",
    "shared_intermediate_size", "share_expert_dim", "moe_latent_size", "routed_expert_hidden_size",
    "latent_moe_use_norm", "use_routing_bias", "use_moe_router_bias", "enable_moe_block", "expert_intermediate_size",
    # multi-token prediction modules
    "mtp_num_hidden_layers", "mtp_use_dedicated_embeddings", "mtp_hybrid_override_pattern", "mtp_layers_block_type",
    "num_mtp_modules", "mtp_transformer_layers", "use_mtp", "attn_type_list", "qkv_bias",
    "mamba_ssm_cache_dtype", "mamba_ssm_dtype",
    # DeepSeek-V4 (catalog/hf_dsv4.py)
    "compress_ratios", "o_lora_rank", "o_groups", "hc_mult", "num_hash_layers", "expert_dtype",
}
# Fields known to exist and known not to change counts, bytes or FLOPs.
IGNORED_FIELDS = {
    "attention_dropout", "aux_loss_alpha", "bos_token_id", "eos_token_id", "pad_token_id", "embd_pdrop",
    "ep_size", "hidden_act", "hidden_activation", "initial_context_length", "initializer_range",
    "layer_norm_eps", "max_window_layers", "mm_tokens_per_image", "n_group", "norm_topk_prob",
    "output_router_logits", "partial_rotary_factor", "pretraining_tp", "query_pre_attn_scalar",
    "resid_pdrop", "rms_norm_eps", "rope_scaling", "rope_theta", "rope_local_base_freq",
    "routed_scaling_factor", "router_aux_loss_coef", "scoring_func", "seq_aux", "swiglu_limit",
    "topk_group", "transformers_version", "use_cache", "vision_config", "auto_map", "_name_or_path",
    "attn_temperature_tuning", "floor_scale", "attn_scale", "boi_token_index", "eoi_token_index",
    "image_token_index", "final_logit_softcapping", "attn_logit_softcapping", "cache_implementation",
    "router_jitter_noise", "residual_dropout", "hidden_dropout", "attention_multiplier", "rope_parameters",
    "rope_type", "use_bfloat16", "torchscript", "return_dict", "is_encoder_decoder", "resid_pdrop",
    "router_z_loss_coef", "moe_router_topk", "num_nextn_predict_layers_note",
    # GPT-2 configs
    "n_ctx", "activation_function", "layer_norm_epsilon", "attn_pdrop", "summary_activation",
    "summary_first_dropout", "summary_proj_to_labels", "summary_type", "summary_use_proj", "scale_attn_weights",
    "scale_attn_by_inverse_layer_idx", "reorder_and_upcast_attn", "task_specific_params",
}

# Plausibility bounds (issue 19): a config whose sizes no model could have (hidden_size 1e30) is refused
# rather than carried into step times of 1e40 s. Each bound is >= 10x the largest published value we know
# (hidden_size 16,384 Llama 3.1 405B / 18,432 Nemotron-4 340B; 126 layers Llama 3.1 405B; vocab 262,144
# Gemma 3; 384 routed experts Kimi K2; 10M-token context Llama 4 Scout); other whole-number fields stop at 2^31.
MAX_CONFIG_BYTES = 16 << 20  # a config.json is a few kB
PLAUSIBLE_MAX = {"hidden_size": 1 << 18, "num_hidden_layers": 1 << 14, "num_attention_heads": 1 << 14,
                 "num_key_value_heads": 1 << 14, "head_dim": 1 << 14, "vocab_size": 1 << 24,
                 "intermediate_size": 1 << 22, "moe_intermediate_size": 1 << 22, "intermediate_size_mlp": 1 << 22,
                 "n_routed_experts": 1 << 16, "num_local_experts": 1 << 16, "num_experts": 1 << 16,
                 "max_position_embeddings": 1 << 31}
PLAUSIBLE_MAX_DEFAULT = 1 << 31


def load_config_file(path: str | Path, *, name: str | None = None) -> Model:
    """Read a config.json from disk (errors name the file)."""
    from ..files import parse_json, read_text

    path = Path(path)
    text = read_text(path, field="model", what="config file", max_bytes=MAX_CONFIG_BYTES,
                     fix="give a config.json path or a catalogue name (llmecon catalog models)")
    config = parse_json(text, str(path))
    return model_from_hf_config(config, name=name or path.stem if path.stem != "config" else path.parent.name,
                                where=str(path), hf_quant=sibling_quant_config(path))


class _Fields:
    """Typed access to config fields, recording which were read."""

    def __init__(self, config: Mapping, where: str) -> None:
        self.config, self.where = config, where

    def has(self, key: str) -> bool:
        return self.config.get(key) is not None

    def get(self, key: str, kind: type | tuple, default=None, *, required: bool = False, minimum: int | None = None):
        value = self.config.get(key)
        if value is None:
            if required:
                raise CatalogError(f"{self.where}: missing required field '{key}'")
            return default
        ok = isinstance(value, kind) and not (isinstance(value, bool) and kind is not bool and bool not in
                                              (kind if isinstance(kind, tuple) else (kind,)))
        if not ok:
            expected = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
            raise CatalogError(f"{self.where}: field '{key}' must be {expected}, got {value!r}")
        if minimum is not None and value < minimum:
            raise CatalogError(f"{self.where}: field '{key}' must be >= {minimum}, got {value!r}")
        if isinstance(value, float) and not math.isfinite(value):
            raise CatalogError(f"{self.where}: field '{key}' must be a finite number, got {value!r}")
        limit = PLAUSIBLE_MAX.get(key, PLAUSIBLE_MAX_DEFAULT)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and kind is not float and value > limit:
            raise CatalogError(f"{self.where}: field '{key}' = {value:,} is implausibly large (at most {limit:,}, "
                               f"far above any published model); check the config")
        return value

    def first(self, keys: tuple[str, ...], kind: type, default=None, *, minimum: int | None = None):
        for key in keys:
            if self.has(key):
                return self.get(key, kind, minimum=minimum)
        return default


def _flatten(config: Mapping, where: str) -> dict:
    if not isinstance(config, Mapping):
        raise CatalogError(f"{where}: a config.json must be a JSON object, got {type(config).__name__}")
    flat = {k: v for k, v in config.items() if not str(k).startswith("_")}
    text = flat.pop("text_config", None)
    if text is not None:
        if not isinstance(text, Mapping):
            raise CatalogError(f"{where}: field 'text_config' must be an object")
        flat.update({k: v for k, v in text.items() if k != "model_type" or "model_type" not in flat})
    # legacy GPT-style names (phi-msft, GPT-2)
    for old, new in (("n_embd", "hidden_size"), ("n_layer", "num_hidden_layers"), ("n_head", "num_attention_heads"),
                     ("n_inner", "intermediate_size"), ("n_positions", "max_position_embeddings")):
        if old in flat and new not in flat:
            flat[new] = flat.pop(old)
    return flat


def _check_unknown(flat: Mapping, where: str) -> tuple[str, ...]:
    """Cosmetic keys (``hf_layers.COSMETIC_FIELDS`` / ``COSMETIC_PATTERNS``) are ignored and listed;
    a near miss of a read key is a typo ("did you mean"); any other unknown key may change the
    math and is refused, naming it."""
    known = USED_FIELDS | IGNORED_FIELDS
    unknown = []
    for key in flat:
        if key in known:
            continue
        close = difflib.get_close_matches(key, sorted(USED_FIELDS), n=1, cutoff=0.88)
        if close:
            raise CatalogError(f"{where}: unknown field '{key}' (did you mean '{close[0]}'?); fix the name")
        if not is_cosmetic(key):
            raise CatalogError(f"{where}: unknown field '{key}' may change parameters, bytes or FLOPs and is not "
                               "read; if it does not change the model's shapes, remove it from your copy of the "
                               "config; if it does, this architecture is not modelled yet (please report the field)")
        unknown.append(key)
    check_refused(flat, where)
    return tuple(sorted(unknown))


# Architectures whose config defines layers this spec cannot yet represent: the missing fact is named.
# (DeepSeek-V4 was here until its compressed attention was read: catalog/hf_dsv4.py.)
UNMODELLED: dict[str, str] = {}


def model_from_hf_config(config: Mapping, *, name: str = "custom", where: str | None = None,
                         source: str = "", hf_quant: Mapping | None = None) -> Model:
    """Build a ``Model`` from a parsed config.json mapping (and, when given, the parsed
    ``hf_quant_config.json`` published beside it)."""
    where = where or f"config for {name}"
    flat = _flatten(config, where)
    arch_list = flat.get("architectures") if isinstance(flat.get("architectures"), list) else []
    if arch_list and isinstance(arch_list[0], str) and arch_list[0] in UNMODELLED:  # a config may hold anything
        raise CatalogError(f"{where}: {UNMODELLED[arch_list[0]]}; no model is read")
    unrecognized = _check_unknown(flat, where)
    f = _Fields(flat, where)
    assumptions: list[str] = []

    arch_list = f.get("architectures", list, default=[])
    arch = arch_list[0] if arch_list and isinstance(arch_list[0], str) else ""
    family = FAMILIES.get(arch)
    if family is None:
        family = _LLAMA
        assumptions.append(f"architecture '{arch or 'unstated'}' is not specifically known: read as a "
                           "Llama-style pre-norm decoder (gated MLP, 2 RMSNorms per layer)")
    defaults = family.get("defaults", {})

    d = f.get("hidden_size", int, required=True, minimum=1)
    if not f.has("num_hidden_layers") and isinstance(flat.get("layers_block_type"), list):
        flat["num_hidden_layers"] = len(flat["layers_block_type"])
        assumptions.append(f"num_hidden_layers absent: {flat['num_hidden_layers']} = entries of layers_block_type")
    n_layers = f.get("num_hidden_layers", int, required=True, minimum=1)
    if f.has("attn_type_list") and set(f.get("attn_type_list", list)) != {1}:
        raise CatalogError(f"{where}: attn_type_list has entries other than 1 (softmax attention); MiniMax "
                           "lightning (linear) attention layers are not modelled")
    n_heads = f.get("num_attention_heads", int, required=True, minimum=1)
    vocab = f.get("vocab_size", int, minimum=1)
    if vocab is None:
        if "vocab_size" not in defaults:
            raise CatalogError(f"{where}: missing required field 'vocab_size'")
        vocab = defaults["vocab_size"]
        assumptions.append(f"vocab_size absent: transformers default {vocab} for {arch}")

    dsv4 = hf_dsv4.is_dsv4(f)
    attention = (hf_dsv4.attention(f, d, n_heads, where, assumptions) if dsv4
                 else _attention(f, family, defaults, d, n_heads, where, assumptions))
    moe, moe_mask = _moe(f, family, defaults, n_layers, where, assumptions)
    windows = _windows(f, family, defaults, n_layers, where, assumptions)

    dense_width = f.first(("intermediate_size_mlp", "intermediate_size"), int, minimum=1)
    if dense_width is None and "ffn_width_default_mult" in family:
        dense_width = family["ffn_width_default_mult"] * d
        assumptions.append(f"FFN width absent: {dense_width} = {family['ffn_width_default_mult']}·hidden "
                           f"(transformers default for {arch})")
    if family.get("learned_positions"):
        positions = f.get("max_position_embeddings", int, default=0) or 0
        assumptions.append(f"learned position embeddings ({positions}·{d} parameters) not counted")
    if dense_width is None and moe_mask.count(False) and not (f.has("block_configs") or f.has("dense_intermediate_size")
                                                              or f.has("hybrid_override_pattern")
                                                              or f.has("layers_block_type")):
        raise CatalogError(f"{where}: missing required field 'intermediate_size' (FFN width of dense layers)")

    if dense_width is None and f.has("dense_intermediate_size"):
        dense_width = f.get("dense_intermediate_size", int, minimum=1)
    structure = read_structure(f, n_layers=n_layers, d=d, attention=attention, windows=windows, moe_mask=moe_mask,
                               dense_width=dense_width, where=where, assumptions=assumptions)
    if family.get("moe_plus_dense") and moe is not None:
        # Gemma 4 MoE: every layer runs its dense MLP (intermediate_size) and the MoE block side by side
        structure["layer_ffn_dims"] = (dense_width or 0,) * n_layers
        assumptions.append("MoE layers also run a dense MLP of intermediate_size in parallel (Gemma 4)")
    attention, local = layer_attention(f, attention, structure, where)
    n_mtp = mtp_layers(f, where, assumptions)
    if dsv4:
        v4, moe = hf_dsv4.structure(f, n_layers=n_layers, n_mtp=n_mtp, att=attention, moe=moe, where=where,
                                    assumptions=assumptions)
        structure.update(v4)
    encoder = vision_tower_params(config.get("vision_config") if isinstance(config, Mapping) else None)
    if family.get("multimodal") or encoder:
        assumptions.append(f"the {family.get('multimodal', 'vision')} encoder is not in the totals: llmecon costs the "
                           f"language model a request runs through; estimated vision tower {encoder / 1e9:.2f}B "
                           "(Model.encoder_params; published sizes may include it)")
    tie = f.get("tie_word_embeddings", bool)
    if tie is None:
        tie = family["tie"]
        if arch in FAMILIES:
            assumptions.append(f"tie_word_embeddings absent: {tie} (transformers default for {arch})")
        else:
            assumptions.append(f"tie_word_embeddings absent: assumed {tie}")

    weight_dtype, expert_dtype, ffn_dtype = weight_dtypes(f, where, assumptions, hf_quant, moe is not None)
    mlp_bias = bool(f.get("mlp_bias", bool, default=False))
    structure.pop("decilm_kv_heads", None)
    norms = structure.pop("norms_per_layer", family["norms_per_layer"])
    return Model(
        name=name, d_model=d, n_layers=n_layers, vocab_size=vocab, attention=attention,
        dense_ffn_dim=dense_width or 0, ffn_gated=family["gated"],
        ffn_bias=family.get("ffn_bias", False) or mlp_bias, moe=moe, **structure, local_attention=local,
        tie_embeddings=tie, norm=family["norm"],
        norms_per_layer=norms, lm_head_bias=family.get("lm_head_bias", False),
        weight_dtype=weight_dtype, expert_weight_dtype=expert_dtype, ffn_weight_dtype=ffn_dtype,
        max_context=f.get("max_position_embeddings", int, default=0) or 0, source=source,
        assumptions=tuple(assumptions), unrecognized_fields=unrecognized,
        extra_layers_not_counted=n_mtp, encoder_params=encoder,
    )


def _attention(f: _Fields, family: dict, defaults: dict, d: int, n_heads: int, where: str,
               assumptions: list[str]) -> Attention:
    bias = f.get("attention_bias", bool)
    qkv_bias = family.get("qkv_bias", False) if bias is None else bias
    if f.has("qkv_bias"):
        qkv_bias = f.get("qkv_bias", bool)
    o_bias = family.get("o_bias", False) if bias is None else (bias and family.get("o_bias", True))
    qk_field = family.get("qk_norm_field")
    if qk_field:
        qk_norm = f.get(qk_field, bool, default=defaults.get(qk_field, False))
    else:
        qk_norm = family.get("qk_norm", False) or bool(f.get("qk_layernorm", bool, default=False))
    common = {"qkv_bias": qkv_bias, "o_bias": o_bias, "qk_norm": qk_norm, "sinks": family.get("sinks", False)}
    if f.has("kv_lora_rank"):
        nope = f.get("qk_nope_head_dim", int, required=True, minimum=0)
        rope = f.get("qk_rope_head_dim", int, required=True, minimum=0)
        v = f.get("v_head_dim", int, required=True, minimum=1)
        index = {}
        if f.has("index_topk"):
            index = {"index_n_heads": f.get("index_n_heads", int, required=True, minimum=1),
                     "index_head_dim": f.get("index_head_dim", int, required=True, minimum=1),
                     "index_topk": f.get("index_topk", int, required=True, minimum=1)}
        if f.has("qk_head_dim") and f.get("qk_head_dim", int) != nope + rope:
            raise CatalogError(f"{where}: qk_head_dim ({f.get('qk_head_dim', int)}) must equal qk_nope_head_dim + "
                               f"qk_rope_head_dim ({nope + rope})")
        return Attention(kind="mla", n_heads=n_heads, n_kv_heads=1, head_dim=nope + rope, v_head_dim=v,
                         q_lora_rank=f.get("q_lora_rank", int, default=0, minimum=0) or 0,
                         kv_lora_rank=f.get("kv_lora_rank", int, minimum=1), qk_rope_head_dim=rope,
                         output_gate=f.get("mla_use_output_gate", bool, default=False),
                         **index, **{**common, "qkv_bias": False, "o_bias": False, "qk_norm": False})
    n_kv = 1 if f.get("multi_query", bool, default=False) else f.get("num_key_value_heads", int, default=n_heads,
                                                                        minimum=1)
    if n_heads % n_kv:
        raise SpecError(f"{where}: num_attention_heads ({n_heads}) is not divisible by num_key_value_heads "
                        f"({n_kv}); fix one of them")
    head_dim = f.get("head_dim", int, minimum=1)
    if head_dim is None:
        if d % n_heads:
            raise SpecError(f"{where}: hidden_size ({d}) is not divisible by num_attention_heads ({n_heads}) "
                            "and no head_dim is given; add head_dim")
        head_dim = d // n_heads
    kind = "mha" if n_kv == n_heads else ("mqa" if n_kv == 1 else "gqa")
    gate = bool(f.get("attn_output_gate", bool, default=False) or f.get("attention_output_gate", bool, default=False))
    return Attention(kind=kind, n_heads=n_heads, n_kv_heads=n_kv, head_dim=head_dim, output_gate=gate,
                     v_head_dim=f.get("v_head_dim", int, default=head_dim, minimum=1),
                     **block_sparse_index(f, where, assumptions), **common)


def _moe(f: _Fields, family: dict, defaults: dict, n_layers: int, where: str,
         assumptions: list[str]) -> tuple[MoE | None, list[bool]]:
    n_routed = f.first(("n_routed_experts", "num_local_experts", "num_experts"), int, minimum=0)
    if not n_routed or f.get("enable_moe_block", bool, default=True) is False:
        return None, [False] * n_layers
    top_k = f.first(("num_experts_per_tok", "experts_per_token", "num_experts_per_token", "top_k_experts"), int,
                    minimum=1)
    if top_k is None:
        raise CatalogError(f"{where}: MoE config ({n_routed} experts) is missing 'num_experts_per_tok'")
    width = f.first(("moe_intermediate_size", "intermediate_size"), int, minimum=1)
    if width is None:
        raise CatalogError(f"{where}: MoE config is missing 'moe_intermediate_size' or 'intermediate_size'")
    n_shared = f.first(("n_shared_experts", "num_shared_experts"), int, minimum=0)
    shared_width = f.first(("shared_expert_intermediate_size", "moe_shared_expert_intermediate_size",
                            "shared_intermediate_size", "share_expert_dim"), int, minimum=0)
    if shared_width == 0:  # Qwen3-Coder-480B: shared_expert_intermediate_size 0 = no shared expert
        n_shared, shared_width = 0, 0
    elif n_shared is None and shared_width:
        n_shared = 1
    shared_width = shared_width or 0
    if n_shared is None:
        n_shared = family.get("shared_experts", 0)
        if n_shared:
            assumptions.append(f"{n_shared} always-on shared expert per MoE layer (hard-coded in the modeling "
                               "code, no config field)")
    router_bias = (family.get("router_bias", False) or f.get("topk_method", str, default="") == "noaux_tc"
                   or f.get("use_routing_bias", bool, default=False)
                   or f.get("use_moe_router_bias", bool, default=False))
    latent = f.first(("moe_latent_size", "routed_expert_hidden_size"), int, minimum=1) or 0
    moe = MoE(n_routed=n_routed, top_k=top_k, expert_ffn_dim=width, n_shared=n_shared, shared_ffn_dim=shared_width,
              router_bias=router_bias, expert_bias=family.get("expert_bias", False), latent_dim=latent,
              latent_norm=bool(latent and f.get("latent_moe_use_norm", bool, default=False)))
    return moe, _moe_mask(f, defaults, n_layers, where, assumptions)


def _moe_mask(f: _Fields, defaults: dict, n_layers: int, where: str, assumptions: list[str]) -> list[bool]:
    if isinstance(f.config.get("moe_layer_freq"), list):
        return [True] * n_layers  # a per-layer list: read by hf_layers.read_structure
    if f.has("first_k_dense_replace") or f.has("moe_layer_freq"):
        # DeepSeek modeling: MoE iff layer >= first_k_dense_replace and layer % moe_layer_freq == 0
        first = f.get("first_k_dense_replace", int, default=0, minimum=0)
        freq = f.get("moe_layer_freq", int, default=1, minimum=1)
        return [i >= first and i % freq == 0 for i in range(n_layers)]
    if f.has("decoder_sparse_step") or f.has("mlp_only_layers"):
        # Qwen-MoE modeling: MoE iff layer not in mlp_only_layers and (layer + 1) % step == 0
        step = f.get("decoder_sparse_step", int, default=1, minimum=1)
        only = set(f.get("mlp_only_layers", list, default=[]))
        return [i not in only and (i + 1) % step == 0 for i in range(n_layers)]
    if f.has("moe_layers"):
        layers = f.get("moe_layers", list)
        if not all(isinstance(i, int) and 0 <= i < n_layers for i in layers):
            raise CatalogError(f"{where}: field 'moe_layers' must list layer indices in 0..{n_layers - 1}")
        return [i in set(layers) for i in range(n_layers)]
    if f.has("interleave_moe_layer_step") or "interleave_moe_layer_step" in defaults:
        step = f.get("interleave_moe_layer_step", int, default=defaults.get("interleave_moe_layer_step", 1), minimum=1)
        # Llama 4: moe_layers = range(step - 1, L, step) when absent
        if step > 1:
            assumptions.append(f"moe_layers absent: every {step}th layer is MoE (transformers Llama4 default)")
        return [(i + 1) % step == 0 for i in range(n_layers)]
    return [True] * n_layers


def _windows(f: _Fields, family: dict, defaults: dict, n_layers: int, where: str,
             assumptions: list[str]) -> list[int]:
    window = f.get("sliding_window", int, minimum=1)
    if f.has("layer_types"):
        types = f.get("layer_types", list)
        if len(types) != n_layers:
            raise CatalogError(f"{where}: field 'layer_types' has {len(types)} entries for {n_layers} layers")
        out = []
        for i, t in enumerate(types):
            if t == "full_attention":
                out.append(0)
            elif t == "sliding_attention":
                if window is None:
                    raise CatalogError(f"{where}: layer_types[{i}] is sliding_attention but 'sliding_window' is unset")
                out.append(window)
            elif t in ("linear_attention", "deepseek_sparse_attention"):
                out.append(0)  # linear layers hold no window; DSA layers attend the full context
            elif t == "chunked_attention":
                out.append(f.get("attention_chunk_size", int, required=True, minimum=1))
            else:
                raise CatalogError(f"{where}: layer_types[{i}] = {t!r} is not full_attention, sliding_attention, "
                                   "chunked_attention, linear_attention or deepseek_sparse_attention")
        return out
    if f.has("hybrid_layer_pattern"):
        # MiMo-V2: 1 = sliding-window layer (its own swa_* heads), 0 = full attention
        pattern = f.get("hybrid_layer_pattern", list)
        if len(pattern) != n_layers or any(p not in (0, 1) for p in pattern):
            raise CatalogError(f"{where}: field 'hybrid_layer_pattern' must list 0 or 1 for each of {n_layers} layers")
        size = f.first(("sliding_window_size", "sliding_window"), int, minimum=1)
        if size is None and any(pattern):
            raise CatalogError(f"{where}: hybrid_layer_pattern marks sliding layers but 'sliding_window' is unset")
        return [size if p else 0 for p in pattern]
    if f.has("attention_chunk_size"):
        # Llama 4 iRoPE: RoPE layers use chunked local attention; every no_rope_layer_interval-th
        # layer is a global NoPE layer. KV held is bounded by the chunk (an upper bound: a chunk
        # restarts at its boundary, so on average half is attended).
        chunk = f.get("attention_chunk_size", int, minimum=1)
        interval = f.get("no_rope_layer_interval", int, default=defaults.get("no_rope_layer_interval", 4), minimum=1)
        if not f.has("no_rope_layer_interval"):
            assumptions.append(f"no_rope_layer_interval absent: every {interval}th layer is global (NoPE), "
                               f"the rest chunked-local ({chunk}) (transformers default)")
        return [0 if (i + 1) % interval == 0 else chunk for i in range(n_layers)]
    if window is None or f.get("use_sliding_window", bool, default=True) is False:
        return [0] * n_layers
    pattern = f.get("sliding_window_pattern", int, minimum=1)
    if pattern is None and "sliding_window_pattern" in defaults:
        pattern = defaults["sliding_window_pattern"]
        assumptions.append(f"sliding_window_pattern absent: every {pattern}th layer is global "
                           "(transformers default)")
    if pattern:
        return [0 if (i + 1) % pattern == 0 else window for i in range(n_layers)]
    return [window] * n_layers
