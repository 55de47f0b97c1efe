"""TCO views: ``llmecon tco --json`` and the ``tco`` block of priced reports (econ.tco)."""

from __future__ import annotations

from ..econ.tco import HOURS_PER_MONTH, HOURS_PER_YEAR, PowerBasis, Rent, TcoRate
from .tables import Line, kv_table

ASSUMPTIONS = (
    "capital = (chip capex + system capex / chips per system) x CRF(r, n) / 8,766 h; CRF = r / (1 - (1 + r)^-n), "
    "the capital recovery factor (r = 0: 1/n, straight line); no residual value, taxes or insurance",
    "power = watts per chip x utilisation x PUE / 1000 (W -> kW) x $/kWh; utilisation 1.0 = the rated power, an "
    "upper bound; the catalogue defaults' watts per chip are the system's rated power over its chips (hosts, NICs "
    "and switches included), a chip's TDP leaves them out",
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
            "defaults_used": list(i.defaults_used),
            "inputs": {"chip_capex_usd": i.chip_capex_usd, "system_capex_usd": i.system_capex_usd,
                       "amortisation_years": i.amortisation_years, "cost_of_capital": i.cost_of_capital,
                       "watts_per_chip": i.watts_per_chip, "watts_source": i.watts_source,
                       "power_utilization": i.power_utilization, "pue": i.pue, "usd_per_kwh": i.usd_per_kwh,
                       "hosting_usd_per_rack_month": i.hosting_usd_per_rack_month, "chips_per_rack": i.chips_per_rack,
                       "hosting_usd_per_chip_month": i.hosting_usd_per_chip_month, "source": i.source or None,
                       "as_of": i.as_of or None, "notes": i.notes or None},
            "hours_per_year": HOURS_PER_YEAR, "hours_per_month": HOURS_PER_MONTH,
            "assumptions": list(ASSUMPTIONS)}


def price_source(price: float | None, rate: TcoRate | Rent | None) -> str | None:
    """Where a $/chip-hour came from: "price_per_chip_hour" (given), "tco" (TCO inputs given, any missing
    ones from the catalogue defaults), "tco_defaults" (every input from the catalogue defaults),
    "rent_index" (the catalogue's published rent) or None (no price)."""
    if price is None:
        return None
    if isinstance(rate, Rent):
        return "rent_index"
    if isinstance(rate, TcoRate):
        from ..catalog.tco import REQUIRED_KEYS

        return "tco_defaults" if set(REQUIRED_KEYS) <= set(rate.inputs.defaults_used) else "tco"
    return "price_per_chip_hour"


def rent_dict(rent: Rent) -> dict:
    return {"usd_per_chip_hour": rent.usd_per_chip_hour, "accelerator": rent.accelerator, "source": rent.source,
            "as_of": rent.as_of, "cite": rent.cite}


def price_fields(price: float | None, rate: TcoRate | Rent | None, system: str) -> dict:
    """Where a report's $/chip-hour came from: ``price_source`` (``price_source``), the ``tco`` block (None
    without a TCO rate) and the ``rent`` block (None without a catalogue rent)."""
    return {"price_source": price_source(price, rate),
            "tco": tco_dict(rate, system) if isinstance(rate, TcoRate) else None,
            "rent": rent_dict(rate) if isinstance(rate, Rent) else None}


def priced_fields(price: float | None, rate: TcoRate | None, power: PowerBasis, system: str) -> dict:
    """What a priced report adds: ``price_fields`` and the power tokens/s per MW divide by."""
    return {**price_fields(price, rate, system), "power": power.as_dict(), "power_basis": power.kind}


def systems_price_fields(prices: dict, rates: dict | None) -> dict:
    """``price_fields`` of a search over several systems (``plan``, ``plan --frontier``): ``prices`` {system:
    USD per chip-hour or None}, ``rates`` {system: TcoRate}; ``tco`` is {system: tco block} or None."""
    sources = sorted({price_source(p, (rates or {}).get(s)) for s, p in prices.items()} - {None})
    one = None if not sources else sources[0] if len(sources) == 1 else "mixed: " + ", ".join(sources)
    return {"price_source": one,
            "price_sources": {s: price_source(p, (rates or {}).get(s)) for s, p in prices.items()},
            "tco": {s: tco_dict(r, s) for s, r in (rates or {}).items() if isinstance(r, TcoRate)} or None,
            "rent": {s: rent_dict(r) for s, r in (rates or {}).items() if isinstance(r, Rent)} or None}


