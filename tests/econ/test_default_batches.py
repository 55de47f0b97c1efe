"""``default_batches`` drops duplicates itself (np.unique would import numpy.ma at start-up, issue 23):
its grid must be np.unique's, for every limit."""

from __future__ import annotations

import numpy as np
from hypothesis import given, strategies as st

from llmecon.econ.batching import default_batches


def _reference(limit: int) -> np.ndarray:
    limit = max(1, int(limit))
    grid = np.unique(np.round(np.logspace(0, np.log10(limit), 24 * max(1, int(np.ceil(np.log10(limit + 1)))))))
    return np.unique(np.concatenate([grid, [float(limit)]]))


def test_small_limits_by_hand():
    assert default_batches(1).tolist() == [1.0]
    assert default_batches(3).tolist() == [1.0, 2.0, 3.0]
    assert default_batches(0).tolist() == [1.0]


@given(st.integers(min_value=0, max_value=10 ** 9))
def test_default_batches_is_np_unique_of_the_grid(limit):
    got = default_batches(limit)
    ref = _reference(limit)
    assert got.dtype == ref.dtype and np.array_equal(got, ref)
    assert np.all(np.diff(got) > 0)
