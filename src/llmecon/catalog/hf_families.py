"""Per-architecture facts that are not config fields, for ``hf_config``.

Whether the MLP is gated, the norm kind and count per layer, which projections carry biases, whether
embeddings are tied by default: these live in transformers' modeling code, not in ``config.json``.
A config is looked up by ``architectures[0]``, then by ``model_type`` (``FAMILIES_BY_TYPE``); a config
matching neither is refused (the MLP kind alone changes FFN parameters by a third), naming both.
"""

from __future__ import annotations

from ..errors import CatalogError

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
    "Qwen3_5ForConditionalGeneration": {**_LLAMA, "qk_norm": True, "output_gate": True, "multimodal": "vision"},
    "Qwen3_5MoeForConditionalGeneration": {**_LLAMA, "qk_norm": True, "output_gate": True, "multimodal": "vision"},
    "Qwen3_5ForCausalLM": {**_LLAMA, "qk_norm": True, "output_gate": True},
    "Qwen3_5MoeForCausalLM": {**_LLAMA, "qk_norm": True, "output_gate": True},
    "Qwen3VLForConditionalGeneration": {**_LLAMA, "qk_norm": True, "multimodal": "vision"},
    "Qwen3VLMoeForConditionalGeneration": {**_LLAMA, "qk_norm": True, "multimodal": "vision"},
    # Nemotron-H / Nemotron-3: hybrid Mamba-2 / attention / MLP / MoE blocks, 2-matrix relu² MLPs,
    # e_score_correction_bias on the router (transformers nemotron_h modeling).
    "NemotronHForCausalLM": {**_LLAMA, "gated": False, "norms_per_layer": 1, "router_bias": True},
    # Gemma 4: Gemma 3 layout; global layers have their own KV heads and head dim (K = V).
    "Gemma4ForConditionalGeneration": {**_LLAMA, "norms_per_layer": 4, "qk_norm": True, "tie": True,
                                       "multimodal": "vision and audio", "moe_plus_dense": True},
    # MiMo-V2-Flash: transformers' MiMoV2FlashAttention gives sliding layers 2 x num_key_value_heads
    # and a sink per head when the config has no swa_* fields (the hub config states them).
    "MiMoV2FlashForCausalLM": {**_LLAMA, "router_bias": True, "swa_kv_heads_mult": 2},
    "MiMoForCausalLM": _LLAMA,
    "DeciLMForCausalLM": _LLAMA,
    "KimiLinearForCausalLM": {**_LLAMA, "router_bias": True},
    "MiniMaxM2ForCausalLM": {**_LLAMA, "qk_norm": True},
    "MiniMaxM3ForCausalLM": {**_LLAMA, "qk_norm": True},
    "MiniMaxM3SparseForCausalLM": {**_LLAMA, "qk_norm": True, "multimodal": "vision"},
    "GlmMoeDsaForCausalLM": _LLAMA,
    "Step3p7FlashForCausalLM": _LLAMA,
    # Qwen3-Next: q/k norms, Gated DeltaNet linear layers (layer_types or full_attention_interval).
    "Qwen3NextForCausalLM": {**_LLAMA, "qk_norm": True, "output_gate": True},
    "PhiForCausalLM": {"gated": False, "norm": "layer", "norms_per_layer": 1, "tie": False, "qkv_bias": True,
                       "o_bias": True, "ffn_bias": True, "lm_head_bias": True},
}


