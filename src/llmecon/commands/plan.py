"""The ``plan`` command: the cheapest (or fastest) deployment of a model over systems under TPOT and TTFT
targets and its frontier (``econ.planner.plan_deployment``), or, with ``frontier``, each system's whole
frontier compared at one interactivity (``econ.serving_frontier``). One sequence of library calls for the
CLI and the web (which adds its size limit, ``max_candidates``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from .args import DeploymentArgs, PRICE_BOUNDS, arg, auto_mode_arg, inherit, tco_arg
from .deployment import CACHE_HIT_HELP

PLAN_SYSTEMS = "gb200-nvl72,hgx-h100"
@dataclass(frozen=True)
class PlanRequest:
    """``llmecon plan`` / ``POST /api/plan``."""

    model: str = inherit(DeploymentArgs, "model")
    systems: Any = arg(PLAN_SYSTEMS, "Comma-separated catalogue systems to search (llmecon catalog systems).",
                       flags=("--systems", "-s"), kind="systems", bounds={"min_length": 1, "max_length": 6},
                       web_default=["hgx-h100", "gb200-nvl72"], web_help=None)
    tpot_s: Any = arg(0.05, "Time per output token target: one decode step ('50ms', '0.05' = seconds).",
                      flags=("--tpot",), kind="duration", bounds={"gt": 0, "le": 100})
    ttft_s: Any = arg(2.0, "Time to first token target: one prefill step (plus the pipeline fill when pp > 1), no "
                      "queueing ('2s').", flags=("--ttft",), kind="duration", bounds={"gt": 0, "le": 1000})
    context: float = arg(4096, "Mean KV tokens per sequence during decode.", flags=("--context", "-L"),
                         bounds={"ge": 0, "le": 1e7})
    prompt_tokens: float = arg(4096, "Tokens prefilled per request.", bounds={"ge": 1, "le": 1e7})
    output_tokens: float = arg(512, "Tokens generated per request (weights the blended $/Mtok).",
                               bounds={"ge": 1, "le": 1e7})
    max_chips: int = arg(512, "Most chips one replica may use.", bounds={"ge": 1, "le": 4096})
    price_per_chip_hour: Any = arg(None, "USD per chip-hour: one number for all systems or a comma list in "
                                   "--systems order. Without it $ figures are absent.", kind="prices",
                                   bounds=PRICE_BOUNDS, web_help="Rent of one accelerator, USD per hour.")
    tco: Any = arg(None, "TCO inputs instead of --price-per-chip-hour: a TOML file (docs/tco.md) for all systems, "
                   "or a comma list of files in --systems order.", kind="tco",
                   web_help=tco_arg().metadata["opt"].web_help)
    objective: Optional[str] = arg(None, "cost ($/Mtok) or throughput (tokens/s per chip); default cost when "
                                   "priced, else throughput.", kind="objective")
    weight_dtype: Optional[str] = inherit(DeploymentArgs, "weight_dtype")
    kv_dtype: Optional[str] = inherit(DeploymentArgs, "kv_dtype")
    dispatch_dtype: Optional[str] = arg(None, "MoE all-to-all dispatch format (e.g. fp8); combine stays bf16.",
                                        web=False)
    expert_imbalance: float = arg(1.0, "Routing skew: the busiest expert group's tokens over what uniform routing "
                                  "gives it (>= 1; 1 = uniform; scales its reads, FLOPs and all-to-all).", web=False)
    top: Optional[int] = arg(None, "Frontier rows shown, spread along the frontier (fastest per user first); "
                             "default 10, and with --frontier every point.", web=False)
    mode: str = auto_mode_arg()
    profile: Optional[str] = inherit(DeploymentArgs, "profile")
    engine: Optional[str] = inherit(DeploymentArgs, "engine")
    spec_tokens: Optional[int] = arg(None, "Speculative decoding: search draft tokens per verify step k = 0..K "
                                     "(default 0 = plain decoding only).", bounds={"ge": 0, "le": 8},
                                     web_help="Speculative decoding: search k = 0..K draft tokens per verify step "
                                     "(default 0 = plain decoding only).")
    acceptance: Any = inherit(DeploymentArgs, "acceptance", web_help="Acceptance per drafted position (one value = "
                              "every position); default: the model family's published figure.")
    draft: Optional[str] = inherit(DeploymentArgs, "draft",
                                   web_help="'mtp' (default) or a draft model from the catalogue.")
    cache_hit: Optional[float] = arg(None, "Prefix-cache hit rate in [0, 1]: blends the best prefill plan's input "
                                     "$/Mtok over hits (a hit prefills only the uncached tokens).",
                                     bounds={"ge": 0, "le": 1}, web_help=CACHE_HIT_HELP)
    cached_prefix: Optional[float] = arg(None, "Prompt tokens cached on a hit (default: all but the last).",
                                         bounds={"ge": 0, "le": 1e7}, web_help="Prompt tokens cached on a hit "
                                         "(needs cache_hit; default: all but the last).")
    max_workers: int = arg(16, "Most prefill (and decode) workers the prefill:decode ratio may use (<= 1024).",
                           web=False)
    frontier: bool = arg(False, "Compare systems: each one's frontier (tokens/s per chip vs tokens/s per user, of "
                         "what --view pays for; no latency target), every point, and its tokens/s per chip and "
                         "$/Mtok at --interactivity; --plot draws one line per system.",
                         web_help="Compare systems instead (``plan --frontier``): each one's whole decode frontier "
                         "at ``context``, no latency target, and its tokens/s per chip and $/Mtok at "
                         "``interactivity``.")
    view: str = arg("whole", "With --frontier: what tokens/s per chip pays for: whole (default: whole requests of "
                    "--prompt-tokens/--output-tokens, aggregated and disaggregated serving), aggregated, "
                    "disaggregated, or decode (decode steps only, the old view).", web=False)
    token_budget: float = arg(8192, "With --frontier: prompt tokens per engine step per attention group when "
                              "prefill is interleaved (aggregated serving; engines' default 8192).", web=False)
    layouts: Optional[str] = arg(None, "engine: only layouts the profile's serving engine runs, pipeline "
                                 "parallelism only where pp 1 does not fit (default with --frontier); any: every "
                                 "plan of the search (default without --frontier).", web=False)
    max_chips_per_system: Optional[str] = arg(None, "GPU budget of one replica per system, e.g. "
                                              "gb200-nvl72=72,hgx-h100=16 (others: --max-chips).", web=False)
    interactivity: Optional[float] = arg(None, "With --frontier: tokens/s per user to compare systems at (default "
                                         "1 / --tpot).", bounds={"gt": 0, "le": 1e6},
                                         web_help="With frontier: tokens/s per user to compare systems at (default "
                                         "1 / tpot_s).")


@dataclass(frozen=True)
class PlanOutcome:
    model: Any
    systems: list
    targets: Any  # econ.planner.PlanTargets
    options: Any  # econ.planner.SearchOptions
    prices: dict
    rates: dict
    powers: dict
    result: Any = None  # econ.planner.PlanResult (the search)
    workers: Any = None
    hit: Optional[dict] = None
    frontier: Any = None  # econ.serving_frontier.Frontier (``frontier``)
    interactivity: Optional[float] = None
    interactivity_given: bool = False
    floors: Optional[dict] = None  # econ.floor.plan_floors: each phase's best point on the roofline

    def to_dict(self, *, cache_hit: bool = False, interactivity_source: str | None = None) -> dict:
        """``plan --json``: the search (with ``cache_hit`` when asked) or the frontier comparison
        (``interactivity_source``: how the front-end names where the interactivity came from)."""
        if self.frontier is not None:
            from ..report.frontier import frontier_dict

            return frontier_dict(self.frontier, interactivity_source=interactivity_source,
                                 model_assumptions=self.model.assumptions, powers=self.powers, rates=self.rates)
        from ..report.plan import plan_result_dict

        out = plan_result_dict(self.result, hbm_bytes={s.name: s.accelerator.hbm_bytes for s in self.systems},
                               model_assumptions=self.model.assumptions, workers=self.workers, powers=self.powers,
                               rates=self.rates, floors=self.floors)
        if cache_hit:
            out["cache_hit"] = self.hit
        return out


def _duration(value, field: str) -> float:
    """'50ms', '50 ms', '2s' or a number of seconds ('0.05') -> seconds."""
    from ..units import parse

    if not isinstance(value, str):
        return float(value)
    try:
        return float(value)
    except ValueError:
        return parse(value, "s", field=field)


def _names(value, field: str) -> list[str]:
    from ..errors import SpecError

    if not isinstance(value, str):
        return list(value)
    names = [n.strip() for n in value.split(",")]
    if not value.strip() or not all(names):
        raise SpecError(f"--{field} {value!r}: give comma-separated names, e.g. --{field} {PLAN_SYSTEMS}")
    return names


def _prices(req: PlanRequest, systems) -> tuple[dict, dict]:
    """(prices, TCO rates) per system: one for every system, or one per system in ``systems`` order
    (``resolve.chip_hour_prices``); the web's one price and TCO object apply to all."""
    from ..errors import SpecError
    from ..resolve import chip_hour_prices
    from .pricing import priced

    text, tco = req.price_per_chip_hour, req.tco
    if not isinstance(text, (str, type(None))) or not isinstance(tco, (str, type(None))):
        return priced(req, systems)
    values = None
    if text is not None:
        try:
            values = [float(v) for v in text.split(",")]
        except ValueError:
            raise SpecError(f"--price-per-chip-hour {text!r}: give dollars per chip-hour as a number or a comma "
                            "list, e.g. 2.5 or 3.9,2.2") from None
    paths = None if tco is None else [p.strip() for p in tco.split(",")]
    for k, p in enumerate(paths or ()):
        if not p:
            raise SpecError(f"entry {k + 1} of {len(paths)} in the list is empty", field="tco", value=tco,
                            fix="give a TOML file for every system, or one for all, separated by commas "
                                "(no empty entry, no trailing comma)")
    return chip_hour_prices(systems, prices=values, tco_paths=paths, default="tco")  # none given: TCO defaults


