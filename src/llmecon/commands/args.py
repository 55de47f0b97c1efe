"""Options declared once (issue 32): each option group is a frozen dataclass whose fields carry, in their
metadata, the help, the bounds, the default and the kind of value -- after vLLM's ``EngineArgs``. Both
front-ends are generated from them: the typer options (``cli/options.py: takes``) and the web's pydantic
bodies (``web/schemas.py: body_of``); a command's request class (``commands/*.py``) is its groups plus its own
fields, declared the same way.

What a field's metadata (``Opt``) holds:

- ``help``: the CLI's help; ``web_help``: the web schema's description where it differs (default: ``help``);
- ``flags``: the CLI spellings (default ``--field-name``);
- ``kind``: a value the front-ends spell differently (a catalogue name is a free string or a path on the CLI
  and an enum in the web schema; ``acceptance`` is "0.8,0.6" on the CLI and a list on the web; ``tco`` is a
  TOML path on the CLI and an object on the web); None: the field's own type on both;
- ``bounds``: pydantic's ``ge``/``gt``/``le``/``min_length``/``max_length``: the web's size limits, keeping a
  request near a second. The CLI does not declare them: the library checks every value (``errors.require_*``)
  for the CLI, the web and Python alike, and its messages are the CLI's;
- ``positional``: the CLI takes the field as a command-line argument (required unless it has a default);
- ``cli``/``web``: whether the front-end offers the field (a command's field one front-end lacks keeps its
  default there, or ``web_default`` on the web, where the web's behaviour has always differed).

Nothing here imports typer or pydantic.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Optional

#: ``Opt.web_default`` when the web keeps the field's own default
UNSET = type("Unset", (), {"__repr__": lambda self: "UNSET"})()
DEFAULT_MODEL = "deepseek-v3"
DEFAULT_SYSTEM = "gb200-nvl72"


@dataclass(frozen=True)
class Opt:
    """How the front-ends offer one request field (module docstring)."""

    help: str
    flags: tuple[str, ...] = ()
    kind: Optional[str] = None
    bounds: Any = None  # a dict of pydantic bounds (web only)
    web_help: Optional[str] = None
    web_default: Any = UNSET
    cli: bool = True
    web: bool = True
    web_name: Optional[str] = None  # the web body's key where it has always differed from the field's name
    required: bool = False  # the CLI asks for it (no default)
    positional: bool = False  # the CLI takes it as an argument, not an option (a file, a model name)


def arg(default, help: str, *, flags: tuple[str, ...] = (), kind: str | None = None, bounds: dict | None = None,
        web_help: str | None = None, web_default=UNSET, cli: bool = True, web: bool = True,
        web_name: str | None = None, required: bool = False, positional: bool = False):
    """A request field with its front-end metadata (``Opt``)."""
    opt = Opt(help=help, flags=flags, kind=kind, bounds=dict(bounds or {}), web_help=web_help,
              web_default=web_default, cli=cli, web=web, web_name=web_name, required=required,
              positional=positional)
    return field(default=default, metadata={"opt": opt})


def opt_of(f: dataclasses.Field) -> Opt | None:
    return f.metadata.get("opt")


def flags_of(name: str, opt: Opt) -> tuple[str, ...]:
    return opt.flags or ("--" + name.replace("_", "-"),)


DEGREE = {"ge": 1, "le": 4096}
PRICE_BOUNDS = {"ge": 0, "le": 1e4}
MODE_HELP = ("ideal = datasheet peaks, perfect overlap (a lower bound); calibrated = the accelerator's shipped "
             "efficiency profile; auto = calibrated where the chip has a profile, else ideal (analyze and cost: the "
             "default, with the ideal floor).")
MODE_WEB = ("ideal = datasheet peaks (a lower bound); calibrated = the chip's efficiency profile; auto = calibrated "
            "where the chip has a profile, else ideal (analyze, cost, context, plan: the default).")
ENGINE_WEB = ("Serving engine: the chip's profile for it, or one transferred from the engine's other chips "
              "(labelled with its expected error); implies calibrated. Default: the chip's default engine.")


@dataclass(frozen=True)
class DeploymentArgs:
    """A deployment: model, system, plan degrees, formats, fidelity and speculation (``resolve.deployment``)."""

    model: str = arg(DEFAULT_MODEL, "Catalogue name (llmecon catalog models) or path to a Hugging Face config.json. "
                     "--ignore-field NAME (repeatable) reads a config field you know to be harmless as absent; it "
                     "is listed in ignored_fields.", flags=("--model", "-m"), kind="model",
                     web_help="Catalogue model (GET /api/catalog).")
    system: str = arg(DEFAULT_SYSTEM, "Catalogue system (llmecon catalog systems).", flags=("--system", "-s"),
                      kind="system", web_help="Catalogue system (GET /api/catalog).")
    tp: Optional[int] = arg(None, "Tensor-parallel degree (default 1).", bounds=DEGREE,
                            web_help="Parallel degree (default: 1, or the smallest plan that fits).")
    ep: Optional[int] = arg(None, "Expert-parallel degree, MoE only (default 1).", bounds=DEGREE,
                            web_help="Parallel degree (default: 1, or the smallest plan that fits).")
    pp: Optional[int] = arg(None, "Pipeline stages (default 1).", bounds=DEGREE,
                            web_help="Parallel degree (default: 1, or the smallest plan that fits).")
    adp: Optional[int] = arg(None, "Attention data-parallel groups per stage (default: = --ep, DeepSeek's layout; "
                             "1 = TP attention + EP).", bounds=DEGREE,
                             web_help="Parallel degree (default: 1, or the smallest plan that fits).")
    redundant_experts: Optional[int] = arg(None, "MoE: extra routed-expert copies spread over the --ep groups "
                                           "(E + r divisible by ep; DeepSeek: EP144 with 32). Default 0.",
                                           bounds={"ge": 0, "le": 65536},
                                           web_help="MoE: extra routed-expert copies spread over the ep groups "
                                           "(E + r divisible by ep). Default 0.")
    weight_dtype: Optional[str] = arg(None, "Weight format (bf16, fp8, fp4, mxfp4, int4...); default: the model's.",
                                      kind="dtype", web_help="Number format; default: the model's.")
    kv_dtype: Optional[str] = arg(None, "KV-cache format; default bf16.", kind="dtype",
                                  web_help="Number format; default: the model's.")
    mode: str = arg("ideal", MODE_HELP, kind="mode", web_help=MODE_WEB)
    profile: Optional[str] = arg(None, "Efficiency profile: a shipped one by name (b200/sglang = chip/engine; b200 "
                                 "= the chip's default engine) or a TOML file (llmecon calibrate writes one); "
                                 "implies --mode calibrated.", web=False)
    engine: Optional[str] = arg(None, "Serving engine (trtllm, sglang, vllm; others by their own names once a "
                                "profile measures them): the chip's profile for that engine, or one transferred "
                                "from the engine's other chips, labelled with its expected error; implies --mode "
                                "calibrated. Default: the chip's default engine (catalog/engines.toml says which "
                                "and why).", kind="engine", web_help=ENGINE_WEB)
    spec_tokens: Optional[int] = arg(None, "Speculative decoding: draft tokens per verify step k (default 0 = none).",
                                     bounds={"ge": 0, "le": 16}, web_help="Speculative decoding: draft tokens per "
                                     "verify step (default 0 = none).")
    acceptance: Any = arg(None, "Speculative decoding: acceptance of each drafted position, comma-separated (one "
                          "value = every position); default: the model family's published figure.",
                          kind="acceptance", bounds={"min_length": 1, "max_length": 16},
                          web_help="Acceptance of each drafted position, in (0, 1); one value = "
                          "every position; default: the model family's published figure.")
    draft: Optional[str] = arg(None, "Speculative decoding: 'mtp' (the model's multi-token-prediction modules, "
                               "default) or a draft model's catalogue name.", kind="draft",
                               web_help="'mtp' (the model's MTP modules, default) or a draft model from the "
                               "catalogue.")

    def deployment(self):
        """The resolved ``Deployment`` (``resolve.deployment``; no plan given: the smallest that holds the
        weights in half of HBM)."""
        from ..resolve import deployment

        return deployment(self.model, self.system, tp=self.tp, ep=self.ep, pp=self.pp, adp=self.adp,
                          weight_dtype=self.weight_dtype, kv_dtype=self.kv_dtype, mode=self.mode,
                          profile=self.profile, auto=True, redundant_experts=self.redundant_experts,
                          spec_tokens=self.spec_tokens, acceptance=self.acceptance, draft=self.draft,
                          engine=self.engine)

    def chosen_plan(self, dep) -> str | None:
        """The line saying the plan was picked for the user (no tp/ep/pp/adp given)."""
        if (self.tp, self.ep, self.pp, self.adp) != (None, None, None, None) or self.redundant_experts:
            return None
        return (f"{dep.plan.label()}: the smallest that holds the weights in half of HBM (chosen for you; "
                "give --tp/--ep/--pp to choose)")


PRICE_HELP = "Rent of one accelerator, USD per hour (adds $ columns)."
TCO_HELP = ("TCO inputs, a TOML file (template: docs/tco.md): $/chip-hour from capex, power and hosting, in place "
            "of --price-per-chip-hour.")
TCO_WEB = "TCO inputs in place of price_per_chip_hour (not both)."


def auto_mode_arg():
    """``mode`` of the commands that default to auto (analyze, cost, context, plan; issue 35), on the CLI and
    the web alike."""
    return arg("auto", MODE_HELP, kind="mode", web_help=MODE_WEB)


def price_arg(help: str = PRICE_HELP, *, cli: bool = True, web_help="Rent of one accelerator, USD per hour."):
    return arg(None, help, flags=("--price-per-chip-hour",), bounds=PRICE_BOUNDS, web_help=web_help, cli=cli)


def tco_arg(*, cli: bool = True):
    return arg(None, TCO_HELP, kind="tco", web_help=TCO_WEB, cli=cli)


def tco_bound(name: str) -> dict:
    """A TCO input's bounds (``econ.tco.BOUNDS``, the bounds ``TcoInputs`` checks for every front-end)."""
    from ..econ.tco import BOUNDS

    low, exclusive, high, _ = BOUNDS[name]
    return {("gt" if exclusive else "ge"): low, "le": high}


