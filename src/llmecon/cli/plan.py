"""CLI command ``plan``: the cheapest (or fastest) deployment of a model over systems under TPOT and
TTFT targets, and the frontier (SPEC D). Thin: parse -> ``commands.plan`` -> report_plan."""

from __future__ import annotations

import os
from typing import Annotated, Optional

import typer

from ..commands.plan import PlanRequest
from .options import JsonOpt, _check_plot_path, _console, _emit_json, _show, app, takes

PIPE_WIDTH = 120  # text width when stdout is not a terminal and COLUMNS is unset


@app.command("plan")
@takes(PlanRequest, tpot_s="50ms", ttft_s="2s")
def plan_cmd(
    req: PlanRequest,
    plot: Annotated[Optional[str], typer.Option("--plot", help="Write the decode frontier figure "
                                                               "(PNG/SVG/PDF).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Plan a deployment: search systems x parallelism plans x batch under TPOT/TTFT targets and HBM, and
    show the best decode and prefill plans, why, and the throughput frontier. With --spec-tokens K the
    decode search also tries speculative decoding with k = 1..K and reports the k chosen. With --frontier,
    compare systems instead: each one's decode frontier and its tokens/s per chip and $/Mtok at
    --interactivity tokens/s per user."""
    from ..commands.plan import plan, prepare

    if plot:
        _check_plot_path(plot)
    p = prepare(req)
    console = None if as_json else _console()
    if console is not None and not console.is_terminal and "COLUMNS" not in os.environ:
        console.width = max(console.width, PIPE_WIDTH)  # a pipe or file does not wrap: keep table rows whole
    if console is not None and console.is_terminal:
        with console.status(f"searching plans of {p.model.name} on {', '.join(s.name for s in p.systems)}..."):
            r = plan(req, prepared=p)
    else:
        r = plan(req, prepared=p)
    if plot:
        from ..report.frontier import plot_frontiers
        from ..report.plan import plot_frontier

        plot_frontiers(r.frontier, plot) if req.frontier else plot_frontier(r.result, plot)
    if as_json:
        _emit_json(r.to_dict(cache_hit=req.cache_hit is not None,
                             interactivity_source="--interactivity" if r.interactivity_given else "1/tpot"))
    else:
        from ..report.plan_tables import frontier_view, plan_view

        _show(frontier_view(req, r, plot) if req.frontier else plan_view(req, r, plot), console)
