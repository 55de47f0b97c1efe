"""Gray's five-minute rule between memory tiers (SPEC C12 as amended by issue 18).

Break-even interval T* = (dollars per byte read from the slower tier) / (dollars per byte-second of
holding in the faster tier) = slower drain time x slower $/B / faster $/B (llmecon.econ.kvcache,
``gray_break_even_s``). Hand-computed cases, the published numbers of Gray & Putzolu 1987 and Gray &
Graefe 1997, and properties.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmecon.econ.kvcache import (break_even_price_ratio, five_minute_tier, gray_break_even_s, gray_ladder,
                                  tier_rungs)
from llmecon.econ.pricing import break_even_hold_s, tier_break_evens
from llmecon.errors import SpecError
from llmecon.spec.hardware import MemoryTier

FAST = settings(max_examples=80, deadline=None)
YEAR = 365.25 * 86400.0


def _tier(name: str, capacity: float, bandwidth: float, usd_per_gb: float, years: float = 5.0) -> MemoryTier:
    return MemoryTier(name=name, kind="flash", capacity_bytes=capacity, bandwidth_bytes_per_s=bandwidth,
                      usd_per_byte=usd_per_gb / 1e9, amortisation_s=years * YEAR)


# ---- hand-computed ----------------------------------------------------------------------------


def test_hand_case_capex_dram_flash_hdd():
    """Illustrative prices (not catalogue data): DRAM $4/GB, flash $0.10/GB, disk $0.02/GB, all over
    5 years. Flash: 10 TB at 10 GB/s drains in 1,000 s; DRAM -> flash T* = 1,000 s x 0.10 / 4 = 25 s.
    Disk: 20 TB at 0.25 GB/s drains in 80,000 s; flash -> disk T* = 80,000 x 0.02 / 0.10 = 16,000 s.
    The amortisation period cancels; in dollars: flash costs 0.1e-9/(5 YEAR) $/B-s, a byte read from it
    0.1e-9/(5 YEAR) x 1,000 s; over DRAM's 4e-9/(5 YEAR): 25 s."""
    dram = _tier("dram", 1e12, 100e9, 4.0)
    flash = _tier("flash", 10e12, 10e9, 0.10)
    disk = _tier("disk", 20e12, 0.25e9, 0.02)
    assert break_even_hold_s(dram, flash) == pytest.approx(25.0, rel=1e-9)
    assert break_even_hold_s(flash, disk) == pytest.approx(16_000.0, rel=1e-9)
    h_dram, f_flash = 4e-9 / (5 * YEAR), 0.1e-9 / (5 * YEAR) * 1000.0
    assert float(gray_break_even_s(fast_usd_per_byte_s=h_dram, slow_usd_per_byte_read=f_flash)) == \
        pytest.approx(25.0, rel=1e-9)
    picks = {hold: five_minute_tier([disk, flash, dram], hold_s=hold) for hold in (10.0, 25.0, 300.0, 3600.0, 1e5)}
    assert picks == {10.0: "dram", 25.0: "dram", 300.0: "flash", 3600.0: "flash", 1e5: "disk"}
    assert [(e.faster, e.slower) for e in tier_break_evens([flash, disk, dram])] == [("dram", "flash"),
                                                                                     ("flash", "disk")]


def test_hand_case_price_ratio_threshold():
    """A 10 TB flash tier at 10 GB/s (drain 1,000 s) wins a 300 s hold iff the faster tier costs more than
    1,000 / 300 = 3.333x it per byte; at exactly that ratio the break-even is the hold."""
    flash = _tier("flash", 10e12, 10e9, 0.10)
    assert break_even_price_ratio(flash, hold_s=300.0) == pytest.approx(10 / 3, rel=1e-12)
    dram = _tier("dram", 1e12, 100e9, 0.10 * 10 / 3)
    assert break_even_hold_s(dram, flash) == pytest.approx(300.0, rel=1e-9)
    with pytest.raises(SpecError, match="bandwidth unknown"):
        break_even_price_ratio(MemoryTier(name="x", kind="flash", capacity_bytes=1e12, bandwidth_bytes_per_s=None),
                               hold_s=300.0)


def test_ladder_skips_unpriced_unknown_and_free_tiers():
    dram = _tier("dram", 1e12, 100e9, 4.0)
    flash = _tier("flash", 10e12, 10e9, 0.10)
    unknown_bw = MemoryTier(name="nvme", kind="local_nvme", capacity_bytes=1e12, bandwidth_bytes_per_s=None,
                            usd_per_hour=1.0)
    unpriced = MemoryTier(name="disk", kind="hdd", capacity_bytes=1e12, bandwidth_bytes_per_s=1e8)
    free = MemoryTier(name="free", kind="hdd", capacity_bytes=1e12, bandwidth_bytes_per_s=1e8, usd_per_hour=0.0)
    ladder = gray_ladder(tier_rungs([dram, unknown_bw, flash, unpriced, free]))
    assert ladder.tiers == ("dram", "flash")
    assert ladder.skipped == (("nvme", "bandwidth unknown"), ("disk", "no price"), ("free", "free to hold (price 0)"))
    assert gray_ladder(tier_rungs([dram])).tier_for(1.0) is None          # one tier: nothing to compare
    with pytest.raises(SpecError, match="fast_usd_per_byte_s"):
        gray_break_even_s(fast_usd_per_byte_s=0.0, slow_usd_per_byte_read=1.0)


