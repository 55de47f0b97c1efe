"""Prices against costs and prices read backwards (SPEC C10-C13): ``llmecon.econ.pricing``.

Inverse properties (hypothesis) check that each backward reading undoes its forward model: the KV
size read off a price step gives back the crossover it came from, every operating point read off
an output/input ratio has that roofline ratio, and a fast-mode premium read as batches gives back
the premium under the max-roofline model. Catalogue cases reproduce the lecture's numbers from
the stored price sheets; hand cases check dollars per million tokens for a deployment.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from llmecon.spec.deployment import Deployment
from llmecon.econ.batching import crossover_context_lecture, max_batch, max_roofline_fast_mode
from llmecon.catalog.hardware import get_system
from llmecon.catalog.models import get_model
from llmecon.catalog.prices import get_price_sheet
from llmecon.econ.context import usd_per_mtok
from llmecon.errors import InfeasibleError, SpecError
from llmecon.spec.hardware import MemoryTier
from llmecon.econ.kvcache import priced_tiers
from llmecon.spec.plan import Plan
from llmecon.spec.prices import CacheWrite, ContextTier, PriceSheet
from llmecon.econ.pricing import (break_even_hold_s, cache_hold_price_per_hour, cache_tier_fit,
                             decode_prefill_cost_ratio,
                             equivalent_kv_layers, five_minute_tiers, infer_fast_mode, infer_kv_from_price_step,
                             tier_break_evens,
                             kv_bytes_from_crossover, operating_point, serving_cost)
from llmecon.step.inference import decode_of

FAST = settings(max_examples=80, deadline=None)


# ---- inverses (hypothesis) ----------------------------------------------------------------------------


@FAST
@given(n=st.floats(1e8, 1e13), r=st.floats(10.0, 5000.0), kv=st.floats(1.0, 1e7))
def test_kv_from_crossover_inverts_crossover(n, r, kv):
    """SPEC C10 reads SPEC B8 backwards: kv = 2·N/(R·L_x) undoes L_x = 2·N/(R·kv)."""
    lx = crossover_context_lecture(active_params=n, flops_per_byte=r, kv_bytes_per_token=kv)
    assert float(kv_bytes_from_crossover(active_params=n, crossover_context=lx, flops_per_byte=r)) == \
        pytest.approx(kv, rel=1e-9)


@FAST
@given(ratio=st.floats(1.0, 50.0), b=st.floats(1e-3, 1e3))
def test_operating_point_lies_on_the_ratio_curve(ratio, b):
    """SPEC C11: every (B/B*, L/L_x) that operating_point(r) returns has roofline ratio r; below
    B/B* = 1/r there is none (NaN). Its two named points are on the curve too."""
    assume(abs(b * ratio - 1.0) > 1e-9)
    op = operating_point(ratio)
    lx = float(op.context_over_crossover(b))
    if b * ratio > 1.0:
        assert lx >= 0
        assert float(decode_prefill_cost_ratio(batch_over_balance=b, context_over_crossover=lx)) == \
            pytest.approx(ratio, rel=1e-9)
    else:
        assert math.isnan(lx)
    assert float(decode_prefill_cost_ratio(batch_over_balance=op.batch_over_balance_at_short_context,
                                           context_over_crossover=0.0)) == pytest.approx(ratio, rel=1e-12)
    assert float(decode_prefill_cost_ratio(batch_over_balance=1.0,
                                           context_over_crossover=op.context_over_crossover_at_balance)) == \
        pytest.approx(ratio, rel=1e-12)


def test_operating_point_hand_cases():
    """SPEC C11: r = 5 at B = B*/5 (short context) or L = 4·L_x (at balance); r = 1 at balance; at
    B = B*/2, L/L_x = 5 - 2 = 3."""
    op = operating_point(5.0)
    assert op.batch_over_balance_at_short_context == 0.2
    assert op.context_over_crossover_at_balance == 4.0
    assert float(op.context_over_crossover(0.5)) == 3.0
    assert operating_point(1.0).context_over_crossover_at_balance == 0.0


@FAST
@given(price=st.floats(1.01, 20.0), speedup=st.floats(1.01, 10.0))
def test_infer_fast_mode_round_trips(price, speedup):
    """SPEC A5/C13: the batches infer_fast_mode reads off a premium (regular at speedup·B* >= B*, fast at
    B*/price <= B*) give back that speed-up and price under t = t_w·max(1, B/B*); the batch ratio is
    price x speed-up; the additive model's load x satisfies 1 + x = s·(1 + x/r)."""
    inf = infer_fast_mode(price_ratio=price, speedup=speedup)
    assert inf.regular_over_balance >= 1.0 and inf.fast_over_balance <= 1.0
    s, c = max_roofline_fast_mode(regular_batch_over_balance=inf.regular_over_balance,
                                  fast_batch_over_balance=inf.fast_over_balance)
    assert float(s) == pytest.approx(speedup, rel=1e-12)
    assert float(c) == pytest.approx(price, rel=1e-12)
    assert inf.max_model_cost_ratio == pytest.approx(price, rel=1e-12)
    assert inf.batch_ratio == pytest.approx(price * speedup, rel=1e-12)
    assert inf.regular_over_balance / inf.fast_over_balance == pytest.approx(inf.batch_ratio, rel=1e-12)
    x, r = inf.additive_load, inf.batch_ratio
    assert x > 0 and 1 + x == pytest.approx(speedup * (1 + x / r), rel=1e-9)