def tco_line(rate: TcoRate | Rent) -> str:
    """One line for a table: total and parts per chip-hour (a TCO rate), or the rent and its source."""
    if isinstance(rate, Rent):
        return (f"${rate.usd_per_chip_hour:,.4g}/chip-hour, the published rent of {rate.accelerator} "
                f"({rate.cite}; no price given)")
    if rate.inputs.defaults_used:
        from ..catalog.tco import REQUIRED_KEYS

        used = rate.inputs.defaults_used
        which = "every input" if set(REQUIRED_KEYS) <= set(used) else ", ".join(used)
        return (f"${rate.usd_per_chip_hour:,.4g}/chip-hour from TCO (capital ${rate.capital_usd_per_chip_hour:,.4g} + "
                f"power ${rate.power_usd_per_chip_hour:,.4g} + hosting ${rate.hosting_usd_per_chip_hour:,.4g}); "
                f"{which} from the catalogue's sourced defaults (llmecon tco lists each)")
    return (f"${rate.usd_per_chip_hour:,.4g}/chip-hour from TCO (capital ${rate.capital_usd_per_chip_hour:,.4g} + "
            f"power ${rate.power_usd_per_chip_hour:,.4g} + hosting ${rate.hosting_usd_per_chip_hour:,.4g})")


def mw_text(value: float | None, power: PowerBasis) -> str:
    """Tokens/s per MW with its basis, for a table row."""
    if value is None:
        return f"- ({power.label})"
    return f"{value:,.0f} tokens/s per MW ({power.label})"


def tco_view(d: dict, rate, s) -> list:
    """``llmecon tco``: each part of $/chip-hour with its inputs, then the assumptions."""
    i = d["inputs"]
    n = d["chips_per_system"]

    def money(x: float) -> str:
        return f"${x:,.4f}" if x < 100 else f"${x:,.2f}"

    hosting = (f"${i['hosting_usd_per_rack_month']:,.0f}/rack-month over {i['chips_per_rack']} chips"
               if i["hosting_usd_per_rack_month"] is not None else
               f"${i['hosting_usd_per_chip_month']:,.2f}/chip-month")
    rows = [("system", f"{s.name}: {n} x {s.accelerator.name}"),
            ("capital", f"{money(rate.capital_usd_per_chip_hour)}/chip-hour, "
                        f"{money(rate.capital_usd_per_chip_hour * n)}/system-hour: (${i['chip_capex_usd']:,.0f} + "
                        f"${i['system_capex_usd']:,.0f} / {n}) x CRF {rate.capital_recovery_factor:.5f} "
                        f"({i['cost_of_capital']:.4g}/year over {i['amortisation_years']:g} years) / 8,766 h"),
            ("power", f"{money(rate.power_usd_per_chip_hour)}/chip-hour, "
                      f"{money(rate.power_usd_per_chip_hour * n)}/system-hour: {i['watts_per_chip']:g} W "
                      f"({i['watts_source']}) x {i['power_utilization']:g} x PUE {i['pue']:g} / 1000 (W -> kW) "
                      f"x ${i['usd_per_kwh']:g}/kWh"),
            ("hosting", f"{money(rate.hosting_usd_per_chip_hour)}/chip-hour, "
                        f"{money(rate.hosting_usd_per_chip_hour * n)}/system-hour: {hosting} / 730.5 h"),
            ("total", f"{money(rate.usd_per_chip_hour)}/chip-hour, {money(rate.usd_per_system_hour)}/system-hour")]
    if i["source"] or i["as_of"]:
        rows.append(("inputs from", " ".join(x for x in (i["source"], f"({i['as_of']})" if i["as_of"] else "") if x)))
    if i["notes"]:
        rows.append(("notes", i["notes"]))
    view: list = [kv_table("llmecon tco", rows)]
    for note in d["assumptions"]:
        view.append(Line(f"[dim]assumption: {note}[/dim]", soft_wrap=True, markup=True))
    return view
