"""Run peer tools in their own throw-away venvs and collect their JSON result line.

Standard library only: the peers live in separate virtual environments (see
``setup_llm_analysis.sh``) and are driven through a subprocess, so nothing of theirs is
imported into, or vendored in, llmecon.  When a venv is missing the runner returns
``None`` and says why on stderr, so a benchmark can still print llmecon's own figures.

    python benchmarks/peers/run_peer.py --batch 1 16 64 256 --context 2048 --tp 4

``run_aiconfigurator`` does the same for AIConfigurator 0.12.0's deployment search
(``setup_aiconfigurator.sh``, ``aiconfigurator_search.py``); ``benchmarks/planner_speed.py`` calls it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
LLM_ANALYSIS_SCRIPT = HERE / "llm_analysis_point.py"
DEFAULT_LLM_ANALYSIS_VENV = "/tmp/peers/llm-analysis"
TIMEOUT_S = 120


def _warn(msg: str) -> None:
    print(f"[peer llm-analysis] {msg}", file=sys.stderr)


def _venv_python(venv: str) -> Path:
    root = Path(venv)
    for rel in ("bin/python", "bin/python3", "Scripts/python.exe"):
        cand = root / rel
        if cand.exists():
            return cand
    return root / "bin" / "python"


def _last_json_line(text: str) -> dict | None:
    for line in reversed(text.splitlines()):
        line = line.strip()
        if line.startswith("{") and line.endswith("}"):
            try:
                obj = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(obj, dict):
                return obj
    return None


def run_llm_analysis(
    batch: int,
    context: int,
    tp: int,
    venv: str | None = None,
    *,
    mlp: str = "gate-fixed",
    repeats: int = 100,
) -> dict | None:
    """Evaluate one decode step with llm-analysis 0.2.2 in its own venv.

    ``batch`` is the global decode batch (sequences), ``context`` the prompt length,
    ``tp`` the tensor-parallel size.  ``venv`` defaults to $LLMECON_PEER_VENV or
    /tmp/peers/llm-analysis.  ``mlp`` is "gate-fixed" (FFN width set to 1.5x so its
    two-matrix MLP carries the SwiGLU weights) or "native" (its own no-gate MLP).

    Returns the tool's JSON dict (keys include tool, version, warm_s_per_eval, cold_s,
    decode_step_ms, notes) plus ``subprocess_wall_s`` measured here, or None with the
    reason printed to stderr.  A point that llm-analysis rejects (its memory asserts)
    comes back as a dict with ``error`` set and ``decode_step_ms`` None.
    """
    venv = venv or os.environ.get("LLMECON_PEER_VENV") or DEFAULT_LLM_ANALYSIS_VENV
    py = _venv_python(venv)
    if not py.exists():
        _warn(
            f"venv missing ({py} not found); create it with "
            f"benchmarks/peers/setup_llm_analysis.sh — skipping the peer"
        )
        return None
    if not LLM_ANALYSIS_SCRIPT.exists():
        _warn(f"script missing: {LLM_ANALYSIS_SCRIPT}")
        return None

    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env.setdefault("HF_HUB_OFFLINE", "1")
    env.setdefault("TRANSFORMERS_OFFLINE", "1")
    t_launch = time.perf_counter()
    cmd = [
        str(py),
        str(LLM_ANALYSIS_SCRIPT),
        "--batch", str(int(batch)),
        "--context", str(int(context)),
        "--tp", str(int(tp)),
        "--mlp", mlp,
        "--repeats", str(int(repeats)),
        "--t-launch", repr(t_launch),
    ]
    try:
        proc = subprocess.run(
            cmd, capture_output=True, text=True, timeout=TIMEOUT_S, env=env, cwd=str(HERE)
        )
    except subprocess.TimeoutExpired:
        _warn(f"timed out after {TIMEOUT_S} s")
        return None
    except OSError as exc:
        _warn(f"could not start {py}: {exc}")
        return None
    wall = time.perf_counter() - t_launch

    result = _last_json_line(proc.stdout)
    if result is None:
        tail = (proc.stderr or proc.stdout or "").strip().splitlines()[-5:]
        _warn(f"no JSON result (exit {proc.returncode}): " + " | ".join(tail))
        return None
    if proc.returncode not in (0, 2):  # 2 = the tool rejected the point, JSON says why
        _warn(f"exit {proc.returncode}; using its JSON line anyway")
    result["subprocess_wall_s"] = wall
    return result


AIC_SCRIPT = HERE / "aiconfigurator_search.py"
DEFAULT_AIC_VENV = "/work/peer-venvs/aiconfigurator"
AIC_TIMEOUT_S = 900


def aiconfigurator_python(venv: str | None = None) -> tuple[Path, str]:
    """The AIConfigurator venv's python and the venv path (``venv``, $LLMECON_AIC_VENV or the default)."""
    venv = venv or os.environ.get("LLMECON_AIC_VENV") or DEFAULT_AIC_VENV
    return _venv_python(venv), venv


