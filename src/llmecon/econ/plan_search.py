"""The planner's Pareto frontier over many points, with dominated stretches dropped first (issue 36).

``front(per_chip, per_user, run)`` returns what ``pareto.pareto_front`` returns on the same arrays (the same
indices in the same order), faster on the planner's points: they come in runs (one plan's batches, ascending),
and most of a run's stretches lie wholly behind the frontier. Each run is cut into stretches of at most
``SEGMENT`` consecutive points; anchors are the last point of every stretch (along a run per-user throughput
falls and per-chip rises, so that is where a stretch is strongest per chip), and their own frontier F is cheap
(an eighth of the points). A stretch is dropped when one point of F is ahead of the stretch's corner (its
highest per-user and highest per-chip throughput) strictly on per-chip and at least on per-user: that point
then beats every point of the stretch the same way, so none of them is on the frontier (``pareto_front``
keeps a point only when nothing at least as fast per user is strictly better per chip). The survivors hold
the whole frontier, and it is found among them by ``pareto_front`` itself (ties, equal on both axes, go to the
lowest index, as there). Pure numpy; exact, not a heuristic.
"""

from __future__ import annotations

import numpy as np

from .pareto import pareto_front

SEGMENT = 8         # points per stretch tested against the anchors' frontier
SMALL = 2048        # below this many points, ``pareto_front`` directly


def front(per_chip: np.ndarray, per_user: np.ndarray, run: np.ndarray) -> np.ndarray:
    """``pareto_front(per_chip, per_user)``; ``run`` labels the points' runs (equal labels consecutive)."""
    per_chip, per_user = np.asarray(per_chip, dtype=float), np.asarray(per_user, dtype=float)
    n = per_chip.size
    if n < SMALL or not (np.isfinite(per_chip).all() and np.isfinite(per_user).all()):
        return pareto_front(per_chip, per_user)
    new_run = np.empty(n, dtype=bool)
    new_run[0] = True
    np.not_equal(run[1:], run[:-1], out=new_run[1:])
    starts = np.flatnonzero(new_run)
    # stretches: each run cut every SEGMENT points; anchors: their last points
    position = np.arange(n) - starts[np.cumsum(new_run) - 1]
    cuts = np.flatnonzero(position % SEGMENT == 0)
    anchors = np.append(cuts[1:] - 1, n - 1)
    f = anchors[pareto_front(per_chip[anchors], per_user[anchors])]
    ahead_user, ahead_chip = per_user[f], per_chip[f]          # per-user descending, per-chip ascending
    top_user = np.maximum.reduceat(per_user, cuts)
    top_chip = np.maximum.reduceat(per_chip, cuts)
    k = np.searchsorted(-ahead_user, -top_user, side="right")  # anchors at least as fast per user
    behind = (k > 0) & (ahead_chip[np.maximum(k - 1, 0)] > top_chip)
    keep = np.flatnonzero(np.repeat(~behind, np.diff(np.append(cuts, n))))
    return keep[pareto_front(per_chip[keep], per_user[keep])]
