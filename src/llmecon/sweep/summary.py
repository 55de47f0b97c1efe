"""Summarise a finished sweep: best points and the throughput frontier, reduced batch by batch.

Per (model, system, phase, context), among points that fit in memory: the *best* point — lowest $/Mtok
when the spec has prices, else most tokens/s per chip (the planner's two objectives, without its
latency targets) — and the *frontier*: points no other point beats on both tokens/s per chip and
tokens/s per user (``pareto_front``'s rule, per key; like the planner's, at one context: a shorter
context always looks faster, so contexts are not mixed). The frontier ignores price (a price scales cost, not
throughput), so a frontier point carries the first price of the axis. Per (model, system) of the
simulations: the lowest $/Mtok (priced) or highest goodput among runs that completed requests.
Ties go to the lowest point id.

Streaming (issue 36 item 5): ``Reducer.add`` takes one record batch at a time — the parts as
``store.finish`` concatenates them, or the finished file read back by ``summarise`` — and keeps only
each batch's candidates (every key's best point and frontier, found for all keys at once by one sort:
``_candidates``) in one Arrow table; candidates are merged again whenever the new ones outnumber the
held ones, so the work is O(rows log rows) and the memory is the frontier's size, not the file's
(the frontier of a union is the frontier of the union of frontiers). The frontier stays an Arrow
table (``SweepSummary.frontier``): 10^8 rows have ~3·10^5 frontier points, ~0.5 GB as Python dicts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..econ.pareto import pareto_front
from .grid import Work

BATCH_ROWS = 1 << 18   # rows decoded at a time (the final file's row groups are at most this)
MERGE_ROWS = 1 << 18   # new candidate rows held before they are merged with the held ones (at least)
POINT_COLUMNS = ("point_id", "model", "system", "phase", "plan", "chips", "weight_dtype", "kv_dtype", "batch",
                 "context", "price_per_chip_hour", "step_s", "tokens_per_s_per_chip", "tokens_per_s_per_user",
                 "usd_per_mtok", "tokens_per_s_per_mw", "bound")
SIM_COLUMNS = ("point_id", "model", "system", "plan", "policy", "workload", "seed", "batch_cap",
               "price_per_chip_hour", "tokens_per_s", "goodput_requests_per_s", "ttft_p99_s", "tpot_p99_s",
               "usd_per_mtok")
POINT_KEY = ("model", "system", "phase", "context")
SIM_KEY = ("model", "system")


@dataclass(frozen=True, kw_only=True)
class SweepSummary:
    objective: str                   # "usd_per_mtok" (priced) or "tokens_per_s_per_chip"
    points_fitting: int
    best: tuple[dict, ...]
    frontier: object = field(compare=False)  # pyarrow.Table of POINT_COLUMNS, by key then fastest per user first
    simulation_best: tuple[dict, ...]

    def frontier_points(self) -> list[dict]:
        """Every frontier point as a dict (large for a big sweep: ``frontier_ends`` is the summary)."""
        return self.frontier.to_pylist()

    def frontier_ends(self) -> list[dict]:
        """Per (model, system, phase, context): the frontier's size and its two ends — the point fastest
        per user and the one with most tokens/s per chip (the last: along a frontier sorted fastest per
        user first, tokens/s per chip strictly rises)."""
        t = self.frontier
        if t.num_rows == 0:
            return []
        codes, _ = _keys(t, POINT_KEY)
        starts = np.flatnonzero(np.concatenate(([True], codes[1:] != codes[:-1])))
        stops = np.append(starts[1:], t.num_rows)
        first, last = t.take(starts).to_pylist(), t.take(stops - 1).to_pylist()
        return [{**{k: f[k] for k in POINT_KEY}, "points": int(n), "fastest_per_user": f, "most_per_chip": m}
                for f, m, n in zip(first, last, stops - starts)]

    def __eq__(self, other) -> bool:
        return (isinstance(other, SweepSummary) and (self.objective, self.points_fitting, self.best,
                                                     self.simulation_best) ==
                (other.objective, other.points_fitting, other.best, other.simulation_best)
                and self.frontier.equals(other.frontier))

    __hash__ = None


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


def _segment_starts(sorted_codes: np.ndarray) -> np.ndarray:
    return np.concatenate(([True], sorted_codes[1:] != sorted_codes[:-1])) if sorted_codes.size else \
        np.zeros(0, dtype=bool)


def _best(code, pid, obj, *, lowest: bool) -> np.ndarray:
    """Row of each key's best objective (NaN never), ties to the lowest point id."""
    rows = np.flatnonzero(~np.isnan(obj))
    first = obj[rows] if lowest else -obj[rows]
    o = rows[np.lexsort((pid[rows], first, code[rows]))]
    return o[_segment_starts(code[o])]


