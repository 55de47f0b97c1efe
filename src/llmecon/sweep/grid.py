"""Expand a checked sweep spec into work: evaluation groups, chunks and simulation scenarios.

A *group* is one (model, system, weight dtype, KV dtype, plan, phase): the unit the planner
evaluates with one vectorised ``inference`` call (``planner._evaluate``). Its points are the
batch x context x price grid, flattened in C order (price innermost); a point's id is the group's
first id plus its flat index, so ids are stable for a given spec and the analytic points of all
groups form one range 0..N-1. That range is cut into *chunks* of ``chunk_points`` consecutive
ids (a chunk may span several small groups: each is still one vectorised call); each simulation
scenario is a chunk of its own. Chunks are the unit of distribution, retry and resumption.

Everything the catalogue can reject is checked here, before any work: unknown models and
systems are errors; a listed plan a model cannot use (tp not dividing the heads, ep on a dense
model, a stage that straddles domains) or a dtype a chip has no peak for skips that group, and
contexts past a model's maximum skip those points — each skip is reported with its reason and
point count (``Work.skipped``), never dropped silently. A spec whose every group is skipped is an
error. Points that merely do not fit in memory are kept (``fits`` = False).
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field

from ..errors import InfeasibleError, LlmeconError, SpecError, template
from ..spec.efficiency import IDEAL, EfficiencyProfile
from ..spec.hardware import System
from ..spec.model import Model
from ..spec.plan import Placement, Plan
from .spec import PlanAxis, SweepSpec, WorkloadSpec

FORMAT_VERSION = 2  # bump when the row layout or the chunking changes (old parts are then refused)
MAX_CHUNKS = 1_000_000  # chunks one sweep may hold (a Chunk object each): 10^11+ points at the default chunk size


@dataclass(frozen=True, kw_only=True)
class Group:
    """One vectorised evaluation: a deployment and phase over a batch x context x price grid."""

    index: int
    model: Model
    system: System
    plan: Plan
    phase: str
    weight_dtype: str | None
    kv_dtype: str | None
    batches: tuple[float, ...]
    contexts: tuple[float, ...]
    prices: tuple[float, ...]       # NaN = unpriced
    first_point: int
    profile: EfficiencyProfile = IDEAL  # what the group's steps are priced with
    watts_per_chip: float = math.nan    # what tokens/s per MW divide by (econ.tco.power_basis); NaN = unknown

    @property
    def shape(self) -> tuple[int, int, int]:
        return len(self.batches), len(self.contexts), len(self.prices)

    @property
    def n_points(self) -> int:
        return math.prod(self.shape)


@dataclass(frozen=True, kw_only=True)
class Scenario:
    """One serving simulation (``serving.simulate``) of a deployment under a workload."""

    index: int
    point_id: int
    model: Model
    system: System
    plan: Plan
    policy: str
    workload: WorkloadSpec
    seed: int
    batch_cap: int | None
    price: float | None
    slo_ttft_s: float | None
    slo_tpot_s: float | None
    profile: EfficiencyProfile = IDEAL  # what the simulation's steps are priced with
    watts_per_chip: float = math.nan    # what tokens/s per MW divide by (econ.tco.power_basis); NaN = unknown


@dataclass(frozen=True, kw_only=True)
class Chunk:
    """Analytic point ids [start, stop) (``scenario`` -1), or simulation ``scenario``."""

    id: int
    start: int = 0
    stop: int = 0
    scenario: int = -1

    @property
    def n_points(self) -> int:
        return self.stop - self.start if self.scenario < 0 else 1


@dataclass(frozen=True, kw_only=True)
class Skipped:
    what: str
    reason: str
    points: int
    error: LlmeconError | None = field(default=None, repr=False, compare=False)  # the reason as an error

    @classmethod
    def of(cls, what: str, error: LlmeconError, points: int) -> "Skipped":
        return cls(what=what, reason=str(error), points=points, error=error)


@dataclass(frozen=True, kw_only=True)
class Work:
    spec: SweepSpec
    spec_hash: str
    groups: tuple[Group, ...]
    scenarios: tuple[Scenario, ...]
    chunks: tuple[Chunk, ...]
    skipped: tuple[Skipped, ...]

    @property
    def analytic_points(self) -> int:
        return sum(g.n_points for g in self.groups)

    @property
    def points(self) -> int:
        return self.analytic_points + len(self.scenarios)

    @property
    def first_points(self):
        """Each group's first point id (ascending): ``np.searchsorted`` maps ids to groups."""
        import numpy as np

        return np.fromiter((g.first_point for g in self.groups), dtype=np.int64, count=len(self.groups))


