"""CLI commands ``predict``, ``calibrate`` and ``validate``: batch predictions, profile fitting,
and error reports against measurements. Thin: parse -> library call -> table or JSON."""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Optional

import typer

from .options import (EngineOpt, EpOpt, JsonOpt, KvDtypeOpt, Mode, ModeOpt, PpOpt, ProfileOpt, TpOpt,
                      WeightDtypeOpt, _console, _emit_json, _fail, _fidelity, app)

#: most rows ``predict`` prints (to stdout, or inside --json): they are held in memory (~1 kB each,
#: measured with tracemalloc); more are refused with the fix, --out FILE, which streams any number
MAX_CASES = 100_000

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
    rows = _printable_cases(cases)
    result = predict_cases(rows, mode=mode_name, profile=prof, where=cases, engine=engine)
    elapsed = time.perf_counter() - t0
    if as_json:
        _emit_json({"cases": len(result), "mode": mode_name, "seconds": elapsed, "out": out,
                    "rows": [{k: _json_cell(v) for k, v in r.items()} for r in result]})
        return
    typer.echo(write_cases(result), nl=False)


def _printable_cases(cases: str) -> list[dict]:
    """The rows of ``cases`` when there are at most MAX_CASES of them (they are printed, so held in
    memory); more are refused, counted without being held."""
    from ..errors import CatalogError
    from ..files import check_input, csv_dict_chunks
    from ..fidelity.predict import check_header

    p = check_input(cases, field="cases", what="cases file")
    rows, n = [], 0
    for header, chunk, _ in csv_dict_chunks(p, cases, 65536):
        check_header(header, cases)
        n += len(chunk)
        if n <= MAX_CASES:
            rows += chunk
        else:
            rows = []
    if n > MAX_CASES:
        _fail(f"{cases}: {n:,} cases, more than the {MAX_CASES:,} predict prints (to the terminal or in --json); "
              "write them to a file with --out FILE.csv or --out FILE.parquet, which streams any number")
    if not rows:
        raise CatalogError(f"{cases}: no cases after the header")
    return rows


BenchModelOpt = Annotated[Optional[str], typer.Option("--model", "-m", help="Benchmark result files: the served "
                                                                           "model (catalogue name or config.json).")]
BenchSystemOpt = Annotated[Optional[str], typer.Option("--system", "-s", help="Benchmark result files: the system "
                                                                              "it ran on (llmecon catalog systems).")]
_BENCH_HELP = (" Or the serving benchmarks' own result files (.json/.jsonl: vllm bench serve --save-result, SGLang "
               "bench_serving --output-file, AIPerf/GenAI-Perf profile_export JSON), with the deployment given by "
               "--model, --system, --tp/--ep/--pp and --weight-dtype/--kv-dtype.")


def _measurement_rows(paths: list[str], model, system, tp, ep, pp, weight_dtype, kv_dtype) -> list:
    """Measurement rows of ``paths``: measurement CSVs as they are, benchmark result files (fidelity.bench_files)
    as serving rows on the deployment the options give."""
    from ..fidelity.bench_files import BenchDeployment, is_bench_file, read_bench_measurements
    from ..fidelity.measurements import read_csv

    bench = [p for p in paths if is_bench_file(p)]
    given = [f for f, v in (("--model", model), ("--system", system), ("--tp", tp), ("--ep", ep), ("--pp", pp),
                            ("--weight-dtype", weight_dtype), ("--kv-dtype", kv_dtype)) if v is not None]
    if not bench and given:
        _fail(f"{given[0]}: applies to benchmark result files (.json, .jsonl); a measurement CSV names its deployment "
              "on each row")
    if bench and (model is None or system is None):
        _fail(f"--{'model' if model is None else 'system'}: {bench[0]} is a benchmark result file, which does not "
              "record the deployment; give --model and --system (and --tp/--ep/--pp, --weight-dtype, --kv-dtype as "
              "it was served)")
    if bench:  # the deployment first: a bad --tp is named as such, not as unpriceable rows
        from ..resolve import deployment

        deployment(model, system, tp=tp, ep=ep, pp=pp, weight_dtype=weight_dtype, kv_dtype=kv_dtype)
    rows = [r for p in paths if not is_bench_file(p) for r in read_csv(p)]
    if bench:
        dep = BenchDeployment(model=model, system=system, tp=tp or 1, ep=ep or 1, pp=pp or 1,
                              weight_dtype=weight_dtype or "", kv_dtype=kv_dtype or "")
        rows += read_bench_measurements(bench, dep)
    return rows


