"""Serving simulator, every policy on both event loops: requests simulated per second by the compiled
loop (numba, ``serving.compiled``) and by the pure-Python loop, in the same run, against issue 36's
target (>= 500,000 requests/s at 10^6 requests for every policy).

    PYTHONPATH=src python benchmarks/sim_compiled.py [--requests 1000000] [--python-requests N]
        [--scenario NAME ...] [--no-pin] [--json]

One core: thread counts set to 1 and the process pinned to its first allowed CPU (unless --no-pin).
Each measurement runs in a fresh child process, interleaved compiled / Python per scenario so that
both see the same load; the compiled child loads the kernel from numba's cache first (one warm-up
run of 1,000 requests, not timed: the first compile of a fresh checkout takes minutes of CPU on a
loaded machine). Timed: ``simulate`` incl. building the result and its end-of-run checks. The
figure is per CPU-second of the child (robust when other work shares the machine, what a dedicated
core would take); wall seconds are printed beside it. Workload as ``serving_throughput.py``: a
seeded Poisson stream, prompt lognormal median 512 sigma 1 capped at 4,096, output lognormal median
128 sigma 1 capped at 1,024 (illustrative shapes, not a measured trace).

Scenarios (deepseek-v3 on gb200-nvl72, the smallest plan that fits, 40 requests/s, unless noted):
``continuous``; ``spec`` (MTP, k = 3, the family's default acceptance; plan tp=4 ep=4);
``spec-draft`` (llama-3.1-70b tp=4 on h100-sxm with llama-3.1-8b drafting k = 3 at 0.8, 10 req/s);
``chunked`` (2,048-token budget); ``adaptive`` (batch cap 256, 50 ms deadline); ``disaggregated``
(one prefill and one decode replica) and ``train``: these two still take the Python loop (their
compiled figure is absent and the run's ``engine_note`` says why). No peer ran beside it: vidur
needs profiling data fetched at run time (docs/serving.md).
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS",
             "VECLIB_MAXIMUM_THREADS", "BLIS_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

from _machine import cpu_name, pin_one_core  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
TARGET_RPS = 500_000  # issue 36 item 1
SCENARIOS = ("continuous", "spec", "spec-draft", "chunked", "adaptive", "disaggregated", "train")


def _setup(name: str, n: int):
    from llmecon.catalog.hardware import get_system
    from llmecon.catalog.models import get_model
    from llmecon.econ.batching import smallest_plan
    from llmecon.resolve import deployment
    from llmecon.serving import Adaptive, Continuous, Disaggregated, SimConfig, Train, lognormal, synthetic
    from llmecon.spec.deployment import Deployment

    rate = 40.0
    if name == "spec":
        dep = deployment("deepseek-v3", "gb200-nvl72", tp=4, ep=4, pp=None, mode="ideal", spec_tokens=3)
    elif name == "spec-draft":
        dep = deployment("llama-3.1-70b", "h100-sxm", tp=4, ep=None, pp=None, mode="ideal", spec_tokens=3,
                         acceptance="0.8", draft="llama-3.1-8b")
        rate = 10.0
    else:
        m, s = get_model("deepseek-v3"), get_system("gb200-nvl72")
        dep = Deployment(model=m, system=s, plan=smallest_plan(m, s))
    policy = {"chunked": Continuous(chunk_tokens=2048), "adaptive": Adaptive(), "disaggregated": Disaggregated(),
              "train": Train()}.get(name, Continuous())
    wl = synthetic(rate_per_s=rate, prompt=lognormal(512, 1.0, high=4096), output=lognormal(128, 1.0, high=1024),
                   n=n, seed=0)
    return dep, wl, SimConfig(policy=policy)


def child(name: str, n: int, loop: str) -> dict:
    """One measurement in this process (run by the parent in a fresh interpreter)."""
    from llmecon.errors import SpecError
    from llmecon.serving import simulate

    want = {"compiled": True, "python": False}[loop]
    if want:
        try:
            simulate(*_setup(name, 1000), compiled=True)  # load (or compile) the kernel: not timed
        except SpecError as e:
            if e.field != "compiled":
                raise
            return {"scenario": name, "loop": loop, "requests": n, "unsupported": str(e)}
    dep, wl, cfg = _setup(name, n)
    w0, c0 = time.perf_counter(), time.process_time()
    res = simulate(dep, wl, cfg, compiled=want)
    w1, c1 = time.perf_counter(), time.process_time()
    return {"scenario": name, "loop": loop, "requests": n, "simulate_s": w1 - w0, "simulate_cpu_s": c1 - c0,
            "requests_per_s": n / (w1 - w0), "requests_per_cpu_s": n / (c1 - c0), "events": res.events,
            "completed": int(res.summary()["completed"]), "policy": res.policy}


def _measure(name: str, n: int, loop: str) -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    out = subprocess.run([sys.executable, __file__, "--child", name, str(n), loop], env=env, capture_output=True,
                         text=True)
    if out.returncode:
        raise SystemExit(f"{name} n={n} {loop} failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=float, default=1e6)
    ap.add_argument("--python-requests", type=float, default=None, help="the Python loop's size (default: the same)")
    ap.add_argument("--scenario", nargs="+", choices=SCENARIOS, default=list(SCENARIOS))
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--no-pin", action="store_true")
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.child[0], int(args.child[1]), args.child[2])))
        return
    pin = "not pinned (--no-pin)" if args.no_pin else pin_one_core()
    n, n_py = int(args.requests), int(args.python_requests or args.requests)
    rows = [(_measure(name, n, "compiled"), _measure(name, n_py, "python")) for name in args.scenario]
    meta = {"python": platform.python_version(), "cpu": cpu_name(), "pinning": pin, "load_average": os.getloadavg(),
            "target": f">= {TARGET_RPS:,} requests per second at {n:,} requests"}
    if args.json:
        print(json.dumps({"meta": meta, "runs": [r for pair in rows for r in pair]}, indent=2))
        return
    print(f"serving simulator, both loops, one core ({pin}); {meta['cpu']}, Python {meta['python']}, load average "
          f"{' '.join(f'{x:.1f}' for x in meta['load_average'])}; target {meta['target']} (per CPU-second)")
    print(f"{'scenario':14} {'compiled n':>10} {'req/cpu-s':>10} {'req/s wall':>10} {'vs target':>9} "
          f"{'python n':>9} {'req/cpu-s':>10} {'req/s wall':>10} {'speed-up':>8} {'events':>10}")
    for c, p in rows:
        if c.get("unsupported"):
            ctext = f"{'-':>10} {'falls back':>10} {'-':>10} {'-':>9}"
            ratio = "-"
        else:
            ctext = (f"{c['requests']:>10,} {c['requests_per_cpu_s']:>10,.0f} {c['requests_per_s']:>10,.0f} "
                     f"{c['requests_per_cpu_s'] / TARGET_RPS:>8.2f}x")
            ratio = f"{c['requests_per_cpu_s'] / p['requests_per_cpu_s']:.1f}x"
        print(f"{p['scenario']:14} {ctext} {p['requests']:>9,} {p['requests_per_cpu_s']:>10,.0f} "
              f"{p['requests_per_s']:>10,.0f} {ratio:>8} {p['events']:>10,}")


if __name__ == "__main__":
    main()
