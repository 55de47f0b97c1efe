"""Frontier accuracy before/after (issue 37): ``fidelity.frontier_check`` over NVIDIA's silicon rows.

Settings: the frontier as it was (view decode, any layout) and as it is now (view whole, engine layouts), each
with engine terms 'model' (leave one model out), 'kernel' (kernel tables only) and 'shipped' (in sample), with
batches capped at the measured concurrency (and, for the 'now' setting, uncapped). Prints one markdown table per
setting and the chip order. Run: PYTHONPATH=src python benchmarks/frontier_accuracy.py [--terms kernel,...]
(each setting 1-2 min of CPU; 'model' adds about 2 min of fitting once per process)."""

from __future__ import annotations

import sys
import time

from llmecon.fidelity.frontier_check import frontier_validation

SETTINGS = (("decode", "any", True), ("whole", "engine", True), ("whole", "engine", False))


def main() -> None:
    terms_list = ("model", "kernel", "shipped")
    if "--terms" in sys.argv:
        terms_list = tuple(sys.argv[sys.argv.index("--terms") + 1].split(","))
    for terms in terms_list:
        for view, layouts, cap in SETTINGS:
            t0 = time.time()
            r = frontier_validation(terms=terms, view=view, layouts=layouts, cap=cap)
            print(f"\n### view {view}, layouts {layouts}, engine terms {terms}, batches "
                  f"{'capped at the measured concurrency' if cap else 'uncapped'} ({time.time() - t0:.0f} s)\n")
            print("| chip | points | median predicted / measured envelope | reachable |")
            print("|---|---:|---:|---:|")
            for k, v in [*r["per_chip"].items(), ("**all**", r["all"]["all"])]:
                print(f"| {k} | {v['points']} | {v['median_ratio']:.2f} | {v['reachable']:.0%} |")
            good = sum(o["tau"] >= 0.6 for o in r["order"])
            print(f"\nchip order at 50 tok/s/user: tau >= 0.6 in {good} of {len(r['order'])} "
                  "(model, format, workload): "
                  + "; ".join(f"{o['model'].split('/')[-1]} {o['weight_dtype']} {o['workload']} ({len(o['chips'])} "
                              f"chips) {o['tau']:.2f}" for o in r["order"]))
            sys.stdout.flush()


if __name__ == "__main__":
    main()
