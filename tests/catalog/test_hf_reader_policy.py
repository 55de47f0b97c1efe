"""Issue 33: no silent misreads, and a field policy decided by what a field means.

The expected parameter counts are hand counts from the configs' fields (each formula below), and
each equals transformers 5.23.0's own count of the same default config built on the meta device
(``sum(p.numel() for p in model.parameters())``; benchmarks/model_oracle.py printed them). Before
issue 33 the six non-gated models were read as Llama (3-matrix gated MLP): +25% to +38%.
"""

from __future__ import annotations

import json

import pytest

from llmecon.catalog.hf_config import model_from_hf_config
from llmecon.errors import CatalogError


def _read(config: dict, **kw):
    return model_from_hf_config(config, name=config.get("model_type", "custom"), **kw)


# transformers 5.23.0 defaults (AutoConfig.for_model(model_type)), the fields that size the model
PHI = {"model_type": "phi", "hidden_size": 2048, "num_hidden_layers": 24, "num_attention_heads": 32,
       "num_key_value_heads": 32, "vocab_size": 51200, "intermediate_size": 8192, "tie_word_embeddings": False,
       "qk_layernorm": False, "hidden_act": "gelu_new", "partial_rotary_factor": 0.5}
ARCEE = {"model_type": "arcee", "hidden_size": 2560, "num_hidden_layers": 32, "num_attention_heads": 32,
         "num_key_value_heads": 32, "head_dim": 80, "vocab_size": 32000, "intermediate_size": 18432,
         "tie_word_embeddings": False, "attention_bias": False, "mlp_bias": False, "hidden_act": "relu2"}
JAIS2 = {"model_type": "jais2", "hidden_size": 3328, "num_hidden_layers": 32, "num_attention_heads": 26,
         "num_key_value_heads": 26, "head_dim": 128, "vocab_size": 150272, "intermediate_size": 26624,
         "tie_word_embeddings": False, "attention_bias": True, "mlp_bias": True, "hidden_act": "relu2"}
NANOCHAT = {"model_type": "nanochat", "hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 6,
            "num_key_value_heads": 6, "vocab_size": 50304, "intermediate_size": 8192, "tie_word_embeddings": False,
            "attention_bias": False, "hidden_act": "relu2", "final_logit_softcapping": 15.0}
PERSIMMON = {"model_type": "persimmon", "hidden_size": 4096, "num_hidden_layers": 36, "num_attention_heads": 64,
             "vocab_size": 262144, "intermediate_size": 16384, "tie_word_embeddings": False, "qk_layernorm": True,
             "hidden_act": "relu2"}
APERTUS = {"model_type": "apertus", "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
           "num_key_value_heads": 32, "vocab_size": 131072, "intermediate_size": 14336, "tie_word_embeddings": False,
           "attention_bias": False, "hidden_act": "xielu"}


def test_phi_parallel_block_non_gated_mlp_every_linear_biased():
    d, f, v, n = 2048, 8192, 51200, 24
    layer = 4 * (d * d + d) + (d * f + f) + (f * d + d) + 2 * d  # q,k,v,dense + fc1,fc2 + one LayerNorm
    expected = n * layer + v * d + (v * d + v) + 2 * d  # embedding, biased lm_head, final LayerNorm
    assert expected == 1_418_270_720  # transformers 5.23.0 meta-device count
    m = _read(PHI)
    assert not m.ffn_gated and m.params.total == expected


def test_arcee_relu2_mlp_is_two_matrices():
    d, f, v, n = 2560, 18432, 32000, 32
    expected = n * (4 * d * d + 2 * d * f + 2 * d) + 2 * v * d + d
    assert expected == 4_022_766_080  # transformers 5.23.0 meta-device count
    assert _read(ARCEE).params.total == expected


def test_jais2_layernorm_biased_two_matrix_mlp():
    d, f, v, n = 3328, 26624, 150272, 32
    expected = n * (4 * (d * d + d) + (2 * d * f + f + d) + 4 * d) + 2 * v * d + 2 * d
    assert expected == 8_090_401_280  # transformers 5.23.0 meta-device count
    assert _read(JAIS2).params.total == expected


def test_nanochat_weightless_norms_and_non_gated_mlp():
    d, f, v, n = 768, 8192, 50304, 12
    oracle = n * (4 * d * d + 2 * d * f) + 2 * v * d
    assert oracle == 256_573_440  # transformers 5.23.0: its RMSNorms have no weights at all
    # llmecon counts a final norm of d weights it does not know to be weightless (768 = 3e-6)
    assert _read(NANOCHAT).params.total == oracle + d


def test_persimmon_and_apertus_within_a_hundredth_of_a_percent_of_transformers():
    # persimmon: fused biased qkv, biased dense and MLP, q/k LayerNorms of head_dim (their biases,
    # 36 x 2 x 64, are the only difference); apertus: xIELU's two scalars per layer are omitted
    assert _read(PERSIMMON).params.total == pytest.approx(9_397_175_296, rel=1e-6)
    assert _read(APERTUS).params.total == pytest.approx(6_979_596_352, rel=1e-4)
    assert not _read(APERTUS).ffn_gated


