"""Time AIConfigurator's own deployment search (its ``cli default``) and print one JSON line.

Runs ONLY inside the throw-away venv made by ``setup_aiconfigurator.sh`` (aiconfigurator 0.12.0); nothing
here is imported by llmecon. It calls ``aiconfigurator.cli.api.cli_default`` (the Python form of
``aiconfigurator cli default --model-path M --system S --total-gpus G --backend trtllm --isl --osl --ttft --tpot``),
which builds the aggregated and disaggregated tasks and runs both searches over its measured kernel tables
(database mode SILICON; nothing is written: no --save-dir).

    <venv>/bin/python aiconfigurator_search.py --system h200_sxm --total-gpus 16 [--repeats 2] [--t-launch T]

Timed: the imports; the first search (cold: loads the perf database); then ``--repeats`` more searches in the
same process (warm), best kept. Counted during the first search only (wrapping two module functions with a
counter; the timed warm searches run unwrapped): the (parallel config, batch[, context chunk]) points its sweep
evaluates, i.e. calls of ``sweep.predict_agg_worker`` (aggregated) and ``sweep.predict_disagg_worker`` (per role:
prefill, decode; the aggregated sweep repeats points once per TPOT value it tries, answered from its backend cache),
the distinct (mode, parallel config, batch[, context chunk]) points among them, and the distinct parallel configs.
Its logger is set to ERROR, so the log lines and the ASCII Pareto plot it would print are not formatted (the
summary function still runs).
"""

from __future__ import annotations

import argparse
import json
import logging
import time

T_SCRIPT = time.perf_counter()


def _row(df) -> dict | None:
    """The rank-1 row of a best-config frame, as plain numbers and strings."""
    if df is None or len(df) == 0:
        return None
    rec = df.iloc[0].to_dict()
    keep = ("tokens/s/gpu", "tokens/s/user", "seq/s", "request_rate", "ttft", "tpot", "request_latency",
            "concurrency", "num_total_gpus", "parallel", "bs", "(p)parallel", "(p)bs", "(p)workers",
            "(d)parallel", "(d)bs", "(d)workers", "tp", "pp", "dp", "moe_tp", "moe_ep", "global_bs")
    out = {}
    for k in keep:
        if k in rec:
            v = rec[k]
            out[k] = v.item() if hasattr(v, "item") else (v if isinstance(v, (int, float, str)) else str(v))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model-path", default="deepseek-ai/DeepSeek-V3")
    ap.add_argument("--system", required=True, help="AIConfigurator system name: h100_sxm, h200_sxm, gb200, ...")
    ap.add_argument("--total-gpus", type=int, required=True)
    ap.add_argument("--backend", default="trtllm")
    ap.add_argument("--isl", type=int, default=4096)
    ap.add_argument("--osl", type=int, default=512)
    ap.add_argument("--ttft", type=float, default=2000.0, help="ms")
    ap.add_argument("--tpot", type=float, default=50.0, help="ms")
    ap.add_argument("--repeats", type=int, default=2, help="warm searches after the first")
    ap.add_argument("--t-launch", type=float, default=None, help="parent's perf_counter at spawn (same clock)")
    args = ap.parse_args()

    t0 = time.perf_counter()
    from importlib.metadata import version

    import aiconfigurator.cli.api as api
    from aiconfigurator.sdk import sweep
    import_s = time.perf_counter() - t0
    logging.getLogger("aiconfigurator").setLevel(logging.ERROR)
    logging.getLogger().setLevel(logging.ERROR)

    counts = {"agg": 0, "disagg_prefill": 0, "disagg_decode": 0}
    distinct: set = set()
    parallels: dict[str, set] = {"agg": set(), "disagg_prefill": set(), "disagg_decode": set()}
    orig_agg, orig_disagg = sweep.predict_agg_worker, sweep.predict_disagg_worker

    def _par(model) -> tuple:
        mc = getattr(model, "config", None) or getattr(model, "model_config", None)
        return tuple(getattr(mc, a, None) for a in ("tp_size", "pp_size", "attention_dp_size", "moe_tp_size",
                                                     "moe_ep_size"))

    def agg(**kw):
        counts["agg"] += 1
        parallels["agg"].add(_par(kw.get("model")))
        distinct.add(("agg", _par(kw.get("model")), kw["runtime_config"].batch_size, kw.get("ctx_tokens")))
        return orig_agg(**kw)

    def disagg(**kw):
        key = f"disagg_{kw.get('role')}"
        counts[key] = counts.get(key, 0) + 1
        parallels.setdefault(key, set()).add(_par(kw.get("model")))
        distinct.add((key, _par(kw.get("model")), kw["runtime_config"].batch_size))
        return orig_disagg(**kw)

    def search():
        return api.cli_default(model_path=args.model_path, total_gpus=args.total_gpus, system=args.system,
                               backend=args.backend, isl=args.isl, osl=args.osl, ttft=args.ttft, tpot=args.tpot,
                               top_n=1)

    sweep.predict_agg_worker, sweep.predict_disagg_worker = agg, disagg
    t1 = time.perf_counter()
    result = search()
    first_s = time.perf_counter() - t1
    sweep.predict_agg_worker, sweep.predict_disagg_worker = orig_agg, orig_disagg

    warm = []
    for _ in range(args.repeats):
        t = time.perf_counter()
        search()
        warm.append(time.perf_counter() - t)

    out = {
        "tool": "aiconfigurator", "version": version("aiconfigurator"), "core_version": version("aiconfigurator-core"),
        "model_path": args.model_path, "system": args.system, "total_gpus": args.total_gpus, "backend": args.backend,
        "isl": args.isl, "osl": args.osl, "ttft_ms": args.ttft, "tpot_ms": args.tpot, "database_mode": "SILICON",
        "import_s": import_s, "first_s": first_s, "warm_s": warm, "best_s": min(warm) if warm else first_s,
        "evaluations": counts, "evaluations_total": sum(counts.values()),
        "evaluations_distinct": len(distinct),
        "parallel_configs": {k: len(v) for k, v in parallels.items()},
        "chosen": result.chosen_exp,
        "outcomes": {name: (f"{type(o.error).__name__}: {o.error}"[:300] if o.error is not None else
                            None if name in result.best_configs else "no configuration met the targets or fit")
                     for name, o in (result.outcomes or {}).items()},
        "best": {name: _row(df) for name, df in result.best_configs.items()},
        "script_s": time.perf_counter() - T_SCRIPT,
    }
    if args.t_launch is not None:
        out["spawn_to_result_s"] = time.perf_counter() - args.t_launch
    print(json.dumps(out, default=str))


if __name__ == "__main__":
    main()
