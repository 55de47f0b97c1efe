"""CLI commands ``predict``, ``calibrate`` and ``validate``: batch predictions, profile fitting,
and error reports against measurements. Thin: parse -> library call -> table or JSON."""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Optional

import typer

from ..commands.args import DeploymentArgs
from ..commands.fidelity import BENCH_FILES_HELP, CalibrateRequest
from .options import JsonOpt, Mode, _console, _emit_json, _fidelity, _show, app, option, takes

TpOpt, EpOpt, PpOpt = (option(DeploymentArgs, n) for n in ("tp", "ep", "pp"))
WeightDtypeOpt, KvDtypeOpt = option(DeploymentArgs, "weight_dtype"), option(DeploymentArgs, "kv_dtype")
ModeOpt, ProfileOpt, EngineOpt = (option(DeploymentArgs, n) for n in ("mode", "profile", "engine"))

OutOpt = Annotated[Optional[str], typer.Option("--out", "-o", help="Write the result to this file.")]


@app.command()
def predict(
    cases: Annotated[str, typer.Argument(help="CSV of cases: model, system, phase (decode|prefill|serving), batch, "
                                              "context, prompt_tokens, output_tokens, tp, ep, pp, adp (default: ep), "
                                              "weight_dtype, kv_dtype (unused columns may be empty); or a plan "
                                              "column with the plan label, e.g. tp8·ep8·pp1·adp1 (r32: 32 "
                                              "redundant expert copies, e.g. tp1·ep48·adp48·r32). Optional "
                                              "speculative decoding: spec_tokens, acceptance (per position, "
                                              "'0.9;0.8'; empty = the model's default), draft (empty = mtp). Optional "
                                              "disaggregated serving rows (phase serving): deployment "
                                              "(aggregated|disaggregated), prefill_plan, prefill_workers, "
                                              "decode_plan, decode_workers (TTFT includes the KV transfer; "
                                              "spec_tokens apply to the decode workers). Optional engine "
                                              "(trtllm, sglang, vllm...): the row is priced calibrated with "
                                              "its chip's profile for that engine.")],
    out: OutOpt = None, mode: ModeOpt = Mode.ideal, profile: ProfileOpt = None, engine: EngineOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Predict many cases in one process (vectorised per deployment): step, compute, memory and
    communication time, bound, tokens/s; for 'serving' rows the steady-state TPOT, TTFT and
    effective batch of a closed-loop benchmark at concurrency = batch."""
    import time

    from ..fidelity.predict import predict_cases, write_cases

    if out is not None:
        from ..files import check_output

        check_output(out, field="out", suffixes=(".csv", ".parquet"))
    mode_name, prof = _fidelity(mode, profile, None, engine)  # each case's accelerator picks its profile
    t0 = time.perf_counter()
    if out is not None:  # streamed: memory flat in rows (fidelity.predict_stream)
        from ..fidelity.predict_stream import predict_file

        n = predict_file(cases, out, mode=mode_name, profile=prof, where=cases, engine=engine)
        elapsed = time.perf_counter() - t0
        if as_json:
            _emit_json({"cases": n, "mode": mode_name, "seconds": elapsed, "out": out, "rows": None})
        else:
            _console().print(f"llmecon predict: {n:,} cases in {elapsed:.2f} s ({mode_name}) -> {out}")
        return
    from ..commands.fidelity import json_cell, printable_cases

    rows = printable_cases(cases)
    result = predict_cases(rows, mode=mode_name, profile=prof, where=cases, engine=engine)
    elapsed = time.perf_counter() - t0
    if as_json:
        _emit_json({"cases": len(result), "mode": mode_name, "seconds": elapsed, "out": out,
                    "rows": [{k: json_cell(v) for k, v in r.items()} for r in result]})
        return
    typer.echo(write_cases(result), nl=False)


BenchModelOpt, BenchSystemOpt = option(CalibrateRequest, "model"), option(CalibrateRequest, "system")


@app.command()
@takes(CalibrateRequest)
def calibrate(req: CalibrateRequest, as_json: JsonOpt = False) -> None:
    """Fit an efficiency profile (bounded least squares, scipy) to measured kernel, collective,
    step and serving times; report the fit error and refuse when there are too few points."""
    from ..commands.fidelity import calibrate as fit
    from ..files import check_output, write_text

    out = req.out
    check_output(out, field="out", suffixes=(".toml",))  # before the fit: it fails now, not after
    rows, chosen, prof, report, ev = fit(list(req.measurements), req.model, req.system, req.tp, req.ep, req.pp,
                                         req.weight_dtype, req.kv_dtype, accelerator=req.accelerator, name=req.name,
                                         all_rows=req.all_rows)
    write_text(out, prof.as_toml())
    if as_json:
        _emit_json({"profile": out, "stages": report, "errors": ev.metrics})
        return
    from ..report.fidelity_tables import calibrate_view

    _show(calibrate_view(rows, chosen, out, report, ev))


class Holdout(str, Enum):
    model = "model"
    chip = "chip"
    none = "none"


ListOpt = Optional[str]


@app.command()
def validate(
    measurements: Annotated[list[str], typer.Argument(help="What to check, detected from its form: measurement "
                                                           "CSV(s) (llmecon measure's columns); NVIDIA's silicon CSV "
                                                           "(aiconfigurator silicon_dev.csv, known by its "
                                                           "silicon_tpot_ms column); or a kernel-tables folder "
                                                           "(aiconfigurator kernels/, holding h100_sxm, b200_sxm, ... "
                                                           "folders)." + BENCH_FILES_HELP)],
    mode: ModeOpt = Mode.calibrated, profile: ProfileOpt = None, as_json: JsonOpt = False,
    holdout: Annotated[Optional[Holdout], typer.Option(
        "--holdout", help="Silicon CSV and kernel tables only: model = leave one model out (kernel tables: 5 folds "
                          "by shape group, the shapes a model brings), chip = leave one chip out (fit on the same "
                          "engine's other chips), none = in-sample (not an accuracy claim). Default model.")] = None,
    models: Annotated[ListOpt, typer.Option("--models", help="Silicon CSV: score only these models (comma-separated "
                                                             "model paths as in the CSV); fits still use every "
                                                             "other row the hold-out allows.")] = None,
    chips: Annotated[ListOpt, typer.Option("--chips", help="Score only these chips (comma-separated: h100-sxm, h200, "
                                                           "b200, b300, gb200, gb300).")] = None,
    engines: Annotated[ListOpt, typer.Option("--engines", help="Score only these engines (comma-separated: trtllm, "
                                                               "sglang, vllm).")] = None,
    configs: Annotated[Optional[str], typer.Option("--configs", help="Silicon CSV: folder of <org>--<name>_config.json "
                                                                     "files (default: ../../reference/hf_configs "
                                                                     "from the CSV).")] = None,
    families: Annotated[ListOpt, typer.Option(
        "--families", help="Kernel tables: score only these families (comma-separated: gemm, context_attention, "
                           "generation_attention, moe, context_mla, generation_mla, gdn, all_reduce, "
                           "all_to_all).")] = None,
    model: BenchModelOpt = None, system: BenchSystemOpt = None, tp: TpOpt = None, ep: EpOpt = None, pp: PpOpt = None,
    weight_dtype: WeightDtypeOpt = None, kv_dtype: KvDtypeOpt = None,
    frontier: Annotated[bool, typer.Option(
        "--frontier", help="Silicon CSV: validate the frontier, not rows: measured envelopes (output tokens/s per "
                           "GPU vs tokens/s per user) per chip, model, format and workload against llmecon's "
                           "whole-request frontier; median predicted / measured envelope, reachable share, "
                           "Kendall tau of the chip order at 50 tokens/s per user (docs/frontier.md).")] = False,
    terms: Annotated[str, typer.Option(
        "--terms", help="With --frontier: kernel (engine terms at their kernel-only values: no serving row "
                        "enters, out of sample), model (engine terms fitted without the group's model: leave one "
                        "model out, minutes of fitting), floor (kernel terms + the low-batch floor fitted without the "
                        "group's model) or shipped (fitted on these rows: in sample).")] = "kernel",
    view: Annotated[str, typer.Option("--view", help="With --frontier: whole (default), measured (the serving each "
                                                     "group ran: aggregated, disaggregated or both) or decode (the "
                                                     "decode-only view, for comparison).")] = "whole",
) -> None:
    """Error of predictions against measurements: median and 90th-percentile |pred/meas - 1| and the
    share of rows ideal mode keeps at or below the measurement. A measurement CSV: ideal and
    calibrated on its fit and hold-out splits. A silicon CSV or the kernel tables: out of sample
    (--holdout), per chip, model, engine and concurrency band, for TPOT, TTFT (concurrency <= 8) and
    kernel families. Time (measured on a shared 2-core machine): the whole silicon CSV ~1 min of CPU
    (model or chip); one kernel chip/engine 15 s (model) to 30 s (chip), so the 18 pairs of the whole
    kernel tables take several minutes: narrow with --chips/--engines."""
    from ..commands import fidelity as F

    paths, measurements = measurements, measurements[0]
    kind = F.input_kind(measurements)
    F.check_inputs(paths, kind, {"--model": model, "--system": system, "--tp": tp, "--ep": ep, "--pp": pp,
                                 "--weight-dtype": weight_dtype, "--kv-dtype": kv_dtype})
    if frontier:
        from ..fidelity.silicon import CHIPS
        from .validate_frontier import validate_frontier

        F.check_frontier(kind, measurements)
        picked = F.names("chips", chips, set(CHIPS.values()), "chip")
        validate_frontier(measurements, terms=terms, view=view, chips=picked, models=models, configs=configs,
                          as_json=as_json, bar=_Bar)
        return
    if kind != "measurements":
        F.check_holdout(kind, measurements, profile_given=profile is not None or mode != Mode.calibrated)
        _validate_holdout(measurements, kind, holdout, models, chips, engines, configs, families, as_json)
        return
    F.check_measurement_options(measurements, {"--holdout": holdout, "--models": models, "--chips": chips,
                                               "--engines": engines, "--configs": configs, "--families": families})
    rows = F.measurement_rows(paths, model, system, tp, ep, pp, weight_dtype, kv_dtype)
    ev = F.validate_measurements(rows, ", ".join(paths), mode.value, profile)
    if as_json:
        _emit_json(ev.as_dict())
        return
    from ..report.fidelity_tables import errors_view

    _show([f"llmecon validate: {len(rows)} rows of {', '.join(paths)}; profiles {', '.join(ev.profiles) or 'none'}",
           *errors_view(ev)])


def _validate_holdout(measurements, kind, holdout, models, chips, engines, configs, families, as_json) -> None:
    """``validate`` on a silicon CSV or a kernel-tables folder: out-of-sample errors by ``holdout``."""
    from ..commands.fidelity import holdout_report

    with _Bar("fitting engine terms" if kind == "silicon" else "fitting kernel terms", as_json) as bar:
        report = holdout_report(measurements, kind, (holdout or Holdout.model).value, models=models, chips=chips,
                                engines=engines, configs=configs, families=families, bar=bar)
    if as_json:
        _emit_json(report.as_dict())
        return
    from ..report.fidelity_tables import holdout_view

    _show(holdout_view(report, measurements))


class _Bar:
    """A progress bar on stderr for the fits (hidden when stderr is not a terminal or with --json)."""

    def __init__(self, label: str, quiet: bool):
        import sys

        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self.bar = Progress(TextColumn(label), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                            TextColumn("{task.description}"), console=Console(stderr=True), transient=True,
                            disable=quiet or not sys.stderr.isatty())
        self.task = self.bar.add_task("", total=None)

    def __enter__(self):
        self.bar.__enter__()
        return self

    def __exit__(self, *exc):
        return self.bar.__exit__(*exc)

    def __call__(self, done: int, total: int, name: str) -> None:
        self.bar.update(self.task, completed=done, total=total, description=name)
