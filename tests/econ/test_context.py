"""Context economics (SPEC B7-B9) and KV-cache placement (SPEC C12): hand-computed cases and
properties of ``llmecon.econ.context`` and ``llmecon.econ.kvcache``.

Hand cases state their arithmetic in the docstring; properties (hypothesis) hold for any input:
the block-sparse optimum is a true minimum, tier schedules never price below (1 + margin) x cost
on their grid and are as low / as long as they can be, a deployment's KV, cost and memory wall
move the right way with context, and the five-minute rule's break-even is the drain time.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmecon.spec.deployment import Deployment
from llmecon.econ.batching import crossover_context, max_batch, smallest_plan
from llmecon.catalog.hardware import get_system
from llmecon.catalog.models import get_model
from llmecon.econ.context import (block_sparse_reads, check_prices, context_economics, kv_per_sequence_bytes,
                             max_sequences, tiers_for_boundaries, tiers_for_steps, usd_per_mtok)
from llmecon.errors import InfeasibleError, SpecError
from llmecon.spec.hardware import MemoryTier
from llmecon.econ.kvcache import cache_placement, priced_tiers
from llmecon.spec.plan import Plan
from llmecon.spec.prices import ContextTier, PriceSheet

FAST = settings(max_examples=60, deadline=None)


def _dep(model: str, system: str = "hgx-h100", plan: Plan | None = None) -> Deployment:
    m, s = get_model(model), get_system(system)
    return Deployment(model=m, system=s, plan=plan or smallest_plan(m, s))


# ---- closed forms --------------------------------------------------------------------------------


@FAST
@given(context=st.floats(min_value=1.0, max_value=1e9), k=st.floats(min_value=1.0, max_value=1e4),
       s=st.floats(min_value=1e-3, max_value=1e9))
def test_block_sparse_optimum_is_a_minimum(context, k, s):
    """SPEC B7: cost(s) = L/s + k_b·s is minimised at s = sqrt(L/k_b), where it is 2·sqrt(k_b·L):
    no block size s does better, and the returned reads are the cost at the returned s."""
    r = block_sparse_reads(context=context, selected_blocks=k)
    best = float(r.token_reads)
    s_opt = float(r.block_size)
    assert context / s_opt + k * s_opt == pytest.approx(best, rel=1e-12)
    assert context / s + k * s >= best * (1 - 1e-12)


def test_block_sparse_hand_case_and_errors():
    """L = 1M, k_b = 16 (SPEC B7): s = sqrt(62,500) = 250, reads 2·sqrt(16e6) = 8,000; L = 4,096,
    k_b = 4: s = 32, reads 256 (vectorised)."""
    r = block_sparse_reads(context=[1e6, 4096], selected_blocks=[16, 4])
    np.testing.assert_allclose(r.block_size, [250.0, 32.0], rtol=1e-15)
    np.testing.assert_allclose(r.token_reads, [8000.0, 256.0], rtol=1e-15)
    for bad in (dict(context=0, selected_blocks=4), dict(context=1e6, selected_blocks=-1)):
        with pytest.raises(SpecError, match="context and selected blocks"):
            block_sparse_reads(**bad)


def test_max_sequences_hand_case():
    """SPEC B8 memory wall (n·C - W)/(L·kv), floored: 640 GB, 140 GB of weights, 327,680 B/token:
    at 8,192 tokens a sequence holds 2,684,354,560 B, so 500e9/2.684e9 = 186.26 -> 186; at 1,024
    tokens 1,490.1 -> 1,490; weights over capacity -> 0."""
    got = max_sequences(capacity_bytes=640e9, weight_bytes=140e9, kv_bytes_per_token=327_680,
                        context=np.array([8192.0, 1024.0]))
    np.testing.assert_array_equal(got, [186.0, 1490.0])
    assert max_sequences(capacity_bytes=640e9, weight_bytes=700e9, kv_bytes_per_token=327_680, context=8192) == 0
    assert kv_per_sequence_bytes(kv_bytes_per_token=327_680, context=8192) == 2_684_354_560


def test_usd_per_mtok_hand_case():
    """$2 per chip-hour, 1 chip-second per token: 1e6 tokens x 1 s x 2/3600 $/s = $555.56 per Mtok;
    at 50% utilisation the chips are paid for twice the useful time: $1,111.11. 3.6 ms per token at
    $10/hour: 1e6 x 3.6e-3 x 10/3600 = $10."""
    assert float(usd_per_mtok(1.0, price_per_chip_hour=2.0)) == pytest.approx(1e6 * 2 / 3600, rel=1e-15)
    assert float(usd_per_mtok(1.0, price_per_chip_hour=2.0, utilization=0.5)) == pytest.approx(
        2e6 * 2 / 3600, rel=1e-15)
    np.testing.assert_allclose(usd_per_mtok([0.0, 3.6e-3], price_per_chip_hour=10.0), [0.0, 10.0], rtol=1e-14)


@pytest.mark.parametrize("kwargs,field", [
    (dict(price_per_chip_hour=-1.0), "^price_per_chip_hour"),
    (dict(price_per_chip_hour=2.0, utilization=0.0), "^utilization"),
    (dict(price_per_chip_hour=2.0, utilization=1.5), "^utilization"),
    (dict(price_per_chip_hour=2.0, utilization=-0.2), "^utilization"),
])
def test_usd_per_mtok_bad_inputs(kwargs, field):
    with pytest.raises(SpecError, match=field):
        usd_per_mtok(1.0, **kwargs)


# ---- a deployment's curves -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def llama_econ():
    dep = _dep("llama-3.1-70b")
    return dep, context_economics(dep)


def test_context_curve_monotone(llama_econ):
    """SPEC B8 on Llama-3.1-70B / HGX H100 (smallest plan): with context, KV per sequence and decode and
    prefill cost per token never fall, the memory wall (sequences that fit) never rises."""
    dep, econ = llama_econ
    c = econ.curve
    assert c.context.size >= 10 and np.all(c.fits)
    assert np.all(np.diff(c.kv_per_sequence_bytes) > 0)
    assert np.all(np.diff(c.decode_chip_s_per_token) >= 0)
    assert np.all(np.diff(c.prefill_chip_s_per_token) >= 0)
    assert np.all(np.diff(c.max_sequences) <= 0)
    # KV per sequence is the catalogue model's 327,680 B/token times L (full attention, bf16)
    np.testing.assert_allclose(c.kv_per_sequence_bytes, 327_680 * c.context, rtol=1e-12)
    # decode at long context costs far more than at short (SPEC B8: ∝ L/L_x above L_x)
    assert c.decode_chip_s_per_token[-1] > 100 * c.decode_chip_s_per_token[0]


def test_context_crossover_near_closed_form(llama_econ):
    """SPEC B8 with attention FLOPs (issue 18): Llama-3.1-70B (GQA, 8 KV heads) under tp4 splits its
    matmuls, attention heads and KV heads 4 ways alike, so the one-chip closed form holds exactly:
    L_x = M/(R·kv - a), M = 139,003,428,864 matmul FLOPs per token, R = 989e12/3.35e12 = 295.22,
    kv = 327,680 B, R·kv = 96,738,961.2, a = 80·4·64·128 = 2,621,440 FLOP per cached token (8 FLOP/B):
    139,003,428,864/(96,738,961.2 - 2,621,440) = 1,476.9 tokens, 2.8% beyond the matmul-only 1,436.9."""
    dep, econ = llama_econ
    m = dep.model
    assert dep.plan.tp == 4 and m.matmul_flops_per_token().total == 139_003_428_864
    a = 80 * 4 * 64 * 128
    assert float(m.attention_flops_per_token(1.0)) == a
    closed = float(crossover_context(active_params=139_003_428_864 / 2, flops_per_byte=989e12 / 3.35e12,
                                     kv_bytes_per_token=327_680, attention_flops_per_cached_token=a))
    assert closed == pytest.approx(1_476.9, abs=0.1)
    assert econ.crossover_context == pytest.approx(closed, rel=1e-9)


def test_max_sequences_against_batching(llama_econ):
    """The curve's memory wall equals batching.max_batch at each context (same free HBM per chip)."""
    dep, econ = llama_econ
    for ctx, n in zip(econ.curve.context[::3], econ.curve.max_sequences[::3]):
        assert n == max_batch(dep, context=float(ctx))


