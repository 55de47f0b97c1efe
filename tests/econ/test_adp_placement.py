"""Attention data parallelism places whole sequences (issue 35, item 6): a sequence's KV and attention
live on one attention-DP group, so with fewer sequences than groups the critical chip holds and reads
a whole sequence, not 1/adp of one. Hand cases from the issue's expert checks; the memory ones failed on the
code that spread one sequence over every group (163,840 tokens), the step-time one on the code that
spread its KV reads (2.99 ms against 3.99 ms)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, strategies as st

from llmecon.catalog.hardware import get_system
from llmecon.catalog.models import get_model
from llmecon.econ.batching import kv_capacity_tokens, max_batch, max_context
from llmecon.econ.context import sequences_that_fit
from llmecon.spec.deployment import Deployment, busiest_group_sequences
from llmecon.spec.plan import Plan
from llmecon.step.inference import decode_of, prefill_of

# DeepSeek-V3 MLA cache per token (config.json: 61 layers, kv_lora_rank 512 + qk_rope_head_dim 64), bf16:
# 61 x 576 x 2 B = 70,272 B.
KV_PER_TOKEN = 61 * 576 * 2


def test_busiest_group_hand_cases():
    assert busiest_group_sequences(1.0, 8) == 1.0          # one sequence sits on one of 8 groups
    assert busiest_group_sequences(7.0, 8) == 1.0          # fewer sequences than groups: one each
    assert busiest_group_sequences(16.0, 8) == 2.0         # at least adp: the mean (balanced groups)
    assert busiest_group_sequences(0.25, 8) == 0.25        # a quarter-sequence micro-batch stays a quarter
    assert busiest_group_sequences(7.0, 1) == 7.0


def test_decode_batch1_131k_reads_the_whole_sequence_on_one_chip():
    """DeepSeek-V3 tp1·ep8·adp8 on GB200 (8 TB/s), batch 1, 131,072 cached tokens: the critical chip
    reads its weights plus the whole sequence's KV (131,072 read + 1 written tokens x 70,272 B =
    9.2108 GB = 1.151 ms at 8 TB/s); the expert's hand total is 3.99 ms (the spread code: 2.99 ms)."""
    dep = Deployment(model=get_model("deepseek-v3"), system=get_system("gb200-nvl72"), plan=Plan(tp=1, ep=8, adp=8))
    r = decode_of(dep, batch=1.0, context=131_072.0)
    bw = 8e12
    kv_s = r.time.memory_s - r.weight_bytes_per_chip / bw
    assert kv_s == pytest.approx(KV_PER_TOKEN * (131_072 + 1) / bw, rel=1e-9)
    assert r.time.memory_s == pytest.approx(3.99e-3, rel=0.01)


def test_context_ep32_batch1_is_one_chips_free_hbm():
    """DeepSeek-V3 bf16 weights on hgx-h100 under ep32 (adp32, tp1): one sequence lives on one chip,
    so the longest context is floor(free / 70,272 B), not 32x that (the spread code capped it at the
    model's 163,840). With the weights W per chip, free = HBM - W."""
    dep = Deployment(model=get_model("deepseek-v3"), system=get_system("hgx-h100"), plan=Plan(tp=1, ep=32),
                     weight_dtype="bf16")
    free = dep.system.accelerator.hbm_bytes - dep.weights_per_chip_bytes
    one = math.floor(free / KV_PER_TOKEN)
    assert one < 163_840
    assert max_context(dep) == one
    assert max_context(dep, batch=32) == one                 # 32 sequences, one per group
    assert max_context(dep, batch=64) == math.floor(free / (2 * KV_PER_TOKEN))
    assert kv_capacity_tokens(dep) == math.floor(free / (KV_PER_TOKEN / 32))   # across 32 full groups
    assert max_batch(dep, context=10_000) == math.floor(32 * free / (10_000 * KV_PER_TOKEN))
    assert max_batch(dep, context=one + 1) == 0              # not one whole sequence fits a chip
    assert float(sequences_that_fit(dep, np.array([10_000.0]))[0]) == max_batch(dep, context=10_000)


