"""Field policy of ``hf_config``: which config keys are read, which are known harmless and ignored.

See docs/model_reader.md for the rule. ``USED_FIELDS`` are read; ``IGNORED_FIELDS`` and
``hf_formats.COSMETIC_FIELDS`` / ``COSMETIC_PATTERNS`` change no parameter, byte or FLOP llmecon
computes and are listed in ``Model.ignored_fields``; any other key is refused, naming it.
"""

from __future__ import annotations

import difflib
import re

from ..errors import CatalogError
from .hf_formats import check_refused, is_cosmetic

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
    # issue 33: more names for the same facts
    "attention_out_bias", "lm_head_bias", "use_qkv_bias", "global_attn_every_n_layers", "moe_layer_start_index",
    "moe_layer_end_index", "moe_layer_interval", "use_post_norm", "attn_layer_indices", "mamba_expand",
    # per-layer attention settings (hf_per_layer); MiniMax-M3 block-sparse indexer (its layers: layer_types)
    "per_layer_config", "num_attention_heads_per_layer", "gating", "index_block_size", "index_topk_blocks",
    "index_local_blocks",
    # cross-attention layers (hf_layers); Mamba-1, short-convolution, lightning and RG-LRU mixers under the names
    # hf_names writes
    "cross_attention_layers", "lightning_attention", "rglru_width", "rglru_conv_width", "mamba_d_inner",
    "mamba_dt_rank", "mamba_dt_norms", "mamba_proj_bias", "short_conv_kernel", "short_conv_bias",
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


# Categories of fields that change no parameter, byte or FLOP llmecon computes, decided from what the
# field does in transformers' config classes (docstrings of LlamaConfig, Gemma2Config, GraniteConfig,
# Phi3Config, MixtralConfig, ...), and from the value's kind: a category applies only to values of
# the kinds listed (a whole number named like a scale is a size, and is refused). First match wins.
HARMLESS_CATEGORIES: tuple[tuple[str, re.Pattern, tuple[type, ...], str], ...] = (
    ("positional", re.compile(r".*(rope|rotary|yarn|alibi|position_embedding_type|original_max_position"
                              r"|max_position|pos_emb).*"), (int, float, str, bool, dict, list),
     "RoPE/ALiBi settings and length extensions: rotary tables and biases have no weights; the cost of "
     "applying them is omitted everywhere in llmecon (a learned absolute table, position_embedding_type "
     "'absolute', is not counted either: GPT-2's is 0.6% of its parameters)"),
    ("length hint", re.compile(r".*(max_length|max_seq|seq_length|model_max_length|context_length"
                               r"|max_sequence).*"), (int,),
     "tokenizer/serving length hints; the context is llmecon's input, not the config's"),
    ("scalar multiplier", re.compile(r".*(multiplier|_scale|_scaling|scaling_factor|softcap|softcapping|soft_cap"
                                     r"|temperature|logit_scale|_alpha|_beta|_gamma)$"), (float, bool),
     "a scalar that multiplies or caps activations, logits or embeddings: values, not shapes"),
    ("scalar multiplier", re.compile(r"(.*scale.*|.*scaling.*)"), (bool,),
     "a switch for a scalar multiplier (embeddings scaled by sqrt(d), attention scaling): values, not shapes"),
    ("numerics", re.compile(r".*(eps|epsilon|_std|std_dev|init_.*|.*_init|initializer.*|_range)$"),
     (float, int, str), "norm epsilons and initialisation: no shape"),
    ("numerics", re.compile(r".*(clip.*|_lower_bound|_upper_bound|_magnitude|_max|_min|_limit|fp32.*|_in_fp32)$"),
     (float, bool, type(None)),
     "a clamp, bound or precision choice applied to values (clip_qkv, a_log_max, softmax in fp32): no shape"),
    ("numerics", re.compile(r"(allow_.*|.*_allow_.*|.*_safe_gate|.*_safe)"), (bool,),
     "a switch for a value range or a numerically safe form of the same gate (linear_allow_neg_eigval: beta in "
     "[0, 2]; kda_safe_gate): values, not shapes"),
    ("residual dataflow", re.compile(r"(use_parallel_residual|parallel_attn|parallel_block"
                                     r"|apply_residual_connection_post_layernorm)"), (bool,),
     "where the residual adds (parallel or sequential blocks): the same weights and matmuls"),
    ("kernel tiling", re.compile(r"(mamba|ssm|linear|scan|conv)_chunk_size"), (int,),
     "the chunk length of a chunked scan kernel: the same recurrence"),
    ("training", re.compile(r".*(loss|_loss_.*|aux|dropout.*|_pdrop|jitter|noise|z_coef|balance|_coef"
                            r"|gradient_checkpointing|capacity_factor|drop_.*|.*_drop|dropout_prob)$"),
     (float, int, bool, str, type(None)),
     "training-only terms (losses, dropout, capacity); serving runs none of them"),
    ("router numerics", re.compile(r".*(router|routing|topk_method|scoring|norm_topk|gating_func"
                                   r"|expert_selection|expert_combination).*"),
     (float, bool, str),
     "how router scores are computed or normalised; the router's d x E matrix is counted from the expert "
     "count (a router bias or per-expert scalar is < 0.01% of parameters)"),
    ("activation", re.compile(r".*(_act|activation|act_fn|hidden_act.*)$"), (str,),
     "the activation function; gated or not is an architecture fact (hf_families), not this field"),
    ("numerics", re.compile(r"(dim_model_base|scale_emb|scale_depth|mup_enabled|use_mup)"), (int, float, bool),
     "muP width/depth scalars (MiniCPM, AFMoE): they scale activations and logits, no shape"),
    ("activation sparsity", re.compile(r"activation_sparsity(_pattern)?"), (float, list),
     "a target fraction of the gate activations set to zero (Gemma 3n, Gemma3nTextMLP._gaussian_topk: values below "
     "mean + std x the normal quantile of the target, after the dense gate_proj): the weights and the dense "
     "matmuls transformers runs are unchanged; a kernel skipping the zeros in down_proj would run fewer FLOPs "
     "(not modelled: llmecon counts the dense matmuls, an upper bound)"),
    ("bookkeeping", re.compile(r"(classifier_.*|layerdrop|slow_but_exact)"), (int, float, bool, str),
     "a task-head setting, training-time layer drop, or an exactness switch of a kernel"),
    ("kernel choice", re.compile(r"^(use_.*(kernel|kernels|flash.*|fused.*|cache|triton|cuda|fast_path|impl)"
                                 r"|.*_implementation|.*_impl|fused_.*|cache_.*|torch_dtype_.*)$"),
     (bool, str, type(None)),
     "which kernel or cache implementation runs: the same math"),
    ("tokenizer", re.compile(r"(.*_token|.*_token_ids?|.*_token_index|tokenizer.*|vocab_file|chat_template"
                             r"|.*special_tokens?.*)"), (int, str, list, bool),
     "tokenizer settings and special-token ids (the vocabulary size is read from vocab_size)"),
)


