"""The ``train`` command: step time, MFU, memory per GPU and days to train of a plan (``econ.training_step``),
and with a preset a published run beside its figure. One sequence of library calls -- ``resolve.training_dp``,
``TrainPlan``/``train_step``, ``resolve.training_fidelity``, ``goodput_inputs``, ``training_memory.require_fit``
-- and one view, ``report.training.train_dict`` (+ ``published_dict``), for the CLI and the web.

A preset (``catalog.training_runs.preset_options``) fills every field the user did not set; which fields the
user set is the front-end's to say (the CLI: given on the command line; the web: present and not null), and
how it spells them in ``published.changed_options`` (the CLI: as typed, ``--no-mtp``; the web: field names).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from ..errors import LlmeconError
from .args import arg

TRAIN_MODEL = "llama-3.1-70b"
TRAIN_SYSTEM = "hgx-h100"
SCHEDULES = ("gpipe", "1f1b", "interleaved", "zero-bubble", "dualpipe")
RECOMPUTES = ("none", "selective", "full", "reversible")
EMAS = ("none", "gpu", "cpu")
_WHOLE = {"ge": 1, "le": 4096}


def _flag(name: str, help: str, web_help: str | None = None):
    """A boolean switch: ``--name/--no-name`` on the CLI, default off."""
    flag = "--" + name.replace("_", "-")
    return arg(False, help, flags=(f"{flag}/--no-{flag[2:]}",), web_help=web_help)


@dataclass(frozen=True)
class TrainRequest:
    """``llmecon train`` / ``POST /api/train``: fields are the command's options, with its defaults."""

    model: str = arg(TRAIN_MODEL, "Catalogue name or config.json path.", flags=("--model", "-m"), kind="model",
                     web_help="Catalogue model (GET /api/catalog).")
    system: str = arg(TRAIN_SYSTEM, "Catalogue system: one scale-up domain; the cluster is --gpus of its GPUs.",
                      flags=("--system", "-s"), kind="system", web_help="Catalogue system (GET /api/catalog). One "
                      "scale-up domain; the cluster is gpus of its GPUs.")
    gpus: Optional[int] = arg(None, "GPUs in the job (default tp·pp·cp·dp).", bounds={"ge": 1, "le": 1_048_576})
    tp: int = arg(8, "Tensor-parallel degree.", bounds=_WHOLE)
    pp: int = arg(1, "Pipeline stages.", bounds=_WHOLE)
    dp: Optional[int] = arg(None, "Data-parallel degree (default gpus/(tp·pp·cp), or 8).",
                            bounds={"ge": 1, "le": 1_048_576})
    ep: int = arg(1, "Expert-parallel degree, carved from dp (MoE only).", bounds=_WHOLE)
    cp: int = arg(1, "Context-parallel degree (ring attention).", bounds=_WHOLE)
    seq_len: int = arg(4096, "Tokens per sequence.", bounds={"ge": 1, "le": 10_000_000})
    global_batch_tokens: float = arg(4 * 1024 * 1024, "Tokens per optimizer step.", bounds={"gt": 0, "le": 1e11})
    micro_batch: int = arg(1, "Sequences per micro-batch.", bounds={"ge": 1, "le": 65536})
    schedule: str = arg("1f1b", "Pipeline schedule.", kind="schedule")
    chunks: int = arg(1, "Virtual stages per GPU (interleaved).", bounds=_WHOLE)
    zero: int = arg(1, "ZeRO stage 0-3 (1 = Megatron distributed optimizer).", bounds={"ge": 0, "le": 3})
    recompute: str = arg("selective", "Activation recomputation.", kind="recompute")
    eager_attention: bool = _flag("eager_attention", "Attention materialises the scores in HBM (no "
                                  "FlashAttention).")
    efficiency: Optional[float] = arg(None, "Achieved share of dense peak on matmuls (default: fitted to "
                                      "Megatron-LM on A100; 1 = ideal).", bounds={"gt": 0, "le": 1},
                                      web_help="Achieved share of dense peak on matmuls (default: fitted to "
                                      "Megatron-LM on A100; 1 = ideal); not with mode or profile.")
    dp_overlap: float = arg(1.0, "Share of the last backward that hides the DP gradient sync (0-1).",
                            bounds={"ge": 0, "le": 1})
    pp_trim: int = arg(0, "Layers fewer on the first and last pipeline chunk (Llama 3: 1).",
                       bounds={"ge": 0, "le": 1024})
    dropout: bool = _flag("dropout", "Keep dropout masks (GPT-3/Megatron 2021; Llama and DeepSeek train without).")
    reserve_gb: float = arg(0.0, "GB per GPU held back for the framework (CUDA context, NCCL, fragmentation).",
                            bounds={"ge": 0, "le": 1e6})
    precision: str = arg("bf16", "bf16, fp8 (per-tensor scaling) or fp8_block (DeepSeek-V3's 1x128/128x128 "
                         "scaling): layer GEMMs at the fp8 peak.", kind="precision")
    tokens: Optional[float] = arg(None, "Total training tokens (adds days, GPU-hours).",
                                  bounds={"gt": 0, "le": 1e17})
    price_per_gpu_hour: Optional[float] = arg(None, "USD per GPU-hour (adds cost).", bounds={"ge": 0, "le": 1e4},
                                              web_help="USD per GPU-hour (adds cost); or tco.")
    tco: Any = arg(None, "TCO inputs, a TOML file (template: docs/tco.md): $/chip-hour from capex, power and "
                   "hosting, in place of --price-per-chip-hour.", kind="tco",
                   web_help="TCO inputs in place of price_per_gpu_hour (not both).")
    mode: Optional[str] = arg(None, "ideal = datasheet peaks (efficiency 1); calibrated = kernel efficiencies from "
                              "the chip's measured profile. Default: --efficiency.", kind="optional_mode",
                              web_help="ideal = datasheet peaks (efficiency 1); calibrated = the chip's kernel-table "
                              "profile. Default: efficiency (calibrated with a preset).")
    profile: Optional[str] = arg(None, "Efficiency profile: a shipped one by name (b200/sglang = chip/engine; b200 "
                                 "= the chip's default engine) or a TOML file (llmecon calibrate writes one); "
                                 "implies --mode calibrated.", kind="profile",
                                 web_help="A shipped efficiency profile by name (implies calibrated).")
    mtbf_gpu_hours: Optional[float] = arg(None, "GPU-hours between interruptions, per GPU (default: Llama 3's "
                                          "50,677).", bounds={"gt": 0, "le": 1e12})
    checkpoint_s: Optional[float] = arg(None, "Seconds a checkpoint stalls training (adds goodput).",
                                        bounds={"ge": 0, "le": 1e7})
    restart_s: Optional[float] = arg(None, "Seconds to restart after a failure (adds goodput).",
                                     bounds={"ge": 0, "le": 1e7})
    checkpoint_interval_s: Optional[float] = arg(None, "Seconds between checkpoints (default: Young's optimum).",
                                                 bounds={"gt": 0, "le": 1e9})
    grad_fp32: bool = _flag("grad_fp32", "Accumulate gradients in fp32 (4 B/param; Megatron main_grad, "
                            "DeepSeek-V3).")
    bf16_moments: bool = _flag("bf16_moments", "Adam moments in bf16 (DeepSeek-V3 §3.3.3).")
    ema: str = arg("none", "fp32 EMA of the weights: none, gpu (+4 B/param, sharded) or cpu (DeepSeek-V3 §3.2.3: "
                   "none on the GPU).", kind="ema")
    recompute_norms: bool = _flag("recompute_norms", "Recompute RMSNorm outputs in the backward (DeepSeek-V3 "
                                  "§3.2.3).")
    recompute_mla_up: bool = _flag("recompute_mla_up", "Recompute MLA up-projections (DeepSeek-V3 §3.2.3).")
    fp8_activations: bool = _flag("fp8_activations", "Cache Linear inputs in FP8, recompute MoE SwiGLU outputs "
                                  "(DeepSeek-V3 §3.3.3).")
    mtp: bool = _flag("mtp", "Train the model's multi-token-prediction modules (DeepSeek-V3 §2.2).")
    fp8_dispatch: bool = _flag("fp8_dispatch", "MoE dispatch in FP8 (DeepSeek-V3 §3.3.3).")
    ep_node_limit: int = arg(0, "Nodes a token's experts may span; one IB copy per node (DeepSeek-V3: 4; 0 = no "
                             "limit).", bounds={"ge": 0, "le": 4096})
    comm_sm_share: float = arg(0.0, "Share of SMs communication kernels take from compute (DeepSeek-V3: 20/132).",
                               bounds={"ge": 0, "le": 0.9})
    kernel_share: Optional[float] = arg(None, "Share of the profile's GEMM/attention rates a long run sustains "
                                        "(calibrated; default: the profile's share fitted on published runs, 1 "
                                        "where none is; 1 = as measured).", bounds={"gt": 0, "le": 1})
    preset: Optional[str] = arg(None, "A published run (llmecon catalog training-runs): its layout, run calibrated, "
                                "beside its published figure; options given override it.", kind="training_run",
                                web_help="A published run (GET /api/catalog training_runs): its options where a "
                                "field is not given, calibrated unless mode, profile or efficiency is given, and "
                                "its published figure beside the prediction.")


