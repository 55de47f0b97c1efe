"""The web front-end: a FastAPI app whose JSON endpoints mirror the CLI commands (the same library
calls and the same result dicts as ``--json``) and one page with live plotly charts.

Thin, like the CLI: parse (pydantic, ``schemas``) -> library call -> report dict. Bad input is a
422 whose ``detail`` names the field and the reason; nothing else reaches the client (no stack
traces). plotly.js is served from the installed ``plotly`` package, so the page works offline.
"""

from __future__ import annotations

import logging
import re
from functools import lru_cache
from importlib import resources
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse

from .. import __version__
from ..errors import LlmeconError, did_you_mean
from ..units import to_json
from . import schemas as S
from .limits import MAX_NAME_CHARS, quote
from ..step.inference import decode_of, prefill_of

log = logging.getLogger("llmecon.web")
STATIC = resources.files("llmecon.web") / "static"

#: the most memory one /api/simulate request may take (serving.budget's estimate): a server is shared
WEB_SIMULATE_MAX_MEMORY_BYTES = 1e9
#: the most candidate plans (summed over systems, times the 1 + spec_tokens speculation variants) one
#: /api/plan searches: ~10x the default request (hgx-h100 + gb200-nvl72 at 512 chips: 1,965 plans).
#: The heaviest request the schema allowed (6 NVL72-class systems, 4,096 chips, spec_tokens 8: ~120k)
#: took 4.6 CPU-s and 1.56 GB (issue 31).
WEB_PLAN_MAX_CANDIDATES = 20_000


def plotly_js_path() -> Path:
    """plotly.min.js inside the installed plotly package (no CDN)."""
    import plotly

    return Path(plotly.__file__).parent / "package_data" / "plotly.min.js"


def _field_of(message: str, fields) -> str | None:
    """The request field a whole-body validator's message starts with ('requests: ...' -> 'requests')."""
    m = re.match(r"\s*([a-z_]+)\b", message)
    return m.group(1) if m and m.group(1) in fields else None


def _detail(field: str | None, msg: str, kind: str) -> list[dict]:
    return [{"loc": ["body"] + (field.split(".") if field else []), "msg": msg, "type": kind}]


#: request body of each POST endpoint, to name the field an error is about
BODIES = {"/api/analyze": S.AnalyzeIn, "/api/step": S.StepIn, "/api/context": S.ContextIn, "/api/plan": S.PlanIn,
          "/api/simulate": S.SimulateIn, "/api/prices/infer": S.PricesIn, "/api/cost": S.CostIn,
          "/api/tco": S.TcoRequestIn, "/api/train": S.TrainIn}


def _fields(request: Request) -> tuple[str, ...]:
    body = BODIES.get(request.url.path)
    return tuple(body.model_fields) if body else ()


def _tco_error(exc):
    """An error about one TCO input, located under ``tco`` (``tco.pue``)."""
    if exc.field is None or exc.field in ("tco", "price_per_chip_hour", "price_per_gpu_hour"):
        return exc
    return type(exc)(exc.rule, field=f"tco.{exc.field}", value=exc.value, fix=exc.fix, show_value=exc.show_value)


def _priced(body, systems):
    """({system: USD per chip-hour}, {system: TcoRate}) from the body's price_per_chip_hour or tco object
    (``resolve.chip_hour_prices``, the CLI's resolver)."""
    from ..errors import LlmeconError
    from ..resolve import chip_hour_prices

    tco = None if body.tco is None else body.tco.model_dump()
    price = None if body.price_per_chip_hour is None else [body.price_per_chip_hour]
    try:
        return chip_hour_prices(systems, prices=price, tco_values=tco)
    except LlmeconError as exc:
        raise _tco_error(exc) from None


