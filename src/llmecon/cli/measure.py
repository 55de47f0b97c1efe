"""CLI command ``measure``: microbenchmarks on a CUDA GPU with PyTorch (extra ``[torch]``), written
as a measurement CSV (``llmecon.fidelity.measurements``) and, where ``llmecon.fidelity.calibrate`` provides
``fit_profile``, a fitted efficiency profile. Thin: parse -> ``commands.measure`` (run, write)
-> report (see cli/__init__.py and docs/measure.md)."""

from __future__ import annotations

import typer

from ..commands.measure import MeasureRequest
from .options import JsonOpt, _emit_json, _show, app, takes


@app.command("measure")
@takes(MeasureRequest)
def measure_cmd(req: MeasureRequest, as_json: JsonOpt = False) -> None:
    """Measure this GPU: HBM copy bandwidth, bf16/fp8 GEMM sweeps, element-wise kernels, and decode and
    prefill steps of a random-weight transformer built from a catalogue config; write a CSV that
    `llmecon calibrate` fits an efficiency profile from."""
    from ..commands.measure import measure
    from ..report.fidelity_tables import measure_view

    r = measure(req, progress=not as_json)
    result, out_path, profile_line, counts = r.result, r.out_path, r.profile_line, r.counts
    if as_json:
        _emit_json(r.to_dict())
        return
    _show(measure_view(result, counts))
    for line in result.skipped:
        typer.echo(f"skipped: {line}", err=True)
    if req.device == "cpu":
        typer.echo("note: cpu smoke run, not for calibration", err=True)
    typer.echo(f"wrote {len(result.rows)} rows to {out_path}")
    if profile_line:
        typer.echo(profile_line, err=profile_line.startswith("note"))
