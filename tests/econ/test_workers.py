"""The prefill:decode worker ratio (issue 22 item 2): hand-computed choices, the plan's ratio and its $/Mtok."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmecon.catalog.hardware import get_system
from llmecon.catalog.models import get_model
from llmecon.econ.planner import PhaseSearch, PlanResult, PlanTargets, Point, SearchOptions, plan_deployment
from llmecon.econ.workers import choose_workers, plan_workers
from llmecon.errors import SpecError
from llmecon.spec.plan import Plan


@pytest.mark.parametrize("r_p, r_d, c_p, c_d, want", [
    # 10 vs 4 requests/s per worker, 8 chips each: 2 x 10 = 5 x 4 balances; $/request 56/20 = 2.8 = 8/10 + 8/4
    (10.0, 4.0, 8.0, 8.0, (2, 5)),
    # 3 vs 1 requests/s, decode twice as dear: 1:3 balances; (1 + 6)/3 = 1/3 + 2
    (3.0, 1.0, 1.0, 2.0, (1, 3)),
    # decode 100x faster: balance needs 100 prefill per decode; capped at 16:1
    (1.0, 100.0, 1.0, 1.0, (16, 1)),
    # equal rates and costs: 1:1 (2:2 costs the same per request: fewer chips win the tie)
    (5.0, 5.0, 4.0, 4.0, (1, 1)),
    # 1:1.5 -> 2:3
    (3.0, 2.0, 1.0, 1.0, (2, 3)),
])
def test_choose_workers_by_hand(r_p, r_d, c_p, c_d, want):
    assert choose_workers(prefill_requests_per_s=r_p, decode_requests_per_s=r_d, prefill_cost=c_p,
                          decode_cost=c_d) == want


def test_choose_workers_bound_and_errors():
    assert choose_workers(prefill_requests_per_s=1.0, decode_requests_per_s=100.0, prefill_cost=1.0, decode_cost=1.0,
                          max_workers=4) == (4, 1)
    with pytest.raises(SpecError) as e:
        choose_workers(prefill_requests_per_s=0.0, decode_requests_per_s=1.0, prefill_cost=1.0, decode_cost=1.0)
    assert e.value.field == "prefill_requests_per_s"
    with pytest.raises(SpecError) as e:
        choose_workers(prefill_requests_per_s=1.0, decode_requests_per_s=1.0, prefill_cost=1.0, decode_cost=1.0,
                       max_workers=0)
    assert e.value.field == "max_workers"


@settings(max_examples=60, deadline=None)
@given(r_p=st.floats(0.01, 1e4), r_d=st.floats(0.01, 1e4), c_p=st.floats(0.1, 100), c_d=st.floats(0.1, 100))
def test_choice_never_costs_more_than_one_to_one_and_never_below_the_balance_bound(r_p, r_d, c_p, c_d):
    """Cost per request of the choice <= 1:1's, and >= c_p/r_p + c_d/r_d (every request needs both)."""
    n_p, n_d = choose_workers(prefill_requests_per_s=r_p, decode_requests_per_s=r_d, prefill_cost=c_p, decode_cost=c_d)
    per = (n_p * c_p + n_d * c_d) / min(n_p * r_p, n_d * r_d)
    assert per <= (c_p + c_d) / min(r_p, r_d) * (1 + 1e-9)
    assert per >= (c_p / r_p + c_d / r_d) * (1 - 1e-9)


def _point(system, plan, *, batch, step_s, latency_s, spec_tokens=0):
    return Point(system=system, plan=plan, batch=batch, step_s=step_s, latency_s=latency_s, tokens_per_s_per_chip=1.0,
                 tokens_per_s_per_user=1.0, usd_per_mtok=None, memory_per_chip_bytes=0.0, compute_s=0.0, memory_s=0.0,
                 comm_s=0.0, bound="compute", spec_tokens=spec_tokens)


def _result(p, d, targets, prices):
    phase = {ph: PhaseSearch(phase=ph, points_evaluated=1, points_fitting=1, points_meeting_slo=1, best=pt,
                             frontier=(pt,), best_achievable_s=pt.latency_s) for ph, pt in (("prefill", p),
                                                                                           ("decode", d))}
    return PlanResult(model="llama-3.1-70b", systems=("hgx-h100",), targets=targets,
                      objective="cost" if prices else "throughput", prices=prices,
                      decode=phase["decode"], prefill=phase["prefill"])


