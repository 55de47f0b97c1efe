"""The planner searches speculative decoding's k beside plain decoding: the vectorised points equal the
per-deployment ``speculative_of``; a useless draft is never chosen; TPOT = iteration / E."""

from __future__ import annotations

import pytest

from llmecon.catalog.hardware import get_system
from llmecon.catalog.models import get_model
from llmecon.econ.planner import PlanTargets, SearchOptions, plan_deployment
from llmecon.spec.deployment import Deployment
from llmecon.spec.speculation import speculation_candidates
from llmecon.step.speculative import speculative_of

M, S = get_model("deepseek-v3"), get_system("gb200-nvl72")
GRID = (1.0, 8.0, 64.0, 512.0, 4096.0)


def _plan(acceptance=None, k=1, tpot=0.005):
    opts = SearchOptions(max_chips=72, batches=GRID, speculation=speculation_candidates(M, max_k=k,
                                                                                        acceptance=acceptance))
    return plan_deployment(M, [S], targets=PlanTargets(tpot_s=tpot), options=opts), opts


def test_chosen_k_matches_the_deployment_path():
    r, opts = _plan()
    b = r.decode.best
    assert b.spec_tokens == 1 and b.tokens_per_step == pytest.approx(1.85)
    assert b.latency_s == pytest.approx(b.step_s / 1.85, rel=1e-12)
    assert b.tokens_per_s_per_user == pytest.approx(1.85 / b.step_s, rel=1e-12)
    dep = Deployment(model=M, system=S, plan=b.plan, speculation=opts.speculation[0])
    s = speculative_of(dep, batch=b.batch, context=4096)
    assert float(s.step_s) == pytest.approx(b.step_s, rel=1e-9)
    assert b.tokens_per_s_per_chip == pytest.approx(float(s.tokens_per_s) / b.plan.chips, rel=1e-9)
    assert r.prefill.best.spec_tokens == 0


def test_plain_points_are_kept_and_counted():
    r0 = plan_deployment(M, [S], targets=PlanTargets(tpot_s=0.02),
                         options=SearchOptions(max_chips=72, batches=GRID))
    r1, _ = _plan()
    assert r1.decode.points_evaluated == 2 * r0.decode.points_evaluated
    assert r1.prefill.points_evaluated == r0.prefill.points_evaluated
    assert r1.decode.best.tokens_per_s_per_chip >= r0.decode.best.tokens_per_s_per_chip


def test_a_useless_draft_is_not_chosen():
    r, _ = _plan(acceptance="0.01", k=2)
    assert r.decode.best.spec_tokens == 0


def test_relaxed_target_prefers_plain_throughput():
    """At a loose TPOT the best throughput is compute-bound, where the verify step's (k+1)x compute
    costs more than E buys: plain decoding wins (the break-even batch lies below the chosen batch)."""
    opts = SearchOptions(max_chips=72, speculation=speculation_candidates(M, max_k=1))
    r = plan_deployment(M, [S], targets=PlanTargets(tpot_s=0.02), options=opts)
    assert r.decode.best.spec_tokens == 0
