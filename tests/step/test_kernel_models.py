"""Kernel model forms (step.kernels) with kernel-table profile terms, hand-computed; and the
backward-compatible fallback to a profile's scalar terms."""

from __future__ import annotations

import dataclasses

import pytest

from llmecon.catalog.hardware import get_accelerator
from llmecon.spec.efficiency import IDEAL, AttentionTerms, EfficiencyProfile, KernelTerms
from llmecon.step.kernels import decode_attention_s, gemm_s, moe_layer_s, prefill_attention_s

H100 = get_accelerator("h100-sxm")      # datasheet: fp8 1979e12, bf16 989e12 FLOP/s dense, 3.35e12 B/s
B200 = get_accelerator("b200")          # bf16 2250e12 FLOP/s dense, 7.7e12 B/s


def _prof(**kw) -> EfficiencyProfile:
    return dataclasses.replace(IDEAL, name="test", **kw)


def test_datasheet_figures_used_below():
    assert H100.peak("fp8") == 1979e12 and H100.hbm_bandwidth_bytes_per_s == 3.35e12
    assert B200.peak("bf16") == 2250e12 and B200.hbm_bandwidth_bytes_per_s == 7.7e12


def test_gemm_with_ramps_in_m_n_k():
    terms = KernelTerms(fraction=0.5, m_half=16, n_half=0, k_half=1024, hbm_fraction=0.5, floor_s=1e-5)
    prof = _prof(gemm=(("fp8", terms),))
    # m=16, n=4096, k=1024: efficiency 0.5 · 16/32 · 1 · 1024/2048 = 0.125
    flops = 2 * 16 * 4096 * 1024
    compute = flops / (0.125 * 1979e12)
    memory = (16 * 1024 + 1024 * 4096 + 16 * 4096) * 1 / (0.5 * 3.35e12)   # fp8 bytes at half the bandwidth
    assert memory > compute
    assert float(gemm_s(prof, H100, m=16, n=4096, k=1024, dtype="fp8")) == pytest.approx(memory + 1e-5, rel=1e-12)
    # m=4096, n=4096, k=1024: compute-bound, 0.5 · 4096/4112 · 0.5
    big = 2 * 4096 * 4096 * 1024 / (0.5 * 4096 / 4112 * 0.5 * 1979e12)
    assert float(gemm_s(prof, H100, m=4096, n=4096, k=1024, dtype="fp8")) == pytest.approx(big + 1e-5, rel=1e-12)
    # fp8_block prices with the fp8 table where it has no table of its own
    assert float(gemm_s(prof, H100, m=16, n=4096, k=1024, dtype="fp8_block")) == pytest.approx(memory + 1e-5,
                                                                                               rel=1e-12)


def test_gemm_without_table_keeps_the_scalar_terms():
    legacy = _prof(matmul_fraction=0.8, matmul_m_half=100.0, hbm_fraction=0.9, kernel_floor_s=2e-6)
    t = legacy.gemm_terms("fp8")
    assert (t.fraction, t.m_half, t.n_half, t.k_half, t.hbm_fraction, t.floor_s) == (0.8, 100.0, 0, 0, 0.9, 2e-6)
    expected = 2 * 100 * 8192 * 8192 / (0.8 * 0.5 * 989e12)   # m = m_half: half the fraction, bf16 peak
    memory = (100 * 8192 + 8192 * 8192 + 100 * 8192) * 2 / (0.9 * 3.35e12)
    assert float(gemm_s(legacy, H100, m=100, n=8192, k=8192)) == pytest.approx(max(expected, memory) + 2e-6,
                                                                               rel=1e-12)


