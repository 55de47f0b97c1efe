"""The deployment planner: search space, SLO filtering, the cheapest point, the Pareto frontier,
and clear errors for impossible targets and bad input."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmecon.catalog.hardware import get_system
from llmecon.catalog.models import get_model
from llmecon.errors import InfeasibleError, SpecError
from llmecon.step.inference import decode_step
from llmecon.spec.plan import Plan, place
from llmecon.econ.planner import (SearchOptions, PlanTargets, candidate_plans, pareto_front, plan_deployment,
    stage_widths)

FAST = settings(max_examples=60, deadline=None)


def _dominated(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Brute force: point i is dominated if some j is >= on both axes and > on one."""
    ge = (a[None, :] >= a[:, None]) & (b[None, :] >= b[:, None])
    gt = (a[None, :] > a[:, None]) | (b[None, :] > b[:, None])
    return np.any(ge & gt, axis=1)


@FAST
@given(st.lists(st.tuples(st.integers(1, 30), st.integers(1, 30)), min_size=1, max_size=60))
def test_pareto_front_is_exactly_the_non_dominated_set(points):
    a = np.array([p[0] for p in points], dtype=float)
    b = np.array([p[1] for p in points], dtype=float)
    keep = pareto_front(a, b)
    dominated = _dominated(a, b)
    # every kept point is non-dominated, and every non-dominated value pair is represented once
    assert not np.any(dominated[keep])
    assert {(a[i], b[i]) for i in keep} == {(a[i], b[i]) for i in np.flatnonzero(~dominated)}
    assert len(keep) == len({(a[i], b[i]) for i in keep})


def test_stage_widths_never_straddle():
    assert stage_widths(8, 64) == [1, 2, 4, 8, 16, 32, 64]
    assert stage_widths(72, 300) == [1, 2, 3, 4, 6, 8, 9, 12, 16, 18, 24, 32, 36, 64, 72, 128, 144, 256, 288]


@pytest.mark.parametrize("model_name,system_name", [("deepseek-v3", "hgx-h100"), ("llama-3.1-70b", "gb200-nvl72")])
def test_candidate_plans_are_valid_and_bounded(model_name, system_name):
    m, s = get_model(model_name), get_system(system_name)
    plans = candidate_plans(m, s, max_chips=128)
    assert plans
    assert len(set(plans)) == len(plans)
    for p in plans:
        p.validate(m, s)
        assert p.chips <= 128
        place(p, s)
    if not m.is_moe:
        assert all(p.ep == 1 for p in plans)


def test_candidate_plans_fill_wide_groups_with_redundant_experts():
    """256 experts do not divide a 72- or 144-chip stage: the planner tries ep = W with the fewest
    redundant copies (32: DeepSeek's EP144 decode layout), and never more than E/4 copies."""
    m, s = get_model("deepseek-v3"), get_system("gb200-nvl72")
    plans = candidate_plans(m, s, max_chips=144, pp_choices=(1,))
    assert Plan(tp=1, adp=72, ep=72, redundant_experts=32) in plans
    assert Plan(tp=1, adp=144, ep=144, redundant_experts=32) in plans
    for p in plans:
        assert (256 + p.redundant_experts) % p.ep == 0
        if p.redundant_experts:
            assert p.ep == p.width and 256 % p.ep and 4 * p.redundant_experts <= 256


SMALL = dict(targets=PlanTargets(tpot_s=0.02, ttft_s=1.0, context=2048, prompt_tokens=1024, output_tokens=256),
             options=SearchOptions(max_chips=8, batches=(1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)))


def test_best_decode_point_is_the_brute_force_cheapest():
    """Re-derive the decode choice for Llama-3.1-8B on one HGX H100 by looping over every plan
    and batch of the same grid: the cheapest fitting point within the TPOT target."""
    m, s = get_model("llama-3.1-8b"), get_system("hgx-h100")
    r = plan_deployment(m, [s], prices={"hgx-h100": 2.0}, **SMALL)
    best = None
    for plan, b in itertools.product(candidate_plans(m, s, max_chips=8), SMALL["options"].batches):
        step = decode_step(m, s, batch=float(b), context=2048.0, plan=plan)
        if not bool(step.fits) or float(step.step_s) > 0.02:
            continue
        usd = 2.0 / 3600 * plan.chips * float(step.step_s) / b * 1e6
        if best is None or (usd, plan.chips) < best[:2]:
            best = (usd, plan.chips, plan, b)
    assert r.decode.best.plan == best[2]
    assert r.decode.best.batch == best[3]
    assert r.decode.best.usd_per_mtok == pytest.approx(best[0], rel=1e-9)
    assert r.decode.best.step_s <= 0.02
    assert r.objective == "cost"


