"""Where to keep a KV / prefix cache: memory tiers against recomputation (SPEC C12).

Holding s bytes for T seconds in a tier of capacity C costs T·s/C of the tier's time; reading
them back costs s/BW of it; within one tier the two are equal at its drain time C/BW. Which tier
data re-read every T belongs in is Gray's five-minute rule (Gray & Putzolu 1987): it compares the
faster tier's price of holding the bytes with the slower tier's price of fetching them again, so
it needs every tier's price (``gray_break_even_s``, ``gray_ladder``, ``five_minute_tier``). The
alternative to any tier is to recompute: re-run prefill on the accelerators. HBM's price is the
deployment's chips x price per chip-hour (all of the chips' rent charged to HBM — an upper bound
on its share); other tiers' prices are catalogue or user inputs and never guessed.

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
from ..errors import SpecError, did_you_mean, require_array, require_number
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
    """Gray's five-minute rule puts data re-read every hold time in this tier (True), in another
    tier of the ladder (False), or cannot place this tier (None: unpriced, bandwidth unknown, does
    not fit, or fewer than two fitting priced tiers to compare)."""

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

    ladder: GrayLadder

    @property
    def five_minute_tier(self) -> str | None:
        """Where Gray's five-minute rule puts data re-read every ``hold_s``, among the priced tiers
        that fit (None with fewer than two to compare)."""
        return self.ladder.tier_for(self.hold_s)

    @property
    def break_evens(self) -> tuple[BreakEven, ...]:
        """Gray's break-even intervals between adjacent rungs of the fitting, priced tiers."""
        return self.ladder.break_evens


# ---- Gray's rule ---------------------------------------------------------------------------


def gray_break_even_s(*, fast_usd_per_byte_s, slow_usd_per_byte_read):
    """Gray's break-even interval T* = slow_usd_per_byte_read / fast_usd_per_byte_s (seconds).

    Data of s bytes re-read every T seconds either stays in the faster tier, costing T·s·h_fast
    (h: dollars per byte-second of holding), or is fetched again from the slower tier, costing
    s·f_slow (f: dollars per byte read, the share of the slower device's time the read takes:
    its dollars per second over its bandwidth, f = h_slow·C_slow/BW_slow = h_slow x its drain
    time). Equal at T* = f_slow / h_fast = drain_slow x h_slow / h_fast; re-read more often than
    every T*, keep it in the faster tier. Gray & Putzolu 1987 ("The 5 minute rule for trading
    memory for disc accesses", SIGMOD): T* = (price per disc access per second) / (price of a
    record's memory) = $2,000 / $5 = 400 s for 1 KB records; Gray & Graefe 1997 ("The five-minute
    rule ten years later", SIGMOD Record 26(4)): (pages per MB of RAM / accesses per second per
    disk) x (price per disk drive / price per MB of RAM); Appuswamy et al. 2019 ("The five-minute
    rule thirty years later and its impact on the storage hierarchy", CACM 62(11)) apply it to
    DRAM, flash and HDD. For a random-access device f_slow = price / (IOPS x page bytes); for
    streaming KV blocks, as here, the bandwidth is the sequential read rate. Against itself
    (slow = fast) T* is the tier's drain time C/BW, SPEC C12's price-free special case.

    Omitted: the slower tier's own holding cost (Gray's data live on disc anyway; a KV block
    written once to the slower tier is kept there — if the only copy moves, T* = f_slow /
    (h_fast - h_slow), larger by h_fast/(h_fast - h_slow)); the faster tier's read cost and the
    write into the slower tier; the link between tiers (PCIe) and latency; capacity limits;
    power, floor space and the cost of capital (prices are rent, or capex spread straight-line —
    with one amortisation period for both tiers it cancels). Accepts numpy arrays (broadcast).
    """
    h = require_array("fast_usd_per_byte_s", fast_usd_per_byte_s, minimum=0, exclusive=True,
                      hint="dollars per byte-second of holding in the faster tier")
    f = require_array("slow_usd_per_byte_read", slow_usd_per_byte_read, minimum=0,
                      hint="dollars per byte read from the slower tier")
    return f / h


