"""Commands on prices: ``tco`` ($/chip-hour from capex, power and hosting, ``resolve.tco``), ``prices list``
(the catalogued sheets), ``prices infer`` (a sheet read backwards, ``report.price_sheet.infer_sheet``) and
``prices tiers`` (context-length tiers that never sell below cost)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from .args import DEFAULT_SYSTEM, BasicDeploymentArgs, TcoArgs, arg


@dataclass(frozen=True)
class TcoRequest(TcoArgs):
    system: str = arg(DEFAULT_SYSTEM, "Catalogue system (llmecon catalog systems).", flags=("--system", "-s"),
                      kind="system", web_help="Catalogue system (GET /api/catalog).")
    tco: Any = arg(None, "TCO inputs, a TOML file (template: docs/tco.md): $/chip-hour from capex, power and "
                   "hosting, in place of --price-per-chip-hour.", web=False)
    defaults: bool = arg(False, "Fill every input not given from the catalogue's sourced defaults (economics.yaml; "
                         "used anyway when no input is given).",
                         web_help="Fill every input not given from the catalogue's sourced defaults of the system "
                         "(economics.yaml; the web page's TCO form shows them); without it every input is needed.")
    #: no input at all means the catalogue's defaults (the CLI); the web asks for its inputs
    empty_means_defaults: bool = arg(True, "", cli=False, web=False, web_default=False)


@dataclass(frozen=True)
class TcoOutcome:
    rate: Any  # econ.tco.TcoRate
    system: Any

    def to_dict(self) -> dict:
        from ..report.tco import tco_dict

        return tco_dict(self.rate, self.system.name)


def tco(req: TcoRequest) -> TcoOutcome:
    """$/chip-hour from total cost of ownership; flags override the TOML file; with no input (or
    ``defaults``), the catalogue's sourced defaults for the system."""
    from ..catalog.hardware import get_system
    from ..resolve import tco as resolve_tco

    s = get_system(req.system)
    values = req.tco_values()
    nothing = req.tco is None and all(v is None for v in values.values())
    rate = resolve_tco(s, path=req.tco, values=values, defaults=req.defaults or (nothing and req.empty_means_defaults))
    return TcoOutcome(rate, s)


@dataclass(frozen=True)
class InferRequest:
    provider: str = arg(None, "Price-sheet provider (llmecon prices list).", required=True)
    model: str = arg(None, "Model name on the provider's sheet.", flags=("--model", "-m"), required=True)
    active_params: tuple = arg((30e9, 100e9, 300e9), "Assumed active parameters (repeatable).",
                               kind="repeated_float")
    chips: tuple = arg(("h100-sxm", "gb200", "tpu-v6e"), "Accelerators the provider might serve on (repeatable).",
                       flags=("--chip",), kind="repeated")
    dtypes: tuple = arg(("bf16", "fp8"), "Weight formats to consider (repeatable).", flags=("--dtype",),
                        kind="repeated")
    kv_bytes_per_token: Optional[float] = arg(None, "KV size for the cache analysis (default: geometric middle of "
                                              "the inferred range).")
    system: str = arg("hgx-h100", "System whose memory tiers the cache prices are mapped onto.",
                      flags=("--system", "-s"))
    devices: tuple = arg(("pm1743:8", "exos-x24:8"), "Add a storage device tier NAME[:COUNT].", flags=("--device",),
                         kind="repeated")
    tier_prices: tuple = arg((), "NAME=USD_PER_HOUR for a tier (repeatable): Gray's rule needs at least two priced.",
                             flags=("--tier-price",), kind="repeated")
    price_per_chip_hour: Optional[float] = arg(None, "Rent of one accelerator, USD per hour (adds $ columns).")
    cache_hit: Optional[float] = arg(None, "Prefix-cache hit rate in [0, 1]: adds the blended input $/Mtok (a hit "
                                     "prefills only the uncached tokens).")
    cached_fraction: float = arg(1.0, "Share of a hit prompt billed at the cached price (cached prefix / prompt), "
                                 "0-1.")


def infer_request(req: InferRequest) -> dict:
    """``prices infer`` from the CLI's request: the storage devices and tier prices parsed, then ``infer``."""
    from .cache import device_tiers, tier_prices

    return infer(provider=req.provider, model=req.model, active_params=req.active_params, chips=req.chips,
                 dtypes=req.dtypes, system=req.system, extra_tiers=device_tiers(req.devices),
                 kv_bytes_per_token=req.kv_bytes_per_token, price_per_chip_hour=req.price_per_chip_hour,
                 tier_prices=tier_prices(req.tier_prices), cache_hit_rate=req.cache_hit,
                 cached_fraction=req.cached_fraction)


def infer(*, provider: str, model: str, active_params, chips, dtypes, system: str, kv_bytes_per_token=None,
          price_per_chip_hour=None, extra_tiers=(), tier_prices=None, cache_hit_rate=None,
          cached_fraction: float = 1.0) -> dict:
    """``prices infer``: the provider's sheet for ``model`` read backwards (``report.price_sheet.infer_sheet``)."""
    from ..catalog.prices import get_price_sheet
    from ..report.price_sheet import infer_sheet

    return infer_sheet(get_price_sheet(provider, model), active_params=active_params, chips=chips, dtypes=dtypes,
                       system=system, extra_tiers=extra_tiers, kv_bytes_per_token=kv_bytes_per_token,
                       price_per_chip_hour=price_per_chip_hour, tier_prices=tier_prices,
                       cache_hit_rate=cache_hit_rate, cached_fraction=cached_fraction)


