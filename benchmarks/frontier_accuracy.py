"""Frontier accuracy before/after (issue 37): ``fidelity.frontier_check`` over NVIDIA's silicon rows in four
settings (view decode + any layout = the frontier as it was; view whole + engine layouts = now), each with the
shipped engine terms (in sample) and kernel-only terms (out of sample). Prints one markdown table per setting
and the chip order. Run: PYTHONPATH=src python benchmarks/frontier_accuracy.py [--quick] (about 10 min of CPU)."""

from __future__ import annotations

import sys
import time

from llmecon.fidelity.frontier_check import frontier_validation

SETTINGS = (("decode", "any"), ("whole", "engine"))


def main() -> None:
    terms_list = ("kernel",) if "--quick" in sys.argv else ("shipped", "kernel")
    for terms in terms_list:
        for view, layouts in SETTINGS:
            t0 = time.time()
            r = frontier_validation(terms=terms, view=view, layouts=layouts)
            print(f"\n### view {view}, layouts {layouts}, engine terms {terms} ({time.time() - t0:.0f} s)\n")
            print("| chip | points | median predicted / measured envelope | reachable |")
            print("|---|---:|---:|---:|")
            for k, v in [*r["per_chip"].items(), ("**all**", r["all"]["all"])]:
                print(f"| {k} | {v['points']} | {v['median_ratio']:.2f} | {v['reachable']:.0%} |")
            print("\nchip order at 50 tok/s/user (Kendall tau): " + "; ".join(
                f"{o['model'].split('/')[-1]} {o['weight_dtype']} {o['workload']} ({len(o['chips'])} chips) "
                f"{o['tau']:.2f}" for o in r["order"]))
            sys.stdout.flush()


if __name__ == "__main__":
    main()
