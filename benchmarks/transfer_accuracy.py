"""Expected error of transferred profiles (``fidelity.transfer``), measured leave-one-chip-out (issue 21).

    PYTHONPATH=src python benchmarks/transfer_accuracy.py [--out FILE.md] [--write] [--jobs 2]

For each measured NVIDIA chip X (h100-sxm, h200, b200, b300, gb200, gb300), each engine E
(trtllm, sglang, vllm) and each method (``nearest``: the same-vendor chip closest in datasheet;
``pooled``: term-by-term median over the chips), X's profile is transferred from the OTHER five
chips' shipped profiles of E only, through X's datasheet, and compared with

(a) X's measured kernel tables (NVIDIA aiconfigurator @095f58a; GEMM all dtypes, prefill and
    decode attention, MoE balanced and skewed: ``benchmarks/kernel_accuracy.py``'s rows and
    ``fidelity.kernel_fit`` predictors), and
(b) X's measured end-to-end aggregated serving rows (silicon_dev.csv, ``fidelity.silicon``
    ``predict_silicon``): TPOT on every row, TTFT at concurrency <= 8.

Nothing of X enters its transfer: the source profiles' kernel terms were fitted on their own
chips' tables and their engine terms on their own chips' rows (benchmarks/silicon_accuracy.py),
and the rule and method were fixed before this ran. Errors are |pred/meas - 1|; "±X%" figures
are medians over all held-out rows (every chip's rows pooled). ``own`` = X's own shipped profile
(in-sample: a reference for what the transfer loses, not an accuracy claim).

``--write`` writes catalog/profiles/<chip>-transferred.toml for every catalogue accelerator with
no measured profile (``method_for``, ``SHIPPED_ENGINE``), with the figures of its (method, engine).
"""

from __future__ import annotations

import argparse
import datetime
import multiprocessing as mp
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from llmecon.catalog.efficiency import default_profiles, named_profile, transfer_refusal  # noqa: E402
from llmecon.catalog.hardware import accelerators, get_accelerator  # noqa: E402
from llmecon.fidelity import kernel_fit as kf  # noqa: E402
from llmecon.fidelity.engine_fit import TTFT_MAX_CONCURRENCY  # noqa: E402
from llmecon.fidelity.kernel_profiles import load_tables  # noqa: E402
from llmecon.fidelity.kernel_tables import CHIPS, ENGINES, default_root  # noqa: E402
from llmecon.fidelity.silicon import predict_silicon, read_silicon  # noqa: E402
from llmecon.fidelity.transfer import SHIPPED_ENGINE, method_for, rank_sources, transfer  # noqa: E402

DATE = "2026-11-29"
METHODS = ("nearest", "pooled")
FAMILIES = ("gemm", "attention", "moe")
OUT = ROOT / "benchmarks" / "results" / f"transfer_accuracy_{DATE}.md"


def _load(key):
    chip, engine = key
    return key, load_tables(default_root(), chip, engine)[0]


def kernel_errors(profile, tables: dict) -> dict:
    """{family: |pred/meas - 1| per row} of one chip's tables (engine) under ``profile``."""
    out: dict = {f: [] for f in FAMILIES}
    if "gemm" in tables:
        g = tables["gemm"]
        out["gemm"].append(kf.predict_gemm(profile, g) / g["time_s"] - 1)
    if "context_attention" in tables:
        c = tables["context_attention"]
        c = {k: v[c["attn_dtype"] == "bfloat16"] for k, v in c.items()}
        out["attention"].append(kf.predict_prefill(profile, c) / c["time_s"] - 1)
    if "generation_attention" in tables:
        d = tables["generation_attention"]
        out["attention"].append(kf.predict_decode(profile, d) / d["time_s"] - 1)
    if "moe" in tables:
        m = tables["moe"]
        out["moe"].append(kf.predict_moe(profile, m) / m["time_s"] - 1)
    return {f: np.abs(np.concatenate(v)) if v else np.array([]) for f, v in out.items()}


def _stats(err) -> tuple[int, float, float]:
    e = np.asarray(err, dtype=float)
    e = e[np.isfinite(e)]
    return (e.size, float(np.median(e)), float(np.percentile(e, 90))) if e.size else (0, np.nan, np.nan)


def _cell(err) -> str:
    n, med, p90 = _stats(err)
    return f"{med:.0%} / {p90:.0%}" if n else "–"


