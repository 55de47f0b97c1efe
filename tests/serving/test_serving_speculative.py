"""Speculative decoding in the serving simulator (docs/serving.md, "Speculative decoding").

Each decode step of the simulator is one output token per running sequence at the expected rate
of E tokens per verify iteration: it costs (verify step over k+1 tokens + k MTP draft passes) / E
(``step.speculative``), so a request alone with O output tokens (the first from prefill) decodes
its O - 1 tokens in (O - 1)/E verify iterations and its TPOT is the iteration over E.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmecon.errors import LlmeconError, SpecError
from llmecon.resolve import deployment
from llmecon.serving import Adaptive, Continuous, Disaggregated, SimConfig, Train, Workload, simulate
from llmecon.spec.speculation import expected_tokens_per_step
from llmecon.step.inference import prefill_of
from llmecon.step.speculative import speculative_of


def _dep(model="deepseek-v3", k=1, acceptance="0.85", mode="ideal", tp=4, ep=4):
    # adp 1 (attention TP over the 4 chips): with attention DP a request alone sits on one group, which the
    # simulator's balanced per-sequence sums understate (a known gap: tests/serving/test_serving_steptime.py)
    return deployment(model, "gb200-nvl72", tp=tp, ep=ep, adp=1, pp=None, mode=mode, spec_tokens=k,
                      acceptance=None if k is None else acceptance)


def _wl(arrivals, prompts, outputs):
    n = len(arrivals)
    return Workload(arrival_s=np.asarray(arrivals, dtype=float), prompt_tokens=np.asarray(prompts, dtype=np.int64),
                    output_tokens=np.asarray(outputs, dtype=np.int64), class_id=np.zeros(n, dtype=np.int64))


def _alone(dep, prompt, output):
    """Hand-computed timeline of one request alone: prefill (first token), then for each of the
    O - 1 decode tokens at context L = P .. P + O - 2 the speculative iteration over E."""
    pf = float(prefill_of(dep, batch=1.0, prompt_tokens=float(prompt), cached_tokens=0.0).step_s)
    L = np.arange(prompt, prompt + output - 1, dtype=float)
    it = np.asarray(speculative_of(dep, batch=1.0, context=L).step_s, dtype=float)
    E = 1.0 if dep.speculation is None else dep.speculation.tokens_per_step
    return pf, it / E


@pytest.mark.parametrize("model, k, acc, prompt, output", [
    ("deepseek-v3", 1, "0.85", 1000, 40),
    ("deepseek-v3", 3, "0.9,0.8,0.7", 500, 17),
    ("deepseek-v3.2-exp", 3, "0.8", 2040, 20),  # crosses the DSA top-k kink (2048) and the verify's (2045..2047)
])
def test_one_request_alone_by_hand(model, k, acc, prompt, output):
    dep = _dep(model, k, acc)
    pf, gaps = _alone(dep, prompt, output)
    res = simulate(dep, _wl([0.0], [prompt], [output]), SimConfig(drain=True))
    assert res.first_token_s == pytest.approx([pf], rel=1e-9)
    assert res.done_s == pytest.approx([pf + gaps.sum()], rel=1e-9)
    assert res.tpot_s == pytest.approx([gaps.mean()], rel=1e-9)
    assert sorted(res.itl_values.tolist()) == pytest.approx(sorted(gaps.tolist()), rel=1e-9)
    # closed-form runs equal one step per event
    ref = simulate(dep, _wl([0.0], [prompt], [output]), SimConfig(drain=True, closed_form_runs=False))
    assert ref.done_s == pytest.approx(res.done_s, rel=1e-12)


def test_tpot_is_the_iteration_over_e():
    """k = 1 at acceptance 0.85: E = 1.85 (Leviathan et al. eq. 1); the request's TPOT times E is the
    verify + draft iteration at its mean context, to the context's first order."""
    dep = _dep(k=1)
    assert expected_tokens_per_step((0.85,)) == pytest.approx(1.85, rel=1e-15)
    res = simulate(dep, _wl([0.0], [2000], [2]), SimConfig(drain=True))
    it = float(speculative_of(dep, batch=1.0, context=2000.0).step_s)
    assert res.tpot_s[0] * 1.85 == pytest.approx(it, rel=1e-9)


def test_k0_is_plain_decoding_bit_for_bit():
    wl = _wl([0.0, 0.01, 0.02, 0.5], [300, 900, 50, 2000], [64, 3, 200, 20])
    plain = simulate(_dep(k=None), wl, SimConfig(drain=True))
    zero = simulate(_dep(k=0, acceptance=None), wl, SimConfig(drain=True))
    for name in ("first_token_s", "done_s", "itl_values", "itl_weights", "timeline_s"):
        assert np.array_equal(getattr(plain, name), getattr(zero, name), equal_nan=True), name
    assert plain.pools == zero.pools


def test_speculation_lowers_tpot_and_closed_form_matches_step_by_step():
    wl = _wl(np.linspace(0.0, 0.2, 12), [300, 900, 50, 2000] * 3, [64, 3, 200, 20] * 3)
    plain = simulate(_dep(k=None), wl, SimConfig(drain=True))
    for mode in ("ideal", "calibrated"):
        dep = _dep(k=2, acceptance="0.8", mode=mode)
        fast = simulate(dep, wl, SimConfig(drain=True))
        slow = simulate(dep, wl, SimConfig(drain=True, closed_form_runs=False))
        assert fast.done_s == pytest.approx(slow.done_s, rel=1e-9)
        def gaps(r):
            return np.sort(np.repeat(r.itl_values, r.itl_weights.astype(np.int64)))

        assert gaps(fast) == pytest.approx(gaps(slow), rel=1e-9)
        if mode == "ideal":
            assert np.nanmedian(fast.tpot_s) < np.nanmedian(plain.tpot_s)
        assert fast.generated_tokens.tolist() == wl.output_tokens.tolist()


