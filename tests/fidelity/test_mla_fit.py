"""The MLA fit (fidelity.mla_fit) recovers the terms it was generated with, pooling two chips."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from llmecon.catalog.hardware import get_accelerator
from llmecon.fidelity.mla_fit import fit_mla, predict_mla_decode, predict_mla_prefill
from llmecon.spec.efficiency import IDEAL, AttentionTerms
from llmecon.step.kernels import mla_decode_s, mla_prefill_s

DEC = AttentionTerms(fraction=0.6, hbm_fraction=0.85, items_half=3.0, item_s=3e-8, floor_s=1.2e-5)
PRE = AttentionTerms(fraction=0.55, isl_half=600.0, hbm_fraction=0.8, item_s=2e-8, floor_s=1.5e-5)


def _rows(chip: str, phase: str) -> dict:
    b, L, h = np.meshgrid([1.0, 4, 16, 64, 256], [1.0, 15, 255, 4095, 32767], [8.0, 32, 128], indexing="ij")
    b, L, h = b.ravel(), L.ravel(), h.ravel()
    truth = dataclasses.replace(IDEAL, name="truth", mla_decode=(("bf16", DEC),), mla_prefill=(("bf16", PRE),))
    acc = get_accelerator(chip)
    if phase == "decode":
        t = mla_decode_s(truth, acc, batch=b, kv_len=L, heads=h)
    else:
        L = np.minimum(L + 1.0, 16384.0)
        t = mla_prefill_s(truth, acc, batch=b, isl=L, heads=h)
    return {"batch_size": b, "kv_len": L, "isl": L, "num_heads": h, "time_s": t, "dtype": np.full(b.size, "bf16"),
            "chip": np.full(b.size, chip)}


@pytest.mark.parametrize("phase", ["decode", "prefill"])
def test_fit_mla_recovers_the_terms_it_was_generated_with(phase):
    a, b = _rows("h100-sxm", phase), _rows("b200", phase)
    pooled = {k: np.concatenate([a[k], b[k]]) for k in a}
    prefill, decode = (pooled, {}) if phase == "prefill" else ({}, pooled)
    kw = fit_mla(prefill, decode)
    key = f"mla_{phase}"
    got = dict(kw[key])["bf16"]
    true = DEC if phase == "decode" else PRE
    for name in ("fraction", "hbm_fraction", "floor_s"):
        assert getattr(got, name) == pytest.approx(getattr(true, name), rel=0.05), name
    predict = predict_mla_decode if phase == "decode" else predict_mla_prefill
    pred = predict(dataclasses.replace(IDEAL, name="fit", **kw), pooled)
    assert np.max(np.abs(pred / pooled["time_s"] - 1)) < 0.02
