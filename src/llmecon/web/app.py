"""The web front-end: a FastAPI app whose JSON endpoints mirror the CLI commands (the same library
calls and the same result dicts as ``--json``) and one page with live plotly charts.

Thin, like the CLI: validate (pydantic, ``schemas``) -> command (``llmecon.commands``, via ``routes``) ->
report dict. Bad input is a
422 whose ``detail`` names the field and the reason; nothing else reaches the client (no stack
traces). plotly.js is served from the installed ``plotly`` package, so the page works offline.
"""

from __future__ import annotations

import logging
import re
from functools import lru_cache
from importlib import resources
from pathlib import Path

from fastapi import APIRouter, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse

from .. import __version__
from ..errors import LlmeconError, did_you_mean
from ..units import to_json
from . import schemas as S
from .limits import MAX_NAME_CHARS, quote

log = logging.getLogger("llmecon.web")
STATIC = resources.files("llmecon.web") / "static"


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
    from .limits import BodyLimit, HeavyLimit, HostAllowList
    from .routes import deployment, planning, prices

    app = FastAPI(title="llmecon", version=__version__, docs_url=None, redoc_url=None,
                  description="Step time, batch economics, context economics, plans, serving simulation and price "
                              "sheets of LLM deployments. Every endpoint calls the same library functions as the "
                              "CLI command of the same name.",
                  responses={400: {"description": "The body is not valid JSON."}})
    app.add_exception_handler(LlmeconError, _bad_input)
    app.add_exception_handler(RequestValidationError, _invalid)
    app.add_exception_handler(Exception, _internal)
    app.add_middleware(HeavyLimit)  # innermost: counts only requests that passed the two checks below
    app.add_middleware(BodyLimit)
    app.add_middleware(HostAllowList, hosts=allowed_hosts)
    for router in (pages, listings, deployment, planning, prices):
        app.include_router(router)
    return app


async def _bad_input(request: Request, exc: LlmeconError):
    """The web spells fields by their library names, or by the body's key where it differs (``S.WEB_NAMES``)."""
    def spell(name: str) -> str:
        return S.WEB_NAMES.get(name, name)

    field = None if exc.field is None else spell(exc.field)
    return JSONResponse(status_code=422, content={"detail": _detail(field, exc.render(spell), type(exc).__name__)})


async def _invalid(request: Request, exc: RequestValidationError):
    """A body pydantic refuses: each error (at most ``MAX_ERRORS``) located and worded as the CLI would."""
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


async def _internal(request: Request, exc: Exception):  # pragma: no cover - a bug, logged server-side
    log.exception("internal error on %s", request.url.path)
    return JSONResponse(status_code=500, content={"detail": "internal error (logged on the server)"})


# ---- page and static files (not part of the API schema) ---------------------------------------

pages = APIRouter(include_in_schema=False)


@pages.get("/docs")
def docs_note() -> HTMLResponse:
    return HTMLResponse(DOCS_NOTE)


@pages.get("/")
def index() -> HTMLResponse:
    return HTMLResponse((STATIC / "index.html").read_text(encoding="utf-8"))


@pages.get("/lecture")
def lecture_page() -> HTMLResponse:
    return HTMLResponse(_lecture_page())


@pages.get("/static/{name}")
def static(name: str):
    if name == "plotly.min.js":
        return FileResponse(plotly_js_path(), media_type="text/javascript")
    files = {"app.js": "text/javascript", "train.js": "text/javascript", "style.css": "text/css"}
    if name not in files:
        return JSONResponse(status_code=404, content={"detail": f"no static file '{name}'"})
    return FileResponse(str(STATIC / name), media_type=files[name])


# ---- catalogue and lecture -------------------------------------------------------------------------

listings = APIRouter()


@listings.get("/api/catalog", summary="Catalogue names: models, systems, accelerators, price sheets, training presets")
def catalog() -> dict:
    from ..catalog.hardware import accelerators, systems
    from ..catalog.models import model_names
    from ..catalog.prices import price_sheets
    from ..catalog.training_runs import training_runs
    from ..dtypes import DTYPES

    return {"models": list(model_names()), "systems": sorted(systems()), "accelerators": sorted(accelerators()),
            "dtypes": list(DTYPES),
            "price_sheets": [{"provider": p, "model": m, "long_context": bool(s.long_context),
                              "cache_prices": bool(s.cache_writes)}
                             for (p, m), s in sorted(price_sheets().items())],
            "training_runs": [{"name": r.name, "description": r.description, "metric": r.metric,
                               "published": r.value} for r in training_runs().values()],
            "version": __version__}


@listings.get("/api/lecture", summary="llmecon lecture --json: every claim of the lecture, recomputed, with its "
                                     "verdict")
def lecture() -> dict:
    return _lecture_claims()
