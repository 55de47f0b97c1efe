"""Issue 33, third pass: families typed from transformers 5.23.0's modelling code (each cited), read from
configs written by hand with the config class's defaults. Expected counts are by hand; transformers' own
meta-device counts of the same defaults are in benchmarks/results/model_oracle_2026-11-29.md."""

from __future__ import annotations

import pytest

from llmecon.catalog.hf_config import model_from_hf_config
from llmecon.errors import CatalogError

# DogeConfig defaults (transformers 5.23.0 models/doge/configuration_doge.py)
DOGE = {"model_type": "doge", "vocab_size": 32768, "hidden_size": 1024, "intermediate_size": 2048,
        "num_hidden_layers": 32, "num_attention_heads": 8, "num_key_value_heads": 8, "max_position_embeddings": 2048,
        "hidden_act": "silu", "rms_norm_eps": 1e-6, "tie_word_embeddings": False, "attention_bias": False,
        "mlp_bias": False, "keep_window_size": 2048, "is_moe": False, "num_experts": 16384,
        "num_experts_per_tok": 64, "norm_topk_prob": False, "output_router_logits": False,
        "router_aux_loss_coef": 0.001}


def test_dense_doge_is_a_llama_layout_with_qk_norms_and_residual_vectors():
    """DogeDecoderLayer (is_moe false): q/k/v/o d x d (8 heads of 128), q_norm/k_norm of 128, a gated MLP
    (DogeMLP), input/post-attention RMSNorms and the input_residual/post_attention_residual vectors (d each).
    The dynamic-mask dt_proj (1024 x 8) and A (8) per layer are omitted (documented in hf_families)."""
    m = model_from_hf_config(DOGE, name="doge")
    d, ff, layers, vocab = 1024, 2048, 32, 32768
    per_layer = 4 * d * d + 2 * 128 + 3 * d * ff + 4 * d
    assert m.params.total == 2 * vocab * d + d + layers * per_layer   # untied embedding + head, final norm
    assert not m.is_moe                                                # num_experts builds nothing when dense
    assert m.kv_bytes_per_token("bf16") == layers * 2 * 8 * 128 * 2
    # transformers' meta-device count of the same default: 403,055,872 (it adds 32 x (8192 + 8) for dt_proj, A)
    assert m.params.total + layers * (d * 8 + 8) == 403_055_872
    assert abs(m.params.total / 403_055_872 - 1) < 0.001


def test_doge_cross_domain_moe_is_refused_naming_is_moe():
    with pytest.raises(CatalogError, match="'is_moe' = True"):
        model_from_hf_config({**DOGE, "is_moe": True}, name="doge")


# CpmAntConfig defaults (transformers 5.23.0 models/cpmant/configuration_cpmant.py)
CPMANT = {"model_type": "cpmant", "vocab_size": 30720, "hidden_size": 4096, "num_attention_heads": 32, "dim_head": 128,
          "dim_ff": 10240, "num_hidden_layers": 48, "dropout_p": 0.0, "position_bias_num_buckets": 512,
          "position_bias_max_distance": 2048, "eps": 1e-6, "init_std": 1.0, "prompt_types": 32,
          "prompt_length": 32, "segment_types": 32, "use_cache": True, "tie_word_embeddings": True}


def test_cpmant_reads_its_own_names_with_an_untied_head():
    """CpmAntForCausalLM: 48 layers of q/k/v/o 4096 x 4096, a gated GELU FFN of dim_ff 10240 (w_0, w_1,
    w_out), 2 weight-only norms; input table (vocab rows counted, prompt rows omitted) and a separate head of
    vocab_size rows though tie_word_embeddings is true (the shapes differ)."""
    m = model_from_hf_config(CPMANT, name="cpmant")
    d, ff, layers, vocab = 4096, 10240, 48, 30720
    assert m.params.total == 2 * vocab * d + d + layers * (4 * d * d + 3 * d * ff + 2 * d)
    assert m.kv_bytes_per_token("bf16") == layers * 2 * 32 * 128 * 2
    # transformers' meta count 9,517,453,312 adds the prompt rows (32·32 x 4096), the segment table (32 x 4096)
    # and the relative position bias ((32·32 + 512 buckets) x 32 heads = 49,152, CpmAntSegmentPositionEmbedding)
    assert m.params.total + 1024 * d + 32 * d + (32 * 32 + 512) * 32 == 9_517_453_312


def test_a_field_named_twice_by_ignore_fields_is_ignored_once():
    """It raised KeyError (a traceback) when a caller named the same field twice."""
    m = model_from_hf_config({**DOGE, "some_new_switch": 3}, name="doge",
                             ignore_fields=("some_new_switch", "some_new_switch"))
    assert "some_new_switch" in m.ignored_fields


def test_activation_sparsity_changes_no_count_and_is_listed():
    """Gemma 3n's activation_sparsity_pattern zeroes gate activations after the dense gate_proj: same weights,
    same dense matmuls (docs/model_reader.md); the default gemma3n_text is then refused on AltUp instead."""
    llama = {"model_type": "llama", "hidden_size": 8, "num_hidden_layers": 4, "num_attention_heads": 2,
             "num_key_value_heads": 1, "vocab_size": 10, "intermediate_size": 16, "tie_word_embeddings": False}
    plain = model_from_hf_config(llama, name="llama")
    sparse = model_from_hf_config({**llama, "activation_sparsity_pattern": [0.95, 0.95, 0.0, 0.0]}, name="llama")
    # embedding + head 2·10·8, final norm 8; per layer q 8·8, k and v 8·4 each, o 8·8, MLP 3·8·16, 2 norms of 8
    assert plain.params.total == sparse.params.total == 2 * 10 * 8 + 8 + 4 * (64 + 32 + 32 + 64 + 3 * 8 * 16 + 16)
    assert "activation_sparsity_pattern" in sparse.ignored_fields
