"""CLI command ``measure``: microbenchmarks on a CUDA GPU with PyTorch (extra ``[torch]``), written
as a measurement CSV (``llmecon.fidelity.measurements``) and, where ``llmecon.fidelity.calibrate`` provides
``fit_profile``, a fitted efficiency profile. Thin: parse -> ``commands.measure`` (run, write)
-> report (see cli/__init__.py and docs/measure.md)."""

from __future__ import annotations

import typer

from ..commands.measure import MeasureRequest
from .options import JsonOpt, _console, _emit_json, _kv_table, app, takes


def _fmt(key: str, value: float) -> str:
    from ..units import fmt_rate

    if key.endswith("_share"):
        return f"{100 * value:.0f}% of datasheet"
    if key.endswith("bytes_per_s"):
        return fmt_rate(value)
    if key.endswith("flops_per_s"):
        return fmt_rate(value, "FLOP/s")
    return f"{value:,.0f} tok/s"


@app.command("measure")
@takes(MeasureRequest)
def measure_cmd(req: MeasureRequest, as_json: JsonOpt = False) -> None:
    """Measure this GPU: HBM copy bandwidth, bf16/fp8 GEMM sweeps, element-wise kernels, and decode and
    prefill steps of a random-weight transformer built from a catalogue config; write a CSV that
    `llmecon calibrate` fits an efficiency profile from."""
    from ..commands.measure import measure

    r = measure(req, progress=not as_json)
    result, out_path, profile_line, counts, env = r.result, r.out_path, r.profile_line, r.counts, r.result.env
    if as_json:
        _emit_json(r.to_dict())
        return
    lines = [("GPU", f"{env.gpu_name} ({env.driver or 'driver unknown'}; torch {env.torch_version})"),
             ("catalogue ids", f"accelerator {result.accelerator}, system {result.system}"),
             ("model", f"{result.model} (random bf16 weights, tp=1; decode timed {result.step_timing})"),
             ("rows", ", ".join(f"{k} {v}" for k, v in counts.items()) + f" in {result.wall_s:.0f} s")]
    head = result.headline()
    for key, value in head.items():
        if key.endswith("_share"):
            continue
        share_key = key.replace("bytes_per_s", "hbm_share") if "bytes" in key else key.replace("flops_per_s",
                                                                                               "peak_share")
        share = head.get(share_key) if share_key != key else None
        label = "best " + key.rsplit("_", 3)[0].replace("_", " ")
        lines.append((label, _fmt(key, value) + (f" ({_fmt(share_key, share)})" if share is not None else "")))
    console = _console()
    console.print(_kv_table(f"llmecon measure ({result.preset})", lines))
    for line in result.skipped:
        typer.echo(f"skipped: {line}", err=True)
    if req.device == "cpu":
        typer.echo("note: cpu smoke run, not for calibration", err=True)
    typer.echo(f"wrote {len(result.rows)} rows to {out_path}")
    if profile_line:
        typer.echo(profile_line, err=profile_line.startswith("note"))
