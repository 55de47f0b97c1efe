"""The ideal floor beside a calibrated answer (issue 35, item 1): the same deployment priced on the roofline
(profile IDEAL: datasheet peaks, perfect overlap, no overheads), the lecture's lower bound on time and cost.

``analyze`` and ``cost`` show it beside the calibrated step; this module gives ``plan`` and ``context`` theirs:

* ``plan_floors``: each phase's best point re-evaluated on the roofline at the same system, plan, batch
  and speculation (the planner's own arithmetic, ``planner.evaluate_phase``, on that one point), so
  its step, tokens/s per chip and per user and $/Mtok are the planner's columns in ideal mode at the
  same price. The floor is of the point the calibrated search chose, not the best ideal plan (a
  different plan can be faster on the roofline: that is ``plan`` in ideal mode).
* ``context_floor``: ``context_economics`` of the roofline twin (``batching.roofline_twin``) at the same
  contexts and batches (the memory-limited batch is a fact of memory, the same in both modes).

Omitted: nothing beyond what ideal mode omits (activation traffic, kernel floors and launch overheads,
framework time); a transferred profile's floor is the same roofline.
"""

from __future__ import annotations

import numpy as np

from ..spec.deployment import Deployment
from ..spec.plan_array import PlanArray
from .batching import roofline_twin
from .context import ContextEconomics, context_economics
from .planner import PlanResult, Point, SearchOptions, evaluate_phase


def _floor_point(model, system, point: Point, *, phase: str, targets, options: SearchOptions,
                 prices: dict) -> Point | None:
    """``point`` re-evaluated on the roofline (module docstring); None when it was evaluated there without a
    match (it always is: the same plan, batch and speculation candidates)."""
    from dataclasses import replace

    from .planner import _point

    specs = tuple(s for s in options.speculation if s.k == point.spec_tokens) if phase == "decode" else ()
    ideal = replace(options, profiles={}, batches=(point.batch,), prefill_batches=(point.batch,), speculation=specs)
    table = PlanArray.from_plans([point.plan], system)
    a, plan_list = evaluate_phase(model, [system], {system.name: table}, phase=phase, targets=targets,
                                  options=ideal, prices=prices)
    if a is None:
        return None
    hit = np.flatnonzero((a["batch"] == point.batch) & (a["spec"] == point.spec_tokens))
    if hit.size == 0:
        return None
    return replace(_point(a, int(hit[0]), plan_list), serving=point.serving, engine=point.engine)


def plan_floors(result: PlanResult, model, systems, options: SearchOptions) -> dict:
    """{"decode": Point or None, "prefill": Point or None}: each phase's best point on the roofline; both
    None when the search was ideal already (every system on IDEAL)."""
    if all(options.profile_for(s).is_ideal for s in systems):
        return {"decode": None, "prefill": None}
    by_name = {s.name: s for s in systems}
    out = {}
    for search in (result.decode, result.prefill):
        best = search.best
        out[search.phase] = None if best is None or options.profile_for(by_name[best.system]).is_ideal else \
            _floor_point(model, by_name[best.system], best, phase=search.phase, targets=result.targets,
                         options=options, prices={best.system: result.prices.get(best.system)})
    return out


def context_floor(dep: Deployment, e: ContextEconomics, *, batch: float | None = None,
                  batch_cap: float | None = None) -> ContextEconomics | None:
    """``context_economics`` of ``dep``'s roofline twin at ``e``'s contexts (same ``batch``/``batch_cap``);
    None when ``dep`` is ideal already."""
    if dep.profile.is_ideal:
        return None
    return context_economics(roofline_twin(dep), contexts=e.curve.context, batch=batch, batch_cap=batch_cap)


__all__ = ["context_floor", "plan_floors"]
