"""Out-of-sample evaluation by held-out group (fidelity.holdout, holdout_silicon, holdout_kernels):
hand-computed folds and errors, a group never in its own fit, and kernel fits that recover the terms
the synthetic tables were generated with (so the held-out error is ~0 by construction)."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import numpy as np
import pytest

from llmecon.catalog.hardware import get_accelerator
from llmecon.fidelity import holdout_kernels as hk
from llmecon.fidelity.holdout import (Fold, band_of, below_share, cells, leave_one_group_out, rel_error, run_folds,
                                      stats)
from llmecon.fidelity.holdout_silicon import (MIN_TRAIN, chip_folds, group_of, model_folds, pool_of,
                                              pooled_model_folds)
from llmecon.spec.efficiency import IDEAL, KernelTerms
from llmecon.step.kernels import gemm_s

# ---- the generic fold runner ---------------------------------------------------------------------

GROUPS = ["A", "A", "B", "B", "C"]
Y = np.array([1.0, 1.0, 2.0, 2.0, 6.0])


def test_leave_one_group_out_holds_each_group_once_and_trains_on_the_rest():
    folds = leave_one_group_out(GROUPS)
    assert [(f.name, f.held, f.train) for f in folds] == [
        ("A", (0, 1), (2, 3, 4)), ("B", (2, 3), (0, 1, 4)), ("C", (4,), (0, 1, 2, 3))]


def test_mean_fitter_gives_the_hand_computed_held_out_error():
    """Fitter = mean of the training y. A: mean(2, 2, 6) = 10/3 vs 1 -> 7/3; B: mean(1, 1, 6) = 8/3
    vs 2 -> 1/3; C: mean(1, 1, 2, 2) = 1.5 vs 6 -> 3/4."""
    seen = []

    def fit(train):
        seen.append(list(train))
        return float(np.mean(Y[train]))

    (pred,) = run_folds(leave_one_group_out(GROUPS), len(Y), fit, lambda mean, held: np.full(len(held), mean))
    assert pred == pytest.approx([10 / 3, 10 / 3, 8 / 3, 8 / 3, 1.5])
    err = rel_error(pred, Y)
    assert err == pytest.approx([7 / 3, 7 / 3, 1 / 3, 1 / 3, 0.75])
    for fold, train in zip(leave_one_group_out(GROUPS), seen):
        assert not set(train) & set(fold.held)  # a group is never in its own fit
        assert {GROUPS[i] for i in train} == set(GROUPS) - {fold.name}
    k, med, p90 = stats(err)
    assert (k, med) == (5, pytest.approx(0.75))
    assert p90 == pytest.approx(7 / 3)  # numpy's linear percentile: 0.9 * 4 = 3.6 between 7/3 and 7/3


def test_a_fold_holding_its_own_training_rows_is_refused():
    with pytest.raises(ValueError, match="among its training rows"):
        run_folds([Fold(name="bad", held=(0, 1), train=(1, 2))], 3, lambda t: 0.0, lambda m, h: np.zeros(len(h)))


def test_a_refused_fit_leaves_its_rows_unpredicted_and_progress_counts_folds():
    calls = []
    pred = run_folds(leave_one_group_out(GROUPS), 5, lambda t: None if 4 in t else 1.0,
                     lambda m, h: (np.full(len(h), m), np.full(len(h), 2 * m)), quantities=2,
                     progress=lambda d, t, name: calls.append((d, t, name)))
    assert np.isnan(pred[0][:4]).all() and pred[0][4] == 1.0 and pred[1][4] == 2.0
    assert calls == [(1, 3, "A"), (2, 3, "B"), (3, 3, "C")]


def test_bands_and_cells_by_hand():
    assert [band_of(c) for c in (1, 8, 9, 64, 65, 4096)] == ["1-8", "1-8", "9-64", "9-64", "65+", "65+"]
    pred = np.array([1.1, 0.8, 2.0, np.nan])
    meas = np.array([1.0, 1.0, 1.0, 1.0])
    ideal = np.array([0.5, 1.2, 0.9, np.nan])
    got = {(c.by, c.group): c for c in cells("TPOT", pred, meas, ideal, {"chip": ["a", "a", "b", "b"]})}
    a, b, everything = got[("chip", "a")], got[("chip", "b")], got[("all", "all")]
    assert (a.rows, a.predicted, a.median) == (2, 2, pytest.approx(0.15))  # errors 0.1 and 0.2
    assert (a.ideal_rows, a.ideal_below) == (2, 0.5)
    assert (b.rows, b.predicted, b.median, b.ideal_rows, b.ideal_below) == (2, 1, pytest.approx(1.0), 1, 1.0)
    assert (everything.rows, everything.predicted, everything.median) == (4, 3, pytest.approx(0.2))
    assert below_share([1.0], [1.0]) == (1, 1.0)  # exactly at the measurement counts as a bound


# ---- silicon folds -----------------------------------------------------------------------------------

def _row(model, chip, engine):
    return SimpleNamespace(model=model, chip=chip, engine=engine, profile=f"{chip}/{engine}")


def test_silicon_model_folds_hold_architectures_together_and_fall_back_to_other_chips():
    k = MIN_TRAIN                                  # rows per group: just enough priced rows for a fold of its own
    rows = ([_row("deepseek-ai/DeepSeek-R1", "b200", "sglang")] * k + [_row("deepseek-ai/DeepSeek-V3", "b200",
                                                                             "sglang")] * k
            + [_row("Qwen/Qwen3-32B", "b200", "sglang")] * k + [_row("Qwen/Qwen3-32B", "h200", "sglang")] * k
            + [_row("openai/gpt-oss-120b", "h200", "sglang")] * 2)
    base = np.ones(len(rows))
    folds, notes = model_folds(rows, base)
    by = {f.name: f for f in folds}
    ds = by["b200/sglang without DeepSeek-V3 arch"]
    assert ds.held == tuple(range(2 * k)) and ds.train == tuple(range(2 * k, 3 * k)) and not ds.note
    # h200 holding Qwen keeps 2 rows of its own (< MIN_TRAIN): fitted on sglang rows of other chips, Qwen excluded
    q = by["h200/sglang without Qwen/Qwen3-32B"]
    assert q.held == tuple(range(3 * k, 4 * k)) and q.train == tuple(range(2 * k)) and "other chips" in q.note
    assert notes == {"h200/sglang": "fit on sglang rows of other chips"}
    for f in folds:
        assert {group_of(rows[i]) for i in f.held}.isdisjoint({group_of(rows[i]) for i in f.train})
    loco, _ = chip_folds(rows, base)
    for f in loco:
        assert {rows[i].chip for i in f.held}.isdisjoint({rows[i].chip for i in f.train})
        assert {rows[i].engine for i in f.train} == {"sglang"}
    for f in pooled_model_folds(rows, base):
        assert {group_of(rows[i]) for i in f.held}.isdisjoint({group_of(rows[i]) for i in f.train})
    # the engine-pooled fit of the shared TTFT terms: every chip's sglang rows, the held-out group excluded
    # everywhere, unpriced rows left out; none for the fallback fold (pooled already) or a chip fold
    base_one_unpriced = base.copy()
    base_one_unpriced[3 * k] = np.nan
    assert pool_of(rows, ds.held, ds.train, base_one_unpriced) == [i for i in range(2 * k, len(rows)) if i != 3 * k]
    assert pool_of(rows, q.held, q.train, base) is None
    assert all(pool_of(rows, f.held, f.train, base) is None for f in loco)


def test_fits_hold_the_engine_shared_terms_and_cross_chip_folds_keep_kernel_only_chip_terms(monkeypatch):
    """Spy on the fits of ``predict_folds``: a per-chip fold holds the TTFT terms of the engine-pooled fit
    (its held group excluded), a fold fitted on other chips' rows holds the per-chip terms at BASE."""
    from llmecon.fidelity import holdout_silicon as hs
    from llmecon.fidelity.engine_fit import BASE, PARAMS

    k = MIN_TRAIN
    rows = ([_row("A", "b200", "sglang")] * k + [_row("B", "b200", "sglang")] * k + [_row("B", "h200", "sglang")] * k)
    base = np.ones(len(rows))
    folds, _ = model_folds(rows, base)
    calls = []

    def fit(train, r, lin, hold=None):
        calls.append((list(train), hold))
        return {**BASE, "ttft_prefill_factor": 2.0 + len(calls), "request_overhead_s": 0.1}

    monkeypatch.setattr(hs, "fit_fold", fit)
    monkeypatch.setattr(hs, "_predict", lambda r, held, terms: (np.zeros(len(held)), np.zeros(len(held))))
    hs.predict_folds(rows, folds, (base, base, None, None))
    per_chip = [f for f in folds if f.name == "b200/sglang without A"][0]
    fallback = [f for f in folds if f.name == "h200/sglang without B"][0]
    by_train = {tuple(t): h for t, h in calls}
    pooled = tuple(i for i, r in enumerate(rows) if r.model != "A")  # every chip's sglang rows but A's
    assert by_train[pooled] is None  # the pooled fit fits all terms
    assert calls[0] == (list(pooled), None)  # the first fold's pooled fit comes first: its factor is 2 + 1
    assert by_train[per_chip.train]["ttft_prefill_factor"] == 3.0
    assert set(by_train[per_chip.train]) == set(hs.SHARED)
    assert by_train[fallback.train] == {p: BASE[p] for p in PARAMS if p not in hs.SHARED}


