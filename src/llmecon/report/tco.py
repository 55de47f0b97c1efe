"""TCO views: ``llmecon tco --json`` and the ``tco`` block of priced reports (econ.tco)."""

from __future__ import annotations

from ..econ.tco import HOURS_PER_MONTH, HOURS_PER_YEAR, PowerBasis, TcoRate

ASSUMPTIONS = (
    "capital = (chip capex + system capex / chips per system) x CRF(r, n) / 8,766 h; CRF = r / (1 - (1 + r)^-n), "
    "the capital recovery factor (r = 0: 1/n, straight line); no residual value, taxes or insurance",
    "power = watts per chip x utilisation x PUE / 1000 (W -> kW) x $/kWh; utilisation 1.0 = the rated power "
    "(TDP), an upper bound for the chip; hosts, NICs and switches are left out unless watts_per_chip is given all-in",
    "hosting = $/rack-month / chips per rack (or $/chip-month) / 730.5 h, power excluded (billed above)",
    "every hour of the year is paid for; idle time is the serving reports' utilization",
)


def tco_dict(rate: TcoRate, system: str) -> dict:
    """Each part per chip-hour and per system-hour, the inputs and the assumptions."""
    i = rate.inputs
    n = i.chips_per_system
    parts = {"capital": rate.capital_usd_per_chip_hour, "power": rate.power_usd_per_chip_hour,
             "hosting": rate.hosting_usd_per_chip_hour}
    return {"system": system, "chips_per_system": n,
            "usd_per_chip_hour": rate.usd_per_chip_hour, "usd_per_system_hour": rate.usd_per_system_hour,
            "parts_usd_per_chip_hour": parts, "parts_usd_per_system_hour": {k: v * n for k, v in parts.items()},
            "capital_recovery_factor": rate.capital_recovery_factor,
            "facility_watts_per_chip": rate.facility_watts_per_chip,
            "inputs": {"chip_capex_usd": i.chip_capex_usd, "system_capex_usd": i.system_capex_usd,
                       "amortisation_years": i.amortisation_years, "cost_of_capital": i.cost_of_capital,
                       "watts_per_chip": i.watts_per_chip, "watts_source": i.watts_source,
                       "power_utilization": i.power_utilization, "pue": i.pue, "usd_per_kwh": i.usd_per_kwh,
                       "hosting_usd_per_rack_month": i.hosting_usd_per_rack_month, "chips_per_rack": i.chips_per_rack,
                       "hosting_usd_per_chip_month": i.hosting_usd_per_chip_month, "source": i.source or None,
                       "as_of": i.as_of or None, "notes": i.notes or None},
            "hours_per_year": HOURS_PER_YEAR, "hours_per_month": HOURS_PER_MONTH,
            "assumptions": list(ASSUMPTIONS)}


def price_fields(price: float | None, rate: TcoRate | None, system: str) -> dict:
    """Where a report's $/chip-hour came from: ``price_source`` ("tco", "price_per_chip_hour" or None) and
    the ``tco`` block (None without TCO inputs)."""
    return {"price_source": None if price is None else ("tco" if rate is not None else "price_per_chip_hour"),
            "tco": None if rate is None else tco_dict(rate, system)}


def priced_fields(price: float | None, rate: TcoRate | None, power: PowerBasis, system: str) -> dict:
    """What a priced report adds: ``price_fields`` and the power tokens/s per MW divide by."""
    return {**price_fields(price, rate, system), "power": power.as_dict()}


def systems_price_fields(prices: dict, rates: dict | None) -> dict:
    """``price_fields`` of a search over several systems (``plan``, ``plan --frontier``): ``prices`` {system:
    USD per chip-hour or None}, ``rates`` {system: TcoRate}; ``tco`` is {system: tco block} or None."""
    return {"price_source": "tco" if rates else ("price_per_chip_hour" if any(
                v is not None for v in prices.values()) else None),
            "tco": {s: tco_dict(rate, s) for s, rate in (rates or {}).items()} or None}


def tco_line(rate: TcoRate) -> str:
    """One line for a table: total and parts per chip-hour."""
    return (f"${rate.usd_per_chip_hour:,.4g}/chip-hour from TCO (capital ${rate.capital_usd_per_chip_hour:,.4g} + "
            f"power ${rate.power_usd_per_chip_hour:,.4g} + hosting ${rate.hosting_usd_per_chip_hour:,.4g})")


def mw_text(value: float | None, power: PowerBasis) -> str:
    """Tokens/s per MW with its basis, for a table row."""
    if value is None:
        return f"- ({power.label})"
    return f"{value:,.0f} tokens/s per MW ({power.label})"