def _fronts(code, pid, chip, user) -> np.ndarray:
    """Rows on their key's frontier (``pareto_front``'s rule for each key's rows in point-id order: kept
    when it beats every strictly faster point's per-chip throughput and is the best, lowest point id, of
    those equally fast), all keys in one sort. Keys holding a non-finite figure take ``pareto_front``."""
    finite = np.isfinite(chip) & np.isfinite(user)
    odd = np.unique(code[~finite])
    out = []
    for k in odd:  # rare: NaN throughput (the library's own rule for it)
        rows = np.flatnonzero(code == k)
        rows = rows[np.argsort(pid[rows], kind="stable")]
        out.append(rows[pareto_front(chip[rows], user[rows])])
    rows = np.flatnonzero(~np.isin(code, odd)) if odd.size else np.arange(code.size)
    if rows.size:
        o = rows[np.lexsort((pid[rows], -chip[rows], -user[rows], code[rows]))]
        c, u, k = chip[o], user[o], code[o]
        lead = _segment_starts(k) | np.concatenate(([True], u[1:] != u[:-1]))  # first of each equally fast group
        _, rank = np.unique(c, return_inverse=True)
        level = k.astype(np.int64) * (int(rank.max()) + 1) + rank     # keys ascend: a key's levels top earlier keys'
        before = np.concatenate(([-1], np.maximum.accumulate(level)[:-1]))
        newkey = _segment_starts(k)
        out.append(o[lead & ((level > before) | newkey)])
    return np.concatenate(out) if out else np.zeros(0, dtype=np.int64)


def _candidates(t, names, *, frontier: bool, objective: str) -> tuple[np.ndarray, np.ndarray]:
    """(best row per key, frontier rows) of table ``t`` keyed by ``names``."""
    code, _ = _keys(t, names)
    pid = t["point_id"].to_numpy(zero_copy_only=False)
    best = _best(code, pid, _num(t, objective), lowest=objective == "usd_per_mtok")
    front = _fronts(code, pid, _num(t, "tokens_per_s_per_chip"), _num(t, "tokens_per_s_per_user")) if frontier \
        else np.zeros(0, dtype=np.int64)
    return best, front


class Reducer:
    """The best rows (and frontiers) of the tables ``add``-ed, keyed by ``names``, in bounded memory."""

    def __init__(self, names: tuple[str, ...], *, frontier: bool, objective: str):
        self.names, self.frontier, self.objective = names, frontier, objective
        self.held, self.new, self.new_rows = None, [], 0

    def add(self, t) -> None:
        if t.num_rows == 0:
            return
        best, front = _candidates(t, self.names, frontier=self.frontier, objective=self.objective)
        part = t.take(np.union1d(best, front))
        self.new.append(part)
        self.new_rows += part.num_rows
        if self.new_rows >= max(MERGE_ROWS, self.held.num_rows if self.held is not None else 0):
            self._merge()

    def _merge(self):
        import pyarrow as pa

        if not self.new:
            return None
        t = pa.concat_tables(([self.held] if self.held is not None else []) + self.new).combine_chunks()
        self.new, self.new_rows = [], 0
        best, front = _candidates(t, self.names, frontier=self.frontier, objective=self.objective)
        self.held = t.take(np.union1d(best, front))
        return best, front, t

    def result(self):
        """(best rows as dicts, frontier as a table), sorted by key (frontier: fastest per user first)."""
        import pyarrow as pa
        import pyarrow.compute as pc

        if self.held is not None:
            self.new.insert(0, self.held)
            self.held = None
        got = self._merge()
        if got is None:
            return [], None
        best, front, t = got
        plain = pa.table({n: (pc.cast(t[n], pa.string()) if pa.types.is_dictionary(t[n].type) else t[n])
                          for n in t.column_names})
        by = [(n, "ascending") for n in self.names]
        b = plain.take(best)
        b = b.take(pc.sort_indices(b, sort_keys=by))
        if not self.frontier:
            return b.to_pylist(), None
        f = plain.take(front)
        f = f.take(pc.sort_indices(f, sort_keys=by + [("tokens_per_s_per_user", "descending")]))
        return b.to_pylist(), f


