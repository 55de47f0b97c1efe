"""Step times of mixed batches (serving.steptime) against inference.decode_step / prefill_step.

The simulator must take its step times from inference (DESIGN §1). For a batch of identical
sequences the decomposition into per-iteration and per-sequence parts has to reproduce inference
exactly; chunked prefill must telescope to the one-shot prefill; the closed-form sums of a run of
decode steps must equal the step-by-step sum. Under attention DP the simulator sums the balanced share
(``balanced=True``: batch/adp sequences per group), which is inference's own step from adp sequences
per micro-batch up; below that inference places whole sequences (tests/econ/test_adp_placement.py) and
the simulator's sums are a known gap (``serving.steptime`` docstring)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmecon.spec.deployment import Deployment
from llmecon.econ.batching import smallest_plan
from llmecon.catalog.hardware import get_system
from llmecon.catalog.models import get_model
from llmecon.step.inference import decode_of, prefill_of
from llmecon.spec.plan import Plan
from llmecon.serving.batchstate import DecodeSet, max_affine_at, sum_max_affine
from llmecon.serving.steptime import StepModel

CASES = [  # dense GQA, sliding/global windows, MoE, MLA, MLA+DSA, pipeline stages
    ("llama-3.1-8b", "h100-sxm", None),
    ("gemma-3-27b", "hgx-h100", None),
    ("qwen3-30b-a3b", "hgx-h100", None),
    ("deepseek-v3", "gb200-nvl72", None),
    ("deepseek-v3.2-exp", "hgx-h200", None),
    ("deepseek-v4-flash", "gb200-nvl72", None),  # compressed layers: top-k of L/4 saturates at L = 2048
    ("llama-3.1-70b", "hgx-h100", Plan(tp=2, pp=2)),
]


def _dep(model, system, plan):
    m, s = get_model(model), get_system(system)
    return Deployment(model=m, system=s, plan=plan or smallest_plan(m, s))


@pytest.fixture(scope="module", params=CASES, ids=[c[0] for c in CASES])
def sm(request):
    return StepModel(_dep(*request.param), max_tokens=4096)


def test_identical_decode_batch_reproduces_decode_step(sm):
    """B sequences at context L: max(B·c(L), W(B) + B·k(L), comm(B)) == decode_step(B, L).step_s."""
    dep = sm.dep
    for B in (1, 7, 64, 300):
        for L in (0, 1, 100, 1023, 1024, 2047, 2048, 5000, 70000):
            truth = float(decode_of(dep, batch=B, context=L, balanced=True).step_s)
            ours = sm.step_s(compute_s=B * float(sm.dec_compute(L)), kv_s=B * float(sm.dec_kv(L)), tokens=B)
            assert ours == pytest.approx(truth, rel=1e-12), (B, L)


def test_identical_prefill_batch_reproduces_prefill_step(sm):
    sm.prepare_prefill(9000)
    dep = sm.dep
    for B in (1, 3, 16):
        for T, c in ((1, 0), (100, 0), (1000, 24), (4096, 1000), (7000, 0)):
            truth = float(prefill_of(dep, batch=B, prompt_tokens=T, cached_tokens=c, balanced=True).step_s)
            pc, pk = sm.prefill_part(0, c, c + T, c + T)
            assert sm.step_s(compute_s=B * pc, kv_s=B * pk, tokens=B * T) == pytest.approx(truth, rel=1e-9), (B, T, c)


def test_chunk_parts_equal_prefill_step_of_the_chunk(sm):
    """Chunk [c, c+t) is exactly inference's prefill of t tokens after c cached ones: its additive
    compute plus the iteration's busiest-expert-group routed compute for t tokens (``base_s``; a MoE
    group's load is not additive over sequences, issue 18), and its KV time."""
    sm.prepare_prefill(6000)
    dep = sm.dep
    for c, t in ((0, 512), (512, 512), (1024, 2048), (3000, 7)):
        r = prefill_of(dep, batch=1, prompt_tokens=t, cached_tokens=c, balanced=True)
        pc, pk = sm.prefill_part(0, c, c + t, c + t)
        assert pc + sm.base_s(t) == pytest.approx(float(r.time.compute_s), rel=1e-9)
        assert sm.base_s(t) == pytest.approx(float(r.routed_compute_s), rel=1e-12)
        bw = dep.system.accelerator.hbm_bandwidth_bytes_per_s
        kv_time = float(r.time.memory_s) - float(r.weight_bytes_per_chip) / bw
        assert pk == pytest.approx(kv_time, rel=1e-9, abs=1e-15)


def test_held_kv_matches_deployment(sm):
    L = np.asarray([1.0, 1023, 1024, 1025, 4096, 131072])
    assert np.allclose(sm.held(L), sm.dep.kv_per_sequence_per_chip_bytes(L), rtol=1e-12)


def test_kv_capacity_is_hbm_minus_weights(sm):
    dep = sm.dep
    assert sm.kv_capacity_bytes == pytest.approx(dep.system.accelerator.hbm_bytes - dep.weights_per_chip_bytes)


def test_windowed_model_has_kinks_and_full_attention_none():
    assert StepModel(_dep("gemma-3-27b", "hgx-h100", None), max_tokens=8).thetas == (1024.0,)
    assert StepModel(_dep("llama-3.1-8b", "h100-sxm", None), max_tokens=8).thetas == ()
    assert 2048.0 in StepModel(_dep("deepseek-v3.2-exp", "hgx-h200", None), max_tokens=8).thetas


