"""``plan_array._unique_rows`` (the grouping of plans by whole-number attributes) is numpy's
row-wise unique, values and inverse, on both of its paths; ``_distinct_rows`` and ``per_distinct_row`` (the
column layout's once-per-distinct-row evaluation) merge equal rows only and give one call's numbers."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from llmecon.spec.plan_array import _unique_rows


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 4).flatmap(lambda cols: arrays(np.int64, st.tuples(st.integers(1, 200), st.just(cols)),
                                                     elements=st.integers(-3, 700))))
def test_unique_rows_is_numpys_row_wise_unique(a):
    values, inverse = _unique_rows(a)
    ref_values, ref_inverse = np.unique(a, axis=0, return_inverse=True)
    assert np.array_equal(values, ref_values)
    assert np.array_equal(np.ravel(inverse), np.ravel(ref_inverse))
    assert np.array_equal(values[np.ravel(inverse)], a)


def test_unique_rows_by_hand():
    a = np.array([[2, 1], [0, 5], [2, 1], [0, 0]])
    values, inverse = _unique_rows(a)
    assert values.tolist() == [[0, 0], [0, 5], [2, 1]]
    assert np.ravel(inverse).tolist() == [2, 1, 2, 0]


def test_distinct_rows_merges_equal_rows_only():
    """Rows equal in the three sample columns but not elsewhere are never merged (the full check fails and
    every row stands for itself); equal rows are merged and mapped back exactly."""
    from llmecon.spec.plan_array import _distinct_rows

    base = np.arange(7.0)
    v = np.stack([base, base * 2, base, base * 2, base])
    rows, inverse = _distinct_rows(v)
    assert rows.shape[0] == 2 and np.array_equal(rows[inverse], v)
    w = v.copy()
    w[2, 1] = 99.0                      # differs from row 0 off the sample columns (0, 3, 6)
    rows, inverse = _distinct_rows(w)
    assert np.array_equal(rows[inverse], w) and rows.shape[0] == 5


def test_per_distinct_row_equals_one_call_over_every_row():
    from llmecon.spec.plan import Plan
    from llmecon.catalog.hardware import get_system
    from llmecon.spec.plan_array import PlanArray

    system = get_system("gb200-nvl72")
    table = PlanArray.from_plans([Plan(tp=t, pp=p) for t in (1, 2, 4) for p in (1, 2, 4)], system).column()
    values = np.array([[1.0, 3.0, 10.0, 1000.0]]) / table.pp
    seen = []

    def fn(key, rows):
        seen.append(rows.shape[0])
        return (rows * key[0] + 0.5,)

    got = table.per_distinct_row(values, fn, table.tp)[0]
    assert np.array_equal(got, values * table.tp + 0.5)
    assert seen == [3, 3, 3]            # per tp, the three distinct rows (one per pp), not the three plans each