def test_kv_sharing_halves_held_not_read(llama_econ):
    """Cross-layer sharing x2 (Brandon et al. 2024; SPEC B7 'divides by the sharing factor'): held KV
    bytes halve, bytes read per step do not, so the crossover (a read-side quantity) is unchanged
    while twice as many sequences fit."""
    dep, econ = llama_econ
    shared = Deployment(model=dep.model.with_kv_sharing(2), system=dep.system, plan=dep.plan)
    e2 = context_economics(shared, contexts=econ.curve.context)
    assert e2.kv_sharing_factor == 2.0 and econ.kv_sharing_factor == 1.0
    assert e2.kv_bytes_per_token == econ.kv_bytes_per_token / 2
    assert e2.kv_read_bytes_per_token == econ.kv_read_bytes_per_token
    np.testing.assert_allclose(e2.curve.kv_per_sequence_bytes, econ.curve.kv_per_sequence_bytes / 2, rtol=1e-12)
    np.testing.assert_allclose(e2.curve.kv_read_per_sequence_bytes, econ.curve.kv_read_per_sequence_bytes, rtol=1e-12)
    assert e2.crossover_context == pytest.approx(econ.crossover_context, rel=1e-6)
    assert np.all(e2.curve.max_sequences >= 2 * econ.curve.max_sequences)