def test_infer_fast_mode_catalogue_opus_4_6():
    """SPEC A5: Anthropic's fast mode on Opus 4.6 ($30/$150 vs $5/$25, up to 2.5x): price 6x, batch
    ratio 15, regular batch 2.5·B*, fast B*/6, additive load 1.8 (lecture_cases fast_mode_*)."""
    sheet = get_price_sheet("anthropic", "claude-opus-4.6")
    fast = sheet.premium("fast")
    inf = infer_fast_mode(price_ratio=fast.output_usd_per_mtok / sheet.output_usd_per_mtok, speedup=fast.speedup)
    assert (inf.price_ratio, inf.speedup) == (6.0, 2.5)
    assert inf.batch_ratio == pytest.approx(15.0, rel=1e-12)
    assert inf.fast_over_balance == pytest.approx(1 / 6, rel=1e-12)
    assert inf.additive_load == pytest.approx(1.8, rel=1e-12)


# ---- side channels on catalogue sheets -----------------------------------------------------------------


def test_infer_kv_from_gemini_3_pro_price_step():
    """SPEC C10 on the catalogue's Gemini 3 Pro sheet (step above 200K: input x2, output x1.5): with the
    lecture's N_active = 100B and 300 multiplies/B = 600 FLOP/B, kv = 2·1e11/(600·2e5) = 1,666.7 B;
    over N in {50, 100, 200}B and R in {295.2, 600, 1000}: low 2·5e10/(1000·2e5) = 500 B,
    high 2·2e11/(295.2·2e5) = 6,775 B (the grid's opposite corners)."""
    sheet = get_price_sheet("google", "gemini-3-pro-preview")
    kv = infer_kv_from_price_step(sheet, active_params=[50e9, 100e9, 200e9],
                                  flops_per_byte=[("H100 bf16", 295.2), ("lecture fp8", 600.0), ("fp8 1000", 1000.0)])
    assert kv.crossover_context == 200_000
    assert (kv.input_uplift, kv.output_uplift) == (2.0, 1.5)
    assert kv.kv_bytes_per_token.shape == (3, 3)
    assert kv.kv_bytes_per_token[1, 1] == pytest.approx(1666.67, rel=1e-5)
    assert kv.low == pytest.approx(500.0, rel=1e-12) and kv.low == kv.kv_bytes_per_token[0, 2]
    assert kv.high == pytest.approx(6775.07, rel=1e-5) and kv.high == kv.kv_bytes_per_token[2, 0]
    assert kv.flops_per_byte_labels == ("H100 bf16", "lecture fp8", "fp8 1000")
    assert any("200,000" in a for a in kv.assumptions)
    # ~2 KB is about one 8 x 128 fp8 KV layer (SPEC C10, Character.AI): 1,666.7/2,048 = 0.81
    assert float(equivalent_kv_layers(kv.kv_bytes_per_token[1, 1])) == pytest.approx(0.8138, rel=1e-3)
    assert float(equivalent_kv_layers(249_856, bytes_per_value=2)) == 61.0


