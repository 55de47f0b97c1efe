"""Out-of-sample error by held-out group: the honest accuracy figures of ``llmecon validate``.

A *fold* holds out a set of rows (one model, one chip, one shape group) and names the rows its fit
may use; ``run_folds`` fits on each fold's training rows (the caller's fitter), predicts its
held-out rows (the caller's predictor) and refuses a fold whose held-out rows are among its own
training rows. ``leave_one_group_out`` makes the plain folds (one per group, trained on every other
group). The callers: ``holdout_silicon`` (end-to-end TPOT/TTFT, engine terms, leave one model or
chip out) and ``holdout_kernels`` (kernel times, k-fold by shape group or leave one chip out).

Errors are |pred/meas - 1| of held-out predictions only; ``cells`` summarises them as median and
90th percentile per (quantity, grouping, group) with the share of rows whose ideal-mode
prediction is at or below the measurement (a lower bound must give 100%). Concurrency bands are
1-8, 9-64 and 65+ (``BANDS``).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

BANDS = ((1, 8, "1-8"), (9, 64, "9-64"), (65, None, "65+"))
"""Concurrency bands (inclusive bounds; None: no upper bound)."""
BELOW_TOL = 1e-9
"""ideal <= measured counts with this relative slack (float noise on an exact bound)."""


def band_of(concurrency: int) -> str:
    """The band label of a concurrency (``BANDS``)."""
    for lo, hi, label in BANDS:
        if concurrency >= lo and (hi is None or concurrency <= hi):
            return label
    return f"<{BANDS[0][0]}"


@dataclass(frozen=True, kw_only=True)
class Fold:
    """Rows ``held`` predicted by a fit on rows ``train`` (indices into the caller's rows);
    ``note`` says how the training rows were chosen where it is not the plain rule."""

    name: str
    held: tuple[int, ...]
    train: tuple[int, ...]
    note: str = ""


def leave_one_group_out(groups: Sequence[Hashable]) -> list[Fold]:
    """One fold per distinct group (sorted by its text): that group's rows held out, every other
    row trained on."""
    by: dict = {}
    for i, g in enumerate(groups):
        by.setdefault(g, []).append(i)
    keys = sorted(by, key=str)
    return [Fold(name=str(g), held=tuple(by[g]), train=tuple(i for h in keys if h != g for i in by[h]))
            for g in keys]


def run_folds(folds: Iterable[Fold], n: int, fit: Callable, predict: Callable, *, quantities: int = 1,
              progress: Callable[[int, int, str], None] | None = None) -> tuple[np.ndarray, ...]:
    """Held-out predictions, ``quantities`` arrays of length ``n`` (NaN where no fold predicts a
    row): for each fold ``model = fit(train)`` and ``predict(model, held)`` returns one array per
    quantity over the held rows (or one array when ``quantities`` is 1). A ``fit`` returning None
    leaves the fold unpredicted. ``progress(done, total, fold name)`` is called after each fold."""
    folds = list(folds)
    out = tuple(np.full(n, np.nan) for _ in range(quantities))
    for k, fold in enumerate(folds):
        if set(fold.held) & set(fold.train):
            raise ValueError(f"fold {fold.name}: held-out rows are among its training rows")
        model = fit(list(fold.train)) if fold.held else None
        if model is not None:
            got = predict(model, list(fold.held))
            got = (got,) if quantities == 1 else tuple(got)
            for arr, vals in zip(out, got):
                arr[list(fold.held)] = vals
        if progress is not None:
            progress(k + 1, len(folds), fold.name)
    return out


def rel_error(pred, meas) -> np.ndarray:
    """|pred/meas - 1| (NaN where either is missing or meas is not positive)."""
    pred, meas = np.asarray(pred, float), np.asarray(meas, float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(meas > 0, np.abs(pred / meas - 1.0), np.nan)


def stats(err) -> tuple[int, float, float]:
    """(finite count, median, 90th percentile) of errors (NaN when none)."""
    e = np.asarray(err, float)
    e = e[np.isfinite(e)]
    return (e.size, float(np.median(e)), float(np.percentile(e, 90))) if e.size else (0, float("nan"), float("nan"))


def below_share(ideal, meas) -> tuple[int, float]:
    """(rows with an ideal prediction, share of them at or below the measurement)."""
    ideal, meas = np.asarray(ideal, float), np.asarray(meas, float)
    ok = np.isfinite(ideal) & np.isfinite(meas)
    if not ok.any():
        return 0, float("nan")
    return int(ok.sum()), float(np.mean(ideal[ok] <= meas[ok] * (1.0 + BELOW_TOL)))


@dataclass(frozen=True, kw_only=True)
class ErrorCell:
    """Held-out error of one quantity over one group of rows.

    ``by`` is the grouping ("all", "chip", "model", "engine", "chip/engine", "concurrency"),
    ``group`` its value; ``rows`` the measured rows, ``predicted`` those with a held-out
    prediction; ``median``/``p90`` of |pred/meas - 1| over the predicted rows; ``ideal_rows`` and
    ``ideal_below`` the rows ideal mode prices and the share at or below the measurement."""

    quantity: str
    by: str
    group: str
    rows: int
    predicted: int
    median: float
    p90: float
    ideal_rows: int
    ideal_below: float

    def as_dict(self) -> dict:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def _order(value: str):
    """Concurrency bands in ``BANDS`` order, then names alphabetically."""
    labels = [b[2] for b in BANDS]
    return (labels.index(value), "") if value in labels else (len(labels), value)


def cells(quantity: str, pred, meas, ideal, labels: dict[str, Sequence[str]], *,
          mask=None) -> list[ErrorCell]:
    """One ``ErrorCell`` for all rows and one per value of each grouping in ``labels`` ({by: label
    per row}), over the rows where ``mask`` holds (default all)."""
    pred, meas = np.asarray(pred, float), np.asarray(meas, float)
    ideal = np.full(len(meas), np.nan) if ideal is None else np.asarray(ideal, float)
    base = np.ones(len(meas), bool) if mask is None else np.asarray(mask, bool)
    err = rel_error(pred, meas)
    out = []
    groupings = [("all", None)] + list(labels.items())
    for by, lab in groupings:
        lab = None if lab is None else np.asarray(lab, dtype=object)
        values = ["all"] if lab is None else sorted({str(v) for v in lab[base]}, key=_order)
        for value in values:
            sel = base if lab is None else base & (lab.astype(str) == value)
            if not sel.any():
                continue
            k, med, p90 = stats(err[sel])
            ki, share = below_share(ideal[sel], meas[sel])
            out.append(ErrorCell(quantity=quantity, by=by, group=value, rows=int(sel.sum()), predicted=k, median=med,
                                 p90=p90, ideal_rows=ki, ideal_below=share))
    return out


@dataclass(frozen=True, kw_only=True)
class HoldoutReport:
    """What ``llmecon validate`` prints for a silicon CSV or the kernel tables: ``holdout`` is the
    scheme ("model", "chip", "none" = in-sample, not an accuracy claim), ``cells`` the errors,
    ``notes`` how folds were trained where not by the plain rule, and rows not predicted."""

    source: str
    holdout: str
    rows: int
    cells: tuple[ErrorCell, ...]
    notes: tuple[str, ...] = ()

    def as_dict(self) -> dict:
        return {"source": self.source, "holdout": self.holdout, "rows": self.rows,
                "cells": [c.as_dict() for c in self.cells], "notes": list(self.notes)}