def run(jobs: int):
    measured = [p for p in default_profiles() if p.engine and not p.transferred]
    keys = [(c, e) for c in CHIPS.values() for e in ENGINES]
    with mp.get_context("fork").Pool(jobs) as pool:
        tables = dict(pool.map(_load, keys))
    rows, _ = read_silicon()
    meas_tpot = np.array([r.tpot_s for r in rows])
    meas_ttft = np.array([r.ttft_s for r in rows])
    low = np.array([r.concurrency <= TTFT_MAX_CONCURRENCY for r in rows])
    # err[(variant, engine, chip)] = {family: errs, "tpot": errs, "ttft": errs}; variant: method or "own"
    err: dict = {}
    sources: dict = {}
    for chip in CHIPS.values():
        acc = get_accelerator(chip)
        others = [p for p in measured if p.accelerators[0] != chip]
        idx = [i for i, r in enumerate(rows) if r.chip == chip]
        for variant in METHODS + ("own",):
            profs = {}
            for engine in ENGINES:
                if variant == "own":
                    profs[engine] = named_profile(f"{chip}/{engine}")
                else:
                    profs[engine] = transfer(acc, others, method=variant, engine=engine)
                    sources[(variant, engine, chip)] = (profs[engine].transfer["source"],
                                                        profs[engine].transfer["engine_terms_from"])
                err[(variant, engine, chip)] = kernel_errors(profs[engine], tables[(chip, engine)])
            sub = [rows[i] for i in idx]
            tpot, ttft, _ = predict_silicon(sub, profiles={f"{chip}/{e}": p for e, p in profs.items()})
            for engine in ENGINES:
                sel = np.array([r.engine == engine for r in sub], dtype=bool)
                ii = np.asarray(idx)[sel] if sel.size else np.array([], dtype=int)
                e = err[(variant, engine, chip)]
                e["tpot"] = np.abs(tpot[sel] / meas_tpot[ii] - 1) if sel.any() else np.array([])
                lo = low[ii] if sel.any() else np.array([], dtype=bool)
                e["ttft"] = np.abs(ttft[sel][lo] / meas_ttft[ii][lo] - 1) if sel.any() else np.array([])
    return err, sources


def _gather(err: dict, variant: str, engines=ENGINES, chips=None) -> dict:
    chips = chips or list(CHIPS.values())
    out = {}
    for q in FAMILIES + ("tpot", "ttft"):
        parts = [err[(variant, e, c)][q] for e in engines for c in chips if (variant, e, c) in err]
        out[q] = np.concatenate(parts) if parts else np.array([])
    return out


def expected_error(err: dict, method: str, engine: str) -> dict:
    """The figures a shipped profile of (method, engine) carries: medians (and p90) over all held-out rows."""
    g = _gather(err, method, (engine,))
    out = {}
    for q in ("tpot", "ttft"):
        n, med, p90 = _stats(g[q])
        if n:
            out[f"{q}_median"], out[f"{q}_p90"] = round(med, 3), round(p90, 3)
    for f in FAMILIES:
        n, med, _ = _stats(g[f])
        if n:
            out[f"{f}_median"] = round(med, 3)
    return out


