"""The closed-loop serving steady state (``serving.steady_state``, SPEC E20): a hand-solved case,
the KV-limited regime, properties (hypothesis), a cross-check against the discrete-event
simulator at the same request rate, and the error paths.

Cross-check numbers (ideal mode, prefill-first continuous batching, open-loop arrivals at the
analytic rate λ, 3000 requests, requests arriving between the 20th and 90th percentile; Poisson:
mean of seeds 0-2; ratios simulator / analytic):

    scenario (hgx-h100)            analytic TPOT  TPOT ratio       batch ratio
                                   (batch = C)    Poisson (determ) Poisson (determ)
    llama-3.1-8b  tp1 P512  O128 C16   5.811 ms   1.008 (0.991)    1.007 (0.987)
    llama-3.1-8b  tp1 P512  O128 C64   9.820 ms   1.013 (0.990)    1.013 (0.985)
    llama-3.1-70b tp4 P1024 O128 C16  15.258 ms   1.012 (0.988)    1.015 (0.984)

(measured with the first version of the model; TTFT is checked as a bound, since open-loop
arrivals also wait for the running iteration and closed-loop replacements do not.)

Over seeds 0-19 single Poisson runs scatter with standard deviations of 0.6-2% (TPOT) and
2.4-3.8% (batch) around means of 1.006-1.010 and 1.001-1.008. ``CROSS_TOL`` = 8%: a few standard
errors of the 3-seed mean plus the 1-2% systematic differences listed in ``test_matches_simulator``.
The agreement holds for compute-bound prefills at moderate load; one known gap (short prompts
and outputs) is pinned by a strict xfail; calibrated TPOT below ideal when prefill dominates is
documented behaviour of a closed loop (tested).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from llmecon.spec.deployment import Deployment
from llmecon.catalog.hardware import get_accelerator, get_system
from llmecon.catalog.models import get_model
from llmecon.catalog.efficiency import default_profile
from llmecon.spec.efficiency import IDEAL
from llmecon.errors import SpecError
from llmecon.spec.plan import Plan
from llmecon.serving import Continuous, SimConfig, fixed, simulate, synthetic
from llmecon.serving.steady_state import kv_capacity, kv_tokens_held, steady_state
from llmecon.step.inference import decode_of, prefill_of

FAST = settings(max_examples=30, deadline=None)
H100_PROFILE = default_profile(get_accelerator("h100-sxm"))


def _dep(model="llama-3.1-8b", tp=1, mode="ideal"):
    return Deployment(model=get_model(model), system=get_system("hgx-h100"), plan=Plan(tp=tp),
                      profile=H100_PROFILE if mode == "calibrated" else IDEAL)


LLAMA8 = _dep()
LLAMA70 = _dep("llama-3.1-70b", tp=4)
IDEAL_DEPS = {"llama-3.1-8b tp1": LLAMA8, "llama-3.1-70b tp4": LLAMA70}
CALIBRATED_DEPS = {"llama-3.1-8b tp1": _dep(mode="calibrated"),
                   "llama-3.1-70b tp4": _dep("llama-3.1-70b", tp=4, mode="calibrated")}


def _f(x) -> float:
    return float(np.asarray(x))


# ---- a case solved by hand ---------------------------------------------------------------------


def test_hand_solved_fixed_point():
    """llama-3.1-8b on hgx-h100, tp1, ideal (iteration_overhead 0, s = a = 1), C = 16, P = 512,
    O = 128. With t_d = decode step at batch B = C and context P + (O-1)/2, t_p = one prompt's
    prefill step, and x = λ·TPOT < 1 arrivals per iteration (so the batched prefill P_x = t_p):

        TPOT = t_d + x·t_p,   TTFT = t_d + t_p,   x = B·TPOT / ((O-1)·TPOT + TTFT)

    so T·((O-1)·T + t_d + t_p) = t_d·((O-1)·T + t_d + t_p) + B·t_p·T:

        (O-1)·T² - β·T - t_d·(t_d + t_p) = 0,   β = (O-2)·t_d + (B-1)·t_p

    (the positive root). Then λ = B / (TTFT + (O-1)·T), and Little's law C_eff = λ·(TTFT +
    (O-1)·TPOT) returns B. Nothing queues (B = C is far below KV capacity)."""
    C, P, O = 16, 512, 128
    ss = steady_state(LLAMA8, concurrency=C, prompt_tokens=P, output_tokens=O)
    B = C
    t_d = _f(decode_of(LLAMA8, batch=B, context=P + (O - 1) / 2).step_s)
    t_p = _f(prefill_of(LLAMA8, batch=1, prompt_tokens=P).step_s)
    beta = (O - 2) * t_d + (B - 1) * t_p
    tpot = (beta + math.sqrt(beta ** 2 + 4 * (O - 1) * t_d * (t_d + t_p))) / (2 * (O - 1))
    ttft = t_d + t_p
    rate = B / (ttft + (O - 1) * tpot)
    assert rate * tpot < 1  # x < 1: the case the closed form covers

    assert _f(ss.effective_batch) == B and not bool(ss.kv_limited)
    assert _f(ss.decode_step_s) == pytest.approx(t_d, rel=1e-12)
    assert _f(ss.iteration_s) == pytest.approx(t_d, rel=1e-12)        # no iteration overhead
    assert _f(ss.prefill_s) == pytest.approx(t_p, rel=1e-12)
    assert _f(ss.tpot_s) == pytest.approx(tpot, rel=1e-9)
    assert _f(ss.ttft_s) == pytest.approx(ttft, rel=1e-9)
    assert _f(ss.queue_s) == 0.0
    assert _f(ss.requests_per_s) == pytest.approx(rate, rel=1e-9)
    assert _f(ss.output_tokens_per_s) == pytest.approx(rate * O, rel=1e-9)
    # Little's law over a request's life in the engine: first token, then O-1 inter-token gaps
    run = _f(ss.ttft_s) - _f(ss.queue_s)
    assert _f(ss.requests_per_s) * (run + (O - 1) * _f(ss.tpot_s)) == pytest.approx(C, rel=1e-9)
    # the numbers themselves (H100 SXM datasheet roofline; a change here is a model change)
    assert (t_d, t_p) == pytest.approx((4.841e-3, 7.840e-3), rel=1e-3)


def test_cohort_share_prices_the_prefills_ahead_in_a_cohort():
    """``prefill_cohort_share`` q = 1 (step 5): every newcomer arrives with the other B running requests and
    waits for the cohort's prompts ahead of it, prefilled one after another: on average (B+1)/(2B) of one
    prefill of B prompts, P_B. By hand at B = C = 8, P = 2048 (llama-3.1-8b, ideal terms otherwise, no
    queueing): TTFT = T_it + (9/16)·P_8, whatever the arrivals per iteration x; q = 0 is the default
    (the prompts of the iteration a request joins)."""
    import dataclasses

    C, P, O = 8, 2048, 256
    cohort = Deployment(model=LLAMA8.model, system=LLAMA8.system, plan=LLAMA8.plan,
                        profile=dataclasses.replace(IDEAL, name="cohort", prefill_cohort_share=1.0))
    ss = steady_state(cohort, concurrency=C, prompt_tokens=P, output_tokens=O)
    p_8 = _f(prefill_of(cohort, batch=8, prompt_tokens=P).latency_s)
    assert _f(ss.queue_s) == 0.0 and _f(ss.effective_batch) == C
    assert _f(ss.ttft_s) == pytest.approx(_f(ss.iteration_s) + 9 / 16 * p_8, rel=1e-12)
    alone = steady_state(dataclasses.replace(cohort, profile=dataclasses.replace(cohort.profile, name="alone",
                                                                                 prefill_cohort_share=0.0)),
                         concurrency=C, prompt_tokens=P, output_tokens=O)  # q = 0
    assert _f(alone.ttft_s) < _f(ss.ttft_s)
    with pytest.raises(SpecError, match="prefill_cohort_share"):
        dataclasses.replace(IDEAL, name="bad", prefill_cohort_share=1.5)


def test_broadcasts_like_scalar_calls():
    C = np.array([[1.0], [8.0], [64.0]])
    P = np.array([128.0, 2048.0])
    ss = steady_state(LLAMA8, concurrency=C, prompt_tokens=P, output_tokens=64)
    assert np.shape(ss.tpot_s) == (3, 2)
    one = steady_state(LLAMA8, concurrency=8, prompt_tokens=2048, output_tokens=64)
    assert np.asarray(ss.tpot_s)[1, 1] == pytest.approx(_f(one.tpot_s), rel=1e-12)
    assert np.asarray(ss.ttft_s)[1, 1] == pytest.approx(_f(one.ttft_s), rel=1e-12)


# ---- KV capacity limits the batch ----------------------------------------------------------------


def test_kv_limited_queues_the_rest():
    """P = 2048, O = 256: only B = floor(free HBM / KV of one sequence at its mean 2175.5 tokens
    held, P + (O-1)/2: ideal mode pages on demand) run; the other C - B wait, leaving at rate λ, so
    a newcomer queues (C - B)/λ before its first token. TPOT is that of C = B (the queue does not
    touch the running batch)."""
    P, O = 2048, 256
    cap = _f(kv_capacity(LLAMA8, P + (O - 1) / 2))
    free = LLAMA8.system.accelerator.hbm_bytes - LLAMA8.weights_per_chip_bytes
    assert cap == math.floor(free / _f(LLAMA8.kv_per_sequence_per_chip_bytes(2175.5))) > 1
    C = int(cap) + 150
    ss = steady_state(LLAMA8, concurrency=C, prompt_tokens=P, output_tokens=O)
    at_cap = steady_state(LLAMA8, concurrency=cap, prompt_tokens=P, output_tokens=O)
    assert bool(ss.kv_limited) and not bool(at_cap.kv_limited)
    assert _f(ss.effective_batch) == cap
    rate = _f(ss.requests_per_s)
    assert _f(ss.queue_s) > 0
    assert _f(ss.queue_s) == pytest.approx((C - cap) / rate, rel=1e-12)
    assert _f(ss.tpot_s) == pytest.approx(_f(at_cap.tpot_s), rel=1e-12)
    assert rate == pytest.approx(_f(at_cap.requests_per_s), rel=1e-12)
    assert _f(ss.ttft_s) == pytest.approx(_f(at_cap.ttft_s) + (C - cap) / rate, rel=1e-12)
    # Little's law over the whole client loop: C = λ·(queue + TTFT_run + (O-1)·TPOT)
    assert rate * (_f(ss.ttft_s) + (O - 1) * _f(ss.tpot_s)) == pytest.approx(C, rel=1e-9)


def test_kv_held_per_sequence_follows_the_engines_admission():
    """P = 1000, O = 201: an on-demand paging engine (vLLM, SGLang) and ideal mode hold P + (O-1)/2
    = 1100 tokens per running sequence on average; TensorRT-LLM (reserves at admission) and a
    profile of no named engine P + O = 1201. The capacity follows: a vLLM profile fits more."""
    from llmecon.catalog.efficiency import named_profile

    vllm, sglang, trt = (named_profile(f"h100-sxm/{e}") for e in ("vllm", "sglang", "trtllm"))
    assert _f(kv_tokens_held(IDEAL, 1000, 201)) == 1100.0
    assert _f(kv_tokens_held(vllm, 1000, 201)) == _f(kv_tokens_held(sglang, 1000, 201)) == 1100.0
    assert _f(kv_tokens_held(trt, 1000, 201)) == _f(kv_tokens_held(H100_PROFILE, 1000, 201)) == 1201.0
    big = dict(prompt_tokens=8192, output_tokens=8192)
    d = {e: Deployment(model=get_model("llama-3.1-70b"), system=get_system("hgx-h100"), plan=Plan(tp=4), profile=p)
         for e, p in (("vllm", vllm), ("trtllm", trt))}
    cap = {e: _f(steady_state(dep, concurrency=4096, **big).effective_batch) for e, dep in d.items()}
    assert cap["vllm"] == _f(kv_capacity(d["vllm"], 8192 + 8191 / 2))
    assert cap["trtllm"] == _f(kv_capacity(d["trtllm"], 16384)) < cap["vllm"]


# ---- properties ------------------------------------------------------------------------------------

shapes = st.tuples(st.integers(1, 2048), st.integers(1, 32768), st.integers(2, 4096))


@FAST
@given(name=st.sampled_from(sorted(IDEAL_DEPS)), cpo=shapes, calibrated=st.booleans())
def test_tpot_and_ttft_bounds(name, cpo, calibrated):
    """TPOT >= the decode step at the effective batch (stalls only add); TTFT >= one prefill;
    Little's law holds at every point."""
    C, P, O = cpo
    dep = (CALIBRATED_DEPS if calibrated else IDEAL_DEPS)[name]
    ss = steady_state(dep, concurrency=C, prompt_tokens=P, output_tokens=O)
    B = _f(ss.effective_batch)
    assert B == min(C, _f(kv_capacity(dep, kv_tokens_held(dep.profile, P, O)))) >= 1
    step = _f(decode_of(dep, batch=B, context=P + (O - 1) / 2).step_s)
    assert _f(ss.tpot_s) >= step * (1 - 1e-12)
    assert _f(ss.ttft_s) >= _f(ss.prefill_s) * (1 - 1e-12)
    assert _f(ss.prefill_s) == pytest.approx(_f(prefill_of(dep, batch=1, prompt_tokens=P).step_s), rel=1e-12)
    run = _f(ss.ttft_s) - _f(ss.queue_s)
    assert _f(ss.requests_per_s) * (run + (O - 1) * _f(ss.tpot_s)) == pytest.approx(B, rel=1e-9)