def _empty_points(sch):
    return sch.empty_table().select([c for c in POINT_COLUMNS if c in sch.names])


class SummaryReducer:
    """``summarise``'s state: feed it record batches of a sweep's rows, then ``summary()``."""

    def __init__(self, work: Work, sch):
        priced = work.spec.analytic_priced
        self.objective = "usd_per_mtok" if priced else "tokens_per_s_per_chip"
        sim_objective = "usd_per_mtok" if work.spec.simulation_priced else "goodput_requests_per_s"
        self.sch, self.names, self.columns = sch, set(sch.names), summary_columns(sch.names)
        self.points = Reducer(POINT_KEY, frontier=True, objective=self.objective)
        self.sims = Reducer(SIM_KEY, frontier=False, objective=sim_objective)
        self.fitting = 0

    def add(self, t) -> None:
        import pyarrow.compute as pc

        t = t.select(self.columns)  # a part holds every output column: filter only those read
        a = t.filter(pc.and_(pc.equal(t["kind"], "analytic"), pc.fill_null(t["fits"], False)))
        self.fitting += a.num_rows
        if a.num_rows:
            self.points.add(a.select([c for c in POINT_COLUMNS if c in self.names]))
        if "completed" in self.names:
            s = t.filter(pc.and_(pc.equal(t["kind"], "simulation"), pc.greater(pc.fill_null(t["completed"], 0), 0)))
            if s.num_rows:
                self.sims.add(s.select([c for c in SIM_COLUMNS if c in self.names]))

    def summary(self) -> SweepSummary:
        best, front = self.points.result()
        sim_best, _ = self.sims.result()
        return SweepSummary(objective=self.objective, points_fitting=self.fitting, best=tuple(best),
                            frontier=front if front is not None else _empty_points(self.sch),
                            simulation_best=tuple(sim_best))


def summary_columns(names) -> list[str]:
    """The columns a summary reads, of a file with columns ``names``."""
    return sorted((set(POINT_COLUMNS) | set(SIM_COLUMNS) | {"kind", "fits", "completed", "note"}) & set(names))


def summarise(work: Work, out: str | Path) -> SweepSummary:
    """Best points and frontier of the finished sweep file (or dataset folder) ``out`` written for ``work``."""
    import pyarrow as pa
    import pyarrow.dataset as ds

    data = ds.dataset(out, format="parquet")   # a file, or a dataset folder (store.py)
    cols = summary_columns(data.schema.names)
    reducer = SummaryReducer(work, data.schema)
    # one batch decoded at a time: Arrow's default read-ahead (16 batches of 4 files) held ~2 GB at 10^7 rows
    # and pre-buffering kept every row group's column ranges read so far (memory grew with the file)
    unbuffered = ds.ParquetFragmentScanOptions(pre_buffer=False)
    for batch in data.to_batches(columns=cols, batch_size=BATCH_ROWS, batch_readahead=0, fragment_readahead=0,
                                 use_threads=False, fragment_scan_options=unbuffered):
        reducer.add(pa.Table.from_batches([batch]))
    return reducer.summary()
