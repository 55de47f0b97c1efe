"""A price sheet read backwards (SPEC C10–C13), assembled into one JSON-ready dict for the
front-ends (``llmecon prices infer`` and the web API call this one function).

The analyses live in ``pricing``; this module only chooses the inputs' grid and gathers the
results: KV bytes per token from a long-context price step over assumed active parameters and
FLOP/byte ratios of candidate chips, the operating point implied by the output/input ratio, the
memory tiers consistent with the cache prices, and the batch ratio behind each fast-mode premium.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace

from ..catalog.hardware import get_accelerator, get_system
from ..errors import SpecError, require_number
from ..spec.hardware import MemoryTier
from ..spec.prices import PriceSheet
from ..econ.kvcache import with_tier_prices
from ..econ.pricing import (cache_tier_fit, five_minute_tiers, infer_fast_mode, infer_kv_from_price_step,
    operating_point, tier_break_evens)
from .context import break_even_rows, fast_mode_dict, kv_inference_dict, tier_fit_rows


def flops_per_byte_grid(chips: list[str], dtypes: list[str]) -> list[tuple[str, float]]:
    """(label, FLOP/byte) for each chip × the dtype it would compute in (duplicates dropped)."""
    grid, seen = [], set()
    for chip in chips:
        a = get_accelerator(chip)
        for dt in dtypes:
            run = a.compute_dtype(dt)
            if (chip, run) in seen:
                continue
            seen.add((chip, run))
            grid.append((f"{chip} {run}", a.flops_per_byte(run)))
    return grid


def infer_sheet(sheet: PriceSheet, *, active_params: list[float], chips: list[str], dtypes: list[str],
                system: str, extra_tiers: list[MemoryTier] = (), kv_bytes_per_token: float | None = None,
                price_per_chip_hour: float | None = None, tier_prices: Mapping[str, float] | None = None,
                cache_hit_rate: float | None = None, cached_fraction: float = 1.0) -> dict:
    """Everything a price sheet implies, with its assumptions (see module docstring).

    ``kv_bytes_per_token`` for the cache analysis defaults to the geometric middle of the range
    inferred from the price step; ``extra_tiers`` adds storage tiers (``catalog.hardware.device_tier``)
    below the system's own memory tiers; ``price_per_chip_hour`` replaces the HBM tier's rent and
    ``tier_prices`` (USD per hour for a whole tier, by name) prices the others for Gray's rule.
    A sheet with a cached-input price adds ``cached_input`` (``econ.cache_hit.cached_input_reading``,
    blended at ``cache_hit_rate`` with ``cached_fraction`` of each hit prompt cached).
    """
    if price_per_chip_hour is not None:
        require_number("--price-per-chip-hour", price_per_chip_hour, minimum=0, hint="dollars per chip-hour")
    if kv_bytes_per_token is not None:
        require_number("kv_bytes_per_token", kv_bytes_per_token, minimum=0, exclusive=True,
                       hint="bytes of KV per token")
    out: dict = {"provider": sheet.provider, "model": sheet.model, "as_of": sheet.as_of, "status": sheet.status,
                 "source": sheet.source}
    kv_mid = kv_bytes_per_token
    k = None
    if sheet.long_context:
        k = infer_kv_from_price_step(sheet, active_params=active_params,
                                     flops_per_byte=flops_per_byte_grid(chips, dtypes))
        out["kv_from_price_step"] = kv_inference_dict(k)
        if kv_mid is None:
            kv_mid = math.sqrt(k.low * k.high)
    op = operating_point(sheet.output_input_ratio)
    out["operating_point"] = {"price_ratio": op.ratio,
                              "batch_over_balance_at_short_context": op.batch_over_balance_at_short_context,
                              "context_over_crossover_at_balance": op.context_over_crossover_at_balance,
                              "note": "if prices were proportional to roofline cost: B*/B + L/L_x = ratio"}
    if k is not None:
        out["operating_point"]["context_at_balance_tokens"] = op.context_over_crossover_at_balance * k.crossover_context
    s = get_system(system)
    tiers = list(s.memory_tiers) + list(extra_tiers)
    if price_per_chip_hour is not None:
        tiers[0] = replace(tiers[0], usd_per_hour=price_per_chip_hour * s.chips)
    tiers = list(with_tier_prices(tiers, tier_prices))
    if sheet.cache_writes:
        fits = cache_tier_fit(sheet, tiers, kv_bytes_per_token=kv_mid)
        five = [{"hold_s": h, "tier": t} for h, t in five_minute_tiers(fits).items()]
        out["cache_tiers"] = {"system": system, "kv_bytes_per_token": kv_mid, "fits": tier_fit_rows(fits),
                              "five_minute_tier": five, "break_even_holds": break_even_rows(tier_break_evens(tiers))}
    if cache_hit_rate is not None:
        require_number("cache_hit", cache_hit_rate, minimum=0, maximum=1, hint="a hit rate, e.g. 0.5")
    require_number("cached_fraction", cached_fraction, minimum=0, maximum=1, hint="cached prefix / prompt")
    if sheet.cached_input_usd_per_mtok is not None and sheet.input_usd_per_mtok > 0:
        from ..econ.cache_hit import cached_input_reading

        out["cached_input"] = cached_input_reading(input_usd_per_mtok=sheet.input_usd_per_mtok,
                                                   cached_input_usd_per_mtok=sheet.cached_input_usd_per_mtok,
                                                   cache_hit_rate=cache_hit_rate, cached_fraction=cached_fraction)
    elif cache_hit_rate is not None:
        raise SpecError(f"price sheet {sheet.provider}/{sheet.model} has no cached-input price to blend",
                        field="cache_hit", fix="pick a sheet with a 'cached' column (llmecon prices list)")
    out["premiums"] = [fast_mode_dict(p.name, infer_fast_mode(price_ratio=p.output_usd_per_mtok
                                                              / sheet.output_usd_per_mtok, speedup=p.speedup))
                       for p in sheet.premiums if p.speedup is not None]
    return out