def _budgets(given: str | None, names) -> dict:
    """max_chips_per_system NAME=N,... as {system: chips}."""
    if not given:
        return {}
    from ..errors import SpecError, unknown_name

    out = {}
    for part in given.split(","):
        name, _, value = part.strip().partition("=")
        if name.strip() not in names:
            raise unknown_name("system", name.strip(), sorted(names), field="max_chips_per_system")
        try:
            out[name.strip()] = int(value)
        except ValueError:
            raise SpecError(f"{part.strip()!r} is not SYSTEM=CHIPS", field="max_chips_per_system",
                            fix="write e.g. gb200-nvl72=72,hgx-h100=16") from None
    return out


def check(req: PlanRequest) -> None:
    """The plan's numbers checked before any work."""
    from ..econ.workers import MAX_WORKERS_LIMIT
    from ..errors import require_number

    if req.interactivity is not None:
        require_number("interactivity", req.interactivity, minimum=0, exclusive=True, hint="tokens/s per user")
    if req.top is not None:
        require_number("top", req.top, minimum=1)
    require_number("max_workers", req.max_workers, minimum=1, maximum=MAX_WORKERS_LIMIT,
                   hint="workers per pool the prefill:decode ratio may use")
    require_number("expert_imbalance", req.expert_imbalance, minimum=1,
                   hint="the busiest expert group's tokens over uniform routing's; 1 = uniform routing")


