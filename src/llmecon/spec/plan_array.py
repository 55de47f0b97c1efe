"""Many plans as arrays, so that the step formulas evaluate every (plan, batch) point of a search in
one vectorised call (the planner, issue 23).

``PlanArray`` has the attributes and methods of ``Plan`` that the step formulas read (``tp``,
``adp``, ``ep``, ``pp``, ``width``, ``expert_tp``, ``chips``, ``stage_fraction``, ``kv_shards``,
``expert_slots``), each an array with one entry per point, and the placement ``place`` gives each
plan (tiers as small integer codes). The formulas broadcast over it as they do over batch and
context. The few that branch on a whole number (a collective's participants, an expert-load table's
slots and groups) run once per distinct value through ``groups``, on the points that have it, with
the same scalar code: the numbers are those of a per-plan call, bit for bit, because numpy's
element-wise arithmetic does not depend on which other elements share the array.

Plans are validated and placed one by one when the array is built (``from_plans``); nothing is
checked again per point.

``column()`` lays the plans out as a column (every array (plans, 1)): given a batch row (1, batches), the
formulas evaluate the whole (plans x batches) rectangle, the plan-only terms once per plan (the planner,
issue 36). ``groups`` then indexes rows, and ``per_distinct_row`` runs a whole-number formula once per
distinct plan key on the distinct rows of its input (a few token rows, not one per plan), gathering the
results back: the same numbers, bit for bit.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, fields, replace

import numpy as np

from .hardware import System
from .model import Model
from .plan import Plan, place

STAGE_TIERS = ("none", "scale_up", "two_tier")                 # Placement.tp_tier / ep_tier
HOP_TIERS = ("none", "scale_up", "scale_out", "both")          # Placement.tiers["pp"]


@dataclass(frozen=True)
class CodedTier:
    """A tier per point: ``codes`` index ``names`` (``STAGE_TIERS`` or ``HOP_TIERS``)."""

    codes: np.ndarray
    names: tuple

    def lookup(self, value_of) -> np.ndarray:
        """``value_of(name)`` for every point (evaluated once per name)."""
        return np.asarray([float(value_of(n)) for n in self.names])[self.codes]


@dataclass(frozen=True, kw_only=True)
class PlanArray:
    """Plans as arrays (module docstring); ``row`` is each entry's index in ``plans``."""

    plans: tuple
    row: np.ndarray
    tp: np.ndarray
    ep: np.ndarray
    pp: np.ndarray
    adp: np.ndarray
    redundant_experts: np.ndarray
    chips_per_domain: np.ndarray
    tp_tier: np.ndarray
    ep_tier: np.ndarray
    pp_hops_up: np.ndarray
    pp_hops_out: np.ndarray

    @classmethod
    def from_plans(cls, plans, system: System) -> "PlanArray":
        """One entry per plan, placed on ``system`` (each plan must already be valid there)."""
        return cls.from_placed([(p, place(p, system)) for p in plans])

    @classmethod
    def from_placed(cls, placed) -> "PlanArray":
        """One entry per (plan, ``place(plan, system)``) pair."""
        plans = tuple(p for p, _ in placed)
        cols = {k: [] for k in ("tp", "ep", "pp", "adp", "redundant_experts", "chips_per_domain", "tp_tier",
                                "ep_tier", "pp_hops_up", "pp_hops_out")}
        for p, where in placed:
            for k, v in (("tp", p.tp), ("ep", p.ep), ("pp", p.pp), ("adp", p.adp),
                         ("redundant_experts", p.redundant_experts), ("chips_per_domain", where.chips_per_domain),
                         ("tp_tier", STAGE_TIERS.index(where.tp_tier)), ("ep_tier", STAGE_TIERS.index(where.ep_tier)),
                         ("pp_hops_up", where.pp_hops_up), ("pp_hops_out", where.pp_hops_out)):
                cols[k].append(v)
        arrays = {k: np.asarray(v, dtype=np.int64) for k, v in cols.items()}
        return cls(plans=plans, row=np.arange(len(plans)), **arrays)

    def take(self, index) -> "PlanArray":
        """The entries at ``index`` (e.g. one per evaluated point)."""
        return replace(self, **{f.name: getattr(self, f.name)[index] for f in fields(self) if f.name != "plans"})

    def __len__(self) -> int:
        return int(self.row.size)

    # --- what Plan offers (derived arrays computed once per PlanArray) ---------------------------
    @functools.cached_property
    def width(self):
        return self.tp * self.adp

    @functools.cached_property
    def expert_tp(self):
        return self.width // self.ep

    @functools.cached_property
    def chips(self):
        return self.width * self.pp

    def stage_fraction(self, model: Model):
        """ceil(L/pp)/L per entry (``Plan.stage_fraction``)."""
        cache = self.__dict__.setdefault("_stage_fraction", {})
        if model.n_layers not in cache:
            cache[model.n_layers] = np.ceil(model.n_layers / self.pp) / model.n_layers
        return cache[model.n_layers]

    def kv_shards(self, model: Model):
        """min(KV heads, tp) per entry; 1 for MLA (``Plan.kv_shards``)."""
        if model.attention.kind == "mla":
            return 1
        return np.minimum(model.attention.n_kv_heads, self.tp)

    def expert_slots(self, model: Model):
        """E + r per entry (0 for a dense model; ``Plan.expert_slots``)."""
        return model.moe.n_routed + self.redundant_experts if model.is_moe else 0 * self.tp

    # --- placement ---------------------------------------------------------------------------
    @property
    def tiers(self) -> dict:
        """``Placement.tiers`` per entry, as ``CodedTier``s."""
        up, out = self.pp_hops_up > 0, self.pp_hops_out > 0
        hops = np.where(~up & ~out, 0, np.where(~up, 2, np.where(~out, 1, 3)))
        return {"tp": CodedTier(self.tp_tier, STAGE_TIERS), "ep": CodedTier(self.ep_tier, STAGE_TIERS),
                "pp": CodedTier(hops, HOP_TIERS)}

    def groups(self, *keys):
        """[(key values, indices)] for each distinct combination of the integer arrays ``keys``, one
        value per entry and the same for entries of one plan (plan attributes), indices ascending
        within a group: what a formula that needs whole numbers runs on."""
        n = len(self)
        if not n:
            return []
        if self.row.ndim == 2:
            return self._column_groups(keys)
        keys = [np.broadcast_to(np.asarray(k, dtype=np.int64), self.row.shape) for k in keys]
        # distinct combinations are found among the plans (few), then spread to the entries by row
        at = np.full(len(self.plans), -1, dtype=np.int64)
        at[self.row] = np.arange(n)                     # one entry of each plan present
        at = at[at >= 0]
        values, gid = _unique_rows(np.stack([k[at] for k in keys], axis=1))
        if len(values) == 1:
            return [(tuple(int(v) for v in values[0]), np.arange(n))]
        gid_of_plan = np.zeros(len(self.plans), dtype=np.int16 if len(values) < 2 ** 15 else np.int64)
        gid_of_plan[self.row[at]] = gid.ravel()
        point_gid = gid_of_plan[self.row]
        order = np.argsort(point_gid, kind="stable")    # a radix sort for int16
        bounds = np.cumsum(np.bincount(point_gid, minlength=len(values)))[:-1]
        return [(tuple(int(v) for v in values[g]), idx) for g, idx in enumerate(np.split(order, bounds))]

    def column(self) -> "PlanArray":
        """The plans as a column: every array of shape (plans, 1), so that a formula given a batch row
        (1, batches) evaluates the (plans x batches) rectangle, the plan-only terms once per plan
        (``econ.plan_grid``). ``groups`` then indexes rows of the rectangle."""
        return replace(self, **{f.name: getattr(self, f.name).reshape(-1, 1) for f in fields(self)
                                if f.name != "plans"})

    def shape(self, *values) -> tuple:
        """The shape of the points: the entries broadcast against ``values`` (a column layout's rows
        against a batch row)."""
        return np.broadcast_shapes(self.row.shape, *(np.shape(v) for v in values))

    def per_distinct_row(self, values, fn, *keys) -> tuple:
        """``fn(key values, rows)`` once per distinct plan key (the integer arrays ``keys``) on the
        distinct rows of ``values`` (one row per plan of a column layout) that plans with that key
        have, its results (a tuple of arrays, one row per row given) gathered back to every plan's
        row: a formula that needs whole numbers and is costly per point (an expert-load table, a
        power) runs on a few rows, not the whole rectangle. Element-wise, so the numbers are those
        of one call over every row, bit for bit. Needs ``row.ndim == 2`` (``column``)."""
        v = np.broadcast_to(np.asarray(values, dtype=float), self.shape(values))
        urows, row_of = _distinct_rows(v)
        k = [np.broadcast_to(np.asarray(x, dtype=np.int64), self.row.shape)[:, 0] for x in keys]
        combos, gid = _unique_rows(np.stack([*k, row_of], axis=1))
        key_of = combos[:, :-1]  # sorted, so the combinations of one key are consecutive
        starts = np.flatnonzero(np.concatenate(([True], np.any(key_of[1:] != key_of[:-1], axis=1))))
        tables = None
        for a, b, key in zip(starts.tolist(), [*starts[1:].tolist(), len(combos)], key_of[starts].tolist()):
            out = fn(tuple(key), urows[combos[a:b, -1]])
            if tables is None:
                tables = [np.empty((len(combos), v.shape[1])) for _ in out]
            for table, o in zip(tables, out):
                table[a:b] = o
        gid = gid.ravel()
        return tuple(table[gid] for table in tables)

    def _column_groups(self, keys):
        """``groups`` of a column layout: one plan per row, indices over rows (a slice when all agree)."""
        keys = [np.broadcast_to(np.asarray(k, dtype=np.int64), self.row.shape)[:, 0] for k in keys]
        values, gid = _unique_rows(np.stack(keys, axis=1))
        if len(values) == 1:
            return [(tuple(int(v) for v in values[0]), slice(None))]
        order = np.argsort(gid, kind="stable")
        bounds = np.cumsum(np.bincount(gid, minlength=len(values)))[:-1]
        return [(tuple(int(v) for v in values[g]), idx) for g, idx in enumerate(np.split(order, bounds))]


