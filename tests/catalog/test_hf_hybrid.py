"""Reading current hybrid / heterogeneous configs (../shared/reference/hf_configs): per-layer
structure follows the config's lists exactly, linear layers hold a constant state, weight formats
come from the quantization configs, unknown keys are refused or ignored by policy.

Expected values are taken from the config files themselves (counted independently of the reader)
or computed by hand in the comments."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from llmecon.catalog.hf_config import load_config_file, model_from_hf_config
from llmecon.errors import CatalogError
from llmecon.spec.deployment import kv_per_chip
from llmecon.spec.plan import Plan

CONFIGS = Path("/work/shared/reference/hf_configs")
for _up in Path(__file__).resolve().parents:
    if (_up / "shared" / "reference" / "hf_configs").is_dir():
        CONFIGS = _up / "shared" / "reference" / "hf_configs"
        break
pytestmark = pytest.mark.skipif(not CONFIGS.is_dir(), reason=f"{CONFIGS} absent (../shared not beside this clone)")


def _raw(name: str) -> dict:
    c = json.loads((CONFIGS / f"{name}_config.json").read_text())
    return {**c, **c.get("text_config", {})}


def _read(name: str):
    return load_config_file(CONFIGS / f"{name}_config.json")


def test_qwen35_follows_layer_types_and_holds_a_constant_deltanet_state():
    m = _read("Qwen--Qwen3.5-397B-A17B")
    types = _raw("Qwen--Qwen3.5-397B-A17B")["layer_types"]
    assert m.n_linear_layers == types.count("linear_attention") == 45
    assert [x == "linear" for x in m.layer_mixers] == [t == "linear_attention" for t in types]
    # 15 full-attention layers x K,V x 2 KV heads x 256 x 2 B (bf16)
    assert m.kv_bytes_per_token() == 15 * 2 * 2 * 256 * 2 == 30_720
    # 45 layers x (64 value heads x 128 x 128 fp32 state + 3 x (2·16·128 + 64·128) bf16 conv state)
    assert m.state_bytes_per_sequence() == 45 * (64 * 128 * 128 * 4 + 3 * (2 * 16 * 128 + 64 * 128) * 2)
    assert float(m.kv_bytes(1000)) == 30_720 * 1000 + m.state_bytes_per_sequence()
    assert m.mtp_layers == 1 and m.params.mtp > 0 and m.params.total_with_mtp > m.params.total
    assert m.attention.output_gate  # attn_output_gate: q_proj emits query and gate


def test_state_flows_into_the_per_chip_memory_used_by_fits_and_the_simulator():
    m = _read("Qwen--Qwen3.5-35B-A3B")
    held = float(kv_per_chip(m, Plan(), batch=1.0, context=0.0))
    assert held == pytest.approx(m.state_bytes_per_sequence(), rel=1e-12) and held > 0


def test_nemotron3_super_follows_the_hybrid_pattern():
    raw = _raw("nvidia--NVIDIA-Nemotron-3-Super-120B-A12B-FP8")
    pattern = raw["hybrid_override_pattern"]
    m = _read("nvidia--NVIDIA-Nemotron-3-Super-120B-A12B-FP8")
    b = m.layer_breakdown()
    assert b["linear_mamba2"] == pattern.count("M")
    assert b["attention_gqa_full"] == pattern.count("*")
    assert b["ffn_moe"] == pattern.count("E") and b["ffn_none"] == pattern.count("M") + pattern.count("*")
    assert m.moe.latent_dim == 1024 and m.moe.shared_ffn_dim == 5376 and not m.ffn_gated
    # Mamba-2 state: 128 heads x 64 x 128 fp32 + conv 3 x (8192 + 2·8·128) bf16, per Mamba layer
    assert m.linear.state_bytes() == 128 * 64 * 128 * 4 + 3 * (8192 + 2 * 8 * 128) * 2
    assert m.weight_dtype == "fp8" and m.expert_weight_dtype == "fp8"


def test_kimi_k3_kda_and_mla_layers_from_linear_attn_config():
    cfg = _raw("moonshotai--Kimi-K3")["linear_attn_config"]
    m = _read("moonshotai--Kimi-K3")
    assert m.n_linear_layers == len(cfg["kda_layers"]) and m.n_attention_layers == len(cfg["full_attn_layers"])
    assert m.layer_mixers[3] == "attention" and m.layer_mixers[0] == "linear"  # 1-based layer 4 is full
    assert m.linear.kind == "kda" and m.attention.kind == "mla" and m.moe.n_shared == 2 and m.moe.latent_dim == 3584
    assert m.expert_weight_dtype == "mxfp4"  # compressed-tensors group 32 float 4-bit


def test_decilm_blocks_give_per_layer_attention_and_ffn_widths():
    blocks = _raw("nvidia--Llama-3_3-Nemotron-Super-49B-v1")["block_configs"]
    m = _read("nvidia--Llama-3_3-Nemotron-Super-49B-v1")
    assert m.n_attention_layers == sum(not b["attention"]["no_op"] for b in blocks) == 49
    assert m.attention.n_kv_heads == 64 // 8
    # ffn_mult 5.25 at d 8192: int(2·5.25·8192/3) = 28672, already a multiple of 256
    i = next(i for i, b in enumerate(blocks) if b["ffn"]["ffn_mult"] == 5.25)
    assert m.layer_ffn_dims[i] == 28672
    # ffn_mult 1.3125: int(2·1.3125·8192/3) = 7168 = 28·256
    j = next(i for i, b in enumerate(blocks) if b["ffn"]["ffn_mult"] == 1.3125)
    assert m.layer_ffn_dims[j] == 7168


def test_glm52_shared_indexers_have_no_indexer_weights_or_cache():
    raw = _raw("zai-org--GLM-5.2")
    m = _read("zai-org--GLM-5.2")
    assert m.layer_sparsity.count("shared") == raw["indexer_types"].count("shared") == 57
    full = _read("zai-org--GLM-5.1")
    # 78 layers of 576 bf16 latent + the fp8 indexer key (128 B + one fp32 scale per 128 values)
    # on the 21 indexed layers only
    assert m.kv_bytes_per_token() == 78 * 576 * 2 + 21 * (128 + 4)
    assert full.kv_bytes_per_token() == 78 * 576 * 2 + 78 * (128 + 4)


def test_minimax_m3_per_layer_moe_list_and_dense_width():
    raw = _raw("MiniMaxAI--MiniMax-M3")
    m = _read("MiniMaxAI--MiniMax-M3")
    assert list(m.moe_layers) == [bool(v) for v in raw["moe_layer_freq"]]
    assert m.layer_ffn_dims[:3] == (12288,) * 3 and m.layer_ffn_dims[3] == 0
    assert m.layer_sparsity.count("indexed") == sum(raw["sparse_attention_config"]["sparse_attention_freq"])


def test_mimo_v2_sliding_layers_use_their_own_heads():
    m = _read("XiaomiMiMo--MiMo-V2-Flash")
    pattern = _raw("XiaomiMiMo--MiMo-V2-Flash")["hybrid_layer_pattern"]
    assert sum(1 for w in m.layer_windows if w == 128) == sum(pattern)
    assert m.local_attention.n_kv_heads == 8 and m.attention.n_kv_heads == 4 and m.local_attention.sinks
    assert m.attention.v_head_dim == 128 and m.attention.head_dim == 192
    # per token: full layers 4 x (192 + 128), sliding 8 x (192 + 128), bf16; 39 of 48 layers sliding
    assert m.kv_bytes_per_token() == (9 * 4 * 320 + 39 * 8 * 320) * 2 and sum(pattern) == 39


def test_gemma4_global_layers_have_their_own_kv_heads_and_share_k_and_v():
    m = _read("google--gemma-4-26B-A4B")
    # global: 2 KV heads x 512, K = V: 2048 values; sliding: 2 x 8 x 256 = 4096 values, window 1024
    n_full = sum(1 for w in m.layer_windows if w == 0)
    assert m.kv_bytes_per_token() == (n_full * 2 * 512 + (30 - n_full) * 2 * 8 * 256) * 2
    assert m.moe.top_k == 8 and all(m.layer_ffn_dims)  # dense MLP beside the MoE block in every layer


def test_hf_quant_config_beside_the_config_sets_the_weight_format(tmp_path):
    m = _read("nvidia--Qwen3.5-397B-A17B-NVFP4")
    assert m.expert_weight_dtype == "nvfp4" and m.weight_dtype == "bf16"
    # NVFP4 is 4.5 bits: routed experts stored at 0.5625 B per weight
    assert m.weight_bytes().routed_experts == pytest.approx(m.params.routed_experts * 0.5625, rel=1e-12)
    (tmp_path / "config.json").write_text((CONFIGS / "nvidia--Qwen3.5-397B-A17B-NVFP4_config.json").read_text())
    assert load_config_file(tmp_path / "config.json").expert_weight_dtype == "nvfp4"  # config_groups alone


_BASE = {"architectures": ["LlamaForCausalLM"], "hidden_size": 64, "num_hidden_layers": 2,
         "num_attention_heads": 4, "vocab_size": 100, "intermediate_size": 128}


def test_unknown_keys_are_refused_and_cosmetic_ones_ignored():
    m = model_from_hf_config({**_BASE, "temperature": 0.7, "vision_start_token_id": 5, "foo_token_id": 3})
    assert set(m.unrecognized_fields) == {"temperature", "vision_start_token_id", "foo_token_id"}
    with pytest.raises(CatalogError, match="unknown field 'frobnicate_heads'"):
        model_from_hf_config({**_BASE, "frobnicate_heads": 3})
    assert model_from_hf_config({**_BASE, "num_kv_shared_layers": 0}).n_layers == 2
    with pytest.raises(CatalogError, match="num_kv_shared_layers"):
        model_from_hf_config({**_BASE, "num_kv_shared_layers": 2})


def test_per_layer_lists_must_have_one_entry_per_layer():
    with pytest.raises(CatalogError, match="layer_types"):
        model_from_hf_config({**_BASE, "layer_types": ["full_attention"]})
    with pytest.raises(CatalogError, match="hybrid_override_pattern"):
        model_from_hf_config({**_BASE, "hybrid_override_pattern": "M*Q"[:2] + "Q"})