def test_windowed_model_kv_grows_sublinearly():
    """SPEC B7: sliding-window layers hold min(L, window) tokens. Gemma-3-27B (5 local layers of window
    1,024 per global one): below the window KV is linear in L, beyond it KV per token of context
    falls, doubling L less than doubles KV, and the linear closed form over-counts."""
    dep = _dep("gemma-3-27b")
    m = dep.model
    windows = sorted(set(m.layer_windows))
    assert windows[0] == 0 and windows[-1] == 1024
    econ = context_economics(dep, contexts=[256, 512, 1024, 2048, 4096, 8192, 16384, 65536])
    c = econ.curve
    kv, ctx = c.kv_per_sequence_bytes, c.context
    assert kv[1] == pytest.approx(2 * kv[0], rel=1e-12) and kv[2] == pytest.approx(2 * kv[1], rel=1e-12)
    beyond = ctx >= 1024
    per_token = kv[beyond] / ctx[beyond]
    assert np.all(np.diff(per_token) < 0)
    assert np.all(kv[3:6] / kv[2:5] < 2.0)
    linear = kv_per_sequence_bytes(kv_bytes_per_token=econ.kv_bytes_per_token, context=ctx)
    assert np.all(kv[beyond][1:] < linear[beyond][1:])
    assert np.all(np.diff(c.max_sequences) <= 0)


def test_attention_compute_bound_flag():
    """ContextEconomics.attention_compute_bound, per chip under the plan: absorbed MLA decode does
    2·128·(576+512)/(576·2) = 241.8 FLOP per KV byte (DeepSeek-V3, bf16 KV) — above the H200 bf16
    ridge (206) with attention data-parallel (tp1·ep8: each chip computes every head of its
    sequences); under tp2 (the smallest plan) each chip reads the whole latent but computes half the
    heads, 120.9 FLOP/B per chip, below the ridge (before issue 18 the flag ignored the plan and
    said True here); GB200 tp8: 30.2 FLOP/B per chip."""
    per_byte = 2 * 128 * (576 + 512) / (576 * 2)
    h200 = context_economics(_dep("deepseek-v3", "hgx-h200", Plan(tp=1, ep=8)), contexts=[1024, 4096])
    assert h200.attention_flops_per_kv_byte == pytest.approx(per_byte, rel=1e-3)
    assert h200.attention_flops_per_kv_byte_per_chip == pytest.approx(per_byte, rel=1e-3)
    assert h200.attention_compute_bound and math.isinf(h200.crossover_context)
    tp2 = context_economics(_dep("deepseek-v3", "hgx-h200"), contexts=[1024, 4096])
    assert tp2.attention_flops_per_kv_byte_per_chip == pytest.approx(per_byte / 2, rel=1e-3)
    assert not tp2.attention_compute_bound and math.isfinite(tp2.crossover_context)
    gb200 = context_economics(_dep("deepseek-v3", "gb200-nvl72", Plan(tp=8)), contexts=[1024, 4096])
    assert gb200.attention_flops_per_kv_byte_per_chip == pytest.approx(per_byte / 8, rel=1e-3)
    assert not gb200.attention_compute_bound


def test_context_economics_bad_inputs(llama_econ):
    dep, _ = llama_econ
    with pytest.raises(SpecError, match="^contexts"):
        context_economics(dep, contexts=[0, 1024])
    with pytest.raises(SpecError, match="^batch"):
        context_economics(dep, contexts=[1024], batch=0)
    with pytest.raises(InfeasibleError, match="no context in the grid fits"):
        context_economics(dep, contexts=[131_072], batch=100)  # 13.1M KV tokens; memory holds 545,936
    with pytest.raises(SpecError, match="^contexts 1e[+]08: longer than llama-3.1-70b's 131,072-token context"):
        context_economics(dep, contexts=[1e8], batch=1)  # before issue 18: InfeasibleError (memory)


