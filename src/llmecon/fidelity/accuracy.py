"""How far predictions are from measurements: per split (fit / hold-out), ideal and calibrated.

``evaluate`` predicts a set of measurement rows twice — ideal mode and calibrated mode (the
given profile, else each row's accelerator's shipped profile) — and reports the median and 90th
percentile absolute relative error, the share of rows ideal mode predicts at or below the
measurement (a lower bound should give 100% on kernel data), and the worst cases. Serving rows
are scored on TPOT and, separately, TTFT. Used by ``llmecon validate`` and
``benchmarks/accuracy.py``.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from .calibrate import error_stats, measured, predict_rows
from ..catalog.hardware import get_accelerator, get_system
from ..spec.efficiency import IDEAL, EfficiencyProfile
from ..catalog.efficiency import default_profile
from ..errors import LlmeconError
from .measurements import Measurement, default_split

WORST = 5


def accelerator_of(row: Measurement):
    return get_accelerator(row.accelerator) if row.accelerator else get_system(row.system).accelerator


def _calibrated(rows: list[Measurement], profile: EfficiencyProfile | None):
    """Calibrated predictions, each row with ``profile`` or its accelerator's default; rows with
    no profile get NaN and the reason."""
    n = len(rows)
    value, ttft, problem = np.full(n, np.nan), np.full(n, np.nan), [""] * n
    by_prof: dict[str, list[int]] = defaultdict(list)
    profs: dict[str, EfficiencyProfile] = {}
    for i, r in enumerate(rows):
        try:
            prof = profile or default_profile(accelerator_of(r))
        except LlmeconError as exc:
            problem[i] = str(exc)
            continue
        profs[prof.name] = prof
        by_prof[prof.name].append(i)
    for name, idx in by_prof.items():
        pr = predict_rows([rows[i] for i in idx], profs[name])
        value[idx], ttft[idx] = pr.value_s, pr.ttft_s
        for j, i in enumerate(idx):
            problem[i] = pr.problem[j]
    return value, ttft, problem, sorted(profs)


@dataclass(frozen=True, kw_only=True)
class Evaluation:
    """Errors of one set of rows; ``metrics`` maps 'value' (and 'ttft' for serving) to
    {mode: {split: ErrorStats-as-dict}}."""

    rows: int
    profiles: tuple[str, ...]
    metrics: dict
    worst: list
    problems: dict

    def as_dict(self) -> dict:
        return {"rows": self.rows, "profiles": list(self.profiles), "metrics": self.metrics, "worst": self.worst,
                "problems": self.problems}


def evaluate(rows: list[Measurement], profile: EfficiencyProfile | None = None) -> Evaluation:
    """Ideal and calibrated errors of ``rows`` on the fit and hold-out splits and overall."""
    meas, meas_ttft = measured(rows)
    ideal = predict_rows(rows, IDEAL)
    cal_v, cal_t, cal_problem, names = _calibrated(rows, profile)
    split = np.array([default_split(r) for r in rows])
    masks = {"all": np.ones(len(rows), bool), "fit": split == "fit", "holdout": split == "holdout"}
    metrics = {"value": {}, "ttft": {}}
    for mode, v, t in (("ideal", ideal.value_s, ideal.ttft_s), ("calibrated", cal_v, cal_t)):
        metrics["value"][mode] = {k: error_stats(v[m], meas[m]).as_dict() for k, m in masks.items()}
        if np.isfinite(meas_ttft).any():
            metrics["ttft"][mode] = {k: error_stats(t[m], meas_ttft[m]).as_dict() for k, m in masks.items()}
    if not metrics["ttft"]:
        del metrics["ttft"]
    with np.errstate(divide="ignore", invalid="ignore"):
        err = np.abs(cal_v / meas - 1.0)
    order = [i for i in np.argsort(-np.nan_to_num(err, nan=-1.0)) if np.isfinite(err[i])][:WORST]
    worst = [{"row": rows[i].label, "split": split[i], "measured_s": float(meas[i]),
              "ideal_s": float(ideal.value_s[i]), "calibrated_s": float(cal_v[i]), "error": float(err[i])}
             for i in order]
    problems: dict[str, int] = defaultdict(int)
    for p in list(ideal.problem) + cal_problem:
        if p:
            problems[p] += 1
    return Evaluation(rows=len(rows), profiles=tuple(names), metrics=metrics, worst=worst, problems=dict(problems))
