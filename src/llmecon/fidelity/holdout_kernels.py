"""Out-of-sample error of kernel times on NVIDIA's measured kernel tables, by held-out shape group
or chip, with the terms fitted by ``kernel_fit`` (the same fit as the shipped profiles).

For one (chip, engine) and op family (GEMM per dtype, prefill and decode attention, MoE balanced
and skewed, the engine's all-reduce, MLA prefill and decode (``mla_fit``), Gated DeltaNet kernels
(``gdn_fit``), NCCL's expert-parallel all-to-all (``comm_fit``)):

* ``kfold`` (``--holdout model``: the tables have no model column; a model brings its weight
  shapes and head layout, so those are the groups): the rows are split into ``FOLDS`` folds by
  shape group (``GROUPS``: GEMM weight shape n x k; attention heads, KV heads, head dim, window;
  MoE hidden, inter, top-k, experts; MLA query heads per GPU, batch; GDN value heads, batch;
  all-reduce and all-to-all message size), each fold predicted by terms fitted on the other folds
  (MLA and GDN: every sequence length of a held-out group unseen);
* ``loco`` (``--holdout chip``): the chip's rows predicted by terms fitted on the other chips'
  tables of the same engine, transferred through the held-out chip's datasheet peak and HBM
  bandwidth (the terms are fractions, ramps and floors); the all-reduce and the all-to-all are not
  transferred (their tier differs per system);
* ``in_sample`` (``--holdout none``): fitted and scored on the same rows (not an accuracy claim);
* ``ideal``: ideal mode (datasheet peak and bandwidth, no floors) on every modelled row, for the
  share at or below the measurement.

NCCL's all-to-all is engine-independent: ``kernel_holdout`` scores it once per chip, on the chip's
first (chip, engine) key. MLA and GDN tables an engine reads from another engine (``kernel_profiles``
``MLA_FALLBACK``, ``GDN_ENGINES``) are not scored twice: ``load_key`` drops them.

Results are {label: (pred, meas)} per (chip, engine). Moved from benchmarks/kernel_accuracy.py.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import SpecError
from ..spec.efficiency import IDEAL, LinkEfficiency
from . import comm_fit, gdn_fit, mla_fit
from . import kernel_fit as kf
from .holdout import ErrorCell, HoldoutReport, below_share, rel_error, stats

FOLDS = 5
GROUPS = {"gemm": ("n", "k"), "context_attention": ("num_heads", "num_key_value_heads", "head_dim", "window_size"),
          "generation_attention": ("num_heads", "num_key_value_heads", "head_dim", "window_size"),
          "moe": ("hidden_size", "inter_size", "topk", "num_experts"),
          "context_mla": ("num_heads", "batch_size"), "generation_mla": ("num_heads", "batch_size"),
          "gdn": ("num_v_heads", "batch_size")}
LABELS = ("gemm bf16", "gemm fp8", "gemm fp8_block", "gemm nvfp4", "prefill attention", "decode attention",
          "moe balanced", "moe skewed", "all-reduce", "mla prefill", "mla decode", "all-to-all",
          *(f"gdn {k}" for k in gdn_fit.KERNELS))
"""The quantities (op families) reported, in order."""
COLLECTIVES = ("all_reduce", "all_to_all")
"""The collective families ``load_key`` reads beside the tables' (``kernel_profiles.FAMILY_NAMES``)."""
MLA_FAMILIES = {"context_mla": ("mla prefill", "mla_prefill", mla_fit.fit_mla_prefill, mla_fit.predict_mla_prefill),
                "generation_mla": ("mla decode", "mla_decode", mla_fit.fit_mla_decode, mla_fit.predict_mla_decode)}
"""MLA attention families (``mla_fit``): label, profile table, fit, predict."""


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


def predict_mla_family(family: str, train: dict, test: dict) -> dict:
    """{label: (pred, meas)} of MLA ``test`` rows by per-KV-dtype terms fitted on ``train``."""
    label, table, fit, predict = MLA_FAMILIES[family]
    preds, meas = [], []
    for dt in np.unique(test["dtype"]):
        terms = fit(train, str(dt))
        if terms is None:
            continue
        sel = test["dtype"] == dt
        preds.append(predict(kf._with(**{table: ((str(dt), terms),)}), sub(test, sel)))
        meas.append(test["time_s"][sel])
    return {label: (np.concatenate(preds), np.concatenate(meas))} if preds else {}


