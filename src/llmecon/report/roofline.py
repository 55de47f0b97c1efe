"""The roofline chart's data for one deployment: the chip's roof (dense peak in the compute
dtype, HBM bandwidth, ridge point) and where each decode batch sits under it.

Per chip, from the same decode step the calculator uses (``Deployment.decode``): arithmetic
intensity = FLOPs / HBM bytes moved (weights + KV) and achieved FLOP/s = FLOPs / step time / chips.
Communication and kernel overheads do not move a point along the intensity axis; they lower it
(a point below the roof is bound by something other than compute or HBM alone). Williams,
Waterman & Patterson 2009, "Roofline: an insightful visual performance model".
"""

from __future__ import annotations

import numpy as np

from ..econ.batching import BatchCurve
from ..spec.deployment import Deployment
from ..step.inference import StepResult
from ..units import json_num


def _points(step: StepResult, batch: np.ndarray, chips: int) -> list[dict]:
    shape = batch.shape
    flops = np.broadcast_to(np.asarray(step.flops, dtype=float), shape)
    moved = np.broadcast_to(np.asarray(step.weight_bytes, dtype=float) + np.asarray(step.kv_bytes, dtype=float), shape)
    step_s = np.broadcast_to(np.asarray(step.step_s, dtype=float), shape)
    bound = np.broadcast_to(np.asarray(step.bound), shape)
    return [{"batch": json_num(b), "intensity_flops_per_byte": json_num(f / m),
             "achieved_flops_per_s": json_num(f / t / chips), "bound": str(bd)}
            for b, f, m, t, bd in zip(batch, flops, moved, step_s, bound) if m > 0 and t > 0]


def roofline_dict(curve: BatchCurve, dep: Deployment, *, at: StepResult | None = None) -> dict:
    """Roof and operating points (one per batch of ``curve``), per chip, SI units; with ``at`` (a
    decode step at one batch), that step's point as ``operating_point``."""
    a = dep.system.accelerator
    run = curve.step.compute_dtype
    out = {
        "accelerator": a.name, "compute_dtype": run, "peak_flops_per_s": a.peak(run),
        "hbm_bandwidth_bytes_per_s": a.hbm_bandwidth_bytes_per_s, "ridge_flops_per_byte": a.flops_per_byte(run),
        "points": _points(curve.step, curve.batch, dep.plan.chips),
    }
    if at is not None:
        point = _points(at, np.atleast_1d(np.asarray(at.batch, dtype=float)), dep.plan.chips)
        out["operating_point"] = point[0] if point else None
    return out
