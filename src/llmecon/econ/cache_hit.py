"""Prefix-cache hits in $ per million input tokens (issue 22 item 4; docs/assumptions.md, "Cache hits").

A prompt of P tokens whose first C tokens are a cached prefix is, on a hit, prefilled as P - C new
tokens after C cached ones (``inference.prefill_of`` with ``cached_tokens=C``): the prefix's KV is
read, not recomputed, but the new tokens still attend over it (attention FLOPs and KV reads of the
prefix are counted). On a miss all P tokens are prefilled. At hit rate h, per prompt token:

    cost_in(h) = [(1 - h)·T(P) + h·T_hit(P, C)] / P

with T the device time (chip-seconds) of one prompt, batched so each prefill pass holds at least the
balance batch B* of new tokens (as ``context.prefill_chip_s_per_token``). The cost of a hit over a
miss, r = T_hit(P, C)/T(P), is what llmecon predicts; a provider that bills the C cached tokens at
m x the input price bills a hit ((P - C) + m·C)/P of a miss.

Holding and fetching the prefix (issue 35, item 4; with ``hold_s``, the interval a prefix is kept for its
next use, 300 s by default in the front-ends): every prompt's prefix (kv_bytes(C), all layers) is held for
``hold_s`` in the tier Gray's five-minute rule picks for that interval among the priced tiers
(``econ.kvcache.five_minute_tier``: HBM at the deployment's $/chip-hour over its HBM, tiers below at their
price, by default the catalogue's sourced $/GB amortised over its default lifetime), costing
hold = tier $/(byte·s) x hold_s x bytes per prompt; a hit then fetches the prefix from that tier, costing
fetch = the tier's $/s x bytes / its bandwidth (Gray's access cost; 0 from HBM). Per prompt token:

    cost_in(h) = (1 - h)·miss + h·(hit + fetch) + hold

since the prefix is held whether or not it is reused. Caching pays where cost_in(h) < miss, i.e. above the
break-even hit rate h* = hold / (miss - hit - fetch) (never, where hit + fetch >= miss or h* > 1).
Omitted: cache writes' surcharges, the HBM a held prefix takes from the batch (its capacity is priced, its
effect on the batch is not), the bus from a host tier to HBM (PCIe or NVLink-C2C) as a separate limit,
and sharing one cached prefix between concurrent requests (each prompt holds its own).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import SpecError, require_number
from ..spec.deployment import Deployment
from ..step.inference import prefill_of
from .batching import balance_batch_of
from .context import prefill_chip_s_per_token, sequences_that_fit, usd_per_mtok


def check_cache_hit(*, cache_hit_rate: float | None, cached_prefix_tokens: float | None, prompt_tokens: float,
                    max_context: float | None = None) -> float | None:
    """Validate a hit rate in [0, 1] and a cached prefix 0 <= C <= P (<= the model's context);
    return C (default: P - 1, all but the last token cached, the most a hit can save). No rate: None
    (a prefix without a rate is an error)."""
    if cache_hit_rate is None:
        if cached_prefix_tokens is not None:
            raise SpecError("a cached prefix needs a cache-hit rate", field="cached_prefix", value=cached_prefix_tokens,
                            fix="give {cache_hit} RATE as well")
        return None
    require_number("cache_hit", cache_hit_rate, minimum=0, maximum=1, hint="a hit rate, e.g. 0.5")
    p = require_number("context", prompt_tokens, minimum=1, hint="tokens")
    if cached_prefix_tokens is None:
        return p - 1.0
    c = require_number("cached_prefix", cached_prefix_tokens, minimum=0, hint="tokens")
    if max_context and c > max_context:
        raise SpecError(f"cached prefix of {c:,.0f} tokens is longer than the model's {max_context:,.0f}-token "
                        f"context", field="cached_prefix", value=c, fix=f"keep it <= {max_context:,.0f}")
    if c >= p:
        raise SpecError(f"cached prefix of {c:,.0f} tokens leaves no new token in a {p:,.0f}-token prompt (a hit "
                        f"still prefills at least one)", field="cached_prefix", value=c,
                        fix=f"keep it < the prompt ({p:,.0f} tokens)")
    return c


def hit_chip_s_per_prompt(dep: Deployment, *, prompt_tokens: float, cached_prefix_tokens: float,
                          balance_batch: float) -> float:
    """Chip-seconds of one P-token prompt on a hit: P - C new tokens prefilled after C cached ones,
    ceil(B*/(P - C)) prompts per pass, fewer where their P-token KV caches fill memory (each prompt's
    prefix held apart: shared prefixes held once would fit more), at least one; NaN where one does not fit."""
    new = float(prompt_tokens) - float(cached_prefix_tokens)
    fit = float(sequences_that_fit(dep, np.asarray([float(prompt_tokens)]))[0])
    seqs = max(1.0, min(float(math.ceil(balance_batch / new)), fit))
    step = prefill_of(dep, batch=seqs, prompt_tokens=new, cached_tokens=float(cached_prefix_tokens))
    if not bool(np.all(step.fits)):
        return math.nan
    return float(step.step_s) * dep.plan.chips / seqs


@dataclass(frozen=True, kw_only=True)
class CacheHitCost:
    """Blended input cost at one hit rate and cached-prefix length (module docstring)."""

    cache_hit_rate: float
    cached_prefix_tokens: float
    prompt_tokens: float
    input_usd_per_mtok: float           # every prompt a miss (today's figure)
    hit_input_usd_per_mtok: float       # every prompt a hit, per prompt token
    input_usd_per_mtok_blended: float   # (1 - h)·miss + h·hit
    hit_cost_ratio: float               # r = T_hit(P, C)/T(P), of device time (defined at any price, 0 included)
    hold_s: float | None = None         # the interval each prefix is held for reuse (None: holding not priced)
    cache_tier: str | None = None       # where the five-minute rule keeps it for hold_s
    hold_usd_per_mtok: float = 0.0      # holding every prompt's prefix, per prompt token
    fetch_usd_per_mtok: float = 0.0     # fetching the prefix on a hit, per prompt token of a hit
    break_even_hit_rate: float | None = None   # h* above which caching pays; None: never (or not priced)

    @property
    def hit_all_in_usd_per_mtok(self) -> float:
        """One hit's input price with its prefix's holding and fetching: hit + fetch + hold."""
        return self.hit_input_usd_per_mtok + self.fetch_usd_per_mtok + self.hold_usd_per_mtok

    @property
    def cached_token_cost_ratio(self) -> float:
        """The cost of a cached token over an uncached one if the P - C new tokens are charged at the
        uncached rate: (r·P - (P - C))/C, comparable with a sheet's cached-input multiplier m.
        Can be slightly negative: new tokens late in a prompt attend over more context than the
        average token, so a hit's new tokens cost more than (P - C) average ones."""
        p, c = self.prompt_tokens, self.cached_prefix_tokens
        return math.nan if c == 0 else (self.hit_cost_ratio * p - (p - c)) / c


def prefix_holding(dep: Deployment, *, cached_prefix_tokens: float, hold_s: float, price_per_chip_hour: float,
                   tiers=None) -> tuple[str | None, float, float]:
    """(tier, hold USD, fetch USD) of one prompt's cached prefix kept ``hold_s`` seconds: the tier the
    five-minute rule picks among ``tiers`` (default: the system's, HBM at the deployment's price, the
    others at the catalogue's default $/GB) that hold the prefix beside the weights; (None, 0, 0) when
    no tier is priced."""
    from ..catalog.tco_defaults import with_default_tier_prices
    from .kvcache import five_minute_tier, priced_tiers

    require_number("cache_hold", hold_s, minimum=0, hint="seconds a prefix is kept for reuse, e.g. 300")
    if tiers is None:
        tiers = with_default_tier_prices(priced_tiers(dep, price_per_chip_hour=price_per_chip_hour))
    nbytes = float(dep.model.kv_bytes(float(cached_prefix_tokens), dep.kv_dtype))
    room = {t.name: t.capacity_bytes - (dep.weights_per_chip_bytes * dep.plan.chips if t.kind == "hbm" else 0.0)
            for t in tiers}
    fitting = [t for t in tiers if nbytes <= room[t.name]]
    name = five_minute_tier(fitting, hold_s=hold_s)
    if name is None:  # one priced tier (or none): hold where it is priced, the fastest first
        priced = [t for t in fitting if t.holding_usd_per_byte_s is not None]
        if not priced:
            return None, 0.0, 0.0
        name = priced[0].name
    tier = next(t for t in fitting if t.name == name)
    rate = tier.holding_usd_per_byte_s
    hold = rate * hold_s * nbytes
    fetch = 0.0 if tier.kind == "hbm" or tier.bandwidth_bytes_per_s is None else \
        rate * tier.capacity_bytes * nbytes / tier.bandwidth_bytes_per_s
    return name, hold, fetch


def break_even_hit_rate(*, miss: float, hit: float, fetch: float, hold: float) -> float | None:
    """h* = hold / (miss - hit - fetch): the hit rate above which holding prefixes for reuse costs less
    than recomputing every prompt; None where a hit with its fetch costs at least a miss, or h* > 1."""
    saving = miss - hit - fetch
    if saving <= 0:
        return None
    h = hold / saving
    return h if h <= 1.0 else None


def cache_hit_cost(dep: Deployment, *, context: float, cache_hit_rate: float, cached_prefix_tokens: float | None,
                   price_per_chip_hour: float, utilization: float = 1.0, hold_s: float | None = None,
                   tiers=None) -> CacheHitCost:
    """Input $/Mtok for prompts of ``context`` tokens at ``cache_hit_rate`` with ``cached_prefix_tokens``
    cached on a hit. The miss figure is ``pricing.serving_cost``'s input price, computed the same way,
    so h = 0 without ``hold_s`` reproduces it bit for bit. ``hold_s``: price holding each prefix that long
    and fetching it on a hit (module docstring; ``tiers`` as ``prefix_holding``)."""
    c = check_cache_hit(cache_hit_rate=cache_hit_rate, cached_prefix_tokens=cached_prefix_tokens,
                        prompt_tokens=context, max_context=dep.model.max_context)
    b_star = balance_batch_of(dep)
    kw = dict(price_per_chip_hour=price_per_chip_hour, utilization=utilization)
    miss_s = float(prefill_chip_s_per_token(dep, [float(context)], balance_batch=b_star)[0])
    miss = float(usd_per_mtok(miss_s, **kw))
    hit_s = hit_chip_s_per_prompt(dep, prompt_tokens=context, cached_prefix_tokens=c, balance_batch=b_star)
    hit = float(usd_per_mtok(hit_s / float(context), **kw))
    h = float(cache_hit_rate)
    blended = miss if h == 0 else (hit if h == 1 else (1.0 - h) * miss + h * hit)
    held = {}
    if hold_s is not None:
        tier, hold_usd, fetch_usd = prefix_holding(dep, cached_prefix_tokens=c, hold_s=hold_s,
                                                   price_per_chip_hour=price_per_chip_hour, tiers=tiers)
        per_mtok = 1e6 / float(context)
        hold, fetch = hold_usd * per_mtok, fetch_usd * per_mtok
        blended = blended + h * fetch + hold
        held = dict(hold_s=float(hold_s), cache_tier=tier, hold_usd_per_mtok=hold, fetch_usd_per_mtok=fetch,
                    break_even_hit_rate=break_even_hit_rate(miss=miss, hit=hit, fetch=fetch, hold=hold))
    return CacheHitCost(cache_hit_rate=h, cached_prefix_tokens=c, prompt_tokens=float(context),
                        input_usd_per_mtok=miss, hit_input_usd_per_mtok=hit, input_usd_per_mtok_blended=blended,
                        hit_cost_ratio=hit_s / float(context) / miss_s, **held)


# ---------------------------------------------------------------------------------------------
# The sheet side: blended list prices and what a cached-input discount implies
# ---------------------------------------------------------------------------------------------


def blended_list_price(*, input_usd_per_mtok: float, cached_input_usd_per_mtok: float, cache_hit_rate: float,
                       cached_fraction: float = 1.0) -> float:
    """A provider's price per input token when a share h of prompts hit and a fraction f = C/P of each
    hit prompt is billed at the cached price: p_in·(1 - h·f) + p_cached·h·f."""
    require_number("cache_hit", cache_hit_rate, minimum=0, maximum=1, hint="a hit rate, e.g. 0.5")
    require_number("cached_fraction", cached_fraction, minimum=0, maximum=1, hint="cached prefix / prompt")
    hf = float(cache_hit_rate) * float(cached_fraction)
    return input_usd_per_mtok * (1.0 - hf) + cached_input_usd_per_mtok * hf


def max_cached_cost_ratio(*, cached_multiplier: float, uncached_margin: float) -> float:
    """The largest cost ratio r (cached token / uncached token) at which a provider billing cached
    tokens at m x the input price, with margin mu on uncached input, does not lose money on a hit:
    m·p - r·(1 - mu)·p >= 0, so r <= m/(1 - mu). At r = m the hit keeps the uncached margin."""
    require_number("uncached_margin", uncached_margin, minimum=0, maximum=1, hint="a fraction below 1")
    if uncached_margin >= 1:
        return math.inf
    return cached_multiplier / (1.0 - uncached_margin)


def blended_margin(*, uncached_margin: float, cached_multiplier: float, cached_cost_ratio: float,
                   cache_hit_rate: float, cached_fraction: float = 1.0) -> float:
    """Input margin at hit rate h: 1 - cost/price with cost (1 - mu)·(1 - h·f·(1 - r)) and price
    1 - h·f·(1 - m), per uncached list price (mu: margin when nothing hits)."""
    hf = float(cache_hit_rate) * float(cached_fraction)
    price = 1.0 - hf * (1.0 - cached_multiplier)
    cost = (1.0 - uncached_margin) * (1.0 - hf * (1.0 - cached_cost_ratio))
    return 1.0 - cost / price


HIT_RATES = (0.0, 0.25, 0.5, 0.75, 0.9, 1.0)
MARGINS = (0.0, 0.5, 0.8)


def cached_input_reading(*, input_usd_per_mtok: float, cached_input_usd_per_mtok: float,
                         cache_hit_rate: float | None = None, cached_fraction: float = 1.0) -> dict:
    """What a sheet's cached-input price says: its multiplier m, blended list prices over hit rates
    (and at ``cache_hit_rate``), and the largest cached/uncached cost ratio at which hits do not lose
    money for several uncached margins. A reading (prices carry margin and demand), not a law."""
    m = cached_input_usd_per_mtok / input_usd_per_mtok
    rates = HIT_RATES if cache_hit_rate is None else tuple(sorted(set(HIT_RATES) | {float(cache_hit_rate)}))
    out = {"cached_input_usd_per_mtok": cached_input_usd_per_mtok, "cached_input_multiplier": m,
           "cached_fraction": float(cached_fraction),
           "blended": [{"cache_hit_rate": h, "usd_per_mtok_input_blended": blended_list_price(
               input_usd_per_mtok=input_usd_per_mtok, cached_input_usd_per_mtok=cached_input_usd_per_mtok,
               cache_hit_rate=h, cached_fraction=cached_fraction)} for h in rates],
           "max_cached_cost_ratio": [{"uncached_margin": mu, "cost_ratio": max_cached_cost_ratio(
               cached_multiplier=m, uncached_margin=mu)} for mu in MARGINS],
           "note": ("a reading, not a law: if prices were proportional to cost a cached token would cost m x an "
                    "uncached one; a provider not losing money on hits has cost ratio r <= m/(1 - margin)")}
    if cache_hit_rate is not None:
        out["cache_hit_rate"] = float(cache_hit_rate)
        out["usd_per_mtok_input_blended"] = blended_list_price(
            input_usd_per_mtok=input_usd_per_mtok, cached_input_usd_per_mtok=cached_input_usd_per_mtok,
            cache_hit_rate=cache_hit_rate, cached_fraction=cached_fraction)
    return out


# ---------------------------------------------------------------------------------------------
# The planner's best prefill plan at a hit rate
# ---------------------------------------------------------------------------------------------


def plan_cache_hit(result, model, systems, options, *, cache_hit_rate: float,
                   cached_prefix_tokens: float | None) -> dict | None:
    """Blend the best prefill plan of a ``planner.PlanResult`` over hits: a hit pass runs the same
    plan and the same prompts per pass (their KV, C cached + P - C new, is the miss's, so it fits),
    prefilling P - C new tokens after C cached; its step is shorter than the miss's, so the TTFT the
    search met still holds. Returns the ``cache_hit`` object of the plan JSON (None if unpriced or
    no prefill plan meets the target); the request blend weighs input and output tokens as
    ``PlanResult.usd_per_mtok_blended`` does."""
    from ..step.inference import prefill_step

    t = result.targets
    c = check_cache_hit(cache_hit_rate=cache_hit_rate, cached_prefix_tokens=cached_prefix_tokens,
                        prompt_tokens=t.prompt_tokens, max_context=model.max_context)
    p, d = result.prefill.best, result.decode.best
    if p is None or p.usd_per_mtok is None:
        return None
    system = next(s for s in systems if s.name == p.system)
    step = prefill_step(model, system, batch=p.batch, prompt_tokens=t.prompt_tokens - c, cached_tokens=c,
                        plan=p.plan, weight_dtype=options.weight_dtype, kv_dtype=options.kv_dtype,
                        dispatch_dtype=options.dispatch_dtype, expert_imbalance=options.expert_imbalance,
                        profile=options.profile_for(system))
    hit = float(usd_per_mtok(float(step.step_s) * p.plan.chips / (p.batch * t.prompt_tokens),
                             price_per_chip_hour=result.prices[p.system]))
    miss, h = float(p.usd_per_mtok), float(cache_hit_rate)
    blended = miss if h == 0 else (hit if h == 1 else (1.0 - h) * miss + h * hit)
    request = None
    if d is not None and d.usd_per_mtok is not None:
        request = (t.prompt_tokens * blended + t.output_tokens * d.usd_per_mtok) / (t.prompt_tokens + t.output_tokens)
    return {"cache_hit_rate": h, "cached_prefix_tokens": c, "prompt_tokens": t.prompt_tokens,
            "usd_per_mtok_input": miss, "usd_per_mtok_input_hit": hit, "usd_per_mtok_input_blended": blended,
            "hit_step_s": float(step.step_s), "usd_per_mtok_request_blended": request}
