"""Disaggregated prefill/decode: the KV transfer, one request's path and the closed loop (issue 22 item 2)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmecon.errors import SpecError
from llmecon.resolve import deployment
from llmecon.serving.disaggregated import disaggregated_state
from llmecon.step.disaggregated import disaggregated_of, kv_bytes_per_chip, kv_transfer_s
from llmecon.step.inference import decode_of, prefill_of

IB_BW, IB_ALPHA = 50e9, 13e-6  # hgx-h100 / gb200-nvl72 scale-out: ConnectX-7 400 Gb/s = 50 GB/s per direction, 13 us


@pytest.fixture(scope="module")
def llama():
    return deployment("llama-3.1-70b", "hgx-h100", tp=8)


def test_kv_transfer_by_hand_gqa(llama):
    """Llama-3.1-70B bf16: 80 layers x 2 x 8 KV heads x 128 x 2 B = 327,680 B/token; 2,000 tokens = 655.36 MB,
    over tp 8 (8 KV heads: one per chip) = 81.92 MB per chip at 50 GB/s = 1.6384 ms, + 13 us."""
    assert llama.model.kv_bytes(1.0) == 327_680.0
    assert float(kv_transfer_s(llama, llama, prompt_tokens=2000)) == pytest.approx(81.92e6 / IB_BW + IB_ALPHA,
                                                                                   rel=1e-12)


def test_kv_transfer_by_hand_mla_attention_dp():
    """DeepSeek-V3 (MLA, 70,272 B/token bf16, replicated on every tp rank). Prefill tp1·ep8·adp8: 16 prompts over
    8 attention groups, 2 per chip; decode tp8·ep8·adp1: one group, every chip receives all 16 latents.
    The decode end binds: 16 x 70,272 x 1,000 B = 1.124352 GB per chip at 50 GB/s = 22.48704 ms, + 13 us."""
    pre = deployment("deepseek-v3", "gb200-nvl72", tp=1, ep=8, adp=8)
    dec = deployment("deepseek-v3", "gb200-nvl72", tp=8, ep=8, adp=1)
    assert float(kv_bytes_per_chip(pre.model, pre.plan, prompt_tokens=1000, batch=16)) == pytest.approx(2 * 70_272e3)
    assert float(kv_bytes_per_chip(dec.model, dec.plan, prompt_tokens=1000, batch=16)) == pytest.approx(16 * 70_272e3)
    t = float(kv_transfer_s(pre, dec, prompt_tokens=1000, batch=16))
    assert t == pytest.approx(16 * 70_272e3 / IB_BW + IB_ALPHA, rel=1e-12)
    # one prompt: one group on each side, each chip holds the whole latent
    assert float(kv_transfer_s(pre, dec, prompt_tokens=1000, batch=1)) == pytest.approx(70_272e3 / IB_BW + IB_ALPHA)


def test_kv_transfer_pipeline_stage_share():
    """tp1·pp2: each stage holds ceil(80/2)/80 = half the layers' KV."""
    pre = deployment("llama-3.1-70b", "hgx-h100", tp=4, pp=2)
    want = 0.5 * 327_680.0 * 1000 / 4
    assert float(kv_bytes_per_chip(pre.model, pre.plan, prompt_tokens=1000)) == pytest.approx(want)


def test_kv_transfer_errors_name_the_field(llama):
    fp8 = deployment("llama-3.1-70b", "hgx-h100", tp=8, kv_dtype="fp8")
    with pytest.raises(SpecError) as e:
        kv_transfer_s(llama, fp8, prompt_tokens=100)
    assert e.value.field == "kv_dtype"
    amd = deployment("llama-3.1-70b", "mi300x-8", tp=8)
    with pytest.raises(SpecError) as e:
        kv_transfer_s(amd, amd, prompt_tokens=100)
    assert e.value.field == "prefill_system"
    with pytest.raises(SpecError) as e:
        kv_bytes_per_chip(llama.model, llama.plan, prompt_tokens=100, batch=0)
    assert e.value.field == "batch"


