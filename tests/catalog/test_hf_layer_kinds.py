"""Issue 33: layer kinds and pattern conventions the reader understands, on small configs written
from transformers 5.23.0's config classes (field names and meanings cited per test). Expected counts
are by hand; the full-size defaults are checked against transformers' own meta-device counts in
tests/catalog/test_model_oracle.py and benchmarks/model_oracle.py."""

from __future__ import annotations

import pytest

from llmecon.catalog.hf_config import model_from_hf_config
from llmecon.errors import CatalogError


def _read(config: dict, **kw):
    return model_from_hf_config(config, name=config.get("model_type", "custom"), **kw)


LLAMA = {"model_type": "llama", "hidden_size": 8, "num_hidden_layers": 4, "num_attention_heads": 2,
         "num_key_value_heads": 1, "vocab_size": 10, "intermediate_size": 16, "tie_word_embeddings": False}


def test_jamba_periods_and_offsets_type_every_layer():
    """JambaConfig: attention iff i % attn_layer_period == attn_layer_offset, MoE iff i %
    expert_layer_period == expert_layer_offset, Mamba-1 (mamba_expand·d channels) elsewhere."""
    cfg = {**LLAMA, "model_type": "jamba", "attn_layer_period": 2, "attn_layer_offset": 1,
           "expert_layer_period": 2, "expert_layer_offset": 0, "num_experts": 4, "num_experts_per_tok": 2,
           "mamba_d_state": 2, "mamba_d_conv": 3, "mamba_expand": 2, "mamba_dt_rank": 1, "mamba_conv_bias": True,
           "mamba_proj_bias": False}
    m = _read(cfg)
    assert m.layer_mixers == ("linear", "attention", "linear", "attention")
    assert m.moe_layers == (True, False, True, False)
    lin = m.linear
    assert (lin.kind, lin.n_heads, lin.key_dim, lin.dt_rank, lin.conv_kernel, lin.dt_norms) == ("mamba1", 16, 2, 1, 3,
                                                                                                   True)
    # KV: 2 attention layers x K and V of 1 head of 4 at bf16; state: 2 Mamba layers x (16·2 fp32 + 2·16 bf16)
    assert m.kv_bytes_per_token("bf16") == 2 * 2 * 4 * 2
    assert m.state_bytes_per_sequence() == 2 * (32 * 4 + 32 * 2)


def test_a_pure_mamba_stack_has_no_attention_and_no_mlp():
    cfg = {"model_type": "mamba", "hidden_size": 4, "num_hidden_layers": 2, "vocab_size": 10, "intermediate_size": 8,
           "state_size": 2, "time_step_rank": 1, "conv_kernel": 3, "use_conv_bias": True, "use_bias": False,
           "expand": 2, "tie_word_embeddings": True}
    m = _read(cfg)
    assert m.layer_mixers == ("linear", "linear") and m.kv_bytes_per_token() == 0
    # embedding 10·4 (tied), 2 mixers of 208 (tests/spec/test_new_layer_kinds.py), 2 norms + the final one
    assert m.params.total == 40 + 2 * 208 + 3 * 4
    assert any("no attention layers" in a for a in m.assumptions)


def test_lfm2_conv_layers_are_short_convolutions():
    cfg = {**LLAMA, "model_type": "lfm2", "layer_types": ["conv", "full_attention", "conv", "full_attention"],
           "conv_L_cache": 3, "conv_bias": False, "block_auto_adjust_ff_dim": True, "block_multiple_of": 4,
           "block_ffn_dim_multiplier": 1.0, "intermediate_size": 24}
    m = _read(cfg)
    assert m.layer_mixers == ("linear", "attention", "linear", "attention")
    assert m.linear.kind == "short_conv" and m.linear.conv_kernel == 3
    assert m.layer_ffn_dims == (16,) * 4  # int(2·24/3) = 16, rounded up to a multiple of 4
    assert m.state_bytes_per_sequence() == 2 * (2 * 8 * 2)  # 2 conv layers x (kernel-1)·d at bf16


def test_per_layer_config_on_windowed_layers_gives_them_their_own_attention():
    """Dots3NoteTextConfig style: the sliding layers override their attention settings."""
    cfg = {**LLAMA, "sliding_window": 4,
           "layer_types": ["full_attention", "sliding_attention", "full_attention", "sliding_attention"],
           "per_layer_config": {"01": {"num_key_value_heads": 2}, "03": {"num_key_value_heads": 2}}}
    m = _read(cfg)
    assert m.attention.n_kv_heads == 1 and m.local_attention.n_kv_heads == 2
    # KV at short context: 2 full layers x 1 head + 2 sliding layers x 2 heads, K and V of 4 at bf16
    assert m.kv_bytes_per_token("bf16") == (2 * 1 + 2 * 2) * 2 * 4 * 2


