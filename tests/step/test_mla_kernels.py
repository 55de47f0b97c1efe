"""MLA attention kernels (step.kernels.mla_work, mla_prefill_s, mla_decode_s) hand-computed, the
MLA profile tables' fallback, and the calibrated step pricing MLA models with them."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from llmecon.catalog.hardware import get_accelerator, get_system
from llmecon.catalog.models import get_model
from llmecon.spec.efficiency import IDEAL, AttentionTerms, EfficiencyProfile
from llmecon.spec.plan import Plan
from llmecon.step.inference import decode_step, prefill_step
from llmecon.step.kernels import MLA_DIMS, mla_decode_s, mla_prefill_s, mla_work

H200 = get_accelerator("h200")          # datasheet: bf16 989e12 FLOP/s dense, 4.8e12 B/s


def _prof(**kw) -> EfficiencyProfile:
    return dataclasses.replace(IDEAL, name="test", **kw)


def test_datasheet_figures_used_below():
    assert H200.peak("bf16") == 989e12 and H200.hbm_bandwidth_bytes_per_s == 4.8e12
    assert MLA_DIMS == {"kv_lora_rank": 512, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128, "v_head_dim": 128}


def test_mla_work_by_hand():
    # absorbed decode: 2 sequences, 128 heads, 1000 cached latents: 2·2·128·1000·(512 + 64 + 512)
    flops, moved = mla_work("generation_mla", batch=2, heads=128, kv_len=1000, kv_bytes=2.0)
    assert float(flops) == 557_056_000
    # latent read + one written: 2·1001·576·2 B; absorbed query read + output written: 2·128·(576 + 512)·2 B
    assert float(moved) == 2 * 1001 * 576 * 2 + 2 * 128 * 1088 * 2 == 2_863_360
    # fp8 latent: half the cache bytes, the bf16 query/output unchanged
    assert float(mla_work("generation_mla", batch=2, heads=128, kv_len=1000, kv_bytes=1.0)[1]) == 1_153_152 + 557_056
    # unabsorbed causal prefill of 4 tokens, 16 heads: S(4) = 10 (query, key) pairs, d_qk 192 + d_v 128
    flops, moved = mla_work("context_mla", batch=1, heads=16, isl=4)
    assert float(flops) == 2 * 16 * 10 * 320 == 102_400
    assert float(moved) == 4 * 16 * (2 * 192 + 2 * 128) * 2 == 81_920


def test_mla_decode_ramp_item_and_floor():
    t = AttentionTerms(fraction=0.5, hbm_fraction=0.8, items_half=2.0, item_s=1e-8, floor_s=1e-5)
    prof = _prof(mla_decode=(("bf16", t),))
    # 2 sequences x 8 heads at 32767 cached: memory-bound; bandwidth 0.8·2/(2+2)·4.8e12
    moved = 2 * 32768 * 576 * 2 + 2 * 8 * 1088 * 2
    compute = 2 * 2 * 8 * 32767 * 1088 / (0.5 * 989e12)
    memory = moved / (0.8 * 0.5 * 4.8e12)
    assert memory > compute
    got = mla_decode_s(prof, H200, batch=2, kv_len=32767, heads=8)
    assert float(got) == pytest.approx(memory + 2e-8 + 1e-5, rel=1e-12)
    # 128 heads x 64 sequences: compute-bound at half the bf16 peak
    flops = 2 * 64 * 128 * 32767 * 1088
    assert flops / (0.5 * 989e12) > (64 * 32768 * 576 * 2 + 64 * 128 * 1088 * 2) / (0.8 * 64 / 66 * 4.8e12)
    got = mla_decode_s(prof, H200, batch=64, kv_len=32767, heads=128)
    assert float(got) == pytest.approx(flops / (0.5 * 989e12) + 64e-8 + 1e-5, rel=1e-12)


def test_mla_prefill_isl_ramp_tiles_and_floor():
    t = AttentionTerms(fraction=0.6, isl_half=1024.0, hbm_fraction=0.9, item_s=1e-9, floor_s=2e-5)
    prof = _prof(mla_prefill=(("fp8", t),))
    flops = 2 * 4 * 16 * (1024 * 1025 / 2) * 320                   # 4 prompts of 1024, 16 heads
    compute = flops / (0.6 * 0.5 * 989e12)                            # ramp 1024/(1024 + 1024)
    tiles = 4 * 16 * 8 * 1e-9                                         # (sequence, head, 128-token tile)
    got = mla_prefill_s(prof, H200, batch=4, isl=1024, heads=16, kv_dtype="fp8")
    assert float(got) == pytest.approx(compute + tiles + 2e-5, rel=1e-12)
    # fp8_block KV takes the fp8 table; a dtype it lacks falls back to the GQA prefill terms, then scalars
    assert prof.attention_terms("mla_prefill", "fp8_block") is t
    gqa = AttentionTerms(fraction=0.3)
    assert _prof(prefill_attention=(("bf16", gqa),)).attention_terms("mla_prefill", "bf16") is gqa
    assert _prof(attention_fraction=0.4).attention_terms("mla_decode").fraction == 0.4


def test_ideal_is_the_roofline():
    b, L, h = np.array([1.0, 64.0]), np.array([16.0, 65535.0]), np.array([128.0, 16.0])
    f, m = mla_work("generation_mla", batch=b, heads=h, kv_len=L)
    np.testing.assert_allclose(mla_decode_s(IDEAL, H200, batch=b, kv_len=L, heads=h),
                               np.maximum(f / 989e12, m / 4.8e12), rtol=1e-12)
    f, m = mla_work("context_mla", batch=b, heads=h, isl=L)
    np.testing.assert_allclose(mla_prefill_s(IDEAL, H200, batch=b, isl=L, heads=h),
                               np.maximum(f / 989e12, m / 4.8e12), rtol=1e-12)


def test_calibrated_step_prices_mla_models_with_the_mla_terms():
    system, plan = get_system("hgx-h200"), Plan(tp=8, ep=8)
    base = _prof(hbm_fraction=0.8, attention_fraction=0.6, attention_floor_s=1e-5)
    slow = AttentionTerms(fraction=0.3, hbm_fraction=0.4, floor_s=1e-5)
    mla = dataclasses.replace(base, mla_decode=(("bf16", slow),), mla_prefill=(("bf16", slow),))
    ds, llama = get_model("deepseek-v3"), get_model("llama-3.1-8b")
    kw = dict(batch=np.array([8.0, 256.0]), context=8192.0, kv_dtype="bf16")
    a = decode_step(ds, system, plan=plan, profile=base, **kw)
    b = decode_step(ds, system, plan=plan, profile=mla, **kw)
    assert np.all(b.time.memory_s > a.time.memory_s)                 # latent read at 0.4 instead of 0.8
    # the floor is the decode kernel's in both phases (the serving split needs one X(tokens))
    assert np.all(b.time.overhead_s == a.time.overhead_s)
    assert np.all(b.step_s > a.step_s)
    pa = prefill_step(ds, system, plan=plan, profile=base, batch=2.0, prompt_tokens=8192.0)
    pb = prefill_step(ds, system, plan=plan, profile=mla, batch=2.0, prompt_tokens=8192.0)
    assert float(pb.time.compute_s) > float(pa.time.compute_s)       # prefill FLOPs at 0.3 instead of 0.6
    # a GQA model ignores the MLA tables; every profile stays at or above ideal
    for model in (llama,):
        x = decode_step(model, system, plan=Plan(tp=1), profile=base, **kw)
        y = decode_step(model, system, plan=Plan(tp=1), profile=mla, **kw)
        np.testing.assert_array_equal(x.step_s, y.step_s)
    ideal = decode_step(ds, system, plan=plan, profile=IDEAL, **kw)
    assert np.all(b.step_s >= ideal.step_s)