@dataclass(frozen=True)
class TrainOutcome:
    step: Any  # econ.training_step.TrainStep
    model: Any
    system: Any
    plan: Any  # econ.training_step.TrainPlan
    options: dict  # the options the step ran with (a preset's filled in)
    goodput: Any
    rate: Any
    power: Any
    efficiency: Optional[float]
    profile: Any
    run: Any  # the preset's TrainingRun, or None
    view: dict  # ``train --json``


#: the preset options that take one of a few values (checked before use: a preset is catalogue data)
_CHOICES = {"schedule": SCHEDULES, "recompute": RECOMPUTES, "precision": None, "ema": EMAS,
            "mode": ("ideal", "calibrated", "auto")}


def _preset(req: TrainRequest, given: set[str]) -> tuple[dict, Any, tuple, bool]:
    """(options, run or None, changed option names, layout changed): the request's fields, filled from its
    preset where the user did not set them (``catalog.training_runs.preset_options``)."""
    import dataclasses

    params = {f.name: getattr(req, f.name) for f in dataclasses.fields(req) if f.name != "preset"}
    if req.preset is None:
        return params, None, (), False
    from ..catalog.training_runs import get_training_run, preset_options
    from ..econ.training_step import PRECISIONS
    from ..errors import unknown_name

    run = get_training_run(req.preset)
    chosen = preset_options(run, {k: params[k] for k in given if k in params},
                            {f.name: f.default for f in dataclasses.fields(TrainRequest) if f.name != "preset"})
    for key, allowed in _CHOICES.items():
        allowed = PRECISIONS if key == "precision" else allowed
        value = chosen.options[key]
        if value is not None and value not in allowed:
            raise unknown_name(f"{key} in preset {run.name}", value, list(allowed), field="preset")
    return chosen.options, run, chosen.changed, chosen.layout_changed


