"""The union step of the distinct-expert table in two array calls (``_union_stepper``, issue 23 cold
start) must give the bits of the plain loop it replaced: nxt[n:] += (dist·probs[n])[:size-n], n = 0..k."""

from __future__ import annotations

import numpy as np
from hypothesis import example, given, settings, strategies as st

from llmecon.step.expert_load import _union_stepper


def _loop(probs, dist):
    nxt = np.zeros_like(dist)
    for n, pn in enumerate(probs[:dist.size]):      # growth by n >= size slots lands nowhere
        nxt[n:] += (dist * pn)[:dist.size - n]
    return nxt


def test_one_token_by_hand():
    probs = np.array([[1.0, 0.5, 1.0], [0.0, 0.5, 0.0]])   # grow by 0 or 1 slot (none once all 2 are touched)
    step = _union_stepper(probs)
    assert step(np.array([1.0, 0.0, 0.0])).tolist() == [1.0, 0.0, 0.0]
    assert step(np.array([0.0, 1.0, 0.0])).tolist() == [0.0, 0.5, 0.5]
    assert step(np.array([0.25, 0.5, 0.25])).tolist() == [0.25, 0.25, 0.5]   # 0.5·0.5 moves from 1 to 2


@settings(max_examples=60)
@example(5, 3, 0)                           # more rows than slots (CI found it): growth past size is dropped
@given(st.integers(1, 12), st.integers(1, 300), st.integers(0, 2 ** 32 - 1))
def test_stepper_is_the_loop_bit_for_bit(rows, size, seed):
    rng = np.random.default_rng(seed)
    probs = rng.random((rows, size))
    probs /= probs.sum(axis=0)
    step = _union_stepper(probs)
    dist = rng.random(size)
    for _ in range(3):                      # the buffer is reused: repeated steps stay exact
        dist = dist / dist.sum()
        got, want = step(dist), _loop(probs, dist)
        assert np.array_equal(got, want)
        dist = got
