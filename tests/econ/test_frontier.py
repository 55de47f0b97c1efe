"""``econ.frontier``: the per-system decode frontier is non-dominated and monotone, interpolation at an
interactivity by hand on a tiny frontier, the best point meeting it, and $/Mtok from the price."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmecon.catalog.hardware import get_system
from llmecon.catalog.models import get_model
from llmecon.econ.frontier import at_interactivity, decode_frontier, interpolate
from llmecon.econ.planner import Point, SearchOptions, PlanTargets, pareto_front
from llmecon.errors import SpecError
from llmecon.spec.plan import Plan


def _pt(per_user: float, per_chip: float, *, price: float | None = None, batch: float = 1.0) -> Point:
    usd = None if price is None else price / 3600 / per_chip * 1e6
    return Point(system="s", plan=Plan(tp=1), batch=batch, step_s=1 / per_user, latency_s=1 / per_user,
                 tokens_per_s_per_chip=per_chip, tokens_per_s_per_user=per_user, usd_per_mtok=usd,
                 memory_per_chip_bytes=0.0, compute_s=0.0, memory_s=1 / per_user, comm_s=0.0, bound="memory")


# a tiny frontier, fastest per user first: (100, 10), (10, 1000), (5, 2000)
TINY = (_pt(100, 10, price=3.6, batch=1), _pt(10, 1000, price=3.6, batch=100), _pt(5, 2000, price=3.6, batch=400))


def test_interpolation_by_hand():
    u, c = [p.tokens_per_s_per_user for p in TINY], [p.tokens_per_s_per_chip for p in TINY]
    # log10 u from 2 to 1 is halfway at 10^1.5; log10 c from 1 to 3 is 2 there: 100 tokens/s per chip
    value, i, j = interpolate(u, c, 10 ** 1.5)
    assert value == pytest.approx(100.0, rel=1e-12) and (i, j) == (0, 1)
    # between (10, 1000) and (5, 2000) at 7.0710678 (= 10/sqrt 2): halfway in log, c = 1000·sqrt 2
    value, i, j = interpolate(u, c, 10 / math.sqrt(2))
    assert value == pytest.approx(1000 * math.sqrt(2), rel=1e-12) and (i, j) == (1, 2)
    assert interpolate(u, c, 10) == (1000.0, 1, 1)          # on a point: the point
    assert interpolate(u, c, 100) == (10.0, 0, 0)
    assert interpolate(u, c, 101) is None                   # faster than any point
    assert interpolate(u, c, 4) is None                     # slower than the slowest: no extrapolation
    assert interpolate([], [], 1) is None


def test_at_interactivity_by_hand():
    a = at_interactivity(TINY, 10 ** 1.5, system="s", price=3.6)
    assert a.method == "interpolated" and a.tokens_per_s_per_chip == pytest.approx(100.0)
    # $3.6/chip-hour = $0.001/chip-s; 100 tokens/s per chip: $1e-5 per token = $10 per Mtok
    assert a.usd_per_mtok == pytest.approx(10.0) and a.interpolated_usd_per_mtok == pytest.approx(10.0)
    # the best evaluated point meeting 31.6 tokens/s per user is (100, 10): $100/Mtok
    assert a.point is TINY[0] and a.point.usd_per_mtok == pytest.approx(100.0)
    assert a.between == (TINY[0], TINY[1])
    slow = at_interactivity(TINY, 2, system="s", price=3.6)
    assert slow.method == "point" and slow.point is TINY[2] and slow.tokens_per_s_per_chip == 2000
    assert slow.usd_per_mtok == pytest.approx(0.5)
    fast = at_interactivity(TINY, 200, system="s", price=3.6)
    assert fast.method == "unreachable" and fast.tokens_per_s_per_chip is None and fast.usd_per_mtok is None
    unpriced = at_interactivity(TINY, 10 ** 1.5, system="s", price=None)
    assert unpriced.usd_per_mtok is None and unpriced.tokens_per_s_per_chip == pytest.approx(100.0)
    with pytest.raises(SpecError, match="interactivity"):
        at_interactivity(TINY, 0, system="s", price=None)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.floats(0.1, 1e4), st.floats(0.1, 1e4)), min_size=1, max_size=40),
       st.floats(0.1, 1e4))
def test_interpolation_lies_between_its_points(pairs, target):
    c, u = map(np.array, zip(*pairs))
    keep = pareto_front(c, u)
    fu, fc = u[keep], c[keep]
    assert np.all(np.diff(fu) < 0) and np.all(np.diff(fc) > 0)   # monotone: slower per user, more per chip
    hit = interpolate(fu, fc, target)
    if hit is None:
        assert target > fu[0] or target < fu[-1]
        return
    value, i, j = hit
    assert fu[i] >= target >= fu[j] and fc[i] * (1 - 1e-9) <= value <= fc[j] * (1 + 1e-9)


@pytest.fixture(scope="module")
def two():
    systems = [get_system("gb200-nvl72"), get_system("hgx-h100")]
    return decode_frontier(get_model("deepseek-v3"), systems, targets=PlanTargets(context=2048),
                           options=SearchOptions(max_chips=64), prices={"gb200-nvl72": 4.0, "hgx-h100": 2.5},
                           interactivity=60.0)


def test_frontier_is_non_dominated_and_monotone(two):
    assert two.systems == ("gb200-nvl72", "hgx-h100") and two.targets.context == 2048
    assert two.targets.tpot_s is None and two.targets.ttft_s is None
    for name in two.systems:
        pts = two.frontiers[name]
        assert pts and all(p.system == name for p in pts)
        u = np.array([p.tokens_per_s_per_user for p in pts])
        c = np.array([p.tokens_per_s_per_chip for p in pts])
        assert np.all(np.diff(u) < 0) and np.all(np.diff(c) > 0)
        for p in pts:
            assert p.usd_per_mtok == pytest.approx(two.prices[name] / 3600 / p.tokens_per_s_per_chip * 1e6)
        a = two.at[name]
        if a.method == "interpolated":
            assert a.point.tokens_per_s_per_user >= 60 and a.tokens_per_s_per_chip >= a.point.tokens_per_s_per_chip


def test_one_system_and_no_interactivity():
    f = decode_frontier(get_model("llama-3.1-8b"), [get_system("h100-sxm")], options=SearchOptions(max_chips=8))
    assert f.systems == ("h100-sxm",) and f.at == {} and f.frontiers["h100-sxm"]
    assert all(p.usd_per_mtok is None for p in f.frontiers["h100-sxm"])
    with pytest.raises(SpecError, match="interactivity"):
        decode_frontier(get_model("llama-3.1-8b"), [get_system("h100-sxm")], interactivity=-1)
