"""CLI command ``moe``: a mixture-of-experts deployment on a rack system (SPEC A1, A3, D14-D18):
sparsity, expert parallelism inside and across scale-up domains, pipeline across domains,
pipeline for inference, and the routed scaling law's view of the expert count. Thin: parse ->
``commands.moe`` -> report (see cli/__init__.py)."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from ..commands.moe import MoeRequest
from .options import JsonOpt, _check_plot_path, _emit_json, _show, app, takes


@app.command("moe")
@takes(MoeRequest)
def moe_cmd(
    req: MoeRequest,
    plot: Annotated[Optional[str], typer.Option("--plot", help="Write the EP figure (PNG/SVG/PDF).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """MoE on racks: sparsity, where expert parallelism across scale-up domains stops paying, whether a
    pipeline across domains is viable, pipeline stages for inference, and what the expert count buys."""
    from ..commands.moe import check, moe
    from ..report.moe import plot_moe
    from ..report.moe_tables import moe_view

    check(req)
    if plot:
        _check_plot_path(plot)
    r = moe(req)
    if plot:
        plot_moe(r.summary, r.system.chips, plot)
    if as_json:
        _emit_json(r.to_dict(req.law))
        return
    _show(moe_view(r, req, plot))
