"""The ``sweep`` command: design-space and simulation sweeps from a TOML spec, in-process or on Dask (issue 9):
``prepare`` (load, price from TCO inputs, expand: every check, and the size refused past ``CONFIRM_POINTS``
unconfirmed), then ``run`` (``sweep.run_sweep``, ``sweep.summarise``)."""

from __future__ import annotations

CONFIRM_POINTS = 1_000_000  # a bigger sweep runs only with --yes
# measured: an 882,000-point decode sweep (llama-3.1-8b / hgx-h100, plans auto; issue 19) peaked at 743 MB
# (tracemalloc) and wrote a 42.7 MB Parquet file; past ~1e6 points memory stops growing (streamed final file and
# summary: 0.91 GB peak RSS at 1e7 rows, benchmarks/results/fast_2026-11-25.md). Rounded up.
MEMORY_BYTES_PER_POINT = 900
MEMORY_PLATEAU_POINTS = 1_000_000
DISK_BYTES_PER_POINT = 50




def prepare(spec: str, out: str, *, tco: str | None = None, scheduler=None, workers=None, confirmed: bool = False):
    """(work, size text): the spec loaded and expanded, nothing computed; a sweep larger than
    ``CONFIRM_POINTS`` refused unless ``confirmed``."""
    from ..errors import SpecError
    from ..files import check_output
    from ..sweep import expand, load_spec
    from ..sweep.runner import check_mode
    from ..units import fmt_bytes

    check_output(out, field="out", folder=not out.endswith(".parquet"))
    loaded = load_spec(spec)
    if tco is not None:  # one TCO rate per system (resolve.tco), in place of a prices axis
        from ..resolve import tco as resolve_tco
        from ..sweep.spec import tco_systems, with_tco

        loaded = with_tco(loaded, {name: resolve_tco(name, path=tco) for name in tco_systems(loaded)})
    work = expand(loaded)  # every spec, catalogue and plan check: nothing runs before this
    check_mode(scheduler, workers)
    memory = MEMORY_BYTES_PER_POINT * min(work.points, MEMORY_PLATEAU_POINTS)
    size = (f"{work.points:,} points, about {fmt_bytes(memory)} of memory and "
            f"{fmt_bytes(work.points * DISK_BYTES_PER_POINT)} on disk")
    if work.points > CONFIRM_POINTS and not confirmed:
        raise SpecError(f"{spec} expands to {size}, more than {CONFIRM_POINTS:,} points", field="yes",
                        show_value=False, fix="add {yes} to run it, {dry_run} to see what it expands to, or "
                                              "shrink the axes")
    return work, size


def run(work, out: str, *, scheduler=None, workers=None, force: bool = False, progress=None):
    """(the run, its summary): every point computed into ``out`` (``sweep.run_sweep``) and summarised
    (streamed from the parts as they are concatenated; read back from ``out`` when the run wrote none)."""
    from ..sweep import run_sweep, summarise

    done = run_sweep(work, out, scheduler=scheduler, workers=workers, force=force, progress=progress)
    return done, done.summary if done.summary is not None else summarise(work, done.out)