@FAST
@given(name=st.sampled_from(sorted(IDEAL_DEPS)), c=st.tuples(st.floats(0, 1), st.floats(0, 1)),
       P=st.integers(1, 16384), O=st.integers(2, 2048), calibrated=st.booleans())
def test_tpot_nondecreasing_in_concurrency(name, c, P, O, calibrated):
    """Below KV capacity, more concurrent clients never make TPOT smaller (bigger decode batch,
    more prefills per iteration)."""
    dep = (CALIBRATED_DEPS if calibrated else IDEAL_DEPS)[name]
    cap = _f(kv_capacity(dep, kv_tokens_held(dep.profile, P, O)))
    lo, hi = sorted(1 + round(x * (cap - 1)) for x in c)
    ss = steady_state(dep, concurrency=np.array([lo, hi]), prompt_tokens=P, output_tokens=O)
    assert not np.any(ss.kv_limited)
    t = np.asarray(ss.tpot_s)
    assert t[1] >= t[0] * (1 - 1e-12)


@FAST
@given(name=st.sampled_from(sorted(IDEAL_DEPS)), C=st.integers(1, 2048), P=st.integers(1, 4096),
       O=st.integers(64, 4096))
def test_calibrated_tpot_not_below_ideal(name, C, P, O):
    """Calibrated step times are >= ideal ones and s >= 1, so calibrated TPOT >= ideal TPOT ...
    on this domain only (P <= 4096, O >= 64). Outside it the fitted ttft_prefill_factor (5.8 on
    H100) lowers the arrival rate through Little's law, hence the prefills per iteration, by more
    than the slower steps add: see ``test_calibrated_below_ideal_when_prefill_dominates``."""
    ideal = steady_state(IDEAL_DEPS[name], concurrency=C, prompt_tokens=P, output_tokens=O)
    cal = steady_state(CALIBRATED_DEPS[name], concurrency=C, prompt_tokens=P, output_tokens=O)
    # ideal mode pages KV on demand (kv_tokens_held), so it runs at least the calibrated batch; the
    # step-time comparison holds at equal batches, i.e. where the calibrated run is not KV-limited
    assert _f(ideal.effective_batch) >= _f(cal.effective_batch)
    assume(not bool(cal.kv_limited))
    assert _f(cal.decode_step_s) >= _f(ideal.decode_step_s) * (1 - 1e-12)
    assert _f(cal.tpot_s) >= _f(ideal.tpot_s) * (1 - 1e-12)


