"""Leave-one-model-out and leave-one-chip-out error of end-to-end serving (TPOT, TTFT) on NVIDIA's
measured silicon rows (``silicon.read_silicon``), with engine terms fitted by ``engine_fit``.

Folds (``holdout.Fold``), each fitted by ``fit_fold`` (two passes: ``engine_fit.fit_terms`` on the
kernel-only linearisation, then re-linearised at the first-pass terms on the training rows only):

* ``model_folds``: per (chip, engine) profile, each model group (``group_of``: DeepSeek-R1, -V3
  and -V3.1, one architecture, are one group) predicted by terms fitted on the profile's other
  models; where the profile has fewer than ``MIN_TRAIN`` priced rows of other models, the terms
  are fitted on the same engine's rows of the other chips, the held-out model excluded everywhere
  (a note says so). A profile with too few priced rows of its own is not fitted (noted).
* ``chip_folds``: per profile, its rows predicted by terms fitted on the same engine's rows of
  every other chip (all models), through the held-out chip's own kernel-table profile.
* ``pooled_model_folds``: one set of terms per engine over every chip, each model group held
  out (a comparison for the benchmark, not shipped).
* ``in_sample``: terms fitted on every row of a profile (the shipped ones): not an accuracy claim.

Engine-shared terms (``SHARED``: ``ttft_prefill_factor``, ``request_overhead_s``): in a fold fitted on
its own chip's rows (and in ``in_sample``) these are first fitted on the same engine's priced rows of
every chip (the held-out group excluded everywhere; ``pool_of``, ``shared_terms``) and then held
while the per-chip fit sets the other terms: what a request pays before its first token (admission,
tokenisation, prefill scheduling, the first token's return) is the engine's software, and the
per-chip fits of these terms on two or three models did not transfer (2026-11-26,
docs/calibration.md). A fold fitted on other chips' rows only (the fallback of ``model_folds``, every
``chip_folds`` fold: a chip with no rows of its own) fits the shared terms there and keeps the per-chip
ones (``engine_floor_scale``, ``step_overhead_s``, ``layer_overhead_s``) at ``BASE`` (kernel-only,
``CROSS_CHIP_BASE``): those follow the chip's launch floors and host, and borrowed from other chips
they priced h100-sxm/sglang at 52% median TPOT error against 25% kernel-only (2026-11-26).

Nothing of a held-out group enters its own fit: the first linearisation point is the fixed
kernel-only profile (``engine_fit.BASE``), and ``run_folds`` refuses a fold whose held-out rows
are among its training rows. TTFT is scored only at concurrency <= ``TTFT_MAX_CONCURRENCY``
(larger is queueing at the batch/KV limit). Moved from benchmarks/silicon_accuracy.py.
"""

from __future__ import annotations

import os
from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from ..errors import InfeasibleError
from .engine_fit import BASE, BOUNDS, PARAMS, STEPS, TTFT_MAX_CONCURRENCY, fit_terms, with_terms
from .holdout import Fold, HoldoutReport, band_of, cells, run_folds
from .silicon import predict_silicon, row_profile

FAMILY = {"deepseek-ai/DeepSeek-R1": "DeepSeek-V3 arch", "deepseek-ai/DeepSeek-V3": "DeepSeek-V3 arch",
          "nvidia/DeepSeek-V3.1-NVFP4": "DeepSeek-V3 arch"}
"""Model paths of one architecture, held out together."""
SCHEMES = ("model", "chip", "none")


def group_of(row) -> str:
    """The leave-one-model-out group of a row (``FAMILY``, else its model path)."""
    return FAMILY.get(row.model, row.model)


def jacobian(rows, at: dict[str, dict] | None = None):
    """(TPOT, TTFT, dTPOT, dTTFT) of ``rows`` at the terms ``at`` (per profile name; default
    ``BASE``): values (n,) and finite-difference derivatives (n, len(PARAMS))."""

    names = sorted({r.profile for r in rows})
    at = at or {n: BASE for n in names}
    base_profiles = {n: with_terms(row_profile(n), at[n]) for n in names}
    tpot0, ttft0, _ = predict_silicon(rows, profiles=base_profiles)
    d_tpot = np.zeros((len(rows), len(PARAMS)))
    d_ttft = np.zeros_like(d_tpot)
    for j, p in enumerate(PARAMS):
        profs = {}
        for n in names:
            lo, hi = BOUNDS[p]
            x, h = at[n][p], STEPS[p]
            v = next(v for v in (x + h, x - h, x + h / 4, x - h / 4) if lo <= v <= hi)
            profs[n] = (with_terms(base_profiles[n], {p: v}), v - at[n][p])
        tpot, ttft, _ = predict_silicon(rows, profiles={n: pv[0] for n, pv in profs.items()})
        h = np.array([profs[r.profile][1] for r in rows])
        d_tpot[:, j], d_ttft[:, j] = (tpot - tpot0) / h, (ttft - ttft0) / h
    return tpot0, ttft0, d_tpot, d_ttft


