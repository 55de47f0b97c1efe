"""The frontier users compare (issue 22, item 5): per system, decode throughput per chip against tokens/s
per user, and $/Mtok at a given interactivity, the way public serving dashboards chart systems.

``decode_frontier`` here is the decode-only view; ``econ.serving_frontier`` builds the whole-request frontier
(prefill paid for, the layouts engines run: issue 37) on the same ``Frontier`` and ``at_interactivity``, and is
what the plan command's frontier and the web page show by default.

The frontier is the planner's (``planner.plan_deployment`` with no latency target: every memory-fitting
(plan, batch[, k]) point of a system's search, ``planner.pareto_front``), at the decode context of
``PlanTargets.context``. Along it, ordered fastest per user first, tokens/s per chip strictly rises.

At an interactivity u* (tokens/s per user) two figures are given per system:

* the best frontier point meeting it: the most tokens/s per chip among points with per-user speed >= u*
  (a point the search evaluated; None when no point is that fast);
* the interpolated figure: log-log linear between the two frontier points bracketing u* (the straight
  segment the figure draws), an estimate of what a batch between the grid's batches gives, not an
  evaluated point; None outside the frontier's range (no extrapolation).

$/Mtok = price per chip-hour / 3600 / (tokens/s per chip) · 1e6 (``context.usd_per_mtok``, chips busy
all the time). Omitted: everything the planner omits (its module docstring), and prefill: the figures
are decode (output) tokens only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..errors import require_number
from ..spec.model import Model
from .context import usd_per_mtok
from .planner import PlanTargets, Point, SearchOptions, plan_deployment


@dataclass(frozen=True, kw_only=True)
class AtInteractivity:
    """One system's throughput and cost at a target tokens/s per user."""

    system: str
    tokens_per_s_per_user: float
    point: Point | None                      # best frontier point meeting the target; None: none is that fast
    interpolated_per_chip: float | None      # log-log between the bracketing points; None outside the frontier
    between: tuple[Point, Point] | None      # the two points interpolated between (faster first)
    price: float | None

    @property
    def interpolated_usd_per_mtok(self) -> float | None:
        if self.price is None or self.interpolated_per_chip is None:
            return None
        return float(usd_per_mtok(1.0 / self.interpolated_per_chip, price_per_chip_hour=self.price))

    @property
    def method(self) -> str:
        """'interpolated' (bracketed by two frontier points, or on one), 'point' (slower than the frontier's
        slowest point: its best point) or 'unreachable' (faster than any point)."""
        if self.interpolated_per_chip is not None:
            return "interpolated"
        return "point" if self.point is not None else "unreachable"

    @property
    def tokens_per_s_per_chip(self) -> float | None:
        """The headline: interpolated when bracketed, else the best point's."""
        if self.interpolated_per_chip is not None:
            return self.interpolated_per_chip
        return None if self.point is None else self.point.tokens_per_s_per_chip

    @property
    def usd_per_mtok(self) -> float | None:
        if self.interpolated_per_chip is not None:
            return self.interpolated_usd_per_mtok
        return None if self.point is None else self.point.usd_per_mtok


@dataclass(frozen=True, kw_only=True)
class Frontier:
    """Every system's decode frontier and its figures at one interactivity."""

    model: str
    systems: tuple[str, ...]
    targets: PlanTargets
    prices: dict
    frontiers: dict                          # system -> tuple[Point, ...], fastest per user first
    interactivity: float | None
    at: dict                                 # system -> AtInteractivity (empty without an interactivity)
    fidelity: str = "ideal"
    fidelity_fields: dict = field(default_factory=lambda: {"transferred": False}, compare=False)
    speculation: tuple = ()
    view: str = "decode"                     # what per-chip throughput pays for (``serving_frontier.VIEWS``)
    token_budget: float | None = None        # aggregated views: prompt tokens per engine step per attention group
    # with speculation searched: system -> the frontier of plain decoding alone (k = 0), beside ``frontiers``
    # (plain and speculative points together, each with its ``spec_tokens``); empty when none was searched
    without_speculation: dict = field(default_factory=dict)


def interpolate(per_user, per_chip, target: float) -> tuple[float, int, int] | None:
    """(per-chip throughput at ``target`` per-user speed, i, j) by log-log linear interpolation between
    frontier points i and j (per_user[i] >= target >= per_user[j]); the frontier is ordered per-user
    descending, per-chip ascending. A target equal to a point gives that point (i = j). None when the
    target lies outside [min per_user, max per_user] (no extrapolation)."""
    u, c = np.asarray(per_user, dtype=float), np.asarray(per_chip, dtype=float)
    if u.size == 0 or target > u[0] or target < u[-1]:
        return None
    i = int(np.flatnonzero(u >= target)[-1])  # the slowest point still meeting the target
    if u[i] == target or i + 1 == u.size:
        return float(c[i]), i, i
    j = i + 1
    f = (math.log(u[i]) - math.log(target)) / (math.log(u[i]) - math.log(u[j]))
    return float(math.exp(math.log(c[i]) + f * (math.log(c[j]) - math.log(c[i])))), i, j


def at_interactivity(points, target: float, *, system: str, price: float | None) -> AtInteractivity:
    """``AtInteractivity`` of one system's frontier ``points`` (fastest per user first) at ``target``."""
    require_number("interactivity", target, minimum=0, exclusive=True, hint="tokens/s per user")
    pts = tuple(points)
    meeting = [p for p in pts if p.tokens_per_s_per_user >= target]
    best = max(meeting, key=lambda p: p.tokens_per_s_per_chip) if meeting else None
    hit = interpolate([p.tokens_per_s_per_user for p in pts], [p.tokens_per_s_per_chip for p in pts], target)
    per_chip, between = (None, None) if hit is None else (hit[0], (pts[hit[1]], pts[hit[2]]))
    return AtInteractivity(system=system, tokens_per_s_per_user=float(target), point=best,
                           interpolated_per_chip=per_chip, between=between, price=price)


def decode_frontier(model: Model, systems: list, *, targets: PlanTargets | None = None,
                    options: SearchOptions | None = None, prices: dict | None = None,
                    interactivity: float | None = None) -> Frontier:
    """Each system's decode frontier (module docstring) and, given ``interactivity`` (tokens/s per user),
    its figures there. ``targets``' latency targets are not applied (the frontier spans every fitting
    point); its context is the decode context. Errors as ``plan_deployment``'s."""
    if interactivity is not None:
        require_number("interactivity", interactivity, minimum=0, exclusive=True, hint="tokens/s per user")
    t = targets or PlanTargets()
    open_targets = PlanTargets(tpot_s=None, ttft_s=None, context=t.context, prompt_tokens=t.prompt_tokens,
                               output_tokens=t.output_tokens)
    r = plan_deployment(model, systems, targets=open_targets, options=options, prices=prices)
    fronts = {n: tuple(sorted((p for p in r.decode.frontier if p.system == n), key=lambda p: -p.tokens_per_s_per_user))
              for n in r.systems}
    at = {} if interactivity is None else {
        n: at_interactivity(fronts[n], interactivity, system=n, price=r.prices.get(n)) for n in r.systems}
    return Frontier(model=r.model, systems=r.systems, targets=open_targets, prices=r.prices, frontiers=fronts,
                    interactivity=interactivity, at=at, fidelity=r.fidelity, fidelity_fields=r.fidelity_fields,
                    speculation=r.speculation)
