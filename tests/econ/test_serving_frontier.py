"""``econ.serving_frontier`` (issue 37 item 1): whole-request points composed by hand from the decode and
prefill steps of the same plan; prefill makes a point slower, never faster; the disaggregated view keeps the
decode speed per user. ``econ.engine_layouts`` (item 2) on hand-built plans, and the frontier sanity rule
(issue 35 item 5): a system faster on every axis is not slower unless a named profile term says why."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from llmecon.catalog.efficiency import named_profile
from llmecon.catalog.hardware import get_system
from llmecon.catalog.models import get_model
from llmecon.econ.engine_layouts import engine_mask, pipeline_mask
from llmecon.econ.frontier_sanity import at_least_as_fast, slower_terms
from llmecon.econ.planner import PlanTargets, SearchOptions
from llmecon.econ.serving_frontier import serving_frontier
from llmecon.errors import SpecError
from llmecon.spec.efficiency import IDEAL
from llmecon.spec.plan import Plan
from llmecon.spec.plan_array import PlanArray
from llmecon.step.inference import decode_step, prefill_step

M8 = get_model("llama-3.1-8b")
H100 = get_system("h100-sxm")          # one chip: the only plan is tp1
T = PlanTargets(context=1536, prompt_tokens=1024, output_tokens=1024, ttft_s=None)
ONE = SearchOptions(max_chips=1, batches=(1, 8, 64))


def test_aggregated_points_by_hand():
    """R = 1 / (1/D + T_p/O): D = batch / decode step, T_p = prefill step of n = floor(8192/1024) = 8 prompts / 8."""
    f = serving_frontier(M8, [H100], targets=T, options=ONE, view="aggregated")
    pre = prefill_step(M8, H100, batch=8, prompt_tokens=1024)
    t_p = float(pre.step_s) / 8
    assert f.frontiers["h100-sxm"]
    for p in f.frontiers["h100-sxm"]:
        assert p.serving == "aggregated" and p.plan == Plan(tp=1)
        d = decode_step(M8, H100, batch=p.batch, context=1536)
        rate = p.batch / float(d.step_s)
        whole = 1 / (1 / rate + t_p / 1024)
        assert p.tokens_per_s_per_chip == pytest.approx(whole, rel=1e-9)
        assert p.tokens_per_s_per_user == pytest.approx(1 / float(d.step_s) * whole / rate, rel=1e-9)


def test_disaggregated_points_by_hand():
    """Per chip D / (1 + D·c_p/O), c_p the fewest prefill chip-seconds per request (largest prefill batch on one
    chip, no TTFT target); per user as decode."""
    opts = dataclasses.replace(ONE, prefill_batches=(1, 4))
    f = serving_frontier(M8, [H100], targets=T, options=opts, view="disaggregated")
    c_p = min(float(prefill_step(M8, H100, batch=b, prompt_tokens=1024).step_s) / b for b in (1, 4))
    for p in f.frontiers["h100-sxm"]:
        d = float(decode_step(M8, H100, batch=p.batch, context=1536).step_s)
        rate = p.batch / d
        assert p.tokens_per_s_per_chip == pytest.approx(rate / (1 + rate * c_p / 1024), rel=1e-9)
        assert p.tokens_per_s_per_user == pytest.approx(1 / d, rel=1e-9)


def test_prefill_costs_throughput():
    """At every per-user speed of the whole-request frontier, the decode-only frontier is at least as high."""
    sys = [get_system("hgx-h100")]
    opts = SearchOptions(max_chips=8)
    dec = serving_frontier(M8, sys, targets=T, options=opts, view="decode").frontiers["hgx-h100"]
    whole = serving_frontier(M8, sys, targets=T, options=opts, view="whole").frontiers["hgx-h100"]
    assert {p.serving for p in whole} <= {"aggregated", "disaggregated"} and {p.serving for p in dec} == {"decode"}
    for p in whole:
        best = max(q.tokens_per_s_per_chip for q in dec if q.tokens_per_s_per_user >= p.tokens_per_s_per_user)
        assert p.tokens_per_s_per_chip <= best * (1 + 1e-12)


def test_disaggregated_without_a_prefill_meeting_ttft_is_refused():
    from llmecon.errors import InfeasibleError

    tight = PlanTargets(context=1536, prompt_tokens=1024, output_tokens=1024, ttft_s=1e-6)
    with pytest.raises(InfeasibleError, match="ttft"):
        serving_frontier(M8, [H100], targets=tight, options=ONE, view="disaggregated")
    whole = serving_frontier(M8, [H100], targets=tight, options=ONE, view="whole")  # aggregated points remain
    assert {p.serving for p in whole.frontiers["h100-sxm"]} == {"aggregated"}


def test_bad_view_and_budget():
    with pytest.raises(SpecError, match="view"):
        serving_frontier(M8, [H100], view="prefill")
    with pytest.raises(SpecError, match="token_budget"):
        serving_frontier(M8, [H100], token_budget=0)


def test_engine_layouts_by_hand():
    plans = [Plan(tp=8, adp=1, ep=8), Plan(tp=1, adp=8, ep=8), Plan(tp=2, adp=4, ep=8), Plan(tp=2, adp=4, ep=2),
             Plan(tp=8, adp=1, ep=1)]
    table = PlanArray.from_plans(plans, get_system("hgx-h100"))
    # TensorRT-LLM: attention DP only with attention TP 1 (tp2·adp4 refused); any EP
    assert list(engine_mask(table, "trtllm", moe=True)) == [True, True, False, False, True]
    # SGLang / vLLM: any tp·adp split; experts over the whole stage or tensor-parallel (ep2 of 8 refused)
    assert list(engine_mask(table, "sglang", moe=True)) == [True, True, True, False, True]
    assert list(engine_mask(table, "vllm", moe=False)) == [True] * 5
    assert list(engine_mask(table, "", moe=True)) == [True] * 5
    with pytest.raises(SpecError, match="engine"):
        engine_mask(table, "tgi", moe=True)


def test_pipeline_only_where_pp1_does_not_fit():
    table = PlanArray.from_plans([Plan(tp=8), Plan(tp=4, pp=2), Plan(tp=8, pp=2)], get_system("hgx-h100"))
    assert list(pipeline_mask(table, np.array([True, True, True]))) == [True, False, False]
    assert list(pipeline_mask(table, np.array([False, True, True]))) == [True, True, True]  # pp1 does not fit
    assert list(pipeline_mask(table, np.array([True, True, True]), decode_pp="any")) == [True, True, True]
    # the planner keeps to it: Llama-3.1-8B fits one H100, so no engine-layout frontier point pipelines
    f = serving_frontier(M8, [get_system("hgx-h100")], targets=T, options=SearchOptions(max_chips=16, layouts="engine"))
    assert all(p.plan.pp == 1 for p in f.frontiers["hgx-h100"])


def test_per_system_budget():
    f = serving_frontier(M8, [get_system("hgx-h100"), get_system("hgx-h200")], targets=T,
                         options=SearchOptions(max_chips=16, max_chips_by_system={"hgx-h100": 2}))
    assert max(p.plan.chips for p in f.frontiers["hgx-h100"]) <= 2
    assert max(p.plan.chips for p in f.frontiers["hgx-h200"]) > 2
    with pytest.raises(SpecError, match="max_chips"):
        SearchOptions(max_chips_by_system={"hgx-h100": 0})


def _faster(system, factor: float):
    a = system.accelerator
    acc = dataclasses.replace(a, name=a.name + "-fast", hbm_bandwidth_bytes_per_s=a.hbm_bandwidth_bytes_per_s * factor,
                              peak_flops_per_s={k: v * factor for k, v in a.peak_flops_per_s.items()})
    up = dataclasses.replace(system.scale_up, bandwidth_bytes_per_s=system.scale_up.bandwidth_bytes_per_s * factor)
    return dataclasses.replace(system, name=system.name + "-fast", accelerator=acc, scale_up=up)


@pytest.mark.parametrize("factor", [1.3, 2.0])
def test_ideal_faster_system_is_never_slower(factor):
    """Ideal mode has no profile term: a system faster on every axis reaches at least the same tokens/s per chip
    at every tokens/s per user, and a higher top speed per user."""
    base = get_system("hgx-h100")
    fast = _faster(base, factor)
    assert at_least_as_fast(fast, base) and not at_least_as_fast(base, fast)
    f = serving_frontier(M8, [base, fast], targets=T, options=SearchOptions(max_chips=8))
    slow_pts, fast_pts = f.frontiers[base.name], f.frontiers[fast.name]
    assert fast_pts[0].tokens_per_s_per_user > slow_pts[0].tokens_per_s_per_user
    for p in slow_pts:
        best = max(q.tokens_per_s_per_chip for q in fast_pts if q.tokens_per_s_per_user >= p.tokens_per_s_per_user)
        assert best >= p.tokens_per_s_per_chip * (1 - 1e-9)
    assert slower_terms(IDEAL, IDEAL) == ()


def test_calibrated_gb200_slower_than_b200_names_its_term():
    """GB200 is at least as fast as B200 on every datasheet axis an 8-chip replica uses (its scale-out NIC is
    slower: 400 against 800 Gb/s, unused inside 8 chips); calibrated, DeepSeek-V3's top speed per user
    comes out lower on GB200, and the profile term that says why is named: gb200/trtllm pays its kernel floors
    nearly whole (engine_floor_scale 0.99 against 0.49 on b200/trtllm)."""
    gb, b = get_system("gb200-nvl72"), get_system("hgx-b200")
    assert at_least_as_fast(gb, b, max_chips=8) and not at_least_as_fast(gb, b)
    pg, pb = named_profile("gb200/trtllm"), named_profile("b200/trtllm")
    f = serving_frontier(get_model("deepseek-v3"), [gb, b], targets=T, view="decode",
                         options=SearchOptions(max_chips=8, profiles={gb.name: pg, b.name: pb}, layouts="engine"))
    top = {n: f.frontiers[n][0].tokens_per_s_per_user for n in f.systems}
    if top[gb.name] < top[b.name]:
        assert "engine_floor_scale" in slower_terms(pg, pb)
    assert math.isfinite(top[gb.name])


def test_speculation_is_an_option_with_both_frontiers_labelled():
    """Issue 37 item 3: with MTP searched, ``frontiers`` spans plain and speculative points (each labelled with
    its k) and ``without_speculation`` holds plain decoding alone: every point there has k = 0, and at each of
    its speeds the frontier with speculation allowed carries at least as much per chip (a superset's envelope);
    without speculation searched there is no second frontier."""
    from llmecon.spec.speculation import speculation_candidates

    v3 = get_model("deepseek-v3")
    b200 = get_system("hgx-b200")
    targets = PlanTargets(context=1536, prompt_tokens=1024, output_tokens=1024, ttft_s=None)
    base = SearchOptions(max_chips=8, batches=(1, 4, 16, 64))
    spec = dataclasses.replace(base, speculation=tuple(speculation_candidates(v3, max_k=2)))
    f = serving_frontier(v3, [b200], targets=targets, options=spec)
    both, plain = f.frontiers["hgx-b200"], f.without_speculation["hgx-b200"]
    assert plain and all(p.spec_tokens == 0 for p in plain)
    assert any(p.spec_tokens > 0 for p in both)
    u, c = np.array([p.tokens_per_s_per_user for p in plain]), np.array([p.tokens_per_s_per_chip for p in plain])
    bu, bc = np.array([p.tokens_per_s_per_user for p in both]), np.array([p.tokens_per_s_per_chip for p in both])
    assert all(bc[bu >= ui].max() >= ci * (1 - 1e-12) for ui, ci in zip(u, c))
    assert bu.max() > u.max()  # ideal mode: a drafted token at acceptance > 0 raises the top speed
    assert serving_frontier(v3, [b200], targets=targets, options=base).without_speculation == {}
