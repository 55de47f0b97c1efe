"""``plan_array._unique_rows`` (the grouping of plans by whole-number attributes) is numpy's
row-wise unique, values and inverse, on both of its paths."""

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