def _tco_field(name: str, help: str, web_help: str | None = None):
    from ..econ.tco import BOUNDS

    return arg(None, help, bounds=tco_bound(name), web_help=web_help or BOUNDS[name][3])


@dataclass(frozen=True)
class TcoArgs:
    """TCO inputs (docs/tco.md): every one but ``watts_per_chip`` (default: the chip's catalogue TDP) and
    ``power_utilization`` (default 1.0) must be given; nothing else has a default."""

    chip_capex_usd: Optional[float] = _tco_field("chip_capex_usd", "Purchase price of one accelerator, USD.",
                                                 "Purchase price of one accelerator, USD.")
    system_capex_usd: Optional[float] = _tco_field(
        "system_capex_usd", "Everything of one system but its accelerators (hosts, NICs, switches, rack, scale-out "
        "share), USD.", "Everything of one system but its accelerators, USD.")
    amortisation_years: Optional[float] = _tco_field("amortisation_years",
                                                     "Years the capex is recovered over (1/12 to 100).")
    cost_of_capital: Optional[float] = _tco_field(
        "cost_of_capital", "Annual cost of capital as a fraction (0.08 = 8%; 0 = straight line).",
        "Annual rate as a fraction (0.08 = 8%).")
    watts_per_chip: Optional[float] = _tco_field("watts_per_chip",
                                                 "Rated watts per chip (default: the catalogue TDP).")
    power_utilization: Optional[float] = _tco_field(
        "power_utilization", "Average draw / watts per chip (default 1.0 = TDP, an upper bound).")
    pue: Optional[float] = _tco_field("pue", "Power usage effectiveness: facility power / IT power (1 to 10).")
    usd_per_kwh: Optional[float] = _tco_field("usd_per_kwh", "Electricity price, USD per kWh.")
    hosting_usd_per_rack_month: Optional[float] = _tco_field(
        "hosting_usd_per_rack_month", "Hosting per rack and month, power excluded, USD (with --chips-per-rack).",
        "Hosting per rack and month, power excluded, USD.")
    chips_per_rack: Optional[int] = _tco_field("chips_per_rack", "Accelerators in one rack.")
    hosting_usd_per_chip_month: Optional[float] = _tco_field(
        "hosting_usd_per_chip_month", "Hosting per chip and month, power excluded, USD.",
        "Hosting per chip and month, power excluded, USD.")

    def tco_values(self) -> dict:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(TcoArgs)}


