"""Fit alpha (latency) and beta (bandwidth) of NCCL collectives per network tier, and check the
catalogue's links against the same measurements (llmecon.fidelity.collective_fit does the work).

Data: vidur's NCCL profiling (``../shared/validation/vidur/profiling/network/<cluster>/``),
``time_stats.<op>.median`` in ms against ``size`` in bytes; a row with ``devices_per_node <
num_workers`` crosses nodes (InfiniBand), otherwise it stays on NVLink.

Prints three tables:
1. per (cluster, op, workers, per-node) group, alpha and beta implied by each algorithm's formula
   (relative-error least squares; within a group all algorithms share one line, so one error
   pair per group). "!" marks a beta above the catalogued link peak of that tier: not physical.
2. per cluster and size band, one joint fit across the node's participant counts per all-reduce
   algorithm, its median relative error, the best algorithm, and the best feasible one: run by the
   catalogued NVLink (in_switch only where it has NVLink SHARP) with beta within its peak ("!"
   marks a beta above the peak).
3. the catalogue's prediction (links of hgx-h100 / hgx-a100) of every row with
   ``all_reduce_s(algorithm="auto")`` and with ``"best"`` (ideal mode's): median / p90 relative
   error and the share of rows predicted below the measurement (a lower bound should be below).
4. the same ideal check on aiconfigurator's NCCL and framework collective tables
   (``../shared/validation/aiconfigurator/kernels``, when present), per system, source and op:
   rows, rows above their measurement (should be none) and the largest ideal / measured.

Table 1's alphas are NCCL's fixed cost spread over the algorithm's steps; the link latencies in
``src/llmecon/catalog/systems.toml`` are per-operation floors below every row of tables 3 and 4
(their header says how they were chosen; docs/assumptions.md, "Collectives").
Run from the repository root:  PYTHONPATH=src python benchmarks/fit_link_latency.py [path/to/network]
"""

from __future__ import annotations

import sys
from pathlib import Path

from llmecon.catalog.hardware import get_system
from llmecon.fidelity.collective_fit import (AIC_SYSTEMS, CLUSTER_SYSTEMS, algorithm_by_size, check_catalogue,
                                             fit_groups, load_aiconfigurator_comm, load_all, predict_rows)
from llmecon.spec.efficiency import IDEAL
from llmecon.errors import LlmeconError

DEFAULT = Path(__file__).resolve().parents[2] / "shared" / "validation" / "vidur" / "profiling" / "network"
AIC = Path(__file__).resolve().parents[2] / "shared" / "validation" / "aiconfigurator" / "kernels"


def _size(x: float) -> str:
    if x == float("inf"):
        return "inf"
    for unit, scale in (("MiB", 1024 ** 2), ("KiB", 1024)):
        if x >= scale:
            return f"{x / scale:g} {unit}"
    return f"{x:g} B"


def main(argv: list[str]) -> int:
    root = Path(argv[1]) if len(argv) > 1 else DEFAULT
    if not root.is_dir():
        print(f"fit_link_latency: no vidur network profiling at {root}; it lives in ../shared "
              "(validation/vidur/profiling/network), absent on a fresh clone. Pass its path as argument.",
              file=sys.stderr)
        return 2
    try:
        data = load_all(root)
    except LlmeconError as exc:
        print(f"fit_link_latency: {exc}", file=sys.stderr)
        return 2
    systems = {cluster: get_system(name) for cluster, name in CLUSTER_SYSTEMS.items()}

    print("# 1. alpha-beta per group (relative-error least squares; alpha us / beta GB/s per direction)")
    fits = fit_groups(data)
    keys = sorted({(f.cluster, f.op, f.participants, f.devices_per_node) for f in fits},
                  key=lambda k: (list(CLUSTER_SYSTEMS).index(k[0]) if k[0] in CLUSTER_SYSTEMS else 9, k))
    for key in keys:
        group = [f for f in fits if (f.cluster, f.op, f.participants, f.devices_per_node) == key]
        first = group[0]
        system = systems.get(first.cluster)
        peak = None
        if system is not None and not (first.op == "all_reduce" and first.tier == "scale_out"):
            peak = getattr(system, first.tier).bandwidth_bytes_per_s
        cells = "  ".join(f"{f.algorithm} {f.alpha_s * 1e6:6.2f}/{f.bandwidth_bytes_per_s / 1e9:7.1f}"
                          f"{'!' if peak and f.bandwidth_bytes_per_s > peak else ' '}" for f in group)
        print(f"  {first.cluster:20s} {first.op:10s} p={first.participants:2d} per_node={first.devices_per_node} "
              f"{first.tier:9s} n={first.rows:4d} med={first.median_rel_error:6.1%} p90={first.p90_rel_error:6.1%}  "
              f"{cells}")

    print("\n# 2. all-reduce inside a node, joint fit across participant counts per size band "
          "(median rel. error; alpha us / beta GB/s)")
    links = {cluster: s.scale_up for cluster, s in systems.items()}
    for band in algorithm_by_size(data, links=links):
        peak = band.peak_bytes_per_s
        cells = "  ".join(f"{a} {band.median_rel_error[a]:5.1%} ({band.alpha_s[a] * 1e6:.1f}/"
                          f"{band.bandwidth_bytes_per_s[a] / 1e9:.0f}"
                          f"{'!' if peak and band.bandwidth_bytes_per_s[a] > peak else ''})"
                          for a in band.median_rel_error)
        print(f"  {band.cluster:20s} [{_size(band.low_bytes):>7s}, {_size(band.high_bytes):>7s}) "
              f"p={','.join(map(str, band.participants))} n={band.rows:4d}  best={band.best:9s} "
              f"feasible={band.best_feasible or '-':9s} {cells}")

    print("\n# 3. catalogue links vs measurement: median / p90 |pred-meas|/meas, share predicted below")
    for algorithm in ("auto", "best"):
        for row in check_catalogue(data, systems, algorithm=algorithm):
            who = "all rows" if row.participants is None else f"p={row.participants:2d} per_node={row.devices_per_node}"
            print(f"  {algorithm:4s} {row.cluster:9s}->{row.system:9s} {row.op:10s} {who:18s} {row.tier:9s} "
                  f"n={row.rows:4d} med={row.median_rel_error:6.1%} p90={row.p90_rel_error:6.1%} "
                  f"below={row.fraction_below:6.1%}")

    if AIC.is_dir():
        print("\n# 4. ideal (algorithm 'best', per-operation floor) vs aiconfigurator rows: rows, rows whose "
              "ideal is above the measurement, largest ideal/measured")
        for chip, name in AIC_SYSTEMS.items():
            system = get_system(name)
            cells: dict[tuple[str, str], list] = {}
            for m in load_aiconfigurator_comm(AIC, chip):
                ratio = predict_rows(m, system, algorithm=IDEAL.all_reduce_algorithm) / m.time_s
                c = cells.setdefault((m.cluster.split()[1].split("/")[0], m.op), [0, 0, 0.0])
                c[0], c[1], c[2] = c[0] + ratio.size, c[1] + int((ratio > 1).sum()), max(c[2], float(ratio.max()))
            for (source, op), (n, above, worst) in sorted(cells.items()):
                print(f"  {chip:9s}->{name:12s} {source:7s} {op:15s} n={n:4d} above={above:3d} max={worst:.3f}")
    else:
        print(f"\n# 4. skipped: no aiconfigurator tables at {AIC}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
