"""Sweep throughput: points per second in-process vs a local Dask cluster of 1 and 2 workers.

    PYTHONPATH=src python benchmarks/sweep_throughput.py [--scale 1.0] [--repeats 2] [--save]

Needs ``pip install -e '.[dist]'`` for the cluster rows (they are skipped, saying so, without Dask).
Not pinned: the point is to use every core. BLAS thread counts are set to 1 (each Dask worker is
one single-threaded process, as ``llmecon sweep --scheduler local`` starts them).

What it runs (the same spec in every mode; ``--scale`` multiplies the batch axis):

* analytic: 4 models (dense GQA, MoE, MLA) x 2 systems x every planner plan up to 16 chips x decode
  and prefill x 96 batches x 48 contexts x 2 prices, cut into the default 262,144-point chunks;
* ``evaluate only``: ``analytic.evaluate_points`` over the same chunks in this process, no Arrow or
  Parquet (the per-point compute cost);
* ``in-process``: ``run_sweep`` with no scheduler (evaluate, Arrow, one Parquet part per chunk);
* ``local cluster, N workers``: ``run_sweep`` on a ``LocalCluster`` of N worker processes started
  and warmed up (llmecon imported on every worker) beforehand; start-up is reported separately;
* simulations: 24 short serving scenarios, in-process vs the 2-worker cluster;
* a parallel probe: two pure-Python CPU-bound processes at once vs one alone, the ceiling any
  scaling measured here can reach on this machine.

Times are the best of ``--repeats`` runs of ``SweepRun.elapsed_s`` (computing and writing the
parts; the final concatenation into one file is reported separately). Ratios are against the
in-process run of this same invocation.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS",
             "VECLIB_MAXIMUM_THREADS", "BLIS_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import datetime  # noqa: E402
import importlib.util  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

from _machine import cpu_name  # noqa: E402

import numpy as np  # noqa: E402

if importlib.util.find_spec("llmecon") is None:  # src layout: work with or without PYTHONPATH=src / an install
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from llmecon.sweep import expand, parse_spec, run_sweep  # noqa: E402
from llmecon.sweep.analytic import evaluate_points  # noqa: E402

ANALYTIC = """
name = "bench-analytic"
[analytic]
models = ["llama-3.1-70b", "qwen3-32b", "qwen3-30b-a3b", "deepseek-v3"]
systems = ["hgx-h100", "gb200-nvl72"]
plans = "auto"
max_chips = 16
phases = ["decode", "prefill"]
batches = {{start = 1, stop = 65536, num = {batches}, scale = "log"}}
contexts = {{start = 128, stop = 131072, num = 48, scale = "log"}}
prices = [2.0, 3.5]
"""

WARM = """
chunk_points = 64
[analytic]
models = ["llama-3.1-8b"]
systems = ["hgx-h100"]
plans = [{tp = 1}, {tp = 2}]
batches = [1, 2, 4, 8]
contexts = [1, 2, 4, 8]
[simulation]
models = ["llama-3.1-8b"]
systems = ["h100-sxm"]
seeds = [0, 1, 2, 3]
[[simulation.workloads]]
rate = 1
duration = 1
"""

SIMULATION = """
name = "bench-sim"
[simulation]
models = ["llama-3.1-8b"]
systems = ["h100-sxm"]
policies = ["continuous", "train", "adaptive"]
seeds = [0, 1, 2, 3]
prices = [2.0]

[[simulation.workloads]]
name = "chat"
rate = 8
duration = 30
prompt = "uniform:128:2048"
output = "uniform:16:512"