def fit_fold(train, rows, lin0, hold: dict | None = None) -> dict:
    """Engine terms fitted on rows ``train`` (indices into ``rows``; ``lin0`` = ``jacobian`` at
    ``BASE``, over ``rows``): two passes, the second linearised at the first's terms on the
    training rows only; ``hold`` (term: value) held, not fitted."""
    train = list(train)
    t1 = fit_terms(train, rows, lin0, BASE, hold)
    sub = [rows[i] for i in train]
    lin1 = jacobian(sub, at={r.profile: t1 for r in sub})
    return fit_terms(range(len(sub)), sub, lin1, t1, hold)


SHARED = tuple(t for t in os.environ.get("LLMECON_SHARED_TERMS", "ttft_prefill_factor,request_overhead_s").split(",")
               if t)
"""Engine terms fitted once per engine over every chip's rows and held in the per-chip fits (the
TTFT terms: host-side admission, tokenisation and prefill scheduling are the engine's, not the
chip's; module docstring)."""


CROSS_CHIP_BASE = os.environ.get("LLMECON_CROSS_CHIP_BASE", "1") == "1"
"""A fold fitted on other chips' rows only (the fallback of ``model_folds``, every ``chip_folds``
fold) keeps the per-chip terms at ``BASE`` (kernel-only) and fits the ``SHARED`` ones."""


def shared_terms(rows, lin0, pool, cache: dict) -> dict:
    """``SHARED`` terms of an engine-pooled fit on rows ``pool`` (cached by the pool)."""
    unknown = sorted(set(SHARED) - set(PARAMS))
    if unknown:
        raise InfeasibleError(f"not fitted engine terms {', '.join(unknown)} (fitted: {', '.join(PARAMS)})",
                              field="LLMECON_SHARED_TERMS", value=",".join(SHARED))
    key = tuple(sorted(pool))
    if key not in cache:
        t = fit_fold(key, rows, lin0)
        cache[key] = {p: t[p] for p in SHARED}
    return cache[key]


def pool_of(rows, fold_held, fold_train, base_tpot) -> list[int] | None:
    """Rows of the engine-pooled fit for a per-chip fold: the same engine's priced rows on every
    chip, every group of the held rows excluded; None where the fold's training rows are not all
    on the held rows' chip (fallback and chip folds are pooled already)."""
    chips = {rows[i].chip for i in fold_held}
    if not SHARED or not fold_train or {rows[i].chip for i in fold_train} != chips or len(chips) != 1:
        return None
    engine = rows[fold_held[0]].engine
    groups = {group_of(rows[i]) for i in fold_held}
    return [i for i, r in enumerate(rows) if r.engine == engine and group_of(r) not in groups
            and np.isfinite(base_tpot[i])]


def _priced(idx, base_tpot) -> int:
    return int(np.sum(np.isfinite(base_tpot[list(idx)]))) if len(idx) else 0


MIN_TRAIN = 2 * len(PARAMS)
"""Fewest priced training rows a fold is fitted on (two per fitted term); fewer: the fallback."""


def _by_profile(rows) -> dict[str, list[int]]:
    by = defaultdict(list)
    for i, r in enumerate(rows):
        by[r.profile].append(i)
    return dict(sorted(by.items()))