def predict_gdn_family(train: dict, test: dict) -> dict:
    """{"gdn <kernel>": (pred, meas)} of Gated DeltaNet ``test`` rows by per-kernel terms fitted on
    ``train`` (``gdn_fit``)."""
    out = {}
    for kernel in gdn_fit.KERNELS:
        sel = test["kernel"] == kernel
        terms = gdn_fit.fit_gdn_kernel(train, kernel) if sel.any() else None
        if terms is not None:
            out[f"gdn {kernel}"] = (gdn_fit.predict_gdn(kf._with(gdn=((kernel, terms),)), sub(test, sel)),
                                    test["time_s"][sel])
    return out


def predict_family(family: str, train: dict, test: dict) -> dict:
    """{label: (pred, meas)} of ``test`` rows by terms fitted on ``train`` alone; labels split GEMM
    by dtype, MoE into balanced / skewed and GDN by kernel."""
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
    if family in MLA_FAMILIES:
        label, _, _, predict = MLA_FAMILIES[family]
        return {label: (predict(IDEAL, cols), cols["time_s"])}
    if family == "gdn":
        pred = gdn_fit.predict_gdn(IDEAL, cols)
        return {f"gdn {k}": (pred[cols["kernel"] == k], cols["time_s"][cols["kernel"] == k])
                for k in gdn_fit.KERNELS if np.any(cols["kernel"] == k)}
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


def _rows(rows, mask):
    return kf.CollectiveRows(message_bytes=rows.message_bytes[mask], participants=rows.participants[mask],
                             time_s=rows.time_s[mask])


def _collective_models(system) -> dict:
    """{label: (fit(rows) -> link or None, predict(link, rows), ideal predict(rows))} on ``system``'s
    scale-up tier: the engine's all-reduce (``kernel_fit``) and NCCL's all-to-all (``comm_fit``)."""
    return {"all-reduce": (lambda r: kf.fit_all_reduce(system, r),
                           lambda link, r: kf.predict_all_reduce(kf._with(scale_up=link), system, r),
                           lambda r: kf.predict_all_reduce(IDEAL, system, r)),
            "all-to-all": (lambda r: comm_fit.fit_all_to_all(system, r),
                           lambda link, r: comm_fit.predict_all_to_all(link, system, r),
                           lambda r: comm_fit.predict_all_to_all(LinkEfficiency(), system, r))}  # ideal link


def _collectives(ar, a2a, system):
    """(label, rows, models) of the collective rows given (none without a ``system``)."""
    if system is None:
        return []
    models = _collective_models(system)
    return [(label, rows, models[label]) for label, rows in (("all-reduce", ar), ("all-to-all", a2a))
            if rows is not None]


def kfold(tables: dict, ar=None, system=None, a2a=None) -> dict:
    """{label: (pred, meas)}: each shape-group fold of ``tables`` ({family: columns}) and each
    message-size fold of the all-reduce rows ``ar`` and all-to-all rows ``a2a`` (on ``system``'s
    scale-up tier) predicted from the other folds."""
    acc: dict = {}
    for family, cols in tables.items():
        cols = family_rows(family, cols)
        fold = fold_ids(cols, family)
        for f in range(FOLDS):
            merge(acc, predict_family(family, sub(cols, fold != f), sub(cols, fold == f)))
    for label, rows, (fit, predict, _) in _collectives(ar, a2a, system):
        sizes = np.unique(rows.message_bytes)
        perm = np.random.default_rng(0).permutation(len(sizes))
        fold = (perm % FOLDS)[np.searchsorted(sizes, rows.message_bytes)]
        for f in range(FOLDS):
            tr, te = _rows(rows, fold != f), _rows(rows, fold == f)
            link = fit(tr)
            if link is not None and len(te.time_s):
                merge(acc, {label: (predict(link, te), te.time_s)})
    return cat(acc)


def in_sample(tables: dict, ar=None, system=None, a2a=None) -> dict:
    """{label: (pred, meas)} fitted and scored on the same rows (not an accuracy claim)."""
    acc: dict = {}
    for family, cols in tables.items():
        cols = family_rows(family, cols)
        merge(acc, predict_family(family, cols, cols))
    for label, rows, (fit, predict, _) in _collectives(ar, a2a, system):
        link = fit(rows)
        if link is not None:
            merge(acc, {label: (predict(link, rows), rows.time_s)})
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