def _check_walk(p: dict, plan, max_walk: int) -> None:
    """Refuse an interleaved plan whose memory walk is over ``max_walk`` (field global_batch_tokens)."""
    from ..errors import SpecError

    if plan.schedule != "interleaved" or plan.pp == 1:
        return
    visits = plan.pp * plan.chunks * p["global_batch_tokens"] / p["seq_len"] / (plan.dp * plan.microbatch)
    if visits > max_walk:
        raise SpecError(f"pp × micro-batches × chunks = {visits:,.0f} is over {max_walk:,} for one web "
                        "request (the interleaved schedule's memory walk)", field="global_batch_tokens",
                        value=p["global_batch_tokens"],
                        fix="use fewer tokens per step, a larger {micro_batch} or {dp}, or run llmecon train")


def _plan(p: dict):
    from ..econ.training_step import TrainPlan
    from ..resolve import training_dp

    return TrainPlan(tp=p["tp"], pp=p["pp"], dp=training_dp(p["gpus"], p["dp"], p["tp"], p["pp"], p["cp"]),
                     ep=p["ep"], cp=p["cp"], microbatch=p["micro_batch"], schedule=p["schedule"],
                     chunks=p["chunks"], zero=p["zero"], recompute=p["recompute"],
                     flash_attention=not p["eager_attention"], dropout=p["dropout"], pp_trim=p["pp_trim"],
                     grad_fp32=p["grad_fp32"], bf16_moments=p["bf16_moments"], ema=p["ema"],
                     recompute_norms=p["recompute_norms"], recompute_mla_up=p["recompute_mla_up"],
                     fp8_activations=p["fp8_activations"], mtp=p["mtp"], fp8_dispatch=p["fp8_dispatch"],
                     ep_node_limit=p["ep_node_limit"], comm_sm_share=p["comm_sm_share"])