[[simulation.workloads]]
name = "bursty"
rate = 8
duration = 30
prompt = "1024"
output = "256"
arrival = "gamma"
cv = 3
"""


def _spin(n: int) -> float:
    t0 = time.perf_counter()
    x = 0
    for i in range(n):
        x += i * i
    return time.perf_counter() - t0


def parallel_probe(n: int = 10_000_000) -> float:
    """How much faster this machine runs two CPU-bound processes than one: 2 x (one alone) / (two at
    once, wall). 2.0 on two free cores; less when the cores are shared (hyperthreads, a busy host)."""
    import multiprocessing as mp

    alone = min(_spin(n) for _ in range(2))
    with mp.get_context("spawn").Pool(2) as pool:
        pool.map(_spin, [1000, 1000])
        t0 = time.perf_counter()
        pool.map(_spin, [n, n])
        both = time.perf_counter() - t0
    return 2 * alone / both


def _best(fn, repeats: int):
    runs = [fn() for _ in range(repeats)]
    return min(runs, key=lambda r: r.elapsed_s), runs


def _sweep(work, folder: Path, tag: str, repeats: int, **kw):
    out = folder / f"{tag}.parquet"

    def once():
        return run_sweep(work, out, force=True, **kw)
    t0 = time.perf_counter()
    best, _ = _best(once, repeats)
    return best, (time.perf_counter() - t0) / repeats - best.elapsed_s


def _evaluate_only(work, repeats: int) -> float:
    chunks = [c for c in work.chunks if c.scenario < 0]
    firsts = work.first_points
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for c in chunks:
            evaluate_points(np.arange(c.start, c.stop, dtype=np.int64), work.groups, firsts)
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=1.0, help="multiply the batch axis (96 points at 1.0)")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--save", action="store_true", help="also write benchmarks/results/sweep_throughput_<date>.txt")
    args = ap.parse_args()
    lines: list[str] = []

    def say(text: str = "") -> None:
        print(text, flush=True)
        lines.append(text)

    import pyarrow

    cores = os.cpu_count()
    say(f"sweep throughput, {datetime.date.today()}: {cpu_name()}, {cores} cores "
        f"(os.cpu_count; affinity {len(os.sched_getaffinity(0))}), Python {platform.python_version()}, "
        f"numpy {np.__version__}, pyarrow {pyarrow.__version__}")
    probe = parallel_probe()
    say(f"parallel probe: two CPU-bound processes run {probe:.2f}x as fast as one (2.00 = two free cores)")
    have_dask = importlib.util.find_spec("distributed") is not None
    if have_dask:
        import dask
        say(f"dask {dask.__version__}")
    work = expand(parse_spec(ANALYTIC.format(batches=max(2, round(96 * args.scale))), where="bench"))
    sims = expand(parse_spec(SIMULATION, where="bench-sim"))
    say(f"analytic spec: {work.points:,} points in {len(work.groups):,} groups (model x system x plan x phase), "
        f"{len(work.chunks):,} chunks of <= {work.spec.chunk_points:,}; "
        f"{sum(s.points for s in work.skipped):,} points skipped (context limits)")
    say(f"simulation spec: {sims.points} scenarios (30 s of traffic each)")
    say()
    rows = []
    ev = _evaluate_only(work, args.repeats)
    rows.append(("evaluate only (no I/O), this process", ev, work.points / ev, None, None))
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        _sweep(expand(parse_spec(WARM, where="warm")), folder, "warm", 1)  # the same first-call costs in-process
        base, fin = _sweep(work, folder, "inproc", args.repeats)
        pps0 = base.points_per_s
        rows.append(("in-process (evaluate + Parquet parts)", base.elapsed_s, pps0, 1.0, fin))
        sim0, _ = _sweep(sims, folder, "sim-inproc", args.repeats)
        sim_rows = [("in-process", sim0.elapsed_s, sims.points / sim0.elapsed_s, 1.0)]
        starts = {}
        if have_dask:
            import logging

            from distributed import Client, LocalCluster

            for n in (1, 2):
                t0 = time.perf_counter()
                with LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=":0",
                                  silence_logs=logging.ERROR) as cluster, Client(cluster) as client:
                    starts[n] = time.perf_counter() - t0
                    warm = expand(parse_spec(WARM, where="warm"))  # imports and first calls on every worker
                    for _ in range(2):
                        run_sweep(warm, folder / "warm.parquet", client=client, force=True)
                    r, fin_n = _sweep(work, folder, f"dask{n}", args.repeats, client=client)
                    rows.append((f"local cluster, {n} worker{'s' if n > 1 else ''}", r.elapsed_s, r.points_per_s,
                                 r.points_per_s / pps0, fin_n))
                    if n == 2:
                        s, _ = _sweep(sims, folder, "sim-dask", args.repeats, client=client)
                        sim_rows.append(("local cluster, 2 workers", s.elapsed_s, sims.points / s.elapsed_s,
                                         sim0.elapsed_s / s.elapsed_s))
    say(f"{'analytic mode':<42}{'seconds':>9}{'points/s':>14}{'vs in-process':>15}{'concat s':>10}")
    for name, sec, pps, ratio, fin in rows:
        say(f"{name:<42}{sec:>9.3f}{pps:>14,.0f}{'' if ratio is None else f'{ratio:.2f}x':>15}"
            f"{'' if fin is None else f'{fin:.3f}':>10}")
    say()
    say(f"{'simulation mode':<42}{'seconds':>9}{'scenarios/s':>14}{'vs in-process':>15}")
    for name, sec, sps, ratio in sim_rows:
        say(f"{name:<42}{sec:>9.3f}{sps:>14.2f}{ratio:>14.2f}x")
    say()
    if not have_dask:
        say("local cluster rows skipped: distributed is not installed (pip install -e '.[dist]')")
    else:
        say("cluster start-up (not in the times above): " + ", ".join(f"{n} worker(s) {s:.2f} s"
                                                                        for n, s in starts.items()))
        scaling = rows[-1][2] / rows[-2][2]
        say(f"scaling 1 -> 2 workers: {scaling:.2f}x (this machine's parallel probe: {probe:.2f}x; the scheduler "
            f"and the client that writes the parts share the {cores} cores)")
    say(f"per-point cost: evaluate {1e9 / (work.points / ev):.0f} ns, evaluate + Parquet in-process "
        f"{1e9 / pps0:.0f} ns (core-time per point, one process)")
    if args.save:
        path = Path(__file__).resolve().parent / "results" / f"sweep_throughput_{datetime.date.today()}.txt"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        print(f"saved {path}")


if __name__ == "__main__":
    main()