def ideal(tables: dict, ar=None, system=None, a2a=None) -> dict:
    """{label: (ideal prediction, meas)} of every modelled row."""
    acc: dict = {}
    for family, cols in tables.items():
        merge(acc, ideal_family(family, family_rows(family, cols)))
    for label, rows, (_, _, predict) in _collectives(ar, a2a, system):
        merge(acc, {label: (predict(rows), rows.time_s)})
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
    (tables, all-reduce rows or None, system or None, all-to-all rows or None); ``every`` the keys a
    leave-one-chip-out fit may train on (default ``keys``). ``holdout``: "model" (k-fold by shape
    group), "chip" or "none". The all-to-all (engine-independent) is scored on each chip's first key."""
    held, ideals, notes = {}, {}, []
    every = list(keys if every is None else every)
    carriers = {chip: (chip, engine) for chip, engine in reversed(list(keys))}.values()
    cache: dict = {}

    def get(key):  # leave-one-chip-out reuses every table; the other schemes read each once
        if holdout != "chip":
            return load(*key)
        if key not in cache:
            cache[key] = load(*key)
        return cache[key]

    for n, key in enumerate(keys):
        tables, ar, system, a2a = get(key)
        a2a = a2a if key in carriers else None
        if holdout == "model":
            held[key] = kfold(tables, ar, system, a2a)
        elif holdout == "none":
            held[key] = in_sample(tables, ar, system, a2a)
        else:
            others = [get(k)[0] for k in every if k[1] == key[1] and k[0] != key[0]]
            held[key] = loco(tables, others) if others else {}
            if not others:
                notes.append(f"{key[0]}/{key[1]}: no other chip with {key[1]} tables: not predicted")
        ideals[key] = ideal(tables, ar, system, a2a)
        if progress is not None:
            progress(n + 1, len(keys), f"{key[0]}/{key[1]}")
    if holdout == "chip":
        notes.append("all-reduce and all-to-all are not transferred between chips (their tier differs per system)")
    return KernelHoldout(holdout=holdout, held=held, ideal=ideals, notes=tuple(notes))


def system_of(chip: str):
    """The catalogue system whose scale-up tier the chip's one-node all-reduce tables measure (None:
    none catalogued: ``kernel_profiles.SYSTEMS``)."""
    from ..catalog.hardware import get_system
    from .kernel_profiles import SYSTEMS

    return get_system(SYSTEMS[chip]) if SYSTEMS.get(chip) else None


def check_families(families) -> frozenset | None:
    """``families`` (names of ``kernel_profiles.FAMILY_NAMES`` and ``COLLECTIVES``; None or empty:
    all) as a set, or a SpecError naming the unknown one."""
    from .kernel_profiles import FAMILY_NAMES

    if not families:
        return None
    known = (*FAMILY_NAMES, *COLLECTIVES)
    for f in families:
        if f not in known:
            raise SpecError("unknown kernel family", field="families", value=f, fix=f"pick from {', '.join(known)}")
    return frozenset(families)


def load_key(root, chip: str, engine: str, *, with_system: bool = True, all_to_all: bool = True, families=None):
    """(tables, all-reduce rows or None, system or None, all-to-all rows or None) of one catalogue
    chip and engine, as the shipped profiles were fitted (``kernel_profiles.load_tables``,
    ``load_all_reduce``, ``comm_fit.load_all_to_all``; collectives only where the chip has a
    catalogued system). An MLA or GDN table read from another engine's folder is dropped (it is that
    engine's, scored there). ``families`` (``check_families``) keeps only those; without
    ``all_to_all`` or ``with_system`` those are left None (a system does not pickle: a worker process
    looks it up)."""
    from .kernel_profiles import FOLDERS, SYSTEMS, load_all_reduce, load_tables

    only = check_families(families)
    tables, used = load_tables(root, chip, engine)
    tables = {f: c for f, c in tables.items() if (only is None or f in only)
              and (f not in (*MLA_FAMILIES, "gdn") or used[f].startswith(f"{engine} "))}
    system = SYSTEMS.get(chip)
    ar = load_all_reduce(root, chip, engine)[0] if system and (only is None or "all_reduce" in only) else None
    a2a = (comm_fit.load_all_to_all(root, FOLDERS[chip])[0]
           if system and all_to_all and (only is None or "all_to_all" in only) else None)
    return tables, ar, system_of(chip) if with_system else None, a2a
