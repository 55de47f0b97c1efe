"""Commands on measurements: ``predict`` (many cases in one process), ``calibrate`` (a profile fitted to
measured times) and ``validate`` (errors of predictions against measurements, out of sample on NVIDIA's
silicon CSV and kernel tables). The front-end renders; its progress bar is passed in as a callback."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ..errors import SpecError
from .args import DeploymentArgs, arg, inherit

#: most rows ``predict`` prints (to stdout, or inside --json): they are held in memory (~1 kB each,
#: measured with tracemalloc); more are refused with the fix, --out FILE, which streams any number
MAX_CASES = 100_000


def printable_cases(cases: str) -> list[dict]:
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
        raise SpecError(f"{cases}: {n:,} cases, more than the {MAX_CASES:,} predict prints (to the terminal or in "
                        "--json); write them to a file with --out FILE.csv or --out FILE.parquet, which streams any "
                        "number")
    if not rows:
        raise CatalogError(f"{cases}: no cases after the header")
    return rows


def measurement_rows(paths: list[str], model, system, tp, ep, pp, weight_dtype, kv_dtype) -> list:
    """Measurement rows of ``paths``: measurement CSVs as they are, benchmark result files (fidelity.bench_files)
    as serving rows on the deployment the options give."""
    from ..fidelity.bench_files import BenchDeployment, is_bench_file, read_bench_measurements
    from ..fidelity.measurements import read_csv

    bench = [p for p in paths if is_bench_file(p)]
    given = [f for f, v in (("--model", model), ("--system", system), ("--tp", tp), ("--ep", ep), ("--pp", pp),
                            ("--weight-dtype", weight_dtype), ("--kv-dtype", kv_dtype)) if v is not None]
    if not bench and given:
        raise SpecError(f"{given[0]}: applies to benchmark result files (.json, .jsonl); a measurement CSV names its "
                        "deployment on each row")
    if bench and (model is None or system is None):
        raise SpecError(f"--{'model' if model is None else 'system'}: {bench[0]} is a benchmark result file, which "
                        "does not record the deployment; give --model and --system (and --tp/--ep/--pp, "
                        "--weight-dtype, --kv-dtype as it was served)")
    if bench:  # the deployment first: a bad --tp is named as such, not as unpriceable rows
        from ..resolve import deployment

        deployment(model, system, tp=tp, ep=ep, pp=pp, weight_dtype=weight_dtype, kv_dtype=kv_dtype)
    rows = [r for p in paths if not is_bench_file(p) for r in read_csv(p)]
    if bench:
        dep = BenchDeployment(model=model, system=system, tp=tp or 1, ep=ep or 1, pp=pp or 1,
                              weight_dtype=weight_dtype or "", kv_dtype=kv_dtype or "")
        rows += read_bench_measurements(bench, dep)
    return rows


def json_cell(value):
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


def validate_measurements(rows, measurements: str, mode: str, profile):
    """``validate`` on measurement rows: ideal and calibrated errors on their fit and hold-out splits
    (``fidelity.accuracy.evaluate``); an error when no row could be predicted."""
    from ..fidelity.accuracy import evaluate
    from ..resolve import fidelity

    ev = evaluate(rows, fidelity(mode, profile)[1])
    if not any(splits["all"]["n"] for modes in ev.metrics.values() for splits in modes.values()):
        from ..errors import InfeasibleError

        why = "; ".join(f"{p} ({n}x)" for p, n in sorted(ev.problems.items(), key=lambda kv: -kv[1])[:3])
        raise InfeasibleError(f"nothing in {measurements} could be predicted" + (f": {why}" if why else ""),
                              fix="check the rows' model, system and plan columns (llmecon predict shows why)")
    return ev


def input_kind(path: str) -> str:
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


def names(field: str, given: str | None, known, what: str) -> set[str] | None:
    """The comma-separated names of --<field>, each checked against ``known``."""
    if given is None:
        return None
    from ..errors import unknown_name

    out = {x.strip() for x in given.split(",") if x.strip()}
    if not out:
        raise SpecError(f"--{field}: no name given; give comma-separated {what}")
    for name in sorted(out):
        if name not in known:
            raise unknown_name(what, name, sorted(known), field=field)
    return out


def silicon_report(path, scheme, models, chips, engines, configs, bar):
    """Out-of-sample errors of the silicon CSV's rows (``fidelity.holdout_silicon``); ``bar``: a progress
    callback (done, total, name)."""
    from ..errors import InfeasibleError
    from ..fidelity.holdout_silicon import group_of, silicon_holdout
    from ..fidelity.silicon import CHIPS, ENGINES, read_silicon

    rows, skipped = read_silicon(path, configs)
    if not rows:
        why = skipped[0].reason if skipped else "no data rows"
        raise InfeasibleError(f"no aggregated row of {path} can be priced ({why})", field="measurements",
                              fix="give aiconfigurator's silicon CSV with agg rows of models that have a config")
    known_models = {r.model for r in rows} | {group_of(r) for r in rows}
    pick_m = names("models", models, known_models, "model")
    pick_c = names("chips", chips, set(CHIPS.values()) | {r.chip for r in rows}, "chip")
    pick_e = names("engines", engines, set(ENGINES) | {r.engine for r in rows}, "engine")
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


def kernel_report(root, scheme, chips, engines, families, bar):
    """Out-of-sample errors of the kernel tables (``fidelity.holdout_kernels``)."""
    from ..errors import CatalogError
    from ..fidelity.holdout_kernels import COLLECTIVES, kernel_holdout, load_key
    from ..fidelity.kernel_profiles import FAMILY_NAMES
    from ..fidelity.kernel_tables import CHIPS, ENGINES

    present = [folder for folder in CHIPS if (root / folder).is_dir()]
    if not present:
        raise CatalogError(f"folder {root} holds none of the aiconfigurator system folders "
                           f"({', '.join(CHIPS)})", field="measurements",
                           fix="give the kernels folder of shared/validation/aiconfigurator")
    pick_c = names("chips", chips, set(CHIPS.values()), "chip")
    pick_e = names("engines", engines, set(ENGINES), "engine")
    pick_f = names("families", families, {*FAMILY_NAMES, *COLLECTIVES}, "kernel family")
    every = [(CHIPS[f], e) for f in CHIPS if f in present for e in ENGINES if pick_e is None or e in pick_e]
    keys = [k for k in every if pick_c is None or k[0] in pick_c]
    if not keys:
        raise CatalogError(f"no tables of {', '.join(sorted(pick_c or ()))} in {root}", field="chips",
                           fix=f"pick from {', '.join(CHIPS[f] for f in present)}")
    got = kernel_holdout(lambda chip, engine: load_key(root, chip, engine, families=pick_f), keys, scheme,
                         every=every, progress=bar)
    return got.report()




BENCH_FILES_HELP = (" Or the serving benchmarks' own result files (.json/.jsonl: vllm bench serve --save-result, "
                    "SGLang bench_serving --output-file, AIPerf/GenAI-Perf profile_export JSON), with the deployment "
                    "given by --model, --system, --tp/--ep/--pp and --weight-dtype/--kv-dtype.")


@dataclass(frozen=True)
class CalibrateRequest:
    """``calibrate``: the files, the profile written, and the deployment of benchmark result files."""

    measurements: tuple = arg(None, "Measurement CSV(s) (llmecon measure writes one; format in docs/calibration.md)."
                              + BENCH_FILES_HELP, kind="repeated", required=True, positional=True, web=False)
    out: str = arg("profile.toml", "Profile TOML to write.", flags=("--out", "-o"), web=False)
    name: Optional[str] = arg(None, "Profile name (default: the accelerator).", web=False)
    accelerator: Optional[str] = arg(None, "Fit only rows of this accelerator (needed when the file has several).",
                                     web=False)
    all_rows: bool = arg(False, "Fit on every row (default: the 'fit' split only, so validate can report the "
                         "held-out rows).", web=False)
    model: Optional[str] = arg(None, "Benchmark result files: the served model (catalogue name or config.json).",
                               flags=("--model", "-m"), web=False)
    system: Optional[str] = arg(None, "Benchmark result files: the system it ran on (llmecon catalog systems).",
                                flags=("--system", "-s"), web=False)
    tp: Optional[int] = inherit(DeploymentArgs, "tp", web=False)
    ep: Optional[int] = inherit(DeploymentArgs, "ep", web=False)
    pp: Optional[int] = inherit(DeploymentArgs, "pp", web=False)
    weight_dtype: Optional[str] = inherit(DeploymentArgs, "weight_dtype", web=False)
    kv_dtype: Optional[str] = inherit(DeploymentArgs, "kv_dtype", web=False)


def calibrate(measurements: list[str], model, system, tp, ep, pp, weight_dtype, kv_dtype, *, accelerator=None,
              name=None, all_rows: bool = False):
    """(rows, accelerator, profile, fit report, errors): an efficiency profile fitted (bounded least squares,
    ``fidelity.calibrate.fit_profile``) to one accelerator's rows of ``measurements``, and its errors."""
    from pathlib import Path

    from ..fidelity.accuracy import accelerator_of, evaluate
    from ..fidelity.calibrate import fit_profile

    rows = measurement_rows(measurements, model, system, tp, ep, pp, weight_dtype, kv_dtype)
    names = ", ".join(Path(p).name for p in measurements)
    where = ", ".join(measurements)
    accels = sorted({accelerator_of(r).name for r in rows})
    if accelerator is None and len(accels) > 1:
        raise SpecError(f"--accelerator: {where} has rows of several accelerators ({', '.join(accels)}); pick one")
    chosen = accelerator or accels[0]
    rows = [r for r in rows if accelerator_of(r).name == chosen]
    if not rows:
        raise SpecError(f"--accelerator: no rows for '{chosen}' in {where}; it has {', '.join(accels)}")
    prof, report = fit_profile(rows, name=name or chosen, accelerators=(chosen,), use_split=not all_rows,
                               derivation=f"llmecon calibrate {names} "
                                          f"({'all rows' if all_rows else 'fit split'})")
    return rows, chosen, prof, report, evaluate(rows, prof)


