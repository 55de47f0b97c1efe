"""Request bodies of the web API (pydantic). Bounds here keep every request to a size that answers
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


ModelName = _name(tuple(model_names()))
SystemName = _name(tuple(sorted(systems())))
ChipName = _name(tuple(sorted(accelerators())))
DtypeName = _name(tuple(DTYPES))
DraftName = _name(("mtp", *model_names()))
Provider = _name(tuple(sorted({p for p, _ in price_sheets()})))

MODEL_DOC = "Catalogue model (GET /api/catalog)."
SYSTEM_DOC = "Catalogue system (GET /api/catalog)."
#: requests x output tokens of one simulation: keeps a request near a second in the worst case
#: (measured 2026-11-22: 2,000 requests x 1,000 output tokens at batch cap 1, i.e. 2e6 decode
#: iterations, simulated in 0.9 s on one core of the 2-core CI machine).
SIMULATED_TOKENS_MAX = 2_000_000


def _engine_names() -> tuple[str, ...]:
    """Engines with a measured profile on some chip (``fidelity.engines.measured_engines``), as ``--engine``
    takes them."""
    from ..fidelity.engines import measured_engines

    return measured_engines()


EngineName = Literal[_engine_names()]
ENGINE_DOC = ("Serving engine: the chip's profile for it, or one transferred from the engine's other chips "
              "(labelled with its expected error); implies calibrated. Default: the chip's default engine.")


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, protected_namespaces=())


# ---- bodies generated from the request classes (commands.args: each option declared once) ----------------

#: the web's type of each value kind the front-ends spell differently (``commands.args``)
KINDS = {"model": ModelName, "system": SystemName, "dtype": Optional[DtypeName],
         "mode": Literal["ideal", "calibrated"], "engine": Optional[EngineName],
         "acceptance": Optional[list[float]], "draft": Optional[DraftName], "phase": Literal["decode", "prefill"]}


def body_of(cls, name: str, *, exclude=(), base=None, doc: str | None = None):
    """The pydantic body of request class ``cls``: one field per field the web offers (type, default,
    bounds and description from its ``commands.args.Opt``; floats finite), ``exclude`` left out."""
    import dataclasses
    from typing import get_type_hints

    from pydantic import create_model

    from ..commands.args import UNSET, opt_of

    hints = get_type_hints(cls)
    fields = {}
    for f in dataclasses.fields(cls):
        opt = opt_of(f)
        if opt is None or not opt.web or f.name in exclude:
            continue
        typ = Optional[TcoIn] if opt.kind == "tco" else KINDS.get(opt.kind, hints[f.name])
        default = f.default if opt.web_default is UNSET else opt.web_default
        bounds = dict(opt.bounds)
        if typ in (float, Optional[float]):
            bounds["allow_inf_nan"] = False
        fields[f.name] = (typ, Field(default, description=opt.web_help or opt.help, **bounds))
    model = create_model(name, __base__=base or _Body, **fields)
    model.__doc__ = doc or cls.__doc__
    return model


def request_of(cls, body: BaseModel):
    """The request ``cls`` a web body asks for: the body's fields, the others at their web defaults; a
    ``tco`` object as its values."""
    import dataclasses

    from ..commands.args import UNSET, opt_of

    given = body.model_dump()
    out = {}
    for f in dataclasses.fields(cls):
        if f.name in given:
            out[f.name] = given[f.name]
        elif (opt := opt_of(f)) is not None and opt.web_default is not UNSET:
            out[f.name] = opt.web_default
    return cls(**out)


from ..commands import args as _args  # noqa: E402
from ..commands import deployment as _deployment  # noqa: E402

TcoIn = body_of(_args.TcoArgs, "TcoIn", doc="TCO inputs (``llmecon tco``; docs/tco.md): every one but "
                "``watts_per_chip`` (default: the chip's catalogue TDP) and ``power_utilization`` (default 1.0) "
                "must be given; nothing else has a default.")
TcoOpt = Field(None, description=_args.TCO_WEB)


class TcoRequestIn(TcoIn):
    """``llmecon tco``: $/chip-hour from capex, power and hosting."""

    system: SystemName = Field("gb200-nvl72", description=SYSTEM_DOC)


DeploymentIn = body_of(_args.DeploymentArgs, "DeploymentIn", doc="A deployment: model, system, plan degrees, "
                       "formats and fidelity (as the CLI's flags).")
AnalyzeIn = body_of(_deployment.AnalyzeRequest, "AnalyzeIn",
                    doc="``llmecon analyze``: headline numbers, the batch curve and the roofline.")
CostIn = body_of(_deployment.CostRequest, "CostIn",
                 doc="``llmecon cost``: $ per million input and output tokens, blended over cache hits.")
StepIn = body_of(_deployment.StepRequest, "StepIn", doc="``llmecon step``: one decode or prefill step.")
ContextIn = body_of(_deployment.ContextRequest, "ContextIn", doc="``llmecon context``: KV economics against context "
                    "length.")
CacheHit = Field(None, ge=0, le=1, allow_inf_nan=False, description=_deployment.CACHE_HIT_HELP)
CachedPrefix = Field(None, ge=0, le=1e7, allow_inf_nan=False, description=_deployment.CACHED_PREFIX_WEB)
Price = Field(None, ge=0, le=1e4, allow_inf_nan=False, description="Rent of one accelerator, USD per hour.")
DtypeOpt = Field(None, description="Number format; default: the model's.")


class PlanIn(_Body):
    """``llmecon plan``: search systems x plans x batch under TPOT/TTFT targets."""

    model: ModelName = Field("deepseek-v3", description=MODEL_DOC)
    systems: list[SystemName] = Field(["hgx-h100", "gb200-nvl72"], min_length=1, max_length=6)
    tpot_s: float = Field(0.05, gt=0, le=100, allow_inf_nan=False)
    ttft_s: float = Field(2.0, gt=0, le=1000, allow_inf_nan=False)
    context: float = Field(4096, ge=0, le=1e7, allow_inf_nan=False)
    prompt_tokens: float = Field(4096, ge=1, le=1e7, allow_inf_nan=False)
    output_tokens: float = Field(512, ge=1, le=1e7, allow_inf_nan=False)
    max_chips: int = Field(512, ge=1, le=4096)
    price_per_chip_hour: Optional[float] = Price
    tco: Optional[TcoIn] = TcoOpt
    objective: Optional[Literal["cost", "throughput"]] = None
    weight_dtype: Optional[DtypeName] = DtypeOpt
    kv_dtype: Optional[DtypeName] = DtypeOpt
    mode: Literal["ideal", "calibrated"] = "ideal"
    engine: Optional[EngineName] = Field(None, description=ENGINE_DOC)
    spec_tokens: Optional[int] = Field(None, ge=0, le=8, description="Speculative decoding: search k = 0..K draft "
                                       "tokens per verify step (default 0 = plain decoding only).")
    acceptance: Optional[list[float]] = Field(None, min_length=1, max_length=16,
                                              description="Acceptance per drafted position (one value = every "
                                              "position); default: the model family's published figure.")
    draft: Optional[DraftName] = Field(None, description="'mtp' (default) or a draft model from the catalogue.")
    cache_hit: Optional[float] = CacheHit
    cached_prefix: Optional[float] = CachedPrefix
    frontier: bool = Field(False, description="Compare systems instead (``plan --frontier``): each one's whole decode "
                                              "frontier at ``context``, no latency target, and its tokens/s per chip "
                                              "and $/Mtok at ``interactivity``.")
    interactivity: Optional[float] = Field(None, gt=0, le=1e6, allow_inf_nan=False,
                                           description="With frontier: tokens/s per user to compare systems at "
                                                       "(default 1 / tpot_s).")


class SimulateIn(DeploymentIn):
    """``llmecon simulate`` with a synthetic Poisson workload of fixed lengths."""

    rate: float = Field(10.0, gt=0, le=1e5, allow_inf_nan=False, description="Arrivals per second.")
    requests: int = Field(1000, ge=1, le=20000)
    prompt_tokens: int = Field(1024, ge=1, le=1_000_000)
    output_tokens: int = Field(256, ge=1, le=100_000)
    policy: Literal["continuous", "train", "adaptive"] = "continuous"
    batch_cap: Optional[int] = Field(None, ge=1, le=4096)
    seed: int = Field(0, ge=0, le=2**31 - 1)
    price_per_chip_hour: Optional[float] = Price
    tco: Optional[TcoIn] = TcoOpt

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
    price_per_chip_hour: Optional[float] = Price

    @model_validator(mode="after")
    def _params(self):
        for n in self.active_params:
            if not (1e6 <= n <= 1e14):
                raise ValueError(f"active_params: {n!r} is outside 1e6-1e14 parameters")
        return self


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


ProfileName = _name(_profile_names())
TrainingRunName = _name(_training_runs())


class TrainIn(_Body):
    """``llmecon train``: step time, MFU, memory per GPU and days to train of a plan. Fields are the
    command's options, with its defaults; ``preset`` fills every field not given from a published run."""

    model: ModelName = Field("llama-3.1-70b", description=MODEL_DOC)
    system: SystemName = Field("hgx-h100", description=SYSTEM_DOC + " One scale-up domain; the cluster is "
                               "gpus of its GPUs.")
    gpus: Optional[int] = Field(None, ge=1, le=1_048_576, description="GPUs in the job (default tp·pp·cp·dp).")
    tp: int = Field(8, ge=1, le=4096, description="Tensor-parallel degree.")
    pp: int = Field(1, ge=1, le=4096, description="Pipeline stages.")
    dp: Optional[int] = Field(None, ge=1, le=1_048_576, description="Data-parallel degree (default "
                              "gpus/(tp·pp·cp), or 8).")
    ep: int = Field(1, ge=1, le=4096, description="Expert-parallel degree, carved from dp (MoE only).")
    cp: int = Field(1, ge=1, le=4096, description="Context-parallel degree (ring attention).")
    seq_len: int = Field(4096, ge=1, le=10_000_000, description="Tokens per sequence.")
    global_batch_tokens: float = Field(4 * 1024 * 1024, gt=0, le=1e11, allow_inf_nan=False,
                                       description="Tokens per optimizer step.")
    micro_batch: int = Field(1, ge=1, le=65536, description="Sequences per micro-batch.")
    schedule: Literal["gpipe", "1f1b", "interleaved", "zero-bubble", "dualpipe"] = "1f1b"
    chunks: int = Field(1, ge=1, le=4096, description="Virtual stages per GPU (interleaved).")
    zero: int = Field(1, ge=0, le=3, description="ZeRO stage 0-3 (1 = Megatron distributed optimizer).")
    recompute: Literal["none", "selective", "full", "reversible"] = "selective"
    eager_attention: bool = Field(False, description="Attention materialises the scores in HBM (no "
                                  "FlashAttention).")
    efficiency: Optional[float] = Field(None, gt=0, le=1, allow_inf_nan=False, description="Achieved share of "
                                        "dense peak on matmuls (default: fitted to Megatron-LM on A100; 1 = "
                                        "ideal); not with mode or profile.")
    dp_overlap: float = Field(1.0, ge=0, le=1, allow_inf_nan=False, description="Share of the last backward "
                              "that hides the DP gradient sync.")
    pp_trim: int = Field(0, ge=0, le=1024, description="Layers fewer on the first and last pipeline chunk.")
    dropout: bool = Field(False, description="Keep dropout masks (GPT-3/Megatron 2021).")
    reserve_gb: float = Field(0.0, ge=0, le=1e6, allow_inf_nan=False, description="GB per GPU held back for the "
                              "framework.")
    precision: Literal[_precisions()] = Field("bf16", description="bf16, fp8 (per-tensor scaling) or fp8_block "
                                              "(DeepSeek-V3's block scaling): layer GEMMs at the fp8 peak.")
    tokens: Optional[float] = Field(None, gt=0, le=1e17, allow_inf_nan=False, description="Total training "
                                    "tokens (adds days, GPU-hours).")
    price_per_gpu_hour: Optional[float] = Field(None, ge=0, le=1e4, allow_inf_nan=False,
                                                description="USD per GPU-hour (adds cost); or tco.")
    tco: Optional[TcoIn] = Field(None, description="TCO inputs in place of price_per_gpu_hour (not both).")
    mode: Optional[Literal["ideal", "calibrated"]] = Field(None, description="ideal = datasheet peaks "
                                                           "(efficiency 1); calibrated = the chip's kernel-table "
                                                           "profile. Default: efficiency (calibrated with a "
                                                           "preset).")
    profile: Optional[ProfileName] = Field(None, description="A shipped efficiency profile by name (implies "
                                           "calibrated).")
    mtbf_gpu_hours: Optional[float] = Field(None, gt=0, le=1e12, allow_inf_nan=False, description="GPU-hours "
                                            "between interruptions, per GPU (default: Llama 3's 50,677).")
    checkpoint_s: Optional[float] = Field(None, ge=0, le=1e7, allow_inf_nan=False, description="Seconds a "
                                          "checkpoint stalls training (with restart_s: adds goodput).")
    restart_s: Optional[float] = Field(None, ge=0, le=1e7, allow_inf_nan=False, description="Seconds to restart "
                                       "after a failure (with checkpoint_s: adds goodput).")
    checkpoint_interval_s: Optional[float] = Field(None, gt=0, le=1e9, allow_inf_nan=False,
                                                   description="Seconds between checkpoints (default: Young's "
                                                               "optimum).")
    grad_fp32: bool = Field(False, description="Accumulate gradients in fp32 (4 B/param).")
    bf16_moments: bool = Field(False, description="Adam moments in bf16 (DeepSeek-V3 §3.3.3).")
    ema: Literal["none", "gpu", "cpu"] = Field("none", description="fp32 EMA of the weights: none, gpu "
                                               "(+4 B/param, sharded) or cpu.")
    recompute_norms: bool = Field(False, description="Recompute RMSNorm outputs in the backward.")
    recompute_mla_up: bool = Field(False, description="Recompute MLA up-projections.")
    fp8_activations: bool = Field(False, description="Cache Linear inputs in FP8, recompute MoE SwiGLU outputs.")
    mtp: bool = Field(False, description="Train the model's multi-token-prediction modules.")
    fp8_dispatch: bool = Field(False, description="MoE dispatch in FP8.")
    ep_node_limit: int = Field(0, ge=0, le=4096, description="Nodes a token's experts may span (0 = no limit).")
    comm_sm_share: float = Field(0.0, ge=0, le=0.9, allow_inf_nan=False, description="Share of SMs "
                                 "communication kernels take from compute.")
    kernel_share: Optional[float] = Field(None, gt=0, le=1, allow_inf_nan=False, description="Share of the "
                                          "profile's GEMM/attention rates a long run sustains (calibrated; "
                                          "default: the profile's fitted share).")
    preset: Optional[TrainingRunName] = Field(None, description="A published run (GET /api/catalog "
                                              "training_runs): its options where a field is not given, "
                                              "calibrated unless mode, profile or efficiency is given, and "
                                              "its published figure beside the prediction.")