@settings(max_examples=40, deadline=None)
@given(p=st.integers(1, 100_000), b=st.integers(1, 256))
def test_kv_transfer_mla_attention_dp_by_hand(p, b):
    """DeepSeek-V3 tp1·ep8·adp8 on both ends: b prompts over min(b, 8) groups, each chip holds b/min(b, 8)
    whole latents of 70,272 B/token; one p2p at 50 GB/s + 13 us."""
    dep = deployment("deepseek-v3", "gb200-nvl72", tp=1, ep=8, adp=8)
    want = b / min(b, 8) * 70_272.0 * p / IB_BW + IB_ALPHA
    assert float(kv_transfer_s(dep, dep, prompt_tokens=p, batch=b)) == pytest.approx(want, rel=1e-12)


def test_one_request_path(llama):
    s = disaggregated_of(llama, llama, prefill_batch=2, decode_batch=32, prompt_tokens=1000, output_tokens=201)
    pre = prefill_of(llama, batch=2, prompt_tokens=1000)
    dec = decode_of(llama, batch=32, context=1100)  # 1000 + (201 - 1)/2
    xfer = 2 * 327_680.0 * 1000 / 8 / IB_BW + IB_ALPHA
    assert float(s.ttft_s) == pytest.approx(float(pre.latency_s) + xfer, rel=1e-12)
    assert float(s.tpot_s) == float(dec.step_s)
    assert float(s.prefill_requests_per_s) == pytest.approx(2 / float(pre.step_s))
    # a sequence holds its slot for O - 1 = 200 steps: the prefill emitted the first token
    assert float(s.decode_requests_per_s) == pytest.approx(32 / (200 * float(dec.step_s)))


def test_closed_loop_low_concurrency_is_one_request_path(llama):
    """Ideal mode, C = 1: the decode worker runs batch 1, the prefill worker one prompt; TTFT = prefill + transfer."""
    s = disaggregated_state(llama, llama, concurrency=1, prompt_tokens=1000, output_tokens=100)
    one = disaggregated_of(llama, llama, prefill_batch=1, decode_batch=1, prompt_tokens=1000, output_tokens=100)
    assert float(s.tpot_s) == float(one.tpot_s)
    assert float(s.ttft_s) == pytest.approx(float(one.ttft_s), rel=1e-12)
    assert float(s.prefill_batch) == 1.0 and float(s.queue_s) == 0.0


def test_closed_loop_decode_batch_counts_only_decoding_clients(llama):
    """Prefill-heavy: Llama-3.1-70B tp8 on hgx-h100, C = 64 clients of 8,192 / 64 tokens, one worker each. By
    hand: a prompt is 2 x 70.6e9 x 8,192 + 4 x 80 x 8,192 x 8,192^2 / 2 (causal attention) = 1.245e15 FLOP at
    8 x 989 TFLOP/s = 0.157 s, so the prefill worker saturates at about 1/0.157 = 6.4 requests/s; a decode step
    reads 141 GB / 8 chips at 3.35 TB/s = 5.3 ms. Little's law at the decode worker: B_d = λ·63·TPOT ≈ 2.1, not
    C/W_d = 64 (the clients waiting for their prompt hold no decode slot)."""
    s = disaggregated_state(llama, llama, concurrency=64, prompt_tokens=8192, output_tokens=64)
    rate, tpot, b = float(s.requests_per_s), float(s.tpot_s), float(s.decode_batch)
    assert rate == pytest.approx(1 / 0.157, rel=0.05)
    assert 5.3e-3 <= tpot <= 5.3e-3 * 1.1
    assert b == pytest.approx(rate * 63 * tpot, rel=1e-6) and 1.8 < b < 2.5
    x = float(s.prefill_batch)
    assert rate == pytest.approx(x / float(prefill_of(llama, batch=x, prompt_tokens=8192).step_s), rel=1e-6)
    assert float(s.tpot_s) == float(decode_of(llama, batch=b, context=8192 + 63 / 2).step_s)


