"""Deployment-planner speed: (plan, batch) points searched per second by ``planner.plan_deployment``.

    PYTHONPATH=src python benchmarks/planner_speed.py [--repeats 3] [--profile] [--json] [--no-pin]

One core: BLAS/OpenMP thread counts are set to 1 before numpy is imported and, unless --no-pin, the
process is pinned to its first allowed CPU. Each case is one full ``plan_deployment`` call (decode
and prefill searches, the default grids: log-spaced decode batches 1..2^17 and prefill batches
1..1024 per plan, max 512 chips per replica, TPOT <= 50 ms, TTFT <= 2 s, priced so the cost
objective runs), the same call ``llmecon plan`` makes:

* deepseek-v3 on gb200-nvl72, hgx-h100, hgx-b200 (the planner issue's case);
* llama-3.1-405b on the same three systems;
* deepseek-v3 on gb200-nvl72, hgx-h100, hgx-h200 (issue 23's case), ideal;
* deepseek-v3 on hgx-h100, hgx-h200, calibrated (each chip's shipped profile; GB200 has none).

Reported per case: decode and prefill points evaluated, the first call (cold
caches) and the best of ``--repeats`` calls in seconds, and points per second = all points / best
seconds. Targets: the planner issue's, >= 100,000 (plan, batch) points in <= 2 s on one core (a case
with fewer points is judged on the implied rate, 50,000 points/s), and issue 23's, >= 2,000,000 points/s
end to end (the whole ``plan_deployment`` call, warm). No peer runs here: AIConfigurator's search is
the nearest (see ``../shared/PEERS.md``), and it is not installed. When a case misses it, or with --profile, the call runs under cProfile and the top functions are printed.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS",
             "VECLIB_MAXIMUM_THREADS", "BLIS_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import cProfile  # noqa: E402
import importlib.util  # noqa: E402
import io  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import pstats  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

from _machine import cpu_name, pin_one_core  # noqa: E402

import numpy as np  # noqa: E402

if importlib.util.find_spec("llmecon") is None:  # src layout: work with or without PYTHONPATH=src / an install
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from llmecon.catalog.hardware import get_system  # noqa: E402
from llmecon.catalog.models import get_model  # noqa: E402
from llmecon.econ.planner import SearchOptions, PlanTargets, plan_deployment  # noqa: E402
from llmecon.resolve import profiles_for  # noqa: E402

TARGET_POINTS = 100_000
TARGET_S = 2.0
TARGET_RATE = 2_000_000    # issue 23: points per second, end to end
SYSTEMS = ("gb200-nvl72", "hgx-h100", "hgx-b200")
CASES = (("deepseek-v3", SYSTEMS, "ideal"), ("llama-3.1-405b", SYSTEMS, "ideal"),
         ("deepseek-v3", ("gb200-nvl72", "hgx-h100", "hgx-h200"), "ideal"),
         ("deepseek-v3", ("hgx-h100", "hgx-h200"), "calibrated"))
# Illustrative rental prices (USD per chip-hour) so that the cost objective and the $ columns run;
# the search does the same work with or without them.
PRICES = {"gb200-nvl72": 4.0, "hgx-h100": 2.5, "hgx-b200": 3.5, "hgx-h200": 3.0}


def _call(model, systems, mode="ideal"):
    options = SearchOptions(profiles=profiles_for(mode, None, systems))
    return plan_deployment(model, systems, targets=PlanTargets(tpot_s=0.05, ttft_s=2.0), options=options,
                           prices={s.name: PRICES[s.name] for s in systems})


def _verdict(points: int, seconds: float) -> str:
    """"met"/"missed" for a case of >= TARGET_POINTS points; a smaller case cannot show the target
    itself, so it is judged on the rate the target implies (TARGET_POINTS / TARGET_S per second)."""
    if points >= TARGET_POINTS:
        return "met" if seconds <= TARGET_S else "missed"
    rate = "met" if points / seconds >= TARGET_POINTS / TARGET_S else "missed"
    return f"rate {rate} ({points:,} < {TARGET_POINTS:,} points)"


def run_case(model_name: str, system_names, mode: str, repeats: int) -> dict:
    model = get_model(model_name)
    systems = [get_system(n) for n in system_names]
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        r = _call(model, systems, mode)
        times.append(time.perf_counter() - t0)
    best = min(times)
    points = r.decode.points_evaluated + r.prefill.points_evaluated
    return {"model": model_name, "systems": list(system_names), "mode": mode,
            "rate_verdict": "met" if points / best >= TARGET_RATE else f"missed ({points / best / TARGET_RATE:.2f}x)",
            "decode_points": r.decode.points_evaluated, "prefill_points": r.prefill.points_evaluated,
            "points": points, "first_s": times[0], "best_s": best, "points_per_s": points / best,
            "verdict": _verdict(points, best),
            "best_decode": f"{r.decode.best.system} {r.decode.best.plan.label()} batch {r.decode.best.batch:,.0f}",
            "best_prefill": f"{r.prefill.best.system} {r.prefill.best.plan.label()} batch "
                            f"{r.prefill.best.batch:,.0f}"}


def profile_case(model_name: str, system_names, mode: str = "ideal", top: int = 15) -> str:
    model = get_model(model_name)
    systems = [get_system(n) for n in system_names]
    _call(model, systems, mode)
    prof = cProfile.Profile()
    prof.enable()
    _call(model, systems, mode)
    prof.disable()
    buf = io.StringIO()
    pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(top)
    return f"cProfile of one call, {model_name} on {', '.join(system_names)} (sorted by own time):\n" + \
        buf.getvalue().strip()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--profile", action="store_true", help="profile every case, not only those missing the target")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--no-pin", action="store_true")
    args = ap.parse_args()
    pinned = "not pinned (--no-pin)" if args.no_pin else pin_one_core()
    rows = [run_case(m, s, mode, args.repeats) for m, s, mode in CASES]
    profiles = {r["model"]: profile_case(r["model"], r["systems"], r["mode"]) for r in rows
                if args.profile or "missed" in r["verdict"]}
    machine = {"cpu": cpu_name(), "cpus": os.cpu_count(), "pinning": pinned, "python": platform.python_version(),
               "numpy": np.__version__}
    if args.json:
        print(json.dumps({"machine": machine, "target": {"points": TARGET_POINTS, "seconds": TARGET_S},
                          "cases": rows, "profiles": profiles}, indent=2))
        return
    print(f"planner speed: {machine['cpu']}, {pinned}, Python {machine['python']}, numpy {machine['numpy']}")
    print(f"targets: >= {TARGET_POINTS:,} (plan, batch) points in <= {TARGET_S:g} s on one core; issue 23: >= "
          f"{TARGET_RATE:,} points/s; best of {args.repeats}; peer: none installed (AIConfigurator)\n")
    head = f"{'model':<16} {'systems':<30} {'mode':<10} {'decode pts':>11} {'prefill pts':>12} {'first s':>8} " \
           f"{'best s':>7} {'points/s':>10}  {'vs 2M/s':<14} planner target"
    print(head)
    print("-" * len(head))
    for r in rows:
        print(f"{r['model']:<16} {','.join(r['systems']):<30} {r['mode']:<10} {r['decode_points']:>11,} "
              f"{r['prefill_points']:>12,} {r['first_s']:>8.2f} {r['best_s']:>7.3f} {r['points_per_s']:>10,.0f}  "
              f"{r['rate_verdict']:<14} {r['verdict']}")
    print()
    for r in rows:
        print(f"{r['model']} ({r['mode']}, {','.join(r['systems'])}): decode {r['best_decode']}; "
              f"prefill {r['best_prefill']}")
    for text in profiles.values():
        print()
        print(text)


if __name__ == "__main__":
    main()