@pytest.mark.parametrize("key, value", [
    ("per_layer_config", {"0": {"num_key_value_heads": 2}}),         # one full layer differs from the others
    ("num_attention_heads_per_layer", [2, 4, 2, 4]),                 # head counts vary over full layers
])
def test_per_layer_settings_llmecon_cannot_hold_are_refused_naming_the_field(key, value):
    with pytest.raises(CatalogError) as err:
        _read({**LLAMA, key: value})
    assert f"'{key}'" in str(err.value) and f"ignore_field {key}" in str(err.value)


def test_per_layer_config_overriding_a_non_attention_field_is_refused():
    with pytest.raises(CatalogError, match="intermediate_size"):
        _read({**LLAMA, "per_layer_config": {"1": {"intermediate_size": 32}}})


def test_uniform_per_layer_heads_read_as_the_top_level():
    m = _read({**LLAMA, "num_attention_heads_per_layer": [2, 2, 2, 2]})
    assert m.params.total == _read(LLAMA).params.total


def test_cross_attention_layers_are_typed():
    """MllamaTextConfig.cross_attention_layers: those layers cross-attend image tokens (no text KV)."""
    m = _read({**LLAMA, "model_type": "mllama", "cross_attention_layers": [1, 3]})
    assert m.layer_mixers == ("attention", "cross", "attention", "cross")
    assert m.kv_bytes_per_token("bf16") == 2 * 2 * 4 * 2
    base = _read(LLAMA)
    # a cross layer has the self-attention shapes plus q/k norms (2·4) and two gates
    assert m.params.attention == base.params.attention + 2 * (2 * 4 + 2)
    with pytest.raises(CatalogError, match="cross_attention_layers"):
        _read({**LLAMA, "model_type": "mllama", "cross_attention_layers": [4]})


@pytest.mark.parametrize("new, multi_query, kv", [(True, True, 2), (False, True, 1), (False, False, 2)])
def test_falcon_kv_heads_follow_new_decoder_architecture(new, multi_query, kv):
    """FalconAttention: num_kv_heads if new_decoder_architecture or not multi_query, else 1."""
    cfg = {"model_type": "falcon", "hidden_size": 8, "num_hidden_layers": 2, "num_attention_heads": 2,
           "num_kv_heads": 2, "vocab_size": 10, "new_decoder_architecture": new, "multi_query": multi_query,
           "parallel_attn": True, "bias": False}
    assert _read(cfg).attention.n_kv_heads == kv


def test_opt_names_biases_and_learned_positions():
    """OPTConfig: ffn_dim, enable_bias; OPTLearnedPositionalEmbedding keeps max_position_embeddings + 2 rows."""
    cfg = {"model_type": "opt", "hidden_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2, "vocab_size": 10,
           "ffn_dim": 16, "max_position_embeddings": 6, "enable_bias": True, "word_embed_proj_dim": 8,
           "do_layer_norm_before": True, "tie_word_embeddings": True}
    m = _read(cfg)
    # embedding 10·8 + positions 8·8; attention 4·(8·8 + 8); MLP 2·8·16 + 16 + 8; 2 LayerNorms + final, 2·8 each
    assert m.params.total == 80 + 64 + 4 * 72 + 256 + 24 + 3 * 16
    with pytest.raises(CatalogError, match="word_embed_proj_dim"):
        _read({**cfg, "word_embed_proj_dim": 4})


def test_a_wrapper_is_read_through_its_text_config_with_its_own_tie():
    """transformers ties the head of the class built from the top-level config (tie_weights reads
    self.config): the wrapper's tie_word_embeddings decides."""
    cfg = {"model_type": "some_new_wrapper", "tie_word_embeddings": True,
           "text_config": {**LLAMA, "tie_word_embeddings": False}}
    m = _read(cfg)
    assert m.tie_embeddings is True
    assert any("some_new_wrapper" in a and "llama" in a for a in m.assumptions)


def test_head_dim_absent_and_not_dividing_is_the_floor_as_in_transformers():
    m = _read({**LLAMA, "hidden_size": 10, "num_attention_heads": 4, "num_key_value_heads": 1})
    assert m.attention.head_dim == 2
    assert any("floor" in a for a in m.assumptions)


