"""Issue 18 item 6: DeepSeek sparse attention's cache uses DeepSeek's own fp8 layout.

FlashMLA README ("FP8 KV cache" of the sparse decoding kernels, DeepSeek-V3.2): per token per
layer, 512 fp8 latent values + 4 fp32 scales (one per 128) + 64 bf16 rope values = 656 B. The
lightning indexer's key (DeepSeek-V3.2-Exp inference/model.py): 128 fp8 values + one fp32 scale
= 132 B. DeepSeek-V3.2-Exp has 61 layers and top-k 2048. Dense attention over the same cache
reads the 656 B latents only (no indexer).
"""

from __future__ import annotations

import pytest

from llmecon.catalog.models import get_model

LAYERS, LATENT, INDEX, TOPK = 61, 656, 132, 2048


def test_fp8_bytes_per_token_are_the_published_layout():
    m = get_model("deepseek-v3.2-exp")
    assert m.kv_bytes_per_token("fp8") == LAYERS * (LATENT + INDEX)  # 48,068 B
    # bf16 cache: (512 + 64)·2 B latent; the indexer key stays fp8 + scale
    assert m.kv_bytes_per_token("bf16") == LAYERS * (576 * 2 + INDEX)


@pytest.mark.parametrize("L", [1000.0, 2048.0, 131072.0, 1e6])
def test_sparse_reads_and_the_dense_comparison(L):
    m = get_model("deepseek-v3.2-exp")
    assert float(m.kv_read_bytes(L, "fp8")) == pytest.approx(LAYERS * (INDEX * L + LATENT * min(L, TOPK)))
    assert float(m.dense_kv_read_bytes(L, "fp8")) == pytest.approx(LAYERS * LATENT * L)


def test_dsa_saving_at_128k_is_4_6x():
    """656·131072 / (132·131072 + 656·2048) = 4.61: the lecture's "~5×" within 20%."""
    m = get_model("deepseek-v3.2-exp")
    L = 131072.0
    ratio = float(m.dense_kv_read_bytes(L, "fp8")) / float(m.kv_read_bytes(L, "fp8"))
    assert ratio == pytest.approx(656 * L / (132 * L + 656 * 2048), rel=1e-12)
    assert ratio == pytest.approx(4.6116, abs=1e-4)


def test_dense_mla_fp8_has_no_per_token_scales():
    """DeepSeek-V3 (dense MLA) at fp8: every latent and rope value at one byte, 61·576 B."""
    assert get_model("deepseek-v3").kv_bytes_per_token("fp8") == 61 * 576