def _json_cell(value):
    """A predict cell for JSON (issue 35): the CSV's numbers as numbers, an empty cell as null, text as text."""
    import re

    if not isinstance(value, str):
        return value
    text = value.strip()
    if not text:
        return None
    if re.fullmatch(r"[+-]?[0-9]+", text):
        return int(text)
    if re.fullmatch(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?", text):
        return float(text)
    return value


@app.command()
def calibrate(
    measurements: Annotated[list[str], typer.Argument(help="Measurement CSV(s) (llmecon measure writes one; format "
                                                           "in docs/calibration.md)." + _BENCH_HELP)],
    out: Annotated[str, typer.Option("--out", "-o", help="Profile TOML to write.")] = "profile.toml",
    name: Annotated[Optional[str], typer.Option("--name", help="Profile name (default: the accelerator).")] = None,
    accelerator: Annotated[Optional[str], typer.Option("--accelerator",
                                                       help="Fit only rows of this accelerator "
                                                            "(needed when the file has several).")] = None,
    all_rows: Annotated[bool, typer.Option("--all-rows", help="Fit on every row (default: the 'fit' split only, "
                                                              "so validate can report the held-out rows).")] = False,
    model: BenchModelOpt = None, system: BenchSystemOpt = None, tp: TpOpt = None, ep: EpOpt = None, pp: PpOpt = None,
    weight_dtype: WeightDtypeOpt = None, kv_dtype: KvDtypeOpt = None, as_json: JsonOpt = False,
) -> None:
    """Fit an efficiency profile (bounded least squares, scipy) to measured kernel, collective,
    step and serving times; report the fit error and refuse when there are too few points."""
    from pathlib import Path

    from ..fidelity.accuracy import accelerator_of, evaluate
    from ..fidelity.calibrate import fit_profile
    from ..files import check_output, write_text

    check_output(out, field="out", suffixes=(".toml",))  # before the fit: it fails now, not after
    rows = _measurement_rows(measurements, model, system, tp, ep, pp, weight_dtype, kv_dtype)
    names = ", ".join(Path(p).name for p in measurements)
    measurements = ", ".join(measurements)
    accels = sorted({accelerator_of(r).name for r in rows})
    if accelerator is None and len(accels) > 1:
        _fail(f"--accelerator: {measurements} has rows of several accelerators ({', '.join(accels)}); pick one")
    chosen = accelerator or accels[0]
    rows = [r for r in rows if accelerator_of(r).name == chosen]
    if not rows:
        _fail(f"--accelerator: no rows for '{chosen}' in {measurements}; it has {', '.join(accels)}")
    prof, report = fit_profile(rows, name=name or chosen, accelerators=(chosen,), use_split=not all_rows,
                               derivation=f"llmecon calibrate {names} "
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
                                                           "folders)." + _BENCH_HELP)],
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
    paths, measurements = measurements, measurements[0]
    kind = _input_kind(measurements)
    if kind != "measurements" and len(paths) > 1:
        _fail(f"measurements: {measurements} is a {kind} input, checked alone; give it without the other files")
    bench_opts = [f for f, v in (("--model", model), ("--system", system), ("--tp", tp), ("--ep", ep), ("--pp", pp),
                                 ("--weight-dtype", weight_dtype), ("--kv-dtype", kv_dtype)) if v is not None]
    if kind != "measurements" and bench_opts:
        _fail(f"{bench_opts[0]}: applies to benchmark result files (.json, .jsonl); {measurements} is a {kind} input")
    if frontier:
        from .validate_frontier import validate_frontier

        if kind != "silicon":
            _fail(f"--frontier: {measurements} is not NVIDIA's silicon CSV (aiconfigurator silicon_dev.csv)")
        from ..fidelity.silicon import CHIPS

        picked = _names("chips", chips, set(CHIPS.values()), "chip")
        validate_frontier(measurements, terms=terms, view=view, chips=picked, models=models, configs=configs,
                          as_json=as_json, bar=_Bar)
        return
    if kind != "measurements":
        if profile is not None or mode != Mode.calibrated:
            _fail(f"--profile/--mode: {measurements} is a {kind} input, scored with each chip/engine's kernel-table "
                  "profile fitted out of sample; leave --profile and --mode out")
        _validate_holdout(measurements, kind, holdout, models, chips, engines, configs, families, as_json)
        return
    extra = [f for f, v in (("--holdout", holdout), ("--models", models), ("--chips", chips), ("--engines", engines),
                            ("--configs", configs), ("--families", families)) if v is not None]
    if extra:
        _fail(f"{extra[0]}: applies to a silicon CSV or a kernel-tables folder; {measurements} is a measurement CSV "
              "(its split column holds rows out)")
    rows = _measurement_rows(paths, model, system, tp, ep, pp, weight_dtype, kv_dtype)
    _validate_measurements(rows, ", ".join(paths), mode, profile, as_json)


