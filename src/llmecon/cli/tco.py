"""CLI command ``tco``: $/chip-hour from capex, power and hosting, each part printed (econ.tco).
Thin: parse -> ``commands.prices.tco`` -> ``report.tco``."""

from __future__ import annotations

from ..commands.prices import TcoRequest
from .options import JsonOpt, _console, _emit_json, _kv_table, app, takes


@app.command("tco")
@takes(TcoRequest)
def tco_cmd(req: TcoRequest, as_json: JsonOpt = False) -> None:
    """$/chip-hour from total cost of ownership: capital (annuitised over amortisation years at the cost
    of capital), power (W x utilisation x PUE x $/kWh) and hosting; each part per chip-hour and per
    system-hour. With no input (or --defaults): the catalogue's sourced defaults for the system, each
    figure named; else only the chip's power has a default (its catalogue TDP); flags override --tco FILE."""
    from ..commands.prices import tco

    r = tco(req)
    d = r.to_dict()
    if as_json:
        _emit_json(d)
        return
    _print_tco(d, r.rate, r.system)


def _print_tco(d: dict, rate, s) -> None:
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
