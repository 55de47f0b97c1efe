"""The default weight format read from a config's ``quantization_config`` (hf_formats.weight_dtypes,
docs/model_reader.md §3b): fp8 with ``weight_block_size`` is block-scaled ``fp8_block``, without it
per-tensor ``fp8``. Configs written by hand here; the catalogue checks read the shipped configs."""
from __future__ import annotations

import pytest

from llmecon.catalog.models import get_model
from llmecon.catalog.hf_config import model_from_hf_config
from llmecon.errors import CatalogError

# A 4-layer DeepSeek-V3-shaped MoE, small (the shape does not matter to the format).
MOE = {"model_type": "deepseek_v3", "hidden_size": 256, "num_hidden_layers": 4, "num_attention_heads": 4,
       "num_key_value_heads": 2, "vocab_size": 1000, "intermediate_size": 512, "n_routed_experts": 8,
       "num_experts_per_tok": 2, "moe_intermediate_size": 128, "torch_dtype": "bfloat16"}
# DeepSeek-V3's own quantization_config (deepseek-ai/DeepSeek-V3 config.json, as in the catalogue)
BLOCK = {"quant_method": "fp8", "fmt": "e4m3", "weight_block_size": [128, 128], "activation_scheme": "dynamic"}


def _read(config: dict):
    return model_from_hf_config(config, name="t")


def _formats(m) -> tuple[str, str, str]:
    return m.weight_dtype, m.expert_weight_dtype, m.ffn_weight_dtype


def test_fp8_with_weight_block_size_is_fp8_block_for_every_weight():
    m = _read({**MOE, "quantization_config": BLOCK})
    assert m.weight_dtype == "fp8_block" and m.expert_weight_dtype == "fp8_block"
    assert m.ffn_weight_dtype in ("", "fp8_block")  # '' = the non-expert format


def test_fp8_without_weight_block_size_stays_per_tensor_fp8():
    per_tensor = {k: v for k, v in BLOCK.items() if k != "weight_block_size"}
    m = _read({**MOE, "quantization_config": per_tensor})
    assert m.weight_dtype == "fp8" and m.expert_weight_dtype == "fp8"


def test_deepseek_v4_fp8_experts_follow_the_checkpoint_blocks_fp4_experts_are_mxfp4():
    fp8 = _read({**MOE, "quantization_config": BLOCK, "expert_dtype": "fp8"})
    assert _formats(fp8) == ("fp8_block", "fp8_block", "fp8_block")
    fp4 = _read({**MOE, "quantization_config": BLOCK, "expert_dtype": "fp4"})
    assert _formats(fp4) == ("fp8_block", "mxfp4", "fp8_block")  # shared experts and the rest: fp8 blocks


def test_another_block_shape_is_fp8_block_and_says_which_kernels_price_it():
    m = _read({**MOE, "quantization_config": {**BLOCK, "weight_block_size": [1, 128]}})
    assert m.weight_dtype == "fp8_block"
    assert any("weight_block_size [1, 128]" in a and "128x128" in a for a in m.assumptions)
    plain = _read({**MOE, "quantization_config": BLOCK})
    assert not any("weight_block_size" in a for a in plain.assumptions)


@pytest.mark.parametrize("block", [128, "128x128", [128], [128, 0], [128.0, 128], [True, 128]])
def test_a_block_size_that_is_not_two_positive_integers_is_refused_naming_the_field(block):
    with pytest.raises(CatalogError, match=r"weight_block_size.*two positive integers"):
        _read({**MOE, "quantization_config": {**BLOCK, "weight_block_size": block}})


@pytest.mark.parametrize("name", ["deepseek-v3", "deepseek-v3.2-exp", "kimi-k2", "mimo-v2-flash"])
def test_catalogued_block_fp8_checkpoints_default_to_fp8_block(name):
    # each catalogue config has quantization_config fp8 with weight_block_size [128, 128]
    m = get_model(name)
    assert (m.weight_dtype, m.expert_weight_dtype) == ("fp8_block", "fp8_block")


def test_fp8_block_weighs_what_fp8_weighs():
    # the block scales (one fp32 per 128 x 128 = 0.002 bit/element) are omitted in both: 8 bits
    m = get_model("deepseek-v3")
    assert m.weight_bytes().total == m.weight_bytes("fp8").total == m.params.total
