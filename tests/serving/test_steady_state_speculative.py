"""Speculative decoding in the closed-loop steady state (``serving.steady_state`` step 6) and in
``predict``'s serving rows: the fixed point by hand, E = 1 unchanged, and a cross-check against the
simulator (which runs the same iteration per token, ``tests/serving/test_serving_speculative.py``)."""

from __future__ import annotations

import numpy as np
import pytest

from llmecon.fidelity.predict import parse_cases, predict_cases
from llmecon.resolve import deployment
from llmecon.serving import Continuous, SimConfig, simulate
from llmecon.serving.steady_state import steady_state
from llmecon.serving.workload import parse_lengths, synthetic
from llmecon.step.inference import prefill_of
from llmecon.step.speculative import speculative_of


def _dep(k, acceptance="0.85", mode="ideal"):
    return deployment("deepseek-v3", "gb200-nvl72", tp=4, ep=4, mode=mode, spec_tokens=k,
                      acceptance=None if k is None else acceptance)


def _f(x):
    return float(np.asarray(x))


@pytest.mark.parametrize("k, acc", [(1, "0.85"), (3, "0.9,0.8,0.7")])
def test_fixed_point_by_hand(k, acc):
    """Ideal mode (s = a = 1, no overheads): iteration = verify + draft at the effective batch and
    mean context, TPOT·E = iteration + min(x, 1)·P_x with x = λ·E·TPOT arrivals per iteration."""
    dep = _dep(k, acc)
    C, P, O = 32, 2048, 256
    ss = steady_state(dep, concurrency=C, prompt_tokens=P, output_tokens=O)
    E = dep.speculation.tokens_per_step
    it = _f(speculative_of(dep, batch=float(C), context=P + (O - 1) / 2).step_s)
    assert _f(ss.iteration_s) == pytest.approx(it, rel=1e-12) and _f(ss.decode_step_s) == pytest.approx(it, rel=1e-12)
    lam, tpot = _f(ss.requests_per_s), _f(ss.tpot_s)
    x = lam * E * tpot
    p_x = _f(prefill_of(dep, batch=max(x, 1.0), prompt_tokens=float(P)).step_s)
    assert tpot * E == pytest.approx(it + min(x, 1.0) * p_x, rel=1e-9)
    assert lam == pytest.approx(C / (_f(ss.ttft_s) + (O - 1) * tpot), rel=1e-9)  # no queue, no overhead


def test_no_speculation_is_unchanged():
    a = steady_state(_dep(None), concurrency=[1, 16, 64], prompt_tokens=1024, output_tokens=128)
    b = steady_state(_dep(0, None), concurrency=[1, 16, 64], prompt_tokens=1024, output_tokens=128)
    for name in ("tpot_s", "ttft_s", "requests_per_s", "iteration_s"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name


@pytest.mark.parametrize("mode", ["ideal", "calibrated"])
def test_predict_serving_rows(mode):
    text = ("id,model,system,phase,batch,prompt_tokens,output_tokens,tp,ep,adp,spec_tokens,acceptance\n"
            "a,deepseek-v3,gb200-nvl72,serving,16,1024,256,4,4,4,,\n"
            "b,deepseek-v3,gb200-nvl72,serving,16,1024,256,4,4,4,1,\n")
    a, b = predict_cases(parse_cases(text), mode=mode)
    assert a["tokens_per_step"] == "" and b["tokens_per_step"] == pytest.approx(1.85)
    assert b["tpot_s"] < a["tpot_s"]
    ss = steady_state(_dep(1, mode=mode), concurrency=16, prompt_tokens=1024, output_tokens=256)
    assert b["tpot_s"] == pytest.approx(_f(ss.tpot_s), rel=1e-12)
    assert b["step_s"] == pytest.approx(_f(ss.decode_step_s), rel=1e-12)


def test_matches_simulator():
    """Open-loop constant arrivals at the analytic rate λ: the simulator's mean TPOT (requests
    arriving between the 20th and 90th percentile) is within 8% of the steady state's, as for plain
    decoding (``test_steady_state.test_matches_simulator``, whose list of differences applies)."""
    dep = _dep(1)
    C, P, O, n = 16, 1024, 128, 1500
    ss = steady_state(dep, concurrency=C, prompt_tokens=P, output_tokens=O)
    wl = synthetic(rate_per_s=_f(ss.requests_per_s), prompt=parse_lengths(str(P), field="prompt"),
                   output=parse_lengths(str(O), field="output"), n=n, arrival="constant", seed=0)
    res = simulate(dep, wl, SimConfig(policy=Continuous(batch_cap=4096), drain=True))
    a = res.arrival_s
    keep = (a >= a[n // 5]) & (a < a[9 * n // 10])
    tpot = ((res.done_s - res.first_token_s)[keep] / (res.generated_tokens[keep] - 1)).mean()
    assert tpot == pytest.approx(_f(ss.tpot_s), rel=0.08)
