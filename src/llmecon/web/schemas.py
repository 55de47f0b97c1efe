"""Request bodies of the web API (pydantic), generated from the command layer's request classes
(``body_of``: each field's type, default, bounds and description from its ``commands.args.Opt``), so that
an option is declared once for the CLI and the web. Bounds here keep every request to a size that answers
in about a second; the library validates the rest and its errors become 422 naming the field.

Unknown keys are rejected (``extra="forbid"``), as the catalogue loaders do; types are strict (no
"8" for 8, no false for 0). Catalogue names are enums in the schema (read at import), so a client
can list them; an unknown name is a 422 with a did-you-mean.
"""

from __future__ import annotations

from typing import Annotated, Literal, Optional

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from ..catalog.hardware import accelerators, systems
from ..catalog.models import model_names
from ..catalog.prices import price_sheets
from ..commands import args as A, deployment as D, plan as P, prices as PR, simulate as SIM, train as T
from ..dtypes import DTYPES

from .limits import MAX_NAME_CHARS


def _short(value):
    """A name longer than any catalogue name is refused before it is matched against the catalogue
    (the did-you-mean lookup is quadratic in its length: a 100 MB name took 57.8 s, issue 31)."""
    if isinstance(value, str) and len(value) > MAX_NAME_CHARS:
        raise ValueError(f"a name of {len(value):,} characters is longer than any catalogue name (at most "
                         f"{MAX_NAME_CHARS}); GET /api/catalog lists the names")
    return value


def _name(choices: tuple):
    """A catalogue-name enum whose length is checked first (``_short``)."""
    return Annotated[Literal[choices], BeforeValidator(_short)]


def _engine_names() -> tuple[str, ...]:
    """Engines with a measured profile on some chip (``fidelity.engines.measured_engines``), as ``--engine``
    takes them."""
    from ..fidelity.engines import measured_engines

    return measured_engines()


def _profile_names() -> tuple[str, ...]:
    """Shipped efficiency profiles by name (``b200/sglang``) and by chip (``b200``: its default engine), as
    ``--profile`` takes them; the web reads no profile file."""
    from ..catalog.efficiency import default_profiles

    return tuple(sorted({p.name for p in default_profiles()} | {a for p in default_profiles() for a in p.accelerators}))


def _training_runs() -> tuple[str, ...]:
    from ..catalog.training_runs import training_runs

    return tuple(training_runs())


def _precisions() -> tuple[str, ...]:
    from ..econ.training_step import PRECISIONS

    return tuple(PRECISIONS)


ModelName = _name(tuple(model_names()))
SystemName = _name(tuple(sorted(systems())))
ChipName = _name(tuple(sorted(accelerators())))
DtypeName = _name(tuple(DTYPES))
DraftName = _name(("mtp", *model_names()))
Provider = _name(tuple(sorted({p for p, _ in price_sheets()})))
EngineName = Literal[_engine_names()]
ProfileName = _name(_profile_names())
TrainingRunName = _name(_training_runs())
SYSTEM_DOC = "Catalogue system (GET /api/catalog)."
SIMULATED_TOKENS_MAX = SIM.SIMULATED_TOKENS_MAX


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, protected_namespaces=())


#: the web's type of each value kind the front-ends spell differently (``commands.args``; "tco": ``TcoIn``)
KINDS = {"model": ModelName, "system": SystemName, "dtype": Optional[DtypeName],
         "mode": Literal["ideal", "calibrated", "auto"], "optional_mode": Optional[Literal["ideal", "calibrated"]],
         "engine": Optional[EngineName], "acceptance": Optional[list[float]], "draft": Optional[DraftName],
         "phase": Literal["decode", "prefill"], "systems": list[SystemName], "duration": float,
         "prices": Optional[float], "price_basis": Literal["tco", "rent"],
         "objective": Optional[Literal["cost", "throughput"]], "count": int,
         "lengths": int, "policy": Literal["continuous", "train", "adaptive"], "schedule": Literal[T.SCHEDULES],
         "recompute": Literal[T.RECOMPUTES], "precision": Literal[_precisions()], "ema": Literal[T.EMAS],
         "profile": Optional[ProfileName], "training_run": Optional[TrainingRunName]}


def body_of(cls, name: str, *, base=None, doc: str | None = None):
    """The pydantic body of request class ``cls``: one field per field the web offers (type, default,
    bounds and description from its ``commands.args.Opt``; floats finite)."""
    import dataclasses
    from typing import get_type_hints

    from pydantic import create_model

    hints = get_type_hints(cls)
    fields = {}
    for f in dataclasses.fields(cls):
        opt = A.opt_of(f)
        if opt is None or not opt.web:
            continue
        typ = Optional[TcoIn] if opt.kind == "tco" else KINDS.get(opt.kind, hints[f.name])
        default = f.default if opt.web_default is A.UNSET else opt.web_default
        bounds = dict(opt.bounds)
        if typ in (float, Optional[float]):
            bounds["allow_inf_nan"] = False
        fields[opt.web_name or f.name] = (typ, Field(default, description=opt.web_help or opt.help, **bounds))
    model = create_model(name, __base__=base or _Body, **fields)
    model.__doc__ = doc or cls.__doc__
    return model