def test_frontier_is_non_dominated_per_system_and_contains_the_throughput_best():
    m = get_model("qwen3-30b-a3b")
    systems = [get_system("hgx-h100"), get_system("hgx-b200")]
    r = plan_deployment(m, systems, targets=PlanTargets(tpot_s=0.05, ttft_s=2.0), options=SearchOptions(max_chips=16))
    assert r.objective == "throughput"  # no prices: never invent a $ figure
    assert r.decode.best.usd_per_mtok is None and r.usd_per_mtok_blended is None
    for name in ("hgx-h100", "hgx-b200"):
        pts = [p for p in r.decode.frontier if p.system == name]
        a = np.array([p.tokens_per_s_per_chip for p in pts])
        b = np.array([p.tokens_per_s_per_user for p in pts])
        assert pts and not np.any(_dominated(a, b))
    best = r.decode.best
    assert best.step_s <= 0.05
    assert r.decode.points_meeting_slo <= r.decode.points_fitting <= r.decode.points_evaluated


def test_blended_price_weights_prompt_and_output():
    m, s = get_model("llama-3.1-8b"), get_system("hgx-h100")
    r = plan_deployment(m, [s], prices={"hgx-h100": 2.0}, **SMALL)
    t = SMALL["targets"]
    expect = (t.prompt_tokens * r.prefill.best.usd_per_mtok + t.output_tokens * r.decode.best.usd_per_mtok) / (
        t.prompt_tokens + t.output_tokens)
    assert r.usd_per_mtok_blended == pytest.approx(expect, rel=1e-12)
    assert r.prefill.best.step_s <= 1.0


def test_impossible_tpot_names_the_best_achievable():
    m, s = get_model("llama-3.1-70b"), get_system("hgx-h100")
    with pytest.raises(InfeasibleError, match=r"no plan meets tpot <= 100 us; best achievable is \d"):
        plan_deployment(m, [s], targets=PlanTargets(tpot_s=1e-4), options=SearchOptions(max_chips=8))


def test_nothing_fits():
    with pytest.raises(InfeasibleError, match="do not fit any plan"):
        plan_deployment(get_model("deepseek-v3"), [get_system("h100-sxm")], options=SearchOptions(max_chips=1))


@pytest.mark.parametrize("kwargs,match", [
    (dict(prices={"hgx-b200": 2.0}), "not among systems"),
    (dict(objective="cost"), "needs a price"),
    (dict(objective="speed"), "^objective"),
    (dict(prices={"hgx-h100": -1.0}), "^price_per_chip_hour"),
])
def test_bad_requests_are_rejected(kwargs, match):
    with pytest.raises(SpecError, match=match):
        plan_deployment(get_model("llama-3.1-8b"), [get_system("hgx-h100")], options=SearchOptions(max_chips=8),
                        **kwargs)


@pytest.mark.parametrize("kwargs,match", [(dict(tpot_s=0.0), "^tpot"), (dict(ttft_s=-1.0), "^ttft"),
                                          (dict(prompt_tokens=0), "^prompt_tokens"), (dict(context=-5), "^context")])
def test_bad_targets(kwargs, match):
    with pytest.raises(SpecError, match=match):
        PlanTargets(**kwargs)


def test_systems_listed_twice_or_none():
    s = get_system("hgx-h100")
    with pytest.raises(SpecError, match="twice"):
        plan_deployment(get_model("llama-3.1-8b"), [s, s])
    with pytest.raises(SpecError, match="at least one"):
        plan_deployment(get_model("llama-3.1-8b"), [])


def test_deepseek_decode_on_hgx_crosses_nodes_for_memory():
    """DeepSeek-V3 (671 GB fp8) cannot be served from one 8-GPU HGX H100 at a useful batch: the
    planner's decode choice spans several nodes, with its all-to-all (or pipeline hops) on the
    scale-out network — the rack boundary the issue asks the planner to handle."""
    m, s = get_model("deepseek-v3"), get_system("hgx-h100")
    r = plan_deployment(m, [s], targets=PlanTargets(tpot_s=0.05, ttft_s=2.0), prices={"hgx-h100": 2.0},
                        options=SearchOptions(max_chips=256))
    best = r.decode.best
    assert best.plan.chips > 8
    assert r.decode.comm.tiers["ep"] == "two_tier" or r.decode.comm.tiers["pp"] in ("scale_out", "both")
    assert r.decode.batch_limited_by in ("memory", "target", "objective", "grid")
    assert isinstance(best.plan, Plan)
