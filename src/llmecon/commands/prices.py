"""Commands on prices: ``tco`` ($/chip-hour from capex, power and hosting, ``resolve.tco``) and ``prices
infer`` (a price sheet read backwards, ``report.price_sheet.infer_sheet``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .args import DEFAULT_SYSTEM, TcoArgs, arg


@dataclass(frozen=True)
class TcoRequest(TcoArgs):
    system: str = arg(DEFAULT_SYSTEM, "Catalogue system (llmecon catalog systems).", flags=("--system", "-s"),
                      kind="system", web_help="Catalogue system (GET /api/catalog).")
    tco: Any = arg(None, "TCO inputs, a TOML file (template: docs/tco.md): $/chip-hour from capex, power and "
                   "hosting, in place of --price-per-chip-hour.", web=False)
    defaults: bool = arg(False, "Fill every input not given from the catalogue's sourced defaults (economics.yaml; "
                         "used anyway when no input is given).", web=False)
    #: no input at all means the catalogue's defaults (the CLI); the web asks for its inputs
    empty_means_defaults: bool = arg(True, "", cli=False, web=False, web_default=False)


@dataclass(frozen=True)
class TcoOutcome:
    rate: Any  # econ.tco.TcoRate
    system: Any

    def to_dict(self) -> dict:
        from ..report.tco import tco_dict

        return tco_dict(self.rate, self.system.name)


def tco(req: TcoRequest) -> TcoOutcome:
    """$/chip-hour from total cost of ownership; flags override the TOML file; with no input (or
    ``defaults``), the catalogue's sourced defaults for the system."""
    from ..catalog.hardware import get_system
    from ..resolve import tco as resolve_tco

    s = get_system(req.system)
    values = req.tco_values()
    nothing = req.tco is None and all(v is None for v in values.values())
    rate = resolve_tco(s, path=req.tco, values=values, defaults=req.defaults or (nothing and req.empty_means_defaults))
    return TcoOutcome(rate, s)


def infer(*, provider: str, model: str, active_params, chips, dtypes, system: str, kv_bytes_per_token=None,
          price_per_chip_hour=None, extra_tiers=(), tier_prices=None, cache_hit_rate=None,
          cached_fraction: float = 1.0) -> dict:
    """``prices infer``: the provider's sheet for ``model`` read backwards (``report.price_sheet.infer_sheet``)."""
    from ..catalog.prices import get_price_sheet
    from ..report.price_sheet import infer_sheet

    return infer_sheet(get_price_sheet(provider, model), active_params=active_params, chips=chips, dtypes=dtypes,
                       system=system, extra_tiers=extra_tiers, kv_bytes_per_token=kv_bytes_per_token,
                       price_per_chip_hour=price_per_chip_hour, tier_prices=tier_prices,
                       cache_hit_rate=cache_hit_rate, cached_fraction=cached_fraction)
