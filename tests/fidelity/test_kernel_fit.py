"""The kernel-table fit (fidelity.kernel_fit) recovers known terms from rows generated with them,
and a pooled fit prices each chip's rows with that chip's datasheet."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from llmecon.catalog.hardware import get_accelerator
from llmecon.fidelity.kernel_fit import fit_all_reduce, fit_gemm, predict_gemm, CollectiveRows, predict_all_reduce
from llmecon.catalog.hardware import get_system
from llmecon.spec.efficiency import IDEAL, KernelTerms, LinkEfficiency
from llmecon.step.kernels import gemm_s

TRUE = KernelTerms(fraction=0.7, m_half=60.0, n_half=300.0, k_half=150.0, hbm_fraction=0.8, floor_s=4e-6)


def _rows(chip: str, dtype: str = "fp8") -> dict:
    m, n, k = np.meshgrid([1.0, 8, 64, 256, 1024, 4096], [256.0, 1024, 4096, 16384], [512.0, 2048, 8192],
                          indexing="ij")
    m, n, k = m.ravel(), n.ravel(), k.ravel()
    prof = dataclasses.replace(IDEAL, name="truth", gemm=((dtype, TRUE),))
    t = gemm_s(prof, get_accelerator(chip), m=m, n=n, k=k, dtype=dtype)
    return {"m": m, "n": n, "k": k, "time_s": t, "dtype": np.full(m.size, dtype), "chip": np.full(m.size, chip)}


def test_fit_gemm_recovers_the_terms_it_was_generated_with():
    got = fit_gemm(_rows("b200"), "fp8")
    for name in ("fraction", "m_half", "n_half", "k_half", "hbm_fraction", "floor_s"):
        assert getattr(got, name) == pytest.approx(getattr(TRUE, name), rel=0.02), name


def test_pooled_fit_prices_each_chip_with_its_own_datasheet():
    a, b = _rows("h100-sxm"), _rows("gb200")
    pooled = {key: np.concatenate([a[key], b[key]]) for key in a}
    got = fit_gemm(pooled, "fp8")
    pred = predict_gemm(dataclasses.replace(IDEAL, name="fit", gemm=(("fp8", got),)), pooled)
    assert np.max(np.abs(pred / pooled["time_s"] - 1)) < 0.02


def test_fit_all_reduce_recovers_the_link_terms():
    system = get_system("hgx-h100")
    link = LinkEfficiency(op_overhead_s=3e-6, step_latency_s=1e-6, bandwidth_fraction=0.6)
    sizes = np.repeat(2.0 ** np.arange(10, 30, 2), 3)
    parts = np.tile([2.0, 4.0, 8.0], sizes.size // 3)
    rows = CollectiveRows(message_bytes=sizes, participants=parts, time_s=np.zeros(sizes.size))
    truth = predict_all_reduce(dataclasses.replace(IDEAL, name="t", scale_up=link), system, rows)
    got = fit_all_reduce(system, dataclasses.replace(rows, time_s=truth))
    pred = predict_all_reduce(dataclasses.replace(IDEAL, name="f", scale_up=got), system, rows)
    assert np.max(np.abs(pred / truth - 1)) < 0.02
    assert got.bandwidth_fraction == pytest.approx(0.6, rel=0.05)
