"""Out-of-sample error of kernel times on NVIDIA's measured kernel tables, by held-out shape group
or chip, with the terms fitted by ``kernel_fit`` (the same fit as the shipped profiles).

For one (chip, engine) and op family (GEMM per dtype, prefill and decode attention, MoE balanced
and skewed, the engine's all-reduce):

* ``kfold`` (``--holdout model``: the tables have no model column; a model brings its weight
  shapes and head layout, so those are the groups): the rows are split into ``FOLDS`` folds by
  shape group (``GROUPS``: GEMM weight shape n x k; attention heads, KV heads, head dim, window;
  MoE hidden, inter, top-k, experts; all-reduce message size), each fold predicted by terms
  fitted on the other folds;
* ``loco`` (``--holdout chip``): the chip's rows predicted by terms fitted on the other chips'
  tables of the same engine, transferred through the held-out chip's datasheet peak and HBM
  bandwidth (the terms are fractions, ramps and floors); the all-reduce is not transferred (its
  tier differs per system);
* ``in_sample`` (``--holdout none``): fitted and scored on the same rows (not an accuracy claim);
* ``ideal``: ideal mode (datasheet peak and bandwidth, no floors) on every modelled row, for the
  share at or below the measurement.

Results are {label: (pred, meas)} per (chip, engine). Moved from benchmarks/kernel_accuracy.py.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..spec.efficiency import IDEAL
from . import kernel_fit as kf
from .holdout import ErrorCell, HoldoutReport, below_share, rel_error, stats

FOLDS = 5
GROUPS = {"gemm": ("n", "k"), "context_attention": ("num_heads", "num_key_value_heads", "head_dim", "window_size"),
          "generation_attention": ("num_heads", "num_key_value_heads", "head_dim", "window_size"),
          "moe": ("hidden_size", "inter_size", "topk", "num_experts")}
LABELS = ("gemm bf16", "gemm fp8", "gemm fp8_block", "gemm nvfp4", "prefill attention", "decode attention",
          "moe balanced", "moe skewed", "all-reduce")
"""The quantities (op families) reported, in order."""


def fold_ids(cols: dict, family: str, seed: int = 0) -> np.ndarray:
    """Fold number of each row: its shape group's, the groups dealt at random (fixed seed)."""
    keys = np.rec.fromarrays([cols[c] for c in GROUPS[family]])
    uniq, inv = np.unique(keys, return_inverse=True)
    perm = np.random.default_rng(seed).permutation(len(uniq))
    return (perm % FOLDS)[inv.ravel()]


def sub(cols: dict, mask) -> dict:
    return {k: v[mask] for k, v in cols.items()}


def family_rows(family: str, cols: dict) -> dict:
    """The rows of a family that are modelled (prefill: bf16 attention)."""
    if family == "context_attention":
        return sub(cols, cols["attn_dtype"] == "bfloat16")
    return cols


def predict_family(family: str, train: dict, test: dict) -> dict:
    """{label: (pred, meas)} of ``test`` rows by terms fitted on ``train`` alone; labels split GEMM
    by dtype and MoE into balanced / skewed."""
    out = {}
    if family == "gemm":
        for dt in np.unique(test["dtype"]):
            terms = kf.fit_gemm(train, str(dt))
            if terms is None:
                continue
            sel = test["dtype"] == dt
            pred = kf.predict_gemm(kf._with(gemm=((str(dt), terms),)), sub(test, sel))
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
            pred = kf.predict_moe(prof, sub(test, sel))
            bal = test["distribution"][sel] == "balanced"
            out.setdefault("moe balanced", []).append((pred[bal], test["time_s"][sel][bal]))
            out.setdefault("moe skewed", []).append((pred[~bal], test["time_s"][sel][~bal]))
        out = {k: (np.concatenate([p for p, _ in v]), np.concatenate([m for _, m in v])) for k, v in out.items()}
    return out


def ideal_family(family: str, cols: dict) -> dict:
    """{label: (ideal prediction, meas)} of every modelled row."""
    if family == "gemm":
        return {f"gemm {dt}": (kf.predict_gemm(IDEAL, sub(cols, cols["dtype"] == dt)),
                               cols["time_s"][cols["dtype"] == dt]) for dt in np.unique(cols["dtype"])}
    if family == "context_attention":
        return {"prefill attention": (kf.predict_prefill(IDEAL, cols), cols["time_s"])}
    if family == "generation_attention":
        return {"decode attention": (kf.predict_decode(IDEAL, cols), cols["time_s"])}
    pred = kf.predict_moe(IDEAL, cols)
    bal = cols["distribution"] == "balanced"
    return {"moe balanced": (pred[bal], cols["time_s"][bal]), "moe skewed": (pred[~bal], cols["time_s"][~bal])}