def train(req: TrainRequest, *, given: set[str] = frozenset(), spell=None, noun: str = "options",
          max_walk: int | None = None, profile_files: bool = True) -> TrainOutcome:
    """The training step of the request's plan (a preset's options where ``given`` does not name one);
    ``spell(name)``: how ``published.changed_options`` spells an option; ``noun``: what the front-end calls its
    inputs in a preset's error; ``max_walk``: a server's limit on the interleaved memory walk;
    ``profile_files``: whether ``profile`` may name a TOML file (the web's may not)."""
    p, run, changed, layout_changed = _preset(req, given)
    try:
        return _train(p, run, tuple(map(spell or str, changed)), layout_changed, max_walk, profile_files)
    except LlmeconError as exc:
        if run is not None and exc.field is not None:  # the field may be the preset's, not the user's
            exc.fix = (exc.fix + "; " if exc.fix else "") + f"preset {run.name} sets the {noun} not given"
        raise


def _train(p: dict, run, changed: tuple, layout_changed: bool, max_walk, profile_files: bool) -> TrainOutcome:
    from ..catalog.hardware import get_system
    from ..catalog.models import get_model
    from ..econ.tco import power_for
    from ..econ.training_goodput import goodput_inputs
    from ..econ.training_memory import require_fit
    from ..econ.training_step import train_step
    from ..errors import require_number
    from ..report.training import published_dict, train_dict
    from ..resolve import chip_hour_price, training_fidelity
    from .pricing import _tco_error, tco_parts

    m, s = get_model(p["model"]), get_system(p["system"])
    path, values = tco_parts(p["tco"])
    try:
        price, rate = chip_hour_price(s, price_per_chip_hour=p["price_per_gpu_hour"], tco_path=path,
                                      tco_values=values, price_field="price_per_gpu_hour")
    except LlmeconError as exc:
        raise exc if values is None else _tco_error(exc) from None
    plan = _plan(p)
    if max_walk is not None:
        _check_walk(p, plan, max_walk)
    require_number("reserve_gb", p["reserve_gb"], minimum=0)
    profile = p["profile"]
    if not profile_files and profile is not None:
        from ..catalog.efficiency import named_profile

        profile = named_profile(profile)  # a shipped name, never a file
    prof, eff = training_fidelity(p["mode"], profile, s, p["efficiency"])
    st = train_step(m, s, plan, seq_len=p["seq_len"], global_batch_tokens=p["global_batch_tokens"], efficiency=eff,
                    dp_overlap=p["dp_overlap"], precision=p["precision"], reserve=p["reserve_gb"] * 1e9,
                    profile=prof, kernel_share=p["kernel_share"])
    gp = goodput_inputs(gpus=plan.gpus, checkpoint_s=p["checkpoint_s"], restart_s=p["restart_s"],
                        mtbf_gpu_hours=p["mtbf_gpu_hours"], checkpoint_interval_s=p["checkpoint_interval_s"])
    if run is None or layout_changed:  # a published layout did run: shown with fits false
        require_fit(st.memory, model_name=m.name, plan_label=plan.label(), system_name=s.name)
    power = power_for(s, rate)
    d = train_dict(st, m, s.name, tokens=p["tokens"], price_per_gpu_hour=price, dp_overlap=p["dp_overlap"],
                   goodput=gp, rate=rate, power=power)
    if run is not None:
        d["published"] = published_dict(run, changed, d)
    return TrainOutcome(st, m, s, plan, p, gp, rate, power, eff, prof, run, d)



