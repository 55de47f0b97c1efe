"""Commands on one deployment: analyze (the main job), step, batch, model, and the catalogue
listings. Thin: parse -> library call -> report view."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from ..commands.deployment import AnalyzeRequest, BatchRequest, StepRequest
from ..commands.catalog import ModelRequest
from .options import JsonOpt, _check_plot_path, _emit_json, _show, app, catalog_app, takes


@app.command()
@takes(AnalyzeRequest)
def analyze(
    req: AnalyzeRequest, as_json: JsonOpt = False,
    report: Annotated[Optional[str], typer.Option("--report", help="Also write a self-contained HTML report "
                                                                   "(headline numbers, figures, assumptions).")] = None,
) -> None:
    """The main job: one screen with the headline numbers of a deployment and which bound binds where.

    Without --tp/--ep/--pp the plan is the smallest that holds the weights in half of HBM.
    """
    from ..commands.deployment import analyze as run
    from ..report.analyze import analysis_dict, floor_dict
    from ..report.analyze_tables import analyze_view

    report_path = None
    if report is not None:
        from ..report.html import check_html_path  # only with --report (html.entities: ~6 ms at start-up)

        report_path = check_html_path(report, "--report")
    r = run(req)
    dep, a, floor = r.deployment, r.analysis, r.floor
    if report_path is not None:
        from ..report.analyze_html import analyze_report
        from ..report.html import write_html

        write_html(report_path, analyze_report(dep, a.economics, a.step, a.batch))
    if as_json:
        _emit_json({**analysis_dict(a), "mode_requested": req.mode, "ideal_floor": floor_dict(floor, a.step)})
        return
    _show(analyze_view(r, report if report_path is not None else None))


@app.command()
@takes(StepRequest)
def step(req: StepRequest, as_json: JsonOpt = False) -> None:
    """Time of one decode or prefill step, and which of compute, memory or communication binds.

    Without --tp/--ep/--pp the plan is the smallest that holds the weights in half of HBM. With
    --spec-tokens k (decode): the verify step over k+1 tokens, the draft cost, TPOT per output token
    and the batch at which speculation stops paying.
    """
    from ..commands.deployment import step as run
    from ..report.analyze_tables import step_view

    r = run(req)
    d = r.to_dict()
    if as_json:
        _emit_json(d)
        return
    _show(step_view(req, r, d))


@app.command("batch")
@takes(BatchRequest)
def batch_cmd(
    req: BatchRequest,
    plot: Annotated[Optional[str], typer.Option("--plot", help="Write latency/cost-vs-batch figure (PNG/SVG/PDF).")]
    = None,
    as_json: JsonOpt = False,
) -> None:
    """Latency and cost per token against batch; balance batch, latency floor, drain time, and the
    cost of not batching.

    Without --tp/--ep/--pp the plan is the smallest that holds the weights in half of HBM. With
    --spec-tokens: TPOT and cost per output token with speculative decoding beside plain decoding's,
    and the batch at which speculation stops paying.
    """
    from ..commands.deployment import batch as run
    from ..report.analyze import plot_batch_curve
    from ..report.analyze_tables import batch_view

    if plot:
        _check_plot_path(plot)
    r = run(req)
    if plot:
        plot_batch_curve(r.economics.curve, r.deployment, plot, economics=r.economics)
    d = r.to_dict()
    if as_json:
        _emit_json(d)
        return
    _show(batch_view(req, r, d, plot))


@app.command("model")
@takes(ModelRequest)
def model_cmd(req: ModelRequest, as_json: JsonOpt = False) -> None:
    """Derived facts of a model: parameters per component, KV bytes per token, attention and MoE shape."""
    from ..commands.catalog import model
    from ..report.analyze_tables import model_view

    r = model(req)
    if as_json:
        _emit_json(r.view)
        return
    _show(model_view(r.model, r.view))


@catalog_app.command("accelerators")
def catalog_accelerators(as_json: JsonOpt = False) -> None:
    """Chips: dense peak FLOP/s per dtype, HBM capacity and bandwidth, sources."""
    from ..commands.catalog import accelerators
    from ..report.analyze_tables import accelerators_view

    d = accelerators()
    if as_json:
        _emit_json(d)
    else:
        _show(accelerators_view(d["accelerators"]))


@catalog_app.command("systems")
def catalog_systems(as_json: JsonOpt = False) -> None:
    """Systems: scale-up domain (chips, per-direction link bandwidth) and scale-out network."""
    from ..commands.catalog import systems
    from ..report.analyze_tables import systems_view

    d = systems()
    if as_json:
        _emit_json(d)
    else:
        _show(systems_view(d["systems"]))


@catalog_app.command("models")
def catalog_models(as_json: JsonOpt = False) -> None:
    """Models shipped with llmecon (any config.json path works too)."""
    from ..commands.catalog import models
    from ..report.analyze_tables import models_view

    d = models()
    if as_json:
        _emit_json(d)
    else:
        _show(models_view(d["models"]))