def web_names(*classes) -> dict[str, str]:
    """{request field: the web body's key} where the two differ (``Opt.web_name``)."""
    import dataclasses

    return {f.name: A.opt_of(f).web_name for cls in classes for f in dataclasses.fields(cls)
            if A.opt_of(f) is not None and A.opt_of(f).web_name}


def request_of(cls, body: BaseModel):
    """The request ``cls`` a web body asks for: the body's fields, the others at their web defaults; a
    ``tco`` object as its values."""
    import dataclasses

    given = body.model_dump()
    out = {}
    for f in dataclasses.fields(cls):
        opt = A.opt_of(f)
        key = (opt.web_name if opt else None) or f.name
        if key in given:
            out[f.name] = given[key]
        elif opt is not None and opt.web_default is not A.UNSET:
            out[f.name] = opt.web_default
    return cls(**out)


TcoIn = body_of(A.TcoArgs, "TcoIn", doc="TCO inputs (``llmecon tco``; docs/tco.md): every one but "
                "``watts_per_chip`` (default: the chip's catalogue TDP) and ``power_utilization`` (default 1.0) "
                "must be given; nothing else has a default.")


TcoRequestIn = body_of(PR.TcoRequest, "TcoRequestIn", doc="``llmecon tco``: $/chip-hour from capex, power and "
                      "hosting.")

DeploymentIn = body_of(A.DeploymentArgs, "DeploymentIn", doc="A deployment: model, system, plan degrees, "
                       "formats and fidelity (as the CLI's flags).")
AnalyzeIn = body_of(D.AnalyzeRequest, "AnalyzeIn",
                    doc="``llmecon analyze``: headline numbers, the batch curve and the roofline.")
CostIn = body_of(D.CostRequest, "CostIn",
                 doc="``llmecon cost``: $ per million input and output tokens, blended over cache hits.")
StepIn = body_of(D.StepRequest, "StepIn", doc="``llmecon step``: one decode or prefill step.")
ContextIn = body_of(D.ContextRequest, "ContextIn", doc="``llmecon context``: KV economics against context length.")
PlanIn = body_of(P.PlanRequest, "PlanIn", doc="``llmecon plan``: search systems x plans x batch under TPOT/TTFT "
                 "targets.")
TrainIn = body_of(T.TrainRequest, "TrainIn", doc="``llmecon train``: step time, MFU, memory per GPU and days to "
                  "train of a plan. Fields are the command's options, with its defaults; ``preset`` fills every "
                  "field not given from a published run.")


#: how the web spells a request field in an error (``web_names``; else the library's name)
WEB_NAMES = web_names(SIM.SimulateRequest)


class SimulateIn(body_of(SIM.SimulateRequest, "SimulateBody")):
    """``llmecon simulate`` with a synthetic Poisson workload of fixed lengths."""

    @model_validator(mode="after")
    def _bounded(self):
        if self.requests * self.output_tokens > SIMULATED_TOKENS_MAX:
            raise ValueError(f"requests: requests x output_tokens = {self.requests * self.output_tokens:,} is over "
                             f"{SIMULATED_TOKENS_MAX:,} for one web request; use fewer requests or shorter outputs, "
                             "or run llmecon simulate")
        return self


class PricesIn(_Body):
    """``llmecon prices infer``: a price sheet read backwards."""

    provider: Provider = "google"
    model: str = Field("gemini-2.5-pro", max_length=100, description="Model name on the provider's sheet.")
    active_params: list[float] = Field([30e9, 100e9, 300e9], min_length=1, max_length=8)
    chips: list[ChipName] = Field(["h100-sxm", "gb200", "tpu-v6e"], min_length=1, max_length=8)
    dtypes: list[DtypeName] = Field(["bf16", "fp8"], min_length=1, max_length=4)
    system: SystemName = "hgx-h100"
    kv_bytes_per_token: Optional[float] = Field(None, gt=0, le=1e9, allow_inf_nan=False)
    price_per_chip_hour: Optional[float] = Field(None, ge=0, le=1e4, allow_inf_nan=False,
                                                 description="Rent of one accelerator, USD per hour.")

    @model_validator(mode="after")
    def _params(self):
        for n in self.active_params:
            if not (1e6 <= n <= 1e14):
                raise ValueError(f"active_params: {n!r} is outside 1e6-1e14 parameters")
        return self
