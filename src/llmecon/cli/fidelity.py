"""CLI commands ``predict``, ``calibrate`` and ``validate``: batch predictions, profile fitting,
and error reports against measurements. Thin: parse -> library call -> table or JSON."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from .options import JsonOpt, Mode, ModeOpt, ProfileOpt, _console, _emit_json, _fail, _fidelity, app

#: most rows ``predict`` takes in one run: each case holds a few hundred bytes of Python objects
#: (~1 kB measured with tracemalloc), so a million is ~1 GB
MAX_CASES = 1_000_000

OutOpt = Annotated[Optional[str], typer.Option("--out", "-o", help="Write the result to this file.")]


@app.command()
def predict(
    cases: Annotated[str, typer.Argument(help="CSV of cases: model, system, phase (decode|prefill|serving), batch, "
                                              "context, prompt_tokens, output_tokens, tp, ep, pp, adp (default: ep), "
                                              "weight_dtype, kv_dtype (unused columns may be empty); or a plan "
                                              "column with the plan label, e.g. tp8·ep8·pp1·adp1.")],
    out: OutOpt = None, mode: ModeOpt = Mode.ideal, profile: ProfileOpt = None, as_json: JsonOpt = False,
) -> None:
    """Predict many cases in one process (vectorised per deployment): step, compute, memory and
    communication time, bound, tokens/s; for 'serving' rows the steady-state TPOT, TTFT and
    effective batch of a closed-loop benchmark at concurrency = batch."""
    import time

    from ..fidelity.predict import predict_cases, read_cases, write_cases

    if out is not None:
        from ..files import check_output

        check_output(out, field="out", suffixes=(".csv",))
    mode_name, prof = _fidelity(mode, profile)  # each case's accelerator picks its default profile
    rows = read_cases(cases)
    if len(rows) > MAX_CASES:
        _fail(f"{cases}: {len(rows):,} cases, more than the {MAX_CASES:,} predict takes in one run; split the file")
    t0 = time.perf_counter()
    result = predict_cases(rows, mode=mode_name, profile=prof, where=cases)
    elapsed = time.perf_counter() - t0
    text = write_cases(result, out)
    if as_json:
        _emit_json({"cases": len(result), "mode": mode_name, "seconds": elapsed, "out": out,
                    "rows": None if out else [{k: v for k, v in r.items()} for r in result]})
        return
    if out is None:
        typer.echo(text, nl=False)
        return
    _console().print(f"llmecon predict: {len(result)} cases in {elapsed:.2f} s ({mode_name}) -> {out}")


@app.command()
def calibrate(
    measurements: Annotated[str, typer.Argument(help="Measurement CSV (llmecon measure writes one; format in "
                                                     "docs/calibration.md).")],
    out: Annotated[str, typer.Option("--out", "-o", help="Profile TOML to write.")] = "profile.toml",
    name: Annotated[Optional[str], typer.Option("--name", help="Profile name (default: the accelerator).")] = None,
    accelerator: Annotated[Optional[str], typer.Option("--accelerator", help="Fit only rows of this accelerator "
                                                                             "(needed when the file has several).")] = None,
    all_rows: Annotated[bool, typer.Option("--all-rows", help="Fit on every row (default: the 'fit' split only, "
                                                              "so validate can report the held-out rows).")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Fit an efficiency profile (bounded least squares, scipy) to measured kernel, collective,
    step and serving times; report the fit error and refuse when there are too few points."""
    from pathlib import Path

    from ..fidelity.accuracy import accelerator_of, evaluate
    from ..fidelity.calibrate import fit_profile
    from ..fidelity.measurements import read_csv
    from ..files import check_output, write_text

    check_output(out, field="out", suffixes=(".toml",))  # before the fit: it fails now, not after
    rows = read_csv(measurements)
    accels = sorted({accelerator_of(r).name for r in rows})
    if accelerator is None and len(accels) > 1:
        _fail(f"--accelerator: {measurements} has rows of several accelerators ({', '.join(accels)}); pick one")
    chosen = accelerator or accels[0]
    rows = [r for r in rows if accelerator_of(r).name == chosen]
    if not rows:
        _fail(f"--accelerator: no rows for '{chosen}' in {measurements}; it has {', '.join(accels)}")
    prof, report = fit_profile(rows, name=name or chosen, accelerators=(chosen,), use_split=not all_rows,
                               derivation=f"llmecon calibrate {Path(measurements).name} "
                                          f"({'all rows' if all_rows else 'fit split'})")
    write_text(out, prof.as_toml())
    ev = evaluate(rows, prof)
    if as_json:
        _emit_json({"profile": out, "stages": report, "errors": ev.metrics})
        return
    console = _console()
    console.print(f"llmecon calibrate: {len(rows)} rows of {chosen} -> {out}")
    for stage, v in report.items():
        fitted = ", ".join(f"{k}={val:.4g}" for k, val in v["params"].items())
        console.print(f"  {stage}: {v['rows']} rows; " + (fitted or f"not fitted ({v['skipped']})"))
    _print_errors(console, ev)


@app.command()
def validate(
    measurements: Annotated[str, typer.Argument(help="Measurement CSV.")],
    mode: ModeOpt = Mode.calibrated, profile: ProfileOpt = None, as_json: JsonOpt = False,
) -> None:
    """Median and 90th-percentile absolute relative error of ideal and calibrated predictions
    against measurements (fit and held-out rows separately), and the worst cases."""
    from ..fidelity.accuracy import evaluate
    from ..fidelity.measurements import read_csv

    rows = read_csv(measurements)
    ev = evaluate(rows, _fidelity(mode, profile)[1])
    if not any(splits["all"]["n"] for modes in ev.metrics.values() for splits in modes.values()):
        from ..errors import InfeasibleError

        why = "; ".join(f"{p} ({n}x)" for p, n in sorted(ev.problems.items(), key=lambda kv: -kv[1])[:3])
        raise InfeasibleError(f"nothing in {measurements} could be predicted" + (f": {why}" if why else ""),
                              fix="check the rows' model, system and plan columns (llmecon predict shows why)")
    if as_json:
        _emit_json(ev.as_dict())
        return
    console = _console()
    console.print(f"llmecon validate: {len(rows)} rows of {measurements}; profiles {', '.join(ev.profiles) or 'none'}")
    _print_errors(console, ev)


def _print_errors(console, ev) -> None:
    from rich.table import Table

    table = Table("metric", "mode", "split", "rows", "median", "p90", "pred <= meas")
    for metric, modes in ev.metrics.items():
        for mode, splits in modes.items():
            for split, s in splits.items():
                if s["n"]:
                    table.add_row(metric, mode, split, str(s["n"]), f"{s['median']:.1%}", f"{s['p90']:.1%}",
                                  f"{s['below_share']:.0%}")
    console.print(table)
    for w in ev.worst:
        console.print(f"  worst: {w['row']} [{w['split']}] measured {w['measured_s']:.4g} s, calibrated "
                      f"{w['calibrated_s']:.4g} s ({w['error']:.0%})")
    for problem, count in ev.problems.items():
        console.print(f"  not predicted ({count}): {problem}")
