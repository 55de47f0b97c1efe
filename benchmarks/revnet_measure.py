"""Measure a reversible transformer against its storing twin (SPEC F24, llmecon.revnet).

    PYTHONPATH=src python benchmarks/revnet_measure.py [--depths 2 4 8 16 32] [--d-model 256]
        [--seq 256] [--batch 4] [--heads H] [--dropout 0] [--repeats 3] [--json]

Per depth it reports, for the same block objects run both ways: activation bytes autograd saves
for backward (``measure_saved_tensors``; weights excluded), FLOPs of forward+backward counted
with torch's formulas (``count_flops``) and median wall time of forward+backward
(``measure_overhead``), each overhead next to the 4N-vs-3N theory (+1/3, Gomez et al. 2017,
arXiv:1707.04585 §3). Runs on one thread (``torch.set_num_threads(1)``). The input stream
requires grad (as behind an embedding), so both paths compute the same input gradient.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import platform
import sys
from pathlib import Path

from _machine import cpu_name

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import torch  # noqa: E402

from llmecon.revnet import (count_flops, measure_overhead, measure_saved_tensors,  # noqa: E402
                            reversible_transformer, theoretical_overhead)

MIB = 2**20


def measure_depth(depth: int, args: argparse.Namespace) -> dict:
    """All measurements for one depth; a fresh model and input, seeded by depth."""
    torch.manual_seed(depth)
    seq = reversible_transformer(depth, args.d_model, args.heads, dropout=args.dropout)
    x = torch.randn(args.batch, args.seq, 2 * args.d_model, requires_grad=True)
    rev = measure_saved_tensors(seq, x)
    std = measure_saved_tensors(seq.forward_standard, x)
    flops = count_flops(seq, x)
    timing = measure_overhead(seq, x, repeats=args.repeats, warmup=args.warmup)
    return {"depth": depth,
            "saved_activation_bytes_standard": std.activation_bytes,
            "saved_activation_bytes_reversible": rev.activation_bytes,
            "saved_weight_bytes_standard": std.weight_bytes,
            "flops_standard": flops.standard_flops, "flops_reversible": flops.reversible_flops,
            "flop_overhead": flops.overhead,
            "time_standard_s": timing.standard_s, "time_reversible_s": timing.reversible_s,
            "time_overhead": timing.measured_overhead, "theoretical_overhead": timing.theoretical_overhead}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--depths", type=int, nargs="+", default=[2, 4, 8, 16, 32])
    p.add_argument("--d-model", type=int, default=256)
    p.add_argument("--seq", type=int, default=256)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--heads", type=int, default=None, help="default: d_model // 64 (at least 1)")
    p.add_argument("--dropout", type=float, default=0.0)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    args = p.parse_args(argv)
    args.heads = args.heads or max(1, args.d_model // 64)
    torch.set_num_threads(1)

    meta = {"date": dt.date.today().isoformat(), "torch": torch.__version__, "threads": torch.get_num_threads(),
            "cpu": cpu_name(), "python": platform.python_version(), "d_model": args.d_model, "heads": args.heads,
            "seq": args.seq, "batch": args.batch, "dropout": args.dropout, "dtype": "float32",
            "repeats": args.repeats, "theoretical_overhead": theoretical_overhead()}
    if not args.json:
        print(f"# revnet_measure {meta['date']}  torch {meta['torch']}  threads {meta['threads']}  {meta['cpu']}")
        print(f"# d_model {args.d_model}, heads {args.heads}, seq {args.seq}, batch {args.batch}, float32, "
              f"dropout {args.dropout}; time = median of {args.repeats} fwd+bwd; theory +{theoretical_overhead():.1%}")
        print(f"{'depth':>5} {'std MiB':>9} {'rev MiB':>8} {'std/rev':>8} {'FLOP ovh':>9} "
              f"{'std s':>8} {'rev s':>8} {'time ovh':>9} {'theory':>7}")
    rows = []
    for depth in args.depths:
        r = measure_depth(depth, args)
        rows.append(r)
        if not args.json:
            print(f"{depth:>5} {r['saved_activation_bytes_standard'] / MIB:>9.2f} "
                  f"{r['saved_activation_bytes_reversible'] / MIB:>8.2f} "
                  f"{r['saved_activation_bytes_standard'] / r['saved_activation_bytes_reversible']:>8.1f} "
                  f"{r['flop_overhead']:>+9.1%} {r['time_standard_s']:>8.3f} {r['time_reversible_s']:>8.3f} "
                  f"{r['time_overhead']:>+9.1%} {r['theoretical_overhead']:>+7.1%}", flush=True)
    if args.json:
        print(json.dumps({"meta": meta, "rows": rows}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
