"""Kernel-level accuracy of the kernel-table profiles, out of sample, on NVIDIA's measured tables.

    python benchmarks/kernel_accuracy.py [--out benchmarks/results/kernel_accuracy_<date>.md] [--jobs 2]
        [--families context_mla,generation_mla,gdn,all_reduce,all_to_all,...]

For every chip (h100-sxm, h200, b200, b300, gb200, gb300), engine (trtllm, sglang, vllm) and op
family (GEMM per dtype, prefill and decode attention, MoE balanced and skewed, the engine's
all-reduce, MLA prefill and decode, NCCL's all-to-all, Gated DeltaNet kernels) it prints the
median and p90 absolute relative error |pred/meas - 1| of kernel times:

(a) **k-fold by shape**: the shapes are split into 5 folds by group (GEMM: weight shape n x k;
    attention: heads, KV heads, head dim, window; MoE: hidden, inter, top-k, experts; MLA: query
    heads per GPU, batch; GDN: value heads, batch; all-reduce and all-to-all: message size); each
    fold is predicted by terms fitted on the other four (``fidelity.kernel_fit``, ``mla_fit``,
    ``gdn_fit``, ``comm_fit``: the same fits as the shipped profiles);
(b) **leave-one-chip-out**: each chip's rows predicted by terms fitted on the other five chips'
    tables of the same engine, transferred through the held-out chip's datasheet peak and HBM
    bandwidth (the terms are fractions, ramps and floors); the all-reduce and the all-to-all are
    not transferred (their tier differs per system);
(c) **ideal <= measured**: the share of rows where ideal mode (datasheet peak and bandwidth, no
    floors) is at or below the measurement, and the exceptions by table.

Rows pool the engines of a chip in the summary; the per-engine table follows. NCCL's all-to-all
is engine-independent and scored once per chip (in its first engine's row); MLA and GDN tables an
engine reads from another engine are scored once, in that engine's row. ``--families`` scores only
the named families (``kernel_profiles.FAMILY_NAMES`` and all_reduce, all_to_all). Nothing is tuned on
a held-out group: the fit and the model forms are fixed, and every error is of rows the fit did
not see. The folds and fits are ``fidelity.holdout_kernels``'s (``llmecon validate <kernels folder>``
runs them too); this script runs them in parallel and formats the tables. Needs
../shared/validation/aiconfigurator/kernels (not shipped).
"""

from __future__ import annotations

import argparse
import datetime
import multiprocessing as mp
import time
from pathlib import Path

import numpy as np

from llmecon.fidelity import holdout_kernels as hk
from llmecon.fidelity.holdout_kernels import LABELS
from llmecon.fidelity.kernel_tables import CHIPS, ENGINES, default_root

TABLES: dict = {}   # (chip, engine) -> hk.load_key's (tables, all-reduce, None, all-to-all); filled before forking
ONLY: set = set()   # --families: the families to score (empty: all)


def kfold_job(key):
    tables, ar, _, a2a = TABLES[key]
    system = hk.system_of(key[0])
    return key, hk.kfold(tables, ar, system, a2a), hk.ideal(tables, ar, system, a2a)


def loco_job(key):
    chip, engine = key
    others = [TABLES[(c, engine)][0] for c in CHIPS.values() if c != chip and (c, engine) in TABLES]
    return key, hk.loco(TABLES[key][0], others)


def _load(key):
    return key, hk.load_key(default_root(), *key, with_system=False, all_to_all=key[1] == ENGINES[0],
                            families=ONLY)


def _stats(pred, meas) -> tuple[int, float, float]:
    err = np.abs(pred / meas - 1.0)
    return len(err), float(np.median(err)), float(np.percentile(err, 90))


def _pct(v: float) -> str:
    return f"{100 * v:.1f}%"