@pytest.fixture(scope="module")
def llama_tp8():
    dep = Deployment(model=get_model("llama-3.1-70b"), system=get_system("hgx-h100"), plan=Plan(tp=8))
    return dep


def test_cache_tier_fit_opus_4_6_on_hgx_h100():
    """SPEC C12 on the catalogue's Opus 4.6 sheet (5-min write $6.25, 1-h $10, base $5) and DGX H100's
    tiers: holding costs 1.25/(5/60) = 15 and 5/1 = 5 $/Mtok-hour. No tier has a price, so Gray's
    five-minute rule has nothing to compare: every tier's ``consistent`` is None and no hold gets a
    tier (the old drain rule put both holds in DDR5, ignoring prices)."""
    sheet = get_price_sheet("anthropic", "claude-opus-4.6")
    fits = cache_tier_fit(sheet, get_system("hgx-h100").memory_tiers)
    assert len(fits) == 6
    by = {(f.hold_s, f.tier): f for f in fits}
    for tier in ("HBM", "host DDR5", "local NVMe data cache"):
        assert by[(300.0, tier)].hold_price_usd_per_mtok_hour == pytest.approx(15.0, rel=1e-12)
        assert by[(3600.0, tier)].hold_price_usd_per_mtok_hour == pytest.approx(5.0, rel=1e-12)
    for hold in (300.0, 3600.0):
        for tier in ("HBM", "host DDR5", "local NVMe data cache"):
            assert by[(hold, tier)].consistent is None
        assert by[(hold, "HBM")].covers_cost is None          # no KV size, no tier price
    assert five_minute_tiers(fits) == {300.0: None, 3600.0: None}


def _writes(*holds):
    return tuple(CacheWrite(hold_s=h, usd_per_mtok=2.0) for h in holds)


def _ladder_tiers():
    """Three priced tiers, hand-checkable: DRAM 1 TB at 100 GB/s for $3.60/h (h = 1e-15 $/B-s, drain
    10 s); flash 10 TB at 10 GB/s for $0.36/h (h = 1e-17, drain 1,000 s, $1e-14 per byte read); disk
    20 TB at 0.2 GB/s for $0.072/h (h = 1e-18, drain 1e5 s, $1e-13 per byte read). Gray's break-evens:
    DRAM -> flash 1e-14/1e-15 = 10 s; flash -> disk 1e-13/1e-17 = 1e4 s (2.78 h)."""
    return (MemoryTier(name="disk", kind="hdd", capacity_bytes=20e12, bandwidth_bytes_per_s=0.2e9, usd_per_hour=0.072),
            MemoryTier(name="dram", kind="host_dram", capacity_bytes=1e12, bandwidth_bytes_per_s=100e9,
                       usd_per_hour=3.6),
            MemoryTier(name="flash", kind="flash", capacity_bytes=10e12, bandwidth_bytes_per_s=10e9,
                       usd_per_hour=0.36))