def test_decode_attention_items_ramp_and_item_cost():
    terms = AttentionTerms(fraction=0.5, hbm_fraction=0.8, items_half=4, item_s=1e-8, floor_s=5e-6)
    prof = _prof(decode_attention=(("bf16", terms),))
    # b=2 sequences at 1023 cached tokens, 8 query / 2 KV heads of 128: 4 (sequence, KV head) items
    kv = 2 * 2 * 2 * 128 * 1024 * 2                 # K and V, 1023 read + 1 written, bf16
    memory = kv / (0.8 * 4 / (4 + 4) * 7.7e12)
    compute = 4 * 2 * 8 * 128 * 1023 / (0.5 * 2250e12)
    assert memory > compute
    got = decode_attention_s(prof, B200, batch=2, kv_len=1023, heads=8, kv_heads=2, head_dim=128)
    assert float(got) == pytest.approx(memory + 4 * 1e-8 + 5e-6, rel=1e-12)
    # a window caps the cached tokens read
    win = decode_attention_s(prof, B200, batch=2, kv_len=1023, heads=8, kv_heads=2, head_dim=128, window=127)
    assert float(win) == pytest.approx(2 * 2 * 2 * 128 * 128 * 2 / (0.8 * 0.5 * 7.7e12) + 4e-8 + 5e-6, rel=1e-12)


def test_prefill_attention_window_pad_and_ramps():
    terms = AttentionTerms(fraction=0.5, isl_half=4, head_dim_half=64, window_pad=1, item_s=1e-9, floor_s=2e-6)
    prof = _prof(prefill_attention=(("bf16", terms),))
    # 1 prompt of 4 tokens, 1 head of 64, window 1 counted as 2: attended 1 + 2 + 2 + 2 = 7 keys
    flops = 4 * 1 * 1 * 64 * 7
    compute = flops / (0.5 * 0.5 * 0.5 * 2250e12)       # fraction · r(isl 4; 4) · r(d 64; 64)
    memory = 1 * 4 * (2 + 2) * 64 * 2 / 7.7e12          # Q, K, V read, O written, at the datasheet bandwidth
    got = prefill_attention_s(prof, B200, batch=1, isl=4, heads=1, kv_heads=1, head_dim=64, window=1)
    assert float(got) == pytest.approx(max(compute, memory) + 1e-9 * 1 + 2e-6, rel=1e-12)


def test_moe_layer_ramps_activation_traffic_and_skew():
    terms = KernelTerms(fraction=0.5, m_half=10, n_half=256, k_half=0, hbm_fraction=0.5, floor_s=3e-5)
    prof = _prof(moe=(("bf16", terms),), moe_skew=(("power_law_1.2", 1.5, 0.5),))
    flops, wbytes, abytes = 6e12, 1e9, 2e8
    # 10 rows per expert, inter 256 per shard: efficiency 0.5 · 0.5 · 0.5
    compute = flops / (0.125 * 2250e12)
    memory = wbytes / (0.5 * 7.7e12)
    act = abytes / (0.5 * 7.7e12)
    kw = dict(flops=flops, weight_bytes=wbytes, act_bytes=abytes, rows_per_expert=10, inter=256, hidden=4096)
    assert float(moe_layer_s(prof, B200, **kw)) == pytest.approx(max(compute, memory) + act + 3e-5, rel=1e-12)
    skewed = moe_layer_s(prof, B200, distribution="power_law_1.2", **kw)
    # 1.5x the token work, half the weights: compute-bound here
    assert float(skewed) == pytest.approx(max(1.5 * compute, 0.5 * memory) + 1.5 * act + 3e-5, rel=1e-12)


def test_ideal_is_the_roofline():
    assert float(gemm_s(IDEAL, H100, m=1, n=1024, k=1024)) == pytest.approx(
        max(2 * 1024 * 1024 / 989e12, (1024 + 1024 * 1024 + 1024) * 2 / 3.35e12), rel=1e-12)
    assert float(decode_attention_s(IDEAL, B200, batch=1, kv_len=99, heads=1, kv_heads=1, head_dim=128)) == \
        pytest.approx(2 * 128 * 100 * 2 / 7.7e12, rel=1e-12)
