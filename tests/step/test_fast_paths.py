"""Issue 36's fast paths give the numbers of the general paths they skip: the all-reduce choice remembered per
(algorithm, participants, link), ``totals=False`` (times unchanged, totals left out), the remembered
``Plan.validate``, and the column layout of a ``PlanArray`` (every point equal to the per-plan call)."""

from __future__ import annotations

import functools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmecon.catalog.hardware import get_system
from llmecon.catalog.models import get_model
from llmecon.errors import SpecError
from llmecon.spec.plan import Placement, Plan
from llmecon.spec.plan_array import PlanArray
from llmecon.step import collectives
from llmecon.step.inference import decode_step, prefill_step

SYSTEMS = ("hgx-h100", "gb200-nvl72", "hgx-b200")


def _general(algorithm, message, participants, link):
    """``all_reduce_s``'s general path: each candidate algorithm's own function, the minimum in order."""
    if algorithm == "auto":
        names = ("ring", "one_shot")
    else:
        names = collectives.supported_all_reduce_algorithms(link)
    return functools.reduce(np.minimum, (collectives.ALL_REDUCE_ALGORITHMS[a](
        message_bytes=message, participants=participants, link=link) for a in names))


@settings(max_examples=120, deadline=None)
@given(st.sampled_from(SYSTEMS), st.sampled_from(["auto", "best"]), st.integers(2, 72),
       st.lists(st.floats(0.0, 1e10), min_size=1, max_size=6), st.booleans())
def test_remembered_all_reduce_choice_equals_the_general_path(system, algorithm, p, sizes, up):
    link = get_system(system).scale_up if up else get_system(system).scale_out
    message = np.array(sizes)
    fast = collectives.all_reduce_s(message_bytes=message, participants=p, link=link, algorithm=algorithm)
    assert np.array_equal(fast, _general(algorithm, message, p, link))
    scalar = collectives.all_reduce_s(message_bytes=sizes[0], participants=p, link=link, algorithm=algorithm)
    assert scalar == _general(algorithm, sizes[0], p, link)


def test_all_reduce_general_path_still_checks():
    link = get_system("hgx-h100").scale_up
    with pytest.raises(SpecError, match="participants"):
        collectives.all_reduce_s(message_bytes=1e6, participants=2.5, link=link, algorithm="best")
    assert collectives.all_reduce_s(message_bytes=1e6, participants=1, link=link, algorithm="best") == 0.0
    assert collectives.all_reduce_s(message_bytes=1e6, participants=np.int64(8), link=link, algorithm="auto") == \
        collectives.all_reduce_s(message_bytes=1e6, participants=8, link=link, algorithm="auto")


@pytest.mark.parametrize("name, plan", [("deepseek-v3", Plan(tp=1, ep=32, adp=64)),
                                        ("llama-3.1-70b", Plan(tp=4, pp=2)), ("qwen3-235b-a22b", Plan(tp=2, ep=8))])
def test_totals_false_keeps_the_times_and_leaves_out_the_totals(name, plan):
    model, system = get_model(name), get_system("gb200-nvl72")
    batch = np.array([1.0, 16.0, 700.0, 9000.0])
    for step in (lambda **kw: decode_step(model, system, batch=batch, context=4096.0, plan=plan, **kw),
                 lambda **kw: prefill_step(model, system, batch=batch, prompt_tokens=2048.0, plan=plan, **kw)):
        full, lean = step(), step(totals=False)
        for f in ("compute_s", "memory_s", "comm_s"):
            assert np.array_equal(getattr(full.time, f), getattr(lean.time, f)), f
        assert np.array_equal(full.memory_per_chip_bytes, lean.memory_per_chip_bytes)
        assert np.array_equal(full.tokens, lean.tokens)
        assert lean.flops is None and lean.weight_bytes is None and lean.routed_compute_s is None
        assert full.flops is not None and full.weight_bytes is not None


def test_validate_remembers_only_what_passed():
    model, system = get_model("llama-3.1-70b"), get_system("hgx-h100")
    good, bad = Plan(tp=4), Plan(tp=3)
    assert good.validate(model, system) is good.validate(model, system)
    for _ in range(2):                     # a failure is never remembered
        with pytest.raises(SpecError):
            bad.validate(model, system)
    other = get_model("llama-3.1-8b")
    assert good.validate(other, system) == good.validate(other, system)


def test_column_layout_equals_the_per_plan_calls():
    """Every point of the (plans x batches) rectangle equals a per-plan call, bit for bit, MoE and dense."""
    for name in ("deepseek-v3", "llama-3.1-70b"):
        model, system = get_model(name), get_system("gb200-nvl72")
        plans = [Plan(tp=1, ep=32, adp=64), Plan(tp=8), Plan(tp=2, ep=8, adp=4, pp=4), Plan(tp=4, pp=2),
                 Plan(tp=8, ep=72, adp=9, redundant_experts=32)] if model.is_moe else \
            [Plan(tp=8), Plan(tp=4, pp=2), Plan(tp=2, pp=8), Plan(tp=1, pp=16)]
        table = PlanArray.from_plans([p for p in plans if isinstance(p.check(model, system), Placement)], system)
        assert len(table) >= 3
        batch = np.array([[64.0, 512.0, 4096.0, 70000.0]])
        rect = decode_step(model, system, batch=batch, context=8192.0, plan=table.column())
        for i, plan in enumerate(table.plans):
            one = decode_step(model, system, batch=batch[0], context=8192.0, plan=plan)
            assert np.array_equal(np.broadcast_to(rect.step_s, (len(table), 4))[i], one.step_s), plan.label()
            assert np.array_equal(np.broadcast_to(rect.memory_per_chip_bytes, (len(table), 4))[i],
                                  one.memory_per_chip_bytes)
