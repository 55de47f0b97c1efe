"""One bound label everywhere (issue 35, item 5): ``step``, ``plan`` and ``plan --frontier`` label one point
with the same rule, ``step.roofline.bound_label`` (the largest of compute, memory, comm and overhead).
Before, the planner's points took the largest of three terms and left the calibrated overhead out: phi-2
on one H100 at batch 1 was "overhead"-bound in ``step`` and "memory"-bound in the planner's views."""

from __future__ import annotations

import numpy as np
import pytest

from llmecon.catalog.efficiency import default_profile
from llmecon.catalog.hardware import get_system
from llmecon.catalog.models import get_model
from llmecon.econ.planner import PlanTargets, SearchOptions, plan_deployment
from llmecon.econ.serving_frontier import serving_frontier
from llmecon.spec.deployment import Deployment
from llmecon.spec.plan import Plan
from llmecon.step.roofline import BOUNDS, StepTime, bound_index, bound_label
from llmecon.step.inference import decode_of


def test_bound_label_hand_cases():
    assert bound_label(2.0, 1.0, 0.5) == "compute"
    assert bound_label(1.0, 2.0, 0.5, 1.5) == "memory"
    assert bound_label(1.0, 1.0, 3.0, 2.0) == "comm"
    assert bound_label(1.0, 2.0, 0.5, 2.5) == "overhead"
    assert bound_label(1.0, 1.0, 1.0, 1.0) == "compute"          # ties go to the earlier term
    assert list(bound_label(np.array([3.0, 1.0]), np.array([1.0, 1.0]), 0.0, np.array([0.0, 2.0]))) == [
        "compute", "overhead"]
    assert BOUNDS[int(bound_index(0.0, 0.0, 0.0, 1.0))] == "overhead"
    assert StepTime(compute_s=1.0, memory_s=2.0, comm_s=0.0, overhead_s=3.0).bound == "overhead"


@pytest.fixture(scope="module")
def phi2_calibrated():
    s = get_system("h100-sxm")
    prof = default_profile(s.accelerator)
    dep = Deployment(model=get_model("phi-2"), system=s, plan=Plan(), profile=prof)
    r = decode_of(dep, batch=1.0, context=512.0)
    # calibrated phi-2 at batch 1: the kernel floors and fixed overheads outweigh the memory term
    assert r.time.overhead_s > r.time.memory_s > r.time.compute_s and r.bound == "overhead"
    return dep, r


def test_plan_labels_the_point_as_step_does(phi2_calibrated):
    dep, r = phi2_calibrated
    opts = SearchOptions(max_chips=1, batches=(1.0,), prefill_batches=(1.0,), profiles={"h100-sxm": dep.profile})
    res = plan_deployment(dep.model, [dep.system], targets=PlanTargets(context=512.0, prompt_tokens=512.0),
                          options=opts)
    best = res.decode.best
    assert (best.plan, best.batch) == (Plan(), 1.0)
    assert best.step_s == pytest.approx(float(r.step_s), rel=1e-12)
    assert best.overhead_s == pytest.approx(float(r.time.overhead_s), rel=1e-12)
    assert best.bound == r.bound == "overhead"


def test_frontier_labels_the_point_as_step_does(phi2_calibrated):
    dep, r = phi2_calibrated
    opts = SearchOptions(max_chips=1, batches=(1.0,), prefill_batches=(1.0,), profiles={"h100-sxm": dep.profile})
    front = serving_frontier(dep.model, [dep.system], targets=PlanTargets(context=512.0, prompt_tokens=512.0),
                             options=opts)
    points = [q for q in front.frontiers["h100-sxm"] if q.batch == 1.0]  # aggregated and disaggregated
    assert points and {q.bound for q in points} == {r.bound} == {"overhead"}
    assert all(q.overhead_s == pytest.approx(float(r.time.overhead_s), rel=1e-12) for q in points)