def test_decode_set_sums_match_direct_sums():
    """Aggregates with kinks (gemma: window 1024) equal the direct per-sequence sums after adds,
    runs of steps across the kink, and removals."""
    sm = StepModel(_dep("gemma-3-27b", "hgx-h100", None), max_tokens=8)
    ds = DecodeSet(sm.thetas)
    rng = np.random.default_rng(3)
    ctx = {}
    for rid in range(40):
        L = int(rng.integers(1, 3000))
        ds.add(rid, L, int(rng.integers(1, 500)))
        ctx[rid] = L
    for _ in range(30):
        k = ds.steps_to_event()
        assert k >= 1
        done = ds.advance(k)
        for rid in list(ctx):
            ctx[rid] += k
        for rid in done:
            ctx.pop(rid)
        L = np.asarray(list(ctx.values()), dtype=float)
        for f in (sm.dec_compute, sm.dec_kv, sm.held):
            assert ds.total(f) == pytest.approx(float(np.sum(f(L))), rel=1e-12)
            assert ds.total(f, 1) == pytest.approx(float(np.sum(f(L + 1))), rel=1e-12)
        if not ctx:
            break


lines_st = st.lists(st.tuples(st.floats(0, 1e3), st.floats(0, 10)), min_size=1, max_size=4)


@settings(max_examples=200, deadline=None)
@given(lines=lines_st, k=st.integers(0, 300))
def test_sum_max_affine_equals_brute_force(lines, k):
    brute = sum(max(a + b * j for a, b in lines) for j in range(k))
    assert sum_max_affine(tuple(lines), k) == pytest.approx(brute, rel=1e-9, abs=1e-9)
    if k:
        assert max_affine_at(tuple(lines), k - 1) == pytest.approx(max(a + b * (k - 1) for a, b in lines))


def test_sum_max_affine_hand_case():
    """max(1 + j, 4, 0.5·j) for j = 0..5: 4, 4, 4, 4, 5, 6 -> 27."""
    assert sum_max_affine(((1.0, 1.0), (4.0, 0.0), (0.0, 0.5)), 6) == 27.0
    assert math.isclose(sum_max_affine(((2.0, 0.0),), 10), 20.0)


def test_held_kv_has_no_cancellation_on_wide_replicas():
    """Found by schemathesis through the web API: DeepSeek-V3 with tp1 adp4095 holds ~17 B of KV per
    token per chip beside ~0.3 GB of weights; held KV computed as memory - weights lost 6e-8 to
    rounding and the step model's exactness check refused the deployment. KV per chip is now
    computed on its own: 70,272 B/token (MLA, bf16) / 4,095 attention groups, by hand."""
    dep = Deployment(model=get_model("deepseek-v3"), system=get_system("gb200-nvl72"),
                     plan=Plan(tp=1, ep=1, adp=4095))
    assert float(dep.kv_per_sequence_per_chip_bytes(1000.0)) == pytest.approx(1000 * 70272 / 4095, rel=1e-12)
    StepModel(dep, max_tokens=8)  # builds: the piecewise-linear fit verifies to 1e-9


@pytest.mark.xfail(strict=True, reason="known gap (issue 35): the simulator sums the balanced attention-DP share per "
                                     "sequence; a request alone sits whole on one of the adp groups, which needs "
                                     "per-group sums in the engine (serving.steptime docstring)")
def test_a_request_alone_on_attention_dp_prefills_on_one_group():
    """DeepSeek-V3 tp1·ep8·adp8 on GB200, one 4,096-token prompt: inference prefills it on one group (the
    busiest group holds the whole prompt), the simulator on 1/8 of each group."""
    from llmecon.serving.simulate import simulate
    from llmecon.serving.config import SimConfig
    from llmecon.serving.workload import Workload

    dep = Deployment(model=get_model("deepseek-v3"), system=get_system("gb200-nvl72"), plan=Plan(tp=1, ep=8, adp=8))
    wl = Workload(arrival_s=np.zeros(1), prompt_tokens=np.array([4096], dtype=np.int64),
                  output_tokens=np.array([2], dtype=np.int64), class_id=np.zeros(1, dtype=np.int64))
    res = simulate(dep, wl, SimConfig(drain=True))
    assert res.first_token_s == pytest.approx([float(prefill_of(dep, batch=1.0, prompt_tokens=4096.0).step_s)],
                                              rel=1e-9)


def test_terms_beyond_the_table_equal_one_inference_call(sm):
    """Token counts past the table come from a vectorised block (``terms_block``); each equals a
    single ``decode_of`` call at that count, exactly (both event loops read these floats)."""
    from llmecon.serving.steptime import BIG_BLOCK

    bw = sm.dep.system.accelerator.hbm_bandwidth_bytes_per_s
    for n in (4097, BIG_BLOCK - 1, BIG_BLOCK, 3 * BIG_BLOCK + 17, 262_143, 1_000_003):
        r = decode_of(sm.dep, batch=float(n), context=0.0, balanced=True)
        truth = (float(r.routed_compute_s), float(r.weight_bytes_per_chip) * (1.0 / bw), float(r.time.comm_s))
        assert sm.terms(n) == truth, n
        lo, rows = sm.terms_block(n)
        assert lo == n - n % BIG_BLOCK and rows.shape == (BIG_BLOCK, 3)
        assert tuple(rows[n - lo]) == truth, n


def test_first_block_has_no_iteration_at_zero_tokens():
    from llmecon.serving.steptime import BIG_BLOCK

    m = StepModel(_dep("llama-3.1-8b", "h100-sxm", None), max_tokens=16)
    lo, rows = m.terms_block(100)
    assert lo == 0 and tuple(rows[0]) == (0.0, 0.0, 0.0)
    assert tuple(rows[16]) == m.terms(16) and rows.shape == (BIG_BLOCK, 3)  # the table's last row, recomputed
