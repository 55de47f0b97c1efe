"""Deployment planner: search systems x plans x batch under latency targets and memory, and
return the cheapest (or highest-throughput) deployment and the Pareto frontier (SPEC D).

Serving is planned disaggregated, the way DeepSeek-V3's report deploys it (prefill and decode
on separate units): the decode search picks plan and batch to minimise $ per output token with
TPOT (one decode iteration) <= target; the prefill search picks plan and prefill batch to
minimise $ per input token with TTFT (one prefill step of the whole batch, plus the pipeline fill
when pp > 1: ``StepResult.latency_s``) <= target. Both call
``inference.decode_step`` / ``prefill_step`` (the same functions as ``llmecon analyze``),
vectorised over the batch grid, once per plan. With speculative candidates (``SearchOptions.speculation``,
one ``Speculation`` per k) the decode search also tries each k: a point's iteration is the verify step
plus the draft (``step.speculative``, vectorised over the same plans), its TPOT the iteration over E and
its tokens batch·E per iteration; the best point reports the k chosen (0 = plain decoding).

Search space per system: stage widths W = tp·adp from ``stage_widths`` (inside one scale-up domain,
or power-of-two multiples of a width filling most of one), tp a divisor of the heads within one domain,
ep a divisor of the routed experts dividing W (or ep = W with the fewest redundant expert copies
filling it, at most E/4: EP72 + 32 on an NVL72 rack, EP144 + 32 on two), pp from ``PP_CHOICES``,
chips per replica up to ``max_chips``; plans whose weights alone exceed HBM are dropped before evaluation. Replicas (dp)
scale throughput linearly and are not searched. Omitted: queueing (TTFT is the prefill step
and its pipeline fill alone), prefill/decode interference (colocated serving; see the simulator), the KV transfer
between the units (the worker ratio, ``econ.workers``, adds it), idle chips when W does not fill a domain (chips are
billed per plan).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from ..errors import InfeasibleError, SpecError, require_choice, require_number, require_whole
from ..spec.hardware import System
from ..step.roofline import bound_label
from ..step.inference import CommParts, comm_parts, decode_step, memory_per_chip, pipeline_fill_factor, prefill_step
from ..spec.efficiency import IDEAL, EfficiencyProfile
from ..spec.model import Model
from ..spec.plan import Plan, feasible_plans
from ..spec.plan_array import PlanArray
from .context import usd_per_mtok
from .pareto import _pareto_front_ranked, pareto_front  # noqa: F401 - re-exported (tests patch it here)
from .plan_search import front as _front
from ..units import fmt_seconds

PP_CHOICES = (1, 2, 4, 8, 16)
OBJECTIVES = ("cost", "throughput")
LAYOUTS = ("any", "engine")


@dataclass(frozen=True, kw_only=True)
class PlanTargets:
    """What the deployment must meet and the traffic it serves."""

    tpot_s: float | None = None
    ttft_s: float | None = None
    context: float = 4096.0          # mean KV tokens per sequence during decode
    prompt_tokens: float = 4096.0    # tokens prefilled per request
    output_tokens: float = 512.0

    def __post_init__(self) -> None:
        for name in ("tpot_s", "ttft_s"):  # fields "tpot", "ttft": the CLI's spelling (--tpot takes a duration)
            if getattr(self, name) is not None:
                require_number(name[:-2], getattr(self, name), minimum=0, exclusive=True, hint="seconds")
        require_number("context", self.context, minimum=0, hint="mean KV tokens per sequence")
        for name in ("prompt_tokens", "output_tokens"):
            require_number(name, getattr(self, name), minimum=1)


@dataclass(frozen=True, kw_only=True)
class SearchOptions:
    """Search knobs (formats, MoE runtime choices, the grid)."""

    max_chips: int = 512
    weight_dtype: str | None = None
    kv_dtype: str | None = None
    dispatch_dtype: str | None = None
    expert_imbalance: float = 1.0
    batches: tuple = ()              # decode batch grid per replica; () = 1..2^17, 128 points
    prefill_batches: tuple = ()      # prefill batch grid; () = 1..1024, 48 points
    pp_choices: tuple = PP_CHOICES
    # speculative decoding candidates searched beside plain decoding (k = 0), e.g. one per k = 1..K
    # (``spec.speculation.speculation_for``); () = plain decoding only
    speculation: tuple = ()
    # each system's efficiency profile by name (``resolve.profiles_for``); a system not named: IDEAL
    profiles: Mapping[str, EfficiencyProfile] = field(default_factory=dict)
    # per-system GPU budget of one replica (system name -> chips); a system not named: ``max_chips``
    max_chips_by_system: Mapping[str, int] = field(default_factory=dict)
    # "any": every plan of the search space; "engine": the layouts the system's profile's engine runs, pp only
    # where pp = 1 does not fit (``econ.engine_layouts``)
    layouts: str = "any"
    # (tp, ep, pp, adp) tuples the search keeps to, () = every plan (``fidelity.frontier_check``'s diagnostic:
    # the layouts a benchmark ran)
    only_layouts: tuple = ()

    def profile_for(self, system: System) -> EfficiencyProfile:
        return self.profiles.get(system.name, IDEAL)

    def chips_for(self, system: System) -> int:
        """The most chips one replica on ``system`` may use."""
        return int(self.max_chips_by_system.get(system.name, self.max_chips))

    def engine_for(self, system: System) -> str:
        """The engine whose layouts the search keeps to on ``system`` ('' = any: ``layouts`` 'any', or the
        profile names no engine)."""
        return self.profile_for(system).engine if self.layouts == "engine" else ""

    def fidelity(self, systems) -> str:
        """'ideal', or 'calibrated (<profile labels>)' over ``systems`` (a transferred profile's label
        names its source and expected error, ``EfficiencyProfile.label``; several join with '; ')."""
        names = sorted({self.profile_for(s).label for s in systems if not self.profile_for(s).is_ideal})
        return "calibrated (" + "; ".join(names) + ")" if names else "ideal"

    def fidelity_fields(self, systems) -> dict:
        """Machine-readable fidelity over ``systems``: ``transferred`` (any profile transferred) and,
        per transferred profile, its fields (``EfficiencyProfile.fidelity_fields``) by system."""
        profs = {s.name: self.profile_for(s) for s in systems if not self.profile_for(s).is_ideal}
        moved = {n: p.fidelity_fields for n, p in profs.items() if p.transferred}
        return {"transferred": bool(moved), **({"transferred_profiles": moved} if moved else {})}

    def __post_init__(self) -> None:
        require_whole("max_chips", self.max_chips)
        for name, chips in self.max_chips_by_system.items():
            require_whole("max_chips", chips)
        require_choice("layouts", self.layouts, LAYOUTS)
        require_number("expert_imbalance", self.expert_imbalance, minimum=1,
                       hint="the busiest expert group's tokens over uniform routing's; 1 = uniform routing")


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def stage_widths(domain: int, max_chips: int) -> list[int]:
    """Stage widths searched: inside a domain its divisors and powers of two (EP64 on a 72-chip
    rack); across domains, power-of-two multiples of an inside width that fills more than half
    a domain (2 x 64 or 2 x 72 on NVL72, 16, 32, ... on an 8-GPU HGX)."""
    inside = sorted({w for w in _divisors(domain)} | {1 << i for i in range(domain.bit_length()) if 1 << i <= domain})
    across = {m << j for m in inside if 2 * m > domain for j in range(1, max_chips.bit_length() + 1)}
    return sorted(w for w in set(inside) | across if w <= max_chips)


def _expert_groups(model: Model, width: int) -> list[tuple[int, int]]:
    """(ep, redundant experts) for a stage of ``width`` chips: every ep dividing both the routed experts
    and the width (no copies), and ep = width when the experts do not divide it, with the fewest
    copies filling it, up to E/4 (DeepSeek-V3's largest share: 64 of 256 on EP320)."""
    if not model.is_moe:
        return [(1, 0)]
    e = model.moe.n_routed
    out = [(x, 0) for x in _divisors(width) if e % x == 0]
    if e % width and 4 * (-e % width) <= e:
        out.append((width, -e % width))
    return out


def candidate_plans(model: Model, system: System, *, max_chips: int, pp_choices=PP_CHOICES) -> list[Plan]:
    """Every plan of the search space (module docstring) that is valid for ``model`` on ``system``."""
    return [plan for plan, _ in _candidates(model, system, max_chips=max_chips, pp_choices=pp_choices)]


_TABLES: dict = {}  # (id(model), id(system), max_chips, pp_choices) -> (model, system, PlanArray)
_TABLES_MAX = 64


def candidate_table(model: Model, system: System, *, max_chips: int, pp_choices=PP_CHOICES) -> PlanArray:
    """``candidate_plans`` placed on ``system`` as a ``PlanArray``, cached per (model, system,
    max_chips, pp_choices): enumerating and validating ~2,600 plans costs tens of ms and depends on
    nothing else. Keyed by the objects' identity (frozen; the catalogue hands out one object per
    name); an entry holds them, so an id is not reused while it is cached. Callers must not write
    into the arrays (``PlanArray.take`` copies)."""
    key = (id(model), id(system), max_chips, tuple(pp_choices))
    hit = _TABLES.get(key)
    if hit is not None and hit[0] is model and hit[1] is system:
        return hit[2]
    if len(_TABLES) >= _TABLES_MAX:
        _TABLES.clear()
    table = PlanArray.from_placed(_candidates(model, system, max_chips=max_chips, pp_choices=pp_choices))
    _TABLES[key] = (model, system, table)
    return table


def _candidates(model: Model, system: System, *, max_chips: int, pp_choices=PP_CHOICES) -> list:
    """(plan, placement) of every plan ``candidate_plans`` returns."""
    d = system.chips
    heads = model.attention.n_heads

    def grid():
        for w in stage_widths(d, max_chips):
            for tp in _divisors(min(w, d)):
                if w % tp or heads % tp or (not model.is_moe and tp != w):
                    continue  # dense models: attention data-parallel inside a stage is just dp
                for ep, copies in _expert_groups(model, w):
                    for pp in pp_choices:
                        if w * pp <= max_chips and pp <= model.n_layers:
                            yield Plan(tp=tp, adp=w // tp, ep=ep, pp=pp, redundant_experts=copies)

    return list(feasible_plans(model, system, grid()))


@dataclass(frozen=True, kw_only=True)
class Point:
    """One evaluated (system, plan, batch)."""

    system: str
    plan: Plan
    batch: float
    step_s: float
    latency_s: float                 # what the target bounds: TPOT = step; TTFT = step + pipeline fill
    tokens_per_s_per_chip: float
    tokens_per_s_per_user: float
    usd_per_mtok: float | None
    memory_per_chip_bytes: float
    compute_s: float
    memory_s: float
    comm_s: float
    bound: str                       # ``step.roofline.bound_label`` of the four terms, as ``step`` labels it
    overhead_s: float = 0.0          # calibrated mode's kernel floors and fixed overheads (0 in ideal mode)
    spec_tokens: int = 0             # decode: draft tokens per verify step (0 = plain decoding)
    tokens_per_step: float = 1.0     # decode: expected tokens per sequence per iteration (E)
    # what the throughput pays for: "decode" (decode steps only), or a whole request (``econ.serving_frontier``):
    # "aggregated" (prefill interleaved on the same chips) or "disaggregated" (prefill chips counted)
    serving: str = "decode"
    engine: str = ""                 # the engine whose layouts the plan keeps to ('' = any)


@dataclass(frozen=True, kw_only=True)
class PhaseSearch:
    """The result of one phase's search."""

    phase: str                       # "decode" or "prefill"
    points_evaluated: int
    points_fitting: int
    points_meeting_slo: int
    best: Point | None
    frontier: tuple[Point, ...]      # per system, non-dominated in (per chip, per user) throughput
    best_achievable_s: float         # the lowest latency any fitting point reaches
    comm: CommParts | None = None    # the best point's per-collective breakdown
    batch_limited_by: str = ""       # what stops the best plan's batch growing: memory, target, objective, grid


@dataclass(frozen=True, kw_only=True)
class PlanResult:
    model: str
    systems: tuple[str, ...]
    targets: PlanTargets
    objective: str
    prices: dict
    decode: PhaseSearch
    prefill: PhaseSearch
    fidelity: str = "ideal"          # "ideal" or "calibrated (<profiles>)": what the steps were priced with
    fidelity_fields: dict = field(default_factory=lambda: {"transferred": False}, compare=False)
    speculation: tuple = ()          # the speculative candidates searched beside plain decoding (k = 0)

    @property
    def usd_per_mtok_blended(self) -> float | None:
        """$ per million tokens of a request (prompt + output), prefill and decode units together."""
        d, p = self.decode.best, self.prefill.best
        if d is None or p is None or d.usd_per_mtok is None or p.usd_per_mtok is None:
            return None
        t = self.targets
        return (t.prompt_tokens * p.usd_per_mtok + t.output_tokens * d.usd_per_mtok) / (t.prompt_tokens
                                                                                         + t.output_tokens)


def _grid(given, top: float, points: int, name: str) -> np.ndarray:
    if given:
        grid = np.unique(np.asarray(given, dtype=float))
        if grid.size == 0 or np.any(grid < 1):
            raise SpecError("every batch must be >= 1", field=name)
        return grid
    return np.unique(np.round(np.logspace(0, math.log10(top), points)))


def _evaluate(model, systems, plans_by_system, *, phase, targets, options, prices):
    """Evaluate every (plan, batch) of one phase, one vectorised call per system and candidate: the
    system's plans as a column against the batch grid as a row (``PlanArray.column``), so that what
    depends on the plan alone is computed once per plan; the points kept are those with at least one
    sequence per attention group per micro-batch. Returns flat arrays (plan-major, batches ascending)
    and the plan index (every plan of every system, in order)."""
    full = (_grid(options.batches, 2 ** 17, 128, "batches") if phase == "decode"
            else _grid(options.prefill_batches, 1024, 48, "prefill_batches"))
    cols = {k: [] for k in ("sys", "plan", "batch", "step", "tokens", "mem", "fits", "compute", "memory", "comm",
                            "overhead", "chips", "price", "spec", "per_step")}
    specs = (None, *options.speculation) if phase == "decode" else (None,)
    row = full[None, :]
    plan_list = []
    for si, system in enumerate(systems):
        table = plans_by_system[system.name]
        keep = row >= (table.adp * table.pp)[:, None]  # at least one sequence per attention group per micro-batch
        rows, cols_b = np.nonzero(keep)
        offset = len(plan_list)
        plan_list.extend([(system, table.plans[i]) for i in table.row.tolist()])
        if rows.size == 0:
            continue
        pts, grid = table.column(), full[cols_b]
        kw = dict(plan=pts, weight_dtype=options.weight_dtype, kv_dtype=options.kv_dtype,
                  dispatch_dtype=options.dispatch_dtype, expert_imbalance=options.expert_imbalance,
                  profile=options.profile_for(system), totals=False)  # the search reads times, memory, tokens

        def flat(value):
            return np.broadcast_to(value, keep.shape)[keep]

        plain = None
        for spec in specs:  # decode: plain, then each speculative candidate (its iteration = verify + draft)
            if phase == "prefill":
                r = prefill_step(model, system, batch=row, prompt_tokens=targets.prompt_tokens, **kw)
            elif spec is None:
                r = plain = decode_step(model, system, batch=row, context=targets.context, **kw)
            else:
                r, e = _speculative(model, system, pts, spec, plain, grid=row, targets=targets, kw=kw)
            step, per_step = (r.step_s, 1.0) if spec is None else (np.add(r.step_s, e), spec.tokens_per_step)
            n = grid.size
            cols["sys"].append(np.full(n, si))
            cols["plan"].append(offset + rows)
            cols["batch"].append(grid)
            for key, value in (("step", step), ("tokens", r.tokens if spec is None else row * per_step),
                               ("mem", r.memory_per_chip_bytes), ("fits", r.fits), ("compute", r.time.compute_s),
                               ("memory", r.time.memory_s), ("comm", r.time.comm_s),
                               ("overhead", r.time.overhead_s)):
                cols[key].append(flat(value))
            cols["per_step"].append(np.full(n, per_step))
            cols["spec"].append(np.full(n, 0 if spec is None else spec.k))
            cols["chips"].append(table.chips[rows])
            cols["price"].append(np.full(n, np.nan if prices.get(system.name) is None else prices[system.name]))
    if not cols["step"]:
        return None, []
    return {k: np.concatenate(v) for k, v in cols.items()}, plan_list


def _speculative(model, system, pts, spec, plain, *, grid, targets, kw):
    """(verify step, draft seconds) of ``spec`` at every point (``step.speculative``)."""
    from ..step.speculative import draft_s, verify_step

    prof = kw["profile"]
    v = verify_step(model, system, pts, prof, mode=prof.mode, batch=grid, context=targets.context, k=spec.k,
                    weight_dtype=kw["weight_dtype"], kv_dtype=kw["kv_dtype"],
                    expert_imbalance=kw["expert_imbalance"], dispatch_dtype=kw["dispatch_dtype"])
    return v, draft_s(model, system, pts, prof, spec, mode=prof.mode, batch=grid, context=targets.context,
                      plain_step_s=plain.step_s)


def _point(a: dict, i: int, plan_list) -> Point:
    return _points(a, [i], plan_list)[0]


_POINT_COLUMNS = ("plan", "batch", "step", "latency", "per_chip", "per_user", "usd", "mem", "compute", "memory", "comm",
                  "overhead", "spec", "per_step")


def _points(a: dict, index, plan_list) -> list[Point]:
    """The ``Point``s at the flat positions ``index`` of the arrays ``a`` (one gather per column)."""
    index = np.asarray(index, dtype=np.int64)
    c = {k: a[k][index].tolist() for k in _POINT_COLUMNS}
    out = []
    for j in range(index.size):
        system, plan = plan_list[c["plan"][j]]
        terms = (c["compute"][j], c["memory"][j], c["comm"][j], c["overhead"][j])
        usd = c["usd"][j]
        out.append(Point(system=system.name, plan=plan, batch=c["batch"][j], step_s=c["step"][j],
                         latency_s=c["latency"][j], tokens_per_s_per_chip=c["per_chip"][j],
                         tokens_per_s_per_user=c["per_user"][j], usd_per_mtok=None if math.isnan(usd) else usd,
                         memory_per_chip_bytes=c["mem"][j], compute_s=terms[0], memory_s=terms[1], comm_s=terms[2],
                         overhead_s=terms[3], bound=bound_label(*terms), spec_tokens=int(c["spec"][j]),
                         tokens_per_step=float(c["per_step"][j])))
    return out


def evaluate_phase(model, systems, plans_by_system, *, phase, targets, options, prices):
    """(arrays, plan list) of every evaluated (plan, batch[, k]) of one phase (``_evaluate``) with the derived
    columns: ``per_chip`` (tokens/s per chip), ``latency`` (decode: TPOT = step / E; prefill: step x pipeline
    fill), ``per_user`` (decode 1 / TPOT; prefill prompt tokens / TTFT), ``usd`` ($/Mtok). (None, []) when
    nothing was evaluated. Used by the search below and by ``econ.frontier`` (the whole-request view)."""
    a, plan_list = _evaluate(model, systems, plans_by_system, phase=phase, targets=targets, options=options,
                             prices=prices)
    if a is None:
        return None, plan_list
    a.setdefault("per_step", np.ones_like(a["step"]))  # plain decoding when no speculative column was evaluated
    a.setdefault("spec", np.zeros(a["step"].shape, dtype=np.int64))
    a["per_chip"] = a["tokens"] / a["step"] / a["chips"]
    # what a request waits: decode, one iteration per E tokens (TPOT); prefill, the step plus the pipeline fill
    a["latency"] = (a["step"] / a["per_step"] if phase == "decode" else
                    a["step"] * pipeline_fill_factor(np.fromiter((p.pp for _, p in plan_list), dtype=float,
                                                                 count=len(plan_list))[a["plan"]]))
    # decode: each sequence emits one token per iteration; prefill: a request's prompt per TTFT
    a["per_user"] = (1.0 if phase == "decode" else targets.prompt_tokens) / a["latency"]
    a["usd"] = usd_per_mtok(a["step"] * a["chips"] / a["tokens"], price_per_chip_hour=1.0) * a["price"]
    return a, plan_list


def _search_phase(model, systems, plans_by_system, *, phase, targets, options, prices, objective) -> PhaseSearch:
    a, plan_list = evaluate_phase(model, systems, plans_by_system, phase=phase, targets=targets, options=options,
                                  prices=prices)
    slo = targets.tpot_s if phase == "decode" else targets.ttft_s
    if a is None:
        return PhaseSearch(phase=phase, points_evaluated=0, points_fitting=0, points_meeting_slo=0, best=None,
                           frontier=(), best_achievable_s=math.inf)
    fits = a["fits"]
    ok = fits & (a["latency"] <= slo) if slo is not None else fits.copy()
    frontier = []
    for si, system in enumerate(systems):
        idx = np.flatnonzero(fits & (a["sys"] == si))
        if idx.size:
            frontier.extend(_points(a, idx[_front(a["per_chip"][idx], a["per_user"][idx], a["plan"][idx])],
                                    plan_list))
    best = None
    cand = np.flatnonzero(ok)
    if cand.size:
        # ties (equal cost or throughput, e.g. compute-bound plans) go to the shorter step, then fewer chips
        first = a["usd"][cand] if objective == "cost" else -a["per_chip"][cand]
        scale = np.min(np.abs(first))
        if scale > 0:  # free chips ($0/h) make every cost 0: all tie
            first = np.round(first / scale, 6)  # equal within 1 ppm counts as a tie
        best_i = int(cand[_first_min(first, a["latency"][cand], a["chips"][cand])])
        best = _point(a, best_i, plan_list)
    comm, limited = None, ""
    if best is not None:
        system = next(s for s in systems if s.name == best.system)
        per_seq = (1.0 + best.spec_tokens) if phase == "decode" else targets.prompt_tokens
        tokens = best.batch / best.plan.pp * per_seq
        prof = options.profile_for(system)
        comm = comm_parts(model, prof.system(system), best.plan, tokens=tokens, dispatch_dtype=options.dispatch_dtype,
                          expert_imbalance=options.expert_imbalance, all_reduce=prof.all_reduce_algorithm,
                          ep_system=prof.system(system, "all_to_all"))
        limited = _batch_limit(a, best_i, slo)
    lowest = float(np.min(a["latency"][fits])) if np.any(fits) else math.inf
    return PhaseSearch(phase=phase, points_evaluated=int(a["step"].size), points_fitting=int(np.sum(fits)),
                       points_meeting_slo=int(cand.size), best=best, frontier=tuple(frontier),
                       best_achievable_s=lowest, comm=comm, batch_limited_by=limited)


def _first_min(*keys) -> int:
    """Position of the first entry that is smallest in ``keys[0]``, then ``keys[1]``, ... (what
    ``np.lexsort(reversed(keys))[0]`` gives, in linear time)."""
    if any(np.isnan(k).any() for k in keys):
        return int(np.lexsort(tuple(reversed(keys)))[0])
    at = np.arange(keys[0].size)
    for key in keys:
        k = key[at]
        at = at[k == k.min()]
    return int(at[0])


def _batch_limit(a: dict, i: int, slo) -> str:
    """Why the best plan does not run the next larger batch of the grid: it would not fit
    ("memory"), would miss the latency target ("target"), would cost more ("objective"), or the
    grid ends ("grid")."""
    nxt = i + 1
    if nxt >= a["plan"].size or a["plan"][nxt] != a["plan"][i] or a["spec"][nxt] != a["spec"][i]:
        return "grid"
    if not a["fits"][nxt]:
        return "memory"
    if slo is not None and a["latency"][nxt] > slo:
        return "target"
    return "objective"


def plan_deployment(model: Model, systems: list[System], *, targets: PlanTargets | None = None,
                    options: SearchOptions | None = None, prices: dict | None = None,
                    objective: str | None = None) -> PlanResult:
    """Search decode and prefill deployments of ``model`` over ``systems`` (module docstring).

    ``prices`` maps system name -> USD per chip-hour; without prices the objective defaults to
    throughput (tokens/s per chip) and $ figures are None (never invented). Raises
    InfeasibleError when nothing fits, or when no point meets a target: the message names the
    lowest latency any fitting point reaches.
    """
    targets = targets or PlanTargets()
    options = options or SearchOptions()
    prices = dict(prices or {})
    limit = model.max_context
    for name, value in (("context", targets.context), ("prompt_tokens", targets.prompt_tokens)):
        if limit and value > limit:
            raise SpecError(f"longer than {model.name}'s {limit:,} token context", field=name, value=value,
                            fix="lower it")
    if limit and targets.prompt_tokens + targets.output_tokens > limit:  # one request: prompt + output
        raise SpecError(f"prompt {targets.prompt_tokens:,.0f} + output {targets.output_tokens:,.0f} tokens is longer "
                        f"than {model.name}'s {limit:,} token context", field="output_tokens",
                        value=targets.output_tokens, fix=f"keep {{prompt_tokens}} + {{output_tokens}} <= {limit:,}")
    if not systems:
        raise SpecError("name at least one system (llmecon catalog systems)", field="systems")
    names = [s.name for s in systems]
    if len(set(names)) != len(names):
        raise SpecError(f"{', '.join(names)} names a system twice", field="systems", fix="list each once")
    unknown = set(prices) - set(names)
    if unknown:
        raise SpecError(f"prices given for {', '.join(sorted(unknown))}, which is not among {{systems}}")
    if objective is None:
        objective = "cost" if prices and all(prices.get(n) is not None for n in names) else "throughput"
    require_choice("objective", objective, OBJECTIVES)
    if objective == "cost" and any(prices.get(n) is None for n in names):
        missing = [n for n in names if prices.get(n) is None]
        raise SpecError(f"needs a price for every system; missing {', '.join(missing)} "
                        "({price_per_chip_hour} X or X1,X2 in {systems} order)", field="objective", value="cost")
    for n, p in prices.items():
        if p is not None:
            try:
                require_number("price_per_chip_hour", p, minimum=0, hint="dollars per chip-hour")
            except SpecError as exc:
                raise SpecError(f"{exc.rule} for {n}", field=exc.field, value=p, fix=exc.fix,
                                show_value=False) from None
    plans = searched_plans(model, systems, options)
    if not any(len(t) for t in plans.values()):
        raise InfeasibleError(f"{model.name}'s weights do not fit any plan of up to "
                              f"{max(options.chips_for(s) for s in systems)} chips on "
                              f"{', '.join(names)}", fix="raise {max_chips} or use a smaller {weight_dtype}")
    phases = {ph: _search_phase(model, systems, plans, phase=ph, targets=targets, options=options, prices=prices,
                                objective=objective) for ph in ("decode", "prefill")}
    for ph, target, name in (("decode", targets.tpot_s, "tpot"), ("prefill", targets.ttft_s, "ttft")):
        r = phases[ph]
        if r.best is None:
            if r.points_fitting == 0:
                raise InfeasibleError(f"no {ph} point fits in memory at context {targets.context:g}",
                                      fix="lower {context} or raise {max_chips}")
            raise InfeasibleError(f"no plan meets {name} <= {fmt_seconds(target)}; best achievable is "
                                  f"{fmt_seconds(r.best_achievable_s)}",
                                  fix=f"raise {{{name}}} or {{max_chips}}, or add a faster system")
    return PlanResult(model=model.name, systems=tuple(names), targets=targets, objective=objective, prices=prices,
                      decode=phases["decode"], prefill=phases["prefill"], fidelity=options.fidelity(systems),
                      fidelity_fields=options.fidelity_fields(systems), speculation=tuple(options.speculation))


def searched_plans(model: Model, systems, options: SearchOptions) -> dict:
    """system name -> the ``PlanArray`` the search evaluates on it: ``candidate_table`` within the system's
    GPU budget, its plans whose weights fit (``_fitting``) and, with ``layouts`` 'engine', that the system's
    engine runs."""
    return {s.name: _fitting(model, s, candidate_table(model, s, max_chips=options.chips_for(s),
                                                       pp_choices=options.pp_choices), options) for s in systems}


def _fitting(model: Model, system: System, table: PlanArray, options: SearchOptions) -> PlanArray:
    """The plans of ``table`` whose weights alone fit in HBM (and, with ``options.layouts`` 'engine', that the
    engine runs: ``econ.engine_layouts``)."""
    weights = memory_per_chip(model, table, batch=0.0, context=0.0, weight_dtype=options.weight_dtype,
                              kv_dtype=options.kv_dtype)
    fit = np.broadcast_to(weights, table.row.shape) <= system.accelerator.hbm_bytes
    if options.layouts == "engine":
        from .engine_layouts import engine_mask, pipeline_mask

        fit = fit & engine_mask(table, options.engine_for(system), moe=model.is_moe) & pipeline_mask(table, fit)
    if options.only_layouts:
        keep = {tuple(int(v) for v in lay) for lay in options.only_layouts}
        fit = fit & np.array([(int(t), int(e), int(p), int(a)) in keep
                              for t, e, p, a in zip(table.tp, table.ep, table.pp, table.adp)], dtype=bool)
    return table.take(np.flatnonzero(fit))
