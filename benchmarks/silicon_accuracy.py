"""End-to-end serving accuracy on NVIDIA's measured silicon rows, leave one model out (issue 21).

    PYTHONPATH=src python benchmarks/silicon_accuracy.py [--write-profiles] [--out FILE.md]

Rows: the aggregated rows of shared/validation/aiconfigurator/silicon_dev.csv that
``fidelity.silicon`` maps (disaggregated rows and models without a config are skipped, counted
below). Each row is priced by ``predict`` phase ``serving`` (``serving.steady_state``) with its
(chip, engine) kernel-table profile.

Engine terms (``fidelity.engine_fit``) are fitted per (chip, engine). Leave-one-model-out: for
each model of a (chip, engine), the terms are fitted on that (chip, engine)'s other models and the
held-out model's rows are priced with the full model; DeepSeek-R1, -V3 and -V3.1 (one
architecture) are held out together. Where a (chip, engine) has no other model, the terms are
fitted on the same engine's rows on the other chips, the held-out model excluded everywhere
("fallback" in the table). Nothing of a held-out group enters its own fit: the linearisation point
is the fixed kernel-only profile, and the second pass re-linearises at each fold's own first-pass
terms on that fold's training rows only. The folds and fits are ``fidelity.holdout_silicon``'s
(``llmecon validate silicon_dev.csv`` runs them too); this script formats the tables.

``--write-profiles`` writes the in-sample terms (every row of the chip and engine) into
catalog/profiles/<chip>-<engine>.toml. Errors are |pred/meas - 1|; TTFT only at concurrency <= 8.
"""

from __future__ import annotations

import argparse
import datetime
import re
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from llmecon.fidelity import holdout_silicon as hs  # noqa: E402
from llmecon.fidelity.engine_fit import FIXED, PARAMS, TTFT_MAX_CONCURRENCY  # noqa: E402
from llmecon.fidelity.holdout import stats  # noqa: E402
from llmecon.fidelity.holdout_silicon import group_of  # noqa: E402
from llmecon.fidelity.silicon import predict_silicon, read_silicon  # noqa: E402

DATE = "2026-11-28"
"""The date of this run's results file and of the engine-terms notes ``--write-profiles`` writes."""
ENGINE_NOTE = r" Engine terms \((?:(?! Engine terms \().)*?silicon_accuracy_\d{4}-\d{2}-\d{2}\.md(?:\.|(?=; ))"
"""One engine-terms note in a profile's derivation, ending its sentence or followed by a later note's
"; ..." (``--write-profiles`` replaces them all with one at the end)."""


