"""The API's endpoints, one ``APIRouter`` per command group. Each is validate -> call -> render: the body
(``schemas``, generated from the command's request class) becomes the request (``schemas.request_of``), the
command layer (``llmecon.commands``) answers, and the result's ``--json`` view is made JSON-safe. The
server's own limits (a request answers in about a second) are passed to the commands as arguments."""

from __future__ import annotations

from fastapi import APIRouter

from ..units import to_json
from . import schemas as S
from .schemas import request_of

#: the most candidate plans (summed over systems, times the 1 + spec_tokens speculation variants) one
#: /api/plan searches: ~10x the default request (hgx-h100 + gb200-nvl72 at 512 chips: 1,965 plans).
#: The heaviest request the schema allowed (6 NVL72-class systems, 4,096 chips, spec_tokens 8: ~120k)
#: took 4.6 CPU-s and 1.56 GB (issue 31).
WEB_PLAN_MAX_CANDIDATES = 20_000
#: pipeline stages x micro-batches x virtual stages of an interleaved plan: the memory walk visits each
#: micro-batch chunk of every rank in Python (``econ.training_memory.peak_in_flight``; measured 2026-11-27 on
#: the 2-core CI machine: 16 x 36,864 x 7 = 4.1e6 visits answer in 0.8 s, benchmarks/results/web_train_2026-11-27.md),
#: so a web request is held near a second. The closed-form schedules (1f1b, gpipe, zero-bubble, dualpipe) need none.
TRAIN_WALK_MAX = 4_194_304

deployment = APIRouter()


@deployment.post("/api/analyze", summary="llmecon analyze: headline numbers, batch curve, roofline")
def analyze(body: S.AnalyzeIn) -> dict:
    from ..commands.deployment import AnalyzeRequest, analyze as run
    from ..report.analyze import analysis_dict, floor_dict

    req = request_of(AnalyzeRequest, body)
    r = run(req)
    return to_json({**analysis_dict(r.analysis, page=True, price_per_chip_hour=r.price_per_chip_hour, rate=r.rate),
                    "mode_requested": req.mode, "ideal_floor": floor_dict(r.floor, r.analysis.step)})


@deployment.post("/api/step", summary="llmecon step: one decode or prefill step")
def step(body: S.StepIn) -> dict:
    from ..commands.deployment import StepRequest, step as run

    return to_json(run(request_of(StepRequest, body)).to_dict())


@deployment.post("/api/context", summary="llmecon context: KV economics against context length")
def context(body: S.ContextIn) -> dict:
    from ..commands.deployment import ContextRequest, context as run

    return to_json(run(request_of(ContextRequest, body), what="/api/context").to_dict())


@deployment.post("/api/cost", summary="llmecon cost: $ per million input and output tokens, blended over cache hits")
def cost(body: S.CostIn) -> dict:
    from ..commands.deployment import CostRequest, cost as run

    req = request_of(CostRequest, body)
    return to_json(run(req).to_dict(power_basis=req.power_basis, mode_requested=req.mode))


planning = APIRouter()


@planning.post("/api/plan", summary="llmecon plan: the best plans under TPOT/TTFT targets and the frontier")
def plan(body: S.PlanIn) -> dict:
    from ..commands.plan import PlanRequest, check_web, plan as run

    req = request_of(PlanRequest, body)
    check_web(req)
    r = run(req, max_candidates=WEB_PLAN_MAX_CANDIDATES)
    return to_json(r.to_dict(cache_hit=req.cache_hit is not None,
                             interactivity_source="interactivity" if r.interactivity_given else "1/tpot_s"))


@planning.post("/api/simulate", summary="llmecon simulate: batched serving under Poisson traffic")
def simulate(body: S.SimulateIn) -> dict:
    from ..commands.simulate import SimulateRequest, simulate as run

    req = request_of(SimulateRequest, body)
    return to_json(run(req).to_dict())


@planning.post("/api/train", summary="llmecon train: step time, MFU, memory per GPU and days to train of a plan; "
                                     "with a preset, a published run beside its figure")
def train(body: S.TrainIn) -> dict:
    from ..commands.train import TrainRequest, train as run

    given = {k for k in body.model_fields_set if getattr(body, k) is not None}  # null counts as not set
    r = run(request_of(TrainRequest, body), given=given, noun="fields", max_walk=TRAIN_WALK_MAX,
            profile_files=False)
    return to_json(r.view)


prices = APIRouter()


@prices.post("/api/tco", summary="llmecon tco: $/chip-hour from capex, power and hosting, each part")
def tco(body: S.TcoRequestIn) -> dict:
    from ..commands.prices import TcoRequest, tco as run

    return to_json(run(request_of(TcoRequest, body)).to_dict())


@prices.post("/api/prices/infer", summary="llmecon prices infer: a price sheet read backwards")
def prices_infer(body: S.PricesIn) -> dict:
    from ..commands.prices import infer

    return to_json(infer(**body.model_dump()))