# ---- tier schedules ---------------------------------------------------------------------------------


@st.composite
def cost_grids(draw, *, size=(2, 30)):
    """Increasing contexts and non-decreasing, positive input and output costs ($/Mtok) over them."""
    n = draw(st.integers(*size))
    contexts = np.cumsum(draw(st.lists(st.integers(1, 50_000), min_size=n, max_size=n))).astype(float)
    steps = st.lists(st.floats(0.0, 3.0), min_size=n, max_size=n)
    input_cost = 0.05 + np.cumsum(draw(steps))
    output_cost = 0.2 + np.cumsum(draw(steps))
    return contexts, input_cost, output_cost


def _tier_index(schedule, contexts) -> np.ndarray:
    """Tier i covers (upper[i-1], upper[i]]."""
    return np.searchsorted(np.asarray(schedule.upper_tokens), contexts, side="left")


margins = st.floats(min_value=-0.5, max_value=2.0)


@FAST
@given(grid=cost_grids(), margin=margins, data=st.data())
def test_tiers_for_boundaries_never_lose(grid, margin, data):
    """SPEC B9: for fixed boundaries the schedule keeps price >= (1 + margin) x cost at every grid
    context, and each tier's price is the lowest that does (attained at its costliest context)."""
    contexts, cin, cout = grid
    chosen = data.draw(st.lists(st.sampled_from(list(contexts)), unique=True, max_size=4))
    bounds = sorted(chosen)
    s = tiers_for_boundaries(contexts, cin, cout, boundaries=bounds, margin=margin)
    uppers = np.asarray(s.upper_tokens)
    assert np.all(np.diff(uppers) > 0) and uppers[-1] == contexts[-1] and s.uncovered_from is None
    assert len(uppers) == len([b for b in bounds if b < contexts[-1]]) + 1
    idx = _tier_index(s, contexts)
    p_in, p_out = np.asarray(s.input_usd_per_mtok)[idx], np.asarray(s.output_usd_per_mtok)[idx]
    assert np.all((1 + margin) * cin <= p_in * (1 + 1e-12))
    assert np.all((1 + margin) * cout <= p_out * (1 + 1e-12))
    for t in range(len(uppers)):
        sel = idx == t
        assert np.max((1 + margin) * cin[sel]) == pytest.approx(s.input_usd_per_mtok[t], rel=1e-12)
        assert np.max((1 + margin) * cout[sel]) == pytest.approx(s.output_usd_per_mtok[t], rel=1e-12)


def test_tiers_for_boundaries_hand_case():
    """Costs 1, 2, 3, 5 ($/Mtok in) at 100K, 200K, 300K, 400K tokens, boundary 200K, margin 20%:
    tier 1 (<= 200K) at 1.2 x 2 = 2.4, tier 2 at 1.2 x 5 = 6; multipliers 1 and 2.5. A context that
    does not fit (NaN cost) ends the schedule there."""
    ctx = [100e3, 200e3, 300e3, 400e3]
    s = tiers_for_boundaries(ctx, [1, 2, 3, 5], [4, 4, 6, 8], boundaries=[200e3], margin=0.2)
    assert s.upper_tokens == (200e3, 400e3)
    assert s.input_usd_per_mtok == pytest.approx((2.4, 6.0), rel=1e-12)
    assert s.output_usd_per_mtok == pytest.approx((4.8, 9.6), rel=1e-12)
    assert s.input_multipliers == pytest.approx((1.0, 2.5), rel=1e-12)
    cut = tiers_for_boundaries(ctx, [1, 2, 3, math.nan], [4, 4, 6, math.nan], boundaries=[200e3], margin=0.0)
    assert cut.upper_tokens == (200e3, 300e3) and cut.uncovered_from == 400e3


@FAST
@given(grid=cost_grids(), margin=margins, u_in=st.floats(0.0, 1.0), u_out=st.floats(0.0, 1.0),
       in_step=st.floats(1.1, 4.0), out_step=st.floats(1.05, 3.0))