def test_calibrated_below_ideal_when_prefill_dominates():
    """llama-3.1-8b tp1, C = 4, P = 8192, O = 16: ideal TPOT 33.9 ms (decode 5.8 ms, prefill
    142 ms), calibrated 26.4 ms although its decode (9.6 ms) and prefill (217 ms) are both slower."""
    kw = dict(concurrency=4, prompt_tokens=8192, output_tokens=16)
    ideal = steady_state(LLAMA8, **kw)
    cal = steady_state(CALIBRATED_DEPS["llama-3.1-8b tp1"], **kw)
    assert _f(cal.decode_step_s) > _f(ideal.decode_step_s) and _f(cal.prefill_s) > _f(ideal.prefill_s)
    # Documented (steady_state docstring): closed-loop TPOT is not monotone in component speed. With
    # ttft_prefill_factor a > 1 the longer TTFT lowers λ and so the prefill stalls per iteration;
    # when stalls dominate TPOT (long prompts, few outputs) calibrated TPOT ends up below ideal.
    assert _f(cal.tpot_s) < _f(ideal.tpot_s)
    assert _f(cal.ttft_s) > _f(ideal.ttft_s) and _f(cal.requests_per_s) < _f(ideal.requests_per_s)


# ---- against the simulator -----------------------------------------------------------------------

