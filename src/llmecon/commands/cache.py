"""The ``cache`` command: where to keep a KV/prefix cache -- each memory tier (hold + read-back cost, drain
time) against recomputing it by prefill, and the tier Gray's five-minute rule picks
(``econ.kvcache.cache_placement``). Also the tier options ``prices infer`` shares."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from ..errors import SpecError
from .args import BasicDeploymentArgs, arg

TIER_PRICE_HELP = "NAME=USD_PER_HOUR for a tier (repeatable); HBM is priced from the chips."
DEVICE_HELP = "Add a storage device tier NAME[:COUNT] (llmecon catalog tiers)."


def tier_prices(items) -> dict[str, float]:
    """--tier-price NAME=USD_PER_HOUR items as {tier: USD per hour}."""
    out = {}
    for item in items:
        name, sep, value = item.rpartition("=")
        if name.strip() in out:
            raise SpecError(f"--tier-price: '{name.strip()}' given twice; give each tier's price once")
        try:
            out[name.strip()] = float(value)
        except ValueError:
            sep = ""
        if not sep or not name.strip():
            raise SpecError(f"--tier-price {item!r}: expected NAME=USD_PER_HOUR, e.g. --tier-price 'host DDR5=1.5'")
    return out


def device_tiers(items) -> list:
    """--device NAME[:COUNT] items as storage memory tiers (catalogue devices)."""
    from ..catalog.hardware import device_tier

    tiers = []
    for item in items:
        name, _, count = item.partition(":")
        try:
            n = int(count) if count else 1
        except ValueError:
            raise SpecError(f"--device {item!r}: expected NAME or NAME:COUNT, e.g. --device pm1743:8") from None
        tiers.append(device_tier(name.strip(), n))
    return tiers


@dataclass(frozen=True)
class CacheRequest(BasicDeploymentArgs):
    price_per_chip_hour: Optional[float] = arg(None, "Rent of one accelerator, USD per hour.", required=True)
    sequences: float = arg(100, "Cached sequences (prefixes).", flags=("--sequences", "-n"))
    context: float = arg(32768, "Tokens per cached sequence.", flags=("--context", "-L"))
    hold: str = arg("5 min", "How long each is kept before it is read again, e.g. '5 min', '1 h', '30 s'.")
    tier_price: Any = arg((), TIER_PRICE_HELP, kind="repeated")
    device: Any = arg((), DEVICE_HELP, kind="repeated")


@dataclass(frozen=True)
class CacheOutcome:
    deployment: Any
    placement: Any  # econ.kvcache.CachePlacement
    hold_s: float

    def to_dict(self) -> dict:
        from ..report.context import placement_dict

        return placement_dict(self.placement, self.deployment)


def cache(req: CacheRequest) -> CacheOutcome:
    from ..econ.kvcache import cache_placement, priced_tiers
    from ..units import parse

    hold_s = parse(req.hold, "s", field="--hold")
    dep = req.deployment()
    tiers = priced_tiers(dep, price_per_chip_hour=req.price_per_chip_hour, tier_prices=tier_prices(req.tier_price),
                         extra=device_tiers(req.device))
    p = cache_placement(dep, tiers, sequences=req.sequences, context=req.context, hold_s=hold_s,
                        price_per_chip_hour=req.price_per_chip_hour)
    return CacheOutcome(dep, p, hold_s)
