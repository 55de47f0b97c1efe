"""Kernel-level accuracy of the kernel-table profiles, out of sample, on NVIDIA's measured tables.

    python benchmarks/kernel_accuracy.py [--out benchmarks/results/kernel_accuracy_<date>.md] [--jobs 2]

For every chip (h100-sxm, h200, b200, b300, gb200, gb300), engine (trtllm, sglang, vllm) and op
family (GEMM per dtype, prefill and decode attention, MoE balanced and skewed, the engine's
all-reduce, MLA prefill and decode, NCCL's all-to-all, Gated DeltaNet kernels) it prints the
median and p90 absolute relative error |pred/meas - 1| of kernel times:

(a) **k-fold by shape**: the shapes are split into 5 folds by group (GEMM: weight shape n x k;
    attention: heads, KV heads, head dim, window; MoE: hidden, inter, top-k, experts; all-reduce:
    message size; MLA: query heads per GPU, batch; all-to-all: message size; GDN: value heads,
    batch); each fold is
    predicted by terms fitted on the other four (``fidelity.kernel_fit``, ``mla_fit``,
    ``comm_fit``, ``gdn_fit``: the same fits as the shipped profiles);
(b) **leave-one-chip-out**: each chip's rows predicted by terms fitted on the other five chips'
    tables of the same engine, transferred through the held-out chip's datasheet peak and HBM
    bandwidth (the terms are fractions, ramps and floors); the all-reduce and the
    all-to-all are not transferred (their tier differs per system);
(c) **ideal <= measured**: the share of rows where ideal mode (datasheet peak and bandwidth, no
    floors) is at or below the measurement, and the exceptions by table.

Rows pool the engines of a chip in the summary; the per-engine table follows. Nothing is tuned on
a held-out group: the fit and the model forms are fixed, and every error is of rows the fit did
not see. Needs ../shared/validation/aiconfigurator/kernels (not shipped).
"""

from __future__ import annotations

import argparse
import datetime
import multiprocessing as mp
import time
from pathlib import Path

import numpy as np

from llmecon.catalog.hardware import get_system
from llmecon.fidelity import kernel_fit as kf
from llmecon.fidelity import comm_fit, gdn_fit, mla_fit
from llmecon.fidelity.kernel_profiles import SYSTEMS, load_all_reduce, load_tables
from llmecon.fidelity.kernel_tables import CHIPS, ENGINES, default_root
from llmecon.spec.efficiency import IDEAL, LinkEfficiency

FOLDS = 5
GROUPS = {"gemm": ("n", "k"), "context_attention": ("num_heads", "num_key_value_heads", "head_dim", "window_size"),
          "generation_attention": ("num_heads", "num_key_value_heads", "head_dim", "window_size"),
          "moe": ("hidden_size", "inter_size", "topk", "num_experts"),
          "context_mla": ("num_heads", "batch_size"), "generation_mla": ("num_heads", "batch_size"),
          "gdn": ("num_v_heads", "batch_size")}
TABLES: dict = {}   # (chip, engine) -> (tables, all_reduce rows); filled before forking workers
ONLY: set = set()   # --families: the table families to score (empty: all, the all-reduce included)


def _folds(cols: dict, family: str, seed: int = 0) -> np.ndarray:
    keys = np.rec.fromarrays([cols[c] for c in GROUPS[family]])
    uniq, inv = np.unique(keys, return_inverse=True)
    perm = np.random.default_rng(seed).permutation(len(uniq))
    return (perm % FOLDS)[inv.ravel()]


def _sub(cols: dict, mask) -> dict:
    return {k: v[mask] for k, v in cols.items()}


def _family_rows(family: str, cols: dict) -> dict:
    """The rows of a family that are modelled (prefill: bf16 attention)."""
    if family == "context_attention":
        return _sub(cols, cols["attn_dtype"] == "bfloat16")
    return cols


MLA_FAMILIES = {"context_mla": ("mla prefill", "mla_prefill", mla_fit.fit_mla_prefill, mla_fit.predict_mla_prefill),
                "generation_mla": ("mla decode", "mla_decode", mla_fit.fit_mla_decode, mla_fit.predict_mla_decode)}
"""MLA attention families (``fidelity.mla_fit``): label, profile table, fit, predict. Folds by
shape group (query heads per GPU, batch): every sequence length of a held-out group is unseen."""


def predict_mla_family(family: str, train: dict, test: dict) -> dict:
    """{label: (pred, meas)} of MLA ``test`` rows by per-KV-dtype terms fitted on ``train``."""
    label, table, fit, predict = MLA_FAMILIES[family]
    preds, meas = [], []
    for dt in np.unique(test["dtype"]):
        terms = fit(train, str(dt))
        if terms is None:
            continue
        sel = test["dtype"] == dt
        preds.append(predict(kf._with(**{table: ((str(dt), terms),)}), _sub(test, sel)))
        meas.append(test["time_s"][sel])
    return {label: (np.concatenate(preds), np.concatenate(meas))} if preds else {}