@dataclass(frozen=True)
class PriceListRequest:
    provider: Optional[str] = arg(None, "Price-sheet provider (llmecon prices list).")
    cache_hit: Optional[float] = arg(None, "Prefix-cache hit rate in [0, 1]: adds the blended input $/Mtok (a hit "
                                     "prefills only the uncached tokens).")
    cached_fraction: float = arg(1.0, "With --cache-hit: share of a hit prompt billed at the cached price.")


def price_list(req: PriceListRequest) -> list[dict]:
    """``prices list``: every catalogued sheet's row; ``cache_hit`` adds the blended input price,
    (1 - h·f)·input + h·f·cached, where the sheet prices cached input (``econ.cache_hit``)."""
    provider, cache_hit, cached_fraction = req.provider, req.cache_hit, req.cached_fraction
    from ..catalog.prices import price_sheets, providers
    from ..errors import require_number, unknown_name
    from ..report.context import sheet_row

    if provider is not None and provider not in providers():
        raise unknown_name("provider", provider, providers())
    rows = [sheet_row(s) for (prov, _), s in sorted(price_sheets().items()) if provider in (None, prov)]
    require_number("cached_fraction", cached_fraction, minimum=0, maximum=1, hint="cached prefix / prompt")
    if cache_hit is not None:
        from ..econ.cache_hit import blended_list_price

        require_number("cache_hit", cache_hit, minimum=0, maximum=1, hint="a hit rate, e.g. 0.5")
        for r in rows:
            cached = r["cached_input_usd_per_mtok"]
            blended = None if cached is None else blended_list_price(
                input_usd_per_mtok=r["input_usd_per_mtok"], cached_input_usd_per_mtok=cached, cache_hit_rate=cache_hit,
                cached_fraction=cached_fraction)
            r.update(cache_hit_rate=cache_hit, cached_fraction=cached_fraction, usd_per_mtok_input_blended=blended)
    return rows


@dataclass(frozen=True)
class TiersRequest(BasicDeploymentArgs):
    price_per_chip_hour: Optional[float] = arg(None, "Rent of one accelerator, USD per hour.", required=True)
    margin: float = arg(0.0, "Price at least (1 + margin) x cost.")
    boundaries: Any = arg((), "Fixed tier boundary in tokens (repeatable), e.g. 200000.", flags=("--boundary",),
                          kind="repeated_float")
    base_input: Optional[float] = arg(None, "Short-context input price; with --base-output finds boundaries.")
    base_output: Optional[float] = arg(None, "Short-context output price.")
    input_step: float = arg(2.0, "Input multiplier per tier.")
    output_step: float = arg(1.5, "Output multiplier per tier.")
    utilization: float = arg(1.0, "Share of paid time the chips serve at this batch (0-1]; cost is divided by it.")
    provider: Optional[str] = arg(None, "Price-sheet provider (llmecon prices list).")
    price_model: Optional[str] = arg(None, "Model name on the provider's sheet.")


@dataclass(frozen=True)
class TiersOutcome:
    deployment: Any
    schedule: Any  # econ.context.TierSchedule
    sheet: Any
    view: dict  # ``prices tiers --json``


def _costs(dep, e, req: TiersRequest):
    """$/Mtok of input (where the context fits) and output along the context curve."""
    import numpy as np

    from ..econ.context import usd_per_mtok

    c = e.curve
    kw = dict(price_per_chip_hour=req.price_per_chip_hour, utilization=req.utilization)
    cost_in = np.where(c.fits, usd_per_mtok(c.prefill_chip_s_per_token, **kw), np.nan)
    return cost_in, usd_per_mtok(c.decode_chip_s_per_token, **kw)


def tiers(req: TiersRequest) -> TiersOutcome:
    """Context-length price tiers that never sell below cost on the deployment (fixed boundaries, or fixed
    steps from base prices), and a provider's published tiers checked against the same cost curve."""
    from ..econ.batching import context_limit
    from ..econ.context import check_prices, context_economics, tiers_for_boundaries, tiers_for_steps
    from ..errors import SpecError
    from ..report.context import context_limit_note, price_check_dict, schedule_dict
    from .deployment import price_sheet

    if (req.base_input is None) != (req.base_output is None):
        raise SpecError("--base-input and --base-output go together")
    if req.base_input is not None and req.boundaries:
        raise SpecError("give either --boundary (fixed boundaries) or --base-input/--base-output (fixed prices), "
                        "not both")
    dep = req.deployment()
    sheet = price_sheet(req.provider, req.price_model)
    e = context_economics(dep)
    cost_in, cost_out = _costs(dep, e, req)
    if req.base_input is not None:
        sched = tiers_for_steps(e.curve.context, cost_in, cost_out, base_input=req.base_input,
                                base_output=req.base_output, input_step=req.input_step, output_step=req.output_step,
                                margin=req.margin)
    else:
        sched = tiers_for_boundaries(e.curve.context, cost_in, cost_out, boundaries=list(req.boundaries),
                                     margin=req.margin, context_limit=context_limit(dep.model))
    limit = context_limit_note(dep.model.name, e.model_max_context, e.kv_capacity_tokens)
    out = {"model": dep.model.name, "system": dep.system.name, "fidelity": dep.fidelity, **dep.fidelity_fields,
           "price_per_chip_hour": req.price_per_chip_hour, "utilization": req.utilization,
           "max_context_at_batch_1": e.max_context_at_batch_1, "kv_capacity_tokens": e.kv_capacity_tokens,
           "model_max_context": e.model_max_context or None, "notes": [limit] if limit else [],
           "schedule": schedule_dict(sched)}
    if sheet is not None:
        out["check"] = price_check_dict(check_prices(e.curve.context, cost_in, cost_out, sheet), sheet)
    return TiersOutcome(dep, sched, sheet, out)