def _plans_for(axis: PlanAxis, model: Model, system: System, wdt, kvdt) -> list[Plan | None]:
    from ..econ.batching import smallest_plan
    from ..econ.planner import candidate_plans

    if axis.mode == "auto":
        return list(candidate_plans(model, system, max_chips=axis.max_chips))
    if axis.mode == "smallest":
        return [smallest_plan(model, system, weight_dtype=wdt, kv_dtype=kvdt)]
    return list(axis.plans)


def _check_plan(plan: Plan | None, model: Model, system: System) -> LlmeconError | None:
    """Why ``plan`` cannot run ``model`` on ``system`` (None if it can)."""
    if plan is None:
        return InfeasibleError("no plan holds the weights on this system (smallest_plan found none)")
    where = plan.check(model, system)
    return None if isinstance(where, Placement) else where


def _label(model: Model, system: System, plan: Plan | None, *rest) -> str:
    return " ".join([model.name, "on", system.name, plan.label() if plan else "(no plan)", *[str(r) for r in rest
                                                                                           if r is not None]])


def _profiles(spec: SweepSpec, systems) -> dict[str, EfficiencyProfile | LlmeconError]:
    """Each system's profile under the spec's mode, or why it has none (a reason to skip it)."""
    from ..catalog.efficiency import load_profile, resolve

    given = load_profile(spec.profile) if spec.profile else None
    out: dict[str, EfficiencyProfile | LlmeconError] = {}
    for system in systems:
        try:
            out[system.name] = resolve(spec.mode, given, system.accelerator)
        except LlmeconError as exc:
            out[system.name] = exc
    return out


def _analytic_groups(spec: SweepSpec, models, systems, skipped: list) -> list[Group]:
    from ..step.inference import decode_step, prefill_step

    from ..econ.tco import power_for

    a = spec.analytic
    groups: list[Group] = []
    over: dict[str, int] = {}  # points past a model's context limit, per model
    first = 0
    profiles = _profiles(spec, systems)
    for model in models:
        limit = model.max_context
        contexts = tuple(c for c in a.contexts if not limit or c <= limit)
        for system in systems:
            tco = spec.tco_of(system.name)
            prices = (tco[0],) if tco else a.prices if a.prices is not None else (math.nan,)
            watts = tco[1] if tco else power_for(system).watts_per_chip
            for wdt in a.weight_dtypes:
                for kvdt in a.kv_dtypes:
                    for plan in _plans_for(a.plans, model, system, wdt, kvdt):
                        for phase in a.phases:
                            full = len(a.batches) * len(a.contexts) * len(prices)
                            prof = profiles[system.name]
                            why = prof if isinstance(prof, LlmeconError) else _check_plan(plan, model, system)
                            if why is None and not contexts:
                                why = SpecError(f"every context exceeds {model.name}'s {limit:,} token limit")
                            if why is None:
                                step = decode_step if phase == "decode" else prefill_step
                                ctx = {"context" if phase == "decode" else "prompt_tokens": contexts[0]}
                                try:  # a one-point probe: dtype peaks and the rest of inference's checks
                                    step(model, system, batch=a.batches[0], plan=plan, weight_dtype=wdt,
                                         kv_dtype=kvdt, profile=prof, **ctx)
                                except LlmeconError as exc:
                                    why = exc
                            if why is not None:
                                skipped.append(Skipped.of(_label(model, system, plan, phase, wdt, kvdt), why, full))
                                continue
                            g = Group(index=len(groups), model=model, system=system, plan=plan, phase=phase,
                                      weight_dtype=wdt, kv_dtype=kvdt, batches=a.batches, contexts=contexts,
                                      prices=prices, first_point=first, profile=prof,
                                      watts_per_chip=math.nan if watts is None else watts)
                            over[model.name] = over.get(model.name, 0) + full - g.n_points
                            groups.append(g)
                            first += g.n_points
    for model in models:
        if over.get(model.name):
            skipped.append(Skipped(what=f"{model.name}: contexts above {model.max_context:,} tokens",
                                   reason=f"longer than {model.name}'s context limit", points=over[model.name]))
    return groups