def ideal_mla_family(family: str, cols: dict) -> dict:
    """{label: (ideal prediction, meas)} of every MLA row."""
    label, _, _, predict = MLA_FAMILIES[family]
    return {label: (predict(IDEAL, cols), cols["time_s"])}


def predict_gdn_family(train: dict, test: dict) -> dict:
    """{"gdn <kernel>": (pred, meas)} of Gated DeltaNet ``test`` rows by per-kernel terms fitted on
    ``train`` (``fidelity.gdn_fit``); folds by (value heads, batch)."""
    out = {}
    for kernel in gdn_fit.KERNELS:
        sel = test["kernel"] == kernel
        terms = gdn_fit.fit_gdn_kernel(train, kernel) if sel.any() else None
        if terms is not None:
            out[f"gdn {kernel}"] = (gdn_fit.predict_gdn(kf._with(gdn=((kernel, terms),)), _sub(test, sel)),
                                    test["time_s"][sel])
    return out


def ideal_gdn_family(cols: dict) -> dict:
    pred = gdn_fit.predict_gdn(IDEAL, cols)
    return {f"gdn {k}": (pred[cols["kernel"] == k], cols["time_s"][cols["kernel"] == k]) for k in gdn_fit.KERNELS
            if np.any(cols["kernel"] == k)}


def predict_family(family: str, train: dict, test: dict) -> dict:
    """{label: (pred, meas)} of ``test`` rows by terms fitted on ``train``; labels split GEMM by dtype
    and MoE into balanced / skewed."""
    if family in MLA_FAMILIES:
        return predict_mla_family(family, train, test)
    if family == "gdn":
        return predict_gdn_family(train, test)
    out = {}
    if family == "gemm":
        for dt in np.unique(test["dtype"]):
            terms = kf.fit_gemm(train, str(dt))
            if terms is None:
                continue
            sel = test["dtype"] == dt
            pred = kf.predict_gemm(kf._with(gemm=((str(dt), terms),)), _sub(test, sel))
            out[f"gemm {dt}"] = (pred, test["time_s"][sel])
    elif family == "context_attention":
        kw = kf.fit_attention(train, {})
        if kw:
            out["prefill attention"] = (kf.predict_prefill(kf._with(**kw), test), test["time_s"])
    elif family == "generation_attention":
        kw = kf.fit_attention({}, train)
        if kw:
            out["decode attention"] = (kf.predict_decode(kf._with(**kw), test), test["time_s"])
    elif family == "moe":
        for dt in np.unique(test["dtype"]):
            got = kf.fit_moe(train, str(dt))
            if got is None:
                continue
            prof = kf._with(moe=((str(dt), got[0]),), moe_skew=tuple((d, c, w) for d, (c, w) in got[1].items()))
            sel = test["dtype"] == dt
            pred = kf.predict_moe(prof, _sub(test, sel))
            bal = test["distribution"][sel] == "balanced"
            out.setdefault("moe balanced", []).append((pred[bal], test["time_s"][sel][bal]))
            out.setdefault("moe skewed", []).append((pred[~bal], test["time_s"][sel][~bal]))
        out = {k: (np.concatenate([p for p, _ in v]), np.concatenate([m for _, m in v])) for k, v in out.items()}
    return out


def ideal_family(family: str, cols: dict) -> dict:
    """{label: (ideal prediction, meas)} of every modelled row."""
    if family in MLA_FAMILIES:
        return ideal_mla_family(family, cols)
    if family == "gdn":
        return ideal_gdn_family(cols)
    if family == "gemm":
        return {f"gemm {dt}": (kf.predict_gemm(IDEAL, _sub(cols, cols["dtype"] == dt)),
                               cols["time_s"][cols["dtype"] == dt]) for dt in np.unique(cols["dtype"])}
    if family == "context_attention":
        return {"prefill attention": (kf.predict_prefill(IDEAL, cols), cols["time_s"])}
    if family == "generation_attention":
        return {"decode attention": (kf.predict_decode(IDEAL, cols), cols["time_s"])}
    pred = kf.predict_moe(IDEAL, cols)
    bal = cols["distribution"] == "balanced"
    return {"moe balanced": (pred[bal], cols["time_s"][bal]), "moe skewed": (pred[~bal], cols["time_s"][~bal])}


def _merge(acc: dict, part: dict) -> None:
    for k, (p, m) in part.items():
        acc.setdefault(k, []).append((p, m))


def _cat(acc: dict) -> dict:
    return {k: (np.concatenate([p for p, _ in v]), np.concatenate([m for _, m in v])) for k, v in acc.items()}


