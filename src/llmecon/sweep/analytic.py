"""Evaluate analytic sweep points: one vectorised ``inference`` call per block of a group.

``evaluate_block`` is the one function every execution mode runs (in-process it is called
directly; on Dask it is ``map_blocks``-ed over a chunked ``dask.array.arange`` of the group's
flat point indices, see ``runner``). It makes the same calls the planner makes for one plan
(``planner._evaluate``: ``inference.decode_step`` / ``prefill_step`` vectorised over numpy
arrays) and derives the same figures the same way:

* tokens/s per chip = tokens / step_s / chips, per user = (1 decode, prompt prefill) / step_s
  (``planner._search_phase``);
* $/Mtok = ``context.usd_per_mtok``(step_s x chips / tokens, $1/chip-hour) x price, i.e.
  chips x price / 3600 / tokens_per_s x 1e6 (the planner's form; NaN when unpriced);
* bound = ``roofline.bound_index`` (the rule every view uses), an index into ``roofline.BOUNDS``;
  fits = ``StepResult.fits`` (weights + KV <= HBM).

For prefill the context axis is the prompt length (no cached prefix). Points whose batch is below
adp·pp (idle attention groups, fractional micro-batches) are evaluated as the formula gives; the
planner skips them. This module never imports Dask.
"""

from __future__ import annotations

import numpy as np

from ..econ.context import usd_per_mtok
from ..econ.tco import per_megawatt
from ..step.inference import decode_step, prefill_step
from ..step.roofline import bound_index
from .grid import Group

ROW_DTYPE = np.dtype([
    ("point_id", "i8"), ("batch", "f8"), ("context", "f8"), ("price_per_chip_hour", "f8"),
    ("step_s", "f8"), ("compute_s", "f8"), ("memory_s", "f8"), ("comm_s", "f8"), ("bound", "i1"),
    ("tokens_per_s", "f8"), ("tokens_per_s_per_chip", "f8"), ("tokens_per_s_per_user", "f8"),
    ("usd_per_mtok", "f8"), ("fits", "?"), ("memory_per_chip_bytes", "f8"), ("tokens_per_s_per_mw", "f8"),
])


def evaluate_block(local: np.ndarray, group: Group) -> np.ndarray:
    """Rows (``ROW_DTYPE``) of ``group``'s points at flat indices ``local`` (batch x context x price,
    C order), in the order given.

    One ``inference`` call on the batch column x context row sub-grid the indices span (numpy
    broadcasting, as ``llmecon batch``/``context`` do: context-only terms are computed once per
    context), then each point's values are picked out; a contiguous block of ids wastes at most
    its two partial batch rows. Price only scales $/Mtok, so it is applied per point afterwards."""
    local = np.asarray(local, dtype=np.int64)
    shape = local.shape
    out = np.empty(shape, dtype=ROW_DTYPE)
    if local.size == 0:
        return out
    bi, ci, pi = np.unravel_index(local, group.shape)
    b0, c0 = int(bi.min()), int(ci.min())
    batches = np.asarray(group.batches, dtype=float)[b0:int(bi.max()) + 1, None]
    contexts = np.asarray(group.contexts, dtype=float)[None, c0:int(ci.max()) + 1]
    kw = dict(plan=group.plan, weight_dtype=group.weight_dtype, kv_dtype=group.kv_dtype, profile=group.profile)
    if group.phase == "decode":
        r = decode_step(group.model, group.system, batch=batches, context=contexts, **kw)
    else:
        r = prefill_step(group.model, group.system, batch=batches, prompt_tokens=contexts, **kw)
    grid = (batches.shape[0], contexts.shape[1])
    at = (bi - b0, ci - c0)

    def pick(x):
        return np.broadcast_to(x, grid)[at]

    t = r.time
    context = np.asarray(group.contexts, dtype=float)[ci]
    price = np.asarray(group.prices, dtype=float)[pi]
    step, tokens = pick(r.step_s), pick(r.tokens)
    chips = float(group.plan.chips)
    # each decode sequence emits one token per iteration; a prefill request its whole prompt per step
    per_sequence = 1.0 if group.phase == "decode" else context
    out["point_id"] = group.first_point + local
    out["batch"] = np.asarray(group.batches, dtype=float)[bi]
    out["context"] = context
    out["price_per_chip_hour"] = price
    out["step_s"] = step
    out["compute_s"] = pick(t.compute_s)
    out["memory_s"] = pick(t.memory_s)
    out["comm_s"] = pick(t.comm_s)
    # the one bound rule (roofline.bound_index: the largest of the four terms) as an index into roofline.BOUNDS
    out["bound"] = pick(bound_index(*np.broadcast_arrays(t.compute_s, t.memory_s, t.comm_s, t.overhead_s,
                                                         np.empty(grid))[:4]))
    out["tokens_per_s"] = pick(r.tokens_per_s)
    out["tokens_per_s_per_chip"] = tokens / step / chips
    out["tokens_per_s_per_user"] = per_sequence / step
    out["usd_per_mtok"] = usd_per_mtok(step * chips / tokens, price_per_chip_hour=1.0) * price
    out["fits"] = pick(r.fits)
    out["memory_per_chip_bytes"] = pick(r.memory_per_chip_bytes)
    # econ.tco.per_megawatt, vectorised over the rows (NaN watts: no catalogued power)
    out["tokens_per_s_per_mw"] = per_megawatt(out["tokens_per_s_per_chip"], group.watts_per_chip)
    return out


def segments(ids: np.ndarray, first_points: np.ndarray):
    """(group index, begin, end) of each run of ``ids`` (ascending) that falls in one group."""
    gi = np.searchsorted(first_points, ids, side="right") - 1
    cut = np.flatnonzero(np.diff(gi)) + 1
    begins = np.concatenate([[0], cut]).astype(int)
    ends = np.concatenate([cut, [ids.shape[0]]]).astype(int)
    return [(int(gi[b]), int(b), int(e)) for b, e in zip(begins, ends) if e > b]


def evaluate_points(ids: np.ndarray, groups: tuple[Group, ...], first_points: np.ndarray) -> np.ndarray:
    """Rows of the analytic points with global ids ``ids`` (ascending): one vectorised call per group
    the ids fall in. The in-process loop calls this on ``np.arange(start, stop)``; on Dask it is
    ``map_blocks``-ed over the blocks of ``dask.array.arange(N)`` with the same boundaries."""
    ids = np.asarray(ids, dtype=np.int64)
    out = np.empty(ids.shape, dtype=ROW_DTYPE)
    for gi, b, e in segments(ids, first_points):
        g = groups[gi]
        out[b:e] = evaluate_block(ids[b:e] - g.first_point, g)
    return out