def test_tiers_for_steps_never_lose(grid, margin, u_in, u_out, in_step, out_step):
    """SPEC B9 with Gemini-style multipliers: tier k charges base x step^k. On every covered context
    the price covers (1 + margin) x cost; multipliers are powers of the steps with one exponent
    shared by input and output, each the smallest that covers the tier's first context; boundaries
    increase, and each tier runs as long as its prices still cover."""
    contexts, cin, cout = grid
    need_in, need_out = (1 + margin) * cin, (1 + margin) * cout
    base_in, base_out = need_in[0] * (1 + u_in), need_out[0] * (1 + u_out)
    s = tiers_for_steps(contexts, cin, cout, base_input=base_in, base_output=base_out, input_step=in_step,
                        output_step=out_step, margin=margin)
    uppers = np.asarray(s.upper_tokens)
    assert uppers.size >= 1 and np.all(np.diff(uppers) > 0)
    ks = np.log(np.asarray(s.input_multipliers)) / math.log(in_step)
    k_out = np.log(np.asarray(s.output_multipliers)) / math.log(out_step)
    np.testing.assert_allclose(ks, np.round(ks), atol=1e-9)
    np.testing.assert_allclose(k_out, ks, atol=1e-9)
    ks = np.round(ks).astype(int)
    assert ks[0] == 0 and np.all(np.diff(ks) >= 1)
    covered = contexts <= uppers[-1]
    idx = _tier_index(s, contexts[covered])
    p_in, p_out = np.asarray(s.input_usd_per_mtok)[idx], np.asarray(s.output_usd_per_mtok)[idx]
    assert np.all(need_in[covered] <= p_in) and np.all(need_out[covered] <= p_out)
    positions = np.searchsorted(contexts, uppers)          # grid index of each tier's last context
    for t, (k, last) in enumerate(zip(ks, positions)):
        first = 0 if t == 0 else positions[t - 1] + 1
        if k > 0:   # the power just below would not cover the tier's first context
            assert need_in[first] > base_in * in_step ** (k - 1) or need_out[first] > base_out * out_step ** (k - 1)
        if last + 1 < contexts.size:   # the next context is beyond this tier's prices
            assert need_in[last + 1] > s.input_usd_per_mtok[t] or need_out[last + 1] > s.output_usd_per_mtok[t]
    if s.uncovered_from is None:
        assert uppers[-1] == contexts[-1]
    else:
        assert s.uncovered_from == contexts[np.searchsorted(contexts, uppers[-1]) + 1]


def test_tiers_for_steps_hand_case():
    """Base $1 in / $4 out, input x2 and output x1 per tier, no margin; input costs 0.5, 1, 1.5, 3,
    7 at 1K..5K tokens: tier 0 ($1) to 2K, tier 1 ($2) to 3K, tier 2 ($4) to 4K; 7 > 4 skips $4 ->
    tier 3 ($8) to 5K. Output costs stay under $4."""
    s = tiers_for_steps([1e3, 2e3, 3e3, 4e3, 5e3], [0.5, 1, 1.5, 3, 7], [1, 1, 2, 2, 4], base_input=1.0,
                        base_output=4.0, input_step=2.0, output_step=1.0)
    assert s.upper_tokens == (2e3, 3e3, 4e3, 5e3)
    assert s.input_usd_per_mtok == (1.0, 2.0, 4.0, 8.0)
    assert s.output_usd_per_mtok == (4.0, 4.0, 4.0, 4.0)
    assert s.uncovered_from is None
    capped = tiers_for_steps([1e3, 2e3, 3e3, 4e3, 5e3], [0.5, 1, 1.5, 3, 7], [1, 1, 2, 2, 4], base_input=1.0,
                             base_output=4.0, input_step=2.0, output_step=1.0, max_tiers=2)
    assert capped.upper_tokens == (2e3, 3e3) and capped.uncovered_from == 4e3


