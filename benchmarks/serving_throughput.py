"""Serving-simulator speed against the DESIGN.md §6 budget: >= 1,000,000 requests in <= 20 s on one core.

    PYTHONPATH=src python benchmarks/serving_throughput.py [--requests 1000000] [--scenario NAME ...]
        [--json] [--no-pin]

One core: BLAS/OpenMP thread counts are set to 1 before numpy is imported and, unless --no-pin, the
process is pinned to its first allowed CPU. Each scenario builds a seeded Poisson workload of
``--requests`` requests (prompt lognormal median 512 sigma 1 capped at 4096, output lognormal
median 128 sigma 1 capped at 1024, illustrative shapes, not a measured trace), then times:

* ``simulate``: the engine run incl. its end-of-run checks (accounting, Little's law) -- the budget;
* ``summary``: percentiles, goodput and cost from the per-request arrays (reported separately).

Scenarios (continuous batching, the smallest plan that fits):
* ``default``  deepseek-v3 on gb200-nvl72 (the CLI default deployment) at 40 requests/s;
* ``small``    llama-3.1-8b on one h100-sxm at 20 requests/s: a short step and ~1 arrival per
               step, the most engine events per request (the hardest case per request);
* ``chunked``  the default deployment with chunked prefill (2048-token budget);
* ``train``    the default deployment on the train schedule.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS",
             "VECLIB_MAXIMUM_THREADS", "BLIS_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

from _machine import pin_one_core  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

import numpy as np  # noqa: E402

BUDGET_REQUESTS = 1_000_000
BUDGET_S = 20.0

SCENARIOS = {
    "default": dict(model="deepseek-v3", system="gb200-nvl72", rate=40.0, policy="continuous"),
    "small": dict(model="llama-3.1-8b", system="h100-sxm", rate=20.0, policy="continuous"),
    "chunked": dict(model="deepseek-v3", system="gb200-nvl72", rate=40.0, policy="chunked"),
    "train": dict(model="deepseek-v3", system="gb200-nvl72", rate=40.0, policy="train"),
}


def run(name: str, n: int) -> dict:
    from llmecon.spec.deployment import Deployment
    from llmecon.econ.batching import smallest_plan
    from llmecon.catalog.hardware import get_system
    from llmecon.catalog.models import get_model
    from llmecon.serving import Continuous, SimConfig, Train, lognormal, simulate, synthetic

    sc = SCENARIOS[name]
    m, s = get_model(sc["model"]), get_system(sc["system"])
    dep = Deployment(model=m, system=s, plan=smallest_plan(m, s))
    policy = {"continuous": Continuous(), "chunked": Continuous(chunk_tokens=2048), "train": Train()}[sc["policy"]]
    t0 = time.perf_counter()
    wl = synthetic(rate_per_s=sc["rate"], prompt=lognormal(512, 1.0, high=4096), output=lognormal(128, 1.0, high=1024),
                   n=n, seed=0)
    t1 = time.perf_counter()
    res = simulate(dep, wl, SimConfig(policy=policy))
    t2 = time.perf_counter()
    d = res.summary()
    t3 = time.perf_counter()
    return {"scenario": name, "model": sc["model"], "system": sc["system"], "plan": dep.plan.label(),
            "policy": sc["policy"], "rate_per_s": sc["rate"], "requests": n, "workload_s": t1 - t0,
            "simulate_s": t2 - t1, "summary_s": t3 - t2, "requests_per_s": n / (t2 - t1),
            "engine_events": res.events, "completed": d["completed"], "in_flight": d["in_flight"],
            "simulated_s": res.run_s, "ttft_p50_s": d["ttft_p50_s"], "tpot_p50_s": d["tpot_p50_s"],
            "utilization": d["utilization"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=BUDGET_REQUESTS)
    ap.add_argument("--scenario", nargs="+", choices=sorted(SCENARIOS), default=["default", "small"])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--no-pin", action="store_true")
    args = ap.parse_args()
    pin = "not pinned (--no-pin)" if args.no_pin else pin_one_core()
    rows = [run(name, args.requests) for name in args.scenario]
    meta = {"python": platform.python_version(), "numpy": np.__version__, "cpu": platform.processor() or
            platform.machine(), "pinning": pin, "budget": f">= {BUDGET_REQUESTS:,} requests in <= {BUDGET_S:g} s"}
    if args.json:
        print(json.dumps({"meta": meta, "runs": rows}, indent=2))
        return
    print(f"serving simulator, one core ({pin}); Python {meta['python']}, numpy {meta['numpy']}")
    print(f"{'scenario':9} {'deployment':34} {'requests':>9} {'simulate s':>10} {'req/s':>9} {'events':>9} "
          f"{'summary s':>9} {'TTFT p50':>9} {'TPOT p50':>9} {'sim. s':>8}")
    for r in rows:
        print(f"{r['scenario']:9} {r['model'] + ' / ' + r['system'] + ' ' + r['plan']:34} {r['requests']:>9,} "
              f"{r['simulate_s']:>10.2f} {r['requests_per_s']:>9,.0f} {r['engine_events']:>9,} {r['summary_s']:>9.2f} "
              f"{r['ttft_p50_s'] * 1e3:>7.1f}ms {r['tpot_p50_s'] * 1e3:>7.1f}ms {r['simulated_s']:>8,.0f}")
    for r in rows:
        scaled = r["simulate_s"] * BUDGET_REQUESTS / r["requests"]
        verdict = "met" if scaled <= BUDGET_S else "NOT met"
        print(f"budget ({meta['budget']}), {r['scenario']}: {scaled:.1f} s per million requests -> {verdict}")


if __name__ == "__main__":
    main()
