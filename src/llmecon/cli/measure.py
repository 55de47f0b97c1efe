"""CLI command ``measure``: microbenchmarks on a CUDA GPU with PyTorch (extra ``[torch]``), written
as a measurement CSV (``llmecon.fidelity.measurements``) and, where ``llmecon.fidelity.calibrate`` provides
``fit_profile``, a fitted efficiency profile. Thin: parse -> ``measure.runner.run`` -> write
-> report (see cli/__init__.py and docs/measure.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from .options import JsonOpt, _console, _emit_json, _fail, _kv_table, app

MEASURE_DEFAULT_MODEL = "llama-3.1-8b"


def _fit_profile(result, path: Path) -> str:
    """Fit and write a profile with ``llmecon.fidelity.calibrate.fit_profile`` where this version has it
    (imported lazily; it is optional here); the returned line says what happened."""
    import importlib
    import inspect

    from ..errors import LlmeconError

    try:
        calibrate = importlib.import_module("llmecon.fidelity.calibrate")
    except ImportError:
        calibrate = None
    fit = getattr(calibrate, "fit_profile", None)
    if fit is None:
        return (f"note: no profile written to {path}: llmecon.fidelity.calibrate.fit_profile is not available in this "
                "version; fit one later from the CSV (llmecon calibrate)")
    env = result.env
    offered = {"name": f"measured-{result.accelerator}",
               "accelerators": (result.accelerator,),
               "derivation": (f"llmecon measure ({result.preset} preset, {len(result.rows)} rows, model "
                              f"{result.model}) on {env.gpu_name} ({env.driver or 'driver unknown'}; torch "
                              f"{env.torch_version}), {result.rows[0].date}")}
    params = inspect.signature(fit).parameters
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    try:
        answer = fit(list(result.rows), **{k: v for k, v in offered.items() if takes_any or k in params})
    except LlmeconError as exc:
        return f"note: no profile written to {path}: {exc}"
    for obj in answer if isinstance(answer, tuple) else (answer,):
        text = obj.as_toml() if hasattr(obj, "as_toml") else obj.to_toml() if hasattr(obj, "to_toml") else None
        if isinstance(text, str):
            from ..files import write_text

            write_text(path, text)
            return f"wrote profile {path}"
    return f"note: no profile written to {path}: fit_profile returned {type(answer).__name__}, which has no as_toml()"


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
def measure_cmd(
    out: Annotated[str, typer.Option("--out", help="Measurement CSV to write (llmecon.fidelity.measurements format).")],
    profile_out: Annotated[Optional[str], typer.Option("--profile-out", help="Also fit an efficiency profile from "
                                                                             "the rows and write it (TOML).")] = None,
    model: Annotated[str, typer.Option("--model", "-m", help="Dense catalogue model or config.json to build with "
                                                              "random weights (bf16, tp=1, one GPU).")]
    = MEASURE_DEFAULT_MODEL,
    quick: Annotated[bool, typer.Option("--quick", help="A short sweep (< 2 min on an H100) instead of the full "
                                                        "one.")] = False,
    device: Annotated[str, typer.Option("--device", help="cuda, or cpu for a smoke run with tiny shapes (tests "
                                                         "only; rows are marked not for calibration).")] = "cuda",
    accelerator: Annotated[Optional[str], typer.Option("--accelerator", help="Catalogue accelerator the rows name "
                                                                             "(default: detected from the GPU).")]
    = None,
    system: Annotated[Optional[str], typer.Option("--system", "-s", help="Catalogue system the step rows name "
                                                                         "(default: detected from the GPU).")] = None,
    eager: Annotated[bool, typer.Option("--eager", help="Time decode steps eagerly instead of as CUDA-graph "
                                                        "replays.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Measure this GPU: HBM copy bandwidth, bf16/fp8 GEMM sweeps, element-wise kernels, and decode and
    prefill steps of a random-weight transformer built from a catalogue config; write a CSV that
    `llmecon calibrate` fits an efficiency profile from."""
    from ..fidelity.measure.runner import run
    from ..fidelity.measurements import write_csv

    from ..files import check_output

    out_path = check_output(out, field="out", suffixes=(".csv",))
    if profile_out is not None:
        check_output(profile_out, field="profile_out", suffixes=(".toml",))
    result = run(model=model, device=device, preset="quick" if quick else "full", accelerator=accelerator,
                 system=system, cuda_graph=not eager, progress=not as_json)
    if not result.rows:
        _fail("no measurement fitted in GPU memory; nothing written")
    write_csv(result.rows, out_path)
    if profile_out is None:
        profile_line = ""
    elif device == "cpu":
        profile_line = f"note: no profile written to {profile_out}: a cpu smoke run is not for calibration"
    else:
        profile_line = _fit_profile(result, Path(profile_out))
    counts: dict[str, int] = {}
    for r in result.rows:
        counts[r.kind] = counts.get(r.kind, 0) + 1
    env = result.env
    if as_json:
        _emit_json({"out": str(out_path), "rows": len(result.rows), "by_kind": counts, "model": result.model,
                    "preset": result.preset, "device": env.device, "gpu_name": env.gpu_name, "driver": env.driver,
                    "torch": env.torch_version, "accelerator": result.accelerator, "system": result.system,
                    "decode_timing": result.step_timing, "wall_s": result.wall_s, "headline": result.headline(),
                    "skipped": list(result.skipped), "profile": profile_line})
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
    if device == "cpu":
        typer.echo("note: cpu smoke run, not for calibration", err=True)
    typer.echo(f"wrote {len(result.rows)} rows to {out_path}")
    if profile_line:
        typer.echo(profile_line, err=profile_line.startswith("note"))
