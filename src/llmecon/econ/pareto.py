"""The Pareto frontier of (per-chip, per-user) throughput points (higher is better on each), used by the
planner (``econ.planner``) and the whole-request frontier (``econ.serving_frontier``)."""

from __future__ import annotations

import numpy as np


def pareto_front(per_chip: np.ndarray, per_user: np.ndarray) -> np.ndarray:
    """Indices of the points no other point beats on both axes (higher is better on each), sorted
    by per-user throughput descending; of points equal on both, the first. O(n log n): one sort by
    per-user speed; a point is kept when it beats every faster point's per-chip throughput and is
    the best (and first) of those equally fast. The same set and order as ranking by (per-user,
    per-chip) descending and keeping running maxima (``_pareto_front_ranked``), without its slow
    two-key sort."""
    per_chip, per_user = np.asarray(per_chip, dtype=float), np.asarray(per_user, dtype=float)
    if per_chip.size == 0 or not (np.all(np.isfinite(per_chip)) and np.all(np.isfinite(per_user))):
        return _pareto_front_ranked(per_chip, per_user)
    order = np.argsort(-per_user)
    u, c = per_user[order], per_chip[order]
    new = np.concatenate(([True], u[1:] != u[:-1]))                          # groups of equal per-user speed
    starts, group = np.flatnonzero(new), np.cumsum(new) - 1
    best = np.maximum.reduceat(c, starts)
    faster = np.concatenate(([-np.inf], np.maximum.accumulate(best)[:-1]))  # best per-chip of every faster group
    keep = (c == best[group]) & (c > faster[group])
    # within a group the kept points are equal on both axes: the first (lowest index) stands for them
    first = np.full(starts.size, per_chip.size, dtype=np.int64)
    np.minimum.at(first, group[keep], order[keep])
    return first[first < per_chip.size]


def _pareto_front_ranked(per_chip: np.ndarray, per_user: np.ndarray) -> np.ndarray:
    """``pareto_front`` by a two-key sort and running maxima (the reference; any floats)."""
    order = np.lexsort((-per_chip, -per_user))
    ranked = per_chip[order]
    before = np.concatenate([[-np.inf], np.maximum.accumulate(ranked)[:-1]])
    return order[ranked > before]