def _scenarios(spec: SweepSpec, models, systems, first: int, skipped: list) -> list[Scenario]:
    from ..econ.tco import power_for

    s = spec.simulation
    out: list[Scenario] = []
    profiles = _profiles(spec, systems)
    for model in models:
        for system in systems:
            tco = spec.tco_of(system.name)
            prices = (tco[0],) if tco else s.prices if s.prices is not None else (None,)
            watts = tco[1] if tco else power_for(system).watts_per_chip
            for plan in _plans_for(s.plans, model, system, None, None):
                n = len(s.policies) * len(s.workloads) * len(s.seeds) * len(s.batch_caps) * len(prices)
                prof = profiles[system.name]
                why = prof if isinstance(prof, LlmeconError) else _check_plan(plan, model, system)
                if why is not None:
                    skipped.append(Skipped.of(_label(model, system, plan, "simulation"), why, n))
                    continue
                for policy in s.policies:
                    for wl in s.workloads:
                        for seed in s.seeds:
                            for cap in s.batch_caps:
                                for price in prices:
                                    out.append(Scenario(index=len(out), point_id=first + len(out), model=model,
                                                        system=system, plan=plan, policy=policy, workload=wl,
                                                        seed=seed, batch_cap=cap, price=price,
                                                        slo_ttft_s=s.slo_ttft_s, slo_tpot_s=s.slo_tpot_s,
                                                        profile=prof,
                                                        watts_per_chip=math.nan if watts is None else watts))
    return out


def spec_hash(spec: SweepSpec, models: dict, systems: dict) -> str:
    """sha256 of the canonical spec, the llmecon version, the row format and the resolved models and
    systems (a changed catalogue entry or config.json gives a new hash, so old parts are not reused)."""
    from .. import __version__

    facts = {"spec": spec.canonical(), "llmecon": __version__, "format": FORMAT_VERSION,
             "models": {k: repr(v) for k, v in sorted(models.items())},
             "systems": {k: repr(v) for k, v in sorted(systems.items())}}
    return hashlib.sha256(json.dumps(facts, sort_keys=True, default=str).encode()).hexdigest()


def expand(spec: SweepSpec) -> Work:
    """Resolve names, check every model/system/plan/dtype and lay out groups, scenarios and chunks.
    Raises CatalogError for an unknown model or system and SpecError when nothing is left to run."""
    from ..catalog.hardware import get_system
    from ..catalog.models import get_model

    parts = [p for p in (spec.analytic, spec.simulation) if p is not None]
    models = {n: get_model(n) for p in parts for n in p.models}
    systems = {n: get_system(n) for p in parts for n in p.systems}
    skipped: list[Skipped] = []
    groups: list[Group] = []
    if spec.analytic is not None:
        groups = _analytic_groups(spec, [models[n] for n in spec.analytic.models],
                                  [systems[n] for n in spec.analytic.systems], skipped)
    first = sum(g.n_points for g in groups)
    scenarios: list[Scenario] = []
    if spec.simulation is not None:
        scenarios = _scenarios(spec, [models[n] for n in spec.simulation.models],
                               [systems[n] for n in spec.simulation.systems], first, skipped)
    if not groups and not scenarios:
        reasons = "; ".join(f"{s.what}: {template(s.error) if s.error else s.reason}" for s in skipped[:3])
        raise SpecError(f"{spec.source}: nothing to run, every combination was skipped ({reasons})")
    if first // spec.chunk_points > MAX_CHUNKS:  # refuse before building millions of chunk objects
        raise SpecError(f"{spec.name}: {first:,} analytic points make {first // spec.chunk_points:,} chunks, more "
                        f"than {MAX_CHUNKS:,}; shrink the axes (or raise chunk_points)")
    chunks: list[Chunk] = []
    for start in range(0, first, spec.chunk_points):
        chunks.append(Chunk(id=len(chunks), start=start, stop=min(start + spec.chunk_points, first)))
    for sc in scenarios:
        chunks.append(Chunk(id=len(chunks), scenario=sc.index))
    return Work(spec=spec, spec_hash=spec_hash(spec, models, systems), groups=tuple(groups),
                scenarios=tuple(scenarios), chunks=tuple(chunks), skipped=tuple(skipped))