@pytest.mark.parametrize("call,error,field", [
    (lambda: tiers_for_boundaries([1e3, 2e3, 3e3], [1, 2, 3], [1, 2, 3], boundaries=[2e3, 1e3], margin=0),
     SpecError, "^boundary"),
    (lambda: tiers_for_boundaries([1e3, 2e3, 3e3], [1, 2, 3], [1, 2, 3], boundaries=[2e3, 2e3], margin=0),
     SpecError, "^boundary"),
    (lambda: tiers_for_boundaries([1e3, 2e3, 3e3], [1, 2, 3], [1, 2, 3], boundaries=[1.2e3, 1.5e3], margin=0),
     SpecError, "^boundary: no grid context"),
    (lambda: tiers_for_boundaries([1e3, 2e3, 3e3], [1, -2, 3], [1, 2, 3], boundaries=[2e3], margin=0),
     SpecError, "costs"),
    (lambda: tiers_for_boundaries([1e3, 2e3, 3e3], [1, 2], [1, 2, 3], boundaries=[2e3], margin=0),
     SpecError, "costs"),
    (lambda: tiers_for_boundaries([2e3, 1e3, 3e3], [1, 2, 3], [1, 2, 3], boundaries=[2e3], margin=0),
     SpecError, "contexts"),
    (lambda: tiers_for_boundaries([1e3, 2e3, 3e3], [1, 2, 3], [1, 2, 3], boundaries=[2e3], margin=-1.0),
     SpecError, "^margin"),
    (lambda: tiers_for_boundaries([1e3, 2e3], [math.nan] * 2, [math.nan] * 2, boundaries=[], margin=0),
     InfeasibleError, "nothing fits"),
    (lambda: tiers_for_steps([1e3, 2e3], [1, 2], [1, 2], base_input=0.9, base_output=5.0),
     InfeasibleError, "base price"),
    (lambda: tiers_for_steps([1e3, 2e3], [1, 2], [1, 2], base_input=5.0, base_output=1.1, margin=0.2),
     InfeasibleError, "base price"),
    (lambda: tiers_for_steps([1e3, 2e3], [1, 2], [1, 2], base_input=0.0, base_output=5.0),
     SpecError, "^base_input"),
    (lambda: tiers_for_steps([1e3, 2e3], [1, 2], [1, 2], base_input=5.0, base_output=5.0, input_step=0.5),
     SpecError, "^input_step"),
    (lambda: tiers_for_steps([1e3, 2e3], [1, 2], [1, 2], base_input=5.0, base_output=5.0, input_step=1.0,
                             output_step=1.0), SpecError, "^input_step/output_step"),
    (lambda: tiers_for_steps([1e3, 2e3], [1, 2], [1, 2], base_input=5.0, base_output=5.0, margin=-2),
     SpecError, "^margin"),
])
def test_tier_schedule_bad_inputs(call, error, field):
    with pytest.raises(error, match=field):
        call()


def test_check_prices_losing_range_hand_case():
    """A flat $10 output price against output costs 5, 8, 12, 15, 20 at 1K..16K tokens: output loses
    from 4K (the first cost above 10) to the end; input (cost 1..3 under $2..) never loses where the
    price covers it. With a long-context tier above 8K at $25 out, the loss is confined to 4K-8K
    (8K itself is not 'above' 8K, so the base price applies there)."""
    ctx = [1e3, 2e3, 4e3, 8e3, 16e3]
    cin, cout = [1.0, 1.5, 2.0, 2.5, 3.0], [5.0, 8.0, 12.0, 15.0, 20.0]
    flat = PriceSheet(provider="case", model="flat", input_usd_per_mtok=4.0, output_usd_per_mtok=10.0)
    pc = check_prices(ctx, cin, cout, flat)
    assert pc.losing_contexts() == {"input": [], "output": [(4e3, 16e3)]}
    np.testing.assert_allclose(pc.output_margin, [0.5, 0.2, -0.2, -0.5, -1.0], rtol=1e-12)
    np.testing.assert_allclose(pc.input_margin, [0.75, 0.625, 0.5, 0.375, 0.25], rtol=1e-12)
    tiered = PriceSheet(provider="case", model="tiered", input_usd_per_mtok=4.0, output_usd_per_mtok=10.0,
                        long_context=(ContextTier(above_tokens=8000, input_usd_per_mtok=8.0,
                                                  output_usd_per_mtok=25.0),))
    pc2 = check_prices(ctx, cin, cout, tiered)
    assert pc2.losing_contexts()["output"] == [(4e3, 8e3)]
    np.testing.assert_array_equal(pc2.output_price, [10, 10, 10, 10, 25])
    # a context without a cost (does not fit) counts as losing, and splits ranges
    pc3 = check_prices(ctx, [1, 1, math.nan, 1, 1], cout, tiered)
    assert pc3.losing_contexts()["input"] == [(4e3, 4e3)]


# ---- KV cache placement (SPEC C12) ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def llama_tp4():
    """Llama-3.1-70B on 4 of the 8 H100s: its HBM tier is half the node's (320 GB, 13.4 TB/s), priced
    at 4 chips x $2 = $8/hour; host DDR5 (2 TB, 614.4 GB/s) at $1.50/hour."""
    dep = _dep("llama-3.1-70b", plan=Plan(tp=4))
    return dep, priced_tiers(dep, price_per_chip_hour=2.0, tier_prices={"host DDR5": 1.5})


