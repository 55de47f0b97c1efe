"""``plan_search.front``: the planner's frontier with dominated stretches dropped first must be exactly
``pareto.pareto_front`` (same indices, same order, ties to the lowest index) on any points and any runs."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmecon.econ import plan_search
from llmecon.econ.pareto import pareto_front


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 9), st.integers(0, 9), st.integers(0, 5)), min_size=1, max_size=120))
def test_front_equals_pareto_front_on_small_integers(points):
    """Small integer axes force ties on one axis and on both; runs of any lengths, labels reused."""
    pts = points
    chip = np.array([p[0] for p in pts], dtype=float)
    user = np.array([p[1] for p in pts], dtype=float)
    run = np.array([p[2] for p in pts])
    with pytest.MonkeyPatch.context() as m:
        m.setattr(plan_search, "SMALL", 0)          # screen even tiny inputs
        m.setattr(plan_search, "SEGMENT", 3)
        got = plan_search.front(chip, user, run)
    assert got.tolist() == pareto_front(chip, user).tolist()


def test_front_equals_pareto_front_on_planner_shaped_runs():
    """Runs shaped like the planner's (per-user falling and per-chip rising along a run, flattening out),
    above the size where the screen starts; the screen must drop most points and change nothing."""
    rng = np.random.default_rng(7)
    chips, users, runs = [], [], []
    for r in range(400):
        b = np.arange(1, 61, dtype=float)
        step = rng.uniform(1e-3, 5e-2) * (1 + b / rng.uniform(5, 200))
        chips.append(b / step / rng.choice([1, 2, 4, 8, 16]))
        users.append(1 / step)
        runs.append(np.full(b.size, r))
    chip, user, run = np.concatenate(chips), np.concatenate(users), np.concatenate(runs)
    assert chip.size > plan_search.SMALL
    sizes = []

    def counted(c, u):
        sizes.append(c.size)
        return pareto_front(c, u)

    with pytest.MonkeyPatch.context() as m:
        m.setattr(plan_search, "pareto_front", counted)
        got = plan_search.front(chip, user, run)
    assert got.tolist() == pareto_front(chip, user).tolist()
    assert sizes[-1] < chip.size / 4, sizes           # the last call sees the survivors only


def test_front_with_non_finite_values_falls_back():
    chip = np.array([1.0, np.inf, 2.0] * 1000)
    user = np.array([3.0, 1.0, 2.0] * 1000)
    run = np.repeat(np.arange(300), 10)
    assert plan_search.front(chip, user, run).tolist() == pareto_front(chip, user).tolist()
