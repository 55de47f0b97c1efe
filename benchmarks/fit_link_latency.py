"""Fit alpha (latency) and beta (bandwidth) of NCCL send/recv per network tier.

Data: vidur's NCCL profiling (``../shared/validation/vidur/profiling/network/<cluster>/``),
``time_stats.<op>.median`` in ms against ``size`` in bytes. A row with
``devices_per_node < num_workers`` crosses nodes (InfiniBand); otherwise it stays on NVLink.

Model: ``t = alpha + size / bandwidth``. Timings span ~5 us to ~9 ms, so ordinary least squares
is decided by the large messages and leaves alpha to noise (it goes negative on one set); we
minimise the *relative* error instead (rows weighted by 1/t), which weights every decade of size
alike. The plain fit and the smallest-message time are printed beside it as cross-checks.
The latencies in ``src/llmecon/catalog/systems.toml`` are the relative-error fits printed here.

Run from the repository root:  python benchmarks/fit_link_latency.py [path/to/network]
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import numpy as np

DEFAULT = Path(__file__).resolve().parents[2] / "shared" / "validation" / "vidur" / "profiling" / "network"
CLUSTERS = ("h100_dgx", "a100_dgx", "a100_pairwise_nvlink")


def fit(size_bytes: np.ndarray, time_s: np.ndarray) -> tuple[float, float, float, float]:
    """Return (alpha_s, bandwidth_B_per_s) of the relative-error fit, then of the plain fit."""
    design = np.column_stack([np.ones_like(size_bytes), size_bytes])
    w = 1.0 / time_s
    (a_rel, b_rel), *_ = np.linalg.lstsq(design * w[:, None], time_s * w, rcond=None)
    (a_ols, b_ols), *_ = np.linalg.lstsq(design, time_s, rcond=None)
    return a_rel, 1.0 / b_rel, a_ols, 1.0 / b_ols


def groups(path: Path, op: str):
    """Yield (num_workers, devices_per_node, sizes, median times in s) per configuration."""
    rows = list(csv.DictReader(path.open()))
    keys = sorted({(int(r["num_workers"]), int(r["devices_per_node"])) for r in rows})
    for workers, per_node in keys:
        sel = [r for r in rows if int(r["num_workers"]) == workers and int(r["devices_per_node"]) == per_node]
        size = np.array([float(r["size"]) for r in sel])
        time = np.array([float(r[f"time_stats.{op}.median"]) for r in sel]) * 1e-3
        order = np.argsort(size)
        yield workers, per_node, size[order], time[order]


def main(argv: list[str]) -> int:
    root = Path(argv[1]) if len(argv) > 1 else DEFAULT
    if not root.is_dir():
        print(f"fit_link_latency: no vidur network profiling at {root}; it lives in ../shared "
              "(validation/vidur/profiling/network), absent on a fresh clone. Pass its path as argument.",
              file=sys.stderr)
        return 2
    for cluster in CLUSTERS:
        for op in ("send_recv", "all_reduce"):
            path = root / cluster / f"{op}.csv"
            if not path.exists():
                print(f"{path}: missing, skipped")
                continue
            print(f"# {path}")
            for workers, per_node, size, time in groups(path, op):
                tier = "IB (crosses nodes)" if per_node < workers else "NVLink (one node)"
                a_rel, bw_rel, a_ols, bw_ols = fit(size, time)
                small = np.median(time[size <= 64 * 1024]) * 1e6
                print(f"  {op:10s} workers={workers:2d} per_node={per_node} {tier:19s} "
                      f"alpha={a_rel * 1e6:6.2f} us  beta={bw_rel / 1e9:7.1f} GB/s  "
                      f"[plain LSQ: alpha={a_ols * 1e6:7.2f} us beta={bw_ols / 1e9:7.1f} GB/s; "
                      f"median t(<=64 KiB)={small:5.1f} us; n={len(size)}]")
    print("beta of all_reduce is the algorithm bandwidth size/t (no ring factor applied).")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