def test_five_minute_tiers_by_gray_break_even():
    """With ``_ladder_tiers`` (listed in any order; the ladder ranks them by price per byte): a 5 s hold
    stays in DRAM, 5 minutes and 1 hour go to flash (<= 1e4 s), 10 hours to disk. The old drain rule
    (slowest tier draining within the hold) said None, DRAM, flash, flash."""
    sheet = PriceSheet(provider="case", model="m", input_usd_per_mtok=1.0, output_usd_per_mtok=5.0,
                       cache_writes=_writes(5.0, 300.0, 3600.0, 36000.0))
    fits = cache_tier_fit(sheet, _ladder_tiers())
    assert five_minute_tiers(fits) == {5.0: "dram", 300.0: "flash", 3600.0: "flash", 36000.0: "disk"}
    evens = tier_break_evens(_ladder_tiers())
    assert [(e.faster, e.slower) for e in evens] == [("dram", "flash"), ("flash", "disk")]
    assert evens[0].hold_s == pytest.approx(10.0, rel=1e-9) and evens[1].hold_s == pytest.approx(1e4, rel=1e-9)
    by = {(f.hold_s, f.tier): f.consistent for f in fits}
    assert (by[(300.0, "flash")], by[(300.0, "dram")], by[(300.0, "disk")]) == (True, False, False)


def test_cache_tier_fit_covers_cost_hand_case(llama_tp8):
    """Per byte-hour at 327,680 B/token (Llama-3.1-70B bf16): the 5-min surcharge is 15/(1e6·327,680) =
    4.578e-11 $/B-h, the 1-h one 5/3.2768e11 = 1.526e-11. HBM of 8 H100s at $2/chip-hour costs
    16/(8 x 81,559 MiB) = 2.339e-11 $/B-h: the 5-minute price pays for HBM, the 1-hour one does not; DDR5 at
    $1.50/hour (7.5e-13 $/B-h) is paid for by both."""
    tiers = priced_tiers(llama_tp8, price_per_chip_hour=2.0, tier_prices={"host DDR5": 1.5})
    sheet = get_price_sheet("anthropic", "claude-opus-4.6")
    fits = {(f.hold_s, f.tier): f for f in cache_tier_fit(sheet, tiers, kv_bytes_per_token=327_680)}
    assert fits[(300.0, "HBM")].price_usd_per_byte_hour == pytest.approx(15 / 327_680e6, rel=1e-12)
    assert fits[(300.0, "HBM")].tier_cost_usd_per_byte_hour == pytest.approx(16 / (8 * 81_559 * 2**20), rel=1e-12)
    assert fits[(300.0, "HBM")].covers_cost is True
    assert fits[(3600.0, "HBM")].covers_cost is False
    assert fits[(300.0, "host DDR5")].tier_cost_usd_per_byte_hour == pytest.approx(1.5 / 2e12, rel=1e-12)
    assert fits[(300.0, "host DDR5")].covers_cost is True and fits[(3600.0, "host DDR5")].covers_cost is True
    assert fits[(300.0, "local NVMe data cache")].covers_cost is None


def test_break_even_of_a_tier_against_itself_is_its_drain_time():
    """SPEC C12: a tier against itself breaks even at C/BW whatever its price; DGX H100 DDR5 2 TB /
    614.4 GB/s = 3.255 s; unknown bandwidth has no break-even."""
    ddr, nvme = get_system("hgx-h100").tiers
    assert break_even_hold_s(ddr) == pytest.approx(3.2552, rel=1e-4)
    with pytest.raises(SpecError, match="bandwidth unknown"):
        break_even_hold_s(nvme)


def test_break_even_between_two_tiers_hand_case():
    """Gray: T* = slower's $ per byte read / faster's $ per byte-second held. DRAM -> flash of
    ``_ladder_tiers``: (0.36/3600/10e9) / (3.6/3600/1e12) = 10 s — not flash's drain time (1,000 s),
    which the old rule returned for any pair. Unpriced tiers have no break-even."""
    disk, dram, flash = _ladder_tiers()
    assert break_even_hold_s(dram, flash) == pytest.approx(10.0, rel=1e-9)
    assert break_even_hold_s(flash, disk) == pytest.approx(1e4, rel=1e-9)
    with pytest.raises(SpecError, match="no price"):
        break_even_hold_s(get_system("hgx-h100").tiers[0], flash)