# ---- published numbers ------------------------------------------------------------------------


def test_gray_putzolu_1987_five_minutes():
    """Gray & Putzolu, "The 5 minute rule for trading memory for disc accesses and the 10 byte rule for
    trading memory for CPU time", SIGMOD 1987: a disc access per second costs about $2K ($1K of disc and
    half a controller, $1K of CPU and channel), a KB of main memory $5 ($5K per MB); so a 1 KB record
    re-read more often than every 2000/5 = 400 s ("about" five minutes) belongs in memory. As bandwidth:
    1 access/s of 1 KB records is 1,000 B/s for $2,000, so $2 per (B/s), i.e. $2/A per byte read when
    the purchase is spread over A seconds; memory $0.005/A per byte-second. Tolerance: exact (rel 1e-9)
    against the paper's 400 s; within a factor 1.5 of the five minutes of the title."""
    amortise = 3 * YEAR  # any period: it cancels (Gray compares purchase prices)
    t = float(gray_break_even_s(fast_usd_per_byte_s=5.0 / 1000 / amortise,
                                slow_usd_per_byte_read=2000.0 / 1000 / amortise))
    assert t == pytest.approx(400.0, rel=1e-9)
    assert 300.0 / 1.5 <= t <= 300.0 * 1.5


def test_gray_graefe_1997_eight_kb_pages():
    """Gray & Graefe, "The five-minute rule ten years later, and other computer storage rules of thumb",
    SIGMOD Record 26(4), 1997: BreakEvenReferenceInterval = (PagesPerMBofRAM / AccessesPerSecondPerDisk)
    x (PricePerDiskDrive / PricePerMBofDRAM) = (128 / 64) x ($2,000 / $15) = 266 s for 8 KB pages (the
    paper's "about 5 minutes"). Same formula through llmecon: the disk's bandwidth for 8 KB pages is
    64 x 8,192 B/s, DRAM costs $15 per 2^20 B. Tolerance: 1% (the paper rounds to 266 s)."""
    page = 8192.0
    fast = 15.0 / 2**20                          # $ per byte of DRAM (any common amortisation cancels)
    slow = 2000.0 / (64 * page)                  # $ per (byte/s) of the disk's random-read bandwidth
    t = float(gray_break_even_s(fast_usd_per_byte_s=fast, slow_usd_per_byte_read=slow))
    assert t == pytest.approx(266.0, rel=0.01)


# ---- properties (hypothesis) ------------------------------------------------------------------

prices = st.floats(min_value=1e-3, max_value=1e3)
sizes = st.floats(min_value=1e9, max_value=1e15)
rates = st.floats(min_value=1e6, max_value=1e13)


@FAST
@given(fast=prices, slow=prices, k=st.floats(min_value=0.01, max_value=100.0), cap=sizes, bw=rates)
def test_break_even_inverse_in_fast_price_linear_in_slow_price(fast, slow, k, cap, bw):
    """T* ∝ 1 / (faster tier's $/B) and ∝ slower tier's $/B; and = slower drain x price ratio."""
    faster = _tier("f", 1e12, 1e11, fast)
    slower = _tier("s", cap, bw, slow)
    t = break_even_hold_s(faster, slower)
    assert t == pytest.approx((cap / bw) * slow / fast, rel=1e-9)
    assert break_even_hold_s(_tier("f", 1e12, 1e11, k * fast), slower) == pytest.approx(t / k, rel=1e-9)
    assert break_even_hold_s(faster, _tier("s", cap, bw, k * slow)) == pytest.approx(t * k, rel=1e-9)


@FAST
@given(price=prices, cap=sizes, bw=rates, years=st.floats(min_value=0.5, max_value=10.0))
def test_a_tier_against_itself_breaks_even_at_its_drain_time(price, cap, bw, years):
    t = _tier("t", cap, bw, price, years)
    assert break_even_hold_s(t, t) == pytest.approx(cap / bw, rel=1e-9) == break_even_hold_s(t)


@FAST
@given(st.lists(st.tuples(prices, sizes, rates), min_size=2, max_size=5),
       st.lists(st.floats(min_value=1e-3, max_value=1e7), min_size=2, max_size=6))
def test_longer_holds_never_move_data_up_the_ladder(specs, holds):
    """Walking down the ladder, a longer hold stops at the same rung or a later (cheaper) one."""
    tiers = [_tier(f"t{i}", cap, bw, p) for i, (p, cap, bw) in enumerate(specs)]
    ladder = gray_ladder(tier_rungs(tiers))
    ranks = [ladder.tiers.index(ladder.tier_for(h)) for h in sorted(holds)]
    assert ranks == sorted(ranks)
    prices_by_rank = [t.holding_usd_per_byte_s for name in ladder.tiers for t in tiers if t.name == name]
    assert prices_by_rank == sorted(prices_by_rank, reverse=True)
