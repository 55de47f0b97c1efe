"""The engine-term fit (issue 21 step 2c) on synthetic linearised data with known terms."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from llmecon.fidelity import engine_fit
from llmecon.fidelity.engine_fit import BASE, PARAMS, fit_terms


def _problem(truth: dict, n: int = 120, seed: int = 0):
    rng = np.random.default_rng(seed)
    tpot0 = rng.uniform(5e-3, 30e-3, n)
    ttft0 = rng.uniform(20e-3, 300e-3, n)
    layers = rng.choice([32.0, 61.0, 94.0], n)
    floors = rng.uniform(0.5e-3, 3e-3, n)
    prefill = rng.uniform(10e-3, 200e-3, n)
    # d/d(term) of TPOT and TTFT, as the steady state has them
    cols = {"engine_floor_scale": (floors, 2 * floors), "step_overhead_s": (np.ones(n), 2 * np.ones(n)),
            "layer_overhead_s": (layers, 2 * layers), "ttft_prefill_factor": (0 * prefill, prefill),
            "request_overhead_s": (0 * prefill, np.ones(n))}
    d_tpot = np.stack([cols[p][0] for p in PARAMS], axis=1)
    d_ttft = np.stack([cols[p][1] for p in PARAMS], axis=1)
    dx = np.array([truth[p] - BASE[p] for p in PARAMS])
    rows = [SimpleNamespace(tpot_s=float(tpot0[i] + d_tpot[i] @ dx), ttft_s=float(ttft0[i] + d_ttft[i] @ dx),
                            concurrency=int(c)) for i, c in enumerate(rng.choice([1, 4, 8, 64], n))]
    return rows, (tpot0, ttft0, d_tpot, d_ttft)


TRUTH = {"engine_floor_scale": 0.4, "step_overhead_s": 1.5e-3, "layer_overhead_s": 3e-5, "ttft_prefill_factor": 2.0,
         "request_overhead_s": 0.05}


def test_fit_recovers_known_terms_without_prior(monkeypatch):
    monkeypatch.setattr(engine_fit, "PRIOR_WEIGHT", 0.0)
    rows, lin = _problem(TRUTH)
    got = fit_terms(range(len(rows)), rows, lin, BASE)
    for p in PARAMS:
        assert got[p] == pytest.approx(TRUTH[p], rel=1e-3, abs=1e-9), p
    assert got["prefill_stall_factor"] == 1.0  # held at its physical value (engine_fit.FIXED), returned with the fit


def test_prior_keeps_an_unseen_term_at_its_kernel_only_value():
    rows, (tpot0, ttft0, d_tpot, d_ttft) = _problem(TRUTH)
    d_ttft = d_ttft.copy()
    d_ttft[:, PARAMS.index("request_overhead_s")] = 0.0  # no row sees the request term
    got = fit_terms(range(len(rows)), rows, (tpot0, ttft0, d_tpot, d_ttft), BASE)
    assert got["request_overhead_s"] == pytest.approx(BASE["request_overhead_s"], abs=1e-6)
    assert engine_fit.BOUNDS["engine_floor_scale"][0] <= got["engine_floor_scale"] <= 1.0


def test_fit_refuses_too_few_rows():
    rows, lin = _problem(TRUTH, n=4)
    from llmecon.errors import InfeasibleError

    with pytest.raises(InfeasibleError, match="fewer than the 5 terms"):
        fit_terms(range(len(rows)), rows, lin, BASE)


def test_layer_and_request_terms_act_where_documented():
    import dataclasses

    from llmecon.catalog.efficiency import named_profile
    from llmecon.catalog.hardware import get_system
    from llmecon.catalog.models import get_model
    from llmecon.serving.steady_state import steady_state
    from llmecon.spec.deployment import Deployment
    from llmecon.spec.plan import Plan
    from llmecon.step.inference import decode_of

    base = dataclasses.replace(named_profile("h200/vllm"), layer_overhead_s=0.0, request_overhead_s=0.0)
    m, s = get_model("qwen3-32b"), get_system("hgx-h200")  # 64 layers

    def dep(prof, pp=1):
        return Deployment(model=m, system=s, plan=Plan(tp=2, pp=pp), profile=prof)

    layer = dataclasses.replace(base, layer_overhead_s=1e-4)
    for pp in (1, 2):  # pp stages of ceil(64/pp) layers each: 64 layers per iteration either way
        d0 = float(decode_of(dep(base, pp), batch=8, context=1024).step_s)
        d1 = float(decode_of(dep(layer, pp), batch=8, context=1024).step_s)
        assert d1 - d0 == pytest.approx(64 * 1e-4, rel=1e-9)
    req = dataclasses.replace(base, request_overhead_s=0.05)
    a = steady_state(dep(base), concurrency=4, prompt_tokens=1024, output_tokens=128)
    b = steady_state(dep(req), concurrency=4, prompt_tokens=1024, output_tokens=128)
    assert float(b.ttft_s - a.ttft_s) == pytest.approx(0.05, rel=1e-9)
    assert float(b.tpot_s) == pytest.approx(float(a.tpot_s), rel=1e-12)


def test_engine_fitted_profiles_say_so_and_rowless_ones_keep_kernel_only_chip_terms():
    from llmecon.catalog.efficiency import default_profiles
    from llmecon.fidelity.holdout_silicon import SHARED

    measured = [p for p in default_profiles() if p.engine and not p.transferred]
    rowless = {p.name for p in measured if "rowless_terms" in p.derivation}
    fitted = {p.name for p in measured if "silicon_dev.csv" in p.derivation and p.name not in rowless}
    # the (chip, engine)s with aggregated silicon rows that llmecon prices (benchmarks/silicon_accuracy.py)
    assert {"b200/sglang", "b200/trtllm", "b200/vllm", "h100-sxm/trtllm", "h200/vllm"} <= fitted
    # b300/trtllm, gb200/sglang, gb200/vllm, gb300/*: no aggregated rows of their own (only disaggregated ones)
    assert {"b300/trtllm", "gb200/sglang", "gb200/vllm", "gb300/trtllm", "gb300/sglang", "gb300/vllm"} == rowless
    by_name = {p.name: p for p in measured}
    for name in rowless:
        p = by_name[name]
        assert all(getattr(p, k) == v for k, v in BASE.items() if k not in SHARED), name
        # the engine-shared TTFT terms are the engine's, the same in every profile of that engine
        peer = next(by_name[f] for f in sorted(fitted) if by_name[f].engine == p.engine)
        assert all(getattr(p, k) == getattr(peer, k) != BASE[k] for k in SHARED), (name, peer.name)


def test_held_terms_are_returned_and_the_others_fitted_around_them(monkeypatch):
    """``hold`` (the engine-shared TTFT terms of holdout_silicon) keeps those terms at the given values, off the
    linearisation point, and the free terms recover the truth exactly (linear data, no prior)."""
    monkeypatch.setattr(engine_fit, "PRIOR_WEIGHT", 0.0)
    rows, lin = _problem(TRUTH)
    hold = {"ttft_prefill_factor": TRUTH["ttft_prefill_factor"], "request_overhead_s": TRUTH["request_overhead_s"]}
    got = fit_terms(range(len(rows)), rows, lin, BASE, hold)
    for p in PARAMS:
        assert got[p] == pytest.approx(TRUTH[p], rel=1e-3, abs=1e-9), p
    # a wrong held value is kept as given; three free terms need only three rows
    got = fit_terms(range(3), rows, lin, BASE, {**hold, "request_overhead_s": 0.2})
    assert got["request_overhead_s"] == 0.2 and got["ttft_prefill_factor"] == TRUTH["ttft_prefill_factor"]


@pytest.mark.parametrize("ridge_on_ttft_terms", [False, True])
def test_engine_shared_ttft_terms_are_not_pulled_towards_zero(monkeypatch, ridge_on_ttft_terms):
    """An SGLang-like first-token cost of 0.2 s is 20 ridge scales (STEPS: 10 ms) from "no engine cost". With the
    per-chip terms held (as holdout_silicon fits the engine-shared TTFT terms), the fit recovers it exactly
    because the TTFT terms carry no ridge (engine_fit.UNPENALISED); with the ridge on them it stops short."""
    truth = {**TRUTH, "request_overhead_s": 0.2, "ttft_prefill_factor": 2.0}
    rows, lin = _problem(truth)
    if ridge_on_ttft_terms:
        monkeypatch.setattr(engine_fit, "UNPENALISED", ())
    hold = {p: truth[p] for p in ("engine_floor_scale", "step_overhead_s", "layer_overhead_s")}
    got = fit_terms(range(len(rows)), rows, lin, BASE, hold=hold)
    if ridge_on_ttft_terms:
        assert got["request_overhead_s"] < 0.2 * (1 - 1e-3)
    else:
        assert got["request_overhead_s"] == pytest.approx(0.2, rel=1e-4)
        assert got["ttft_prefill_factor"] == pytest.approx(2.0, rel=1e-4)
