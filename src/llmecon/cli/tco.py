"""CLI command ``tco``: $/chip-hour from capex, power and hosting, each part printed (econ.tco).
Thin: parse -> ``resolve.tco`` -> ``report.tco``."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from .options import DEFAULT_SYSTEM, JsonOpt, SystemOpt, TcoOpt, _console, _emit_json, _kv_table, app


def _num(flag: str, text: str):
    return Annotated[Optional[float], typer.Option(flag, help=text)]


@app.command("tco")
def tco_cmd(
    system: SystemOpt = DEFAULT_SYSTEM, tco: TcoOpt = None,
    chip_capex_usd: _num("--chip-capex-usd", "Purchase price of one accelerator, USD.") = None,
    system_capex_usd: _num("--system-capex-usd", "Everything of one system but its accelerators (hosts, NICs, "
                                                 "switches, rack, scale-out share), USD.") = None,
    amortisation_years: _num("--amortisation-years", "Years the capex is recovered over (1/12 to 100).") = None,
    cost_of_capital: _num("--cost-of-capital", "Annual cost of capital as a fraction (0.08 = 8%; 0 = straight "
                                               "line).") = None,
    watts_per_chip: _num("--watts-per-chip", "Rated watts per chip (default: the catalogue TDP).") = None,
    power_utilization: _num("--power-utilization", "Average draw / watts per chip (default 1.0 = TDP, an upper "
                                                   "bound).") = None,
    pue: _num("--pue", "Power usage effectiveness: facility power / IT power (1 to 10).") = None,
    usd_per_kwh: _num("--usd-per-kwh", "Electricity price, USD per kWh.") = None,
    hosting_usd_per_rack_month: _num("--hosting-usd-per-rack-month", "Hosting per rack and month, power "
                                                                     "excluded, USD (with --chips-per-rack).") = None,
    chips_per_rack: Annotated[Optional[int], typer.Option("--chips-per-rack", help="Accelerators in one rack.")] = None,
    hosting_usd_per_chip_month: _num("--hosting-usd-per-chip-month", "Hosting per chip and month, power excluded, "
                                                                     "USD.") = None,
    defaults: Annotated[bool, typer.Option("--defaults", help="Fill every input not given from the catalogue's "
                                                             "sourced defaults (economics.yaml; used anyway when "
                                                             "no input is given).")] = False,
    as_json: JsonOpt = False,
) -> None:
    """$/chip-hour from total cost of ownership: capital (annuitised over amortisation years at the cost
    of capital), power (W x utilisation x PUE x $/kWh) and hosting; each part per chip-hour and per
    system-hour. With no input (or --defaults): the catalogue's sourced defaults for the system, each
    figure named; else only the chip's power has a default (its catalogue TDP); flags override --tco FILE."""
    from ..catalog.hardware import get_system
    from ..report.tco import tco_dict
    from ..resolve import tco as resolve_tco

    s = get_system(system)
    values = dict(chip_capex_usd=chip_capex_usd, system_capex_usd=system_capex_usd,
                  amortisation_years=amortisation_years, cost_of_capital=cost_of_capital, watts_per_chip=watts_per_chip,
                  power_utilization=power_utilization, pue=pue, usd_per_kwh=usd_per_kwh,
                  hosting_usd_per_rack_month=hosting_usd_per_rack_month, chips_per_rack=chips_per_rack,
                  hosting_usd_per_chip_month=hosting_usd_per_chip_month)
    nothing = tco is None and all(v is None for v in values.values())
    rate = resolve_tco(s, path=tco, values=values, defaults=defaults or nothing)
    d = tco_dict(rate, s.name)
    if as_json:
        _emit_json(d)
        return
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
    console = _console()
    console.print(_kv_table("llmecon tco", rows))
    for note in d["assumptions"]:
        console.print(f"[dim]assumption: {note}[/dim]", soft_wrap=True, highlight=False)