def model_folds(rows, base_tpot) -> tuple[list[Fold], dict[str, str]]:
    """Leave-one-model-out folds per profile, with the other-chip fallback; (folds, {profile: note})."""
    folds, notes = [], {}
    for prof, idx in _by_profile(rows).items():
        engine = prof.split("/")[1]
        if _priced(idx, base_tpot) < MIN_TRAIN:
            notes[prof] = "no row llmecon prices (plans refused): not fitted"
            continue
        for g in sorted({group_of(rows[i]) for i in idx}):
            held = [i for i in idx if group_of(rows[i]) == g]
            train = [i for i in idx if group_of(rows[i]) != g]
            note = ""
            if _priced(train, base_tpot) < MIN_TRAIN:
                train = [i for i, r in enumerate(rows) if r.engine == engine and r.profile != prof and group_of(r) != g]
                notes[prof] = note = f"fit on {engine} rows of other chips"
            folds.append(Fold(name=f"{prof} without {g}", held=tuple(held), train=tuple(train), note=note))
    return folds, notes


def chip_folds(rows, base_tpot) -> tuple[list[Fold], dict[str, str]]:
    """Leave-one-chip-out folds: each profile's rows from the same engine's rows of other chips."""
    folds, notes = [], {}
    for prof, idx in _by_profile(rows).items():
        chip, engine = prof.split("/")
        train = [i for i, r in enumerate(rows) if r.engine == engine and r.chip != chip]
        if _priced(train, base_tpot) < MIN_TRAIN:
            notes[prof] = f"no other chip has enough priced {engine} rows: not predicted"
            continue
        folds.append(Fold(name=f"{prof} from other chips", held=tuple(idx), train=tuple(train)))
    return folds, notes


def pooled_model_folds(rows, base_tpot) -> list[Fold]:
    """Leave-one-model-out with one set of terms per engine over every chip (priced rows only)."""
    folds = []
    for engine in sorted({r.engine for r in rows}):
        eidx = [i for i, r in enumerate(rows) if r.engine == engine and np.isfinite(base_tpot[i])]
        for g in sorted({group_of(rows[i]) for i in eidx}):
            folds.append(Fold(name=f"{engine} without {g}", held=tuple(i for i in eidx if group_of(rows[i]) == g),
                              train=tuple(i for i in eidx if group_of(rows[i]) != g)))
    return folds


def _predict(rows, held, terms):
    sub = [rows[i] for i in held]
    tpot, ttft, _ = predict_silicon(sub, profiles={r.profile: with_terms(row_profile(r.profile), terms)
                                                   for r in sub})
    return tpot, ttft


def predict_folds(rows, folds, lin0, progress=None, notes: dict | None = None):
    """(TPOT, TTFT) held-out predictions of ``folds``; a fold whose fit is refused (too few rows)
    stays NaN, with the reason in ``notes``."""
    cache: dict = {}
    order = iter([f for f in folds if f.held])  # run_folds fits these folds, in this order

    def fit(train):
        fold = next(order)
        if list(fold.train) != list(train):
            raise ValueError(f"fold {fold.name}: fitted out of order")
        try:
            held = fold.held
            pool = pool_of(rows, held, train, lin0[0])
            hold = shared_terms(rows, lin0, pool, cache) if pool is not None else None
            if CROSS_CHIP_BASE and {rows[i].chip for i in held}.isdisjoint(rows[i].chip for i in train):
                hold = {p: BASE[p] for p in PARAMS if p not in SHARED}
            return fit_fold(train, rows, lin0, hold)
        except InfeasibleError as exc:
            if notes is not None:
                notes[f"fold {len(notes)}"] = str(exc)
            return None

    return run_folds(folds, len(rows), fit, lambda terms, held: _predict(rows, held, terms), quantities=2,
                     progress=progress)


def in_sample(rows, lin0, base_tpot):
    """({profile: terms fitted on all its rows}, TPOT, TTFT) for profiles with enough priced rows."""
    terms, cache = {}, {}
    tpot, ttft = np.full(len(rows), np.nan), np.full(len(rows), np.nan)
    for prof, idx in _by_profile(rows).items():
        if _priced(idx, base_tpot) < MIN_TRAIN:
            continue
        pool = [i for i, r in enumerate(rows) if r.engine == rows[idx[0]].engine and np.isfinite(base_tpot[i])]
        hold = shared_terms(rows, lin0, pool, cache) if SHARED else None
        terms[prof] = fit_fold(idx, rows, lin0, hold)
        tpot[idx], ttft[idx] = _predict(rows, idx, terms[prof])
    return terms, tpot, ttft