def test_closed_loop_waits_for_the_prefill_step_in_progress(llama):
    """TTFT adds the mean residual of the prefill step in progress, ρ·(C-1)/C·T_p/2 (module docstring): with
    C = 2 clients of 1,000 / 100 tokens the worker is idle most of the time (x = 1, ρ = λ·T_p); with C = 64 of
    8,192 / 64 it is saturated (ρ = 1), and a prompt waits 63/64 of half a step on average."""
    s = disaggregated_state(llama, llama, concurrency=[2, 1], prompt_tokens=1000, output_tokens=100)
    pre = prefill_of(llama, batch=1, prompt_tokens=1000)
    t_p, lat = float(pre.step_s), float(pre.latency_s)
    xfer = 327_680.0 * 1000 / 8 / IB_BW + IB_ALPHA
    rate = float(s.requests_per_s[0])
    wait = rate * t_p * 0.5 * t_p / 2
    assert float(s.prefill_batch[0]) == 1.0 and float(s.prefill_wait_s[0]) == pytest.approx(wait, rel=1e-9)
    assert float(s.ttft_s[0]) == pytest.approx(wait + lat + xfer, rel=1e-9) and wait > 0
    assert float(s.prefill_wait_s[1]) == 0.0  # one client never meets its own request
    big = disaggregated_state(llama, llama, concurrency=64, prompt_tokens=8192, output_tokens=64)
    x = float(big.prefill_batch)
    step = float(prefill_of(llama, batch=x, prompt_tokens=8192).step_s)
    assert x > 1 and float(big.prefill_wait_s) == pytest.approx(63 / 64 * step / 2, rel=1e-6)


def test_closed_loop_spreads_decoding_clients_over_workers(llama):
    """Four decode workers share λ: each holds λ/4·(O-1)·TPOT; a worker holding less than one still steps at
    batch 1 (a busy worker runs one sequence)."""
    s = disaggregated_state(llama, llama, concurrency=[8, 2], prompt_tokens=1000, output_tokens=100,
                            decode_workers=4)
    rate, tpot = np.asarray(s.requests_per_s), np.asarray(s.tpot_s)
    assert np.asarray(s.decode_batch) == pytest.approx(rate / 4 * 99 * tpot, rel=1e-6)
    assert float(s.decode_batch[1]) < 1.0
    assert float(s.tpot_s[1]) == float(decode_of(llama, batch=1.0, context=1000 + 99 / 2).step_s)
    with pytest.raises(SpecError) as e:
        disaggregated_state(llama, llama, concurrency=1, prompt_tokens=10, output_tokens=10, decode_workers=0)
    assert e.value.field == "decode_workers"


def test_closed_loop_kv_limited_queue_by_hand(llama):
    """Decode-heavy (1,000 / 4,000 tokens, C = 5,000): the decode worker holds B_kv sequences, the HBM beside
    the weights over 40,960 B/token/chip (327,680 / 8) x 2,999.5 tokens (P + (O-1)/2); it finishes
    λ = B_kv/(3,999·TPOT(B_kv)) requests/s and the rest queue: C/λ - (TTFT_run + 3,999·TPOT)."""
    s = disaggregated_state(llama, llama, concurrency=5000, prompt_tokens=1000, output_tokens=4000)
    b_kv = np.floor((81_559 * 2**20 - llama.weights_per_chip_bytes) / (40_960.0 * 2999.5))  # H100 exposes 81,559 MiB
    assert bool(s.kv_limited) and float(s.decode_batch) == b_kv
    tpot = float(decode_of(llama, batch=b_kv, context=2999.5).step_s)
    rate = b_kv / (3999 * tpot)
    assert float(s.tpot_s) == tpot and float(s.requests_per_s) == pytest.approx(rate, rel=1e-12)
    pre = prefill_of(llama, batch=float(s.prefill_batch), prompt_tokens=1000)
    xfer = float(kv_transfer_s(llama, llama, prompt_tokens=1000, batch=float(s.prefill_batch)))
    ttft_run = float(s.prefill_wait_s) + float(pre.latency_s) + xfer
    assert float(s.queue_s) == pytest.approx(5000 / rate - ttft_run - 3999 * tpot, rel=1e-9)
    assert float(s.ttft_s) == pytest.approx(ttft_run + float(s.queue_s), rel=1e-12)


def test_prefill_worker_that_does_not_fit_prices_nothing():
    """Llama-3.1-70B bf16 on one H100: 141 GB of weights over 80 GB of HBM: no prefill is priced."""
    pre = deployment("llama-3.1-70b", "hgx-h100", tp=1)
    dec = deployment("llama-3.1-70b", "hgx-h100", tp=8)
    s = disaggregated_state(pre, dec, concurrency=4, prompt_tokens=1000, output_tokens=100)
    assert not bool(s.prefill_fits) and np.isnan(float(s.ttft_s)) and np.isnan(float(s.tpot_s))
