"""CLI commands for API price sheets: ``prices list|infer|tiers``. Thin: parse -> library call -> report (see
cli/__init__.py); the options and helpers they share with ``cost`` live in cli/context.py."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from ..commands.cache import device_tiers, tier_prices
from ..commands.prices import PriceListRequest, TiersRequest
from ..report.prices_tables import infer_view, list_view, tiers_view
from .options import JsonOpt, _console, _emit_json, _show, app, takes

prices_app = typer.Typer(add_completion=False, no_args_is_help=True,
                         help="API price sheets: list them, read them backwards, design context tiers.")
app.add_typer(prices_app, name="prices")

OptPriceOpt = Annotated[Optional[float], typer.Option("--price-per-chip-hour",
                                                      help="Rent of one accelerator, USD per hour (adds $ columns).")]
UtilOpt = Annotated[float, typer.Option("--utilization", help="Share of paid time the chips serve at this "
                                                              "batch (0-1]; cost is divided by it.")]
PriceModelOpt = Annotated[Optional[str], typer.Option("--price-model", help="Model name on the provider's sheet.")]
CacheHitOpt = Annotated[Optional[float], typer.Option("--cache-hit", help="Prefix-cache hit rate in [0, 1]: adds the "
                                                  "blended input $/Mtok (a hit prefills only the uncached tokens).")]


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
def prices_infer(
    provider: Annotated[str, typer.Option("--provider", help="Price-sheet provider (llmecon prices list).")],
    model: Annotated[str, typer.Option("--model", "-m", help="Model name on the provider's sheet.")],
    active_params: Annotated[list[float], typer.Option("--active-params", help="Assumed active parameters "
                                                                               "(repeatable).")] = [30e9, 100e9, 300e9],
    chip: Annotated[list[str], typer.Option("--chip", help="Accelerators the provider might serve on "
                                                           "(repeatable).")] = ["h100-sxm", "gb200", "tpu-v6e"],
    dtype: Annotated[list[str], typer.Option("--dtype", help="Weight formats to consider (repeatable).")]
    = ["bf16", "fp8"],
    kv_bytes_per_token: Annotated[Optional[float], typer.Option("--kv-bytes-per-token", help="KV size for the cache "
                                                               "analysis (default: geometric middle of the "
                                                               "inferred range).")] = None,
    system: Annotated[str, typer.Option("--system", "-s", help="System whose memory tiers the cache prices are "
                                                                "mapped onto.")] = "hgx-h100",
    device: Annotated[list[str], typer.Option("--device", help="Add a storage device tier NAME[:COUNT].")]
    = ["pm1743:8", "exos-x24:8"],
    tier_price: Annotated[list[str], typer.Option("--tier-price", help="NAME=USD_PER_HOUR for a tier (repeatable): "
                                                                       "Gray's rule needs at least two priced.")]
    = [],
    price_per_chip_hour: OptPriceOpt = None, cache_hit: CacheHitOpt = None,
    cached_fraction: Annotated[float, typer.Option("--cached-fraction", help="Share of a hit prompt billed at the "
                                                   "cached price (cached prefix / prompt), 0-1.")] = 1.0,
    as_json: JsonOpt = False,
) -> None:
    """Read a price sheet backwards: KV bytes per token from a long-context price step, the operating
    point its output/input ratio implies, memory tiers consistent with its cache prices, and the
    batch ratio behind a fast-mode premium. Every assumption is printed."""
    from ..commands.prices import infer

    out = infer(provider=provider, model=model, active_params=active_params, chips=chip, dtypes=dtype, system=system,
                extra_tiers=device_tiers(device), kv_bytes_per_token=kv_bytes_per_token,
                price_per_chip_hour=price_per_chip_hour, tier_prices=tier_prices(tier_price),
                cache_hit_rate=cache_hit, cached_fraction=cached_fraction)
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
