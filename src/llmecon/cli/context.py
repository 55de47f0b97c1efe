"""CLI commands for context length, KV-cache tiers and cost: ``context``, ``cost``, ``cache`` and ``catalog
tiers`` (``prices list|infer|tiers``: cli/prices.py). Thin: parse -> library call -> report (see
cli/__init__.py)."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from ..commands.cache import CacheRequest
from ..commands.deployment import ContextRequest, CostRequest
from .options import JsonOpt, _check_plot_path, _emit_json, _show, app, catalog_app, takes


# ---- context --------------------------------------------------------------------------------


@app.command("context")
@takes(ContextRequest, exclude=("adp", "redundant_experts", "spec_tokens", "acceptance", "draft"))
def context_cmd(
    req: ContextRequest,
    plot: Annotated[Optional[str], typer.Option("--plot", help="Write cost-vs-context figure (PNG/SVG/PDF).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """KV economics against context length: KV bytes per token, crossover context, memory wall, and
    cost per input and output token from 256 tokens to the longest context that fits."""
    from ..commands.deployment import context as run
    from ..report.context import plot_context
    from ..report.context_tables import context_view

    if plot:
        _check_plot_path(plot)
    r = run(req, what="llmecon context")
    d = r.to_dict()
    if plot:
        plot_context(r.economics, r.deployment, plot, price_per_chip_hour=r.price_per_chip_hour,
                     utilization=req.utilization)
    if as_json:
        _emit_json(d)
        return
    _show(context_view(r, d, plot))


# ---- cost -----------------------------------------------------------------------------------


@app.command("cost")
@takes(CostRequest, exclude=("adp", "redundant_experts"))
def cost_cmd(req: CostRequest, as_json: JsonOpt = False) -> None:
    """$ per million input and output tokens for a deployment, and the margin against a list price.
    With --spec-tokens, output tokens are decoded speculatively (E tokens per verify step); with
    --cache-hit, input is blended over prefix-cache hits and misses (docs/assumptions.md)."""
    from ..commands.deployment import cost as run
    from ..report.context_tables import cost_view

    r = run(req)
    d = r.to_dict(power_basis=req.power_basis, mode_requested=req.mode)
    if as_json:
        _emit_json(d)
        return
    _show(cost_view(r, d, cache_hit=req.cache_hit, utilization=req.utilization, context=req.context,
                    power_basis=req.power_basis))


# ---- cache ----------------------------------------------------------------------------------


@app.command("cache")
@takes(CacheRequest)
def cache_cmd(req: CacheRequest, as_json: JsonOpt = False) -> None:
    """Where to keep a KV/prefix cache: each memory tier (hold + read-back cost, drain time) against
    recomputing it by prefill; the tier Gray's five-minute rule picks from the tiers' prices."""
    from ..commands.cache import cache
    from ..report.context_tables import cache_view

    r = cache(req)
    if as_json:
        _emit_json(r.to_dict())
        return
    _show(cache_view(r, sequences=req.sequences, context=req.context))


@catalog_app.command("tiers")
def catalog_tiers(system: Annotated[Optional[str], typer.Option("--system", "-s", help="One system only.")] = None,
                  as_json: JsonOpt = False) -> None:
    """Memory tiers per system (HBM, host memory, local NVMe) and storage devices, with drain times."""
    from ..commands.catalog import tiers
    from ..report.context_tables import tiers_view

    d = tiers(system)
    if as_json:
        _emit_json(d)
    else:
        _show(tiers_view(d))