def check_cache_hit(req: PlanRequest, model) -> None:
    if req.cache_hit is not None or req.cached_prefix is not None:
        from ..econ.cache_hit import check_cache_hit

        check_cache_hit(cache_hit_rate=req.cache_hit, cached_prefix_tokens=req.cached_prefix,
                        prompt_tokens=req.prompt_tokens, max_context=model.max_context)


def check_web(req: PlanRequest) -> None:
    """The web's refusals of options that do not apply to the question asked."""
    from ..errors import SpecError

    if req.frontier and (req.cache_hit is not None or req.cached_prefix is not None):
        raise SpecError("applies to the plan search, not the frontier comparison", field="cache_hit",
                        value=req.cache_hit, fix="drop it, or set {frontier} false")
    if not req.frontier and req.interactivity is not None:
        raise SpecError("applies to the frontier comparison only", field="interactivity", value=req.interactivity,
                        fix="set {frontier} true, or drop it")


def require_budget(model, systems, req: PlanRequest, max_candidates: int) -> None:
    """An error naming max_chips when the search is larger than ``max_candidates`` (a server's limit)."""
    from ..econ.planner import candidate_table
    from ..errors import SpecError

    plans = sum(len(candidate_table(model, s, max_chips=req.max_chips)) for s in systems)
    total = plans * (1 + (req.spec_tokens or 0))
    if total > max_candidates:
        raise SpecError(f"searches {total:,} candidate plans ({plans:,} over {len(systems)} system(s)"
                        f"{f' x {1 + req.spec_tokens} speculation choices' if req.spec_tokens else ''}), more "
                        f"than this server's limit of {max_candidates:,} per request", field="max_chips",
                        value=req.max_chips, fix="lower max_chips or spec_tokens, or list fewer systems (the CLI's "
                        "llmecon plan has no such limit)")


