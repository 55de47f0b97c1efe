"""What every benchmark reports about the machine it ran on, and pinning to one core."""

from __future__ import annotations

import os
import platform
from pathlib import Path


def pin_one_core() -> str:
    """Pin this process (and its children) to its first allowed CPU; say what was done."""
    try:
        cpus = sorted(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {cpus[0]})
    except (AttributeError, OSError) as exc:
        return f"not pinned ({exc})"
    return f"pinned to cpu {cpus[0]} (of {len(cpus)} available)"


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"