# ---- serving cost ------------------------------------------------------------------------------------------


def test_serving_cost_output_hand_check(llama_tp8):
    """Output $/Mtok = decode step time x chips / batch at $2/chip-hour: batch 32 at 4,096 tokens, the
    step from the deployment's own decode (an independent call), 8 chips."""
    sc = serving_cost(llama_tp8, context=4096, price_per_chip_hour=2.0, batch=32)
    step = float(decode_of(llama_tp8, batch=32, context=4096).step_s)
    assert (sc.batch, sc.chips) == (32.0, 8)
    assert sc.output_usd_per_mtok == pytest.approx(step * 8 / 32 * 2.0 / 3600 * 1e6, rel=1e-12)
    # input tokens are prefilled compute-bound: at least 2·N_active FLOPs per token at the bf16 peak,
    # plus causal attention (a few % at 4K)
    m, chip = llama_tp8.model, llama_tp8.system.accelerator
    floor = float(usd_per_mtok(2 * m.params.active / chip.peak("bf16"), price_per_chip_hour=2.0))
    assert floor <= sc.input_usd_per_mtok <= 1.1 * floor
    # output at batch 32 is memory-bound: dearer than input
    assert sc.output_usd_per_mtok > sc.input_usd_per_mtok


def test_serving_cost_default_batch_is_memory_limit(llama_tp8):
    sc = serving_cost(llama_tp8, context=32_768, price_per_chip_hour=2.0)
    assert sc.batch == max_batch(llama_tp8, context=32_768)
    small = serving_cost(llama_tp8, context=32_768, price_per_chip_hour=2.0, batch=1)
    assert small.output_usd_per_mtok > sc.output_usd_per_mtok


def test_serving_cost_utilization_doubles(llama_tp8):
    """Chips paid whether busy or not: at 50% utilisation every token costs twice as much."""
    full = serving_cost(llama_tp8, context=4096, price_per_chip_hour=2.0, batch=32)
    half = serving_cost(llama_tp8, context=4096, price_per_chip_hour=2.0, batch=32, utilization=0.5)
    assert half.output_usd_per_mtok == pytest.approx(2 * full.output_usd_per_mtok, rel=1e-12)
    assert half.input_usd_per_mtok == pytest.approx(2 * full.input_usd_per_mtok, rel=1e-12)
    dearer = serving_cost(llama_tp8, context=4096, price_per_chip_hour=3.0, batch=32)
    assert dearer.output_usd_per_mtok == pytest.approx(1.5 * full.output_usd_per_mtok, rel=1e-12)


def test_margin_against_sign(llama_tp8):
    """(price - cost)/price: a sheet at twice the cost earns 50%, at half the cost loses 100%; above a
    long-context boundary the tier's price applies (4x cost: 75%)."""
    sc = serving_cost(llama_tp8, context=4096, price_per_chip_hour=2.0, batch=32)
    ci, co = sc.input_usd_per_mtok, sc.output_usd_per_mtok
    rich = PriceSheet(provider="case", model="m", input_usd_per_mtok=2 * ci, output_usd_per_mtok=2 * co)
    poor = PriceSheet(provider="case", model="m", input_usd_per_mtok=ci / 2, output_usd_per_mtok=co / 2)
    assert sc.margin_against(rich) == pytest.approx((0.5, 0.5), rel=1e-12)
    assert sc.margin_against(poor) == pytest.approx((-1.0, -1.0), rel=1e-12)
    tiered = PriceSheet(provider="case", model="m", input_usd_per_mtok=ci / 2, output_usd_per_mtok=co / 2,
                        long_context=(ContextTier(above_tokens=4000, input_usd_per_mtok=4 * ci,
                                                  output_usd_per_mtok=4 * co),))
    assert sc.margin_against(tiered) == pytest.approx((0.75, 0.75), rel=1e-12)


# ---- bad inputs ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("ratio,match", [(0.5, "< 1"), (0.0, "price ratio"), (-2.0, "price ratio"),
                                         (math.nan, "price ratio"), (math.inf, "price ratio")])