def _gpu_hour_price(body: S.TrainIn):
    """/api/train's resolver of (USD per GPU-hour, TcoRate) for a system and a rent (a preset may change
    both): ``resolve.chip_hour_price``, the CLI's, with the body's ``tco`` object in place of a file."""
    from ..resolve import chip_hour_price

    tco = None if body.tco is None else body.tco.model_dump()

    def priced(system, price_per_gpu_hour):
        try:
            return chip_hour_price(system, price_per_chip_hour=price_per_gpu_hour, tco_values=tco,
                                   price_field="price_per_gpu_hour")
        except LlmeconError as exc:
            raise _tco_error(exc) from None

    return priced


def _dep(body: S.DeploymentIn):
    """The body's deployment. Names are schema enums, so a model is never read from a path."""
    from ..resolve import deployment

    return deployment(body.model, body.system, tp=body.tp, ep=body.ep, pp=body.pp, adp=body.adp,
                      weight_dtype=body.weight_dtype, kv_dtype=body.kv_dtype, mode=body.mode, auto=True,
                      redundant_experts=body.redundant_experts, spec_tokens=body.spec_tokens,
                      acceptance=body.acceptance, draft=body.draft, engine=body.engine)


def _without_speculation(dep, what: str):
    """``dep`` for an endpoint that does not model speculative decoding: a 422 naming spec_tokens
    rather than an answer that silently ignores it."""
    if dep.speculation is not None:
        from ..errors import SpecError

        raise SpecError(f"speculative decoding is not modelled by {what} yet", field="spec_tokens",
                        value=dep.speculation.k,
                        fix="use /api/step, /api/analyze, /api/cost, /api/plan or /api/simulate, or leave it out")
    return dep


def _check_plan_options(body: S.PlanIn, model) -> None:
    """/api/plan: cache hits belong to the plan search, ``interactivity`` to the frontier (refused, not
    ignored, where they do not apply); the cache-hit inputs checked as ``plan --cache-hit`` checks them."""
    from ..errors import SpecError

    if body.frontier and (body.cache_hit is not None or body.cached_prefix is not None):
        raise SpecError("applies to the plan search, not the frontier comparison", field="cache_hit",
                        value=body.cache_hit, fix="drop it, or set {frontier} false")
    if not body.frontier and body.interactivity is not None:
        raise SpecError("applies to the frontier comparison only", field="interactivity", value=body.interactivity,
                        fix="set {frontier} true, or drop it")
    if body.cache_hit is not None or body.cached_prefix is not None:
        from ..econ.cache_hit import check_cache_hit

        check_cache_hit(cache_hit_rate=body.cache_hit, cached_prefix_tokens=body.cached_prefix,
                        prompt_tokens=body.prompt_tokens, max_context=model.max_context)


def _require_plan_budget(model, systems, body: S.PlanIn) -> None:
    """A 422 naming max_chips when the search is larger than WEB_PLAN_MAX_CANDIDATES."""
    from ..econ.planner import candidate_table
    from ..errors import SpecError

    plans = sum(len(candidate_table(model, s, max_chips=body.max_chips)) for s in systems)
    total = plans * (1 + (body.spec_tokens or 0))
    if total > WEB_PLAN_MAX_CANDIDATES:
        raise SpecError(f"searches {total:,} candidate plans ({plans:,} over {len(systems)} system(s)"
                        f"{f' x {1 + body.spec_tokens} speculation choices' if body.spec_tokens else ''}), more "
                        f"than this server's limit of {WEB_PLAN_MAX_CANDIDATES:,} per request", field="max_chips",
                        value=body.max_chips, fix="lower max_chips or spec_tokens, or list fewer systems (the CLI's "
                        "llmecon plan has no such limit)")


@lru_cache(maxsize=1)
def _claims() -> tuple:
    """The lecture's claims (deterministic: computed once per process, ~1.5 s)."""
    from ..lecture import build_claims

    return tuple(build_claims())