def test_priced_tiers_hand_case(llama_tp4):
    dep, tiers = llama_tp4
    hbm, ddr, nvme = tiers
    # 4 x the 81,559 MiB an H100 exposes
    assert (hbm.kind, hbm.capacity_bytes, hbm.bandwidth_bytes_per_s, hbm.usd_per_hour) == (
        "hbm", 4 * 81_559 * 2**20, 13.4e12, 8.0)
    assert (ddr.name, ddr.usd_per_hour, ddr.capacity_bytes) == ("host DDR5", 1.5, 2e12)
    assert nvme.usd_per_hour is None and nvme.drain_s is None
    unpriced = priced_tiers(dep, price_per_chip_hour=None)
    assert all(t.usd_per_hour is None for t in unpriced)


def test_hold_equals_retrieve_at_drain_time(llama_tp4):
    """Two sequences of 1,000 tokens at 327,680 B/token: 655.36 MB. HBM (C = 4 x 81,559 MiB): hold for
    C/13.4e12 = 25.53 ms costs $8 x T/3600 x 655.36e6/C = $8 x (655.36e6/13.4e12)/3600 = $1.0868e-7, the cost
    of reading it back; DDR: hold 3.255 s = $1.5 x (655.36e6/614.4e9)/3600 = $4.4444e-7 = read-back."""
    dep, tiers = llama_tp4
    hand = {"HBM": 8.0 * 655.36e6 / 13.4e12 / 3600, "host DDR5": 1.5 * 655.36e6 / 614.4e9 / 3600}
    drains = {"HBM": 4 * 81_559 * 2**20 / 13.4e12, "host DDR5": 2e12 / 614.4e9}
    for name, expected in hand.items():
        cp = cache_placement(dep, tiers, sequences=2, context=1000, hold_s=drains[name], price_per_chip_hour=2.0)
        assert cp.bytes_total == 655.36e6
        (opt,) = [o for o in cp.options if o.tier == name]
        assert opt.hold_usd == pytest.approx(expected, rel=1e-12)
        assert opt.retrieve_usd == pytest.approx(expected, rel=1e-12)
        # slightly shorter holds cost less than reading back
        short = cache_placement(dep, tiers, sequences=2, context=1000, hold_s=0.9 * drains[name],
                                price_per_chip_hour=2.0)
        (s_opt,) = [o for o in short.options if o.tier == name]
        assert s_opt.hold_usd < s_opt.retrieve_usd


# Gray's break-even HBM -> host DDR5 here: DDR5's $ per byte read / HBM's $ per byte-second held =
# (1.5/3600/614.4e9) / (8/3600/C), C = 4 x 81,559 MiB = 342.083e9 B: 1.5 x 342.083239936 / (614.4 x 8) = 0.10439552 s.
@pytest.mark.parametrize("hold_s,sequences,expected", [
    (300.0, 2, "host DDR5"),     # 300 s > 0.104 s; NVMe has no price or bandwidth
    (1.0, 2, "host DDR5"),       # 1 s > 0.104 s (the old drain rule said HBM: 25.5 ms <= 1 s < 3.26 s)
    (1e-3, 2, "HBM"),            # re-read within the break-even: keep it in HBM (the old rule said none)
    (0.10439552, 2, "HBM"),      # at the break-even exactly, the faster tier
    (1.0, 1000, None),           # 327.7 GB does not fit the 201 GB of HBM the weights leave: one tier, no rule
    (300.0, 1000, None),
])
def test_five_minute_tier(llama_tp4, hold_s, sequences, expected):
    dep, tiers = llama_tp4
    cp = cache_placement(dep, tiers, sequences=sequences, context=1000, hold_s=hold_s, price_per_chip_hour=2.0)
    assert cp.five_minute_tier == expected
    if expected is not None:
        (even,) = cp.break_evens
        assert (even.faster, even.slower, even.hold_s) == ("HBM", "host DDR5", pytest.approx(0.10439552, rel=1e-12))
        assert {o.tier: o.consistent for o in cp.options} == {
            "HBM": expected == "HBM", "host DDR5": expected == "host DDR5", "local NVMe data cache": None}


