"""Fit AMD kernel and engine terms on the public AMD measurements and score them out of sample (issue 34, item 2).

    PYTHONPATH=src python benchmarks/fit_amd.py [--out FILE.md] [--write]

1. Kernels (``fidelity.amd_kernels``, ``fidelity.amd_fit``): aiter's tuned GEMM and fused-MoE rows for gfx942/304
   (read as mi300x) and gfx950/256 (read as mi355x), per family, chip and dtype: the shipped
   ``<chip>-transferred`` profile (pooled NVIDIA vLLM terms, never fitted on these rows), leave-one-model-out
   (each tuning file's model held out in turn) and leave-one-chip-out (fit on the other chip, priced through
   this chip's datasheet).
2. Served (``fidelity.amd_serving``): MI300X vLLM batch latency. Engine terms fitted on the latest ROCm/vllm
   dev-docker version (vLLM 0.10.0, 2025-08-14) with the kernels of step 1; scored leave-one-model-out (fit on
   Llama 3.1 70B, price 405B, and back), and on rows never fitted: the other dev-docker versions (software
   drift, per vLLM version), the rocm-hub release-image rows and the Oracle OCI blog rows.
3. Profiles (``fidelity.amd_profiles``): ``--write`` writes catalog/profiles/mi300x-vllm.toml, mi325x-vllm.toml,
   mi355x-vllm.toml.

Errors are |predicted/measured - 1|; "bias" is the signed median (negative: predicted too fast).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from llmecon.catalog.efficiency import parse_profile  # noqa: E402
from llmecon.fidelity import amd_fit, amd_profiles, amd_serving  # noqa: E402
from llmecon.fidelity.amd_kernels import default_root, read_gemm, read_moe  # noqa: E402

DATE = "2026-11-28"
PROFILES = ROOT / "src" / "llmecon" / "catalog" / "profiles"
OUT = ROOT / "benchmarks" / "results" / f"amd_fit_{DATE}.md"
BASE = {"mi300x": "mi300x-transferred.toml", "mi325x": "mi325x-transferred.toml", "mi355x": "mi355x-transferred.toml"}
"""The pooled-NVIDIA transferred profiles as shipped on 2026-11-26 (git show 1c3b70d:...): the baseline scored
here and the source of every borrowed term. Read from git history once they are replaced (``base_profile``)."""


def base_profile(chip: str):
    """The shipped transferred profile of ``chip`` (from the working tree, else from commit 1c3b70d)."""
    import subprocess

    path = PROFILES / BASE[chip]
    if path.is_file():
        text = path.read_text(encoding="utf-8")
    else:
        rel = path.relative_to(ROOT).as_posix()
        text = subprocess.run(["git", "-C", str(ROOT), "show", f"1c3b70d:{rel}"], check=True, capture_output=True,
                              text=True).stdout
    return parse_profile(text, where=BASE[chip])


def pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def kernel_section(gemm: dict, moe: dict, log) -> tuple[list[str], dict]:
    lines = ["## 1. Kernels: aiter tuned rows (tuning-time ceilings)", "",
             "| family | chip | dtype | protocol | rows | groups | median | p90 | bias |",
             "|---|---|---|---|---|---|---|---|---|"]
    scores: dict = {}
    for family, cols in (("gemm", gemm), ("moe", moe)):
        for chip in ("mi300x", "mi355x"):
            base = base_profile(chip)
            for dtype in sorted(np.unique(cols["dtype"][cols["chip"] == chip])):
                dtype = str(dtype)
                for s in (amd_fit.baseline(cols, family, chip, dtype, base),
                          amd_fit.leave_one_model_out(cols, family, chip, dtype),
                          amd_fit.leave_one_chip_out(cols, family, chip, dtype)):
                    if s is None:
                        continue
                    lines.append(f"| {family} | {chip} | {dtype} | {s.protocol} | {s.rows} | {s.groups} | "
                                 f"{pct(s.median)} | {pct(s.p90)} | {100 * s.bias:+.1f}% |")
                    if s.protocol == "leave-one-model-out":
                        scores.setdefault(chip, {})[f"{family}_{dtype}_lomo_median"] = s.median
                        scores[chip][f"{family}_{dtype}_lomo_p90"] = s.p90
                    log(lines[-1])
    return lines, scores


def _score(rows, profile) -> tuple[float, float, float, int]:
    if not rows:
        return float("nan"), float("nan"), float("nan"), 0
    y = np.array([r.seconds for r in rows])
    ratio = amd_serving.predict_latency(rows, profile) / y - 1.0
    return float(np.median(np.abs(ratio))), float(np.quantile(np.abs(ratio), 0.9)), float(np.median(ratio)), len(y)


def served_section(rows, kernel_base, transferred, log) -> tuple[list[str], dict, dict]:
    fit_rows = amd_serving.latest(rows)
    terms = amd_serving.fit_engine(fit_rows, kernel_base)
    final = amd_serving.with_engine(kernel_base, terms)
    lines = ["## 2. Served: MI300X vLLM batch latency (TP8, Llama 3.1 FP8, FP8 KV)", "",
             f"Fit set: {len(fit_rows)} rows of the ROCm/vllm dev-docker README of {fit_rows[0].date} "
             f"(vLLM {fit_rows[0].version}). Fitted terms (all rows): "
             + ", ".join(f"{k} = {v:.4g}" for k, v in terms.items()) + ".", "",
             "| rows | protocol | n | median | p90 | bias | transferred profile: median | p90 | bias |",
             "|---|---|---|---|---|---|---|---|---|"]
    pred, meas = [], []
    for held in sorted({r.model for r in fit_rows}):
        train = [r for r in fit_rows if r.model != held]
        test = [r for r in fit_rows if r.model == held]
        t = amd_serving.fit_engine(train, kernel_base)
        prof = amd_serving.with_engine(kernel_base, t)
        pred.append(amd_serving.predict_latency(test, prof))
        meas.append(np.array([r.seconds for r in test]))
        m, p, b, n = _score(test, prof)
        tm, tp, tb, _ = _score(test, transferred)
        fitted = ", ".join(f"{k} {v:.3g}" for k, v in t.items())
        lines.append(f"| {fit_rows[0].date}, {held} | leave-one-model-out (fit: {fitted}) "
                     f"| {n} | {pct(m)} | {pct(p)} | {100 * b:+.1f}% | {pct(tm)} | {pct(tp)} | {100 * tb:+.1f}% |")
        log(lines[-1])
    e = np.abs(np.concatenate(pred) / np.concatenate(meas) - 1.0)
    scores = {"served_lomo_median": float(np.median(e)), "served_lomo_p90": float(np.quantile(e, 0.9))}
    lines.append(f"| {fit_rows[0].date}, both models pooled | leave-one-model-out | {len(e)} "
                 f"| {pct(scores['served_lomo_median'])} "
                 f"| {pct(scores['served_lomo_p90'])} | | | | |")
    m, p, b, n = _score(fit_rows, final)
    tm, tp, tb, _ = _score(fit_rows, transferred)
    lines.append(f"| {fit_rows[0].date}, both models | in sample (reference only) | {n} | {pct(m)} | {pct(p)} "
                 f"| {100 * b:+.1f}% "
                 f"| {pct(tm)} | {pct(tp)} | {100 * tb:+.1f}% |")
    groups: dict[tuple, list] = {}
    rest = amd_serving.unseen(rows, fit_rows)
    lines.append(f"| the {len(rows) - len(rest)} rows repeating a fitted (configuration, value) | left out "
                 "| | | | | | | |")
    for r in rest:
        key = (r.source, r.version) if r.source == "rocm_vllm_dev_docker_readme" else (r.source, r.version[:40])
        groups.setdefault(key, []).append(r)
    for (source, version), rs in sorted(groups.items()):
        m, p, b, n = _score(rs, final)
        tm, tp, tb, _ = _score(rs, transferred)
        conf = ",".join(sorted({r.confidence for r in rs}))
        lines.append(f"| {source}, vLLM {version} ({conf}) | never fitted | {n} | {pct(m)} | {pct(p)} "
                     f"| {100 * b:+.1f}% "
                     f"| {pct(tm)} | {pct(tp)} | {100 * tb:+.1f}% |")
        log(lines[-1])
    return lines, terms, scores


def deepseek_section(profiles: dict) -> list[str]:
    """A direction, not a validation: DeepSeek-V3 (R1's architecture) FP8 block-scale TP8 steady-state TPOT,
    1,024 in / 1,024 out, under the replaced pooled-NVIDIA transfer and the new profile (no AMD DeepSeek serving
    row exists in the shared data; issue 34 found the transfer 26-46% too fast on held-out SGLang rows)."""
    from llmecon.catalog.hardware import get_system
    from llmecon.catalog.models import get_model
    from llmecon.serving.steady_state import steady_state
    from llmecon.spec.deployment import Deployment
    from llmecon.spec.plan import Plan

    conc = np.array([1.0, 4.0, 16.0, 64.0])
    lines = ["## 4. DeepSeek-V3/R1 FP8 (fp8_block), TP8, 1,024/1,024: predicted TPOT (a direction, not a score)", "",
             "| chip | concurrency | pooled NVIDIA transfer (ms) | new profile (ms) | new / old |",
             "|---|---|---|---|---|"]
    for chip, (old, new) in profiles.items():
        got = []
        for prof in (old, new):
            dep = Deployment(model=get_model("deepseek-v3"), system=get_system(f"{chip}-8"), plan=Plan(tp=8),
                             weight_dtype="fp8_block", kv_dtype="fp8", profile=prof)
            got.append(np.asarray(steady_state(dep, concurrency=conc, prompt_tokens=np.full(4, 1024.0),
                                               output_tokens=np.full(4, 1024.0)).tpot_s, dtype=float))
        for c, a, b in zip(conc, *got):
            lines.append(f"| {chip} | {c:.0f} | {1e3 * a:.2f} | {1e3 * b:.2f} | {b / a:.2f} |")
    return lines


def silicon_note() -> str:
    """Which chips aiconfigurator's silicon_dev.csv holds: AMD rows there would be a third out-of-sample set."""
    import csv

    from llmecon.fidelity.silicon import default_path

    path = default_path()
    if path is None or not path.is_file():
        return "aiconfigurator silicon_dev.csv: not present, not checked."
    with path.open(newline="", encoding="utf-8") as fh:
        chips = sorted({r["system"] for r in csv.DictReader(fh)})
    amd = [c for c in chips if c.startswith("mi")]
    return (f"aiconfigurator silicon_dev.csv holds {', '.join(chips)}: "
            + (f"AMD rows on {', '.join(amd)}." if amd else "no AMD rows, so no third out-of-sample AMD set there."))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(OUT), help="markdown results file")
    ap.add_argument("--write", action="store_true", help="write catalog/profiles/mi3xxx-vllm.toml")
    args = ap.parse_args()
    aiter = default_root()
    served_root = amd_serving.default_root()
    if aiter is None or served_root is None:
        raise SystemExit("../shared/validation/non_nvidia not found (the AMD measurements are not shipped)")
    t0 = time.perf_counter()

    def log(msg: str) -> None:
        print(f"[{time.perf_counter() - t0:6.0f} s] {msg}", flush=True)

    gemm, moe = read_gemm(aiter), read_moe(aiter)
    log(f"aiter rows: gemm {len(gemm['time_s'])}, moe {len(moe['time_s'])}")
    klines, kscores = kernel_section(gemm, moe, log)
    kernels = {chip: amd_fit.fit_chip(gemm, moe, chip) for chip in ("mi300x", "mi355x")}
    base300 = base_profile("mi300x")
    kernel_base = amd_fit.with_kernels(base300, kernels["mi300x"])
    rows = amd_serving.read_latency(served_root)
    slines, terms, sscores = served_section(rows, kernel_base, base300, log)
    nrows = {c: {"gemm": int((gemm["chip"] == c).sum()), "moe": int((moe["chip"] == c).sum())} for c in kernels}
    fit_n = len(amd_serving.latest(rows))
    p300 = amd_profiles.mi300x(base300, kernels["mi300x"], terms, rows={**nrows["mi300x"], "served": fit_n},
                               scores={**kscores.get("mi300x", {}), **sscores}, date=DATE)
    p325 = amd_profiles.mi325x(p300, scores={**kscores.get("mi300x", {}), **sscores}, date=DATE)
    p355 = amd_profiles.mi355x(base_profile("mi355x"), kernels["mi355x"], p300, rows=nrows["mi355x"],
                               scores={**kscores.get("mi355x", {}), **sscores}, date=DATE)
    terms_lines = ["## 3. Shipped terms", ""]
    for prof in (p300, p355):
        terms_lines.append(f"- **{prof.name}**: " + "; ".join(
            f"{fam}.{dt}: fraction {t.fraction:.3g}, m_half {t.m_half:.4g}, hbm_fraction {t.hbm_fraction:.3g}, "
            f"floor {t.floor_s * 1e6:.3g} us" for fam in ("gemm", "moe") for dt, t in getattr(prof, fam)
            if dt in kernels[prof.accelerators[0]][fam] or (prof is p300 and fam == "gemm" and dt == "fp8")))
    base325 = base_profile("mi325x")
    dlines = deepseek_section({"mi300x": (base300, p300), "mi325x": (base325, p325),
                               "mi355x": (base_profile("mi355x"), p355)})
    text = "\n".join([f"# AMD fit ({DATE}): kernels on aiter, engine terms on MI300X vLLM", "",
                      "Command: `PYTHONPATH=src python benchmarks/fit_amd.py"
                      + (" --write" if args.write else "") + "`",
                      f"(one run, {time.perf_counter() - t0:.0f} s). Errors |pred/meas - 1|; bias = signed median "
                      "(negative: predicted too fast). Baseline = the shipped pooled-NVIDIA transferred profile "
                      "(fitted on none of these rows).", "", silicon_note(), ""] + klines + [""] + slines + [""]
                     + terms_lines + [""] + dlines) + "\n"
    Path(args.out).write_text(text, encoding="utf-8")
    log(f"wrote {args.out}")
    if args.write:
        for prof in (p300, p325, p355):
            path = PROFILES / f"{prof.accelerators[0]}-vllm.toml"
            path.write_text(prof.as_toml(), encoding="utf-8")
            parse_profile(path.read_text(encoding="utf-8"), where=str(path))  # reads back strictly
            log(f"wrote {path}")


if __name__ == "__main__":
    main()