@lru_cache(maxsize=1)
def _lecture_claims() -> dict:
    """``llmecon lecture --json``."""
    from ..report.lecture import claims_dict

    return to_json(claims_dict(list(_claims())))


@lru_cache(maxsize=1)
def _lecture_page() -> str:
    """``llmecon lecture --out``'s HTML (figures drawn once per process, ~1 s)."""
    from ..lecture.figures import figures
    from ..report.lecture import lecture_html

    return lecture_html(list(_claims()), figures())


#: most errors one 422 lists (100k unknown keys answered an 8 MB 422, issue 31)
MAX_ERRORS = 20

#: where the interactive docs would be: Swagger UI loads from a CDN, and the page must work offline
DOCS_NOTE = ("<!doctype html><title>llmecon API</title><p>The interactive API docs are off: they load Swagger UI "
             "from a CDN, and this server works offline. The API's schema is at <a href=\"/openapi.json\">"
             "/openapi.json</a>; docs/web.md lists the endpoints.</p>")


def _unknown_name(name: str, given, choices: list[str]) -> str:
    """'unknown model 'x'; did you mean ...' quoting at most a short prefix of what was sent; no
    fuzzy matching of a string longer than any name."""
    short = isinstance(given, str) and len(given) <= MAX_NAME_CHARS
    hint = did_you_mean(given, choices) if short else ""
    shown = quote(given) if isinstance(given, str) else repr(given)[:40]
    return f"unknown {name} {shown}{hint}; one of: {', '.join(choices[:12])}" + (", ..." if len(choices) > 12 else "")


