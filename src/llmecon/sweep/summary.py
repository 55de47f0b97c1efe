"""Summarise a finished sweep file: best points and the throughput frontier, read in batches.

Per (model, system, phase, context), among points that fit in memory: the *best* point — lowest $/Mtok
when the spec has prices, else most tokens/s per chip (the planner's two objectives, without its
latency targets) — and the *frontier*: points no other point beats on both tokens/s per chip and
tokens/s per user (``planner.pareto_front``; like the planner's, at one context: a shorter
context always looks faster, so contexts are not mixed). The frontier ignores price (a price scales cost, not
throughput), so a frontier point carries the first price of the axis. Per (model, system) of the
simulations: the lowest $/Mtok (priced) or highest goodput among runs that completed requests.
Ties go to the lowest point id. The file (or dataset folder) is read in record batches and reduced per batch (the
frontier of a union is the frontier of the union of frontiers), so memory stays bounded.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..econ.planner import pareto_front
from .grid import Work

BATCH_ROWS = 1 << 18   # rows decoded at a time (the final file's row groups are at most this)
COMPACT_AT = 16        # per-batch candidate tables a key holds before they are merged into one
POINT_COLUMNS = ("point_id", "model", "system", "phase", "plan", "chips", "weight_dtype", "kv_dtype", "batch",
                 "context", "price_per_chip_hour", "step_s", "tokens_per_s_per_chip", "tokens_per_s_per_user",
                 "usd_per_mtok", "tokens_per_s_per_mw", "bound")
SIM_COLUMNS = ("point_id", "model", "system", "plan", "policy", "workload", "seed", "batch_cap",
               "price_per_chip_hour", "tokens_per_s", "goodput_requests_per_s", "ttft_p99_s", "tpot_p99_s",
               "usd_per_mtok")


@dataclass(frozen=True, kw_only=True)
class SweepSummary:
    objective: str                   # "usd_per_mtok" (priced) or "tokens_per_s_per_chip"
    points_fitting: int
    best: tuple[dict, ...]
    frontier: tuple[dict, ...]
    simulation_best: tuple[dict, ...]


def _keys(table, names):
    """Integer codes of the rows' (names...) combination and the labels, via Arrow."""
    import pyarrow as pa
    import pyarrow.compute as pc

    joined = pc.binary_join_element_wise(*[pc.cast(table[n], "string") for n in names], "\x1f")
    enc = pc.dictionary_encode(joined).combine_chunks() if isinstance(joined, pa.ChunkedArray) else \
        pc.dictionary_encode(joined)
    return enc.indices.to_numpy(zero_copy_only=False), enc.dictionary.to_pylist()


def _num(table, name: str) -> np.ndarray:
    return table[name].to_numpy(zero_copy_only=False).astype(float)


def _pick(t, *, frontier: bool, objective: str):
    """(best row index or None, frontier row indices) of table ``t``; ties to the lowest point id."""
    pid = t["point_id"].to_numpy()
    idx = np.argsort(pid, kind="stable")
    obj = _num(t, objective)
    ok = idx[~np.isnan(obj[idx])]
    best = None
    if ok.size:
        first = obj[ok] if objective == "usd_per_mtok" else -obj[ok]
        best = int(ok[np.lexsort((pid[ok], first))[0]])
    front = []
    if frontier:
        front = [int(i) for i in idx[pareto_front(_num(t, "tokens_per_s_per_chip")[idx],
                                                 _num(t, "tokens_per_s_per_user")[idx])]]
    return best, front


def _select(table, *, frontier: bool, objective: str) -> dict[str, object]:
    """Per key: the candidate rows of one batch (its best point and its frontier)."""
    codes, labels = _keys(table, ("model", "system", "phase", "context") if frontier else ("model", "system"))
    out = {}
    for k, label in enumerate(labels):
        sub = table.take(np.flatnonzero(codes == k))
        best, front = _pick(sub, frontier=frontier, objective=objective)
        keep = sorted(set(front) | ({best} if best is not None else set()))
        if keep:
            out[label] = sub.take(keep)
    return out


