"""Run a sweep's chunks in-process, on a local Dask cluster, or on an existing Dask scheduler.

* in-process (``scheduler=None``): a loop over the pending chunks calling
  ``analytic.evaluate_chunk`` / ``simulation.run_scenario``; Dask is never imported.
* ``scheduler="local"``: a ``distributed.LocalCluster`` of ``workers`` single-threaded worker
  processes (default: one per core), started and stopped here.
* ``scheduler="tcp://host:8786"`` (any Dask address): a ``distributed.Client`` to that scheduler.

On Dask the analytic points are one ``dask.array.arange`` of point ids chunked at the sweep's
chunk boundaries, ``map_blocks``-ed through ``analytic.evaluate_points`` (the very function the
in-process loop calls on the same id ranges, so rows are bitwise identical); its pending blocks
are computed as futures, and each simulation scenario is one ``client.submit`` task. On a local
cluster (or with ``workers_write``) each worker writes the part files of its chunks itself and only
their sizes come back; otherwise the bytes stream back through ``distributed.as_completed`` to this
process, which writes each part (so remote workers need no shared file system). Either way this
process reports progress. A worker that dies loses only its running tasks,
which the scheduler reruns elsewhere; ``retries`` more attempts cover task errors. Parts are keyed
by chunk id and written once, so a rerun task cannot duplicate rows. Omitted: bounding the number of
in-flight futures (every pending chunk is submitted at once; fine up to ~10^5 chunks).
"""

from __future__ import annotations

import contextlib

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from ..errors import LlmeconError, SpecError, require_whole
from .analytic import ROW_DTYPE, evaluate_points
from .grid import Chunk, Work
from .store import PartLedger, finish, is_dataset, parts_dir, prepare, write_part
from .summary import SweepSummary, SummaryReducer
from .table import encode_analytic, encode_scenario, schema

Progress = Callable[[int, int], None]  # (points done, points in the sweep)
DIST_HINT = "pip install 'llmecon[dist]'"
CONNECT_TIMEOUT_S = 10


@dataclass(frozen=True, kw_only=True)
class SweepRun:
    """What one ``run_sweep`` call did."""

    out: str
    mode: str                 # "in-process", "local cluster" or the scheduler address
    workers: int              # Dask workers (0 in-process)
    spec_hash: str
    points: int
    chunks: int
    skipped_chunks: int       # finished by an earlier run and reused
    computed_chunks: int
    computed_points: int
    rows_written: int
    elapsed_s: float          # computing and writing parts (excludes cluster start and the final concatenation)
    summary: SweepSummary | None = None  # streamed from the parts while they were concatenated (else None:
    #                                      a dataset folder, or a file finished by an earlier run: ``summarise``)

    @property
    def points_per_s(self) -> float | None:
        return self.computed_points / self.elapsed_s if self.computed_points and self.elapsed_s > 0 else None


def chunk_bytes(work: Work, chunk: Chunk) -> bytes:
    """Compute ``chunk`` here: the in-process path (Dask runs the same two functions on workers)."""
    outputs = work.spec.outputs
    if chunk.scenario >= 0:
        return encode_scenario(work.scenarios[chunk.scenario], outputs)
    rows = evaluate_points(np.arange(chunk.start, chunk.stop, dtype=np.int64), work.groups, work.first_points)
    return encode_analytic(rows, groups=work.groups, first_points=work.first_points, outputs=outputs)


def _write_on_worker(data: bytes, out: str, chunk_id: int) -> int:
    """A part's bytes written by the worker that made them (``store.write_part``: atomic); returns
    the size, so that only a number travels back to the client."""
    write_part(Path(out), chunk_id, data)
    return len(data)


def check_mode(scheduler: str | None, workers: int | None) -> None:
    """Reject a bad scheduler/workers pair, and Dask modes without Dask, before any work."""
    if workers is not None:
        require_whole("workers", workers)
    if scheduler is None:
        if workers is not None:  # about the pair: no one field, the text names both
            raise SpecError("{workers} needs {scheduler} local (in-process runs use this process only)")
        return
    if scheduler != "local":
        if "://" not in scheduler:
            raise SpecError("give 'local' or a Dask scheduler address such as tcp://host:8786", field="scheduler",
                            value=scheduler)
        if workers is not None:
            raise SpecError("{workers} applies to {scheduler} local only; an existing scheduler has its own workers")
    from importlib.util import find_spec

    if find_spec("dask") is None or find_spec("distributed") is None:
        raise SpecError(f"needs Dask: {DIST_HINT}", field="scheduler", fix="or run without {scheduler}, in-process")


def _open_client(scheduler: str, workers: int | None):
    """(client, cluster or None) for a Dask mode."""
    import logging
    import os

    from distributed import Client, LocalCluster

    if scheduler == "local":
        cluster = LocalCluster(n_workers=workers or os.cpu_count() or 1, threads_per_worker=1, processes=True,
                               dashboard_address=":0", silence_logs=logging.ERROR)
        return Client(cluster), cluster
    try:
        return Client(scheduler, timeout=CONNECT_TIMEOUT_S), None
    except (OSError, TimeoutError) as exc:
        raise LlmeconError(f"cannot connect ({exc})", field="scheduler", value=scheduler,
                           fix="check the address and that the scheduler is running") from None


def _workers(client) -> int:
    """Workers the scheduler has, waiting up to ``CONNECT_TIMEOUT_S`` for a first one."""
    if not client.nthreads():
        try:
            client.wait_for_workers(1, timeout=CONNECT_TIMEOUT_S)
        except TimeoutError:
            raise LlmeconError(f"the Dask scheduler has no workers (waited {CONNECT_TIMEOUT_S} s); start some with "
                               "`dask worker ADDRESS`") from None
    return len(client.nthreads())