def test_five_minute_tier_gray_ladder(llama_tp4):
    """A priced 10 TB flash tier at 100 GB/s ($0.30/hour; drains in 100 s) below DDR5 ($1.50/hour): the
    break-even DDR5 -> flash is flash's $ per byte read / DDR5's $ per byte-second = (0.3/3600/100e9) /
    (1.5/3600/2e12) = 4 s. Re-read every 60 s the cache belongs in flash (the old rule: DDR5, as flash's
    100 s drain exceeds 60 s), every 2 s in DDR5, every 50 ms in HBM."""
    dep, tiers = llama_tp4
    flash = MemoryTier(name="flash (test)", kind="flash", capacity_bytes=10e12, bandwidth_bytes_per_s=100e9,
                       usd_per_hour=0.3)
    assert flash.drain_s == 100.0
    all_tiers = (*tiers, flash)
    picks = {hold: cache_placement(dep, all_tiers, sequences=2, context=1000, hold_s=hold,
                                   price_per_chip_hour=2.0).five_minute_tier for hold in (300.0, 60.0, 2.0, 0.05)}
    assert picks == {300.0: "flash (test)", 60.0: "flash (test)", 2.0: "host DDR5", 0.05: "HBM"}
    cp = cache_placement(dep, all_tiers, sequences=2, context=1000, hold_s=60.0, price_per_chip_hour=2.0)
    assert [(e.faster, e.slower) for e in cp.break_evens] == [("HBM", "host DDR5"), ("host DDR5", "flash (test)")]
    assert cp.break_evens[1].hold_s == pytest.approx(4.0, rel=1e-12)
    assert cp.ladder.skipped == (("local NVMe data cache", "no price"),)


def test_cheapest_tier(llama_tp4):
    """Unpriced tiers cannot win: with none priced the answer is 'recompute'. Priced, 5 minutes in DDR
    ($1.5 x 300/3600 x 655.36e6/2e12 = $4.1e-5) beats re-running 2,000 prompt tokens of prefill
    (~$1.6e-4 at $2/chip-hour) and HBM ($8 x 300/3600 x 655.36e6/(4 x 81,559 MiB) = $1.28e-3)."""
    dep, tiers = llama_tp4
    unpriced = priced_tiers(dep, price_per_chip_hour=None)
    cp = cache_placement(dep, unpriced, sequences=2, context=1000, hold_s=300.0, price_per_chip_hour=2.0)
    assert all(o.total_usd is None for o in cp.options)
    assert cp.recompute_usd > 0 and cp.cheapest == "recompute"
    priced = cache_placement(dep, tiers, sequences=2, context=1000, hold_s=300.0, price_per_chip_hour=2.0)
    (ddr,) = [o for o in priced.options if o.tier == "host DDR5"]
    assert ddr.hold_usd == pytest.approx(1.5 * 300 / 3600 * 655.36e6 / 2e12, rel=1e-12)
    assert priced.cheapest == "host DDR5"
    assert priced.recompute_usd == cp.recompute_usd
    # recompute cost is prefill device time: chips x time x price
    assert priced.recompute_usd == pytest.approx(priced.recompute_s * dep.plan.chips * 2.0 / 3600, rel=1e-12)


def test_priced_tiers_bad_inputs(llama_tp4):
    dep, _ = llama_tp4
    with pytest.raises(SpecError, match="no tier named 'host DDR4'.*did you mean 'host DDR5'"):
        priced_tiers(dep, price_per_chip_hour=2.0, tier_prices={"host DDR4": 1.0})
    with pytest.raises(SpecError, match="^tier_price host DDR5"):
        priced_tiers(dep, price_per_chip_hour=2.0, tier_prices={"host DDR5": -1.0})


@pytest.mark.parametrize("kwargs,field", [
    (dict(sequences=0), "^sequences"), (dict(context=0.5), "^context"), (dict(hold_s=-1.0), "^hold"),
    (dict(price_per_chip_hour=-2.0), "^price_per_chip_hour"), (dict(hold_s=math.inf), "^hold"),
])
def test_cache_placement_bad_inputs(llama_tp4, kwargs, field):
    dep, tiers = llama_tp4
    args = dict(sequences=2, context=1000, hold_s=300.0, price_per_chip_hour=2.0) | kwargs
    with pytest.raises(SpecError, match=field):
        cache_placement(dep, tiers, **args)


def test_cache_placement_rejects_prompt_that_does_not_fit(llama_tp4):
    dep, tiers = llama_tp4
    with pytest.raises(SpecError, match="does not fit"):
        cache_placement(dep, tiers, sequences=1, context=5e6, hold_s=1.0, price_per_chip_hour=2.0)