def rowless_terms(rows, lin0, base_tpot, names, fitted) -> dict:
    """{profile: terms} for the measured profiles ``names`` (``chip/engine``) not in ``fitted`` (fewer than
    ``MIN_TRAIN`` priced aggregated rows of their own): per-chip terms at ``BASE`` (kernel-only), the
    ``SHARED`` ones from the engine-pooled fit over every chip's rows, as a leave-one-chip-out fold
    gives a chip with no rows (``CROSS_CHIP_BASE``). An engine with no priced rows at all gets none."""
    out, cache = {}, {}
    for name in names:
        engine = name.split("/")[1]
        pool = [i for i, r in enumerate(rows) if r.engine == engine and np.isfinite(base_tpot[i])]
        if name in fitted or not SHARED or len(pool) < MIN_TRAIN:
            continue
        out[name] = {**BASE, **shared_terms(rows, lin0, pool, cache)}
    return out


def linearise(rows, needed=None):
    """``jacobian`` at ``BASE`` of the rows ``needed`` (default all), as arrays over all ``rows``
    (NaN elsewhere): each row's values depend on that row alone."""
    needed = sorted(range(len(rows)) if needed is None else set(needed))
    n = len(rows)
    out = (np.full(n, np.nan), np.full(n, np.nan), np.full((n, len(PARAMS)), np.nan),
           np.full((n, len(PARAMS)), np.nan))
    if needed:
        got = jacobian([rows[i] for i in needed])
        for full, part in zip(out, got):
            full[needed] = part
    return out


@dataclass(frozen=True, kw_only=True)
class SiliconHoldout:
    """Per-row measured, ideal, kernel-only and held-out predictions (NaN where not predicted or not
    evaluated); ``evaluated`` marks the rows the run scored."""

    holdout: str
    rows: tuple
    evaluated: np.ndarray
    tpot_s: np.ndarray
    ttft_s: np.ndarray
    ideal_tpot_s: np.ndarray
    ideal_ttft_s: np.ndarray
    held_tpot_s: np.ndarray
    held_ttft_s: np.ndarray
    notes: tuple[str, ...]

    def report(self) -> HoldoutReport:
        rows = self.rows
        vendors = [vendor_of(r.chip) for r in rows]
        labels = {"vendor": vendors, "vendor/engine": [f"{v}/{r.engine}" for v, r in zip(vendors, rows)],
                  "chip": [r.chip for r in rows], "model": [group_of(r) for r in rows],
                  "engine": [r.engine for r in rows], "chip/engine": [r.profile for r in rows],
                  "concurrency": [band_of(r.concurrency) for r in rows]}
        low = np.array([r.concurrency <= TTFT_MAX_CONCURRENCY for r in rows], bool)
        out = cells("TPOT", self.held_tpot_s, self.tpot_s, self.ideal_tpot_s, labels, mask=self.evaluated)
        out += cells(f"TTFT c<={TTFT_MAX_CONCURRENCY}", self.held_ttft_s, self.ttft_s, self.ideal_ttft_s, labels,
                     mask=self.evaluated & low)
        return HoldoutReport(source="silicon", holdout=self.holdout, rows=int(self.evaluated.sum()),
                             cells=tuple(out), notes=self.notes)


ENGINE_TERMS = {"model": "fitted per chip and engine on its own rows of the other models (where a profile has too "
                          "few: on the engine's rows of the other chips, noted above); TTFT terms per engine over "
                          "every chip's rows of the other models",
                "chip": "fitted on the same engine's rows of the other chips only; per-chip terms (floor, step and "
                        "layer overheads) at kernel-only, TTFT terms from those chips",
                "none": "fitted on every row (in-sample)"}
"""Where a row's engine terms come from under each scheme (``provenance_notes``)."""


def provenance_notes(rows, scored, holdout: str) -> tuple[str, ...]:
    """Per vendor, what the scored rows' profiles measure and what they borrow: kernel terms from the chip's own
    measured kernel tables, or a profile transferred from other chips (with its expected error); and where the
    engine terms of this run come from (``ENGINE_TERMS``)."""
    names = sorted({rows[i].profile for i in np.flatnonzero(scored)})
    by: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for name in names:
        prof = row_profile(name)
        kind = "transferred" if prof.transferred else "measured"
        by[vendor_of(name.split("/")[0])][kind].append(name if kind == "measured" else prof.label)
    out = []
    for vendor, kinds in sorted(by.items()):
        parts = [f"{k} from the chip's own kernel tables ({len(v)}): {', '.join(v)}" if k == "measured"
                 else f"{k} ({len(v)}): {'; '.join(v)}" for k, v in sorted(kinds.items())]
        out.append(f"{vendor} profiles of the scored rows: " + "; ".join(parts))
    if names:
        out.append(f"engine terms in this run ({holdout}): {ENGINE_TERMS[holdout]}")
    return tuple(out)