def test_plan_ratio_by_hand():
    """Prefill tp8: 4 prompts of 2,000 tokens per 0.5 s step = 8 requests/s; decode tp8: 64 sequences at 20 ms
    TPOT, each holding its slot for O - 1 = 200 tokens: 64 / (200 x 0.02) = 16 requests/s. Equal worker costs:
    2 prefill per decode balances at 16 requests/s on 24 chips; at $2/chip-hour that is $48/h over
    16 x 2,201 tokens/s = $0.37862 per M tokens. KV transfer: 4 x 2,000 x 327,680 B / 8 chips = 327.68 MB per
    chip at 50 GB/s = 6.5536 ms + 13 us, which takes TTFT past a 0.505 s target the 0.5 s prefill met."""
    m, s = get_model("llama-3.1-70b"), get_system("hgx-h100")
    tp8 = Plan(tp=8)
    targets = PlanTargets(tpot_s=0.05, ttft_s=0.505, context=2100, prompt_tokens=2000, output_tokens=201)
    r = _result(_point("hgx-h100", tp8, batch=4, step_s=0.5, latency_s=0.5),
                _point("hgx-h100", tp8, batch=64, step_s=0.02, latency_s=0.02), targets, {"hgx-h100": 2.0})
    w = plan_workers(r, m, [s], SearchOptions())
    assert (w.prefill_requests_per_s, w.decode_requests_per_s) == pytest.approx((8.0, 16.0), rel=1e-12)
    assert (w.prefill_workers, w.decode_workers, w.chips) == (2, 1, 24) and w.requests_per_s == pytest.approx(16.0)
    assert w.usd_per_mtok == pytest.approx(48 / 3600 / (16 * 2201) * 1e6, rel=1e-12)
    assert w.kv_transfer_s == pytest.approx(327.68e6 / 50e9 + 13e-6, rel=1e-12)
    assert w.ttft_s == pytest.approx(0.5 + 327.68e6 / 50e9 + 13e-6) and not w.meets_ttft  # 0.5066 s > 0.505 s
    assert w.decode_point == "best"


def test_plan_ratio_prices_a_speculating_decode_point_as_it_runs():
    """Speculative decoding on a disaggregated decode worker (issue 34): the best point's latency is its TPOT
    (iteration / E), so one worker finishes batch / ((O - 1)·TPOT) = 8 / (200 · 0.002 s) = 20 requests/s; the
    point is said to speculate. (Before, the best plain point stood in.)"""
    m, s = get_model("llama-3.1-8b"), get_system("hgx-h100")
    targets = PlanTargets(context=1100, prompt_tokens=1000, output_tokens=201)
    opts = SearchOptions(max_chips=8)
    spec = _point("hgx-h100", Plan(tp=1), batch=8, step_s=0.004, latency_s=0.002, spec_tokens=2)
    r = _result(_point("hgx-h100", Plan(tp=1), batch=1, step_s=0.1, latency_s=0.1), spec, targets, {})
    w = plan_workers(r, m, [s], opts)
    assert "speculates, k=2" in w.decode_point and w.tpot_s == 0.002
    assert w.decode_requests_per_s == pytest.approx(20.0, rel=1e-12)


def test_choose_workers_large_bound_is_linear_and_capped():
    """Decode 1,000x faster, equal costs: 1,000 prefill workers per decode worker balance (cost 1,001 per 1,000
    requests/s); the bound is 1,024 (a larger one is an error naming max_workers)."""
    assert choose_workers(prefill_requests_per_s=1.0, decode_requests_per_s=1000.0, prefill_cost=1.0, decode_cost=1.0,
                          max_workers=1024) == (1000, 1)
    with pytest.raises(SpecError) as e:
        choose_workers(prefill_requests_per_s=1.0, decode_requests_per_s=1.0, prefill_cost=1.0, decode_cost=1.0,
                       max_workers=100_000)
    assert e.value.field == "max_workers"


@settings(max_examples=60, deadline=None)
@given(r_p=st.floats(0.01, 1e3), r_d=st.floats(0.01, 1e3), c_p=st.floats(0.1, 100), c_d=st.floats(0.1, 100),
       n=st.integers(1, 12))
def test_balance_search_matches_the_full_search(r_p, r_d, c_p, c_d, n):
    """Trying only floor/ceil of n_p·r_p/r_d finds the same cost per request as every (n_p, n_d) pair."""
    full = min((a * c_p + b * c_d) / min(a * r_p, b * r_d) for a in range(1, n + 1) for b in range(1, n + 1))
    n_p, n_d = choose_workers(prefill_requests_per_s=r_p, decode_requests_per_s=r_d, prefill_cost=c_p,
                              decode_cost=c_d, max_workers=n)
    assert (n_p * c_p + n_d * c_d) / min(n_p * r_p, n_d * r_d) == pytest.approx(full, rel=1e-9)


def test_system_without_scale_out_leaves_the_transfer_unpriced():
    m, s = get_model("llama-3.1-70b"), get_system("tpu-v6e-256")
    opts = SearchOptions(max_chips=16)
    r = plan_deployment(m, [s], targets=PlanTargets(prompt_tokens=1000, output_tokens=200, context=1100),
                        options=opts)
    w = plan_workers(r, m, [s], opts)
    assert w.kv_transfer_s is None and "no scale-out link" in w.no_transfer
    assert w.ttft_s == r.prefill.best.latency_s
