"""Decode-step speed of llmecon against the DESIGN.md §6 budget, and against llm-analysis.

    PYTHONPATH=src python benchmarks/decode_grid.py [--batches 1000] [--contexts 1000]
        [--models N] [--json] [--skip-peers] [--out FILE] [--profile] [--no-pin]

What it measures (all on ONE core: BLAS/OpenMP thread counts are set to 1 before numpy is
imported and, unless --no-pin, the process is pinned to one CPU; child processes inherit it):

1. Grid.  For each of N catalogue models (default 10, chosen to cover dense GQA/MHA, MLA, DSA,
   sliding/local windows and MoE), on the first of hgx-h100 / hgx-h200 / gb200-nvl72 where
   ``batching.smallest_plan`` finds a plan, one call of ``inference.decode_step`` with batch as a
   column vector (1..4096) and context as a row vector (1..131072): batches x contexts points
   per call (1e6 by default), ``.step_s`` included.  Best of 3 repeats per model; evaluations
   per second = points / best wall seconds; overall = all points / sum of the best times.
   Budget (DESIGN.md §6): >= 10 million per second per core.  Below budget, or with
   --profile, the slowest model's call is run under cProfile and the top functions printed.
2. One scalar point: Llama-3.1-70B on hgx-h100, Plan(tp=4), batch 16, context 2048.  Warm =
   median of 200 calls of decode_step(...).step_s in this process.  Cold = a fresh
   ``python -c`` that imports llmecon, loads model and system and evaluates once, timed from
   spawn to the result (the child reads CLOCK_MONOTONIC, shared with the parent) and as the
   whole subprocess wall time; median of 3 spawns, beside a bare ``python -c pass``.
   The same point through llm-analysis 0.2.2 (benchmarks/peers/run_peer.py, its own venv),
   with the predicted decode step in ms of both tools at batch 1/16/64/256, context 2048.
3. ``llmecon --help`` and one ``llmecon step`` (the point above) cold, wall time from spawn to
   exit, for whichever of the ``llmecon`` console script on PATH, ``python -m llmecon`` and the
   console-script entry point (``llmecon.cli:main`` via ``python -c``) exist.

Prints a table (or, with --json, one JSON object).  Writes nothing unless --out FILE is given
(then the JSON object goes to FILE as well).
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS",
             "VECLIB_MAXIMUM_THREADS", "BLIS_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import cProfile  # noqa: E402
import datetime as _dt  # noqa: E402
import importlib.util  # noqa: E402
import io  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import pstats  # noqa: E402
import shutil  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import textwrap  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

from _machine import cpu_name, pin_one_core  # noqa: E402

import numpy as np  # noqa: E402

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
SRC = REPO / "src"

try:  # src layout: work with or without PYTHONPATH=src / an install
    import llmecon  # noqa: F401
except ImportError:
    sys.path.insert(0, str(SRC))

from llmecon.econ.batching import smallest_plan  # noqa: E402
from llmecon.catalog.hardware import get_system  # noqa: E402
from llmecon.catalog.models import get_model, model_names  # noqa: E402
from llmecon.step.inference import decode_step  # noqa: E402
from llmecon.spec.plan import Plan  # noqa: E402

if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))
from peers.run_peer import DEFAULT_LLM_ANALYSIS_VENV, _venv_python, run_llm_analysis  # noqa: E402

TARGET_EVALS_PER_S = 10e6
SYSTEMS = ("hgx-h100", "hgx-h200", "gb200-nvl72")
# Ten models covering every code path of decode_step: dense GQA, MLA, MLA+DSA, sliding/local
# windows (gemma-3, gpt-oss, llama-4 chunked), MoE with and without shared experts, MXFP4 experts.
MODELS = (
    "llama-3.1-70b",
    "llama-3.1-405b",
    "qwen3-32b",
    "gemma-3-27b",
    "mixtral-8x22b",
    "qwen3-235b-a22b",
    "gpt-oss-120b",
    "llama-4-maverick-17b-128e",
    "deepseek-v3",
    "deepseek-v3.2-exp",
)
POINT = dict(model="llama-3.1-70b", system="hgx-h100", tp=4, batch=16, context=2048)
PEER_BATCHES = (1, 16, 64, 256)
WARM_CALLS = 200
COLD_SPAWNS = 3
CLI_SPAWNS = 3

COLD_CHILD = """\
import sys, time
t_top = time.perf_counter()
from llmecon.catalog.models import get_model
from llmecon.catalog.hardware import get_system
from llmecon.step.inference import decode_step
from llmecon.spec.plan import Plan
r = decode_step(get_model({model!r}), get_system({system!r}), batch={batch}, context={context},
                plan=Plan(tp={tp}))