# ---- Qwen3-Next: the layer pattern given only by full_attention_interval ----------------------
QWEN3_NEXT = {"architectures": ["Qwen3NextForCausalLM"], "model_type": "qwen3_next", "hidden_size": 2048,
              "num_hidden_layers": 48, "num_attention_heads": 16, "num_key_value_heads": 2, "head_dim": 256,
              "full_attention_interval": 4, "linear_num_value_heads": 32, "linear_num_key_heads": 16,
              "linear_key_head_dim": 128, "linear_value_head_dim": 128, "linear_conv_kernel_dim": 4,
              "intermediate_size": 5120, "moe_intermediate_size": 512, "shared_expert_intermediate_size": 512,
              "num_experts": 512, "num_experts_per_tok": 10, "decoder_sparse_step": 1, "mlp_only_layers": [],
              "vocab_size": 151936, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
              "partial_rotary_factor": 0.25, "rope_theta": 10000000, "use_sliding_window": False}


def test_full_attention_interval_types_every_layer_and_holds_linear_state():
    m = _read(QWEN3_NEXT)
    assert m.n_attention_layers == 12 and m.n_linear_layers == 36
    assert [x == "attention" for x in m.layer_mixers] == [(i + 1) % 4 == 0 for i in range(48)]
    # 12 full layers x (K + V) x 2 KV heads x 256 x 2 B; issue 33 measured 98,304 (all 48 as full)
    assert m.kv_bytes_per_token() == 12 * 2 * 2 * 256 * 2 == 24_576
    # 36 layers x (32 value heads x 128 x 128 fp32 + 3 x (2·16·128 + 32·128) bf16 conv inputs)
    assert m.state_bytes_per_sequence() == 36 * (32 * 128 * 128 * 4 + 3 * (2 * 16 * 128 + 32 * 128) * 2)
    assert m.attention.output_gate  # Qwen3NextAttention: q_proj emits query and gate


def test_layer_types_and_full_attention_interval_that_disagree_are_refused_naming_both():
    types = ["full_attention" if (i + 1) % 2 == 0 else "linear_attention" for i in range(48)]
    with pytest.raises(CatalogError, match="'layer_types' and field 'full_attention_interval' = 4 disagree"):
        _read({**QWEN3_NEXT, "layer_types": types})
    agree = ["full_attention" if (i + 1) % 4 == 0 else "linear_attention" for i in range(48)]
    assert _read({**QWEN3_NEXT, "layer_types": agree}).n_linear_layers == 36


# ---- field policy ------------------------------------------------------------------------------
LLAMA = {"model_type": "llama", "hidden_size": 256, "num_hidden_layers": 2, "num_attention_heads": 4,
         "num_key_value_heads": 2, "vocab_size": 1000, "intermediate_size": 512}


@pytest.mark.parametrize("key, value", [
    ("original_max_position_embeddings", 8192),   # RoPE length extension: no weights
    ("model_max_length", 131072),                  # tokenizer length hint
    ("embedding_multiplier", 12.0),                # Granite scalar multipliers
    ("logit_scale", 0.0625),                       # Cohere
    ("moe_router_logit_softcapping", 30.0),        # router numerics
    ("clip_qkv", 8.0),                             # OLMo activation clamp
    ("use_parallel_residual", True),               # GPT-NeoX residual dataflow: same weights
    ("mamba_chunk_size", 256),                     # scan kernel tiling
    ("attention_probs_dropout_prob", 0.1),         # training only
    ("some_future_field", None),                   # null: the config states nothing
])
def test_fields_that_change_nothing_llmecon_computes_are_ignored_and_listed(key, value):
    base = _read(LLAMA)
    m = _read({**LLAMA, key: value})
    assert key in m.ignored_fields
    assert m.params.total == base.params.total and m.kv_bytes_per_token() == base.kv_bytes_per_token()


@pytest.mark.parametrize("key, value", [
    ("attention_hidden_size", 4096),     # RWKV / Zamba: a width llmecon does not read
    ("frobnicate_heads", 3),             # an unknown whole number may be a size
    ("embedding_scale", 4),              # named like a scale but a whole number: could be a size
    ("per_layer_config", {"1": {"head_dim": 512}}),
])
def test_fields_that_may_change_the_math_are_refused_with_value_and_workaround(key, value):
    with pytest.raises(CatalogError) as err:
        _read({**LLAMA, key: value})
    message = str(err.value)
    assert f"'{key}'" in message and f"ignore_field {key}" in message and repr(value)[:20] in message


def test_ignore_fields_reads_a_vouched_field_as_absent_and_says_so():
    m = _read({**LLAMA, "frobnicate_heads": 3}, ignore_fields=("frobnicate_heads",))
    assert "frobnicate_heads" in m.ignored_fields
    assert any("frobnicate_heads" in a and "vouches" in a for a in m.assumptions)
    assert m.params.total == _read(LLAMA).params.total


