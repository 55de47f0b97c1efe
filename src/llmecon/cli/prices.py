"""CLI commands for API price sheets: ``prices list|infer|tiers``. Thin: parse (the request classes of
``commands.prices``) -> command -> the text view of ``report.prices_tables`` (see cli/__init__.py)."""

from __future__ import annotations

import typer

from ..commands.prices import InferRequest, PriceListRequest, TiersRequest
from ..report.prices_tables import infer_view, list_view, tiers_view
from .options import JsonOpt, _console, _emit_json, _show, app, takes

prices_app = typer.Typer(add_completion=False, no_args_is_help=True,
                         help="API price sheets: list them, read them backwards, design context tiers.")
app.add_typer(prices_app, name="prices")

@prices_app.command("list")
@takes(PriceListRequest)
def prices_list(req: PriceListRequest, as_json: JsonOpt = False) -> None:
    """Every catalogued price sheet (USD per million tokens, dated and sourced). --cache-hit RATE adds
    the blended input price, (1 - h·f)·input + h·f·cached, where the sheet prices cached input."""
    from ..commands.prices import price_list

    rows = price_list(req)
    if as_json:
        _emit_json({"sheets": rows})
        return
    _show(list_view(rows, req.cache_hit, _console().width))


@prices_app.command("infer")
@takes(InferRequest)
def prices_infer(req: InferRequest, as_json: JsonOpt = False) -> None:
    """Read a price sheet backwards: KV bytes per token from a long-context price step, the operating
    point its output/input ratio implies, memory tiers consistent with its cache prices, and the
    batch ratio behind a fast-mode premium. Every assumption is printed."""
    from ..commands.prices import infer_request

    out = infer_request(req)
    if as_json:
        _emit_json(out)
        return
    _show(infer_view(out))


@prices_app.command("tiers")
@takes(TiersRequest)
def prices_tiers(req: TiersRequest, as_json: JsonOpt = False) -> None:
    """Design context-length price tiers that never sell below cost on a given deployment, and check a
    provider's published tiers against the same cost curve."""
    from ..commands.prices import tiers

    r = tiers(req)
    if as_json:
        _emit_json(r.view)
        return
    _show(tiers_view(r, req))