def report(kfold: dict, loco: dict, ideal: dict, elapsed: float) -> str:
    chips = list(CHIPS.values())
    lines = [f"# Kernel-level accuracy of the kernel-table profiles ({datetime.date.today().isoformat()}, "
             f"{elapsed:.0f} s)", "",
             "Absolute relative error |pred/meas - 1| of kernel times in NVIDIA's measured tables "
             "(aiconfigurator @095f58a). **k-fold**: 5 folds by shape group, each predicted by terms fitted "
             "on the other four. **LOCO**: leave-one-chip-out, terms fitted on the other five chips (same "
             "engine), transferred through the held-out chip's datasheet. Engines pooled per chip (per-engine "
             "table below). Target: median <= 10% per op family.", "",
             "## Per chip and op family (engines pooled)", "",
             "| chip | op family | rows | k-fold median | k-fold p90 | LOCO median | LOCO p90 | ideal <= meas |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    for chip in chips:
        for label in LABELS:
            k = [kfold[(chip, e)][label] for e in ENGINES if (chip, e) in kfold and label in kfold[(chip, e)]]
            if not k:
                continue
            n, med, p90 = _stats(np.concatenate([p for p, _ in k]), np.concatenate([m for _, m in k]))
            lo = [loco[(chip, e)][label] for e in ENGINES if (chip, e) in loco and label in loco[(chip, e)]]
            lmed = lp90 = "—"
            if lo:
                _, a, b = _stats(np.concatenate([p for p, _ in lo]), np.concatenate([m for _, m in lo]))
                lmed, lp90 = _pct(a), _pct(b)
            i = [ideal[(chip, e)][label] for e in ENGINES if (chip, e) in ideal and label in ideal[(chip, e)]]
            share = np.mean(np.concatenate([p <= m * (1 + 1e-9) for p, m in i]))
            lines.append(f"| {chip} | {label} | {n} | {_pct(med)} | {_pct(p90)} | {lmed} | {lp90} | "
                         f"{100 * share:.2f}% |")
    lines += ["", "## Per op family, all chips and engines", "",
              "| op family | rows | k-fold median | k-fold p90 | LOCO median | LOCO p90 | ideal <= meas |",
              "|---|---:|---:|---:|---:|---:|---:|"]
    total = [0, 0]
    for label in LABELS:
        k = [v[label] for v in kfold.values() if label in v]
        lo = [v[label] for v in loco.values() if label in v]
        i = [v[label] for v in ideal.values() if label in v]
        if not k:
            continue
        n, med, p90 = _stats(np.concatenate([p for p, _ in k]), np.concatenate([m for _, m in k]))
        lm = _stats(np.concatenate([p for p, _ in lo]), np.concatenate([m for _, m in lo])) if lo else None
        ok = np.concatenate([p <= m * (1 + 1e-9) for p, m in i])
        total[0] += int(ok.sum())
        total[1] += len(ok)
        lines.append(f"| {label} | {n} | {_pct(med)} | {_pct(p90)} | {_pct(lm[1]) if lm else '—'} | "
                     f"{_pct(lm[2]) if lm else '—'} | {100 * ok.mean():.2f}% |")
    lines += ["", f"Ideal <= measured on {total[0]} of {total[1]} rows ({100 * total[0] / total[1]:.2f}%).", "",
              "## Per engine (k-fold median / p90)", "", "| chip | engine | " + " | ".join(LABELS) + " |",
              "|---|---|" + "---:|" * len(LABELS)]
    for (chip, engine), v in sorted(kfold.items(), key=lambda kv: (chips.index(kv[0][0]), kv[0][1])):
        cells = []
        for label in LABELS:
            if label in v and len(v[label][0]):
                _, med, p90 = _stats(*v[label])
                cells.append(f"{_pct(med)} / {_pct(p90)}")
            else:
                cells.append("—")
        lines.append(f"| {chip} | {engine} | " + " | ".join(cells) + " |")
    lines += ["", "## Rows where ideal mode is above the measurement (not a lower bound)", ""]
    for (chip, engine), v in sorted(ideal.items()):
        for label, (p, m) in v.items():
            bad = p > m * (1 + 1e-9)
            if bad.any():
                lines.append(f"- {chip} {engine} {label}: {int(bad.sum())} of {len(p)} rows, ideal up to "
                             f"{float(np.max(p[bad] / m[bad])):.2f}x the measured time")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", help="also write the markdown report to this file")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--families", help="comma-separated families to score (e.g. context_mla,generation_mla; "
                    "all_reduce, all_to_all for the collectives); default all")
    args = ap.parse_args()
    ONLY.update(hk.check_families([f for f in (args.families or "").split(",") if f]) or ())
    if default_root() is None:
        raise SystemExit("../shared/validation/aiconfigurator/kernels not found (the measured tables are not shipped)")
    t0 = time.perf_counter()
    keys = [(c, e) for c in CHIPS.values() for e in ENGINES]
    ctx = mp.get_context("fork")
    with ctx.Pool(args.jobs) as pool:
        TABLES.update(dict(pool.map(_load, keys)))
    with ctx.Pool(args.jobs) as pool:   # forked after TABLES is filled: workers read it
        kres = pool.map(kfold_job, keys)
        lres = pool.map(loco_job, keys)
    kfold = {k: v for k, v, _ in kres}
    ideal = {k: i for k, _, i in kres}
    loco = dict(lres)
    text = report(kfold, loco, ideal, time.perf_counter() - t0)
    print(text)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