def all_to_all_part(chip: str) -> tuple[dict, dict]:
    """({"all-to-all": (pred, meas)} k-fold by message size, the same for ideal) of the chip's
    NCCL bf16 one-node all-to-all (``fidelity.comm_fit``; engine-independent, scored once per
    chip); empty where the chip has no catalogued system or no table."""
    if not SYSTEMS.get(chip) or (ONLY and "all_to_all" not in ONLY):
        return {}, {}
    rows, _ = comm_fit.load_all_to_all(default_root(), {v: k for k, v in CHIPS.items()}[chip])
    if rows is None:
        return {}, {}
    system = get_system(SYSTEMS[chip])
    sizes = np.unique(rows.message_bytes)
    fold = (np.random.default_rng(0).permutation(len(sizes)) % FOLDS)[np.searchsorted(sizes, rows.message_bytes)]
    acc: dict = {}
    for f in range(FOLDS):
        tr, te = (kf.CollectiveRows(message_bytes=rows.message_bytes[s], participants=rows.participants[s],
                                    time_s=rows.time_s[s]) for s in (fold != f, fold == f))
        link = comm_fit.fit_all_to_all(system, tr)
        if link is not None and len(te.time_s):
            _merge(acc, {"all-to-all": (comm_fit.predict_all_to_all(link, system, te), te.time_s)})
    ideal = {"all-to-all": (comm_fit.predict_all_to_all(LinkEfficiency(), system, rows), rows.time_s)}
    return _cat(acc), ideal


def kfold_job(key):
    chip, engine = key
    tables, ar = TABLES[key]
    acc: dict = {}
    for family, cols in tables.items():
        cols = _family_rows(family, cols)
        fold = _folds(cols, family)
        for f in range(FOLDS):
            _merge(acc, predict_family(family, _sub(cols, fold != f), _sub(cols, fold == f)))
    system = get_system(SYSTEMS[chip]) if SYSTEMS.get(chip) else None
    if ar is not None and system is not None:
        sizes = np.unique(ar.message_bytes)
        perm = np.random.default_rng(0).permutation(len(sizes))
        fold = (perm % FOLDS)[np.searchsorted(sizes, ar.message_bytes)]
        for f in range(FOLDS):
            tr, te = (kf.CollectiveRows(message_bytes=ar.message_bytes[s], participants=ar.participants[s],
                                        time_s=ar.time_s[s]) for s in (fold != f, fold == f))
            link = kf.fit_all_reduce(system, tr)
            if link is not None and len(te.time_s):
                _merge(acc, {"all-reduce": (kf.predict_all_reduce(kf._with(scale_up=link), system, te), te.time_s)})
    ideal: dict = {}
    for family, cols in tables.items():
        _merge(ideal, ideal_family(family, _family_rows(family, cols)))
    if ar is not None and system is not None:
        _merge(ideal, {"all-reduce": (kf.predict_all_reduce(IDEAL, system, ar), ar.time_s)})
    acc, ideal = _cat(acc), _cat(ideal)
    if engine == ENGINES[0]:
        a2a, a2a_ideal = all_to_all_part(chip)
        acc.update(a2a)
        ideal.update(a2a_ideal)
    return key, acc, ideal


def loco_job(key):
    chip, engine = key
    tables, _ = TABLES[key]
    acc: dict = {}
    others = [TABLES[(c, engine)][0] for c in CHIPS.values() if c != chip and (c, engine) in TABLES]
    pooled = {}
    for family in tables:
        parts = [o[family] for o in others if family in o]
        if parts:
            common = set.intersection(*(set(p) for p in parts))
            pooled[family] = {k: np.concatenate([p[k] for p in parts]) for k in common}
    for family, cols in tables.items():
        if family in pooled:
            _merge(acc, predict_family(family, _family_rows(family, pooled[family]), _family_rows(family, cols)))
    return key, _cat(acc)


def _load(key):
    chip, engine = key
    root = default_root()
    tables, used = load_tables(root, chip, engine)
    for family in (*MLA_FAMILIES, "gdn"):  # an engine reading another engine's table is not scored twice
        if family in tables and not used[family].startswith(f"{engine} "):
            del tables[family]
    ar = load_all_reduce(root, chip, engine)[0] if SYSTEMS.get(chip) else None
    if ONLY:
        tables = {f: c for f, c in tables.items() if f in ONLY}
        ar = ar if "all_reduce" in ONLY else None
    return key, (tables, ar)


def _stats(pred, meas) -> tuple[int, float, float]:
    err = np.abs(pred / meas - 1.0)
    return len(err), float(np.median(err)), float(np.percentile(err, 90))


def _pct(v: float) -> str:
    return f"{100 * v:.1f}%"


LABELS = ("gemm bf16", "gemm fp8", "gemm fp8_block", "gemm nvfp4", "prefill attention", "decode attention",
          "moe balanced", "moe skewed", "all-reduce", "mla prefill", "mla decode", "all-to-all",
          "gdn chunk", "gdn recurrent", "gdn conv", "gdn conv_update")


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
    ONLY.update(f for f in (args.families or "").split(",") if f)
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