def harmless_category(key: str, value) -> tuple[str, str] | None:
    """(category, why) when ``key`` with ``value`` cannot change what llmecon computes, else None."""
    for name, pattern, kinds, why in HARMLESS_CATEGORIES:
        if pattern.fullmatch(key) and isinstance(value, kinds) and not (isinstance(value, bool) and bool not in kinds
                                                                       and int in kinds):
            return name, why
    return None


def check_fields(flat: dict, where: str, ignore: tuple[str, ...] = (),
                 wrapper_keys: frozenset[str] = frozenset()) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(every key of ``flat`` llmecon does not read, the unknown-but-cosmetic ones among them), sorted,
    after refusing what it must.

    ``ignore``: keys the caller vouches for; they are removed from ``flat`` (read as absent) and
    listed. A near miss of a read key is a typo ("did you mean"); a key neither read nor known
    harmless (``IGNORED_FIELDS``, ``hf_formats.COSMETIC_FIELDS`` / ``COSMETIC_PATTERNS``) may change
    the math and is refused, naming it and the workaround. ``wrapper_keys``: keys of a multimodal
    wrapper's top level (beside ``text_config``): they describe the processor, the encoders and the
    projector, which llmecon counts apart, so they are ignored and listed."""
    for key in ignore:
        if not isinstance(key, str) or not key:
            raise CatalogError(f"{where}: ignore_fields entries must be field names, got {key!r}")
    vouched = [k for k in ignore if k in flat]
    for key in vouched:
        flat.pop(key, None)  # a name given twice is vouched for once
    known = USED_FIELDS | IGNORED_FIELDS
    unread, cosmetic = [], []
    for key in flat:
        if key in known and key not in IGNORED_FIELDS:
            continue
        if key not in known and flat[key] is None:  # null: the config states nothing (its default is not read)
            unread.append(key)
            continue
        if key not in known:
            close = difflib.get_close_matches(key, sorted(USED_FIELDS), n=1, cutoff=0.88)
            if close:
                raise CatalogError(f"{where}: unknown field '{key}' (did you mean '{close[0]}'?); fix the name, "
                                   f"or pass {{ignore_field}} {key} if it is harmless")
            if not (is_cosmetic(key) or harmless_category(key, flat[key]) or key in wrapper_keys
                    or _superseded(key, flat)):
                raise CatalogError(f"{where}: unknown field '{key}' = {_short(flat[key])} is not read and may change "
                                   "parameters, bytes or FLOPs; llmecon would need to model it; if you know it "
                                   f"does not, pass {{ignore_field}} {key}")
            cosmetic.append(key)
        unread.append(key)
    check_refused(flat, where)
    return tuple(sorted(set(unread) | set(vouched))), tuple(sorted(cosmetic))


# A period from which transformers derives ``layer_types`` (Cohere2MoeConfig: the sliding pattern of its dense
# prefix layers) changes nothing once ``layer_types`` is written out: the reader reads layer_types.
_DERIVES_LAYER_TYPES = re.compile(r".*window_pattern")


def _superseded(key: str, flat: dict) -> bool:
    value = flat[key]
    return (isinstance(flat.get("layer_types"), list) and _DERIVES_LAYER_TYPES.fullmatch(key) is not None
            and isinstance(value, int) and not isinstance(value, bool))


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
