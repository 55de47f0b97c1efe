"""What every benchmark reports about the machine it ran on, and pinning to one core."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

_BANDWIDTH = """
import time
import numpy as np
a = np.ones(1 << 25)
b = np.empty_like(a)
best = float("inf")
for _ in range(5):
    t0 = time.perf_counter()
    np.copyto(b, a)
    best = min(best, time.perf_counter() - t0)
print(2 * a.nbytes / best)
"""


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


def memory_bandwidth_bytes_per_s() -> float:
    """One core's copy bandwidth (read + write bytes per second), best of 5 copies of 256 MB, in a child
    process (a child's ru_maxrss starts at its parent's resident size at the fork: this one stays small)."""
    return float(subprocess.run([sys.executable, "-c", _BANDWIDTH], capture_output=True, text=True,
                                check=True).stdout)


def source_tree(commit: str, given: str | None) -> Path:
    """``given``, else commit ``commit`` of this repository extracted (``git archive``) into a temporary folder:
    a baseline tree to time beside this one in the same run."""
    if given:
        return Path(given)
    folder = Path(tempfile.mkdtemp(prefix=f"llmecon-{commit}-"))
    archive = subprocess.run(["git", "-C", str(REPO), "archive", commit], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    return folder