def without_engine_notes(derivation: str) -> str:
    """``derivation`` without its engine-terms notes (``ENGINE_NOTE``); a note that a later "; ..." note
    followed leaves that note joined to the sentence before it."""
    return re.sub(ENGINE_NOTE + r"(?P<next>; )?", lambda m: "" if m.group("next") is None else "; ",
                  derivation).replace(".; ", "; ")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--write-profiles", action="store_true")
    ap.add_argument("--out", default=str(ROOT / f"benchmarks/results/silicon_accuracy_{DATE}.md"))
    args = ap.parse_args()
    rows, skipped = read_silicon()
    n = len(rows)
    meas_tpot = np.array([r.tpot_s for r in rows])
    meas_ttft = np.array([r.ttft_s for r in rows])
    low = np.array([r.concurrency <= TTFT_MAX_CONCURRENCY for r in rows])
    lin0 = hs.linearise(rows)
    base_tpot, base_ttft = lin0[0], lin0[1]
    ideal_tpot, ideal_ttft, _ = predict_silicon(rows, mode="ideal")
    by_prof = defaultdict(list)
    for i, r in enumerate(rows):
        by_prof[r.profile].append(i)
    shipped, ins_tpot, ins_ttft = hs.in_sample(rows, lin0, base_tpot)
    folds, fallback = hs.model_folds(rows, base_tpot)
    lomo_tpot, lomo_ttft = hs.predict_folds(rows, folds, lin0)
    # comparison: one set of terms per engine, pooled over the chips (more models per fit)
    pool_tpot, pool_ttft = hs.predict_folds(rows, hs.pooled_model_folds(rows, base_tpot), lin0)

    def err(pred, meas):
        return np.abs(pred / meas - 1.0)

    e = {"base_tpot": err(base_tpot, meas_tpot), "ins_tpot": err(ins_tpot, meas_tpot),
         "lomo_tpot": err(lomo_tpot, meas_tpot), "base_ttft": err(base_ttft, meas_ttft),
         "ins_ttft": err(ins_ttft, meas_ttft), "lomo_ttft": err(lomo_ttft, meas_ttft),
         "pool_tpot": err(pool_tpot, meas_tpot), "pool_ttft": err(pool_ttft, meas_ttft)}
    below_tpot = np.nanmean((ideal_tpot <= meas_tpot)[np.isfinite(ideal_tpot)])
    below_ttft = np.nanmean((ideal_ttft <= meas_ttft)[np.isfinite(ideal_ttft)])

    lines = [f"# Silicon end-to-end accuracy, leave one model out ({datetime.date(2026, 11, 26)})", "",
             "`PYTHONPATH=src python benchmarks/silicon_accuracy.py` (method in its docstring). Rows: "
             f"{n} aggregated rows of aiconfigurator's silicon_dev.csv mapped by `fidelity.silicon`; "
             f"{len(skipped)} rows skipped (reasons below). TTFT errors only at concurrency <= {TTFT_MAX_CONCURRENCY}. "
             "`kernel-only` = the kernel-table profile without engine terms (before this fit); `in-sample` = terms "
             "fitted on every row of the chip and engine (the shipped ones; not an accuracy claim); `LOMO` = "
             "held-out model (the number to quote); `engine-pooled` = the same leave-one-model-out with one set of "
             "terms per engine fitted over every chip (a comparison, not shipped). Errors |pred/meas − 1|, "
             "median / p90.", "",
             "Targets (issue 21): TPOT median <= 10%, p90 <= 25%; TTFT (c <= 8) median <= 20%.", "",
             "| chip/engine | models | rows | TPOT kernel-only | TPOT in-sample | **TPOT LOMO** | TTFT rows | "
             "TTFT kernel-only | TTFT in-sample | **TTFT LOMO** | TPOT / TTFT LOMO, engine-pooled terms | note |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]

    def cell(key, sel):
        k, med, p90 = stats(e[key][sel])  # holdout.stats: finite errors only
        return f"{med:.0%} / {p90:.0%}" if k else "–"

    groups = sorted(by_prof.items()) + [("**all**", list(range(n)))]
    for prof, idx in groups:
        sel = np.zeros(n, bool)
        sel[idx] = True
        models = len({group_of(rows[i]) for i in idx})
        k_ttft = int(np.sum(sel & low & np.isfinite(e["lomo_ttft"])))
        k_tpot = int(np.sum(sel & np.isfinite(e["lomo_tpot"])))
        lines.append(f"| {prof} | {models} | {k_tpot} | {cell('base_tpot', sel)} | {cell('ins_tpot', sel)} | "
                     f"**{cell('lomo_tpot', sel)}** | {k_ttft} | {cell('base_ttft', sel & low)} | "
                     f"{cell('ins_ttft', sel & low)} | **{cell('lomo_ttft', sel & low)}** | {cell('pool_tpot', sel)}; "
                     f"{cell('pool_ttft', sel & low)} | {fallback.get(prof, '')} |")
    lines += ["", "Per held-out model (all chips and engines):", "",
              "| model group | rows | TPOT LOMO | TTFT LOMO (c <= 8) |", "|---|---|---|---|"]
    for g in sorted({group_of(r) for r in rows}):
        sel = np.array([group_of(r) == g for r in rows])
        lines.append(f"| {g} | {int(sel.sum())} | {cell('lomo_tpot', sel)} | {cell('lomo_ttft', sel & low)} |")
    lines += ["", "By concurrency band (all chips and engines):", "", "| concurrency | rows | TPOT LOMO | TTFT LOMO |",
              "|---|---|---|---|"]
    conc = np.array([r.concurrency for r in rows])
    for lo_c, hi_c in ((1, 8), (9, 64), (65, 100000)):
        sel = (conc >= lo_c) & (conc <= hi_c)
        lines.append(f"| {lo_c}–{hi_c if hi_c < 100000 else '…'} | {int(sel.sum())} | {cell('lomo_tpot', sel)} | "
                     f"{cell('lomo_ttft', sel)} |")
    lines += ["", f"Ideal mode at or below the measurement: TPOT {below_tpot:.1%}, TTFT {below_ttft:.1%} of "
              "predicted rows.", "", "Shipped engine terms (in-sample fit):", "",
              "| chip/engine | " + " | ".join(PARAMS) + " |", "|---" * (len(PARAMS) + 1) + "|"]
    for prof, t in sorted(shipped.items()):
        lines.append(f"| {prof} | " + " | ".join(f"{t[p]:.4g}" for p in PARAMS) + " |")
    unp = int(np.sum(~np.isfinite(lomo_tpot)))
    from collections import Counter

    lines += ["", f"Rows not predicted (llmecon refuses the plan): {unp}. Skipped rows:", ""]
    for reason, k in Counter(s.reason for s in skipped).most_common():
        lines.append(f"- {k}: {reason}")
    text = "\n".join(lines) + "\n"
    Path(args.out).write_text(text)
    print(text)
    if args.write_profiles:
        from llmecon.fidelity.kernel_profiles import ALL

        rowless = hs.rowless_terms(rows, lin0, base_tpot, [f"{c}/{e}" for c, e in ALL], shipped)
        write_profiles({**shipped, **rowless}, rows, rowless=set(rowless))


def write_profiles(shipped: dict, rows, rowless: set = frozenset()) -> None:
    """The in-sample terms into catalog/profiles/<chip>-<engine>.toml (engine lines replaced); the profiles
    in ``rowless`` carry ``hs.rowless_terms`` (too few priced rows of their own)."""
    for prof, terms in shipped.items():
        path = ROOT / "src/llmecon/catalog/profiles" / (prof.replace("/", "-") + ".toml")
        text = path.read_text()
        for p in terms:  # PARAMS and the fixed terms (engine_fit.FIXED)
            line = f"{p} = {terms[p]:.4g}"
            if re.search(rf"^{p} = .*$", text, flags=re.M):
                text = re.sub(rf"^{p} = .*$", line, text, count=1, flags=re.M)
            else:
                text = re.sub(r"^(step_overhead_s = .*)$", rf"\1\n{line}", text, count=1, flags=re.M)
        models = sorted({r.model for r in rows if r.profile == prof})
        k = sum(r.profile == prof for r in rows)
        held = ", ".join(f"{name} = {v:g}" for name, v in FIXED.items())
        shared = (f"; {', '.join(hs.SHARED)} fitted on every chip's {prof.split('/')[1]} rows (engine-shared, "
                  "fidelity.holdout_silicon.SHARED)") if hs.SHARED else ""
        if prof in rowless:  # hs.rowless_terms: the engine-shared terms only
            note = (f" Engine terms ({', '.join(PARAMS)}): {k} aggregated silicon rows of its own, fewer than "
                    f"{hs.MIN_TRAIN} of them priced (plans llmecon refuses count as unpriced), so the per-chip "
                    f"terms stay kernel-only (fidelity.engine_fit.BASE){shared.replace('; ', ', and ', 1)} "
                    "(fidelity.holdout_silicon.rowless_terms, as a leave-one-chip-out fold gives a chip without "
                    f"rows; written by benchmarks/silicon_accuracy.py {DATE}, errors in "
                    f"benchmarks/results/silicon_accuracy_{DATE}.md.")
        else:
            note = (f" Engine terms ({', '.join(PARAMS)}) fitted by benchmarks/silicon_accuracy.py ({DATE}, "
                    f"fidelity.engine_fit; {held} held, not fitted{shared}) on {k} "
                    f"aggregated serving rows of aiconfigurator's silicon_dev.csv ({'; '.join(models)}); "
                    f"leave-one-model-out error in benchmarks/results/silicon_accuracy_{DATE}.md.")
        # every earlier engine-terms note goes (each ends at its results file), the new one is appended; the
        # MLA / GDN / MXFP4 / all-to-all notes between them stay
        text = re.sub(r'^(derivation = ".*)"$', lambda m: without_engine_notes(m.group(1)) + note + '"', text,
                      count=1, flags=re.M)
        text = text.replace("Not fitted here: engine overheads (step_overhead_s, serving-loop terms: 0 / 1, "
                            "a later fit on end-to-end rows), ",
                            "Not fitted on the kernel tables: engine overheads (fitted on "
                            "end-to-end rows: see the end of this text), ")
        path.write_text(text)
        print("wrote", path)


if __name__ == "__main__":
    main()