def vendor_of(chip: str) -> str:
    """The catalogue vendor of a chip in capitals (NVIDIA, AMD), for the per-vendor split of ``validate``."""
    from ..catalog.hardware import get_accelerator

    return get_accelerator(chip).vendor.upper()


def base_tpot(rows) -> np.ndarray:
    """Kernel-only TPOT (the profiles at ``BASE``): which rows llmecon prices (NaN: plan refused)."""
    names = {r.profile for r in rows}
    return predict_silicon(rows, profiles={n: with_terms(row_profile(n), BASE) for n in names})[0]


def silicon_holdout(rows, holdout: str = "model", *, models=None, chips=None, engines=None,
                    progress=None) -> SiliconHoldout:
    """Held-out (``holdout`` "model" or "chip") or in-sample ("none") TPOT/TTFT of ``rows``,
    scoring only rows of ``models`` (model paths or groups), ``chips`` and ``engines`` when given:
    the fits still use every other row the scheme allows (only the rows a fit or a score needs are
    priced)."""
    if holdout not in SCHEMES:
        raise InfeasibleError(f"must be one of {', '.join(SCHEMES)}", field="holdout", value=holdout)
    rows = list(rows)
    n = len(rows)
    scored = np.array([(models is None or r.model in models or group_of(r) in models)
                       and (chips is None or r.chip in chips) and (engines is None or r.engine in engines)
                       for r in rows], bool)
    notes: dict[str, str] = {}
    if progress is not None:
        progress(0, 1, "linearising the engine terms")
    if holdout == "none":
        profs = {rows[i].profile for i in np.flatnonzero(scored)}
        engines = {p.split("/")[1] for p in profs} if SHARED else set()  # the engine-pooled fit's rows
        lin0 = linearise(rows, [i for i in range(n) if rows[i].profile in profs or rows[i].engine in engines])
        _, held_tpot, held_ttft = in_sample(rows, lin0, lin0[0])
        notes["in-sample"] = "terms fitted on every row of the chip and engine: not an accuracy claim"
    else:
        base = base_tpot(rows) if not scored.all() else None
        lin0 = linearise(rows) if base is None else None
        maker = model_folds if holdout == "model" else chip_folds
        folds, notes = maker(rows, lin0[0] if base is None else base)
        folds = [Fold(name=f.name, held=tuple(i for i in f.held if scored[i]), train=f.train, note=f.note)
                 for f in folds]
        folds = [f for f in folds if f.held]
        if lin0 is None:
            engines = {rows[i].engine for f in folds for i in f.held} if SHARED else set()
            lin0 = linearise(rows, {i for f in folds for i in f.held + f.train}
                             | {i for i, r in enumerate(rows) if r.engine in engines})
        held_tpot, held_ttft = predict_folds(rows, folds, lin0, progress=progress, notes=notes)
    ideal_tpot, ideal_ttft = np.full(n, np.nan), np.full(n, np.nan)
    idx = np.flatnonzero(scored)
    if idx.size:
        t, f, _ = predict_silicon([rows[i] for i in idx], mode="ideal")
        ideal_tpot[idx], ideal_ttft[idx] = t, f
    unpriced = int(np.sum(scored & ~np.isfinite(held_tpot)))
    text = tuple(f"{k}: {v}" for k, v in sorted(notes.items())) + provenance_notes(rows, scored, holdout)
    if unpriced:
        text += (f"{unpriced} scored rows not predicted (plan refused or profile not fitted)",)
    return SiliconHoldout(holdout=holdout, rows=tuple(rows), evaluated=scored,
                          tpot_s=np.array([r.tpot_s for r in rows]), ttft_s=np.array([r.ttft_s for r in rows]),
                          ideal_tpot_s=ideal_tpot, ideal_ttft_s=ideal_ttft, held_tpot_s=held_tpot,
                          held_ttft_s=held_ttft, notes=text)