def prepare(req: PlanRequest, *, max_candidates: int | None = None) -> PlanOutcome:
    """Everything the search needs, checked: model, systems, targets, options, prices, powers."""
    from ..catalog.hardware import get_system
    from ..catalog.models import get_model
    from ..dtypes import get_dtype
    from ..econ.planner import PlanTargets, SearchOptions
    from ..econ.tco import power_for
    from ..resolve import profiles_for
    from ..spec.speculation import speculation_candidates

    check(req)
    m = get_model(req.model)
    check_cache_hit(req, m)
    names = _names(req.systems, "systems")
    targets = PlanTargets(tpot_s=_duration(req.tpot_s, "--tpot"), ttft_s=_duration(req.ttft_s, "--ttft"),
                          context=req.context, prompt_tokens=req.prompt_tokens, output_tokens=req.output_tokens)
    found = [get_system(n) for n in names]
    if max_candidates is not None:
        require_budget(m, found, req, max_candidates)
    prices, rates = _prices(req, found)
    powers = {s.name: power_for(s, rates.get(s.name)) for s in found}
    options = SearchOptions(max_chips=req.max_chips, weight_dtype=req.weight_dtype, kv_dtype=req.kv_dtype,
                            max_chips_by_system=_budgets(req.max_chips_per_system, names),
                            layouts=req.layouts or ("engine" if req.frontier else "any"),
                            dispatch_dtype=req.dispatch_dtype, expert_imbalance=req.expert_imbalance,
                            profiles=profiles_for(req.mode, req.profile, found, req.engine),
                            speculation=speculation_candidates(m, max_k=req.spec_tokens, acceptance=req.acceptance,
                                                               draft=req.draft))
    for dt in (req.weight_dtype, req.kv_dtype, req.dispatch_dtype):
        if dt is not None:
            get_dtype(dt)
    given = req.interactivity is not None
    return PlanOutcome(m, found, targets, options, prices, rates, powers,
                       interactivity=req.interactivity if given else 1.0 / targets.tpot_s, interactivity_given=given)


def plan(req: PlanRequest, *, max_candidates: int | None = None, prepared: PlanOutcome | None = None) -> PlanOutcome:
    """The search (or, with ``frontier``, the systems compared): ``prepare`` then the library call.
    ``prepared``: the front-end's own ``prepare(req)`` (the CLI shows a status line between the two)."""
    from dataclasses import replace

    p = prepared or prepare(req, max_candidates=max_candidates)
    if req.frontier:
        from ..econ.serving_frontier import serving_frontier

        f = serving_frontier(p.model, p.systems, targets=p.targets, options=p.options, prices=p.prices,
                             interactivity=p.interactivity, view=req.view, token_budget=req.token_budget)
        return replace(p, frontier=f)
    from ..econ.floor import plan_floors
    from ..econ.planner import plan_deployment
    from ..econ.workers import plan_workers

    r = plan_deployment(p.model, p.systems, targets=p.targets, options=p.options, prices=p.prices,
                        objective=req.objective)
    hit = None
    if req.cache_hit is not None:
        from ..econ.cache_hit import plan_cache_hit

        hit = plan_cache_hit(r, p.model, p.systems, p.options, cache_hit_rate=req.cache_hit,
                             cached_prefix_tokens=req.cached_prefix)
    return replace(p, result=r, hit=hit, floors=plan_floors(r, p.model, p.systems, p.options),
                   workers=plan_workers(r, p.model, p.systems, p.options, max_workers=req.max_workers))
