"""DeepSeek-V4 configs read (catalog/hf_dsv4.py): the catalogue entries (no ../shared needed) and the
six published configs in ../shared/reference/hf_configs (skipped, saying why, when absent).

Expected values are counted by hand from the config fields in the comments. No parameter count is
published beside these configs (the names state no size), so totals are checked piece by piece."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from llmecon.catalog.hf_config import load_config_file, model_from_hf_config
from llmecon.catalog.models import get_model, raw_config
from llmecon.errors import CatalogError

CONFIGS = Path("/work/shared/reference/hf_configs")
for _up in Path(__file__).resolve().parents:
    if (_up / "shared" / "reference" / "hf_configs").is_dir():
        CONFIGS = _up / "shared" / "reference" / "hf_configs"
        break
V4 = ["deepseek-ai--DeepSeek-V4-Flash", "deepseek-ai--DeepSeek-V4-Pro", "nvidia--DeepSeek-V4-Flash-NVFP4",
      "nvidia--DeepSeek-V4-Pro-NVFP4", "sgl-project--DeepSeek-V4-Flash-FP8", "sgl-project--DeepSeek-V4-Pro-FP8"]
shared = pytest.mark.skipif(not CONFIGS.is_dir(), reason=f"{CONFIGS} absent (../shared not beside this clone)")


def test_flash_layers_follow_compress_ratios():
    m = get_model("deepseek-v4-flash")
    ratios = raw_config("deepseek-v4-flash")["compress_ratios"]
    assert len(ratios) == 44 and ratios[-1] == 0  # 43 layers + the MTP module
    assert m.layer_compress == tuple(ratios[:43])
    assert m.layer_compress.count(0) == 2 and m.layer_compress.count(4) == 21 and m.layer_compress.count(128) == 20
    assert m.layer_sparsity == tuple("indexed" if r == 4 else "dense" for r in ratios[:43])
    assert set(m.layer_windows) == {128} and m.hyper_connections == 4 and m.moe.hash_layers == 3
    a = m.attention
    assert (a.kind, a.n_kv_heads, a.head_dim, a.k_eq_v, a.o_groups, a.o_lora_rank) == ("mqa", 1, 512, True, 8, 1024)
    assert m.mtp_layers == 1 and m.params.mtp > 0


def test_flash_kv_held_and_read_by_hand():
    m = get_model("deepseek-v4-flash")
    assert m.kv_dtype == "fp8"
    # short context: 43 raw entries of 584 B + 21 x (584 + 132)/4 + 20 x 584/128
    assert m.kv_bytes_per_token() == pytest.approx(43 * 584 + 21 * 716 / 4 + 20 * 584 / 128, rel=1e-12)
    # constant compressor state: 21 x (8·2048·4 + 8·512·4) + 20 x 128·1024·4
    assert m.state_bytes_per_sequence() == 21 * (65536 + 16384) + 20 * 524288 == 12_206_080
    # long context slope: 21 x 179 + 20 x 4.5625 B per token (the windows are full)
    slope = (float(m.kv_bytes(2 ** 20)) - float(m.kv_bytes(2 ** 19))) / 2 ** 19
    assert slope == pytest.approx(21 * 179 + 20 * 4.5625, rel=1e-12)
    # one decode step at L = 2^20: CSA reads 128 + 512 entries and 2^18 index keys, HCA 128 + 8192 entries
    L = 2 ** 20
    csa = 640 * 584 + (L // 4) * 132
    hca = (128 + L // 128) * 584
    expected = 21 * csa + 20 * hca + 2 * 128 * 584 + 12_206_080
    assert float(m.kv_read_bytes(L)) == pytest.approx(expected, rel=1e-12) == 844_045_312
    # bf16 cache: 1024 B per entry
    assert m.kv_bytes_per_token("bf16") == pytest.approx(43 * 1024 + 21 * (1024 + 132) / 4 + 20 * 8, rel=1e-12)


def test_flash_parameter_pieces_by_hand():
    p = get_model("deepseek-v4-flash").params
    # per layer: q 4096·1024 + 1024 + 1024·64·512; kv 4096·512 + 512; out 64·512·1024 + 8·1024·4096; 64 sinks
    base = 4096 * 1024 + 1024 + 1024 * 64 * 512 + 4096 * 512 + 512 + 64 * 512 * 1024 + 8 * 1024 * 4096 + 64
    csa = base + (4 * 1024 + 4096 * 2048 + 512) + (1024 * 64 * 128 + 4096 * 64 + 4 * 256 + 4096 * 512 + 128)
    hca = base + (128 * 512 + 4096 * 1024 + 512)
    assert p.attention == 2 * base + 21 * csa + 20 * hca == 5_086_317_888
    assert p.routed_experts == 43 * 256 * 3 * 4096 * 2048
    assert p.routed_experts_active == 43 * 6 * 3 * 4096 * 2048
    assert p.shared_experts == 43 * 3 * 4096 * 2048
    assert p.router == 43 * 4096 * 256 + 40 * 256  # the 3 hash layers have no router bias
    assert p.hyper_connections == 43 * 2 * (24 * 16384 + 27) + 4 * 16384 + 5
    assert p.embedding == p.lm_head == 129280 * 4096


def test_pro_reads_with_its_own_pattern():
    m = get_model("deepseek-v4-pro")
    assert m.layer_compress.count(4) == 30 and m.layer_compress.count(128) == 31 and 0 not in m.layer_compress
    assert m.attention.n_heads == 128 and m.attention.index_topk == 1024 and m.attention.o_groups == 16
    # per layer attention without compressor: q 7168·1536 + 1536 + 1536·128·512; kv 7168·512 + 512;
    # out 128·512·1024 + 16·1024·7168; 128 sinks
    base = 7168 * 1536 + 1536 + 1536 * 65536 + 7168 * 512 + 512 + 65536 * 1024 + 16 * 1024 * 7168 + 128
    csa = base + (4096 + 7168 * 2048 + 512) + (1536 * 64 * 128 + 7168 * 64 + 1024 + 7168 * 512 + 128)
    hca = base + (65536 + 7168 * 1024 + 512)
    assert m.params.attention == 30 * csa + 31 * hca
    assert m.params.routed_experts == 61 * 384 * 3 * 7168 * 3072


@shared
@pytest.mark.parametrize("name", V4)
def test_every_v4_config_is_read(name):
    m = load_config_file(CONFIGS / f"{name}_config.json")
    flash = "Flash" in name
    ref = get_model("deepseek-v4-flash" if flash else "deepseek-v4-pro")
    assert m.params.total == ref.params.total and m.params.active == ref.params.active
    assert float(m.kv_read_bytes(100_000)) == float(ref.kv_read_bytes(100_000))
    # every V4 checkpoint's quantization_config has weight_block_size [128, 128]: its fp8 is fp8_block
    expert = {"deepseek-ai": "mxfp4", "nvidia": "nvfp4", "sgl-project": "fp8_block"}[name.split("--")[0]]
    assert (m.weight_dtype, m.expert_weight_dtype) == ("fp8_block", expert)
    if expert != "fp8_block":
        assert m.ffn_weight_dtype == "fp8_block"  # shared experts stay fp8 blocks


@shared
def test_v4_refusals_name_the_field():
    raw = json.loads((CONFIGS / "deepseek-ai--DeepSeek-V4-Flash_config.json").read_text())
    bad_ratio = {**raw, "compress_ratios": [3] + raw["compress_ratios"][1:]}
    with pytest.raises(CatalogError, match=r"compress_ratios\[0\] = 3"):
        model_from_hf_config(bad_ratio)
    with pytest.raises(CatalogError, match="MTP"):
        model_from_hf_config({**raw, "compress_ratios": raw["compress_ratios"][:-1] + [4]})
    with pytest.raises(CatalogError, match="num_key_value_heads"):
        model_from_hf_config({**raw, "num_key_value_heads": 2})
    with pytest.raises(CatalogError, match="expert_dtype"):
        model_from_hf_config({**raw, "expert_dtype": "int3"})