def merge(acc: dict, part: dict) -> None:
    for k, (p, m) in part.items():
        acc.setdefault(k, []).append((p, m))


def cat(acc: dict) -> dict:
    return {k: (np.concatenate([p for p, _ in v]), np.concatenate([m for _, m in v])) for k, v in acc.items()}


def _ar_split(ar, mask):
    return kf.CollectiveRows(message_bytes=ar.message_bytes[mask], participants=ar.participants[mask],
                             time_s=ar.time_s[mask])


def kfold(tables: dict, ar=None, system=None) -> dict:
    """{label: (pred, meas)}: each shape-group fold of ``tables`` ({family: columns}) and of the
    all-reduce rows ``ar`` (on ``system``'s scale-up tier) predicted from the other folds."""
    acc: dict = {}
    for family, cols in tables.items():
        cols = family_rows(family, cols)
        fold = fold_ids(cols, family)
        for f in range(FOLDS):
            merge(acc, predict_family(family, sub(cols, fold != f), sub(cols, fold == f)))
    if ar is not None and system is not None:
        sizes = np.unique(ar.message_bytes)
        perm = np.random.default_rng(0).permutation(len(sizes))
        fold = (perm % FOLDS)[np.searchsorted(sizes, ar.message_bytes)]
        for f in range(FOLDS):
            tr, te = _ar_split(ar, fold != f), _ar_split(ar, fold == f)
            link = kf.fit_all_reduce(system, tr)
            if link is not None and len(te.time_s):
                merge(acc, {"all-reduce": (kf.predict_all_reduce(kf._with(scale_up=link), system, te), te.time_s)})
    return cat(acc)


def in_sample(tables: dict, ar=None, system=None) -> dict:
    """{label: (pred, meas)} fitted and scored on the same rows (not an accuracy claim)."""
    acc: dict = {}
    for family, cols in tables.items():
        cols = family_rows(family, cols)
        merge(acc, predict_family(family, cols, cols))
    if ar is not None and system is not None:
        link = kf.fit_all_reduce(system, ar)
        if link is not None:
            merge(acc, {"all-reduce": (kf.predict_all_reduce(kf._with(scale_up=link), system, ar), ar.time_s)})
    return cat(acc)


def pool_tables(others: list[dict]) -> dict:
    """{family: columns} of several chips' tables concatenated (the columns they share)."""
    pooled = {}
    for family in {f for o in others for f in o}:
        parts = [o[family] for o in others if family in o]
        common = set.intersection(*(set(p) for p in parts))
        pooled[family] = {k: np.concatenate([p[k] for p in parts]) for k in common}
    return pooled


def loco(tables: dict, others: list[dict]) -> dict:
    """{label: (pred, meas)}: one chip's ``tables`` predicted by terms fitted on ``others`` (the
    other chips' tables of the same engine; the held-out chip is never among them)."""
    acc: dict = {}
    pooled = pool_tables(others)
    for family, cols in tables.items():
        if family in pooled:
            merge(acc, predict_family(family, family_rows(family, pooled[family]), family_rows(family, cols)))
    return cat(acc)


def ideal(tables: dict, ar=None, system=None) -> dict:
    """{label: (ideal prediction, meas)} of every modelled row."""
    acc: dict = {}
    for family, cols in tables.items():
        merge(acc, ideal_family(family, family_rows(family, cols)))
    if ar is not None and system is not None:
        merge(acc, {"all-reduce": (kf.predict_all_reduce(IDEAL, system, ar), ar.time_s)})
    return cat(acc)


