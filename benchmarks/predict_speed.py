"""Batch-prediction speed: ``llmecon predict`` on 10,000 mixed cases (target: under 5 s).

    python benchmarks/predict_speed.py [--cases 10000] [--repeats 3] [--no-pin]

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

from _machine import cpu_name, pin_one_core
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=10_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--no-pin", action="store_true")
    args = ap.parse_args()
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
