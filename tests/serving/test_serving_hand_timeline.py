"""Tiny runs whose every event is worked out by hand (model-free service times, so the arithmetic
is exact): they pin the engine's event order, the closed-form decode runs and the vectorised
expansion of their inter-token gaps, for continuous batching and the train schedule.

Service times (``FixedService``): a prefill iteration takes max(sum of its requests' service
times, decode_step_s) (the prefill's compute against the decode step's fixed "weight read"), a
decode step of any size takes decode_step_s, and KV is unlimited.
"""

from __future__ import annotations

import numpy as np
import pytest

from llmecon.serving import Continuous, FixedService, SimConfig, Train, Workload, simulate


def _wl(arrivals, outputs):
    n = len(arrivals)
    return Workload(arrival_s=np.asarray(arrivals, dtype=float), prompt_tokens=np.full(n, 10, dtype=np.int64),
                    output_tokens=np.asarray(outputs, dtype=np.int64), class_id=np.zeros(n, dtype=np.int64),
                    class_names=("default",))


def test_continuous_three_requests_by_hand():
    """Batch cap 2; service 0.5 / 0.3 / 0.2 s, decode step 0.1 s; arrivals 0, 0.1, 0.25; outputs 3, 2, 1.

    t=0    prefill r0 (0.5)                          -> r0 first token 0.5
    t=0.5  prefill r1 (0.3; r2 waits: batch full after) -> r1 first token 0.8
    t=0.8  decode r0, r1 (0.1)                       -> r1 done 0.9 (gaps: r0 0.4, r1 0.1)
    t=0.9  prefill r2 (0.2)                          -> r2 first = last token 1.1, done
    t=1.1  decode r0 (0.1)                           -> r0 done 1.2 (gap 0.3)
    t=1.2  nothing left: 6 decisions in all.
    """
    res = simulate(None, _wl([0.0, 0.1, 0.25], [3, 2, 1]), SimConfig(policy=Continuous(batch_cap=2), drain=True),
                   service=FixedService(service_s=[0.5, 0.3, 0.2], decode_step_s=0.1))
    assert res.first_token_s == pytest.approx([0.5, 0.8, 1.1], rel=1e-12)
    assert res.done_s == pytest.approx([1.2, 0.9, 1.1], rel=1e-12)
    assert res.ttft_s == pytest.approx([0.5, 0.7, 0.85], rel=1e-12)
    assert res.tpot_s == pytest.approx([0.35, 0.1], rel=1e-12)  # r2 has one token: no TPOT
    assert res.admit_s == pytest.approx([0.0, 0.5, 0.9], rel=1e-12)
    assert sorted(res.itl_values.tolist()) == pytest.approx([0.1, 0.3, 0.4], rel=1e-12)
    assert res.itl_weights.tolist() == [1.0, 1.0, 1.0]
    assert res.events == 6
    assert res.run_s == pytest.approx(1.2, rel=1e-12)
    assert res.pools[0].busy_s == pytest.approx(1.2, rel=1e-12)  # 0.5 + 0.3 + 0.1 + 0.2 + 0.1
    assert res.pools[0].iterations == 5


def test_one_closed_form_run_by_hand():
    """One request, output 5: prefill 0.5 s, then its 4 decode steps of 0.1 s as one closed-form
    run (one decision): done at 0.9, four gaps of 0.1 s (the first recorded directly, steps 1..3
    expanded from the run)."""
    res = simulate(None, _wl([0.0], [5]), SimConfig(policy=Continuous(), drain=True),
                   service=FixedService(service_s=[0.5], decode_step_s=0.1))
    assert res.done_s == pytest.approx([0.9], rel=1e-12)
    assert res.tpot_s == pytest.approx([0.1], rel=1e-12)
    assert res.itl_values == pytest.approx([0.1] * 4, rel=1e-12)
    assert res.itl_weights.tolist() == [1.0] * 4
    assert res.events == 3  # t = 0 (prefill), 0.5 (the run of 4 steps), 0.9 (idle)
    assert res.pools[0].iterations == 5


def test_train_schedule_by_hand():
    """Train every tau = 0.25 s on the clock grid; one request arriving at 0.1 with service 0.05 s,
    output 4, decode step 0.1 s. It boards the 0.25 departure (iteration max(0.05, 0.1) = 0.1:
    first token 0.35), then rides three trains departing 0.5, 0.75, 1.0 (one closed-form run of
    k = 3): tokens at 0.6, 0.85, 1.1. Every gap is tau."""
    res = simulate(None, _wl([0.1], [4]), SimConfig(policy=Train(batch_cap=2, tau_s=0.25), drain=True),
                   service=FixedService(service_s=[0.05], decode_step_s=0.1))
    assert res.first_token_s == pytest.approx([0.35], rel=1e-12)
    assert res.done_s == pytest.approx([1.1], rel=1e-12)
    assert res.tpot_s == pytest.approx([0.25], rel=1e-12)
    assert res.itl_values == pytest.approx([0.25] * 3, rel=1e-12)
    assert res.pools[0].iterations == 4
    assert res.pools[0].busy_s == pytest.approx(0.4, rel=1e-12)  # 0.1 + 3 x 0.1
