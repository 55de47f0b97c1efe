"""The roofline: a step takes at least as long as its compute, its memory traffic and its
communication, each at peak (Williams, Waterman & Patterson 2009, "Roofline"; SPEC A1).

``lower_s`` = max of the three (perfect overlap, the lecture's step time); ``upper_s`` = their sum
(no overlap). Calibrated mode (``calibrated``) adds ``overhead_s`` (kernel floors, framework) and
sets ``serial_s``, its estimate of the step (kernel classes one after another); ``step_s`` is
``serial_s`` when set, else ``lower_s``. Works on floats and numpy arrays alike.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

BOUNDS = ("compute", "memory", "comm", "overhead")


def bound_index(compute_s, memory_s, comm_s, overhead_s=0.0):
    """Index into ``BOUNDS`` of the term that binds: the largest of compute, memory, communication and
    overhead (kernel floors and fixed overheads: 0 in ideal mode), ties to the earlier one. The one rule
    every view labels a step with (``bound_label``; the planner, frontier, sweep and ``step`` alike)."""
    return np.argmax(np.stack(np.broadcast_arrays(compute_s, memory_s, comm_s, overhead_s)), axis=0)


def bound_label(compute_s, memory_s, comm_s, overhead_s=0.0):
    """``bound_index`` as its label, 'compute', 'memory', 'comm' or 'overhead' (an array of labels for
    array inputs)."""
    labels = np.asarray(BOUNDS)[bound_index(compute_s, memory_s, comm_s, overhead_s)]
    return str(labels) if labels.ndim == 0 else labels


@dataclass(frozen=True, kw_only=True)
class StepTime:
    """Seconds of compute, memory traffic and communication on the critical chip."""

    compute_s: object
    memory_s: object
    comm_s: object = 0.0
    overhead_s: object = 0.0
    serial_s: object = None

    @property
    def lower_s(self):
        """Perfect overlap: max(compute, memory, comm) (+ overhead, 0 in ideal mode)."""
        return np.add(np.maximum(np.maximum(self.compute_s, self.memory_s), self.comm_s), self.overhead_s)

    @property
    def upper_s(self):
        """No overlap: compute + memory + comm + overhead."""
        return np.add(np.add(np.add(self.compute_s, self.memory_s), self.comm_s), self.overhead_s)

    @property
    def step_s(self):
        """The step estimate: ``serial_s`` (calibrated) or ``lower_s`` (ideal roofline)."""
        return self.lower_s if self.serial_s is None else self.serial_s

    @property
    def bound(self):
        """Which term is largest: 'compute', 'memory', 'comm' or 'overhead' (``bound_label``)."""
        return bound_label(self.compute_s, self.memory_s, self.comm_s, self.overhead_s)


def step_time(*, flops, bytes_moved, peak_flops_per_s, bandwidth_bytes_per_s, comm_s=0.0) -> StepTime:
    """Roofline of ``flops`` at ``peak_flops_per_s`` and ``bytes_moved`` at ``bandwidth_bytes_per_s``.

    Example (lecture, SPEC A1): DeepSeek-V3 fp8 on 64 GB200 at batch 2400 reading all weights:
    compute 2400·2·37e9/(64·5e15) = 0.555 ms, weights 671e9/(64·8e12) = 1.31 ms -> memory bound.
    """
    return StepTime(compute_s=np.divide(flops, peak_flops_per_s),
                    memory_s=np.divide(bytes_moved, bandwidth_bytes_per_s), comm_s=comm_s)