@pytest.mark.parametrize("policy", [Adaptive(batch_cap=4), Disaggregated()])
def test_other_decode_only_policies_run(policy):
    wl = _wl([0.0, 0.01, 0.02], [300, 900, 50], [30, 3, 40])
    res = simulate(_dep(k=1), wl, SimConfig(policy=policy, drain=True))
    assert res.generated_tokens.tolist() == [30, 3, 40]


@pytest.mark.parametrize("policy", [Train(batch_cap=4), Continuous(chunk_tokens=512)])
def test_mixed_iteration_policies_are_refused_by_name(policy):
    with pytest.raises(SpecError) as e:
        simulate(_dep(k=1), _wl([0.0], [100], [5]), SimConfig(policy=policy))
    assert e.value.field == "spec_tokens"


@pytest.mark.parametrize("mode", ["ideal", "calibrated"])
@pytest.mark.parametrize("target, draft, tp", [("llama-3.1-70b", "llama-3.1-8b", 4),
                                               ("gpt-oss-120b", "gpt-oss-20b", None)])  # sliding windows
def test_draft_model_one_request_alone_by_hand(mode, target, draft, tp):
    """A draft model: each iteration = verify + k of the draft's decode steps at the same batch and
    context on the target's tp chips (``step.speculative.draft_s``), over E."""
    dep = deployment(target, "gb200-nvl72", tp=tp, auto=True, mode=mode, spec_tokens=3, acceptance="0.7",
                     draft=draft)
    pf, gaps = _alone(dep, 100, 300)  # contexts 100..398 cross gpt-oss's 128-token window
    res = simulate(dep, _wl([0.0], [100], [300]), SimConfig(drain=True))
    assert res.done_s - res.first_token_s == pytest.approx([gaps.sum()], rel=1e-9)
    assert res.tpot_s == pytest.approx([gaps.mean()], rel=1e-9)
    wl = _wl(np.linspace(0.0, 0.02, 6), [100, 900, 50, 2000, 120, 130], [64, 3, 200, 20, 90, 150])
    fast = simulate(dep, wl, SimConfig(drain=True))
    slow = simulate(dep, wl, SimConfig(drain=True, closed_form_runs=False))
    assert fast.done_s == pytest.approx(slow.done_s, rel=1e-9)


def test_unknown_draft_model_names_draft():
    dep = deployment("llama-3.1-70b", "gb200-nvl72", tp=4, mode="ideal", spec_tokens=2, acceptance="0.8",
                     draft="no-such-model")
    with pytest.raises(LlmeconError) as e:
        simulate(dep, _wl([0.0], [100], [5]), SimConfig())
    assert e.value.field == "draft"


def test_compiled_loop_runs_speculative_decoding():
    """The compiled loop runs speculative decoding, bit for bit as the Python loop (randomized cases in
    tests/serving/test_serving_compiled.py)."""
    pytest.importorskip("numba")
    dep = _dep(k=1)
    wl = _wl([0.0, 0.1], [100, 200], [5, 9])
    jit = simulate(dep, wl, SimConfig(drain=True), compiled=True)
    py = simulate(dep, wl, SimConfig(drain=True), compiled=False)
    assert jit.generated_tokens.tolist() == [5, 9]
    assert jit.done_s.tolist() == py.done_s.tolist() and jit.itl_values.tolist() == py.itl_values.tolist()


@settings(max_examples=15, deadline=None, derandomize=True)
@given(k=st.integers(1, 4), acc=st.floats(0.05, 0.95), n=st.integers(1, 8), seed=st.integers(0, 2**16),
       model=st.sampled_from(["deepseek-v3", "deepseek-v3.2-exp"]), cap=st.integers(1, 6))
def test_closed_form_runs_equal_single_steps(k, acc, n, seed, model, cap):
    """Random small workloads (contexts around the DSA top-k kink at 2048): closed-form runs of
    speculative steps give the step-by-step timeline, every request gets all its tokens."""
    rng = np.random.default_rng(seed)
    wl = _wl(np.sort(rng.uniform(0, 0.05, n)), rng.integers(1900, 2100, n), rng.integers(1, 200, n))
    dep = _dep(model, k, str(acc))
    cfg = dict(policy=Continuous(batch_cap=cap), drain=True)
    fast = simulate(dep, wl, SimConfig(**cfg))
    slow = simulate(dep, wl, SimConfig(**cfg, closed_form_runs=False))
    assert fast.done_s == pytest.approx(slow.done_s, rel=1e-9)
    assert fast.first_token_s == pytest.approx(slow.first_token_s, rel=1e-9)
    assert fast.generated_tokens.tolist() == wl.output_tokens.tolist()


def test_preemption_under_kv_pressure():
    """KV for a few sequences only: preemption (recompute) runs with speculative steps, and closed-form
    runs still equal single steps."""
    dep = _dep(k=2, acceptance="0.8")
    free = 6 * float(dep.kv_per_sequence_per_chip_bytes(3000.0))  # about six 3,000-token sequences
    frac = (dep.weights_per_chip_bytes + free) / dep.system.accelerator.hbm_bytes
    wl = _wl(np.linspace(0.0, 0.01, 12), [2000] * 12, [900] * 12)
    cfg = dict(policy=Continuous(preemption="recompute"), drain=True, hbm_fraction=frac)
    fast = simulate(dep, wl, SimConfig(**cfg))
    slow = simulate(dep, wl, SimConfig(**cfg, closed_form_runs=False))
    assert fast.preemptions.sum() > 0
    assert fast.done_s == pytest.approx(slow.done_s, rel=1e-9)
    assert fast.generated_tokens.tolist() == [900] * 12
