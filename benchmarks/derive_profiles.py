"""Derive the shipped efficiency profiles (src/llmecon/catalog/profiles/*.toml) from the
published measurements in ../shared/validation, using only each set's ``fit`` split
(``measurements.default_split``: ~30% of each set, by model / scenario where the set has
groups, is held out and never seen by the fit). Run:

    python benchmarks/derive_profiles.py [--write]

Without --write it prints the profiles and the fit report; with it, it rewrites the files.
The accuracy benchmark (benchmarks/accuracy.py) then reports fit and hold-out errors per set.
"""

from __future__ import annotations

import argparse
import datetime
from pathlib import Path

from llmecon.fidelity.calibrate import fit_profile
from llmecon.fidelity.validation_sets import read_set

OUT = Path(__file__).resolve().parents[1] / "src" / "llmecon" / "catalog" / "profiles"

# profile -> (accelerators it applies to, sets and the rows of them it is fitted on)
PROFILES = {
    "h100-sxm": {
        "accelerators": ("h100-sxm",),
        "sets": {"vidur-ops-h100": None, "vidur-net-h100": None, "trtllm-static": "hgx-h100",
                 "trtllm-ttft": "hgx-h100", "qwen3-serving": None},
        "note": ('H200 has its own kernel-table profiles since 2026-11-25 (h200-<engine>.toml, '
                 'benchmarks/derive_kernel_profiles.py).'),
    },
    "a100-80gb": {
        "accelerators": ("a100-80gb",),
        "sets": {"vidur-ops-a100": None, "vidur-net-a100": None, "trtllm-static": "hgx-a100",
                 "trtllm-ttft": "hgx-a100"},
        "note": "",
    },
}


def rows_for(spec: dict) -> list:
    rows = []
    for name, system in spec["sets"].items():
        loaded = read_set(name).rows
        rows += [r for r in loaded if system is None or r.system == system]
    return rows


def derive(name: str) -> tuple:
    spec = PROFILES[name]
    rows = rows_for(spec)
    sets = ", ".join(f"{s}" + (f" ({sys_} rows)" if sys_ else "") for s, sys_ in spec["sets"].items())
    derivation = (f"llmecon calibrate (benchmarks/derive_profiles.py, {datetime.date.today().isoformat()}) on the "
                  f"'fit' split of ../shared/validation sets: {sets}. Stages: kernel fractions and floors from "
                  f"vidur GEMM/element-wise op times; collective overheads, step latency and bandwidth share per "
                  f"tier from vidur NCCL all-reduce/send-recv; then one 'engine' stage on TensorRT-LLM rows "
                  f"(v0.9 static batches and batch-1 TTFT, Qwen3-32B in-flight-batching TPOT and TTFT where "
                  f"present): step_overhead_s, engine_floor_scale (CUDA graphs and custom all-reduce remove most "
                  f"of the eager per-kernel and per-call cost) and the serving-loop terms. "
                  f"attention_fraction is not fitted (no attention-kernel data): it stays 1. {spec['note']}")
    prof, report = fit_profile(rows, name=name, accelerators=spec["accelerators"], derivation=derivation)
    fit = {f"{stage}_rows": v["rows"] for stage, v in report.items()}
    fit.update({f"{stage}_skipped": v["skipped"] for stage, v in report.items() if v["skipped"]})
    import dataclasses

    source = "; ".join(sorted({r.source.split("/")[0] if r.source.startswith("vidur") else r.source
                                for r in rows if r.source}))
    return dataclasses.replace(prof, fit=fit, source=f"../shared/validation: {source} (fit split)"), report


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="rewrite src/llmecon/catalog/profiles/*.toml")
    ap.add_argument("--only", choices=list(PROFILES), help="derive one profile")
    args = ap.parse_args()
    for name in [args.only] if args.only else PROFILES:
        prof, report = derive(name)
        for stage, v in report.items():
            print(f"{name} {stage}: {v['rows']} rows {v['params'] or v['skipped']}")
        text = prof.as_toml()
        if args.write:
            OUT.mkdir(parents=True, exist_ok=True)
            (OUT / f"{name}.toml").write_text(text, encoding="utf-8")
            print(f"wrote {OUT / (name + '.toml')}")
        else:
            print(text)


if __name__ == "__main__":
    main()
