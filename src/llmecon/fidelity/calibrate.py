"""Predict measurement rows, fit efficiency profiles to them, and report the error.

``predict_rows`` prices every ``measurements.Measurement`` with a profile (``IDEAL`` = ideal
mode): single kernels with ``efficiency.gemm_s``/``elementwise_s``/``copy_s``, collectives with
``efficiency.collective_s``, steps with ``inference`` (calibrated through ``calibrated``), static
batches as one prefill plus O-1 decode steps at growing context (TensorRT-LLM's
gptSessionBenchmark), serving rows with ``serving.steady_state``.

``fit_profile`` fits in stages, each by bounded least squares on log(predicted/measured)
(scipy.optimize.least_squares, soft-L1 loss so a few queueing outliers do not dominate), each
stage only on the rows that inform it and only when it has at least ``MIN_ROWS_PER_PARAM`` rows
per parameter (else the base profile's values stay and the report says so):

1. kernels (gemm, copy, elementwise rows): hbm_fraction, matmul_fraction, matmul_m_half,
   kernel_floor_s, elementwise_fraction, elementwise_floor_s;
2. collectives, per tier: op_overhead_s (p2p_overhead_s too when both all-reduce and send/recv
   rows exist), step_latency_s, bandwidth_fraction;
3. engine (decode, prefill, static and serving rows together; serving TPOT and TTFT both
   count): step_overhead_s, engine_floor_scale and, with serving rows, iteration_overhead_s,
   prefill_stall_factor, ttft_prefill_factor.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from ..spec.deployment import Deployment
from ..catalog.hardware import get_accelerator, get_system
from ..catalog.models import get_model
from ..spec.efficiency import IDEAL, EfficiencyProfile, LinkEfficiency
from ..step.kernels import collective_s, copy_s, elementwise_s, gemm_s
from ..errors import LlmeconError, SpecError
from .measurements import COLLECTIVE_KINDS, Measurement, default_split
from ..spec.plan import Plan
from ..step.inference import decode_of, prefill_of

MIN_ROWS_PER_PARAM = 3
STEP_KINDS_FITTED = ("decode", "prefill", "static")


@dataclass(frozen=True, kw_only=True)
class Predictions:
    """Predicted value per row (serving: TPOT) and serving TTFT (NaN elsewhere); ``problem`` says
    why a row could not be predicted ('' when it was)."""

    value_s: np.ndarray
    ttft_s: np.ndarray
    problem: tuple[str, ...]


def predict_rows(rows: list[Measurement], profile: EfficiencyProfile = IDEAL) -> Predictions:
    """Predict every row with ``profile`` (IDEAL: ideal mode). Rows that cannot be predicted
    (unknown model, plan that does not fit...) get NaN and a reason instead of failing the set."""
    n = len(rows)
    value, ttft = np.full(n, np.nan), np.full(n, np.nan)
    problem = [""] * n
    groups: dict[tuple, list[int]] = defaultdict(list)
    for i, r in enumerate(rows):
        groups[_group(r)].append(i)
    for key, idx in groups.items():
        try:
            v, t = _predict_group(key, [rows[i] for i in idx], profile)
        except LlmeconError as exc:
            for i in idx:
                problem[i] = str(exc)
            continue
        value[idx], ttft[idx] = v, t
    return Predictions(value_s=value, ttft_s=ttft, problem=tuple(problem))


def _group(r: Measurement) -> tuple:
    if r.kind in ("gemm", "elementwise", "copy"):
        return (r.kind, r.accelerator, r.dtype)
    if r.kind in COLLECTIVE_KINDS:
        return (r.kind, r.system, r.participants, r.chips_per_node)
    return (r.kind, r.model, r.system, r.tp, r.ep, r.pp, r.weight_dtype, r.kv_dtype)


def _arr(rows, name, default=0.0):
    return np.array([default if getattr(r, name) is None else getattr(r, name) for r in rows], dtype=float)


def _predict_group(key, rows, profile):
    kind = key[0]
    nan = np.full(len(rows), np.nan)
    if kind in ("gemm", "elementwise", "copy"):
        chip = get_accelerator(key[1])
        if kind == "gemm":
            return gemm_s(profile, chip, m=_arr(rows, "m"), n=_arr(rows, "n"), k=_arr(rows, "k"),
                          dtype=key[2] or "bf16"), nan
        fn = elementwise_s if kind == "elementwise" else copy_s
        return fn(profile, chip, bytes_moved=_arr(rows, "bytes")), nan
    if kind in COLLECTIVE_KINDS:
        return collective_s(profile, get_system(key[1]), kind=kind, message_bytes=_arr(rows, "bytes"),
                            participants=key[2], chips_per_node=key[3]), nan
    _, model, system, tp, ep, pp, wdt, kvdt = key
    dep = Deployment(model=get_model(model), system=get_system(system), plan=Plan(tp=tp, ep=ep, pp=pp),
                     weight_dtype=wdt or None, kv_dtype=kvdt or None, profile=profile)
    b = _arr(rows, "batch")
    if kind == "prefill":
        return np.asarray(prefill_of(dep, batch=b, prompt_tokens=_arr(rows, "prompt_tokens"),
                                      cached_tokens=_arr(rows, "context")).step_s, dtype=float), nan
    if kind == "decode":
        steps = np.maximum(_arr(rows, "output_tokens", 1.0), 1.0)
        return _decode_sum(dep, b, _arr(rows, "context"), steps), nan
    if kind == "static":
        p, o = _arr(rows, "prompt_tokens"), _arr(rows, "output_tokens")
        pf = np.asarray(prefill_of(dep, batch=b, prompt_tokens=p).step_s, dtype=float)
        return pf + _decode_sum(dep, b, p, np.maximum(o - 1, 0)), nan
    if kind == "serving":
        from ..serving.steady_state import steady_state

        ss = steady_state(dep, concurrency=b, prompt_tokens=_arr(rows, "prompt_tokens"),
                          output_tokens=_arr(rows, "output_tokens"))
        return np.asarray(ss.tpot_s, dtype=float), np.asarray(ss.ttft_s, dtype=float)
    raise SpecError(f"kind '{kind}': no predictor in llmecon yet (training steps are checked by "
                    f"tests/test_training_step.py against Megatron-LM)")


def _decode_sum(dep, batch, context, steps):
    """Sum of ``steps`` decode steps at contexts context, context+1, ... (exact: every step is
    evaluated, in one vectorised call per row)."""
    total = np.zeros(len(batch))
    for i, (b, c, s) in enumerate(zip(batch, context, steps)):
        if s > 0:
            total[i] = float(np.sum(decode_of(dep, batch=b, context=c + np.arange(int(s))).step_s))
    return total


# --- error statistics ---------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class ErrorStats:
    """Absolute relative error |pred/meas - 1| over the rows that could be predicted."""

    n: int
    median: float
    p90: float
    below_share: float       # share of rows predicted faster than measured (a lower bound: 1.0)
    unpredicted: int

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


def error_stats(pred, meas) -> ErrorStats:
    pred, meas = np.asarray(pred, dtype=float), np.asarray(meas, dtype=float)
    ok = np.isfinite(pred) & np.isfinite(meas) & (meas > 0)
    err = np.abs(pred[ok] / meas[ok] - 1.0)
    if not err.size:
        return ErrorStats(n=0, median=float("nan"), p90=float("nan"), below_share=float("nan"),
                          unpredicted=int((~ok).sum()))
    return ErrorStats(n=int(err.size), median=float(np.median(err)), p90=float(np.percentile(err, 90)),
                      below_share=float(np.mean(pred[ok] <= meas[ok])), unpredicted=int((~ok).sum()))


def measured(rows: list[Measurement]) -> tuple[np.ndarray, np.ndarray]:
    """(measured value per row — serving: TPOT —, measured TTFT or NaN)."""
    return (np.array([r.value_s() for r in rows], dtype=float),
            np.array([np.nan if r.measured_ttft_s is None else r.measured_ttft_s for r in rows], dtype=float))


# --- fitting ------------------------------------------------------------------------------------

_KERNEL_PARAMS = {  # name: (start, low, high)
    "hbm_fraction": (0.85, 0.05, 1.0), "matmul_fraction": (0.75, 0.05, 1.0), "matmul_m_half": (64.0, 0.0, 1e5),
    "kernel_floor_s": (5e-6, 0.0, 1e-3), "elementwise_fraction": (0.7, 0.05, 1.0),
    "elementwise_floor_s": (3e-6, 0.0, 1e-3),
}
_SERVING_PARAMS = {"iteration_overhead_s": (1e-3, 0.0, 0.1), "prefill_stall_factor": (1.5, 1.0, 20.0),
                   "ttft_prefill_factor": (2.0, 1.0, 50.0)}
_ENGINE_PARAMS = {"step_overhead_s": (1e-3, 0.0, 0.1), "engine_floor_scale": (0.5, 0.01, 1.0), **_SERVING_PARAMS}


def _least_squares(residual, names, table):
    from scipy.optimize import least_squares

    x0 = [table[n][0] for n in names]
    lo = [table[n][1] for n in names]
    hi = [table[n][2] for n in names]
    scale = np.array([max(abs(v), 1e-6) for v in x0])
    res = least_squares(lambda z: residual(dict(zip(names, z * scale))), np.array(x0) / scale,
                        bounds=(np.array(lo) / scale, np.array(hi) / scale), loss="soft_l1", f_scale=0.2)
    # 4 significant digits (the fits are not better than that); values below 1e-12 are zero
    return {n: float(f"{v:.4g}") if abs(v) > 1e-12 else 0.0 for n, v in zip(names, (res.x * scale).tolist())}


def _log_residual(pred, meas):
    r = np.log(np.asarray(pred, dtype=float) / meas)
    return np.where(np.isfinite(r), r, 5.0)


def fit_profile(rows: list[Measurement], *, name: str, accelerators: tuple[str, ...], base: EfficiencyProfile = IDEAL,
                derivation: str = "", use_split: bool = True) -> tuple[EfficiencyProfile, dict]:
    """Fit a profile to ``rows`` (only their ``fit`` split when ``use_split``) stage by stage
    (module docstring). Returns the profile and a report {stage: {rows, params, skipped}}."""
    fit_rows = [r for r in rows if not use_split or default_split(r) == "fit"]
    prof = dataclasses.replace(base, name=name, accelerators=accelerators, derivation=derivation, fit={})
    report: dict = {}

    kern = [r for r in fit_rows if r.kind in ("gemm", "copy", "elementwise")]
    names = [n for n in _KERNEL_PARAMS if _informed(n, kern)]
    prof = _stage(report, "kernels", kern, names, prof, _KERNEL_PARAMS)

    for tier in ("scale_up", "scale_out"):
        coll = [r for r in fit_rows if r.kind in COLLECTIVE_KINDS
                and (r.participants <= r.chips_per_node) == (tier == "scale_up")]
        prof = _collective_stage(report, tier, coll, prof)

    engine = [r for r in fit_rows if r.kind in STEP_KINDS_FITTED + ("serving",)]
    names = [n for n in _ENGINE_PARAMS if n not in _SERVING_PARAMS or any(r.kind == "serving" for r in engine)]
    prof = _stage(report, "engine", engine, names, prof, _ENGINE_PARAMS)

    if not any(v.get("params") for v in report.values()):
        counts = {k: v["rows"] for k, v in report.items()}
        raise SpecError(f"calibrate: too few measurements to fit anything (rows per stage: {counts}; each "
                        f"parameter needs {MIN_ROWS_PER_PARAM} rows); measure more shapes or steps")
    return prof, report


def _informed(name: str, rows) -> bool:
    kinds = {r.kind for r in rows}
    if name.startswith("elementwise"):
        return "elementwise" in kinds
    if name == "hbm_fraction":
        return bool(kinds & {"gemm", "copy"})
    return "gemm" in kinds


def _stage(report, stage, rows, names, prof, table):
    report[stage] = {"rows": len(rows), "params": {}, "skipped": ""}
    if not names or len(rows) < MIN_ROWS_PER_PARAM * len(names):
        report[stage]["skipped"] = (f"{len(rows)} rows < {MIN_ROWS_PER_PARAM} per parameter x {len(names)}"
                                    if names else "no rows inform it")
        return prof
    meas, meas_ttft = measured(rows)
    has_ttft = np.isfinite(meas_ttft)

    def residual(params):
        p = dataclasses.replace(prof, **params)
        pr = predict_rows(rows, p)
        res = _log_residual(pr.value_s, meas)
        if has_ttft.any():
            res = np.concatenate([res, _log_residual(pr.ttft_s[has_ttft], meas_ttft[has_ttft])])
        return res

    params = _least_squares(residual, names, table)
    report[stage]["params"] = params
    return dataclasses.replace(prof, **params)


_LINK_PARAMS = {"op_overhead_s": (5e-6, 0.0, 1e-3), "p2p_overhead_s": (5e-6, 0.0, 1e-3),
                "step_latency_s": (2e-6, 0.0, 1e-3), "bandwidth_fraction": (0.8, 0.01, 1.0)}


def _collective_stage(report, tier, rows, prof):
    kinds = {r.kind for r in rows}
    names = [n for n in _LINK_PARAMS if n != "p2p_overhead_s" or {"send_recv", "all_reduce"} <= kinds]
    report[tier] = {"rows": len(rows), "params": {}, "skipped": ""}
    if len(rows) < MIN_ROWS_PER_PARAM * len(names):
        report[tier]["skipped"] = f"{len(rows)} rows < {MIN_ROWS_PER_PARAM} per parameter x {len(names)}"
        return prof
    meas, _ = measured(rows)

    def with_link(params):
        return dataclasses.replace(prof, **{tier: LinkEfficiency(**params)})

    params = _least_squares(lambda ps: _log_residual(predict_rows(rows, with_link(ps)).value_s, meas), names,
                            _LINK_PARAMS)
    report[tier]["params"] = params
    return with_link(params)