@dataclass(frozen=True, kw_only=True)
class BreakEven:
    """Gray's break-even interval between two adjacent rungs of a ladder of tiers."""

    faster: str
    slower: str
    hold_s: float


@dataclass(frozen=True, kw_only=True)
class GrayLadder:
    """Priced tiers ordered by holding price per byte, dearest first (the "faster" of each pair),
    with the break-even interval between neighbours; ``skipped`` names the tiers left off and why."""

    tiers: tuple[str, ...]
    break_evens: tuple[BreakEven, ...]
    skipped: tuple[tuple[str, str], ...] = ()

    def tier_for(self, hold_s: float) -> str | None:
        """Gray's rule down the ladder: data re-read every ``hold_s`` moves to the next, cheaper rung
        while ``hold_s`` exceeds the break-even between them, and stays at the first rung where it
        does not. None with fewer than two rungs (nothing to compare)."""
        if len(self.tiers) < 2:
            return None
        for even in self.break_evens:
            if hold_s <= even.hold_s:
                return even.faster
        return self.tiers[-1]


def gray_ladder(rungs) -> GrayLadder:
    """The ladder of ``(name, holding_usd_per_byte_s, drain_s)`` triples: those with a positive
    price and a known drain time, dearest per byte first (ties: faster-draining first); break-even
    between neighbours a, b is ``gray_break_even_s(h_a, h_b·drain_b)``. A free tier (price 0) is
    skipped: holding there costs nothing, so Gray's trade-off does not arise."""
    kept, skipped = [], []
    for name, price, drain in rungs:
        if price is None:
            skipped.append((name, "no price"))
        elif drain is None:
            skipped.append((name, "bandwidth unknown"))
        elif price <= 0:
            skipped.append((name, "free to hold (price 0)"))
        else:
            kept.append((float(price), float(drain), name))
    kept.sort(key=lambda r: (-r[0], r[1]))
    evens = tuple(BreakEven(faster=a[2], slower=b[2],
                            hold_s=float(gray_break_even_s(fast_usd_per_byte_s=a[0],
                                                           slow_usd_per_byte_read=b[0] * b[1])))
                  for a, b in zip(kept, kept[1:]))
    return GrayLadder(tiers=tuple(r[2] for r in kept), break_evens=evens, skipped=tuple(skipped))


def tier_rungs(tiers: Sequence[MemoryTier]) -> list[tuple[str, float | None, float | None]]:
    """``(name, holding_usd_per_byte_s, drain_s)`` of each tier, for ``gray_ladder``."""
    return [(t.name, t.holding_usd_per_byte_s, t.drain_s) for t in tiers]


def five_minute_tier(tiers: Sequence[MemoryTier], *, hold_s: float) -> str | None:
    """Where Gray's five-minute rule puts data re-read every ``hold_s`` among ``tiers`` (each needs
    a price and a bandwidth; see ``gray_ladder``); None with fewer than two such tiers."""
    return gray_ladder(tier_rungs(tiers)).tier_for(hold_s)