def test_a_profile_with_too_few_priced_rows_is_not_fitted():
    rows = [_row("Qwen/Qwen3-32B", "h100-sxm", "vllm")] * 8
    base = np.full(8, np.nan)
    base[:3] = 1.0
    folds, notes = model_folds(rows, base)
    assert folds == [] and "not fitted" in notes["h100-sxm/vllm"]


# ---- kernel folds ------------------------------------------------------------------------------------

TRUE = KernelTerms(fraction=0.7, m_half=60.0, n_half=300.0, k_half=150.0, hbm_fraction=0.8, floor_s=4e-6)


def _gemm(chip: str, dtype: str = "fp8") -> dict:
    m, n, k = np.meshgrid([1.0, 8, 64, 256, 1024, 4096], [256.0, 1024, 4096, 16384], [512.0, 2048, 8192],
                          indexing="ij")
    m, n, k = m.ravel(), n.ravel(), k.ravel()
    t = gemm_s(dataclasses.replace(IDEAL, name="truth", gemm=((dtype, TRUE),)), get_accelerator(chip), m=m, n=n,
               k=k, dtype=dtype)
    return {"m": m, "n": n, "k": k, "time_s": t, "dtype": np.full(m.size, dtype), "chip": np.full(m.size, chip)}


def test_kernel_folds_keep_a_weight_shape_in_one_fold():
    cols = _gemm("b200")
    fold = hk.fold_ids(cols, "gemm")
    for n in np.unique(cols["n"]):
        for k in np.unique(cols["k"]):
            assert len(set(fold[(cols["n"] == n) & (cols["k"] == k)])) == 1


