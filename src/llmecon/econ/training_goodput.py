"""Goodput of a long training run: the share of wall time that advances training, given failures,
restarts and checkpoints (first-order model of Young 1974, "A first order approximation to the
optimum checkpoint interval", CACM 17(9); Daly 2006, FGCS 22(3)).

A job on N GPUs fails every M = MTBF_gpu / N seconds (failures independent, exponential). It writes a
checkpoint every τ seconds of work, which stalls training δ seconds; each failure loses on average τ/2
of work since the last checkpoint plus a restart of R seconds. Wasted time per second of wall time:

    waste = δ/τ + (τ/2 + R)/M,    goodput = 1 − waste,

minimised at Young's interval τ* = sqrt(2·δ·M) (used unless τ is given). Wall time = ideal / goodput.

Default MTBF per GPU: Llama 3 (Dubey et al. 2024, arXiv:2407.21783 §3.3.4): 419 unexpected
interruptions in a 54-day snapshot of 16,384 H100 GPUs: 54·24·16384/419 = 50,677 GPU-hours per
interruption (every cause, GPU or not, charged to the GPUs). Restart and checkpoint costs have no
published default that holds across frameworks and storage: they are inputs, and goodput is only
computed when they are given. Omitted: failures during restart or checkpoint, planned
interruptions (47 in the same snapshot), slow ranks (stragglers), second-order terms of Daly's model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..errors import SpecError, require_number

LLAMA3_MTBF_GPU_HOURS = 54 * 24 * 16384 / 419  # 50,677 GPU-hours (Llama 3 paper §3.3.4)


@dataclass(frozen=True, kw_only=True)
class Goodput:
    job_mtbf_s: float        # M = MTBF per GPU / GPUs
    checkpoint_interval_s: float
    checkpoint_s: float
    restart_s: float
    goodput: float           # share of wall time that trains

    @property
    def waste(self) -> float:
        return 1.0 - self.goodput


def goodput(*, gpus: int, checkpoint_s: float, restart_s: float, mtbf_gpu_hours: float = LLAMA3_MTBF_GPU_HOURS,
            checkpoint_interval_s: float | None = None) -> Goodput:
    """Goodput of a job (module docstring). 16,384 GPUs at the Llama 3 MTBF fail every 3.09 h."""
    n = require_number("gpus", gpus, minimum=0, exclusive=True)
    mtbf = require_number("mtbf_gpu_hours", mtbf_gpu_hours, minimum=0, exclusive=True)
    delta = require_number("checkpoint_s", checkpoint_s, minimum=0)
    r = require_number("restart_s", restart_s, minimum=0)
    m = mtbf * 3600.0 / n
    if checkpoint_interval_s is None:
        tau = math.sqrt(2.0 * delta * m) if delta > 0 else 0.0
    else:
        tau = require_number("checkpoint_interval_s", checkpoint_interval_s, minimum=0, exclusive=True)
    waste = (delta / tau if tau > 0 else 0.0) + (tau / 2.0 + r) / m
    if waste >= 1.0:
        raise SpecError(f"the job fails every {m / 3600:.3g} h, sooner than it can checkpoint and restart "
                        f"(waste {waste:.2f} of wall time)", field="restart_s", value=restart_s,
                        fix="shorten {restart_s} or {checkpoint_s}, raise {mtbf_gpu_hours}, or use fewer {gpus}")
    return Goodput(job_mtbf_s=m, checkpoint_interval_s=tau, checkpoint_s=delta, restart_s=r, goodput=1.0 - waste)


def goodput_inputs(*, gpus: int, checkpoint_s: float | None, restart_s: float | None,
                   mtbf_gpu_hours: float | None = None, checkpoint_interval_s: float | None = None) -> Goodput | None:
    """The goodput a front-end's optional inputs ask for: None when neither checkpoint nor restart cost is
    given; both are needed together. The MTBF and interval are checked even when goodput is not computed
    (a bad value is never ignored); the MTBF defaults to Llama 3's."""
    for name, v in (("mtbf_gpu_hours", mtbf_gpu_hours), ("checkpoint_interval_s", checkpoint_interval_s)):
        if v is not None:
            require_number(name, v, minimum=0, exclusive=True)
    if (checkpoint_s is None) != (restart_s is None):
        missing = "restart_s" if restart_s is None else "checkpoint_s"
        raise SpecError("goodput needs both {checkpoint_s} and {restart_s}", field=missing,
                        fix=f"give {{{missing}}} too, or neither")
    if checkpoint_s is None:
        return None
    return goodput(gpus=gpus, checkpoint_s=checkpoint_s, restart_s=restart_s,
                   mtbf_gpu_hours=LLAMA3_MTBF_GPU_HOURS if mtbf_gpu_hours is None else mtbf_gpu_hours,
                   checkpoint_interval_s=checkpoint_interval_s)