def family_of(f, where: str, assumptions: list[str], text_model_type: str | None = None) -> tuple[str, dict]:
    """(architecture or model type, its facts). A config naming neither is read as a Llama-style
    decoder (recorded); one naming only what llmecon does not know is refused."""
    arch_list = f.get("architectures", list, default=[])
    arch = arch_list[0] if arch_list and isinstance(arch_list[0], str) else ""
    model_type = f.get("model_type", str, default="")
    if arch in FAMILIES:
        return arch, FAMILIES[arch]
    if model_type in FAMILIES_BY_TYPE:
        return arch or model_type, FAMILIES_BY_TYPE[model_type]
    text_type = text_model_type or ""
    if text_type in FAMILIES_BY_TYPE:
        # a multimodal wrapper llmecon does not list around a language model it does (its text_config's
        # model_type): the language model's facts; the encoders are counted apart
        assumptions.append(f"model_type {model_type!r} (a wrapper): its language model read as {text_type!r} from "
                           "text_config")
        return text_type, FAMILIES_BY_TYPE[text_type]
    if not arch and not model_type:
        assumptions.append("no 'architectures' or 'model_type': read as a Llama-style pre-norm decoder (gated MLP, "
                           "2 RMSNorms per layer, no biases)")
        return "", _LLAMA
    raise CatalogError(f"{where}: architecture {arch or '(none)'!s} / model_type {model_type or '(none)'!r} is not "
                       "known to llmecon: whether its MLP is gated, its norms and biases are modelling-code facts "
                       "the config does not state; workaround: {ignore_field} architectures and {ignore_field} "
                       "model_type read it as a Llama-style decoder (gated MLP, 2 RMSNorms, no biases)")


# model_type -> architecture of FAMILIES, for configs without ``architectures`` (transformers'
# ``AutoConfig.for_model`` writes none) or with an architecture class llmecon does not list.
_TYPE_TO_ARCH = {
    "llama": "LlamaForCausalLM", "mistral": "MistralForCausalLM", "mixtral": "MixtralForCausalLM",
    "qwen2": "Qwen2ForCausalLM", "qwen2_moe": "Qwen2MoeForCausalLM", "qwen3": "Qwen3ForCausalLM",
    "qwen3_moe": "Qwen3MoeForCausalLM", "gemma3_text": "Gemma3ForCausalLM", "gemma3": "Gemma3ForConditionalGeneration",
    "llama4": "Llama4ForConditionalGeneration", "llama4_text": "Llama4ForCausalLM",
    "deepseek_v2": "DeepseekV2ForCausalLM", "deepseek_v3": "DeepseekV3ForCausalLM", "kimi_k2": "DeepseekV3ForCausalLM",
    "deepseek_v32": "DeepseekV32ForCausalLM", "deepseek_v4": "DeepseekV4ForCausalLM", "gpt_oss": "GptOssForCausalLM",
    "gpt2": "GPT2LMHeadModel", "gpt-sw3": "GPT2LMHeadModel", "qwen3_5": "Qwen3_5ForConditionalGeneration",
    "qwen3_5_moe": "Qwen3_5MoeForConditionalGeneration", "qwen3_vl": "Qwen3VLForConditionalGeneration",
    "qwen3_vl_moe": "Qwen3VLMoeForConditionalGeneration", "nemotron_h": "NemotronHForCausalLM",
    "gemma4": "Gemma4ForConditionalGeneration", "mimo_v2_flash": "MiMoV2FlashForCausalLM", "mimo": "MiMoForCausalLM",
    "deci": "DeciLMForCausalLM", "nemotron-nas": "DeciLMForCausalLM", "kimi_linear": "KimiLinearForCausalLM",
    "minimax_m2": "MiniMaxM2ForCausalLM", "minimax_m3": "MiniMaxM3ForCausalLM", "glm_moe_dsa": "GlmMoeDsaForCausalLM",
    "phi": "PhiForCausalLM", "qwen3_next": "Qwen3NextForCausalLM", "qwen3_5_text": "Qwen3_5ForCausalLM",
    "qwen3_5_moe_text": "Qwen3_5MoeForCausalLM",
}
FAMILIES_BY_TYPE: dict[str, dict] = {t: FAMILIES[a] for t, a in _TYPE_TO_ARCH.items()}

