"""The latency floor ``analyze`` prints is its plan's batch-1 decode step (issue 18 item 6): at
batch 1 a wide plan can be bound by communication, not by reading its weights, and the floor must
not promise a step the plan cannot make."""

from __future__ import annotations

import pytest

from llmecon.catalog.hardware import get_system
from llmecon.catalog.models import get_model
from llmecon.econ.batching import batch_economics
from llmecon.spec.deployment import Deployment
from llmecon.spec.plan import Plan
from llmecon.step.inference import decode_of


def test_floor_is_the_batch_1_step_even_when_communication_binds():
    """DeepSeek-V3 fp8 on GB200 NVL72 under tp8·ep8: at batch 1 the all-reduce and all-to-all
    latencies (2 all-reduces per layer, 2 all-to-alls per MoE layer, 61 layers), not the weight
    reads, set the step."""
    dep = Deployment(model=get_model("deepseek-v3"), system=get_system("gb200-nvl72"), plan=Plan(tp=8, ep=8))
    e = batch_economics(dep, context=4096)
    one = decode_of(dep, batch=1.0, context=0.0)
    assert e.latency_floor_s == pytest.approx(float(one.step_s), rel=1e-12)
    assert str(one.bound) == "comm" and e.latency_floor_s > float(one.time.memory_s)
    # no batch-1 step at any context is shorter than the floor
    assert float(decode_of(dep, batch=1.0, context=4096.0).step_s) >= e.latency_floor_s


def test_roofline_definitions_stay_on_the_roofline_in_calibrated_mode():
    """Balance batch and crossover context are roofline definitions (docs/assumptions.md): a
    calibrated Deployment reports the same values as its ideal twin, while its steps differ."""
    from llmecon.catalog.efficiency import default_profile

    m, s = get_model("deepseek-v3"), get_system("hgx-h100")
    ideal = Deployment(model=m, system=s, plan=Plan(tp=1, ep=16))
    cal = Deployment(model=m, system=s, plan=Plan(tp=1, ep=16), profile=default_profile(s.accelerator))
    a, b = batch_economics(ideal, context=4096), batch_economics(cal, context=4096)
    assert b.balance_batch == a.balance_batch and b.crossover_context == a.crossover_context
    assert b.balance_batch_at_context == a.balance_batch_at_context
    assert b.latency_floor_s > a.latency_floor_s  # the steps themselves follow the mode