def report(err: dict, sources: dict, elapsed: float) -> str:
    chips = list(CHIPS.values())
    head = ("| held-out chip | method | source (kernel terms; engine terms) | GEMM | attention | MoE | TPOT rows | "
            "TPOT | TTFT rows | TTFT (c <= 8) |")
    lines = [f"# Transferred profiles: leave-one-chip-out accuracy ({DATE}, {elapsed:.0f} s)", "",
             "`PYTHONPATH=src python benchmarks/transfer_accuracy.py` (method in its docstring and "
             "`fidelity.transfer`). Each NVIDIA chip's profile is transferred from the other five chips' shipped "
             "profiles through its own datasheet and compared with its measured kernel tables and end-to-end "
             "serving rows. Errors |pred/meas − 1|, median / p90, engines pooled unless stated. `own` = the chip's "
             "own shipped profile (in-sample; the reference the transfer is compared with).", "",
             "Caveat: every held-out chip is NVIDIA. The cross-vendor error (AMD, TPU, Trainium, Ascend, which "
             "get the `pooled` method) cannot be measured with these data; a different software stack "
             "(ROCm, XLA, Neuron) can differ by more than one NVIDIA generation from the next, so read these "
             "figures as a lower bound for other vendors.", "", "## Summary (all held-out chips)", "",
             "| method | engines | GEMM | attention | MoE | TPOT rows | TPOT | TTFT rows | TTFT (c <= 8) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for variant in METHODS + ("own",):
        for engines in (ENGINES,) + tuple((e,) for e in ENGINES):
            g = _gather(err, variant, engines)
            lines.append(f"| {variant} | {'all' if len(engines) > 1 else engines[0]} | "
                         + " | ".join(_cell(g[f]) for f in FAMILIES)
                         + f" | {_stats(g['tpot'])[0]} | {_cell(g['tpot'])} | {_stats(g['ttft'])[0]} | "
                           f"{_cell(g['ttft'])} |")
    lines += ["", "## Per held-out chip (engines pooled; sources per engine trtllm, sglang, vllm)", "", head,
              "|---|---|---|---|---|---|---|---|---|---|"]
    for chip in chips:
        for variant in METHODS + ("own",):
            g = _gather(err, variant, ENGINES, [chip])
            src = {"own": "own (in-sample)", "pooled": "median of the other five chips"}.get(variant) or "; ".join(
                "{} + {}".format(*sources[(variant, e, chip)]) for e in ENGINES if (variant, e, chip) in sources)
            lines.append(f"| {chip} | {variant} | {src} | " + " | ".join(_cell(g[f]) for f in FAMILIES)
                         + f" | {_stats(g['tpot'])[0]} | {_cell(g['tpot'])} | {_stats(g['ttft'])[0]} | "
                           f"{_cell(g['ttft'])} |")
    lines += ["", "## Shipped expected error", "",
              "| method | engine | stored figures (medians over held-out rows; TTFT at c <= 8) |", "|---|---|---|"]
    for method, engine in SHIPPED_ENGINE.items():
        ee = expected_error(err, method, engine)
        lines.append(f"| {method} | {engine} | " + ", ".join(f"{k} {v:.0%}" for k, v in ee.items()) + " |")
    return "\n".join(lines) + "\n"


def unmeasured() -> list[str]:
    """Catalogue accelerators with no measured (non-transferred) profile and no profile transferred by
    benchmarks/fit_amd.py from a measured chip of the same die (mi325x/vllm, mi355x/vllm: ``fidelity.amd_profiles``;
    those are that benchmark's to write)."""
    pooled = "pooled NVIDIA vllm profiles"
    measured = {a for p in default_profiles() if not p.transferred or p.transfer.get("source") != pooled
                for a in p.accelerators}
    return [a for a in accelerators() if a not in measured]


def write_profiles(err: dict) -> list[str]:
    measured = [p for p in default_profiles() if p.engine and not p.transferred]
    out = []
    folder = ROOT / "src" / "llmecon" / "catalog" / "profiles"
    for name in unmeasured():
        acc = get_accelerator(name)
        why = transfer_refusal(acc)
        if why is not None:
            out.append(f"- {name}: refused, {why}")
            continue
        method = method_for(acc, measured)
        engine = SHIPPED_ENGINE[method]
        prof = transfer(acc, measured, method=method, engine=engine, date=DATE,
                        expected_error=expected_error(err, method, engine),
                        error_scope=f"leave-one-chip-out over the six measured NVIDIA chips, {method} method, "
                                    f"{engine} engine, medians over held-out rows; cross-vendor error unmeasured")
        path = folder / f"{name}-transferred.toml"
        path.write_text(prof.as_toml(), encoding="utf-8")
        near = rank_sources(acc, [p for p in measured if p.engine == engine])[0].name
        out.append(f"- {name}: {prof.fidelity} (nearest measured by datasheet: {near}) -> {path.name}")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(OUT))
    ap.add_argument("--write", action="store_true", help="write catalog/profiles/<chip>-transferred.toml")
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    if default_root() is None:
        raise SystemExit("../shared/validation/aiconfigurator/kernels not found (the measured tables are not shipped)")
    t0 = time.perf_counter()
    err, sources = run(args.jobs)
    text = report(err, sources, time.perf_counter() - t0)
    if args.write:
        text += "\n## Shipped transferred profiles (catalog/profiles/<chip>-transferred.toml)\n\n" + "\n".join(
            write_profiles(err)) + "\n"
    Path(args.out).write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