def _add(parts: dict[str, list], found: dict[str, object], *, frontier: bool, objective: str) -> None:
    """Append one batch's candidates per key; a key holding ``COMPACT_AT`` tables has them merged into
    their own best point and frontier (the same rows the final reduction keeps), so the candidates held
    stay bounded by the keys and their frontiers, not by the number of batches (many small Arrow tables
    held ~4.6 GB at 7.8·10^7 rows before)."""
    import pyarrow as pa

    for label, table in found.items():
        held = parts.setdefault(label, [])
        held.append(table)
        if len(held) >= COMPACT_AT:
            t = pa.concat_tables(held)
            best, front = _pick(t, frontier=frontier, objective=objective)
            held[:] = [t.take(sorted(set(front) | ({best} if best is not None else set())))]


def _reduce(parts: dict[str, list], *, frontier: bool, objective: str):
    """Merge per-batch candidates: (best rows, frontier rows) as lists of dicts, keys sorted."""
    import pyarrow as pa

    best, front = [], []
    for label in parts:
        t = pa.concat_tables(parts[label])
        b, f = _pick(t, frontier=frontier, objective=objective)
        if b is not None:
            best.append(t.slice(b, 1).to_pylist()[0])
        if f:
            front.extend(t.take(f).to_pylist())

    def key(p: dict) -> tuple:
        return p["model"], p["system"], p.get("phase") or "", p.get("context") or 0.0

    return sorted(best, key=key), sorted(front, key=lambda p: (*key(p), -p["tokens_per_s_per_user"]))


def summarise(work: Work, out: str | Path) -> SweepSummary:
    """Best points and frontier of the finished sweep file ``out`` written for ``work``."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.dataset as ds

    priced = work.spec.analytic_priced
    objective = "usd_per_mtok" if priced else "tokens_per_s_per_chip"
    sim_priced = work.spec.simulation_priced
    sim_objective = "usd_per_mtok" if sim_priced else "goodput_requests_per_s"
    data = ds.dataset(out, format="parquet")   # a file, or a dataset folder (store.py)
    names = set(data.schema.names)
    cols = sorted((set(POINT_COLUMNS) | set(SIM_COLUMNS) | {"kind", "fits", "completed", "note"}) & names)
    points, sims, fitting = {}, {}, 0
    # one batch decoded at a time: Arrow's default read-ahead (16 batches of 4 files) held ~2 GB at 10^7 rows
    # and pre-buffering kept every row group's column ranges read so far (memory grew with the file)
    unbuffered = ds.ParquetFragmentScanOptions(pre_buffer=False)
    for batch in data.to_batches(columns=cols, batch_size=BATCH_ROWS, batch_readahead=0, fragment_readahead=0,
                                 use_threads=False, fragment_scan_options=unbuffered):
        t = pa.Table.from_batches([batch])
        a = t.filter(pc.and_(pc.equal(t["kind"], "analytic"), pc.fill_null(t["fits"], False)))
        fitting += a.num_rows
        if a.num_rows:
            _add(points, _select(a.select([c for c in POINT_COLUMNS if c in names]), frontier=True,
                                 objective=objective), frontier=True, objective=objective)
        s = t.filter(pc.and_(pc.equal(t["kind"], "simulation"), pc.greater(pc.fill_null(t["completed"], 0), 0))) \
            if "completed" in names else t.slice(0, 0)
        if s.num_rows:
            _add(sims, _select(s.select([c for c in SIM_COLUMNS if c in names]), frontier=False,
                               objective=sim_objective), frontier=False, objective=sim_objective)
    best, front = _reduce(points, frontier=True, objective=objective)
    sim_best, _ = _reduce(sims, frontier=False, objective=sim_objective)
    return SweepSummary(objective=objective, points_fitting=fitting, best=tuple(best), frontier=tuple(front),
                        simulation_best=tuple(sim_best))
