"""Frontier accuracy (issue 37): ``fidelity.frontier_check`` over NVIDIA's silicon rows, one table per setting.

Settings (view, layouts, engine terms): the frontier of 2026-11-28 (whole, engine layouts, kernel terms), the
serving each group ran (view 'measured'), the low-batch floor fitted leaving the model out (terms 'floor',
``fidelity.floor_fit``), leave-one-model-out engine terms ('model'), and diagnostics (decode-only view, the
layouts each benchmark ran, ideal mode's bound), all with batches capped at the measured concurrency; then the
MTP runs (``silicon.SPECULATIVE_RUNS``) against the frontier without and with speculation (k <= 1, k <= 3), and
AMD MI300X's batch-latency runs (``fidelity.frontier_amd``).
Prints markdown: per chip, per band of tokens/s per user, the chip order per workload.
Run: PYTHONPATH=src python benchmarks/frontier_accuracy.py [--quick | --terms kernel,floor,ideal] (--quick: kernel
settings only; the full run is a few minutes of CPU on an idle machine, 'floor' adds about one minute of fitting,
'model' many: it refits the engine terms fold by fold)."""

from __future__ import annotations

import sys
import time

import numpy as np

from llmecon.fidelity.frontier_amd import amd_validation
from llmecon.fidelity.frontier_check import frontier_validation, groups_of, measured_points

SETTINGS = (  # (label, view, layouts, terms)
    ("2026-11-28: whole, engine layouts", "whole", "engine", "kernel"),
    ("serving measured, engine layouts", "measured", "engine", "kernel"),
    ("serving measured, floor fitted (LOMO)", "measured", "engine", "floor"),
    ("serving measured, engine terms LOMO", "measured", "engine", "model"),
    ("whole, floor fitted (LOMO)", "whole", "engine", "floor"),
    ("diagnostic: decode only", "decode", "engine", "kernel"),
    ("diagnostic: serving measured, layouts measured", "measured", "measured", "kernel"),
    ("bound: ideal mode, serving measured", "measured", "engine", "ideal"),
)
BANDS = (("top (u > 0.7 max)", 0.7, 1.01), ("mid", 0.3, 0.7), ("bottom (u <= 0.3 max)", 0.0, 0.3))


def bands(r: dict, groups: dict) -> list[str]:
    """Median ratio and reachable share per band of the measured tokens/s per user over the group's maximum."""
    out = {}
    for s in r["groups"]:
        p, o = (int(x) for x in s.workload.split("/"))
        pts = groups[(s.chip, s.model, "" if s.weight_dtype == "model's" else s.weight_dtype, p, o)]
        rel = np.array([q.per_user for q in pts]) / s.max_per_user_measured
        for name, lo, hi in BANDS:
            sel = (rel > lo) & (rel <= hi)
            out.setdefault(name, []).append((np.array(s.ratios)[sel], np.array(s.reached)[sel]))
    lines = []
    for name, parts in out.items():
        ra = np.concatenate([a for a, _ in parts])
        rc = np.concatenate([b for _, b in parts])
        ok = np.isfinite(ra)
        lines.append(f"{name}: {ra.size} points, median {np.median(ra[ok]):.2f}, reachable {rc.mean():.0%}")
    return lines


def table(r: dict) -> None:
    print("| chip | points | median predicted / measured envelope | reachable |")
    print("|---|---:|---:|---:|")
    for k, v in [*r["per_chip"].items(), ("**all**", r["all"]["all"])]:
        print(f"| {k} | {v['points']} | {v['median_ratio']:.2f} | {v['reachable']:.0%} |")


def order(r: dict) -> None:
    good = sum(o["tau"] >= 0.6 for o in r["order"])
    print(f"\nchip order at 50 tok/s/user: tau >= 0.6 in {good} of {len(r['order'])} (model, format, workload): "
          + "; ".join(f"{o['model'].split('/')[-1]} {o['weight_dtype']} {o['workload']} ({','.join(o['chips'])}) "
                      f"{o['tau']:.2f}" for o in r["order"]))


def mtp_and_amd() -> None:
    print("\n### MTP runs (B200, DeepSeek-R1, TensorRT-LLM 1.2.0rc6.post3), view measured, kernel terms\n")
    print("| frontier | points | median predicted / measured envelope | reachable | top tok/s/user meas / pred |")
    print("|---|---:|---:|---:|---|")
    for mtp in (0, 1, 3):
        r = frontier_validation(terms="kernel", view="measured", speculative=True, mtp=mtp)
        tops = ", ".join(f"{s.workload} {s.weight_dtype} {s.max_per_user_measured:.0f}/{s.max_per_user_predicted:.0f}"
                         for s in r["groups"])
        a = r["all"]["all"]
        print(f"| {'without speculation' if not mtp else f'with MTP k <= {mtp}'} | {a['points']} | "
              f"{a['median_ratio']:.2f} | {a['reachable']:.0%} | {tops} |")
    print("\n### AMD MI300X (vLLM, TP8, batch-latency runs; decode view, measured layout and batches; kernel: "
          "aiter kernel terms only, out of sample; shipped: mi300x/vllm engine terms fitted on 32 of these rows)\n")
    print("| terms | model | P/O | points | median predicted / measured envelope | reachable "
          "| top tok/s/user meas / pred |")
    print("|---|---|---|---:|---:|---:|---|")
    for terms in ("kernel", "shipped"):
        r = amd_validation(terms=terms)
        for s in r["groups"]:
            print(f"| {terms} | {s.model.split('/')[-1]} | {s.workload} | {s.points} | {s.median_ratio:.2f} | "
                  f"{s.reachable:.0%} | {s.max_per_user_measured:.0f} / {s.max_per_user_predicted:.0f} |")
        a = r["all"]["all"]
        print(f"| {terms} | **all** | | {a['points']} | {a['median_ratio']:.2f} | {a['reachable']:.0%} | |")


def main() -> None:
    keep = ("kernel",) if "--quick" in sys.argv else tuple({t for *_, t in SETTINGS})
    if "--terms" in sys.argv:
        keep = tuple(sys.argv[sys.argv.index("--terms") + 1].split(","))
    groups = groups_of(measured_points())
    for label, view, layouts, terms in SETTINGS:
        if terms not in keep:
            continue
        t0 = time.time()
        r = frontier_validation(terms=terms, view=view, layouts=layouts)
        print(f"\n### {label} (view {view}, layouts {layouts}, terms {terms}; {time.time() - t0:.0f} s)\n")
        table(r)
        print("\nby band of tokens/s per user: " + "; ".join(bands(r, groups)))
        order(r)
        sys.stdout.flush()
    mtp_and_amd()


if __name__ == "__main__":
    main()