def _distinct_rows(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(distinct rows, the distinct row of each row) of a 2-D float array: candidates by three sample
    columns (first, middle, last), then checked in full (every row equals its candidate); if the check
    fails, every row stands for itself."""
    sample = v[:, [0, v.shape[1] // 2, v.shape[1] - 1]]
    order = np.lexsort(sample.T[::-1])
    ranked = sample[order]
    new = np.empty(order.size, dtype=bool)
    new[0] = True
    np.any(ranked[1:] != ranked[:-1], axis=1, out=new[1:])
    inverse = np.empty(order.size, dtype=np.int64)
    inverse[order] = np.cumsum(new) - 1
    rows = v[order[new]]
    if np.array_equal(rows[inverse], v):
        return rows, inverse
    return np.asarray(v), np.arange(v.shape[0])


def _unique_rows(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(a, axis=0, return_inverse=True)`` for rows of small non-negative integers: each
    row as one mixed-radix int64 (numeric order = the rows' lexicographic order), a 1-D unique being
    several times faster than the row-wise one. Other inputs take the row-wise path."""
    lo = a.min(axis=0) if a.size else None
    if a.size and np.all(lo >= 0):
        radix = a.max(axis=0).astype(np.int64) + 1
        if float(np.prod(radix.astype(float))) < 2.0 ** 62:
            code = np.zeros(a.shape[0], dtype=np.int64)
            for j in range(a.shape[1]):
                code = code * radix[j] + a[:, j]
            _, first, inverse = np.unique(code, return_index=True, return_inverse=True)
            return a[first], inverse
    values, inverse = np.unique(a, axis=0, return_inverse=True)
    return values, inverse


def is_plan_array(plan) -> bool:
    return isinstance(plan, PlanArray)


__all__ = ["PlanArray", "CodedTier", "STAGE_TIERS", "HOP_TIERS", "Plan", "is_plan_array"]
