"""CLI command ``tco``: $/chip-hour from capex, power and hosting, each part printed (econ.tco).
Thin: parse -> ``commands.prices.tco`` -> ``report.tco``."""

from __future__ import annotations

from ..commands.prices import TcoRequest
from .options import JsonOpt, _emit_json, _show, app, takes


@app.command("tco")
@takes(TcoRequest)
def tco_cmd(req: TcoRequest, as_json: JsonOpt = False) -> None:
    """$/chip-hour from total cost of ownership: capital (annuitised over amortisation years at the cost
    of capital), power (W x utilisation x PUE x $/kWh) and hosting; each part per chip-hour and per
    system-hour. With no input (or --defaults): the catalogue's sourced defaults for the system, each
    figure named; else only the chip's power has a default (its catalogue TDP); flags override --tco FILE."""
    from ..commands.prices import tco
    from ..report.tco import tco_view

    r = tco(req)
    d = r.to_dict()
    if as_json:
        _emit_json(d)
        return
    _show(tco_view(d, r.rate, r.system))
