"""Speculative decoding: the simulator against the closed-loop steady state (``serving.steady_state``
step 6) at the analytic request rate, the same cross-check ``tests/serving/test_steady_state.py``
makes for plain decoding.

    PYTHONPATH=src python benchmarks/spec_serving_cross.py

deepseek-v3 on gb200-nvl72 tp4·ep4, ideal mode, MTP drafts; prefill-first continuous batching
(batch cap 4096), open-loop arrivals (constant: seed 0; Poisson: mean of seeds 0-2) at the steady
state's lambda, 1,500 requests of fixed prompt P and output O; the mean TPOT of requests arriving
between the 20th and 90th percentile over the analytic TPOT. Also prints lambda·t_p (the prefill
load): the plain-decoding cross-check documents that an open loop at the closed loop's rate nears
saturation when it exceeds ~0.5. Results: benchmarks/results/spec_serving_2026-11-26.md.
"""

from __future__ import annotations

import numpy as np

from llmecon.resolve import deployment
from llmecon.serving import Continuous, SimConfig, simulate
from llmecon.serving.steady_state import steady_state
from llmecon.serving.workload import parse_lengths, synthetic

N = 1500
SPECS = ((None, None), (1, "0.85"), (2, "0.8"), (3, "0.9,0.8,0.7"))
SHAPES = ((16, 1024, 128), (64, 1024, 128), (16, 4096, 512))


def mean_tpot(dep, *, rate, P, O, arrival, seed):
    wl = synthetic(rate_per_s=rate, prompt=parse_lengths(str(P), field="prompt"),
                   output=parse_lengths(str(O), field="output"), n=N, arrival=arrival, seed=seed)
    res = simulate(dep, wl, SimConfig(policy=Continuous(batch_cap=4096), drain=True))
    a = res.arrival_s
    keep = (a >= a[N // 5]) & (a < a[9 * N // 10])
    return ((res.done_s - res.first_token_s)[keep] / (res.generated_tokens[keep] - 1)).mean()


def main() -> None:
    print("| k | acceptance | C | P | O | E | analytic TPOT | lambda·t_p | sim/analytic constant | Poisson (3 seeds) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for k, acc in SPECS:
        dep = deployment("deepseek-v3", "gb200-nvl72", tp=4, ep=4, mode="ideal", spec_tokens=k, acceptance=acc)
        E = 1.0 if dep.speculation is None else dep.speculation.tokens_per_step
        for C, P, O in SHAPES:
            ss = steady_state(dep, concurrency=C, prompt_tokens=P, output_tokens=O)
            lam, tpot = float(ss.requests_per_s), float(ss.tpot_s)
            const = mean_tpot(dep, rate=lam, P=P, O=O, arrival="constant", seed=0) / tpot
            pois = np.mean([mean_tpot(dep, rate=lam, P=P, O=O, arrival="poisson", seed=s) for s in (0, 1, 2)]) / tpot
            print(f"| {k or 0} | {acc or '-'} | {C} | {P} | {O} | {E:.4g} | {tpot * 1e3:.3f} ms | "
                  f"{lam * float(ss.prefill_s):.2f} | {const:.3f} | {pois:.3f} |")


if __name__ == "__main__":
    main()