def create_app(*, allowed_hosts: frozenset[str] | None = None) -> FastAPI:
    """The app; ``allowed_hosts``: Host names it answers to (``limits.allowed_hosts`` of the bound
    address, as ``llmecon web`` passes), ``None`` = any (a test client, a wildcard bind)."""
    app = FastAPI(title="llmecon", version=__version__, docs_url=None, redoc_url=None,
                  description="Step time, batch economics, context economics, plans, serving simulation and price "
                              "sheets of LLM deployments. Every endpoint calls the same library functions as the "
                              "CLI command of the same name.",
                  responses={400: {"description": "The body is not valid JSON."}})

    @app.exception_handler(LlmeconError)
    async def _bad_input(request: Request, exc: LlmeconError):  # the web spells fields by their library names
        return JSONResponse(status_code=422, content={"detail": _detail(exc.field, exc.render(), type(exc).__name__)})

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError):
        out = []
        errors = exc.errors()
        for e in errors[:MAX_ERRORS]:
            loc = [str(x) for x in e.get("loc", ())]
            msg = str(e.get("msg", "invalid")).removeprefix("Value error, ")
            if e.get("type") == "extra_forbidden" and len(loc) >= 2:
                known = tuple(S.TcoIn.model_fields) if loc[-2] == "tco" else _fields(request)
                key = loc[-1]
                hint = did_you_mean(key, known) if len(key) <= MAX_NAME_CHARS else ""
                msg = f"unknown field {quote(key)}{hint}"
                loc = loc[:-1] + [key[:MAX_NAME_CHARS]]
            elif e.get("type") == "literal_error":  # a catalogue name or an option not in the enum
                choices = re.findall(r"'([^']*)'", str(e.get("ctx", {}).get("expected", "")))
                name = next((x for x in reversed(loc) if not x.isdigit()), "value")
                msg = _unknown_name(name, e.get("input"), choices)
            if loc == ["body"] and (field := _field_of(msg, _fields(request))):  # a whole-body rule names its field
                loc = ["body", field]
            out.append({"loc": loc, "msg": msg, "type": str(e.get("type", "value_error"))})
        if len(errors) > MAX_ERRORS:
            out.append({"loc": ["body"], "msg": f"... and {len(errors) - MAX_ERRORS:,} more errors (the first "
                                                f"{MAX_ERRORS} are listed); fix these and send again",
                        "type": "too_many_errors"})
        return JSONResponse(status_code=422, content={"detail": out})

    @app.exception_handler(Exception)
    async def _internal(request: Request, exc: Exception):  # pragma: no cover - a bug, logged server-side
        log.exception("internal error on %s", request.url.path)
        return JSONResponse(status_code=500, content={"detail": "internal error (logged on the server)"})

    from .limits import BodyLimit, HeavyLimit, HostAllowList

    app.add_middleware(HeavyLimit)  # innermost: counts only requests that passed the two checks below
    app.add_middleware(BodyLimit)
    app.add_middleware(HostAllowList, hosts=allowed_hosts)

    # ---- page and static files (not part of the API schema) -----------------------------------

    @app.get("/docs", include_in_schema=False)
    def docs_note() -> HTMLResponse:
        return HTMLResponse(DOCS_NOTE)

    @app.get("/", include_in_schema=False)
    def index() -> HTMLResponse:
        return HTMLResponse((STATIC / "index.html").read_text(encoding="utf-8"))

    @app.get("/lecture", include_in_schema=False)
    def lecture_page() -> HTMLResponse:
        return HTMLResponse(_lecture_page())

    @app.get("/static/{name}", include_in_schema=False)
    def static(name: str):
        if name == "plotly.min.js":
            return FileResponse(plotly_js_path(), media_type="text/javascript")
        files = {"app.js": "text/javascript", "train.js": "text/javascript", "style.css": "text/css"}
        if name not in files:
            return JSONResponse(status_code=404, content={"detail": f"no static file '{name}'"})
        return FileResponse(str(STATIC / name), media_type=files[name])

    # ---- API -----------------------------------------------------------------------------------

    @app.get("/api/catalog", summary="Catalogue names: models, systems, accelerators, price sheets, training presets")
    def catalog() -> dict:
        from ..catalog.hardware import accelerators, systems
        from ..catalog.models import model_names
        from ..catalog.prices import price_sheets
        from ..dtypes import DTYPES

        from ..catalog.training_runs import training_runs

        return {"models": list(model_names()), "systems": sorted(systems()), "accelerators": sorted(accelerators()),
                "dtypes": list(DTYPES),
                "price_sheets": [{"provider": p, "model": m, "long_context": bool(s.long_context),
                                  "cache_prices": bool(s.cache_writes)}
                                 for (p, m), s in sorted(price_sheets().items())],
                "training_runs": [{"name": r.name, "description": r.description, "metric": r.metric,
                                   "published": r.value} for r in training_runs().values()],
                "version": __version__}

    @app.get("/api/lecture", summary="llmecon lecture --json: every claim of the lecture, recomputed, with its "
                                     "verdict")
    def lecture() -> dict:
        return _lecture_claims()

    @app.post("/api/analyze", summary="llmecon analyze: headline numbers, batch curve, roofline")
    def analyze(body: S.AnalyzeIn) -> dict:
        from ..econ.batching import analyze as analyze_deployment
        from ..report.analyze import analysis_dict

        dep = _dep(body)
        prices, rates = _priced(body, [dep.system])
        a = analyze_deployment(dep, context=body.context, batch=body.batch)
        return to_json(analysis_dict(a, page=True, price_per_chip_hour=prices.get(dep.system.name),
                                     rate=rates.get(dep.system.name)))

    @app.post("/api/step", summary="llmecon step: one decode or prefill step")
    def step(body: S.StepIn) -> dict:
        from ..econ.batching import require_fit
        from ..report.analyze import step_dict

        dep = _dep(body)
        spec = None
        if body.phase == "decode":
            result = decode_of(dep, batch=body.batch, context=body.context)
            if dep.speculation is not None:
                from ..report.speculation import speculation_dict
                from ..step.speculative import breakeven_batch, speculative_of

                spec = speculation_dict(speculative_of(dep, batch=body.batch, context=body.context),
                                        breakeven_batch=breakeven_batch(dep, context=body.context))
        else:
            result = prefill_of(dep, batch=body.batch, prompt_tokens=body.context)
        require_fit(dep, batch=body.batch, context=body.context)
        return to_json({**step_dict(result, dep), "speculation": spec})

    @app.post("/api/context", summary="llmecon context: KV economics against context length")
    def context(body: S.ContextIn) -> dict:
        from ..econ.context import context_economics
        from ..report.context import context_dict

        dep = _without_speculation(_dep(body), "/api/context")
        prices, rates = _priced(body, [dep.system])
        e = context_economics(dep, batch=body.batch, batch_cap=body.max_batch)
        return to_json(context_dict(e, dep, price_per_chip_hour=prices.get(dep.system.name),
                                    utilization=body.utilization, rate=rates.get(dep.system.name)))

    @app.post("/api/plan", summary="llmecon plan: the best plans under TPOT/TTFT targets and the frontier")
    def plan(body: S.PlanIn) -> dict:
        from ..catalog.hardware import get_system
        from ..catalog.models import get_model
        from ..dtypes import get_dtype
        from ..econ.planner import PlanTargets, SearchOptions, plan_deployment
        from ..report.plan import plan_result_dict
        from ..resolve import profiles_for

        m = get_model(body.model)
        _check_plan_options(body, m)
        found = [get_system(n) for n in body.systems]
        _require_plan_budget(m, found, body)
        for dt in (body.weight_dtype, body.kv_dtype):
            if dt is not None:
                get_dtype(dt)
        targets = PlanTargets(tpot_s=body.tpot_s, ttft_s=body.ttft_s, context=body.context,
                              prompt_tokens=body.prompt_tokens, output_tokens=body.output_tokens)
        from ..spec.speculation import speculation_candidates

        options = SearchOptions(max_chips=body.max_chips, weight_dtype=body.weight_dtype, kv_dtype=body.kv_dtype,
                                profiles=profiles_for(body.mode, None, found, body.engine),
                                speculation=speculation_candidates(m, max_k=body.spec_tokens,
                                                                   acceptance=body.acceptance, draft=body.draft))
        from ..econ.tco import power_for

        prices, rates = _priced(body, found)
        powers = {s.name: power_for(s, rates.get(s.name)) for s in found}
        if body.frontier:  # ``plan --frontier`` at its defaults: whole requests, the layouts engines run
            import dataclasses

            from ..econ.serving_frontier import serving_frontier
            from ..report.frontier import frontier_dict

            given = body.interactivity is not None
            f = serving_frontier(m, found, targets=targets, options=dataclasses.replace(options, layouts="engine"),
                                 prices=prices, interactivity=body.interactivity if given else 1.0 / body.tpot_s)
            return to_json(frontier_dict(f, interactivity_source="interactivity" if given else "1/tpot_s",
                                         model_assumptions=m.assumptions, powers=powers, rates=rates))
        r = plan_deployment(m, found, targets=targets, options=options, prices=prices, objective=body.objective)
        from ..econ.workers import plan_workers

        out = plan_result_dict(r, hbm_bytes={s.name: s.accelerator.hbm_bytes for s in found},
                               model_assumptions=m.assumptions, workers=plan_workers(r, m, found, options),
                               powers=powers, rates=rates)
        if body.cache_hit is not None:  # as ``plan --cache-hit --json``
            from ..econ.cache_hit import plan_cache_hit

            out["cache_hit"] = plan_cache_hit(r, m, found, options, cache_hit_rate=body.cache_hit,
                                              cached_prefix_tokens=body.cached_prefix)
        return to_json(out)

    @app.post("/api/cost", summary="llmecon cost: $ per million input and output tokens, blended over cache hits")
    def cost(body: S.CostIn) -> dict:
        from ..econ.pricing import serving_cost
        from ..report.context import cost_dict

        dep = _dep(body)
        hit = None
        if body.cache_hit is not None or body.cached_prefix is not None:
            from ..econ.cache_hit import cache_hit_cost, check_cache_hit

            check_cache_hit(cache_hit_rate=body.cache_hit, cached_prefix_tokens=body.cached_prefix,
                            prompt_tokens=body.context, max_context=dep.model.max_context)
        prices, rates = _priced(body, [body.system])
        if body.system not in prices:
            from ..errors import SpecError

            raise SpecError("a price is needed", field="price_per_chip_hour",
                            fix="give price_per_chip_hour (USD per chip-hour) or a tco object")
        price = prices[body.system]
        c = serving_cost(dep, context=body.context, price_per_chip_hour=price, utilization=body.utilization,
                         batch=body.batch)
        if body.cache_hit is not None:
            hit = cache_hit_cost(dep, context=body.context, cache_hit_rate=body.cache_hit,
                                 cached_prefix_tokens=body.cached_prefix, price_per_chip_hour=price,
                                 utilization=body.utilization)
        return to_json(cost_dict(c, dep, None, hit, rates.get(body.system)))

    @app.post("/api/simulate", summary="llmecon simulate: batched serving under Poisson traffic")
    def simulate(body: S.SimulateIn) -> dict:
        from ..report.serving import simulation_dict
        from ..serving import SimConfig, simulate as run
        from ..serving.budget import require_memory, simulation_bytes
        from ..serving.policies import policy_from_name
        from ..serving.workload import parse_lengths, synthetic

        pol = policy_from_name(body.policy, batch_cap=body.batch_cap)
        prices, rates = _priced(body, [body.system])
        cfg = SimConfig(policy=pol, price_per_chip_hour=prices.get(body.system), seed=body.seed)
        wl = synthetic(rate_per_s=body.rate, prompt=parse_lengths(str(body.prompt_tokens), field="prompt_tokens"),
                       output=parse_lengths(str(body.output_tokens), field="output_tokens"), seed=body.seed,
                       n=body.requests, duration_s=None)
        dep = _dep(body)  # speculative decoding: the simulator's (docs/serving.md); train refuses it by name
        require_memory(simulation_bytes(requests=wl.n, longest_tokens=body.prompt_tokens + body.output_tokens),
                       WEB_SIMULATE_MAX_MEMORY_BYTES, what=f"{wl.n:,} requests of up to "
                       f"{body.prompt_tokens + body.output_tokens:,} tokens", fix="use fewer or shorter requests")
        return to_json(simulation_dict(dep, wl, run(dep, wl, cfg), rates.get(body.system)))

    @app.post("/api/tco", summary="llmecon tco: $/chip-hour from capex, power and hosting, each part")
    def tco(body: S.TcoRequestIn) -> dict:
        from ..report.tco import tco_dict
        from ..resolve import tco as resolve_tco

        rate = resolve_tco(body.system, values=body.model_dump(exclude={"system"}))
        return to_json(tco_dict(rate, body.system))

    @app.post("/api/train", summary="llmecon train: step time, MFU, memory per GPU and days to train of a plan; "
                                    "with a preset, a published run beside its figure")
    def train(body: S.TrainIn) -> dict:
        from .train import train_answer

        return to_json(train_answer(body, _gpu_hour_price(body)))

    @app.post("/api/prices/infer", summary="llmecon prices infer: a price sheet read backwards")
    def prices_infer(body: S.PricesIn) -> dict:
        from ..catalog.prices import get_price_sheet
        from ..report.price_sheet import infer_sheet

        sheet = get_price_sheet(body.provider, body.model)
        return to_json(infer_sheet(sheet, active_params=body.active_params, chips=body.chips, dtypes=body.dtypes,
                                  system=body.system, kv_bytes_per_token=body.kv_bytes_per_token,
                                  price_per_chip_hour=body.price_per_chip_hour))

    return app