def _validate_holdout(measurements, kind, holdout, models, chips, engines, configs, families, as_json) -> None:
    """``validate`` on a silicon CSV or a kernel-tables folder: out-of-sample errors by ``holdout``."""
    from pathlib import Path

    scheme = (holdout or Holdout.model).value
    if kind == "silicon":
        if families is not None:
            _fail("--families: applies to a kernel-tables folder; a silicon CSV scores TPOT and TTFT")
        report = _silicon_report(measurements, scheme, models, chips, engines, configs, as_json)
    else:
        if models is not None:
            _fail("--models: kernel tables have no model column; use --holdout model (shape groups) and --chips")
        report = _kernel_report(Path(measurements), scheme, chips, engines, families, as_json)
    if as_json:
        _emit_json(report.as_dict())
        return
    _print_holdout(_console(), report, measurements)


def _validate_measurements(rows, measurements: str, mode, profile, as_json) -> None:
    """``validate`` on measurement rows: ideal and calibrated errors on their fit and hold-out splits."""
    from ..fidelity.accuracy import evaluate

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


def _input_kind(path: str) -> str:
    """'kernels' (a folder), 'silicon' (a CSV whose header has silicon_tpot_ms) or 'measurements'."""
    from pathlib import Path

    p = Path(path)
    if p.is_dir():
        return "kernels"
    if p.is_file():
        try:
            with open(p, encoding="utf-8-sig", errors="replace") as f:
                head = f.readline(65536)
        except OSError:
            return "measurements"  # read_csv names the problem
        if "silicon_tpot_ms" in [c.strip().strip('"') for c in head.strip().split(",")]:
            return "silicon"
    return "measurements"


def _names(field: str, given: str | None, known, what: str) -> set[str] | None:
    """The comma-separated names of --<field>, each checked against ``known``."""
    if given is None:
        return None
    from ..errors import unknown_name

    out = {x.strip() for x in given.split(",") if x.strip()}
    if not out:
        _fail(f"--{field}: no name given; give comma-separated {what}")
    for name in sorted(out):
        if name not in known:
            raise unknown_name(what, name, sorted(known), field=field)
    return out


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


def _silicon_report(path, scheme, models, chips, engines, configs, quiet):
    from ..errors import InfeasibleError
    from ..fidelity.holdout_silicon import group_of, silicon_holdout
    from ..fidelity.silicon import CHIPS, ENGINES, read_silicon

    rows, skipped = read_silicon(path, configs)
    if not rows:
        why = skipped[0].reason if skipped else "no data rows"
        raise InfeasibleError(f"no aggregated row of {path} can be priced ({why})", field="measurements",
                              fix="give aiconfigurator's silicon CSV with agg rows of models that have a config")
    known_models = {r.model for r in rows} | {group_of(r) for r in rows}
    pick_m = _names("models", models, known_models, "model")
    pick_c = _names("chips", chips, set(CHIPS.values()) | {r.chip for r in rows}, "chip")
    pick_e = _names("engines", engines, set(ENGINES) | {r.engine for r in rows}, "engine")
    with _Bar("fitting engine terms", quiet) as bar:
        got = silicon_holdout(rows, scheme, models=pick_m, chips=pick_c, engines=pick_e, progress=bar)
    if not got.evaluated.any():
        raise InfeasibleError("no row matches --models/--chips/--engines", field="measurements",
                              fix="check the names against the CSV (llmecon validate without filters lists them)")
    rep = got.report()
    if skipped:
        from collections import Counter

        rep = type(rep)(**{**rep.__dict__, "notes": rep.notes + tuple(
            f"{k} rows skipped: {reason}" for reason, k in Counter(s.reason for s in skipped).most_common())})
    if any(s.reason.startswith("mode disagg") for s in skipped):
        from ..fidelity.silicon import disaggregated_note

        rep = type(rep)(**{**rep.__dict__, "notes": rep.notes + (disaggregated_note(path, configs),)})
    if any(s.reason.startswith("speculative decoding") for s in skipped):
        from ..fidelity.silicon import speculative_note

        rep = type(rep)(**{**rep.__dict__, "notes": rep.notes + (speculative_note(path, configs),)})
    return rep


