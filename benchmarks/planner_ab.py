"""The planner's speed beside another commit's, measured in the same run (issue 36).

    PYTHONPATH=src python benchmarks/planner_ab.py [--baseline 7b1f752] [--baseline-tree DIR] [--rounds 5]
        [--calls 3] [--json]

The job is ``benchmarks/planner_speed.py``'s first case (DeepSeek-V3 on gb200-nvl72, hgx-h100, hgx-b200,
ideal, TPOT <= 50 ms, TTFT <= 2 s, priced). Each tree runs in child processes (``python -c`` with its own
``PYTHONPATH``, pinned to one CPU, BLAS threads 1), alternating current / baseline for ``--rounds`` rounds so
that load on the shared machine falls on both alike; a child warms up with one call, then times ``--calls``
calls and reports its best wall and best CPU seconds. Per tree: the median over rounds of those bests, and
the minimum. The children also report the chosen plans, the point counts and the blended $/Mtok, which must
be equal in both trees (the speed-up changes no result); the script says so or exits 1.

The baseline tree is ``git archive <commit>`` unpacked into a temporary folder; ``--baseline-tree DIR``
reuses one.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS",
             "VECLIB_MAXIMUM_THREADS", "BLIS_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

from _machine import cpu_name, pin_one_core, source_tree  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
CHILD = """
import json, time
from llmecon.catalog.hardware import get_system
from llmecon.catalog.models import get_model
from llmecon.econ.planner import PlanTargets, SearchOptions, plan_deployment
names = ("gb200-nvl72", "hgx-h100", "hgx-b200")
prices = {{"gb200-nvl72": 4.0, "hgx-h100": 2.5, "hgx-b200": 3.5}}
model, systems = get_model("deepseek-v3"), [get_system(n) for n in names]
call = lambda: plan_deployment(model, systems, targets=PlanTargets(tpot_s=0.05, ttft_s=2.0),
                               options=SearchOptions(max_chips=512), prices=prices)
r = call()
wall, cpu = [], []
for _ in range({calls}):
    t0, c0 = time.perf_counter(), time.process_time()
    r = call()
    wall.append(time.perf_counter() - t0)
    cpu.append(time.process_time() - c0)
d, p = r.decode, r.prefill
print(json.dumps(dict(wall_s=min(wall), cpu_s=min(cpu), points=d.points_evaluated + p.points_evaluated,
                      result=[d.best.system, d.best.plan.label(), d.best.batch, p.best.system, p.best.plan.label(),
                              p.best.batch, d.points_fitting, d.points_meeting_slo, p.points_fitting,
                              p.points_meeting_slo, len(d.frontier), len(p.frontier), repr(r.usd_per_mtok_blended)])))
"""


def _run(tree: Path, calls: int) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree / "src"))
    proc = subprocess.run([sys.executable, "-c", CHILD.format(calls=calls)], capture_output=True, text=True,
                          env=env, cwd=str(tree))
    if proc.returncode != 0:
        raise RuntimeError(f"child in {tree} failed: {proc.stderr.strip()[-800:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", default="7b1f752")
    ap.add_argument("--baseline-tree", default=None)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--calls", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    pinned = pin_one_core()
    load = [os.getloadavg()[0]]
    base = source_tree(args.baseline, args.baseline_tree)
    runs: dict[str, list[dict]] = {"current": [], args.baseline: []}
    for _ in range(args.rounds):
        runs["current"].append(_run(REPO, args.calls))
        runs[args.baseline].append(_run(base, args.calls))
    load.append(os.getloadavg()[0])
    out = dict(cpu=cpu_name(), pinning=pinned, rounds=args.rounds, calls=args.calls, load_average_1min=load)
    for name, rs in runs.items():
        out[name] = {k: dict(median=statistics.median(r[k] for r in rs), min=min(r[k] for r in rs))
                     for k in ("wall_s", "cpu_s")}
        out[name]["points"] = rs[0]["points"]
        out[name]["result"] = rs[0]["result"]
    same = all(r["result"] == runs["current"][0]["result"] for rs in runs.values() for r in rs)
    out["same_results"] = same
    out["speedup_cpu_median"] = out[args.baseline]["cpu_s"]["median"] / out["current"]["cpu_s"]["median"]
    out["speedup_wall_median"] = out[args.baseline]["wall_s"]["median"] / out["current"]["wall_s"]["median"]
    if args.json:
        print(json.dumps(out, indent=1))
        return 0 if same else 1
    print(f"planner A/B, DeepSeek-V3 on gb200-nvl72/hgx-h100/hgx-b200 (ideal, priced); {out['cpu']}, {pinned}; "
          f"{args.rounds} alternating rounds x {args.calls} calls; 1-min load {load[0]:.1f} -> {load[1]:.1f}")
    print(f"{'tree':<10}{'points':>9}{'wall med s':>12}{'wall min s':>12}{'cpu med s':>11}{'cpu min s':>11}"
          f"{'pts/cpu s (med)':>17}")
    for name in ("current", args.baseline):
        r = out[name]
        print(f"{name:<10}{r['points']:>9,}{r['wall_s']['median']:>12.3f}{r['wall_s']['min']:>12.3f}"
              f"{r['cpu_s']['median']:>11.3f}{r['cpu_s']['min']:>11.3f}{r['points'] / r['cpu_s']['median']:>17,.0f}")
    print(f"speed-up (baseline / current, medians): {out['speedup_cpu_median']:.2f}x CPU, "
          f"{out['speedup_wall_median']:.2f}x wall; results {'identical' if same else 'DIFFER'}: "
          f"{runs['current'][0]['result']}")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
