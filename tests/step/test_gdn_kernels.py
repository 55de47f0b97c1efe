"""Gated DeltaNet kernels (step.kernels.gdn_work, gdn_kernel_s) hand-computed, the fit recovering
generated terms (fidelity.gdn_fit), the shipped profiles' gdn tables, and the calibrated step
pricing the GDN layers' recurrence with them."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from llmecon.catalog.efficiency import load_profile, parse_profile
from llmecon.catalog.hardware import get_accelerator, get_system
from llmecon.catalog.models import get_model
from llmecon.errors import CatalogError, SpecError
from llmecon.fidelity.gdn_fit import fit_gdn, predict_gdn
from llmecon.spec.efficiency import IDEAL, AttentionTerms
from llmecon.spec.plan import Plan
from llmecon.step.calibrated import attention_class_s
from llmecon.step.inference import decode_step, prefill_step
from llmecon.step.kernels import gdn_kernel_s, gdn_work

H200 = get_accelerator("h200")          # bf16 989e12 FLOP/s dense, 4.8e12 B/s
SHAPE = dict(key_heads=16, key_dim=128, value_heads=32, value_dim=128, conv_kernel=4)


def test_gdn_work_by_hand():
    # decode recurrence, 8 sequences: 7·128·128 FLOPs per value head; fp32 state read + written
    flops, moved, items = gdn_work("recurrent", batch=8, seq_len=1, **SHAPE)
    assert float(flops) == 8 * 32 * 7 * 128 * 128
    state = 8 * 32 * 128 * 128 * 4
    assert float(moved) == 8 * (2 * 16 * 128 + 2 * 32 * 128) * 2 + 2 * state
    assert float(items) == 8 * 32
    # prefill chunk, 2 prompts of 100 tokens: 200 tokens, state written once, 2 chunks of 64 each
    flops, moved, items = gdn_work("chunk", batch=2, seq_len=100, **SHAPE)
    assert float(flops) == 200 * 32 * 7 * 128 * 128
    assert float(moved) == 200 * (2 * 16 * 128 + 2 * 32 * 128) * 2 + 2 * 32 * 128 * 128 * 4
    assert float(items) == 2 * 32 * 2
    # conv over C = 2·16·128 + 32·128 = 8192 channels, kernel 4: 2·4 FLOPs per channel per token
    flops, moved, _ = gdn_work("conv_update", batch=8, seq_len=1, **SHAPE)
    assert float(flops) == 8 * 8192 * 8
    assert float(moved) == 8 * 8192 * 4 + 2 * 8 * 3 * 8192 * 2
    with pytest.raises(SpecError, match="gdn kernel"):
        gdn_work("chunky", batch=1, seq_len=1, **SHAPE)


def test_gdn_kernel_terms_by_hand():
    t = AttentionTerms(fraction=0.5, hbm_fraction=0.8, items_half=256.0, item_s=1e-9, floor_s=3e-6)
    prof = dataclasses.replace(IDEAL, name="t", gdn=(("recurrent", t),))
    flops, moved, items = gdn_work("recurrent", batch=8, seq_len=1, **SHAPE)   # 256 items: ramp 1/2
    want = max(flops / (0.5 * 989e12), moved / (0.8 * 0.5 * 4.8e12)) + 256e-9 + 3e-6
    assert float(gdn_kernel_s(prof, H200, "recurrent", batch=8, seq_len=1, **SHAPE)) == pytest.approx(want, rel=1e-12)
    # a kernel without terms is its roofline
    f, m, _ = gdn_work("conv", batch=8, seq_len=1, **SHAPE)
    assert float(gdn_kernel_s(prof, H200, "conv", batch=8, seq_len=1, **SHAPE)) == pytest.approx(
        max(f / 989e12, m / 4.8e12), rel=1e-12)


def test_fit_gdn_recovers_the_terms():
    truth = {"recurrent": AttentionTerms(fraction=0.4, hbm_fraction=0.85, items_half=200.0, item_s=2e-9, floor_s=4e-6),
             "conv_update": AttentionTerms(fraction=0.3, hbm_fraction=0.5, items_half=20.0, item_s=1e-10,
                                           floor_s=2e-6)}
    prof = dataclasses.replace(IDEAL, name="truth", gdn=tuple(truth.items()))
    b, nv = np.meshgrid([1.0, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024], [16.0, 32, 48, 64], indexing="ij")
    b, nv = b.ravel(), nv.ravel()
    cols = {"batch_size": np.tile(b, 2), "seq_len": np.ones(2 * b.size), "num_k_heads": np.full(2 * b.size, 16.0),
            "head_k_dim": np.full(2 * b.size, 128.0), "num_v_heads": np.tile(nv, 2),
            "head_v_dim": np.full(2 * b.size, 128.0), "d_conv": np.full(2 * b.size, 4.0),
            "kernel": np.repeat(["recurrent", "conv_update"], b.size), "chip": np.full(2 * b.size, "h200"),
            "time_s": np.zeros(2 * b.size)}
    cols["time_s"] = predict_gdn(prof, cols)
    got = fit_gdn(cols)
    pred = predict_gdn(dataclasses.replace(IDEAL, name="fit", **got), cols)
    assert np.max(np.abs(pred / cols["time_s"] - 1)) < 0.02
    assert dict(got["gdn"])["recurrent"].hbm_fraction == pytest.approx(0.85, rel=0.05)


def test_shipped_profiles_carry_gdn_terms():
    for name in ("h200/trtllm", "b200/vllm"):
        p = load_profile(name)
        assert set(dict(p.gdn)) == {"chunk", "recurrent", "conv", "conv_update"}
        assert "fidelity.gdn_fit" in p.derivation
    assert "sglang" in load_profile("h200/trtllm").derivation.split("fidelity.gdn_fit")[1][:60]
    text = load_profile("h200/sglang").as_toml()
    with pytest.raises(CatalogError, match="did you mean 'gdn'"):
        parse_profile(text.replace("\n[gdn.chunk]\n", "\n[gdm.chunk]\n", 1))


def test_attention_class_prices_the_gdn_share_apart_by_hand():
    model = get_model("qwen3.5-27b")
    t = {"recurrent": AttentionTerms(fraction=0.25, hbm_fraction=0.5), "chunk": AttentionTerms(fraction=0.1)}
    prof = dataclasses.replace(IDEAL, name="t", attention_fraction=0.5, hbm_fraction=0.8, gdn=tuple(t.items()))
    kw = dict(flops=3e12, kv_bytes=5e9, lin_flops=1e12, lin_state=1e9, peak=989e12, bandwidth=4.8e12)
    c, k = attention_class_s(model, prof, phase="decode", kv_dtype="bf16", **kw)
    assert c == pytest.approx(2e12 / (0.5 * 989e12) + 1e12 / (0.25 * 989e12), rel=1e-12)
    assert k == pytest.approx(4e9 / (0.8 * 4.8e12) + 2 * 1e9 / (0.5 * 4.8e12), rel=1e-12)   # state read + written
    c, k = attention_class_s(model, prof, phase="prefill", kv_dtype="bf16", **kw)
    assert c == pytest.approx(2e12 / (0.5 * 989e12) + 1e12 / (0.1 * 989e12), rel=1e-12)
    assert k == pytest.approx(4e9 / (0.8 * 4.8e12) + 1e9 / 4.8e12, rel=1e-12)
    llama = get_model("llama-3.1-8b")                                  # no GDN layers: the scalar rates
    c, k = attention_class_s(llama, prof, phase="decode", kv_dtype="bf16", **kw)
    assert (c, k) == (3e12 / (0.5 * 989e12), 5e9 / (0.8 * 4.8e12))


def test_calibrated_step_prices_gdn_layers_with_their_terms():
    system = get_system("hgx-h200")
    model, plan = get_model("qwen3.5-27b"), Plan(tp=1)
    base = dataclasses.replace(IDEAL, name="b", hbm_fraction=0.8, attention_fraction=0.6)
    slow = AttentionTerms(fraction=0.05, hbm_fraction=0.3)
    gdn = dataclasses.replace(base, gdn=(("chunk", slow), ("recurrent", slow)))
    kw = dict(plan=plan, batch=np.array([1.0, 64.0]), context=4096.0)
    a, b = decode_step(model, system, profile=base, **kw), decode_step(model, system, profile=gdn, **kw)
    assert np.all(b.step_s > a.step_s) and np.all(b.step_s >= decode_step(model, system, profile=IDEAL, **kw).step_s)
    pa = prefill_step(model, system, profile=base, plan=plan, batch=1.0, prompt_tokens=4096.0)
    pb = prefill_step(model, system, profile=gdn, plan=plan, batch=1.0, prompt_tokens=4096.0)
    assert float(pb.step_s) > float(pa.step_s)
    llama = get_model("llama-3.1-8b")
    np.testing.assert_array_equal(decode_step(llama, system, profile=base, **kw).step_s,
                                  decode_step(llama, system, profile=gdn, **kw).step_s)