def _kernel_report(root, scheme, chips, engines, families, quiet):
    from ..errors import CatalogError
    from ..fidelity.holdout_kernels import COLLECTIVES, kernel_holdout, load_key
    from ..fidelity.kernel_profiles import FAMILY_NAMES
    from ..fidelity.kernel_tables import CHIPS, ENGINES

    present = [folder for folder in CHIPS if (root / folder).is_dir()]
    if not present:
        raise CatalogError(f"folder {root} holds none of the aiconfigurator system folders "
                           f"({', '.join(CHIPS)})", field="measurements",
                           fix="give the kernels folder of shared/validation/aiconfigurator")
    pick_c = _names("chips", chips, set(CHIPS.values()), "chip")
    pick_e = _names("engines", engines, set(ENGINES), "engine")
    pick_f = _names("families", families, {*FAMILY_NAMES, *COLLECTIVES}, "kernel family")
    every = [(CHIPS[f], e) for f in CHIPS if f in present for e in ENGINES if pick_e is None or e in pick_e]
    keys = [k for k in every if pick_c is None or k[0] in pick_c]
    if not keys:
        raise CatalogError(f"no tables of {', '.join(sorted(pick_c or ()))} in {root}", field="chips",
                           fix=f"pick from {', '.join(CHIPS[f] for f in present)}")
    with _Bar("fitting kernel terms", quiet) as bar:
        got = kernel_holdout(lambda chip, engine: load_key(root, chip, engine, families=pick_f), keys, scheme,
                             every=every, progress=bar)
    return got.report()


def _pct(v: float) -> str:
    import math

    return "–" if v is None or not math.isfinite(v) else f"{v:.1%}"


BY_TITLES = {"all": "all rows", "vendor": "per vendor", "vendor/engine": "per vendor and engine",
             "chip": "per chip", "model": "per held-out model", "engine": "per engine",
             "chip/engine": "per chip and engine", "concurrency": "per concurrency band"}


def _print_holdout(console, report, where: str) -> None:
    from rich.table import Table

    scheme = {"model": "leave one model out" if report.source == "silicon" else "k-fold by shape group (the shapes "
                                                                                 "a model brings)",
              "chip": "leave one chip out", "none": "in-sample (not an accuracy claim)"}[report.holdout]
    console.print(f"llmecon validate: {report.rows:,} rows of {where} ({report.source}); {scheme}; errors "
                  "|pred/meas - 1| of held-out predictions")
    vendors = {c.group for c in report.cells if c.by == "vendor"}
    for vendor in ("NVIDIA", "AMD"):  # both always named: a vendor without rows says so
        if report.source == "silicon" and vendor not in vendors:
            console.print(f"per vendor: no {vendor} rows in {where}")
    for by in BY_TITLES:
        mine = [c for c in report.cells if c.by == by]
        groups = sorted({c.group for c in mine})
        if not mine:
            continue
        if by != "all" and len(groups) == 1:  # one group: the same figures as all rows
            console.print(f"{BY_TITLES[by]}: only {groups[0]} (as all rows)")
            continue
        heads = ("quantity",) + (() if by == "all" else (by,))
        table = Table(*heads, "rows", "predicted", "coverage", "median", "p90", "ideal <= meas", title=BY_TITLES[by],
                      title_justify="left")
        for c in mine:
            table.add_row(c.quantity, *(() if by == "all" else (c.group,)), f"{c.rows:,}", f"{c.predicted:,}",
                          _pct(c.predicted / c.rows if c.rows else float("nan")), _pct(c.median), _pct(c.p90),
                          _pct(c.ideal_below) if c.ideal_rows else "–")
        console.print(table)
    for note in report.notes:
        console.print(f"  note: {note}")


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
