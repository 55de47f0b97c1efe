"""Where to keep a KV / prefix cache: memory tiers against recomputation (SPEC C12).

Holding s bytes for T seconds in a tier of capacity C costs T·s/C of the tier's time; reading
them back costs s/BW of it; so the break-even hold time is the drain time C/BW whatever the
tier's price (the five-minute rule, Gray & Putzolu 1987). The alternative to any tier is to
recompute: re-run prefill on the accelerators. Dollars need each tier's price per hour; HBM's
is the deployment's chips x price per chip-hour (all of the chips' rent charged to HBM — an upper
bound on its share), other tiers' prices are catalogue or user inputs and never guessed.

Omitted: the link between a tier and HBM (PCIe/C2C) when slower than the tier, contention with
serving traffic, and partial reuse (a prefix read by many requests splits its hold cost).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from ..spec.deployment import Deployment
from .batching import balance_batch_of
from .context import SECONDS_PER_HOUR, prefill_chip_s_per_token
from ..errors import SpecError, did_you_mean, require_number
from ..spec.hardware import MemoryTier


@dataclass(frozen=True, kw_only=True)
class TierOption:
    """Keeping the cache in one tier: does it fit, what holding and one read-back cost."""

    tier: str
    capacity_bytes: float
    drain_s: float | None
    fits: bool
    retrieve_s: float | None
    hold_usd: float | None
    retrieve_usd: float | None
    consistent: bool | None
    """Five-minute rule: holding here for the hold time beats re-reading only if drain <= hold
    (None when the tier's bandwidth is unknown)."""

    @property
    def total_usd(self) -> float | None:
        if self.hold_usd is None or self.retrieve_usd is None:
            return None
        return self.hold_usd + self.retrieve_usd


@dataclass(frozen=True, kw_only=True)
class CachePlacement:
    """N sequences of L cached tokens held T seconds and then read back once each."""

    sequences: float
    context: float
    hold_s: float
    bytes_total: float
    bytes_per_sequence: float
    options: tuple[TierOption, ...]
    recompute_s: float
    recompute_usd: float

    @property
    def cheapest(self) -> str:
        """The cheapest priced, fitting tier, or "recompute" when re-running prefill costs less."""
        best, best_usd = "recompute", self.recompute_usd
        for o in self.options:
            if o.fits and o.total_usd is not None and o.total_usd < best_usd:
                best, best_usd = o.tier, o.total_usd
        return best

    @property
    def five_minute_tier(self) -> str | None:
        """Where the five-minute rule puts data re-read every ``hold_s``, among tiers that fit."""
        return five_minute_tier(((o.tier, o.drain_s) for o in self.options if o.fits), hold_s=self.hold_s)


def five_minute_tier(tiers, *, hold_s: float) -> str | None:
    """The slowest-draining of ``(name, drain_s)`` pairs whose drain time is still <= ``hold_s``:
    where the five-minute rule (Gray & Putzolu 1987) puts data re-read that often; None if none
    qualifies. Tiers with unknown drain time (None) are skipped."""
    ok = [(drain, name) for name, drain in tiers if drain is not None and drain <= hold_s]
    return max(ok)[1] if ok else None


def priced_tiers(dep: Deployment, *, price_per_chip_hour: float | None,
                 tier_prices: Mapping[str, float] | None = None,
                 extra: Sequence[MemoryTier] = ()) -> tuple[MemoryTier, ...]:
    """The system's tiers plus ``extra`` ones, with HBM priced at the deployment's chips x price
    per chip-hour and others at ``tier_prices[name]`` (USD per hour for the whole tier) when given."""
    if price_per_chip_hour is not None:
        require_number("price_per_chip_hour", price_per_chip_hour, minimum=0, hint="dollars per chip-hour")
    tiers = list(dep.system.memory_tiers) + list(extra)
    names = [t.name for t in tiers]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:  # field "device": the front-ends' name for the ``extra`` tiers (one per device)
        raise SpecError(f"tier '{repeated[0]}' given twice", field="device",
                        fix="give each device once (NAME:COUNT sets the count)")
    prices = dict(tier_prices or {})
    for name, usd in prices.items():  # field "tier_price": the front-ends' name for ``tier_prices``
        if name not in names:
            raise SpecError(f"no tier named '{name}'{did_you_mean(name, names)}", field="tier_price",
                            fix=f"tiers: {', '.join(names)}")
        try:
            require_number("tier_price", usd, minimum=0, hint="USD per hour for the whole tier")
        except SpecError as exc:
            raise SpecError(exc.rule, field="tier_price", value=name, fix=exc.fix) from None
    out = []
    for t in tiers:
        if t.kind == "hbm":
            # the deployment's share of the domain's HBM and bandwidth: its chips, not the whole system
            share = dep.plan.chips / dep.system.chips
            t = replace(t, capacity_bytes=t.capacity_bytes * share,
                        bandwidth_bytes_per_s=t.bandwidth_bytes_per_s * share,
                        usd_per_hour=None if price_per_chip_hour is None else price_per_chip_hour * dep.plan.chips)
        if t.name in prices:
            t = replace(t, usd_per_hour=float(prices[t.name]))
        out.append(t)
    return tuple(out)


def cache_placement(dep: Deployment, tiers: Sequence[MemoryTier], *, sequences: float, context: float,
                    hold_s: float, price_per_chip_hour: float) -> CachePlacement:
    """Compare holding ``sequences`` caches of ``context`` tokens for ``hold_s`` seconds in each
    tier (then reading each back once) with recomputing them by prefill. HBM's free capacity is
    what the weights leave; other tiers are assumed empty."""
    # field "hold": the front-ends' name for ``hold_s``
    for name, v, low in (("sequences", sequences, 1), ("context", context, 1), ("hold", hold_s, 0)):
        require_number(name, v, minimum=low)
    require_number("price_per_chip_hour", price_per_chip_hour, minimum=0, hint="dollars per chip-hour")
    per_seq = float(dep.model.kv_bytes(context, dep.kv_dtype))
    total = per_seq * sequences
    options = []
    for t in tiers:
        capacity = t.capacity_bytes
        if t.kind == "hbm":
            capacity = max(0.0, capacity - dep.weights_per_chip_bytes * dep.plan.chips)
        retrieve_s = None if t.bandwidth_bytes_per_s is None else total / t.bandwidth_bytes_per_s
        hold_usd = retrieve_usd = None
        if t.usd_per_hour is not None:
            hold_usd = t.usd_per_hour * (hold_s / SECONDS_PER_HOUR) * total / t.capacity_bytes
            if retrieve_s is not None:
                retrieve_usd = t.usd_per_hour * retrieve_s / SECONDS_PER_HOUR
        options.append(TierOption(tier=t.name, capacity_bytes=capacity, drain_s=t.drain_s, fits=total <= capacity,
                                  retrieve_s=retrieve_s, hold_usd=hold_usd, retrieve_usd=retrieve_usd,
                                  consistent=None if t.drain_s is None else t.drain_s <= hold_s))
    chip_s_per_token = float(prefill_chip_s_per_token(dep, np.asarray([float(context)]),
                                                      balance_batch=balance_batch_of(dep))[0])
    if not math.isfinite(chip_s_per_token):
        raise SpecError(f"one prompt of {context:,.0f} tokens does not fit this deployment", field="context")
    recompute_chip_s = chip_s_per_token * context * sequences
    return CachePlacement(sequences=float(sequences), context=float(context), hold_s=float(hold_s),
                          bytes_total=total, bytes_per_sequence=per_seq, options=tuple(options),
                          recompute_s=recompute_chip_s / dep.plan.chips,
                          recompute_usd=recompute_chip_s * price_per_chip_hour / SECONDS_PER_HOUR)