N_REQUESTS = 3000
SEEDS = (0, 1, 2)
CROSS_TOL = 0.08
# prefill-first continuous batching (vLLM v0's default): a prefill iteration pauses every decode,
# which is the stall the analytic model charges. batch_cap above KV capacity: a closed loop never
# holds more than C, an open loop may briefly, and vLLM's default cap of 256 would queue it.
PREFILL_FIRST = SimConfig(policy=Continuous(batch_cap=4096), drain=True)


def _open_loop(dep, *, rate, P, O, arrival="poisson", seed=0, config=PREFILL_FIRST):
    """(mean TPOT, mean number in system, mean TTFT) of the requests arriving between the 20th
    and 90th percentile of arrivals (warm-up and the draining tail excluded)."""
    wl = synthetic(rate_per_s=rate, prompt=fixed(P), output=fixed(O), n=N_REQUESTS, arrival=arrival, seed=seed)
    res = simulate(dep, wl, config)
    assert res.completed.all()
    a = res.arrival_s
    lo, hi = a[N_REQUESTS // 5], a[9 * N_REQUESTS // 10]
    keep = (a >= lo) & (a < hi)
    tpot = (res.done_s - res.first_token_s)[keep] / (res.generated_tokens[keep] - 1)
    lam = keep.sum() / (hi - lo)
    in_system = lam * (res.done_s - a)[keep].mean()      # Little: number of requests in the engine
    return tpot.mean(), in_system, (res.first_token_s - a)[keep].mean()


SCENARIOS = [("llama-3.1-8b tp1", 512, 128, 16), ("llama-3.1-8b tp1", 512, 128, 64),
             ("llama-3.1-70b tp4", 1024, 128, 16)]


@pytest.mark.parametrize("name, P, O, C", SCENARIOS)
@pytest.mark.parametrize("arrival", ["poisson", "constant"])
def test_matches_simulator(name, P, O, C, arrival):
    """Open-loop arrivals at the analytic rate λ reproduce the analytic TPOT and batch (= C).

    What differs between the two models, and why agreement is still close here:
    * closed loop vs open loop: the benchmark keeps exactly C requests in flight, the simulator's
      Poisson arrivals let the number in flight fluctuate around λ·W, and bursts of arrivals
      feed back (more requests -> more stalls and slower steps -> longer stays): Poisson runs sit
      ~2% above deterministic ones;
    * the analytic decode batch is B = C, but requests waiting for or in their prefill do not
      decode: the simulator's decode batch is B - λ·TTFT (61.3 instead of 64 at C = 64), its
      mean decode step 5.86 instead of 5.92 ms, so TPOT = t_d / (1 - λ·t_p) is ~1% lower;
    * scheduling: the simulator (prefill-first) prefills everything that arrived during a decode
      iteration in one iteration whose time is the roofline of all those prompts; the analytic
      model charges each arrival one batch-1 prefill. Equal when prefill is compute-bound (P >= 512
      here, x = λ·TPOT <= 0.5 arrivals per iteration); not when it is weight-read-bound (short prompts): see
      ``test_short_prompts_are_overcharged``;
    * TTFT (only bounded): the analytic run TTFT is a whole TPOT (waiting out the running
      iteration) + t_p; an arrival waits the residual of the running iteration: ~15% lower for
      the 8B (Poisson; 25-40% deterministic), about equal for the 70B, where prefill iterations
      (36 ms) are longer than TPOT and Poisson arrivals land in them more often (length bias).
    Scenarios are at moderate load: at high prefill load (e.g. P 2048, O 256, C 128 on the 8B,
    λ·t_p ~ 0.5 with the decode batch near KV capacity) an open loop at the closed loop's rate is
    close to saturation: two seeds gave TPOT ratios 0.93 and 1.35.
    """
    dep = IDEAL_DEPS[name]
    ss = steady_state(dep, concurrency=C, prompt_tokens=P, output_tokens=O)
    assert not bool(ss.kv_limited)
    seeds = SEEDS if arrival == "poisson" else (0,)
    runs = np.array([_open_loop(dep, rate=_f(ss.requests_per_s), P=P, O=O, arrival=arrival, seed=s)
                     for s in seeds])
    tpot, batch, ttft = runs.mean(axis=0)
    assert tpot == pytest.approx(_f(ss.tpot_s), rel=CROSS_TOL)
    assert batch == pytest.approx(_f(ss.effective_batch), rel=CROSS_TOL)
    assert _f(ss.prefill_s) <= ttft <= (_f(ss.ttft_s) + _f(ss.iteration_s)) * (1 + CROSS_TOL)  # open loop waits
    # for the running iteration too; closed-loop replacements arrive at iteration boundaries


def test_chunked_prefill_stalls_less_than_modelled():
    """Scope of the analytic model: with chunked prefill (Sarathi-Serve, vLLM v1) the simulator
    prices a prompt chunk and the running decodes as one iteration, max(compute, memory), so the
    prompt's compute hides under the decodes' weight reads instead of adding t_p. At C = 64 the
    simulator's TPOT is ~0.65-0.7 of the analytic one (prefill-first: ~1.0), contrary to the
    module docstring's "a chunk budget changes when, not how much, prefill work stalls decodes"."""
    P, O, C = 512, 128, 64
    ss = steady_state(LLAMA8, concurrency=C, prompt_tokens=P, output_tokens=O)
    chunked = SimConfig(policy=Continuous(batch_cap=1024, chunk_tokens=2048), drain=True)
    tpot, _, _ = _open_loop(LLAMA8, rate=_f(ss.requests_per_s), P=P, O=O, config=chunked)
    assert tpot < 0.8 * _f(ss.tpot_s)
    assert tpot >= _f(ss.decode_step_s) * 0.9


@pytest.mark.xfail(strict=True, reason="known gap: for short prompts and outputs (P16, O16, C256) the model "
                   "prefills the ~16 prompts arriving per iteration in one batched step; the simulator's "
                   "prefill-first policy at that open-loop rate builds an unbounded queue (mean batch ~2500), "
                   "so the two disagree about how many prompts one prefill iteration absorbs; unresolved")
def test_short_prompts_are_overcharged():
    """llama-3.1-8b tp1, P = 16, O = 16, C = 256: x ~ 16 prompts per iteration, charged 16 × 4.5 ms
    (batch-1 prefill = the weight read) = 71 ms per iteration; prefilled together they take 4.5 ms.
    (That was the first model; now prefills are batched and the analytic TPOT is 9.2 ms, but the
    open loop at the implied rate saturates the simulator.)"""
    P, O, C = 16, 16, 256
    ss = steady_state(LLAMA8, concurrency=C, prompt_tokens=P, output_tokens=O)
    tpot, _, _ = _open_loop(LLAMA8, rate=_f(ss.requests_per_s), P=P, O=O)
    assert tpot == pytest.approx(_f(ss.tpot_s), rel=0.25)


# ---- errors ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kw", [dict(concurrency=8, prompt_tokens=512, output_tokens=1),
                                dict(concurrency=0, prompt_tokens=512, output_tokens=128),
                                dict(concurrency=8, prompt_tokens=0, output_tokens=128),
                                dict(concurrency=np.array([8.0, np.nan]), prompt_tokens=512, output_tokens=128)])
def test_bad_inputs(kw):
    with pytest.raises(SpecError, match="output_tokens >= 2"):
        steady_state(LLAMA8, **kw)