def test_memory_per_chip_at_batch_one_holds_a_whole_sequence():
    dep = Deployment(model=get_model("deepseek-v3"), system=get_system("hgx-h100"), plan=Plan(tp=1, ep=32))
    held = dep.memory_per_chip_bytes(batch=1.0, context=1000.0) - dep.weights_per_chip_bytes
    assert held == pytest.approx(1000 * KV_PER_TOKEN, rel=1e-12)


@given(b=st.integers(min_value=1, max_value=10_000), adp=st.integers(min_value=1, max_value=256))
def test_busiest_group_holds_at_least_one_whole_sequence(b, adp):
    """The busiest group holds at least the mean and at least one whole sequence, never more than
    ceil(b/adp), and adp groups of that many hold every sequence."""
    n = float(busiest_group_sequences(float(b), adp))
    assert n == max(b / adp, 1.0)
    assert n <= -(-b // adp) and n * adp >= b * (1 - 1e-12)


def _dsv3_gb200_adp8():
    return Deployment(model=get_model("deepseek-v3"), system=get_system("gb200-nvl72"), plan=Plan(tp=1, ep=8, adp=8))


def test_decode_fewer_sequences_than_groups_reads_one_whole_sequence_each():
    """Batches 1..8 on 8 attention groups: each group holds at most one sequence, so the critical chip
    reads one sequence's KV (131,073 tokens x 70,272 B at 8 TB/s = 1.151 ms) whatever the batch; 16
    sequences put two on each group (2.303 ms). ``balanced`` spreads one over the 8 groups (1/8 of it):
    the mean group, what the serving simulator sums per sequence."""
    dep, bw = _dsv3_gb200_adp8(), 8e12
    one = KV_PER_TOKEN * (131_072 + 1) / bw
    for b, expect in ((1.0, one), (3.0, one), (8.0, one), (16.0, 2 * one)):
        r = decode_of(dep, batch=b, context=131_072.0)
        assert r.time.memory_s - r.weight_bytes_per_chip / bw == pytest.approx(expect, rel=1e-9), b
    r = decode_of(dep, batch=1.0, context=131_072.0, balanced=True)
    assert r.time.memory_s - r.weight_bytes_per_chip / bw == pytest.approx(one / 8, rel=1e-9)


def test_prefill_one_prompt_runs_on_one_group():
    """One 4,096-token prompt on tp1·ep8·adp8: its attention projections and attention run on one chip
    (tp 1), so the critical chip's non-routed FLOPs are 8x the balanced (spread) share; the routed
    experts' FLOPs are the same either way (every group's tokens are dispatched to them)."""
    dep = _dsv3_gb200_adp8()
    whole = prefill_of(dep, batch=1.0, prompt_tokens=4096.0)
    spread = prefill_of(dep, batch=1.0, prompt_tokens=4096.0, balanced=True)
    non_routed = (np.asarray(whole.time.compute_s) - whole.routed_compute_s,
                  np.asarray(spread.time.compute_s) - spread.routed_compute_s)
    assert float(non_routed[0]) == pytest.approx(8 * float(non_routed[1]), rel=1e-9)
    assert float(whole.routed_compute_s) == pytest.approx(float(spread.routed_compute_s), rel=1e-12)


def test_serving_step_model_sums_the_balanced_share():
    """The serving simulator's per-sequence parts are the balanced ones: 8 sequences (one per group,
    busiest == mean) rebuilt from them equal the step itself."""
    from llmecon.serving.steptime import StepModel

    dep = _dsv3_gb200_adp8()
    m = StepModel(dep, max_tokens=64)
    assert float(m.uniform_step_s(8, 131_072.0)) == pytest.approx(
        float(decode_of(dep, batch=8.0, context=131_072.0).step_s), rel=1e-9)
