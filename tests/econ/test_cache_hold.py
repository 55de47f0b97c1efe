"""Cache-hit prices include holding and fetching the prefix (issue 35, item 4): every prompt's prefix is
held for the reuse interval in the tier Gray's five-minute rule picks, a hit fetches it from there, and
caching pays only above the break-even hit rate. Hand cases; each failed on the compute-only blend, which
read ~$0 at hit rate 1 however long the prefix was held."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from llmecon.catalog.hardware import get_system
from llmecon.catalog.models import get_model
from llmecon.econ.cache_hit import break_even_hit_rate, cache_hit_cost
from llmecon.spec.deployment import Deployment
from llmecon.spec.plan import Plan

# Llama-3.1-8B KV per token, bf16 (config.json: 32 layers, 8 KV heads of 128): 32 x 8 x 128 x 2 (K, V) x 2 B
KV_PER_TOKEN = 32 * 8 * 128 * 2 * 2          # 131,072 B


@pytest.fixture(scope="module")
def one_h100():
    """One H100 (no tier below HBM in the catalogue): the prefix can only be held in HBM."""
    return Deployment(model=get_model("llama-3.1-8b"), system=get_system("h100-sxm"), plan=Plan())


def test_five_minute_hold_in_hbm_by_hand(one_h100):
    """4,096-token prompts, 4,095 cached, $2/chip-hour, held 300 s. HBM holds at $2/3600 over the chip's
    HBM bytes per byte-second; the prefix is 4,095 x 131,072 B; per prompt token x 1e6 for $/Mtok."""
    dep = one_h100
    c = cache_hit_cost(dep, context=4096, cache_hit_rate=1.0, cached_prefix_tokens=4095, price_per_chip_hour=2.0,
                       hold_s=300.0)
    hbm = dep.system.accelerator.hbm_bytes
    hold = 2.0 / 3600 / hbm * 300 * 4095 * KV_PER_TOKEN / 4096 * 1e6
    assert c.cache_tier == "HBM"
    assert c.hold_usd_per_mtok == pytest.approx(hold, rel=1e-9)
    assert c.fetch_usd_per_mtok == 0.0                       # already in HBM
    # the blend at h = 1 is the hit plus the hold: no longer ~$0, and above the miss price here
    assert c.input_usd_per_mtok_blended == pytest.approx(c.hit_input_usd_per_mtok + hold, rel=1e-9)
    assert c.input_usd_per_mtok_blended > c.input_usd_per_mtok
    assert c.break_even_hit_rate is None                     # hold > miss - hit: caching never pays


def test_blend_and_break_even_by_hand(one_h100):
    """A 1-second hold: h* = hold / (miss - hit - fetch), and the blend at h* equals the miss price."""
    dep = one_h100
    c = cache_hit_cost(dep, context=4096, cache_hit_rate=0.5, cached_prefix_tokens=4095, price_per_chip_hour=2.0,
                       hold_s=1.0)
    hbm = dep.system.accelerator.hbm_bytes
    hold = 2.0 / 3600 / hbm * 1.0 * 4095 * KV_PER_TOKEN / 4096 * 1e6
    miss, hit = c.input_usd_per_mtok, c.hit_input_usd_per_mtok
    assert c.input_usd_per_mtok_blended == pytest.approx(0.5 * miss + 0.5 * hit + hold, rel=1e-9)
    h_star = hold / (miss - hit)
    assert c.break_even_hit_rate == pytest.approx(h_star, rel=1e-9)
    at = cache_hit_cost(dep, context=4096, cache_hit_rate=h_star, cached_prefix_tokens=4095,
                        price_per_chip_hour=2.0, hold_s=1.0)
    assert at.input_usd_per_mtok_blended == pytest.approx(miss, rel=1e-9)


def test_grace_lpddr_wins_a_five_minute_hold_on_gb200():
    """GB200 NVL72: HBM at the deployment's price against Grace LPDDR5X at the catalogue's default
    $5.8/GB over 5 years. Holding 300 s, LPDDR is cheaper (Gray: far past the break-even); 1 ms, HBM."""
    dep = Deployment(model=get_model("deepseek-v3"), system=get_system("gb200-nvl72"), plan=Plan(tp=2, ep=4))
    slow = cache_hit_cost(dep, context=4096, cache_hit_rate=0.5, cached_prefix_tokens=None, price_per_chip_hour=2.0,
                          hold_s=300.0)
    fast = cache_hit_cost(dep, context=4096, cache_hit_rate=0.5, cached_prefix_tokens=None, price_per_chip_hour=2.0,
                          hold_s=1e-3)
    assert (slow.cache_tier, fast.cache_tier) == ("Grace LPDDR5X", "HBM")
    # LPDDR: $5.8e-9/B over 5 x 365.25 x 86400 s, 4,095 x 70,272 B, held 300 s, per prompt token
    hold = 5.8e-9 / (5 * 365.25 * 86400) * 300 * 4095 * 70_272 / 4096 * 1e6
    assert slow.hold_usd_per_mtok == pytest.approx(hold, rel=1e-9)
    # fetch: the whole tier's $/s (17 TB x the rate) for 4,095 x 70,272 B / 18.4 TB/s
    fetch = 5.8e-9 / (5 * 365.25 * 86400) * 17e12 * (4095 * 70_272 / 18.4e12) / 4096 * 1e6
    assert slow.fetch_usd_per_mtok == pytest.approx(fetch, rel=1e-9)


def test_without_hold_the_compute_only_blend_is_unchanged(one_h100):
    c = cache_hit_cost(one_h100, context=4096, cache_hit_rate=0.0, cached_prefix_tokens=None, price_per_chip_hour=2.0)
    assert c.input_usd_per_mtok_blended == c.input_usd_per_mtok and c.hold_s is None


@settings(max_examples=50, deadline=None)
@given(miss=st.floats(0.01, 10), hit_share=st.floats(0, 0.99), fetch=st.floats(0, 1), hold=st.floats(0, 5))
def test_break_even_is_where_the_blend_meets_the_miss(miss, hit_share, fetch, hold):
    hit = hit_share * miss
    h = break_even_hit_rate(miss=miss, hit=hit, fetch=fetch, hold=hold)
    if h is None:
        assert hit + fetch >= miss or hold > miss - hit - fetch
    else:
        assert 0 <= h <= 1
        assert (1 - h) * miss + h * (hit + fetch) + hold == pytest.approx(miss, rel=1e-9, abs=1e-12)