@pytest.mark.parametrize("key, neutral, value", [("add_cross_attention", False, True),
                                                 ("cross_attention_hidden_size", None, 16)])
def test_cosmetic_keys_that_add_layers_when_set_are_refused(key, neutral, value):
    assert key in _read({**LLAMA, key: neutral}).ignored_fields
    with pytest.raises(CatalogError, match=key):
        _read({**LLAMA, key: value})


def test_superseded_window_pattern_is_ignored_only_beside_layer_types():
    types = {"layer_types": ["full_attention"] * 4}
    m = _read({**LLAMA, **types, "prefix_dense_sliding_window_pattern": 1})
    assert "prefix_dense_sliding_window_pattern" in m.ignored_fields
    with pytest.raises(CatalogError, match="prefix_dense_sliding_window_pattern"):
        _read({**LLAMA, "prefix_dense_sliding_window_pattern": 1})


def test_recurrent_gemma_block_types_repeat_over_the_layers():
    """RecurrentGemmaConfig.layers_block_type: block_types cycled; attention blocks are local (window)."""
    cfg = {**LLAMA, "model_type": "recurrent_gemma", "num_hidden_layers": 5, "num_key_value_heads": 1,
           "block_types": ["recurrent", "recurrent", "attention"], "attention_window_size": 3, "lru_width": 8,
           "conv1d_width": 4, "intermediate_size": 32, "logits_soft_cap": 30.0, "tie_word_embeddings": True}
    m = _read(cfg)
    assert m.layer_mixers == ("linear", "linear", "attention", "linear", "linear")
    assert m.layer_windows[2] == 3 and m.linear.kind == "rglru" and m.linear.n_heads == 2
    assert m.layer_ffn_dims == (16,) * 5          # RecurrentGemmaMlp: intermediate_size // 2
    assert m.attention.o_bias and not m.attention.qkv_bias


def test_minimax_linear_layers_are_lightning_attention():
    cfg = {**LLAMA, "model_type": "minimax", "layer_types": ["full_attention", "linear_attention"] * 2,
           "block_size": 256, "full_attn_alpha_factor": 1, "linear_attn_beta_factor": 1}
    m = _read(cfg)
    assert m.layer_mixers == ("attention", "linear") * 2 and m.linear.kind == "lightning"
    assert (m.linear.n_heads, m.linear.key_dim) == (2, 4)
    assert m.state_bytes_per_sequence() == 2 * 2 * 4 * 4 * 4  # 2 layers x 2 heads x 4x4 fp32


def test_longcat_flash_layers_are_two_sub_layers_with_a_moe_beside_the_first():
    """LongcatFlashDecoderLayer: 2 MLA attention + 2 dense MLPs per layer, one MoE; zero experts hold no weights."""
    cfg = {"model_type": "longcat_flash", "hidden_size": 8, "num_layers": 2, "num_attention_heads": 2,
           "vocab_size": 10, "ffn_hidden_size": 16, "expert_ffn_hidden_size": 4, "n_routed_experts": 4,
           "zero_expert_num": 2, "moe_topk": 2, "kv_lora_rank": 4, "q_lora_rank": 4, "qk_nope_head_dim": 4,
           "qk_rope_head_dim": 2, "v_head_dim": 4, "tie_word_embeddings": False}
    m = _read(cfg)
    assert m.n_layers == 4 and m.moe_layers == (True, False, True, False)
    assert m.layer_ffn_dims == (16,) * 4 and m.moe.n_routed == 4 and m.moe.top_k == 2
    assert any("zero (identity) experts" in a for a in m.assumptions)


def test_bailing_hybrid_delta_layers_have_full_rank_gates():
    types = ["linear_attention", "full_attention"]
    cfg = {**LLAMA, "model_type": "bailing_hybrid", "num_hidden_layers": 2, "layer_types": types,
           "linear_num_heads": 2, "linear_head_dim": 4, "linear_conv_kernel_dim": 3, "short_conv_kernel_size": 3,
           "layer_group_size": 2}
    m = _read(cfg)
    assert m.layer_mixers == ("linear", "attention")
    assert m.linear.kind == "kda" and m.linear.full_rank_gates
    with pytest.raises(CatalogError, match="short_conv_kernel_size"):
        _read({**cfg, "short_conv_kernel_size": 4})