def test_a_wrapper_s_processor_fields_are_ignored_its_text_config_is_policed():
    wrapper = {"model_type": "llama", "spatial_merge_size": 2, "merge_block_count": 64,
               "text_config": dict(LLAMA)}
    m = _read(wrapper)
    assert {"spatial_merge_size", "merge_block_count"} <= set(m.ignored_fields)
    with pytest.raises(CatalogError, match="'merge_block_count'"):
        _read({**wrapper, "text_config": {**LLAMA, "merge_block_count": 64}})


def test_unknown_architecture_is_refused_not_read_as_llama():
    with pytest.raises(CatalogError, match="model_type 'brand_new_lm' is not known"):
        _read({**LLAMA, "model_type": "brand_new_lm"})
    with pytest.raises(CatalogError, match="BrandNewForCausalLM"):
        _read({**LLAMA, "model_type": "brand_new_lm", "architectures": ["BrandNewForCausalLM"]})
    # a known model_type under an unknown class name is read by its model_type
    assert _read({**LLAMA, "architectures": ["MyLlamaForCausalLM"]}).ffn_gated


MOE = {**LLAMA, "model_type": "deepseek_v3", "num_hidden_layers": 4, "n_routed_experts": 8,
       "num_experts_per_tok": 2, "moe_intermediate_size": 128}


def test_mlp_layer_types_decide_unless_a_pattern_field_the_config_sets_disagrees():
    types = ["dense", "sparse", "sparse", "sparse"]
    m = _read({**MOE, "mlp_layer_types": types})
    assert list(m.moe_layers) == [False, True, True, True]
    assert list(_read({**MOE, "mlp_layer_types": types, "first_k_dense_replace": 1}).moe_layers) == list(m.moe_layers)
    with pytest.raises(CatalogError, match="'mlp_layer_types' and field 'first_k_dense_replace' = 2 disagree"):
        _read({**MOE, "mlp_layer_types": types, "first_k_dense_replace": 2})


def test_cli_ignore_field_on_a_model_command(tmp_path):
    from cli_run import run

    path = tmp_path / "config.json"
    path.write_text(json.dumps({**LLAMA, "frobnicate_heads": 3}))
    refused = run("model", str(path), "--json")
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert "frobnicate_heads" in refused.stderr and "--ignore-field frobnicate_heads" in refused.stderr
    ok = run("model", str(path), "--ignore-field", "frobnicate_heads", "--json")
    assert ok.returncode == 0, ok.stderr
    assert "frobnicate_heads" in json.loads(ok.stdout)["ignored_fields"]


def test_mimo_v2_flash_sliding_layers_hold_twice_the_kv_heads_without_swa_fields():
    """transformers' MiMoV2FlashAttention: sliding layers have 2 x num_key_value_heads (and sinks) when the
    config has no swa_* fields. Default config: 48 layers, layer 0 and every 6th full (9), 39 sliding;
    full 4 KV heads x (192 + 128), sliding 8 x (192 + 128): 9·1280 + 39·2560 = 111,360 KV elements per
    token, as transformers' cache holds after a forward on the meta device (the reader gave 61,440)."""
    types = ["full_attention" if (i == 0 or not (i + 1) % 6) else "sliding_attention" for i in range(48)]
    config = {"model_type": "mimo_v2_flash", "hidden_size": 4096, "num_hidden_layers": 48,
              "num_attention_heads": 64, "num_key_value_heads": 4, "head_dim": 192, "v_head_dim": 128,
              "layer_types": types, "sliding_window": 129, "intermediate_size": 16384, "vocab_size": 152576}
    m = _read(config)
    assert m.kv_bytes_per_token("bf16") / 2 == 9 * 4 * 320 + 39 * 8 * 320 == 111_360
    assert m.local_attention.sinks and not m.attention.sinks


def test_mamba2_layers_written_as_linear_attention_read_as_mamba2():
    """transformers' GraniteMoeHybridConfig writes its Mamba-2 layers as layer_types 'linear_attention'
    with mamba_* fields (no Gated DeltaNet fields): the mixer the fields describe is read. Mamba-2 in_proj
    d -> 2·H·P + 2·G·N + H, conv over H·P + 2·G·N channels (kernel 4, biased), dt_bias, A_log, D, a
    gated norm of H·P and out_proj H·P -> d."""
    d, heads, head, groups, state = 1024, 16, 64, 1, 128
    config = {"model_type": "granitemoehybrid", "hidden_size": d, "num_hidden_layers": 2,
              "num_attention_heads": 8, "num_key_value_heads": 8, "vocab_size": 1000, "intermediate_size": 2048,
              "layer_types": ["linear_attention", "full_attention"], "mamba_n_heads": heads, "mamba_d_head": head,
              "mamba_n_groups": groups, "mamba_d_state": state, "mamba_d_conv": 4, "mamba_conv_bias": True,
              "mamba_expand": 1}
    m = _read(config)
    inner, conv_ch = heads * head, heads * head + 2 * groups * state
    mixer = d * (2 * inner + 2 * groups * state + heads) + conv_ch * 4 + conv_ch + 3 * heads + inner + inner * d
    assert m.linear.kind == "mamba2" and m.params.linear_mixers == mixer
    assert m.state_bytes_per_sequence() == heads * head * state * 4 + 3 * conv_ch * 2
