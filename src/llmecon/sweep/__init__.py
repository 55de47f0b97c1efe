"""Design-space and simulation sweeps (issue 9): a TOML spec of axes -> one Parquet row per point,
run in-process, on a local Dask cluster or on an existing Dask scheduler (see docs/sweep.md).

    from llmecon.sweep import load_spec, expand, run_sweep, summarise
    work = expand(load_spec("docs/examples/sweep_small.toml"))   # every check, before any work
    run = run_sweep(work, "small.parquet")                       # scheduler="local", workers=2 for Dask
    summary = summarise(work, run.out)
"""

from __future__ import annotations

from .grid import Work, expand
from .runner import SweepRun, run_sweep
from .spec import SweepSpec, load_spec, parse_spec
from .summary import SweepSummary, summarise

__all__ = ["SweepRun", "SweepSpec", "SweepSummary", "Work", "expand", "load_spec", "parse_spec", "run_sweep",
           "summarise"]
