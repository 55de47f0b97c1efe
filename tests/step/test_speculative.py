"""Speculative decoding step: k = 0 is plain decoding bit for bit; TPOT at batch 1 (memory-bound) is
plain·(verify/plain + k·r)/E; the break-even batch is where the two TPOTs meet; calibrated mode too."""

import dataclasses

import numpy as np
import pytest

from llmecon.resolve import deployment
from llmecon.spec.speculation import Speculation, speculation_for
from llmecon.step.inference import decode_of
from llmecon.step.speculative import breakeven_batch, mtp_draft_share, speculative_of, verify_of


@pytest.fixture(scope="module")
def dense():
    dep = deployment("llama-3.1-70b", "gb200-nvl72", tp=4)
    return dataclasses.replace(dep, speculation=speculation_for(dep.model, k=3, acceptance="0.8",
                                                                draft="llama-3.1-8b"))


@pytest.fixture(scope="module")
def dsv3():
    dep = deployment("deepseek-v3", "gb200-nvl72", auto=True)
    return dataclasses.replace(dep, speculation=speculation_for(dep.model, k=1))


def test_k0_is_plain_bit_for_bit(dsv3):
    batch = np.array([1.0, 64.0, 4096.0])
    plain = decode_of(dsv3, batch=batch, context=4096)
    s = speculative_of(dsv3, batch=batch, context=4096, speculation=Speculation(k=0, acceptance=()))
    assert np.array_equal(s.tpot_s, plain.step_s) and np.array_equal(s.tokens_per_s, plain.tokens_per_s)
    assert np.array_equal(verify_of(dsv3, batch=batch, context=4096, k=0).step_s, plain.step_s)


def test_verify_dense_memory_bound_batch1(dense):
    """A dense model at batch 1: the verify step reads the same weights, so it costs the plain step
    plus 3 more tokens' KV writes and FLOPs, which are far below the weight read -> within 0.1%."""
    s = speculative_of(dense, batch=1, context=1024)
    assert s.verify.bound == "memory"
    assert float(s.verify.step_s) == pytest.approx(float(s.plain.step_s), rel=1e-3)
    # E = (1 - 0.8^4)/0.2 = 2.952; TPOT = (verify + 3 draft steps)/E
    assert s.tokens_per_step == pytest.approx(2.952, rel=1e-12)
    r = s.draft_share  # the 8B draft's step over the 70B's: about their weight ratio (8.0e9/70.6e9)
    assert r == pytest.approx(8.03e9 / 70.55e9, rel=0.05)
    assert float(s.tpot_s) == pytest.approx(float(s.plain.step_s) * (1 + 3 * r) / 2.952, rel=2e-3)


def test_verify_counts_k_plus_1_tokens(dense):
    s = speculative_of(dense, batch=8, context=512)
    assert float(s.verify.tokens) == 8 * 4
    assert float(s.verify.flops) == pytest.approx(4 * float(s.plain.flops), rel=0.01)


def test_mtp_share_deepseek(dsv3):
    """One MTP module (a decoder layer of the last layer's kind + 2d^2 projection) + head over the
    active matmul weights: about (1 MoE layer + head) / (61 layers + head) ~ 0.04."""
    r = mtp_draft_share(dsv3.model)
    assert 0.02 < r < 0.06


def test_breakeven_is_where_tpots_meet(dsv3):
    b = breakeven_batch(dsv3, context=128)
    assert b is not None and b > 1
    s = speculative_of(dsv3, batch=np.array([b - 1, b]), context=128)
    assert s.speedup[0] > 1.0 >= s.speedup[1]
    assert s.verify.bound[1] != "memory"  # the (k+1)x tokens bind: compute (or their all-to-all on EP)


def test_calibrated_mode_prices_verify(dsv3):
    cal = dataclasses.replace(deployment("deepseek-v3", "gb200-nvl72", auto=True, mode="calibrated"),
                              speculation=dsv3.speculation)
    s = speculative_of(cal, batch=1, context=4096)
    assert s.plain.mode == "calibrated" and s.verify.mode == "calibrated"
    assert 1.0 < float(s.speedup) < 1.85
