"""Cold start of the command line: ``llmecon analyze`` over a bare ``python -c 'import numpy'`` (issue 23).

    python benchmarks/cold_start.py [--runs 15] [--src DIR ...] [--command "analyze"] [--json]

Each run spawns a fresh interpreter (``python -m llmecon <command>``, its output discarded) and,
alternating with it, ``python -c 'import numpy'``; both are timed from spawn to exit as wall time
and as the child's CPU time (user + system, from ``os.wait4``: robust when other work shares the
machine, which inflates wall time but not CPU time). Reported: the median and the minimum of each,
and the overhead = llmecon - numpy (medians, and minima). Target: overhead <= 0.15 s. ``--src`` runs
the same for several source trees (e.g. a checkout of the previous commit) interleaved run by run,
so that before and after are measured in one run under the same load. ``--importtime`` prints the
15 slowest imports of one run (``python -X importtime``). There is no peer figure: no other LLM
cost tool has this command line.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

TARGET_S = 0.15
ROOT = Path(__file__).resolve().parent.parent


def _spawn(argv: list[str], env: dict) -> tuple[float, float]:
    """(wall s, child CPU s) of one process run to exit, its output discarded."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode()
    proc.stderr.close()
    if proc.returncode:
        raise SystemExit(f"{' '.join(argv)} exited {proc.returncode}: {err.strip()[-400:]}")
    return wall, usage.ru_utime + usage.ru_stime


def _env(src: str | None) -> dict:
    env = dict(os.environ)
    if src:
        env["PYTHONPATH"] = src
    return env


def importtime(src: str, command: list[str], top: int = 15) -> str:
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "llmecon", *command], env=_env(src),
                          capture_output=True, text=True)
    rows = []
    for line in proc.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            _, cum, name = line.split("|")
            try:
                rows.append((int(cum), name.rstrip()))
            except ValueError:
                continue
    rows.sort(reverse=True)
    return "\n".join(f"  {c / 1e3:8.1f} ms  {n}" for c, n in rows[:top])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--src", nargs="+", default=[str(ROOT / "src")], help="source trees to compare")
    ap.add_argument("--command", default="analyze", help="llmecon arguments (split on spaces)")
    ap.add_argument("--importtime", action="store_true")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    command = args.command.split()
    base = [sys.executable, "-c", "import numpy"]
    samples = {"numpy": []} | {src: [] for src in args.src}
    for src in args.src:  # warm the file cache and the bytecode of each tree once
        _spawn([sys.executable, "-m", "llmecon", *command], _env(src))
    for _ in range(args.runs):
        samples["numpy"].append(_spawn(base, _env(None)))
        for src in args.src:
            samples[src].append(_spawn([sys.executable, "-m", "llmecon", *command], _env(src)))

    def stats(xs):
        walls, cpus = [w for w, _ in xs], [c for _, c in xs]
        return {"wall_median_s": statistics.median(walls), "wall_min_s": min(walls),
                "cpu_median_s": statistics.median(cpus), "cpu_min_s": min(cpus)}

    out = {"command": command, "runs": args.runs, "target_overhead_s": TARGET_S, "numpy": stats(samples["numpy"]),
           "trees": {}}
    for src in args.src:
        s = stats(samples[src])
        s["overhead"] = {k: s[k] - out["numpy"][k] for k in s}
        s["verdict"] = "met" if s["overhead"]["cpu_median_s"] <= TARGET_S else "missed"
        out["trees"][src] = s
    if args.json:
        print(json.dumps(out, indent=2))
        return
    print(f"cold start: `llmecon {' '.join(command)}` vs `python -c 'import numpy'`, {args.runs} runs each, "
          f"interleaved; {os.cpu_count()} CPUs, Python {sys.version.split()[0]}")
    print(f"target: overhead <= {TARGET_S * 1e3:.0f} ms; peer: none (no other tool has this command)\n")
    head = f"{'what':<44} {'wall med':>9} {'wall min':>9} {'cpu med':>8} {'cpu min':>8}  overhead (cpu med / wall min)"
    print(head)
    print("-" * len(head))
    n = out["numpy"]
    print(f"{'python -c import numpy':<44} {n['wall_median_s'] * 1e3:>7.0f}ms {n['wall_min_s'] * 1e3:>7.0f}ms "
          f"{n['cpu_median_s'] * 1e3:>6.0f}ms {n['cpu_min_s'] * 1e3:>6.0f}ms")
    for src, s in out["trees"].items():
        o = s["overhead"]
        print(f"{'llmecon (' + src[-34:] + ')':<44} {s['wall_median_s'] * 1e3:>7.0f}ms {s['wall_min_s'] * 1e3:>7.0f}ms "
              f"{s['cpu_median_s'] * 1e3:>6.0f}ms {s['cpu_min_s'] * 1e3:>6.0f}ms  {o['cpu_median_s'] * 1e3:+.0f} ms / "
              f"{o['wall_min_s'] * 1e3:+.0f} ms  {s['verdict']}")
    if args.importtime:
        for src in args.src:
            print(f"\nslowest imports (cumulative), {src}:\n{importtime(src, command)}")


if __name__ == "__main__":
    main()