ms = float(r.step_s) * 1e3
t = time.perf_counter()
print('{{"in_script_s": %r, "from_spawn_s": %r, "step_ms": %r}}' % (t - t_top, t - float(sys.argv[1]), ms))
"""


# ---------------------------------------------------------------------------------------------
def _child_env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(SRC) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def _pick_models(n: int) -> list[str]:
    names = [m for m in MODELS if m in model_names()]
    names += [m for m in model_names() if m not in names]
    return names[:n]


def _deployment(name: str):
    model = get_model(name)
    for sys_name in SYSTEMS:
        system = get_system(sys_name)
        plan = smallest_plan(model, system)
        if plan is not None:
            return model, system, plan
    return model, None, None


# ---------------------------------------------------------------------------------------------
def bench_grid(n_models: int, n_batches: int, n_contexts: int, repeats: int = 3) -> dict:
    batch = np.linspace(1, 4096, n_batches).round()[:, None]
    context = np.linspace(1, 131072, n_contexts).round()[None, :]
    points = batch.size * context.size
    rows, skipped = [], []
    for name in _pick_models(n_models):
        model, system, plan = _deployment(name)
        if plan is None:
            skipped.append(f"{name}: no plan on {', '.join(SYSTEMS)}")
            continue
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            step = decode_step(model, system, batch=batch, context=context, plan=plan).step_s
            times.append(time.perf_counter() - t0)
        step = np.asarray(step)
        assert step.shape == (batch.size, context.size) and np.all(np.isfinite(step)) and np.all(step > 0)
        best = min(times)
        rows.append(dict(model=name, system=system.name, plan=plan.label(), points=points,
                         best_s=best, times_s=times, evals_per_s=points / best))
    total_s = sum(r["best_s"] for r in rows)
    total_points = sum(r["points"] for r in rows)
    return dict(batches=int(batch.size), contexts=int(context.size), points_per_call=points,
                batch_range=[float(batch.min()), float(batch.max())],
                context_range=[float(context.min()), float(context.max())], repeats=repeats,
                models=rows, skipped=skipped,
                overall_evals_per_s=total_points / total_s if total_s else None,
                min_evals_per_s=min((r["evals_per_s"] for r in rows), default=None),
                target_evals_per_s=TARGET_EVALS_PER_S)


def profile_grid(name: str, n_batches: int, n_contexts: int, top: int = 15) -> str:
    model, system, plan = _deployment(name)
    batch = np.linspace(1, 4096, n_batches).round()[:, None]
    context = np.linspace(1, 131072, n_contexts).round()[None, :]
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(3):
        decode_step(model, system, batch=batch, context=context, plan=plan).step_s  # noqa: B018
    prof.disable()
    buf = io.StringIO()
    pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(top)
    return f"cProfile of 3 grid calls, {name} on {system.name} {plan.label()}:\n" + buf.getvalue().strip()


# ---------------------------------------------------------------------------------------------
def bench_point_llmecon() -> dict:
    model, system = get_model(POINT["model"]), get_system(POINT["system"])
    plan = Plan(tp=POINT["tp"])
    samples = []
    for _ in range(WARM_CALLS + 10):
        t0 = time.perf_counter()
        float(decode_step(model, system, batch=POINT["batch"], context=POINT["context"], plan=plan).step_s)
        samples.append(time.perf_counter() - t0)
    samples = samples[10:]  # first calls warm caches
    predicted = {b: float(decode_step(model, system, batch=b, context=POINT["context"], plan=plan).step_s) * 1e3
                 for b in PEER_BATCHES}

    code = COLD_CHILD.format(**POINT)
    env = _child_env()
    bare, cold = [], []
    for _ in range(COLD_SPAWNS):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True, env=env)
        bare.append(time.perf_counter() - t0)
    for _ in range(COLD_SPAWNS):
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, "-c", code, repr(t0)], capture_output=True, text=True, env=env,
                              cwd=str(REPO))
        wall = time.perf_counter() - t0
        if proc.returncode != 0:
            raise RuntimeError(f"cold llmecon child failed: {proc.stderr.strip()[-500:]}")
        rec = json.loads(proc.stdout.strip().splitlines()[-1])
        rec["wall_s"] = wall
        cold.append(rec)
    med = lambda key: statistics.median(r[key] for r in cold)  # noqa: E731
    return dict(point=dict(POINT, plan=plan.label()), warm_s_per_eval=statistics.median(samples),
                warm_calls=WARM_CALLS, warm_min_s=min(samples),
                cold_from_spawn_s=med("from_spawn_s"), cold_in_script_s=med("in_script_s"),
                cold_wall_s=med("wall_s"), cold_spawns=cold, bare_python_s=statistics.median(bare),
                decode_step_ms=predicted)


def bench_point_peer(skip: bool, venv: str | None) -> dict:
    venv = venv or os.environ.get("LLMECON_PEER_VENV") or DEFAULT_LLM_ANALYSIS_VENV
    if skip:
        return dict(skipped="--skip-peers given")
    if not _venv_python(venv).exists():
        return dict(skipped=f"no llm-analysis venv at {venv}: create it with benchmarks/peers/setup_llm_analysis.sh")
    out = dict(venv=venv, decode_step_ms={}, decode_step_ms_native={})
    for b in PEER_BATCHES:
        timed = b == POINT["batch"]
        r = run_llm_analysis(b, POINT["context"], POINT["tp"], venv, repeats=WARM_CALLS if timed else 20)
        if r is None:
            out.setdefault("errors", []).append(f"batch {b}: run_llm_analysis returned None (reason on stderr)")
            continue
        out["decode_step_ms"][b] = r.get("decode_step_ms")
        out["decode_step_ms_native"][b] = r.get("decode_step_ms_native")
        if r.get("error"):
            out.setdefault("errors", []).append(f"batch {b}: {r['error']}")
        if timed:
            out.update(version=r.get("version"), warm_s_per_eval=r.get("warm_s_per_eval"),
                       warm_repeats=r.get("warm_repeats"), cold_in_script_s=r.get("cold_s"),
                       cold_from_spawn_s=r.get("cold_s_incl_interpreter"), import_s=r.get("import_s"),
                       breakdown_ms=r.get("breakdown_ms"), notes=r.get("notes"), params_total_b=r.get("params_total_b"))
    if "warm_s_per_eval" not in out:
        out["skipped"] = "llm-analysis gave no timed result: " + "; ".join(out.get("errors", []))
    return out


# ---------------------------------------------------------------------------------------------
def bench_cli() -> dict:
    """Cold wall time of ``--help`` and of one ``step`` at the scalar point, per launcher found."""
    env = _child_env()
    launchers = []
    script = shutil.which("llmecon")
    if script:
        launchers.append(("llmecon (console script on PATH)", [script]))
    if importlib.util.find_spec("llmecon.__main__") is not None:
        launchers.append(("python -m llmecon", [sys.executable, "-m", "llmecon"]))
    if importlib.util.find_spec("llmecon.cli") is not None:
        entry = "import sys; sys.argv[0] = 'llmecon'; from llmecon.cli import main; sys.exit(main())"
        launchers.append(("python -c <llmecon.cli:main>", [sys.executable, "-c", entry]))
    if not launchers:
        return dict(skipped="no CLI yet: no `llmecon` on PATH, no llmecon/__main__.py, no llmecon/cli.py "
                            "(being written concurrently); rerun later")
    step_label = "step <the point of section 2>"
    step = ["step", "-m", POINT["model"], "-s", POINT["system"], "--tp", str(POINT["tp"]),
            "-b", str(POINT["batch"]), "-L", str(POINT["context"])]
    runs = []
    for label, prefix in launchers:
        for args in (["--help"], step):
            walls, rc, tail = [], 0, ""
            for _ in range(CLI_SPAWNS):
                t0 = time.perf_counter()
                proc = subprocess.run(prefix + args, capture_output=True, text=True, env=env, cwd=str(REPO))
                walls.append(time.perf_counter() - t0)
                rc = proc.returncode
                if rc != 0:
                    tail = (proc.stderr or proc.stdout).strip()[-300:]
                    break
            runs.append(dict(command=f"{label} {'--help' if args == ['--help'] else step_label}",
                             argv=prefix[:1] + args, rc=rc, wall_s=statistics.median(walls),
                             walls_s=walls, **({"error_tail": tail} if tail else {})))
    return dict(runs=runs)


# ---------------------------------------------------------------------------------------------
def _f(x, fmt: str, missing: str = "-") -> str:
    return missing if x is None else format(x, fmt)


def render(res: dict) -> str:
    lines = []
    m = res["machine"]
    lines.append(f"llmecon decode benchmark  {m['date']}  {m['cpu']}  ({m['nproc']} cores; {m['pinning']})")
    lines.append(f"python {m['python']}, numpy {m['numpy']}")
    g = res["grid"]
    lines.append("")
    br, cr = g["batch_range"], g["context_range"]
    lines.append(f"1. Vectorised decode_step: batch column ({g['batches']}, {br[0]:g}..{br[1]:g})"
                 f" x context row ({g['contexts']}, {cr[0]:g}..{cr[1]:g})"
                 f" = {g['points_per_call']:,} points per call, best of {g['repeats']}")
    lines.append(f"   {'model':<27} {'system':<12} {'plan':<13} {'best ms':>8} {'M evals/s':>10}")
    for r in g["models"]:
        lines.append(f"   {r['model']:<27} {r['system']:<12} {r['plan']:<13} {r['best_s'] * 1e3:8.1f} "
                     f"{r['evals_per_s'] / 1e6:10.1f}")
    for s in g["skipped"]:
        lines.append(f"   skipped {s}")
    ok = g["overall_evals_per_s"] is not None and g["overall_evals_per_s"] >= TARGET_EVALS_PER_S
    lines.append(f"   overall {_f(g['overall_evals_per_s'] and g['overall_evals_per_s'] / 1e6, '.1f')} M evals/s"
                 f" (slowest model {_f(g['min_evals_per_s'] and g['min_evals_per_s'] / 1e6, '.1f')} M);"
                 f" target >= {TARGET_EVALS_PER_S / 1e6:.0f} M/s per core: {'MET' if ok else 'NOT MET'}")
    if res.get("profile"):
        lines.append("")
        lines.extend("   " + ln for ln in res["profile"].splitlines())

    p, q = res["point"], res["peer"]
    pt = p["point"]
    lines.append("")
    lines.append(f"2. One point: {pt['model']} on {pt['system']} {pt['plan']}, batch {pt['batch']},"
                 f" context {pt['context']}")
    lines.append(f"   {'':<34} {'llmecon':>12} {'llm-analysis':>13} {'ratio la/llmecon':>17}")
    def row(label, ours, theirs, scale, unit):
        ratio = "-" if theirs is None else f"{theirs / ours:.1f}x"
        them = "-" if theirs is None else f"{theirs * scale:.1f} {unit}"
        lines.append(f"   {label:<34} {f'{ours * scale:.1f} {unit}':>12} {them:>13} {ratio:>17}")

    row("warm, per evaluation (median)", p["warm_s_per_eval"], q.get("warm_s_per_eval"), 1e6, "us")
    row("cold, spawn -> first result", p["cold_from_spawn_s"], q.get("cold_from_spawn_s"), 1e3, "ms")
    row("cold, in-script (imports+1 eval)", p["cold_in_script_s"], q.get("cold_in_script_s"), 1e3, "ms")
    lines.append(f"   llmecon cold subprocess wall (spawn..exit) {p['cold_wall_s'] * 1e3:.0f} ms;"
                 f" bare `python -c pass` {p['bare_python_s'] * 1e3:.0f} ms (medians of {COLD_SPAWNS})")
    if q.get("skipped"):
        lines.append(f"   llm-analysis skipped: {q['skipped']}")
    lines.append("")
    lines.append(f"   predicted decode step, ms, context {pt['context']}:")
    lines.append(f"   {'batch':>7} {'llmecon':>9} {'llm-analysis':>13} {'(native MLP)':>13}")
    for b in PEER_BATCHES:
        la = (q.get("decode_step_ms") or {}).get(b)
        nat = (q.get("decode_step_ms_native") or {}).get(b)
        lines.append(f"   {b:>7} {p['decode_step_ms'][b]:9.2f} {_f(la, '13.2f', '            -')}"
                     f" {_f(nat, '13.2f', '            -')}")
    if q.get("notes"):
        lines.append("   llm-analysis figures are gate-fixed (FFN 43008 so its two-matrix MLP holds the SwiGLU")
        lines.append("   weights); it charges prompt+generated KV twice (load+store), reads the whole input")
        lines.append("   embedding table per GPU (not /TP), models lm_head as compute only, and takes efficiency")
        lines.append("   1.0. Its own notes:")
        lines.extend(textwrap.wrap(q["notes"], width=96, initial_indent="     ", subsequent_indent="     "))
    for e in q.get("errors", []):
        lines.append(f"   llm-analysis error: {e}")

    c = res["cli"]
    lines.append("")
    lines.append(f"3. CLI cold start, wall from spawn to exit (median of {CLI_SPAWNS}); budget: well under 1 s")
    if c.get("skipped"):
        lines.append(f"   skipped: {c['skipped']}")
    for r in c.get("runs", []):
        status = "ok" if r["rc"] == 0 else f"exit {r['rc']}: {r.get('error_tail', '')}"
        lines.append(f"   {r['command']:<60} {r['wall_s'] * 1e3:6.0f} ms  {status}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batches", type=int, default=1000, help="batch grid size (column vector)")
    ap.add_argument("--contexts", type=int, default=1000, help="context grid size (row vector)")
    ap.add_argument("--models", type=int, default=10, help="number of catalogue models to time")
    ap.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    ap.add_argument("--skip-peers", action="store_true", help="do not run llm-analysis")
    ap.add_argument("--venv", default=None, help=f"llm-analysis venv (default $LLMECON_PEER_VENV or "
                                                 f"{DEFAULT_LLM_ANALYSIS_VENV})")
    ap.add_argument("--profile", action="store_true", help="cProfile the slowest model even if the target is met")
    ap.add_argument("--no-pin", action="store_true", help="do not pin the process to one CPU")
    ap.add_argument("--out", default=None, help="also write the JSON object to FILE")
    args = ap.parse_args(argv)
    if args.batches < 1 or args.contexts < 1 or args.models < 1:
        ap.error("--batches, --contexts and --models must be >= 1")

    pinning = "not pinned (--no-pin)" if args.no_pin else pin_one_core()
    res = dict(machine=dict(date=_dt.datetime.now().astimezone().isoformat(timespec="seconds"), cpu=cpu_name(),
                            nproc=os.cpu_count(), pinning=pinning, python=platform.python_version(),
                            numpy=np.__version__, platform=platform.platform(),
                            threads={v: os.environ[v] for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                                                                "MKL_NUM_THREADS")}))
    res["grid"] = bench_grid(args.models, args.batches, args.contexts)
    g = res["grid"]
    if g["models"] and (args.profile or g["overall_evals_per_s"] < TARGET_EVALS_PER_S):
        slowest = min(g["models"], key=lambda r: r["evals_per_s"])["model"]
        res["profile"] = profile_grid(slowest, args.batches, args.contexts)
    res["point"] = bench_point_llmecon()
    res["peer"] = bench_point_peer(args.skip_peers, args.venv)
    if res["peer"].get("warm_s_per_eval"):
        res["ratios_llm_analysis_over_llmecon"] = dict(
            warm=res["peer"]["warm_s_per_eval"] / res["point"]["warm_s_per_eval"],
            cold_from_spawn=(res["peer"]["cold_from_spawn_s"] / res["point"]["cold_from_spawn_s"]
                             if res["peer"].get("cold_from_spawn_s") else None),
            cold_in_script=(res["peer"]["cold_in_script_s"] / res["point"]["cold_in_script_s"]
                            if res["peer"].get("cold_in_script_s") else None))
    res["cli"] = bench_cli()

    text = json.dumps(res, default=str)
    if args.json:
        print(text)
    else:
        print(render(res))
    if args.out:
        Path(args.out).write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