# Decoders of transformers 5.23.0 by model_type, each fact read from its modeling_<type>.py (the
# layer-0 parameters of the model built on the meta device, benchmarks/model_oracle.py, checks
# every one). Biases that a config field switches (attention_bias, mlp_bias) are read from the field.
_QKN = {**_LLAMA, "qk_norm": True}
_NON_GATED = {**_LLAMA, "gated": False}  # up -> act -> down, 2 matrices (relu², xIELU, GELU)
# LayerNorm (weight + bias), every projection biased, 2-matrix MLP (GPT-NeoX / Persimmon / StarCoder2 style)
_BIASED_LN = {"gated": False, "norm": "layer", "norms_per_layer": 2, "tie": False, "qkv_bias": True,
              "o_bias": True, "ffn_bias": True}
FAMILIES_BY_TYPE.update({
    # Llama layout: gated MLP, input + post-attention RMSNorm, untied unless tie_word_embeddings says so.
    **{t: _LLAMA for t in ("internlm3", "iquestcoder", "granite", "granite_swa", "granitemoe", "granitemoe_swa",
                           "granitemoeshared", "helium", "cwm", "smollm3", "ministral3", "aria_text", "emu3",
                           "ernie4_5", "ernie4_5_moe", "glm4_moe", "glm4_moe_lite", "minicpm3", "minimax",
                           "solar_open", "youtu", "phi3", "axk1", "diffllama", "olmo_hybrid", "inkling2_text",
                           "hyperclovax", "mistral3", "dots3_note",
                           "dots3_note_text")},
    # the same layout where transformers' config class ties the embeddings by default (tie_word_embeddings=True;
    # read when a config does not state it; tests/catalog/test_model_oracle.py checks every family's default)
    **{t: {**_LLAMA, "tie": True} for t in ("granite_swa", "smollm3", "ernie4_5", "ernie4_5_moe", "minicpm3",
                                             "youtu", "mistral3")},
    # LongCat-Flash: every sub-layer runs its dense MLP; the MoE sits beside every first one (hf_names)
    "longcat_flash": {**_LLAMA, "moe_plus_dense": True},
    # q_norm / k_norm RMSNorms (Qwen3-style); OLMo-2/3 and OLMoE normalise the full q/k width (n·h
    # weights, not h: under 0.1% of parameters, counted as per-head norms here).
    **{t: _QKN for t in ("olmo2", "olmo3", "olmoe", "flex_olmo", "exaone4", "exaone_moe", "mellum", "laguna",
                         "hy_v3", "inkling_text", "minimax_m3_vl_text", "flint", "beam", "kolibri1")},
    # AFMoE: q/k norms, a sigmoid output gate (gate_proj d x n·h), pre and post norms around both blocks
    "afmoe": {**_QKN, "output_gate": True, "norms_per_layer": 4},
    "seed_oss": {**_LLAMA, "qkv_bias": True},
    "glm": {**_LLAMA, "qkv_bias": True}, "glm4": {**_LLAMA, "qkv_bias": True, "norms_per_layer": 4},
    # Gemma: gated GeGLU, tied embeddings; Gemma 2 adds pre/post norms around both blocks (4 per layer).
    "gemma": {**_LLAMA, "tie": True}, "gemma2": {**_LLAMA, "tie": True, "norms_per_layer": 4},
    "vaultgemma": {**_LLAMA, "tie": True},
    # OLMo (1): LayerNorm without weights (no parameters); llmecon counts its final norm's d weights (< 0.001%).
    "olmo": {**_LLAMA, "norms_per_layer": 0},
    # Cohere: one LayerNorm without bias per (parallel) block, tied embeddings.
    "cohere": {**_LLAMA, "norms_per_layer": 1, "tie": True}, "cohere2": {**_LLAMA, "norms_per_layer": 1, "tie": True},
    "cohere2_moe": {**_LLAMA, "norms_per_layer": 1, "tie": True},
    # StableLM: LayerNorm (weight + bias), gated MLP.
    "stablelm": {**_LLAMA, "norm": "layer"},
    # Non-gated MLPs (the misreads of issue 33): up -> activation -> down.
    "arcee": _NON_GATED,                                 # ArceeMLP: up_proj, relu², down_proj
    "apertus": {**_NON_GATED, "qk_norm": True},          # ApertusMLP: up, xIELU (2 scalars, omitted), down
    "nanochat": {**_NON_GATED, "norms_per_layer": 0},    # fc1, relu², fc2; RMSNorms without weights
    "jais2": {**_BIASED_LN},                             # Jais2MLP: up/down with bias, LayerNorm
    "persimmon": {**_BIASED_LN, "qk_norm": True},        # fused qkv + dense with bias, q/k LayerNorm
    "starcoder2": {**_BIASED_LN, "tie": True},
    "gpt_neox": {**_BIASED_LN},                          # parallel attention + MLP, 2 LayerNorms per layer
    "fuyu": {**_BIASED_LN, "qk_norm": True, "multimodal": "image-patch"},  # Persimmon language model
    "phimoe": {**_LLAMA, "norm": "layer"},               # LayerNorm with bias, gated experts
    "got_ocr2": {**_LLAMA, "qkv_bias": True, "tie": True, "multimodal": "vision"},  # Qwen2 language model
    # GPT-J / CodeGen: one LayerNorm per parallel block, unbiased attention, biased 2-matrix MLP of
    # n_inner (default 4·d), biased output head.
    "gptj": {"gated": False, "norm": "layer", "norms_per_layer": 1, "tie": False, "ffn_bias": True,
             "lm_head_bias": True, "ffn_width_default_mult": 4},
    "codegen": {"gated": False, "norm": "layer", "norms_per_layer": 1, "tie": False, "ffn_bias": True,
                "lm_head_bias": True, "ffn_width_default_mult": 4},
    "gpt_bigcode": FAMILIES["GPT2LMHeadModel"],         # GPT-2 layout, multi_query -> one KV head
    # BLOOM: ALiBi (no weights), biased fused qkv / dense / MLP, LayerNorms, tied embeddings; one more
    # LayerNorm on the word embeddings (2·d, omitted: < 0.001%).
    "bloom": {**_BIASED_LN, "tie": True, "ffn_width_default_mult": 4},
    # Mamba-2 / attention hybrids with a gated MLP or MoE after every mixer, 2 RMSNorms per layer
    # (Bamba: BambaConfig.layers_block_type puts Mamba-2 wherever attn_layer_indices does not say attention)
    "bamba": {**_LLAMA, "mamba_default": True}, "granitemoehybrid": _LLAMA,
    # GPT-era decoders (field names: hf_names). Learned absolute positions are counted (Model.learned_positions).
    # CTRL: biased Wq/Wk/Wv/dense, ReLU MLP of dff with biases, 2 LayerNorms, sinusoidal positions (no
    # weights), tied head with its own bias (CTRLLMHeadModel.lm_head bias=True).
    "ctrl": {**_BIASED_LN, "tie": True, "lm_head_bias": True},
    # GPT-1: Conv1D c_attn/c_proj and c_fc/c_proj with biases, post-LayerNorms, learned positions, tied head.
    "openai-gpt": {**_BIASED_LN, "tie": True, "learned_positions": True, "ffn_width_default_mult": 4},
    # OPT / BioGPT: fairseq layout, biased q/k/v/out and fc1/fc2, 2 LayerNorms, learned positions with 2
    # extra rows, tied head. XGLM: the same with sinusoidal positions (no weights).
    "opt": {**_BIASED_LN, "tie": True, "learned_positions": True, "position_offset": 2},
    "biogpt": {**_BIASED_LN, "tie": True, "learned_positions": True, "position_offset": 2},
    "xglm": {**_BIASED_LN, "tie": True},
    # GPT-Neo: unbiased q/k/v, biased out_proj and MLP, learned positions, tied head (GPTNeoSelfAttention).
    "gpt_neo": {**_BIASED_LN, "qkv_bias": False, "tie": True, "learned_positions": True,
                "ffn_width_default_mult": 4},
    # Falcon: fused qkv and dense, 4·d MLP (dense_h_to_4h), biases from `bias`, LayerNorms (count: hf_names).
    "falcon": {**_BIASED_LN, "qkv_bias": False, "o_bias": True, "ffn_bias": False, "ffn_width_default_mult": 4,
               "tie": True},
    # MPT: ALiBi (no weights), expansion_ratio·d GELU MLP, biases from no_bias, LayerNorms, tied head.
    "mpt": {**_BIASED_LN, "tie": True},
    # Mamba / FalconMamba / Mamba-2: one RMSNorm and one mixer per layer (hf_names writes the pattern).
    "mamba": {**_LLAMA, "tie": True}, "falcon_mamba": {**_LLAMA, "tie": True}, "mamba2": _LLAMA,
    # Jamba: Llama-style attention and gated MLP / MoE, Mamba-1 mixers, input + pre-FFN RMSNorms.
    "jamba": _LLAMA,
    # LFM2: gated MLP (w1, w3, w2), operator + FFN RMSNorms, q/k layernorms, tied embeddings (one more
    # RMSNorm on the embeddings: d weights, omitted).
    "lfm2": {**_QKN, "tie": True}, "lfm3": {**_QKN, "tie": True},
    # BitNet b1.58: Llama layout with a relu² gated MLP and two sub-norms (attn_sub_norm of d, counted as a
    # third norm; ffn_sub_norm of intermediate_size, omitted: < 0.01%).
    "bitnet": {**_LLAMA, "norms_per_layer": 3},
    # GPT-NeoX-Japanese: unbiased fused qkv / dense / 2-matrix MLP, 2 LayerNorms (the last layer's dense
    # bias, d weights, omitted).
    "gpt_neox_japanese": {"gated": False, "norm": "layer", "norms_per_layer": 2, "tie": True},
    # Gemma 4 text stacks (Gemma4TextModel) and the unified any-to-any wrapper around the same stack.
    "gemma4_text": {k: v for k, v in FAMILIES["Gemma4ForConditionalGeneration"].items() if k != "multimodal"},
    "gemma4_unified_text": {k: v for k, v in FAMILIES["Gemma4ForConditionalGeneration"].items() if k != "multimodal"},
    "gemma4_unified": FAMILIES["Gemma4ForConditionalGeneration"],
    # Llama-3.2-Vision: the Llama text stack with cross-attention layers (hf_layers), a vision tower apart.
    "mllama": {**_LLAMA, "multimodal": "vision"}, "mllama_text_model": _LLAMA,
    # ModernBERT decoder: gated MLP (Wi d -> 2I, Wo), unbiased attention, LayerNorms without bias (d weights each,
    # counted as RMSNorms; norm_bias: hf_names), tied head with a bias; its prediction head's dense d x d and
    # norm, and the embedding norm, are omitted (0.4% of the default's parameters).
    "modernbert-decoder": {**_LLAMA, "tie": True},
    # RecurrentGemma (Griffin): Gemma layout (tied, 2 RMSNorms), biased gated MLP, o_proj always biased.
    "recurrent_gemma": {**_LLAMA, "tie": True, "o_bias_always": True},
    # Bailing (Ling) hybrid: KDA + MLA layers, gated MLP / MoE, a sigmoid-routed MoE with a bias (its MLA
    # layers' per-head output gate, d x heads, is omitted: < 0.1%).
    "bailing_hybrid": {**_LLAMA, "router_bias": True},
    # Phi-4-multimodal: the Phi-3 language model (fused qkv and gate_up: Llama shapes), vision and audio apart.
    "phi4_multimodal": {**_LLAMA, "multimodal": "vision and audio"},
    # Doge (dense, is_moe false: hf_names): Llama layout with q/k RMSNorms; its dynamic-mask projection
    # (dt_proj, kv·h x kv, and A, kv weights per layer) is omitted (< 0.01% of the default's parameters).
    "doge": _QKN,
    # CPM-Ant: Llama layout (gated GELU FFN, 2 weight-only pre-norms, no biases; hf_names). "tie" is
    # CpmAntConfig's default (True), but the head is always its own tensor: hf_names._cpmant sets the field false.
    "cpmant": {**_LLAMA, "tie": True},
})