def cell(quantity: str, by: str, group: str, pairs: list, ideal_pairs: list) -> ErrorCell | None:
    """An ``ErrorCell`` from lists of (pred, meas) arrays; None when there are no rows."""
    if not pairs and not ideal_pairs:
        return None
    pred = np.concatenate([p for p, _ in pairs]) if pairs else np.zeros(0)
    meas = np.concatenate([m for _, m in pairs]) if pairs else np.zeros(0)
    k, med, p90 = stats(rel_error(pred, meas))
    ki, share = (below_share(np.concatenate([p for p, _ in ideal_pairs]), np.concatenate([m for _, m in ideal_pairs]))
                 if ideal_pairs else (0, float("nan")))
    rows = max(len(meas), sum(len(m) for _, m in ideal_pairs))
    return ErrorCell(quantity=quantity, by=by, group=group, rows=rows, predicted=k, median=med, p90=p90,
                     ideal_rows=ki, ideal_below=share)


@dataclass(frozen=True, kw_only=True)
class KernelHoldout:
    """Held-out and ideal {label: (pred, meas)} per (chip, engine)."""

    holdout: str
    held: dict
    ideal: dict
    notes: tuple[str, ...] = ()

    def report(self) -> HoldoutReport:
        keys = sorted(set(self.held) | set(self.ideal))
        out = []
        groupings = [("all", lambda k: "all"), ("chip", lambda k: k[0]), ("engine", lambda k: k[1]),
                     ("chip/engine", lambda k: f"{k[0]}/{k[1]}")]
        for label in LABELS:
            for by, key_of in groupings:
                for group in sorted({key_of(k) for k in keys}):
                    mine = [k for k in keys if key_of(k) == group]
                    c = cell(label, by, group, [self.held[k][label] for k in mine if label in self.held.get(k, {})],
                             [self.ideal[k][label] for k in mine if label in self.ideal.get(k, {})])
                    if c is not None:
                        out.append(c)
        rows = sum(len(m) for v in self.ideal.values() for _, m in v.values())
        return HoldoutReport(source="kernels", holdout=self.holdout, rows=rows, cells=tuple(out), notes=self.notes)


def kernel_holdout(load, keys, holdout: str = "model", *, every=None, progress=None) -> KernelHoldout:
    """Held-out kernel errors of the (chip, engine) ``keys``: ``load(chip, engine)`` gives
    (tables, all-reduce rows or None, system or None); ``every`` the keys a leave-one-chip-out fit
    may train on (default ``keys``). ``holdout``: "model" (k-fold by shape group), "chip" or "none"."""
    held, ideals, notes = {}, {}, []
    every = list(keys if every is None else every)
    cache: dict = {}

    def get(key):  # leave-one-chip-out reuses every table; the other schemes read each once
        if holdout != "chip":
            return load(*key)
        if key not in cache:
            cache[key] = load(*key)
        return cache[key]

    for n, key in enumerate(keys):
        tables, ar, system = get(key)
        if holdout == "model":
            held[key] = kfold(tables, ar, system)
        elif holdout == "none":
            held[key] = in_sample(tables, ar, system)
        else:
            others = [get(k)[0] for k in every if k[1] == key[1] and k[0] != key[0]]
            held[key] = loco(tables, others) if others else {}
            if not others:
                notes.append(f"{key[0]}/{key[1]}: no other chip with {key[1]} tables: not predicted")
        ideals[key] = ideal(tables, ar, system)
        if progress is not None:
            progress(n + 1, len(keys), f"{key[0]}/{key[1]}")
    if holdout == "chip":
        notes.append("all-reduce is not transferred between chips (its tier differs per system)")
    return KernelHoldout(holdout=holdout, held=held, ideal=ideals, notes=tuple(notes))


def system_of(chip: str):
    """The catalogue system whose scale-up tier the chip's one-node all-reduce tables measure (None:
    none catalogued: ``kernel_profiles.SYSTEMS``)."""
    from ..catalog.hardware import get_system
    from .kernel_profiles import SYSTEMS

    return get_system(SYSTEMS[chip]) if SYSTEMS.get(chip) else None


def load_key(root, chip: str, engine: str, *, with_system: bool = True):
    """(tables, all-reduce rows or None, system or None) of one catalogue chip and engine, as the
    shipped profiles were fitted (``kernel_profiles.load_tables`` / ``load_all_reduce``); without
    ``with_system`` the system is left None (it does not pickle: a worker process looks it up)."""
    from .kernel_profiles import SYSTEMS, load_all_reduce, load_tables

    tables, _ = load_tables(root, chip, engine)
    ar = load_all_reduce(root, chip, engine)[0] if SYSTEMS.get(chip) else None
    return tables, ar, system_of(chip) if with_system else None
