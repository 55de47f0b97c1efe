"""AMD kernel terms (GEMM and fused MoE, per chip and dtype) fitted on aiter's tuned-kernel rows, and scored
out of sample: leave one model out (the tuning file's model tag, ``amd_kernels.model_tag``) within a chip, and
leave one chip out (fit on gfx942 = ``mi300x``, price gfx950 = ``mi355x`` through its datasheet, and back).

The fit is ``kernel_fit.fit_gemm`` / ``fit_moe`` (bounded soft-L1 least squares on log(predicted/measured),
<= 4000 sampled rows): the functions that price a served step. A score is the median and 90th percentile of
|predicted/measured - 1| over the held-out rows, every held-out group pooled. The baseline is the shipped
``<chip>-transferred.toml`` (pooled NVIDIA vLLM terms on the AMD datasheet) pricing the same rows: it was fitted
on none of them, so it is out of sample too.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from ..spec.efficiency import EfficiencyProfile, KernelTerms
from .kernel_fit import MIN_ROWS, _with, fit_gemm, fit_moe, predict_gemm, predict_moe

FAMILIES = ("gemm", "moe")


def rows_of(cols: dict, mask) -> dict:
    """The rows of ``cols`` where ``mask`` holds."""
    return {k: v[mask] for k, v in cols.items()}


def fit_family(cols: dict, family: str, dtype: str) -> KernelTerms | None:
    """GEMM or MoE terms of ``dtype`` from ``cols`` (None with fewer than ``kernel_fit.MIN_ROWS`` rows)."""
    if family == "gemm":
        return fit_gemm(cols, dtype)
    got = fit_moe(cols, dtype)
    return None if got is None else got[0]


def predict_family(terms: KernelTerms, cols: dict, family: str, dtype: str) -> np.ndarray:
    """Seconds of each row of ``cols`` (all of ``dtype``) under ``terms``."""
    prof = _with(**{family: ((dtype, terms),)})
    return predict_gemm(prof, cols) if family == "gemm" else predict_moe(prof, cols)


def predict_with(profile: EfficiencyProfile, cols: dict, family: str) -> np.ndarray:
    """Seconds of each row under a whole profile (its own dtype fallbacks: ``gemm_terms`` / ``moe_terms``)."""
    return predict_gemm(profile, cols) if family == "gemm" else predict_moe(profile, cols)


def errors(pred, meas) -> np.ndarray:
    """|predicted/measured - 1| per row."""
    return np.abs(np.asarray(pred, dtype=float) / np.asarray(meas, dtype=float) - 1.0)


@dataclass(frozen=True, kw_only=True)
class Score:
    """Out-of-sample error of one (family, chip, dtype) under one protocol: held-out rows, groups, median and
    p90 of |predicted/measured - 1|, and the signed median of predicted/measured - 1 (negative: too fast)."""

    family: str
    chip: str
    dtype: str
    protocol: str
    rows: int
    groups: int
    median: float
    p90: float
    bias: float

    @staticmethod
    def of(pred, meas, **kw) -> "Score":
        ratio = np.asarray(pred, dtype=float) / np.asarray(meas, dtype=float) - 1.0
        e = np.abs(ratio)
        return Score(rows=len(e), median=float(np.median(e)), p90=float(np.quantile(e, 0.9)),
                     bias=float(np.median(ratio)), **kw)


def _dtype_rows(cols: dict, chip: str, dtype: str) -> dict:
    return rows_of(cols, (cols["chip"] == chip) & (cols["dtype"] == dtype))


def leave_one_model_out(cols: dict, family: str, chip: str, dtype: str) -> Score | None:
    """Each model tag of (chip, dtype) priced by terms fitted on the other tags of the same chip and dtype;
    None with fewer than two tags (nothing to hold out)."""
    c = _dtype_rows(cols, chip, dtype)
    tags = np.unique(c["model"])
    if len(tags) < 2:
        return None
    pred, meas, used = [], [], 0
    for tag in tags:
        held = c["model"] == tag
        terms = fit_family(rows_of(c, ~held), family, dtype)
        if terms is None:
            continue
        used += 1
        pred.append(predict_family(terms, rows_of(c, held), family, dtype))
        meas.append(c["time_s"][held])
    if not pred:
        return None
    return Score.of(np.concatenate(pred), np.concatenate(meas), family=family, chip=chip, dtype=dtype,
                    protocol="leave-one-model-out", groups=used)


def leave_one_chip_out(cols: dict, family: str, held_chip: str, dtype: str) -> Score | None:
    """``held_chip``'s rows of ``dtype`` priced by terms fitted on the other chips' rows of that dtype (through
    ``held_chip``'s datasheet); None when either side has too few rows."""
    held = (cols["chip"] == held_chip) & (cols["dtype"] == dtype)
    train = (cols["chip"] != held_chip) & (cols["dtype"] == dtype)
    if held.sum() < 1 or train.sum() < MIN_ROWS:
        return None
    terms = fit_family(rows_of(cols, train), family, dtype)
    if terms is None:
        return None
    h = rows_of(cols, held)
    return Score.of(predict_family(terms, h, family, dtype), h["time_s"], family=family, chip=held_chip, dtype=dtype,
                    protocol="leave-one-chip-out", groups=1)


def baseline(cols: dict, family: str, chip: str, dtype: str, profile: EfficiencyProfile) -> Score | None:
    """(chip, dtype)'s rows priced by a shipped profile (not fitted on them)."""
    c = _dtype_rows(cols, chip, dtype)
    if not len(c["time_s"]):
        return None
    return Score.of(predict_with(profile, c, family), c["time_s"], family=family, chip=chip, dtype=dtype,
                    protocol=f"shipped {profile.name}", groups=len(np.unique(c["model"])))


MIN_TAGS = 2
"""A (chip, dtype) ships fitted terms only with rows from at least this many model tags, so that its
leave-one-model-out error exists (MI300X per-token fp8 GEMM: 32 rows of one file, left out: fp8 GEMMs there
price with the fp8_block terms, ``EfficiencyProfile.gemm_terms``' fp8 -> fp8_block fallback)."""


def fit_chip(gemm: dict, moe: dict, chip: str) -> dict:
    """{"gemm": {dtype: KernelTerms}, "moe": {dtype: KernelTerms}} fitted on all of ``chip``'s rows, every dtype
    with at least ``kernel_fit.MIN_ROWS`` rows from at least ``MIN_TAGS`` model tags."""
    out = {}
    for family, cols in (("gemm", gemm), ("moe", moe)):
        got = {}
        for dtype in sorted(np.unique(cols["dtype"][cols["chip"] == chip])):
            c = _dtype_rows(cols, chip, str(dtype))
            if len(np.unique(c["model"])) < MIN_TAGS:
                continue
            terms = fit_family(c, family, str(dtype))
            if terms is not None:
                got[str(dtype)] = terms
        out[family] = got
    return out


def with_kernels(profile: EfficiencyProfile, fitted: dict) -> EfficiencyProfile:
    """``profile`` with its GEMM and MoE tables' entries replaced (or added) by ``fitted``'s; other dtypes'
    entries stay as they were (borrowed ones stay borrowed: the derivation must say which)."""
    kw = {}
    for family in FAMILIES:
        table = dict(getattr(profile, family))
        table.update(fitted.get(family, {}))
        kw[family] = tuple(table.items())
    return dataclasses.replace(profile, **kw)
