"""The crossover context with attention FLOPs counted (issue 18, item 1): hand-computed cases on
DeepSeek-V3 that fail on the matmul-only crossover, and properties of the closed forms and of
``crossover_context_of`` on deployments.

Direction of the correction: attention FLOPs a >= 0 per cached token add to the compute side, so
the crossover with attention, 2·N/(R·kv - a), is never below the lecture's 2·N/(R·kv), and is
infinite ("never") once a >= R·kv.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmecon.catalog.hardware import get_system
from llmecon.catalog.models import get_model
from llmecon.econ.batching import (balance_batch_at_context_of, balance_batch_of, balance_batch_with_kv,
                                   batch_economics, crossover_context, crossover_context_lecture,
                                   crossover_context_of)
from llmecon.econ.context import context_economics
from llmecon.spec.deployment import Deployment
from llmecon.spec.plan import Plan

FAST = settings(max_examples=60, deadline=None)

# DeepSeek-V3 (catalogue): matmul FLOPs per token, 2 per weight a token uses (attention projections,
# 3 dense FFNs, router, shared + 8 of 256 routed experts, LM head; norms not counted)
DSV3_MATMUL = 73_249_473_536.0
# absorbed MLA decode: per layer per cached token 2·heads·((kv_lora + rope) + kv_lora) FLOPs
DSV3_ATTN = 61 * 2 * 128 * (576 + 512)          # 16,990,208 FLOP
DSV3_KV = 61 * 576 * 2                          # 70,272 B of bf16 latent + rope key
H100_BF16, H100_FP8, H100_BW = 989e12, 1979e12, 3.35e12
H200_BW = 4.8e12


def _dsv3(system: str, plan: Plan, weight_dtype=None) -> Deployment:
    return Deployment(model=get_model("deepseek-v3"), system=get_system(system), plan=plan, weight_dtype=weight_dtype)


def test_catalogue_numbers_the_hand_cases_use():
    m = get_model("deepseek-v3")
    assert m.matmul_flops_per_token().total == DSV3_MATMUL
    assert float(m.attention_flops_per_token(1.0)) == DSV3_ATTN == 16_990_208
    # the checkpoint's block-scaled fp8 (weight_block_size [128, 128]): fp8's byte and fp8's peak, so the
    # hand cases below (1 B/weight, H100_FP8) are unchanged by the format's name
    assert m.kv_bytes_per_token("bf16") == DSV3_KV and m.weight_dtype == "fp8_block" and m.kv_dtype == "bf16"
    h100, h200 = get_system("hgx-h100").accelerator, get_system("hgx-h200").accelerator
    assert (h100.peak("bf16"), h100.peak("fp8"), h100.hbm_bandwidth_bytes_per_s) == (H100_BF16, H100_FP8, H100_BW)
    assert h100.peak("fp8_block") == H100_FP8 and m.weight_bytes().total == m.params.total
    assert (h200.peak("bf16"), h200.hbm_bandwidth_bytes_per_s) == (H100_BF16, H200_BW)


def test_deepseek_v3_h100_attention_dp_fp8():
    """DeepSeek-V3 on hgx-h100 under tp1·ep16 (attention data-parallel: adp = 16 groups of one chip,
    two HGX nodes), the catalogue's fp8 weights, bf16 KV. Per chip everything divides by 16, so one
    sequence's times per generated token are: matmul M/F_fp8 = 73,249,473,536/1.979e15 = 37.01 us;
    per cached token KV reads 70,272/3.35e12 = 20.977 ps and attention 16,990,208/989e12 = 17.179 ps.
    L_x = 37.01 us/(20.977 - 17.179) ps = 9,746.68 tokens. The matmul-only crossover on the same step
    is 37.01 us/20.977 ps = 1,764.5 (what the code returned before issue 18)."""
    dep = _dsv3("hgx-h100", Plan(tp=1, ep=16))
    expected = (DSV3_MATMUL / H100_FP8) / (DSV3_KV / H100_BW - DSV3_ATTN / H100_BF16)
    assert expected == pytest.approx(9_746.68, abs=0.01)
    assert crossover_context_of(dep) == pytest.approx(expected, rel=1e-9)
    assert crossover_context_of(dep, attention=False) == pytest.approx((DSV3_MATMUL / H100_FP8) / (DSV3_KV / H100_BW),
                                                                       rel=1e-9)


def test_deepseek_v3_h100_attention_dp_bf16_is_the_single_chip_closed_form():
    """bf16 weights under tp1·ep32 (32 chips of one attention group each): matmul and attention both
    at the bf16 peak, so the deployment's crossover is the one-chip closed form
    L_x = M/(R·kv - a) with R = 989e12/3.35e12 = 295.22: 73,249,473,536/(20,745,972.5 - 16,990,208)
    = 19,503.2 tokens (the lecture's form, M/(R·kv), gives 3,530.8)."""
    dep = _dsv3("hgx-h100", Plan(tp=1, ep=32), weight_dtype="bf16")
    r = H100_BF16 / H100_BW
    closed = float(crossover_context(active_params=DSV3_MATMUL / 2, flops_per_byte=r, kv_bytes_per_token=DSV3_KV,
                                     attention_flops_per_cached_token=DSV3_ATTN))
    assert closed == pytest.approx(19_503.2, abs=0.1)
    assert crossover_context_of(dep) == pytest.approx(closed, rel=1e-9)
    lecture = float(crossover_context_lecture(active_params=DSV3_MATMUL / 2, flops_per_byte=r,
                                              kv_bytes_per_token=DSV3_KV))
    assert lecture == pytest.approx(3_530.8, abs=0.1)


def test_deepseek_v3_h100_tensor_parallel_reads_the_whole_latent():
    """tp4·ep8 (adp 8, 32 chips): each chip reads the whole latent of its group's sequences (KV / 8)
    but computes a quarter of the heads (attention and matmul / 32):
    L_x = (M/F_fp8/32)/(kv/BW/8 - a/F_bf16/32) = 1.1567 us/(2.6221 - 0.5368) ps = 554.69 tokens."""
    dep = _dsv3("hgx-h100", Plan(tp=4, ep=8))
    expected = (DSV3_MATMUL / H100_FP8 / 32) / (DSV3_KV / H100_BW / 8 - DSV3_ATTN / H100_BF16 / 32)
    assert expected == pytest.approx(554.69, abs=0.01)
    assert crossover_context_of(dep) == pytest.approx(expected, rel=1e-9)


def test_deepseek_v3_h200_attention_dp_never():
    """On H200 (4.8 TB/s) a cached token's KV read takes 70,272/4.8e12 = 14.64 ps, less than its
    attention 17.18 ps (242 FLOP/B above the bf16 ridge 206): KV reads never catch up -> inf, and the
    balance batch falls below B*_0 with context instead of rising to infinity. Under tp2 each chip
    does half the attention (121 FLOP/B per chip) and the crossover is finite again:
    (M/F_fp8/16)/(kv/BW/8 - a/F_bf16/16) = 3,058.75 tokens."""
    dep = _dsv3("hgx-h200", Plan(tp=1, ep=16))
    assert math.isinf(crossover_context_of(dep))
    b0 = balance_batch_of(dep)
    assert balance_batch_at_context_of(dep, 0.0) == pytest.approx(b0, rel=1e-12)
    assert balance_batch_at_context_of(dep, 65_536) < balance_batch_at_context_of(dep, 8_192) < b0
    e = context_economics(dep, contexts=[1024, 4096])
    assert e.attention_compute_bound and e.attention_flops_per_kv_byte_per_chip == pytest.approx(
        DSV3_ATTN / DSV3_KV, rel=1e-12)
    tp2 = _dsv3("hgx-h200", Plan(tp=2, ep=8))
    expected = (DSV3_MATMUL / H100_FP8 / 16) / (DSV3_KV / H200_BW / 8 - DSV3_ATTN / H100_BF16 / 16)
    assert crossover_context_of(tp2) == pytest.approx(expected, rel=1e-9)
    assert expected == pytest.approx(3_058.75, abs=0.01)
    e2 = context_economics(tp2, contexts=[1024, 4096])
    assert not e2.attention_compute_bound
    assert e2.attention_flops_per_kv_byte_per_chip == pytest.approx(DSV3_ATTN / DSV3_KV / 2, rel=1e-12)


def test_balance_batch_at_context_matches_closed_form():
    """With a finite crossover B*(L) = B*_0/(1 - L/L_x) (SPEC A3), attention counted in L_x; inf
    at and beyond L_x. batch_economics reports the measured value."""
    dep = _dsv3("hgx-h100", Plan(tp=1, ep=16))
    b0, lx = balance_batch_of(dep), crossover_context_of(dep)
    for length in (0.0, 1024.0, 4096.0, 9000.0):
        assert balance_batch_at_context_of(dep, length) == pytest.approx(
            float(balance_batch_with_kv(balance_batch=b0, context=length, crossover_context=lx)), rel=1e-9)
    assert math.isinf(balance_batch_at_context_of(dep, 2 * lx))
    e = batch_economics(dep, context=4096.0, batches=[1.0, 64.0])
    assert e.crossover_context == pytest.approx(lx, rel=1e-12)
    assert e.balance_batch_at_context == pytest.approx(b0 / (1 - 4096.0 / lx), rel=1e-9)


# ---- properties ----------------------------------------------------------------------------------


@FAST
@given(n=st.floats(min_value=1e8, max_value=1e13), r=st.floats(min_value=10, max_value=2000),
       kv=st.floats(min_value=100, max_value=1e7), share=st.floats(min_value=0, max_value=2))
def test_crossover_with_attention_never_below_the_lecture(n, r, kv, share):
    """a = share·R·kv: below the ridge (share < 1) L_x = 2N/(R·kv·(1 - share)) >= 2N/(R·kv); at and
    above it, never (inf); a = 0 gives the lecture's value exactly."""
    a = share * r * kv
    with_attn = float(crossover_context(active_params=n, flops_per_byte=r, kv_bytes_per_token=kv,
                                        attention_flops_per_cached_token=a))
    lecture = float(crossover_context_lecture(active_params=n, flops_per_byte=r, kv_bytes_per_token=kv))
    assert with_attn >= lecture * (1 - 1e-12)
    if r * kv - a > 0:
        assert with_attn == pytest.approx(2 * n / (r * kv - a), rel=1e-12)
    else:
        assert math.isinf(with_attn)
    assert float(crossover_context(active_params=n, flops_per_byte=r, kv_bytes_per_token=kv,
                                   attention_flops_per_cached_token=0.0)) == lecture


@pytest.mark.parametrize("model, system, plan", [
    ("deepseek-v3", "hgx-h100", Plan(tp=8, ep=8)), ("deepseek-v3", "gb200-nvl72", Plan(tp=1, ep=16)),
    ("llama-3.1-70b", "hgx-h100", Plan(tp=4)), ("llama-3.1-8b", "hgx-h200", Plan(tp=1)),
    ("gemma-3-27b", "hgx-h100", Plan(tp=2)), ("deepseek-v3.2-exp", "hgx-h200", Plan(tp=1, ep=8)),
    ("qwen3-30b-a3b", "hgx-h100", Plan(tp=1, ep=2, pp=2)),
])
def test_deployment_crossover_with_attention_never_below_matmul_only(model, system, plan):
    """On any deployment counting attention on the compute side can only move the crossover out;
    where it is finite, one sequence's KV-read time equals its compute time there."""
    dep = Deployment(model=get_model(model), system=get_system(system), plan=plan)
    with_attn, without = crossover_context_of(dep), crossover_context_of(dep, attention=False)
    assert with_attn >= without * (1 - 1e-9)
    if math.isfinite(with_attn):
        from llmecon.step.inference import decode_of

        # a sequence's share of a large batch: attention-DP groups balanced (a lone sequence sits on one group)
        base = decode_of(dep, batch=1.0, context=0.0, balanced=True)
        at = decode_of(dep, batch=1.0, context=with_attn, balanced=True)
        kv_s = float(at.time.memory_s) - float(base.time.memory_s)
        # compute: the routed experts at the mean group's load (batch 1's busiest group is not what a
        # sequence adds to a large batch) plus the attention FLOPs the context adds
        compute_s = float(base.mean_compute_s) + float(at.time.compute_s) - float(base.time.compute_s)
        assert kv_s == pytest.approx(compute_s, rel=1e-6)
        assert np.isfinite(balance_batch_at_context_of(dep, 0.5 * with_attn))