def break_even_price_ratio(slower: MemoryTier, *, hold_s: float) -> float:
    """The faster tier's holding price per byte over ``slower``'s at which Gray's break-even equals
    ``hold_s``: from T* = drain_slow x h_slow / h_fast = hold, h_fast / h_slow = drain_slow / hold.
    Data re-read every ``hold_s`` belongs in ``slower`` iff the faster tier costs more than this many
    times ``slower`` per byte (with one amortisation period for both, the ratio of their purchase
    prices per byte). Price-free: it needs only ``slower``'s drain time."""
    require_number("hold", hold_s, minimum=0, exclusive=True, hint="seconds")
    if slower.drain_s is None:
        raise SpecError(f"memory tier {slower.name}: bandwidth unknown, so no break-even price ratio; "
                        f"give its bandwidth")
    return float(gray_break_even_s(fast_usd_per_byte_s=1.0, slow_usd_per_byte_read=slower.drain_s)) / hold_s


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
    out = []
    for t in tiers:
        if t.kind == "hbm":
            # the deployment's share of the domain's HBM and bandwidth: its chips, not the whole system
            share = dep.plan.chips / dep.system.chips
            t = replace(t, capacity_bytes=t.capacity_bytes * share,
                        bandwidth_bytes_per_s=t.bandwidth_bytes_per_s * share,
                        usd_per_hour=None if price_per_chip_hour is None else price_per_chip_hour * dep.plan.chips)
        out.append(t)
    return with_tier_prices(out, tier_prices)


def with_tier_prices(tiers: Sequence[MemoryTier], tier_prices: Mapping[str, float] | None) -> tuple[MemoryTier, ...]:
    """``tiers`` with ``usd_per_hour`` set to ``tier_prices[name]`` (USD per hour for the whole tier)
    where given; a name that is no tier's, or a price that is not a number >= 0, is a SpecError."""
    names = [t.name for t in tiers]
    prices = dict(tier_prices or {})
    for name, usd in prices.items():  # field "tier_price": the front-ends' name for ``tier_prices``
        if name not in names:
            raise SpecError(f"no tier named '{name}'{did_you_mean(name, names)}", field="tier_price",
                            fix=f"tiers: {', '.join(names)}")
        try:
            require_number("tier_price", usd, minimum=0, hint="USD per hour for the whole tier")
        except SpecError as exc:
            raise SpecError(exc.rule, field="tier_price", value=name, fix=exc.fix) from None
    return tuple(replace(t, usd_per_hour=float(prices[t.name])) if t.name in prices else t for t in tiers)


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
    options, fitting = [], []
    for t in tiers:
        capacity = t.capacity_bytes
        if t.kind == "hbm":
            capacity = max(0.0, capacity - dep.weights_per_chip_bytes * dep.plan.chips)
        retrieve_s = None if t.bandwidth_bytes_per_s is None else total / t.bandwidth_bytes_per_s
        hold_usd = retrieve_usd = None
        h = t.holding_usd_per_byte_s  # the whole tier's dollars per second, spread over its bytes
        if h is not None:
            hold_usd = h * hold_s * total
            if retrieve_s is not None:
                retrieve_usd = h * t.capacity_bytes * retrieve_s
        options.append(TierOption(tier=t.name, capacity_bytes=capacity, drain_s=t.drain_s, fits=total <= capacity,
                                  retrieve_s=retrieve_s, hold_usd=hold_usd, retrieve_usd=retrieve_usd,
                                  consistent=None))
        if total <= capacity:
            fitting.append(t)
    ladder = gray_ladder(tier_rungs(fitting))
    chosen = ladder.tier_for(hold_s)
    if chosen is not None:
        options = [replace(o, consistent=o.tier == chosen) if o.tier in ladder.tiers else o for o in options]
    chip_s_per_token = float(prefill_chip_s_per_token(dep, np.asarray([float(context)]),
                                                      balance_batch=balance_batch_of(dep))[0])
    if not math.isfinite(chip_s_per_token):
        raise SpecError(f"one prompt of {context:,.0f} tokens does not fit this deployment", field="context")
    recompute_chip_s = chip_s_per_token * context * sequences
    return CachePlacement(sequences=float(sequences), context=float(context), hold_s=float(hold_s),
                          bytes_total=total, bytes_per_sequence=per_seq, options=tuple(options), ladder=ladder,
                          recompute_s=recompute_chip_s / dep.plan.chips,
                          recompute_usd=recompute_chip_s * price_per_chip_hour / SECONDS_PER_HOUR)
