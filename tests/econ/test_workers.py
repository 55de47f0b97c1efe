"""The prefill:decode worker ratio (issue 22 item 2): hand-computed choices, the plan's ratio and its $/Mtok."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmecon.catalog.hardware import get_system
from llmecon.catalog.models import get_model
from llmecon.econ.planner import PlanTargets, SearchOptions, plan_deployment
from llmecon.econ.workers import choose_workers, plan_workers
from llmecon.errors import SpecError
from llmecon.resolve import deployment
from llmecon.step.disaggregated import kv_transfer_s


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


def test_plan_reports_the_ratio_with_kv_transfer_and_all_chips_billed():
    m = get_model("llama-3.1-70b")
    s = get_system("hgx-h100")
    targets = PlanTargets(tpot_s=0.05, ttft_s=2.0, context=2048, prompt_tokens=2000, output_tokens=500)
    opts = SearchOptions(max_chips=16)
    r = plan_deployment(m, [s], targets=targets, options=opts, prices={"hgx-h100": 2.0})
    w = plan_workers(r, m, [s], opts)
    p, d = r.prefill.best, r.decode.best
    assert w.prefill_requests_per_s == pytest.approx(p.batch / p.step_s)
    assert w.decode_requests_per_s == pytest.approx(d.batch / (500 * d.latency_s))
    assert (w.prefill_workers, w.decode_workers) == choose_workers(
        prefill_requests_per_s=w.prefill_requests_per_s, decode_requests_per_s=w.decode_requests_per_s,
        prefill_cost=p.plan.chips * 2.0, decode_cost=d.plan.chips * 2.0)
    assert w.chips == w.prefill_workers * p.plan.chips + w.decode_workers * d.plan.chips
    # $/Mtok: every chip at $2/h over the request's 2,000 + 500 tokens at the system's request rate
    assert w.usd_per_mtok == pytest.approx(w.chips * 2.0 / 3600 / (w.requests_per_s * 2500) * 1e6, rel=1e-12)
    dep_p = deployment("llama-3.1-70b", "hgx-h100", tp=p.plan.tp, ep=p.plan.ep, pp=p.plan.pp, adp=p.plan.adp)
    dep_d = deployment("llama-3.1-70b", "hgx-h100", tp=d.plan.tp, ep=d.plan.ep, pp=d.plan.pp, adp=d.plan.adp)
    xfer = float(kv_transfer_s(dep_p, dep_d, prompt_tokens=2000, batch=p.batch))
    assert w.kv_transfer_s == pytest.approx(xfer, rel=1e-12)
    assert w.ttft_s == pytest.approx(p.latency_s + xfer, rel=1e-12) and w.tpot_s == d.latency_s
    assert w.meets_ttft == (w.ttft_s <= 2.0)
    assert max(w.prefill_utilisation, w.decode_utilisation) == pytest.approx(1.0)
    # unpriced: the same choice by chips, no $ figure
    r0 = plan_deployment(m, [s], targets=targets, options=opts)
    w0 = plan_workers(r0, m, [s], opts)
    assert w0.usd_per_mtok is None and w0.ratio == f"{w0.prefill_workers}:{w0.decode_workers}"


def test_system_without_scale_out_leaves_the_transfer_unpriced():
    m, s = get_model("llama-3.1-70b"), get_system("tpu-v6e-256")
    opts = SearchOptions(max_chips=16)
    r = plan_deployment(m, [s], targets=PlanTargets(prompt_tokens=1000, output_tokens=200, context=1100),
                        options=opts)
    w = plan_workers(r, m, [s], opts)
    assert w.kv_transfer_s is None and "no scale-out link" in w.no_transfer
    assert w.ttft_s == r.prefill.best.latency_s
