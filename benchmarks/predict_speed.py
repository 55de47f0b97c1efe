"""Batch-prediction speed: ``llmecon predict`` on 10,000 mixed cases (target: under 5 s), and the
streaming ``predict CASES --out`` at 10^5-10^6 rows (issue 36 item 4: >= 200k rows/s at 10^6, memory flat).

    python benchmarks/predict_speed.py [--cases 10000] [--repeats 3] [--no-pin]
    python benchmarks/predict_speed.py --stream 100000 1000000 3000000 [--src DIR ...]

``--stream``: ``llmecon predict CASES.csv --out OUT.csv`` and ``OUT.parquet`` run as the command, each in
a fresh process (pinned to one core), for each source tree in ``--src`` (e.g. the previous commit's, so
before and after are measured in one run): rows per CPU-second of the process (start-up included),
peak resident memory (ru_maxrss), and the physical limit: the bytes the command streams (the cases
file read, the output written) over one core's memory-copy bandwidth measured in the same run. Cases:
``cases_csv``'s mix below in 10^5-row slices (seeds 0, 1e5, ...); no peer predicts from a file of cases.

Cases are drawn (seed 0) over 4 catalogue models x 2 systems x plans x phases (decode, prefill,
serving) with random batches and lengths, as a CSV a user would write; the time covers parsing the
CSV text, grouping, the vectorised library calls and writing the output CSV — everything
``llmecon predict CASES.csv --out PRED.csv`` does after start-up. One core (pinned), best of
``--repeats``, ideal and calibrated mode.
"""

from __future__ import annotations

import argparse
import csv
import io
import time

import numpy as np

from _machine import cpu_name, memory_bandwidth_bytes_per_s, pin_one_core
from llmecon.fidelity.predict import parse_cases, predict_cases, write_cases

MODELS = {"llama-3.1-8b": (1, 2, 4, 8), "qwen3-32b": (1, 2, 4, 8), "llama-3.1-70b": (2, 4, 8),
          "mixtral-8x7b": (1, 2, 4, 8)}
SYSTEMS = ("hgx-h100", "hgx-h200")


def cases_csv(n: int, seed: int = 0) -> str:
    rng = np.random.default_rng(seed)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["model", "system", "phase", "batch", "context", "prompt_tokens", "output_tokens", "tp", "ep", "pp",
                "weight_dtype", "kv_dtype"])
    names = list(MODELS)
    for _ in range(n):
        model = names[rng.integers(len(names))]
        tp = rng.choice(MODELS[model])
        phase = rng.choice(["decode", "prefill", "serving"])
        batch = int(2 ** rng.integers(0, 8))
        ctx = int(2 ** rng.integers(7, 14))
        row = [model, SYSTEMS[rng.integers(2)], phase, batch, "", "", "", tp, "", "", "fp8", "fp8"]
        if phase == "decode":
            row[4] = ctx
        elif phase == "prefill":
            row[5] = ctx
        else:
            row[5], row[6] = ctx, int(2 ** rng.integers(6, 11))
        w.writerow(row)
    return buf.getvalue()


CHILD = """
import resource, sys, time
from llmecon.cli import main
sys.argv = ["llmecon", "predict", {cases!r}, "--out", {out!r}, "--json"]
try:
    main()
except SystemExit as e:
    assert not e.code, e.code
u = resource.getrusage(resource.RUSAGE_SELF)
print("RESULT", u.ru_utime + u.ru_stime, u.ru_maxrss * 1024, file=sys.stderr)
"""


def stream(rows: list[int], srcs: list[str]) -> None:
    """``predict --out`` as the command, fresh process per case (module docstring)."""
    import os
    import subprocess
    import sys
    import tempfile
    from pathlib import Path

    bw = memory_bandwidth_bytes_per_s()
    print(f"predict --out (the command, fresh process per case, one core): {cpu_name()}, memory copy "
          f"{bw / 1e9:.1f} GB/s; target >= 200,000 rows/CPU-s at 10^6 rows, peak memory flat in rows")
    print(f"  {'tree':<28} {'rows':>9} {'out':<8} {'peak RSS':>9} {'CPU s':>7} {'rows/CPU-s':>11} {'limit rows/s':>13}")
    with tempfile.TemporaryDirectory() as d:
        for n in rows:
            cases = Path(d) / f"cases_{n}.csv"
            with open(cases, "w") as f:
                for i in range(0, n, 100_000):
                    text = cases_csv(min(100_000, n - i), seed=i)
                    f.write(text if i == 0 else text.split("\n", 1)[1])
            for fmt in ("csv", "parquet"):
                for src in srcs:
                    out = Path(d) / f"out.{fmt}"
                    env = {**os.environ, "PYTHONPATH": src}
                    proc = subprocess.run(["taskset", "-c", str(min(os.sched_getaffinity(0))), sys.executable, "-c",
                                           CHILD.format(cases=str(cases), out=str(out))],
                                          capture_output=True, text=True, env=env)
                    line = [x for x in proc.stderr.splitlines() if x.startswith("RESULT")]
                    if proc.returncode or not line:
                        print(f"  {src[-28:]:<28} {n:>9,} {fmt:<8} failed: {proc.stderr[-300:]}")
                        continue
                    cpu, rss = map(float, line[0].split()[1:])
                    streamed = cases.stat().st_size + out.stat().st_size  # bytes read + written
                    verdict = ("meets" if n / cpu >= 200e3 else "MISSES") if n >= 1_000_000 else ""
                    print(f"  {src[-28:]:<28} {n:>9,} {fmt:<8} {rss / 1e6:>7.0f} MB {cpu:>7.2f} {n / cpu:>11,.0f} "
                          f"{bw / (streamed / n):>13,.0f}  {verdict}")
                    out.unlink()
            cases.unlink()
    print("  limit rows/s: one core's copy bandwidth over the bytes per row read and written (cases file +\n"
          "  output): the rate of a program that only moved those bytes through memory.")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=10_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--no-pin", action="store_true")
    ap.add_argument("--stream", type=int, nargs="+", help="predict --out at these row counts instead")
    ap.add_argument("--src", nargs="+", help="source trees for --stream (default: this one)")
    args = ap.parse_args()
    if args.stream:
        from pathlib import Path

        stream(args.stream, args.src or [str(Path(__file__).resolve().parent.parent / "src")])
        return
    pin = "not pinned" if args.no_pin else pin_one_core()
    text = cases_csv(args.cases)
    print(f"predict_speed: {args.cases} cases, {cpu_name()}, {pin}")
    for mode in ("ideal", "calibrated"):
        best = float("inf")
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            out = predict_cases(parse_cases(text), mode=mode)
            write_cases(out)
            best = min(best, time.perf_counter() - t0)
        groups = len({(r["model"], r["system"], r["phase"], r["tp"]) for r in out})
        verdict = "meets" if best < 5.0 else "MISSES"
        print(f"  {mode:10s}: {best:.2f} s best of {args.repeats} ({args.cases / best:,.0f} cases/s, {groups} "
              f"deployment groups) -> {verdict} the 5 s target")


if __name__ == "__main__":
    main()
