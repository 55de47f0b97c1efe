"""Issue 18 item 6: a pipelined prefill's TTFT includes the pipeline fill.

Hand computation (GPipe, Huang et al. 2019, sec. 2.2): a batch split into m = pp micro-batches
through pp stages takes (m + pp - 1) stage-steps. Llama-3.1-70B prefilling 4096 tokens on H100
(tp 2) is compute-bound: with F the prefill FLOPs, one stage-step of one micro-batch is
F/(pp^2 tp R), so TTFT = (2pp - 1) F/(pp^2 tp R): at pp = 4, 7F/(32 R) against F/(2R) at pp = 1,
a ratio of 7/16 (the old code charged pp stage-steps, F/(8R): a ratio of 4/16).
"""

from __future__ import annotations

import pytest

from llmecon.catalog.hardware import get_system
from llmecon.catalog.models import get_model
from llmecon.econ.planner import PlanTargets, SearchOptions, plan_deployment
from llmecon.spec.plan import Plan
from llmecon.step.inference import decode_step, prefill_step


def _prefill(pp):
    return prefill_step(get_model("llama-3.1-70b"), get_system("hgx-h100"), batch=1.0, prompt_tokens=4096.0,
                        plan=Plan(tp=2, pp=pp))


def test_pipelined_prefill_ttft_is_seven_sixteenths_of_the_unpipelined_one():
    one, four = _prefill(1), _prefill(4)
    assert one.bound == "compute" and four.bound == "compute"
    assert float(four.latency_s) / float(one.latency_s) == pytest.approx(7 / 16, rel=1e-9)
    assert float(four.latency_s) == pytest.approx(float(four.step_s) * 7 / 4, rel=1e-12)
    assert float(one.latency_s) == float(one.step_s)


def test_decode_latency_is_the_iteration():
    r = decode_step(get_model("llama-3.1-70b"), get_system("hgx-h100"), batch=8.0, context=1024.0,
                    plan=Plan(tp=2, pp=4))
    assert float(r.latency_s) == float(r.step_s)


def test_planner_holds_the_ttft_target_on_the_latency_with_fill():
    """A TTFT target between the pp = 4 plan's step and its step plus fill must not accept it."""
    four = _prefill(4)
    target = 0.5 * (float(four.step_s) + float(four.latency_s))
    r = plan_deployment(get_model("llama-3.1-70b"), [get_system("hgx-h100")],
                        targets=PlanTargets(ttft_s=target, prompt_tokens=4096.0),
                        options=SearchOptions(prefill_batches=(1.0,)))
    best = r.prefill.best
    assert best is not None and best.latency_s <= target
    assert best.latency_s == pytest.approx(best.step_s * (2 * best.plan.pp - 1) / best.plan.pp, rel=1e-12)
