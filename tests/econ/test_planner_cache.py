"""The planner's cache of candidate plans per (model, system, max_chips, pp_choices): a hit is the
table a fresh enumeration builds, and any change of key builds another."""

from __future__ import annotations

import dataclasses

import numpy as np

from llmecon.catalog.hardware import get_system
from llmecon.catalog.models import get_model
from llmecon.econ import planner
from llmecon.spec.plan_array import PlanArray


def _same(a: PlanArray, b: PlanArray) -> bool:
    return a.plans == b.plans and all(np.array_equal(getattr(a, f.name), getattr(b, f.name))
                                      for f in dataclasses.fields(a) if f.name != "plans")


def test_cached_table_is_the_fresh_enumeration():
    m, s = get_model("qwen3-30b-a3b"), get_system("hgx-h100")
    first = planner.candidate_table(m, s, max_chips=16)
    assert planner.candidate_table(m, s, max_chips=16) is first  # a hit
    fresh = PlanArray.from_placed(planner._candidates(m, s, max_chips=16))
    assert _same(first, fresh)
    assert list(first.plans) == planner.candidate_plans(m, s, max_chips=16)


def test_any_change_of_key_is_another_table():
    m, s = get_model("qwen3-30b-a3b"), get_system("hgx-h100")
    base = planner.candidate_table(m, s, max_chips=16)
    fewer = planner.candidate_table(m, s, max_chips=8)
    assert max(p.chips for p in fewer.plans) <= 8 < max(p.chips for p in base.plans)
    only_pp1 = planner.candidate_table(m, s, max_chips=16, pp_choices=(1,))
    assert {p.pp for p in only_pp1.plans} == {1}
    other = planner.candidate_table(m, get_system("hgx-h200"), max_chips=16)
    assert other is not base
    # a model object built separately (same name, different identity) is not served another's table
    twin = dataclasses.replace(m, name=m.name)
    assert planner.candidate_table(twin, s, max_chips=16) is not base
