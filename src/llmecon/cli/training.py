"""CLI commands for training economics: ``train`` (step time, MFU, memory of a plan on a cluster)
and ``overtrain`` (how far past Chinchilla to train given lifetime inference). Thin: parse ->
library call -> report (see cli/__init__.py)."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from ..commands.train import OvertrainRequest, TrainRequest
from .options import JsonOpt, _check_plot_path, _emit_json, _show, app, catalog_app, takes


PlotOpt = Annotated[Optional[str], typer.Option("--plot", help="Write a figure (PNG/SVG/PDF).")]


@app.command("train")
@takes(TrainRequest)
def train_cmd(ctx: typer.Context, req: TrainRequest, plot: PlotOpt = None, as_json: JsonOpt = False) -> None:
    """Plan a training run: step time and where it goes, MFU/HFU, memory per GPU, and days to train."""
    from ..commands.train import train
    from ..report.training import plot_train
    from ..report.training_tables import train_view

    if plot:
        _check_plot_path(plot)
    # by name: typer vendors its own click (typer._click), whose enum is not click's
    given = {p.name for p in ctx.command.params
             if getattr(ctx.get_parameter_source(p.name), "name", None) == "COMMANDLINE"}

    def spell(key: str) -> str:  # as typed: --no-mtp for a flag turned off
        param = next(p for p in ctx.command.params if p.name == key)
        off = ctx.params.get(key) is False and getattr(param, "secondary_opts", None)
        return param.secondary_opts[0] if off else (param.opts[0] if param.opts else key)

    r = train(req, given=given, spell=spell)
    if plot:
        plot_train(r.step, r.model, r.system.name, plot)
    if as_json:
        _emit_json(r.view)
        return
    _show(train_view(r, plot))


@catalog_app.command("training-runs")
def catalog_training_runs(as_json: JsonOpt = False) -> None:
    """Published training runs that `llmecon train --preset NAME` runs beside their published figure."""
    from ..commands.catalog import training_runs
    from ..report.training_tables import training_runs_view

    d = training_runs()
    if as_json:
        _emit_json(d)
    else:
        _show(training_runs_view(d["training_runs"]))


@app.command("overtrain")
@takes(OvertrainRequest)
def overtrain_cmd(req: OvertrainRequest, plot: PlotOpt = None, as_json: JsonOpt = False) -> None:
    """How far past Chinchilla to pretrain: the equal three-way split of lifetime compute (pretraining,
    RL, inference; SPEC F22) and the true optimum at the same loss under the Chinchilla law."""
    from ..commands.train import overtrain
    from ..report.training import plot_overtrain
    from ..report.training_tables import overtrain_view

    if plot:
        _check_plot_path(plot)
    r = overtrain(req)
    if plot:
        plot_overtrain(r.curve, r.thirds, r.optimum, plot)
    d = r.view
    if as_json:
        _emit_json(d)
        return
    _show(overtrain_view(r, req, plot))