def run_aiconfigurator(
    system: str,
    total_gpus: int,
    venv: str | None = None,
    *,
    model_path: str = "deepseek-ai/DeepSeek-V3",
    isl: int = 4096,
    osl: int = 512,
    ttft_ms: float = 2000.0,
    tpot_ms: float = 50.0,
    repeats: int = 2,
) -> dict | None:
    """Time AIConfigurator 0.12.0's ``cli default`` search (TensorRT-LLM backend, aggregated and disaggregated)
    in its own venv (``setup_aiconfigurator.sh``): one cold search, then ``repeats`` warm ones in the same process.

    Returns the JSON dict of ``aiconfigurator_search.py`` (first_s, warm_s, best_s, evaluations, best configs)
    plus ``subprocess_wall_s``, or None with the reason on stderr (venv missing, timeout, no JSON line).
    The child inherits this process's CPU pinning; HF_HUB_OFFLINE=1 is set (it needs no download)."""
    py, venv = aiconfigurator_python(venv)
    tag = "[peer aiconfigurator]"
    if not py.exists():
        print(f"{tag} venv missing ({py} not found); create it with benchmarks/peers/setup_aiconfigurator.sh "
              f"[--venv DIR] — skipping the peer", file=sys.stderr)
        return None
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    t_launch = time.perf_counter()
    cmd = [str(py), str(AIC_SCRIPT), "--model-path", model_path, "--system", system, "--total-gpus",
           str(int(total_gpus)), "--isl", str(int(isl)), "--osl", str(int(osl)), "--ttft", repr(float(ttft_ms)),
           "--tpot", repr(float(tpot_ms)), "--repeats", str(int(repeats)), "--t-launch", repr(t_launch)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=AIC_TIMEOUT_S, env=env, cwd=str(HERE))
    except subprocess.TimeoutExpired:
        print(f"{tag} timed out after {AIC_TIMEOUT_S} s", file=sys.stderr)
        return None
    except OSError as exc:
        print(f"{tag} could not start {py}: {exc}", file=sys.stderr)
        return None
    result = _last_json_line(proc.stdout)
    if result is None:
        tail = (proc.stderr or proc.stdout or "").strip().splitlines()[-5:]
        print(f"{tag} no JSON result (exit {proc.returncode}): " + " | ".join(tail), file=sys.stderr)
        return None
    result["subprocess_wall_s"] = time.perf_counter() - t_launch
    return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="run llm-analysis on decode points")
    ap.add_argument("--batch", type=int, nargs="+", default=[1, 16, 64, 256])
    ap.add_argument("--context", type=int, default=2048)
    ap.add_argument("--tp", type=int, default=4)
    ap.add_argument("--mlp", choices=("gate-fixed", "native"), default="gate-fixed")
    ap.add_argument("--venv", default=None)
    ap.add_argument("--json", action="store_true", help="print the raw JSON lines")
    args = ap.parse_args(argv)

    rc = 0
    for b in args.batch:
        r = run_llm_analysis(b, args.context, args.tp, args.venv, mlp=args.mlp)
        if r is None:
            rc = 1
            continue
        if args.json:
            print(json.dumps(r))
            continue
        ms = r.get("decode_step_ms")
        print(
            f"batch {b:>4}  decode {'-' if ms is None else f'{ms:7.2f}'} ms"
            f"  (native MLP {r.get('decode_step_ms_native') or float('nan'):7.2f})"
            f"  warm {r['warm_s_per_eval'] * 1e3 if r.get('warm_s_per_eval') else float('nan'):.3f} ms/eval"
            f"  cold {r['cold_s']:.2f} s in-script,"
            f" {r.get('cold_s_incl_interpreter', float('nan')):.2f} s from spawn"
            + (f"  ERROR {r['error']}" if r.get("error") else "")
        )
    return rc


if __name__ == "__main__":
    sys.exit(main())
