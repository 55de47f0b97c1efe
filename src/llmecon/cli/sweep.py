"""CLI command ``sweep``: design-space and simulation sweeps from a TOML spec, in-process or on Dask
(issue 9). Thin: parse -> ``commands.sweep`` (``sweep.load_spec``/``expand``, every check; ``run_sweep``,
``summarise``) -> report_sweep."""

from __future__ import annotations

import os
from typing import Annotated, Optional

import typer

from ..commands.sweep import CONFIRM_POINTS
from .options import JsonOpt, _console, _emit_json, _show, app

PIPE_WIDTH = 140  # text width when stdout is not a terminal and COLUMNS is unset
class _Bar:
    """A rich progress bar on stderr, started at the first report (not while a cluster starts)."""

    def __init__(self) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, \
            TimeRemainingColumn

        self.bar = Progress(TextColumn("sweeping points"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                            TimeRemainingColumn(), console=Console(stderr=True))
        self.task = None

    def __call__(self, done: int, total: int) -> None:
        if self.task is None:
            self.bar.start()
            self.task = self.bar.add_task("sweep", total=total)
        self.bar.update(self.task, completed=done, total=total)

    def close(self) -> None:
        if self.task is not None:
            self.bar.stop()


@app.command("sweep")
def sweep_cmd(
    spec: Annotated[str, typer.Argument(help="Sweep spec, a TOML file of axes (see docs/sweep.md).")],
    out: Annotated[str, typer.Option("--out", "-o", help="Where the rows go, one per point: X.parquet (one file; "
                                                         "an interrupted run resumes from X.parquet.parts/) or a "
                                                         "folder name (a Parquet dataset, no concatenation).")],
    scheduler: Annotated[Optional[str], typer.Option(
        "--scheduler", help="'local' (a Dask cluster on this machine) or a Dask scheduler address "
                            "(tcp://host:8786). Default: in-process, no Dask.")] = None,
    workers: Annotated[Optional[int], typer.Option("--workers", help="Worker processes for --scheduler local "
                                                                     "(default: one per core).")] = None,
    force: Annotated[bool, typer.Option("--force", help="Start over: discard an earlier --out and its parts "
                                                        "(needed when they were written for another spec).")] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Check the spec and show what it expands to; "
                                                            "compute nothing.")] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help=f"Run a sweep of more than {CONFIRM_POINTS:,} points "
                                                          "(refused without it, with its size).")] = False,
    tco: Annotated[Optional[str], typer.Option(
        "--tco", help="Price every point from TCO inputs, a TOML file (docs/tco.md), per system, in place of "
                      "the spec's prices axis.")] = None,
    as_json: JsonOpt = False,
    frontier_points: Annotated[bool, typer.Option("--frontier-points", help="With --json: every frontier point "
                                                  "(large), not only each frontier's size and ends.")] = False,
) -> None:
    """Sweep a design space: models x systems x plans x phases x batches x contexts x prices through the
    roofline, and serving simulations over workloads; one Parquet row per point, best points and frontier."""
    from ..commands.sweep import prepare, run
    from ..report.sweep import dry_run_view, sweep_dict, sweep_view, work_dict

    work, size = prepare(spec, out, tco=tco, scheduler=scheduler, workers=workers, confirmed=yes or dry_run)
    if dry_run:
        if as_json:
            _emit_json(work_dict(work))
            return
        from . import flag

        _show(dry_run_view(spec, size, work, lambda e: e.render(flag)))
        return
    bar = None if as_json else _Bar()
    try:
        done, summary = run(work, out, scheduler=scheduler, workers=workers, force=force, progress=bar)
    finally:
        if bar is not None:
            bar.close()
    if as_json:
        _emit_json(sweep_dict(work, done, summary, frontier_points=frontier_points))
        return
    console = _console()
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console.width = max(console.width, PIPE_WIDTH)
    _show(sweep_view(work, done, summary), console)