def check_inputs(paths: list[str], kind: str, bench: dict) -> None:
    """A silicon CSV or kernel folder is checked alone, and without the benchmark files' deployment options."""
    measurements = paths[0]
    if kind != "measurements" and len(paths) > 1:
        raise SpecError(f"measurements: {measurements} is a {kind} input, checked alone; give it without the other "
                        "files")
    given = [f for f, v in bench.items() if v is not None]
    if kind != "measurements" and given:
        raise SpecError(f"{given[0]}: applies to benchmark result files (.json, .jsonl); {measurements} is a {kind} "
                        "input")


def check_frontier(kind: str, measurements: str) -> None:
    if kind != "silicon":
        raise SpecError(f"--frontier: {measurements} is not NVIDIA's silicon CSV (aiconfigurator silicon_dev.csv)")


def check_holdout(kind: str, measurements: str, *, profile_given: bool) -> None:
    if profile_given:
        raise SpecError(f"--profile/--mode: {measurements} is a {kind} input, scored with each chip/engine's "
                        "kernel-table profile fitted out of sample; leave --profile and --mode out")


def check_measurement_options(measurements: str, options: dict) -> None:
    """The hold-out options belong to a silicon CSV or kernel tables, not to a measurement CSV."""
    extra = [f for f, v in options.items() if v is not None]
    if extra:
        raise SpecError(f"{extra[0]}: applies to a silicon CSV or a kernel-tables folder; {measurements} is a "
                        "measurement CSV (its split column holds rows out)")


def holdout_report(measurements: str, kind: str, scheme: str, *, models, chips, engines, configs, families, bar):
    """``validate`` on a silicon CSV or a kernel-tables folder: out-of-sample errors by ``scheme``."""
    from pathlib import Path

    if kind == "silicon":
        if families is not None:
            raise SpecError("--families: applies to a kernel-tables folder; a silicon CSV scores TPOT and TTFT")
        return silicon_report(measurements, scheme, models, chips, engines, configs, bar)
    if models is not None:
        raise SpecError("--models: kernel tables have no model column; use --holdout model (shape groups) and "
                        "--chips")
    return kernel_report(Path(measurements), scheme, chips, engines, families, bar)