def test_operating_point_bad_ratio(ratio, match):
    with pytest.raises(SpecError, match=match):
        operating_point(ratio)


@pytest.mark.parametrize("kwargs,match", [
    (dict(base_input=5.0, write=4.0, hold_s=300.0), "below the base input price"),
    (dict(base_input=5.0, write=-1.0, hold_s=300.0), "cache write price"),
    (dict(base_input=-5.0, write=6.0, hold_s=300.0), "base input price"),
    (dict(base_input=5.0, write=6.0, hold_s=0.0), "hold time"),
])
def test_cache_hold_price_bad_inputs(kwargs, match):
    with pytest.raises(SpecError, match=match):
        cache_hold_price_per_hour(**kwargs)


def test_side_channel_bad_inputs():
    no_tier = get_price_sheet("anthropic", "claude-opus-4.5")
    assert not no_tier.long_context
    with pytest.raises(SpecError, match="no long-context tier"):
        infer_kv_from_price_step(no_tier, active_params=[1e11], flops_per_byte=[("x", 600.0)])
    gemini = get_price_sheet("google", "gemini-3-pro-preview")
    with pytest.raises(SpecError, match="at least one"):
        infer_kv_from_price_step(gemini, active_params=[], flops_per_byte=[("x", 600.0)])
    with pytest.raises(SpecError, match="no cache-write prices"):
        cache_tier_fit(gemini, get_system("hgx-h100").memory_tiers)
    opus = get_price_sheet("anthropic", "claude-opus-4.6")
    with pytest.raises(SpecError, match="^kv_bytes_per_token"):
        cache_tier_fit(opus, get_system("hgx-h100").memory_tiers, kv_bytes_per_token=0)
    with pytest.raises(SpecError, match="must all be > 0"):
        kv_bytes_from_crossover(active_params=1e11, crossover_context=0, flops_per_byte=600)
    with pytest.raises(SpecError, match="B/B"):
        decode_prefill_cost_ratio(batch_over_balance=0, context_over_crossover=1)
    with pytest.raises(SpecError, match="premium price ratio"):
        infer_fast_mode(price_ratio=1.0, speedup=2.5)      # no premium: batch ratio = speed-up, no load fits
    with pytest.raises(SpecError, match="premium speed-up"):
        infer_fast_mode(price_ratio=6.0, speedup=0.5)


@pytest.mark.parametrize("kwargs,error,match", [
    (dict(price_per_chip_hour=-1.0), SpecError, "^price_per_chip_hour"),
    (dict(price_per_chip_hour=2.0, utilization=2.0), SpecError, "^utilization"),
    (dict(price_per_chip_hour=2.0, context=0), SpecError, "^context"),
    (dict(price_per_chip_hour=2.0, batch=0), SpecError, "^batch"),
    (dict(price_per_chip_hour=2.0, context=1e6, batch=64), InfeasibleError, "does not fit|needs"),
])
def test_serving_cost_bad_inputs(llama_tp8, kwargs, error, match):
    args = dict(context=4096) | kwargs
    with pytest.raises(error, match=match):
        serving_cost(llama_tp8, **args)


def test_price_ratio_grid_is_monotone():
    """decode_prefill_cost_ratio rises as B falls below B* and as L grows past 0 (SPEC C11), never below 1."""
    b = np.array([0.1, 0.2, 0.5, 1.0, 2.0, 10.0])
    lx = np.array([0.0, 0.5, 1.0, 4.0])
    r = decode_prefill_cost_ratio(batch_over_balance=b[:, None], context_over_crossover=lx[None, :])
    assert np.all(r >= 1.0)
    assert np.all(np.diff(r, axis=0) <= 0) and np.all(np.diff(r, axis=1) >= 0)
    assert r[0, 0] == pytest.approx(10.0) and r[-1, 0] == 1.0 and r[3, 3] == 5.0