def values(req, cls) -> dict:
    """The fields of group ``cls`` in ``req`` (a request that includes the group)."""
    return {f.name: getattr(req, f.name) for f in dataclasses.fields(cls)}


def inherit(cls, name: str, **changes):
    """Field ``name`` of request class ``cls`` declared again in another request (its default and ``Opt``,
    ``changes`` applied to the ``Opt``): one declaration of an option several commands take."""
    f = cls.__dataclass_fields__[name]
    return field(default=f.default, metadata={"opt": dataclasses.replace(f.metadata["opt"], **changes)})


@dataclass(frozen=True)
class BasicDeploymentArgs:
    """The deployment options of the commands with no attention-DP, redundant experts or speculation (cache,
    prices tiers): ``DeploymentArgs``' fields, declared there."""

    model: str = inherit(DeploymentArgs, "model")
    system: str = inherit(DeploymentArgs, "system")
    weight_dtype: Optional[str] = inherit(DeploymentArgs, "weight_dtype")
    kv_dtype: Optional[str] = inherit(DeploymentArgs, "kv_dtype")
    tp: Optional[int] = inherit(DeploymentArgs, "tp")
    ep: Optional[int] = inherit(DeploymentArgs, "ep")
    pp: Optional[int] = inherit(DeploymentArgs, "pp")
    mode: str = inherit(DeploymentArgs, "mode")
    profile: Optional[str] = inherit(DeploymentArgs, "profile")
    engine: Optional[str] = inherit(DeploymentArgs, "engine")

    def deployment(self):
        return DeploymentArgs(**values(self, BasicDeploymentArgs)).deployment()
