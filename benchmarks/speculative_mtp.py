"""Speculative decoding as it runs: the MTP rows of NVIDIA's silicon set priced before and after the decaying
acceptance default (issue 34 item 3), and the decay's out-of-sample score.

    PYTHONPATH=src python benchmarks/speculative_mtp.py [path/to/silicon_dev.csv]

Rows: ``read_silicon(..., speculative=True)`` (the DeepSeek-R1 TensorRT-LLM 1.2.0rc6.post3 rows on B200 that
ran MTP; k = 3 assumed, ``fidelity.silicon.SPECULATIVE_DRAFT_TOKENS``), each priced by ``predict`` as a serving
case with its (chip, engine) profile, which was fitted without them. Variants: k = 3 with a = 0.85 at every
position (what a user had to write before: the default covered position 1 only); k = 3 with the default
(0.85, then x ``MTP_DECAY`` per position); k = 1 at 0.85 for reference. Then the decay δ fitted leave one
(prompt, output) shape out: a grid of 0.05 on the other shapes' rows minimising the median |log(pred/meas)|,
scored on the held-out shape; the pooled held-out errors are the out-of-sample figure. Prints markdown;
results in benchmarks/results/speculative_2026-11-28.md. CPU: ~3 min on the shared 2-core machine.
"""

from __future__ import annotations

import sys

import numpy as np

from llmecon.fidelity.silicon import SiliconRow, predict_silicon, read_silicon
from llmecon.spec.speculation import MTP_DECAY, decaying

GRID = np.round(np.arange(0.05, 1.0001, 0.05), 2)


def priced(rows, k: int, acceptance: str) -> np.ndarray:
    """Predicted TPOT of ``rows`` at k draft tokens and the acceptance text ('' = the family default)."""
    cases = [SiliconRow(**{**r.__dict__, "case": {**r.case, "spec_tokens": str(k), "acceptance": acceptance}})
             for r in rows]
    return predict_silicon(cases)[0]


def stats(pred, meas, mask) -> str:
    e = pred[mask] / meas[mask] - 1
    return (f"{int(mask.sum())} | {np.median(e):+.1%} | {np.median(np.abs(e)):.1%} | "
            f"{np.quantile(np.abs(e), 0.9):.1%}")


def main(path=None) -> None:
    rows, _ = read_silicon(path, speculative=True)
    meas = np.array([r.tpot_s for r in rows])
    shape = np.array([f"{r.case['prompt_tokens']}/{r.case['output_tokens']}" for r in rows])
    low = np.array([r.concurrency <= 16 for r in rows])
    every = np.ones(len(rows), bool)
    print(f"{len(rows)} MTP rows ({', '.join(sorted({r.profile for r in rows}))}); shapes "
          f"{', '.join(f'{s} ({(shape == s).sum()})' for s in sorted(set(shape)))}\n")
    print("| variant | rows | signed median | median abs | p90 abs | c <= 16: rows, signed, median, p90 |")
    print("|---|---|---|---|---|---|")
    variants = (("k 3, a 0.85 at every position (before)", 3, "0.85"),
                (f"k 3, default 0.85 x {MTP_DECAY}^(i-1) (after)", 3, ""), ("k 1, a 0.85 (reference)", 1, "0.85"))
    for name, k, acc in variants:
        p = priced(rows, k, acc)
        print(f"| {name} | {stats(p, meas, every)} | {stats(p, meas, low)} |")
    grid = {d: priced(rows, 3, ";".join(f"{a:.6f}" for a in decaying(0.85, d, 3))) for d in GRID}
    print("\nLeave one shape out (k 3, a_1 0.85, δ fitted on the other shapes):\n")
    print("| held-out shape | fitted δ | rows | signed median | median abs | p90 abs |")
    print("|---|---|---|---|---|---|")
    pooled = np.full(len(rows), np.nan)
    for s in sorted(set(shape)):
        fit = shape != s
        best = min(GRID, key=lambda d: float(np.median(np.abs(np.log(grid[d][fit] / meas[fit])))))
        pooled[~fit] = grid[best][~fit]
        print(f"| {s} | {best:.2f} | {stats(grid[best], meas, ~fit)} |")
    print(f"| pooled (out of sample) | - | {stats(pooled, meas, every)} |")
    print(f"| pooled, c <= 16 | - | {stats(pooled, meas, low)} |")
    best_all = min(GRID, key=lambda d: float(np.median(np.abs(np.log(grid[d] / meas)))))
    print(f"\nδ fitted on all rows: {best_all:.2f} (shipped: MTP_DECAY = {MTP_DECAY})")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else None)
