"""Commands on one deployment: ``analyze``, ``step``, ``batch``, ``cost`` and ``context``. Each takes its
request (a frozen dataclass: ``commands.args`` groups plus the command's own fields) and returns a result
holding what the front-ends render; ``to_dict()`` is the ``--json`` object where the CLI and the web
answer the same."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from .args import DeploymentArgs, arg, auto_mode_arg, price_arg, tco_arg
from .pricing import priced

CONTEXT_HELP = "Tokens of KV per sequence."
BATCH_FLAGS = ("--batch", "-b")
PRICE_BASIS_HELP = ("With no --price-per-chip-hour or --tco: tco = the catalogue's sourced TCO defaults (llmecon "
                    "tco shows them), rent = its published rent per chip-hour.")
CACHE_HIT_HELP = ("Prefix-cache hit rate in [0, 1]: blends input $/Mtok over hits (a hit prefills only the "
                  "uncached tokens).")
CACHED_PREFIX_WEB = "Prompt tokens cached on a hit (needs cache_hit; default: all but the last)."


PRICE_BASIS_WEB = ("With no price_per_chip_hour or tco: tco = the catalogue's sourced TCO defaults of the system "
                   "(POST /api/tco with no inputs shows them), rent = its published rent per chip-hour.")


def price_basis_arg(*, cli: bool = True):
    """The catalogue basis a command prices by when no price is given: "tco" on the CLI and the web alike
    (issue 35)."""
    return arg("tco", PRICE_BASIS_HELP, kind="price_basis", web_help=PRICE_BASIS_WEB, cli=cli)


# ---- analyze ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AnalyzeRequest(DeploymentArgs):
    mode: str = auto_mode_arg()
    context: float = arg(4096, CONTEXT_HELP, flags=("--context", "-L"), bounds={"ge": 0, "le": 1e8},
                         web_help="KV tokens per sequence.")
    batch: Optional[float] = arg(None, "Batch to show (default: min(balance batch, memory limit)).",
                                 flags=BATCH_FLAGS, bounds={"ge": 1, "le": 1e7})
    price_per_chip_hour: Optional[float] = price_arg(cli=False)
    tco: Any = tco_arg(cli=False)
    price_basis: Optional[str] = price_basis_arg(cli=False)


@dataclass(frozen=True)
class AnalyzeResult:
    deployment: Any
    analysis: Any  # econ.batching.Analysis
    floor: Any  # the ideal floor's decode step beside a calibrated answer, or None
    price_per_chip_hour: Optional[float]
    rate: Any


def analyze(req: AnalyzeRequest) -> AnalyzeResult:
    """The main job: headline numbers of a deployment, its batch curve and, beside a calibrated answer,
    the ideal floor at the same plan and batch (issue 35)."""
    from ..econ.batching import analyze as analyze_deployment, roofline_twin
    from ..step.inference import decode_of

    dep = req.deployment()
    prices, rates = priced(req, [dep.system], default=req.price_basis)
    a = analyze_deployment(dep, context=req.context, batch=req.batch)
    floor = None if dep.profile.is_ideal else decode_of(roofline_twin(dep), batch=a.batch, context=req.context)
    return AnalyzeResult(dep, a, floor, prices.get(dep.system.name), rates.get(dep.system.name))


# ---- step ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StepRequest(DeploymentArgs):
    phase: str = arg("decode", "decode: one token per sequence; prefill: the whole prompt.", kind="phase")
    batch: float = arg(1, "Sequences in the batch.", flags=BATCH_FLAGS, bounds={"ge": 1, "le": 1e7})
    context: float = arg(4096, "decode: cached tokens attended; prefill: prompt tokens.", flags=("--context", "-L"),
                         bounds={"ge": 0, "le": 1e8})


@dataclass(frozen=True)
class StepOutcome:
    deployment: Any
    step: Any  # step.inference.StepResult
    speculation: Optional[dict]
    chosen_plan: Optional[str]

    def to_dict(self) -> dict:
        from ..report.analyze import step_dict

        return {**step_dict(self.step, self.deployment), "speculation": self.speculation}


def step(req: StepRequest) -> StepOutcome:
    """One decode or prefill step; with speculation (decode), the verify step and its break-even batch."""
    from ..econ.batching import require_fit
    from ..step.inference import decode_of, prefill_of

    dep = req.deployment()
    spec = None
    if req.phase == "decode":
        result = decode_of(dep, batch=req.batch, context=req.context)
        if dep.speculation is not None:
            from ..report.speculation import speculation_dict
            from ..step.speculative import breakeven_batch, speculative_of

            spec = speculation_dict(speculative_of(dep, batch=req.batch, context=req.context),
                                    breakeven_batch=breakeven_batch(dep, context=req.context))
    else:
        result = prefill_of(dep, batch=req.batch, prompt_tokens=req.context)
    require_fit(dep, batch=req.batch, context=req.context)
    return StepOutcome(dep, result, spec, req.chosen_plan(dep))


# ---- batch --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BatchRequest(DeploymentArgs):
    context: float = arg(4096, CONTEXT_HELP, flags=("--context", "-L"))


@dataclass(frozen=True)
class BatchOutcome:
    deployment: Any
    economics: Any  # econ.batching.BatchEconomics
    chosen_plan: Optional[str]

    def to_dict(self) -> dict:
        from ..report.analyze import economics_dict

        return economics_dict(self.economics, self.deployment)


def batch(req: BatchRequest) -> BatchOutcome:
    """Latency and cost per token against batch (``econ.batching.batch_economics``)."""
    from ..econ.batching import batch_economics

    dep = req.deployment()
    return BatchOutcome(dep, batch_economics(dep, context=req.context), req.chosen_plan(dep))


# ---- context ------------------------------------------------------------------------------------


def _kv_shared(dep, kv_share: int):
    from dataclasses import replace

    return dep if kv_share == 1 else replace(dep, model=dep.model.with_kv_sharing(kv_share))


def _without_speculation(dep, what: str):
    """``dep`` for a command that does not model speculative decoding: an error naming spec_tokens rather
    than an answer that silently ignores it."""
    if dep.speculation is not None:
        from ..errors import SpecError

        raise SpecError(f"speculative decoding is not modelled by {what} yet", field="spec_tokens",
                        value=dep.speculation.k,
                        fix="use /api/step, /api/analyze, /api/cost, /api/plan or /api/simulate, or leave it out")
    return dep


UTIL_HELP = "Share of paid time the chips serve at this batch (0-1]; cost is divided by it."
KV_SHARE_HELP = ("What-if: every N adjacent layers share one KV cache (cross-layer attention). 1 = as "
                 "configured.")


@dataclass(frozen=True)
class ContextRequest(DeploymentArgs):
    mode: str = auto_mode_arg()
    batch: Optional[float] = arg(None, "Fixed decode batch (default: the largest that fits at each context).",
                                 flags=BATCH_FLAGS, bounds={"ge": 1, "le": 1e7},
                                 web_help="Fixed decode batch (default: the largest that fits).")
    max_batch: Optional[float] = arg(None, "Cap on the memory-limited batch.", bounds={"ge": 1, "le": 1e7})
    price_per_chip_hour: Optional[float] = price_arg()
    tco: Any = tco_arg()
    price_basis: Optional[str] = price_basis_arg()
    utilization: float = arg(1.0, UTIL_HELP, bounds={"gt": 0, "le": 1}, web_help=None)
    kv_share: int = arg(1, KV_SHARE_HELP, web=False)


@dataclass(frozen=True)
class ContextOutcome:
    deployment: Any
    economics: Any  # econ.context.ContextEconomics
    price_per_chip_hour: Optional[float]
    rate: Any
    utilization: float
    floor: Any = None  # econ.floor.context_floor: the same contexts on the roofline

    def to_dict(self) -> dict:
        from ..report.context import context_dict

        return context_dict(self.economics, self.deployment, price_per_chip_hour=self.price_per_chip_hour,
                            utilization=self.utilization, rate=self.rate, floor=self.floor)


def context(req: ContextRequest, *, what: str = "/api/context") -> ContextOutcome:
    """KV economics against context length (``econ.context.context_economics``)."""
    from ..econ.context import context_economics, usd_per_mtok

    dep = _without_speculation(_kv_shared(req.deployment(), req.kv_share), what)
    prices, rates = priced(req, [dep.system], default=req.price_basis)
    price = prices.get(dep.system.name)
    usd_per_mtok(0.0, price_per_chip_hour=price or 0.0, utilization=req.utilization)  # validate early
    e = context_economics(dep, batch=req.batch, batch_cap=req.max_batch)
    from ..econ.floor import context_floor

    return ContextOutcome(dep, e, price, rates.get(dep.system.name), req.utilization,
                          context_floor(dep, e, batch=req.batch, batch_cap=req.max_batch))


# ---- cost ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CostRequest(DeploymentArgs):
    mode: str = auto_mode_arg()
    price_per_chip_hour: Optional[float] = price_arg(web_help="Rent of one accelerator, USD per hour (or tco).")
    tco: Any = tco_arg()
    price_basis: Optional[str] = price_basis_arg()
    power_basis: str = arg("facility", "Tokens/s per MW over facility power (system power per chip, hosts and "
                           "network included, x PUE) or the chip's TDP alone (tdp, PUE 1).", kind="power_basis",
                           web=False)
    context: float = arg(4096, "Prompt / KV tokens per sequence.", flags=("--context", "-L"),
                         bounds={"ge": 1, "le": 1e8})
    batch: Optional[float] = arg(None, "Decode batch (default: the largest that fits).", flags=BATCH_FLAGS,
                                 bounds={"ge": 1, "le": 1e7})
    utilization: float = arg(1.0, UTIL_HELP, bounds={"gt": 0, "le": 1}, web_help=None)
    provider: Optional[str] = arg(None, "Price-sheet provider (llmecon prices list).", web=False)
    price_model: Optional[str] = arg(None, "Model name on the provider's sheet.", web=False)
    cache_hit: Optional[float] = arg(None, "Prefix-cache hit rate in [0, 1]: adds the blended input $/Mtok (a hit "
                                     "prefills only the uncached tokens).", bounds={"ge": 0, "le": 1},
                                     web_help=CACHE_HIT_HELP)
    cached_prefix: Optional[float] = arg(None, "Tokens of each prompt cached on a hit (default: all but the last).",
                                         bounds={"ge": 0, "le": 1e7}, web_help=CACHED_PREFIX_WEB)
    cache_hold: Optional[float] = arg(300.0, "With --cache-hit: seconds each prefix is held for reuse, priced in the "
                                      "tier Gray's five-minute rule picks (0: holding not priced).", web=False,
                                      web_default=None)


@dataclass(frozen=True)
class CostOutcome:
    deployment: Any
    cost: Any  # econ.pricing.ServingCost
    sheet: Any
    hit: Any
    rate: Any
    floor: Any  # the same deployment on the roofline, beside a calibrated cost (issue 35)
    price_per_chip_hour: float

    def to_dict(self, *, power_basis: str = "facility", mode_requested: str | None = None,
                floor: bool = True) -> dict:
        from ..report.context import cost_dict

        return cost_dict(self.cost, self.deployment, self.sheet, self.hit, self.rate, power_basis=power_basis,
                         mode_requested=mode_requested, floor=self.floor if floor else None)


def price_sheet(provider: str | None, model: str | None):
    if provider is None and model is None:
        return None
    if provider is None or model is None:
        from ..errors import SpecError

        raise SpecError("--provider and --price-model go together (see llmecon prices list)")
    from ..catalog.prices import get_price_sheet

    return get_price_sheet(provider, model)


def _cost_price(req: CostRequest, dep) -> tuple[float, Any]:
    """The price a cost needs: given, from TCO inputs, or the catalogue's ``price_basis``; without a basis
    (the web), an error naming the two inputs."""
    from ..errors import SpecError

    prices, rates = priced(req, [dep.system], default=req.price_basis, required=req.price_basis is not None)
    if dep.system.name not in prices:
        raise SpecError("a price is needed", field="price_per_chip_hour",
                        fix="give price_per_chip_hour (USD per chip-hour) or a tco object")
    return prices[dep.system.name], rates.get(dep.system.name)


def cost(req: CostRequest) -> CostOutcome:
    """$ per million input and output tokens, blended over cache hits, with the ideal floor beside a
    calibrated cost and a list price's margin (``econ.pricing.serving_cost``)."""
    from ..econ.batching import roofline_twin
    from ..econ.pricing import serving_cost

    dep = req.deployment()
    price, rate = _cost_price(req, dep)
    sheet = price_sheet(req.provider, req.price_model)
    if req.cache_hit is not None or req.cached_prefix is not None:
        from ..econ.cache_hit import check_cache_hit

        check_cache_hit(cache_hit_rate=req.cache_hit, cached_prefix_tokens=req.cached_prefix,
                        prompt_tokens=req.context, max_context=dep.model.max_context)
    kw = dict(context=req.context, price_per_chip_hour=price, utilization=req.utilization)
    c = serving_cost(dep, **kw, batch=req.batch)
    hit = None
    if req.cache_hit is not None:
        from ..econ.cache_hit import cache_hit_cost

        hit = cache_hit_cost(dep, **kw, cache_hit_rate=req.cache_hit, cached_prefix_tokens=req.cached_prefix,
                             hold_s=req.cache_hold or None)
    floor = None if dep.profile.is_ideal else serving_cost(roofline_twin(dep), **kw, batch=req.batch)
    return CostOutcome(dep, c, sheet, hit, rate, floor, price)
