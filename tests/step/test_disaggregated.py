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
@given(p=st.integers(1, 100_000), b=st.integers(1, 256), dp=st.integers(1, 200), db=st.integers(0, 64))
def test_kv_transfer_monotone_and_floored(p, b, dp, db):
    dep = deployment("deepseek-v3", "gb200-nvl72", tp=1, ep=8, adp=8)
    t = float(kv_transfer_s(dep, dep, prompt_tokens=p, batch=b))
    assert t >= IB_ALPHA
    assert float(kv_transfer_s(dep, dep, prompt_tokens=p + dp, batch=b + db)) >= t


def test_one_request_path(llama):
    s = disaggregated_of(llama, llama, prefill_batch=2, decode_batch=32, prompt_tokens=1000, output_tokens=201)
    pre = prefill_of(llama, batch=2, prompt_tokens=1000)
    dec = decode_of(llama, batch=32, context=1100)  # 1000 + (201 - 1)/2
    xfer = 2 * 327_680.0 * 1000 / 8 / IB_BW + IB_ALPHA
    assert float(s.ttft_s) == pytest.approx(float(pre.latency_s) + xfer, rel=1e-12)
    assert float(s.tpot_s) == float(dec.step_s)
    assert float(s.prefill_requests_per_s) == pytest.approx(2 / float(pre.step_s))
    assert float(s.decode_requests_per_s) == pytest.approx(32 / (201 * float(dec.step_s)))


def test_closed_loop_low_concurrency_is_one_request_path(llama):
    """Ideal mode, C = 1: the decode worker runs batch 1, the prefill worker one prompt; TTFT = prefill + transfer."""
    s = disaggregated_state(llama, llama, concurrency=1, prompt_tokens=1000, output_tokens=100)
    one = disaggregated_of(llama, llama, prefill_batch=1, decode_batch=1, prompt_tokens=1000, output_tokens=100)
    assert float(s.tpot_s) == float(one.tpot_s)
    assert float(s.ttft_s) == pytest.approx(float(one.ttft_s), rel=1e-12)
    assert float(s.prefill_batch) == 1.0 and float(s.queue_s) == 0.0


def test_closed_loop_spreads_clients_over_decode_workers(llama):
    s = disaggregated_state(llama, llama, concurrency=[8, 2], prompt_tokens=1000, output_tokens=100,
                            decode_workers=4)
    assert s.decode_batch.tolist() == [2.0, 1.0]  # 8/4; 2 clients on 4 workers: a busy worker runs one
    dec = decode_of(llama, batch=2.0, context=1000 + 99 / 2)
    assert float(s.tpot_s[0]) == float(dec.step_s)
    with pytest.raises(SpecError) as e:
        disaggregated_state(llama, llama, concurrency=1, prompt_tokens=10, output_tokens=10, decode_workers=0)
    assert e.value.field == "decode_workers"


def test_closed_loop_little_and_kv_queue(llama):
    """Little's law: running requests = rate x (TTFT in the system + (O-1) TPOT); beyond the decode workers' KV
    capacity the rest queue ((C - n)/rate, in TTFT)."""
    s = disaggregated_state(llama, llama, concurrency=[4, 100_000], prompt_tokens=4000, output_tokens=500)
    ttft_run = np.asarray(s.ttft_s) - np.asarray(s.queue_s)
    running = np.asarray(s.requests_per_s) * (ttft_run + 499 * np.asarray(s.tpot_s))
    assert running[0] == pytest.approx(4.0, rel=1e-9)
    assert bool(s.kv_limited[1]) and running[1] == pytest.approx(float(s.decode_batch[1]), rel=1e-9)
    assert s.queue_s[1] == pytest.approx((100_000 - s.decode_batch[1]) / s.requests_per_s[1], rel=1e-9)