def test_kernel_kfold_and_loco_recover_the_generating_terms(monkeypatch):
    """Rows generated by one set of terms: a fit on the other shapes (k-fold) or the other chip (LOCO,
    transferred through the datasheet) predicts the held-out rows within 2%; ideal is a lower bound."""
    tables = {("b200", "trtllm"): {"gemm": _gemm("b200")}, ("h100-sxm", "trtllm"): {"gemm": _gemm("h100-sxm")}}
    seen = []
    real = hk.predict_family

    def spy(family, train, test):
        seen.append((set(train["chip"]), set(test["chip"]), len(train["time_s"]), len(test["time_s"])))
        return real(family, train, test)

    monkeypatch.setattr(hk, "predict_family", spy)
    got = hk.kernel_holdout(lambda chip, engine: (tables[(chip, engine)], None, None, None), list(tables), "chip")
    assert [(tr, te) for tr, te, _, _ in seen] == [({"h100-sxm"}, {"b200"}), ({"b200"}, {"h100-sxm"})]
    rep = got.report()
    cell = {(c.by, c.group): c for c in rep.cells if c.quantity == "gemm fp8"}
    assert cell[("all", "all")].rows == 144 and cell[("all", "all")].median < 0.02
    assert cell[("chip", "b200")].p90 < 0.02 and cell[("all", "all")].ideal_below == 1.0
    seen.clear()
    kf = hk.kernel_holdout(lambda chip, engine: (tables[(chip, engine)], None, None, None), [("b200", "trtllm")],
                           "model")
    assert len(seen) == hk.FOLDS and all(tr + te == 72 for _, _, tr, te in seen)  # each row held out once
    assert kf.report().cells[0].predicted == 72 and kf.report().cells[0].p90 < 0.02


def test_provenance_notes_name_measured_and_transferred_profiles_per_vendor():
    """b200/vllm ships measured (catalog/profiles/b200-vllm.toml); mi325x has no sglang profile, so its rows are
    priced with one transferred from the sglang chips (fidelity.engines rule 3), named with its expected error;
    an unscored row's profile is not listed."""
    from llmecon.fidelity.holdout_silicon import ENGINE_TERMS, provenance_notes

    rows = [SimpleNamespace(profile="b200/vllm"), SimpleNamespace(profile="mi325x/sglang"),
            SimpleNamespace(profile="h200/trtllm")]
    notes = provenance_notes(rows, np.array([True, True, False]), "chip")
    assert notes[0].startswith("AMD profiles of the scored rows: transferred (1): mi325x, transferred from ")
    assert "% TPOT" in notes[0]
    assert notes[1] == "NVIDIA profiles of the scored rows: measured from the chip's own kernel tables (1): b200/vllm"
    assert notes[2] == f"engine terms in this run (chip): {ENGINE_TERMS['chip']}"
    assert provenance_notes(rows, np.zeros(3, bool), "model") == ()
