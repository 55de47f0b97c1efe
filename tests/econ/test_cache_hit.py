"""Prefix-cache hits in $/Mtok (issue 22 item 4): ``llmecon.econ.cache_hit``.

Hand cases: h = 0 reproduces ``serving_cost``'s input price bit for bit; h = 1 with C = P - 1 is the
cost of prefilling one token after P - 1 cached ones, per prompt token; a blend is the weighted sum;
the sheet side reproduces the catalogue's published multipliers (DeepSeek 0.14/0.55, Anthropic and
OpenAI 0.1x) and blended prices by hand. Properties: the blended price is monotone in h, and a hit
priced at its cost ratio keeps the uncached margin at every hit rate.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmecon.catalog.hardware import get_system
from llmecon.catalog.models import get_model
from llmecon.catalog.prices import get_price_sheet
from llmecon.econ.batching import balance_batch_of
from llmecon.econ.cache_hit import (blended_list_price, blended_margin, cache_hit_cost, cached_input_reading,
    check_cache_hit, max_cached_cost_ratio)
from llmecon.econ.context import SECONDS_PER_HOUR, sequences_that_fit
from llmecon.econ.pricing import serving_cost
from llmecon.errors import SpecError
from llmecon.spec.deployment import Deployment
from llmecon.spec.plan import Plan
from llmecon.step.inference import prefill_of

PRICE = 2.0


@pytest.fixture(scope="module")
def dep():
    return Deployment(model=get_model("llama-3.1-70b"), system=get_system("hgx-h100"), plan=Plan(tp=8))


def test_zero_hit_rate_reproduces_todays_input_price_bit_for_bit(dep):
    for context in (512.0, 4096.0, 32768.0):
        today = serving_cost(dep, context=context, price_per_chip_hour=PRICE).input_usd_per_mtok
        for prefix in (None, 0.0, context / 2):
            c = cache_hit_cost(dep, context=context, cache_hit_rate=0.0, cached_prefix_tokens=prefix,
                               price_per_chip_hour=PRICE)
            assert c.input_usd_per_mtok_blended == today
            assert c.input_usd_per_mtok == today


def test_full_hit_with_all_but_one_token_cached_is_the_one_token_prefill(dep):
    """h = 1, C = P - 1: each prompt prefills one token after P - 1 cached ones, min(B*, fit(P))
    prompts per pass; $/Mtok = step_s x chips / prompts / P x price / 3600 x 1e6."""
    p = 4096.0
    seqs = max(1.0, min(math.ceil(balance_batch_of(dep) / 1.0), float(sequences_that_fit(dep, [p])[0])))
    step = prefill_of(dep, batch=seqs, prompt_tokens=1.0, cached_tokens=p - 1)
    by_hand = float(step.step_s) * 8 / seqs / p * PRICE / SECONDS_PER_HOUR * 1e6
    c = cache_hit_cost(dep, context=p, cache_hit_rate=1.0, cached_prefix_tokens=p - 1, price_per_chip_hour=PRICE)
    assert c.input_usd_per_mtok_blended == pytest.approx(by_hand, rel=1e-12)
    assert c.hit_input_usd_per_mtok == pytest.approx(by_hand, rel=1e-12)
    assert c.cached_prefix_tokens == p - 1
    # the default prefix is all but the last token
    d = cache_hit_cost(dep, context=p, cache_hit_rate=1.0, cached_prefix_tokens=None, price_per_chip_hour=PRICE)
    assert d.input_usd_per_mtok_blended == c.input_usd_per_mtok_blended
    assert c.hit_cost_ratio < 0.05  # the hit reads the prefix's KV and prefills one token: far below a miss


def test_blend_is_the_weighted_sum_by_hand(dep):
    c = cache_hit_cost(dep, context=8192.0, cache_hit_rate=0.25, cached_prefix_tokens=6144.0,
                       price_per_chip_hour=PRICE)
    assert c.input_usd_per_mtok_blended == pytest.approx(0.75 * c.input_usd_per_mtok + 0.25 * c.hit_input_usd_per_mtok,
                                                         rel=1e-15)
    assert c.hit_input_usd_per_mtok < c.input_usd_per_mtok
    # the cached-token ratio by hand: (r·P - (P - C))/C
    r = c.hit_input_usd_per_mtok / c.input_usd_per_mtok
    assert c.cached_token_cost_ratio == pytest.approx((r * 8192 - 2048) / 6144, rel=1e-12)


def test_an_empty_prefix_saves_nothing(dep):
    c = cache_hit_cost(dep, context=4096.0, cache_hit_rate=0.7, cached_prefix_tokens=0.0, price_per_chip_hour=PRICE)
    assert c.hit_input_usd_per_mtok == pytest.approx(c.input_usd_per_mtok, rel=1e-12)
    assert math.isnan(c.cached_token_cost_ratio)


@settings(max_examples=20, deadline=None)
@given(h1=st.floats(0, 1), h2=st.floats(0, 1))
def test_blended_cost_falls_with_hit_rate(dep, h1, h2):
    lo, hi = sorted((h1, h2))
    a, b = (cache_hit_cost(dep, context=4096.0, cache_hit_rate=h, cached_prefix_tokens=3000.0,
                           price_per_chip_hour=PRICE).input_usd_per_mtok_blended for h in (lo, hi))
    assert b <= a * (1 + 1e-12)


@pytest.mark.parametrize("kw, field", [
    (dict(cache_hit_rate=1.5, cached_prefix_tokens=None, prompt_tokens=100.0), "cache_hit"),
    (dict(cache_hit_rate=-0.1, cached_prefix_tokens=None, prompt_tokens=100.0), "cache_hit"),
    (dict(cache_hit_rate=math.nan, cached_prefix_tokens=None, prompt_tokens=100.0), "cache_hit"),
    (dict(cache_hit_rate=0.5, cached_prefix_tokens=100.0, prompt_tokens=100.0), "cached_prefix"),
    (dict(cache_hit_rate=0.5, cached_prefix_tokens=-1.0, prompt_tokens=100.0), "cached_prefix"),
    (dict(cache_hit_rate=0.5, cached_prefix_tokens=200_000.0, prompt_tokens=300_000.0, max_context=131_072),
     "cached_prefix"),
])
def test_bad_input_names_the_field(kw, field):
    with pytest.raises(SpecError) as e:
        check_cache_hit(**kw)
    assert e.value.field == field


# ---- the sheet side -------------------------------------------------------------------------


def test_catalogue_carries_the_published_multipliers():
    """shared/reference/prices.yaml: Anthropic cache read 0.1x, OpenAI gpt-5 0.1x, DeepSeek 0.14/0.55."""
    for prov, model, m in (("anthropic", "claude-sonnet-4.5", 0.1), ("openai", "gpt-5", 0.1),
                           ("deepseek", "deepseek-r1", 0.14 / 0.55)):
        s = get_price_sheet(prov, model)
        assert s.cached_input_usd_per_mtok / s.input_usd_per_mtok == pytest.approx(m, rel=1e-12)
    assert 0.14 / 0.55 == pytest.approx(0.2545, abs=1e-4)


def test_blended_list_price_by_hand():
    # DeepSeek R1: 0.55 in, 0.14 cached, half the prompts hit entirely: 0.5·0.55 + 0.5·0.14 = 0.345
    assert blended_list_price(input_usd_per_mtok=0.55, cached_input_usd_per_mtok=0.14,
                              cache_hit_rate=0.5) == pytest.approx(0.345, rel=1e-12)
    # Sonnet: 3 in, 0.3 cached, 90% hits of half the prompt: 3·(1 - 0.45) + 0.3·0.45 = 1.785
    assert blended_list_price(input_usd_per_mtok=3.0, cached_input_usd_per_mtok=0.3, cache_hit_rate=0.9,
                              cached_fraction=0.5) == pytest.approx(1.785, rel=1e-12)
    with pytest.raises(SpecError) as e:
        blended_list_price(input_usd_per_mtok=3.0, cached_input_usd_per_mtok=0.3, cache_hit_rate=1.01)
    assert e.value.field == "cache_hit"


def test_max_cached_cost_ratio_by_hand():
    assert max_cached_cost_ratio(cached_multiplier=0.1, uncached_margin=0.0) == pytest.approx(0.1)
    assert max_cached_cost_ratio(cached_multiplier=0.1, uncached_margin=0.5) == pytest.approx(0.2)
    assert max_cached_cost_ratio(cached_multiplier=0.2545, uncached_margin=0.8) == pytest.approx(1.2725)


@settings(max_examples=50, deadline=None)
@given(mu=st.floats(0, 0.95), m=st.floats(0.01, 1), h=st.floats(0, 1), f=st.floats(0, 1))
def test_hits_priced_at_their_cost_ratio_keep_the_margin(mu, m, h, f):
    assert blended_margin(uncached_margin=mu, cached_multiplier=m, cached_cost_ratio=m, cache_hit_rate=h,
                          cached_fraction=f) == pytest.approx(mu, abs=1e-9)
    # at the break-even ratio a full hit earns nothing
    r = max_cached_cost_ratio(cached_multiplier=m, uncached_margin=mu)
    assert blended_margin(uncached_margin=mu, cached_multiplier=m, cached_cost_ratio=r, cache_hit_rate=1.0,
                          cached_fraction=1.0) == pytest.approx(0.0, abs=1e-9)


def test_cached_input_reading_of_deepseek_r1():
    out = cached_input_reading(input_usd_per_mtok=0.55, cached_input_usd_per_mtok=0.14, cache_hit_rate=0.6)
    assert out["cached_input_multiplier"] == pytest.approx(0.2545, abs=1e-4)
    assert out["usd_per_mtok_input_blended"] == pytest.approx(0.4 * 0.55 + 0.6 * 0.14, rel=1e-12)
    assert [b["cache_hit_rate"] for b in out["blended"]] == [0.0, 0.25, 0.5, 0.6, 0.75, 0.9, 1.0]
    assert "not a law" in out["note"]
