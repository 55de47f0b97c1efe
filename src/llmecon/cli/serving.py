"""CLI command ``simulate``: the serving simulator (SPEC E20). Thin: parse -> ``commands.simulate`` -> report."""

from __future__ import annotations

import sys
from typing import Annotated, Optional

import typer

from ..commands.simulate import SimulateRequest
from .options import JsonOpt, _check_plot_path, _emit_json, _power_basis, _show, app, takes

PROGRESS_MIN_REQUESTS = 50_000
# show a progress bar (stderr TTY only) for runs at least this large


@app.command("simulate")
@takes(SimulateRequest)
def simulate_cmd(
    req: SimulateRequest,
    plot: Annotated[Optional[str], typer.Option("--plot", help="Write latency CDFs and queue length over time "
                                                               "(PNG/SVG/PDF).")] = None,
    requests_out: Annotated[Optional[str], typer.Option("--requests-out", help="Write the per-request table (.csv, "
                                                                               "or .parquet with pyarrow).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Simulate serving traffic: continuous batching, train schedule, adaptive dispatch or
    prefill/decode disaggregation, with step times from the roofline of each actual batch.

    Without --tp/--ep/--pp the plan is the smallest that holds the weights in half of HBM.
    With --spec-tokens k each decode iteration is a verify step over k+1 tokens plus k draft passes
    (--draft: MTP or a draft model) and every running request advances by the expected accepted
    tokens E (docs/serving.md).
    """
    from ..commands.simulate import simulate
    from ..report.serving import check_requests_path, plot_simulation, write_requests
    from ..report.serving_tables import simulate_view

    # validate everything before running (nothing is written half-way)
    if plot:
        _check_plot_path(plot)
    if requests_out:
        check_requests_path(requests_out)
    r = simulate(req, run=_run)
    d = r.to_dict()
    if requests_out:
        write_requests(r.result, requests_out)
    if plot:
        dep = r.deployment
        plot_simulation(r.result, plot, title=f"{dep.model.name} on {dep.system.name}, {r.config.policy.name}")
    if as_json:
        _emit_json(d)
        return
    _show(simulate_view(d, plot, requests_out, r.rate, _power_basis(r.deployment.system, r.rate)))


def _run(dep, wl, cfg):
    from ..serving import simulate

    if wl.n < PROGRESS_MIN_REQUESTS or not sys.stderr.isatty():
        return simulate(dep, wl, cfg)
    from rich.console import Console
    from rich.progress import Progress

    with Progress(console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task("simulating", total=1.0)
        return simulate(dep, wl, cfg, progress=lambda f: bar.update(task, completed=f))