# ---- overtrain --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class OvertrainRequest:
    active_params: float = arg(100e9, "Active parameters N_a.")
    inference_tokens_per_s: float = arg(50e6, "Tokens served per second, all users.")
    deployment_days: float = arg(60.0, "How long the model serves.")
    inference_efficiency: float = arg(1 / 3, "Inference hardware utilisation relative to training (η_inf).")
    rl_tokens: Optional[float] = arg(None, "RL tokens (default: the equal split's).")
    rl_flops_per_param_token: float = arg(3.0, "r in [2, 6]: FLOPs per parameter per RL token.")
    rl_efficiency: float = arg(1 / 3, "RL utilisation relative to training (η_RL).")
    tokens_per_param: float = arg(20.0, "Chinchilla rule.")


@dataclass(frozen=True)
class OvertrainOutcome:
    inference_tokens: float
    pretrain_tokens: float
    rl_tokens: float
    chinchilla_tokens: float
    thirds: Any  # econ.training.LifetimeCost of the equal split
    optimum: Any
    curve: Any
    view: dict  # ``overtrain --json``


def overtrain(req: OvertrainRequest) -> OvertrainOutcome:
    """How far past Chinchilla to pretrain: the equal three-way split of lifetime compute (pretraining, RL,
    inference; SPEC F22) and the true optimum at the same loss (``econ.training``)."""
    import dataclasses

    from ..econ.training import (CHINCHILLA, chinchilla_tokens, inference_tokens, lifetime_cost, lifetime_optimum,
                                 pretrain_tokens_matching_inference)
    from ..errors import require_number
    from ..report.training import overtrain_dict

    # checked here, in the user's terms: the closed forms name their own parameters (params, seconds)
    for f in dataclasses.fields(req):
        if f.name != "rl_tokens" or req.rl_tokens is not None:
            require_number(f.name, getattr(req, f.name), minimum=0, exclusive=True)
    d_inf = float(inference_tokens(tokens_per_s=req.inference_tokens_per_s, seconds=req.deployment_days * 86400.0))
    d_pre = float(pretrain_tokens_matching_inference(inference_tokens=d_inf,
                                                     inference_efficiency=req.inference_efficiency))
    d_rl = (6.0 * req.rl_efficiency * d_pre / req.rl_flops_per_param_token if req.rl_tokens is None
            else req.rl_tokens)
    kw = dict(inference_tokens=d_inf, inference_efficiency=req.inference_efficiency, rl_tokens=d_rl,
              rl_flops_per_param_token=req.rl_flops_per_param_token, rl_efficiency=req.rl_efficiency)
    thirds = lifetime_cost(params=req.active_params, pretrain_tokens=d_pre, **kw)
    best, curve = lifetime_optimum(target_loss=float(thirds.loss), **kw)
    chin = float(chinchilla_tokens(params=req.active_params, tokens_per_param=req.tokens_per_param))
    inputs = {k: v for k, v in dataclasses.asdict(req).items() if k != "rl_tokens"}
    d = overtrain_dict(params=req.active_params, inference_tokens=d_inf, pretrain_tokens=d_pre,
                       chinchilla_tokens=chin, rl_tokens=d_rl, thirds=thirds, optimum=best, law=CHINCHILLA,
                       inputs=inputs)
    return OvertrainOutcome(d_inf, d_pre, d_rl, chin, thirds, best, curve, d)
