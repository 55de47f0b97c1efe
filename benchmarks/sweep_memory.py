"""Peak memory of a sweep against its rows (issue 23: bounded memory, < 2 GB for 10^7 rows).

    python benchmarks/sweep_memory.py [--rows 1e6 1e7] [--src DIR ...] [--out-dir DIR] [--json]

Each case runs in a fresh process: ``run_sweep`` in-process to one ``.parquet`` file (parts per
chunk, then the streamed concatenation) and ``summarise`` over the file, the work ``llmecon sweep``
does. The spec is ``sweep_throughput.py``'s analytic spec (4 models x hgx-h100, gb200-nvl72, every
plan up to 16 chips, decode and prefill x 48 contexts x 2 prices) with the number of batches chosen
to reach the rows asked for. Reported per case: rows, peak resident memory of the process
(``resource.getrusage(RUSAGE_SELF).ru_maxrss``, which includes the interpreter, numpy, pyarrow and
the catalogue: ~0.1-0.2 GB before any row), wall seconds of the sweep and of the summary. Flat
memory means the 10^7 case peaks near the 10^6 one. ``--src`` runs the same for several source
trees (e.g. the previous commit's), so before and after are measured in one run. No peer: no
other LLM cost tool writes sweeps.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

TARGET_BYTES = 2e9          # at 10^7 rows
ROOT = Path(__file__).resolve().parent.parent
POINTS_PER_BATCH = 7_636_992 / 96   # sweep_throughput.py's spec: points per batch value

CHILD = r"""
import json, os, resource, sys, time
from pathlib import Path
sys.path.insert(0, {bench!r})
from sweep_throughput import ANALYTIC
from llmecon.sweep import expand, parse_spec, run_sweep
from llmecon.sweep.summary import summarise
work = expand(parse_spec(ANALYTIC.format(batches={batches}), where="bench"))
out = Path({out!r})
t0 = time.perf_counter()
run = run_sweep(work, out, force=True)
t1 = time.perf_counter()
s = summarise(work, out)
t2 = time.perf_counter()
size = out.stat().st_size
out.unlink()
print(json.dumps({{"rows": run.rows_written, "points": work.points, "peak_rss_bytes":
                  resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024, "sweep_s": t1 - t0,
                  "summary_s": t2 - t1, "file_bytes": size, "best": len(s.best), "frontier": len(s.frontier)}}))
"""


def run_case(src: str, rows: float, out_dir: str) -> dict:
    batches = max(2, round(rows / POINTS_PER_BATCH))
    code = CHILD.format(bench=str(ROOT / "benchmarks"), batches=batches,
                        out=str(Path(out_dir) / f"sweep-mem-{os.getpid()}.parquet"))
    env = dict(os.environ, PYTHONPATH=src, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    if proc.returncode:
        return {"error": proc.stderr.strip()[-600:]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=float, nargs="+", default=[1e6, 1e7])
    ap.add_argument("--src", nargs="+", default=[str(ROOT / "src")])
    ap.add_argument("--out-dir", default=tempfile.gettempdir())
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    results = [{"src": src, "rows_asked": rows, **run_case(src, rows, args.out_dir)}
               for rows in args.rows for src in args.src]
    if args.json:
        print(json.dumps({"target_bytes_at_1e7": TARGET_BYTES, "cases": results}, indent=2))
        return
    print(f"sweep memory: in-process run_sweep + summarise, fresh process per case; {os.cpu_count()} CPUs")
    print(f"target: peak < {TARGET_BYTES / 1e9:g} GB at 10^7 rows, flat in rows; peer: none\n")
    head = f"{'tree':<36} {'rows':>12} {'peak RSS':>10} {'sweep s':>8} {'summary s':>10} {'file MB':>8}  verdict"
    print(head)
    print("-" * len(head))
    for r in results:
        if "error" in r:
            print(f"{r['src'][-36:]:<36} {r['rows_asked']:>12,.0f}  error: {r['error']}")
            continue
        verdict = ("met" if r["peak_rss_bytes"] < TARGET_BYTES else "missed") if r["rows"] >= 5e6 else ""
        print(f"{r['src'][-36:]:<36} {r['rows']:>12,} {r['peak_rss_bytes'] / 1e9:>8.2f}GB {r['sweep_s']:>8.1f} "
              f"{r['summary_s']:>10.1f} {r['file_bytes'] / 1e6:>8.0f}  {verdict}")


if __name__ == "__main__":
    main()