def run_sweep(work: Work, out: str | Path, *, scheduler: str | None = None, workers: int | None = None,
              client=None, force: bool = False, progress: Progress | None = None, retries: int = 3,
              workers_write: bool | None = None) -> SweepRun:
    """Compute every chunk of ``work`` not already finished under ``out`` and write ``out``.

    ``client``: an open ``distributed.Client`` to use instead of ``scheduler`` (benchmarks, tests).
    ``workers_write``: Dask workers write their own part files (they must see ``out``'s folder: true
    of a local cluster, the default there) instead of sending the bytes to this process (the default
    for a remote scheduler, which needs no shared file system).
    Raises SpecError for a bad mode or an ``out`` made by another spec (unless ``force``)."""
    out = Path(out)
    if not out.parent.is_dir():
        raise SpecError(f"folder {out.parent} does not exist", field="out", value=out)
    if client is None:
        check_mode(scheduler, workers)
    sch = schema(work.spec.outputs)
    cluster = None
    if client is None and scheduler is not None:
        client, cluster = _open_client(scheduler, workers)
        own = True
    else:
        own = False
    ledger = None
    try:
        mode = "in-process" if client is None else ("local cluster" if cluster is not None else
                                                    scheduler or "dask client")
        n_workers = 0 if client is None else _workers(client)
        done = prepare(work, out, force=force)
        pending = [c for c in work.chunks if c.id not in done]
        total = work.points
        state = {"points": sum(c.n_points for c in work.chunks if c.id in done)}

        if workers_write is None:
            workers_write = cluster is not None

        ledger = PartLedger(out)  # each part's digest in the manifest: a restart trusts only matching parts

        def finished(chunk: Chunk, data) -> None:
            if not isinstance(data, int):  # an int: the worker wrote the part itself
                write_part(out, chunk.id, data)
            ledger.add(chunk.id, None if isinstance(data, int) else data)
            state["points"] += chunk.n_points
            if progress is not None:
                progress(state["points"], total)

        if progress is not None:
            progress(state["points"], total)
        start = time.perf_counter()
        if pending and client is None:
            for chunk in pending:
                finished(chunk, chunk_bytes(work, chunk))
        elif pending:
            _run_dask(client, work, pending, finished, retries=retries,
                      write_to=str(out.resolve()) if workers_write else None)
        elapsed = time.perf_counter() - start
    finally:
        if ledger is not None:  # parts finished before a failure stay trusted on the restart
            with contextlib.suppress(OSError):
                ledger.flush()
        if own:
            client.close()
            if cluster is not None:
                cluster.close()
    reducer = None if is_dataset(out) else SummaryReducer(work, sch)
    done_before = out.exists() and not parts_dir(out).exists()
    rows = finish(work, out, sch, each=None if reducer is None else reducer.add)
    summary = None if reducer is None or done_before else reducer.summary()
    return SweepRun(out=str(out), mode=mode, workers=n_workers, spec_hash=work.spec_hash, points=work.points,
                    chunks=len(work.chunks), skipped_chunks=len(done), computed_chunks=len(pending),
                    computed_points=sum(c.n_points for c in pending), rows_written=rows, elapsed_s=elapsed,
                    summary=summary)


def _run_dask(client, work: Work, pending: list[Chunk], finished, *, retries: int, write_to: str | None) -> None:
    import dask
    import dask.array as da
    from distributed import as_completed

    tag = work.spec_hash[:16]
    outputs = work.spec.outputs
    futures = {}
    analytic = [c for c in work.chunks if c.scenario < 0]
    todo = {c.id for c in pending}
    wanted = [k for k, c in enumerate(analytic) if c.id in todo]
    if wanted:
        # one key holds the groups (and one their first ids): shipped and unpickled once per worker, so
        # the models' cached derived figures stay warm across that worker's tasks
        groups = dask.delayed(work.groups, name=f"llmecon-groups-{tag}", traverse=False)
        firsts = dask.delayed(work.first_points, name=f"llmecon-firsts-{tag}", traverse=False)
        index = da.arange(work.analytic_points, chunks=(tuple(c.n_points for c in analytic),), dtype=np.int64)
        rows = index.map_blocks(evaluate_points, groups=groups, first_points=firsts, dtype=ROW_DTYPE,
                                meta=np.empty((0,), ROW_DTYPE), name=f"llmecon-sweep-{tag}")
        blocks = rows.to_delayed().ravel()
        encode = dask.delayed(encode_analytic, pure=True)
        parts = [encode(blocks[k], groups=groups, first_points=firsts, outputs=outputs,
                        dask_key_name=f"llmecon-part-{tag}-{k}") for k in wanted]
        if write_to is not None:
            write = dask.delayed(_write_on_worker, pure=True)
            parts = [write(p, write_to, analytic[k].id, dask_key_name=f"llmecon-write-{tag}-{k}")
                     for p, k in zip(parts, wanted)]
        futures.update(zip(client.compute(parts, retries=retries), [analytic[k] for k in wanted]))
    for c in pending:
        if c.scenario >= 0:
            sc = work.scenarios[c.scenario]
            futures[client.submit(encode_scenario, sc, outputs, key=f"llmecon-sim-{tag}-{sc.index}",
                                  retries=retries)] = c
    try:
        for fut in as_completed(list(futures)):
            chunk = futures.pop(fut)
            data = fut.result()
            fut.release()
            finished(chunk, data)
    finally:
        if futures:
            client.cancel(list(futures))
