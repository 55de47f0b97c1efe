"""CLI commands for training economics: ``train`` (step time, MFU, memory of a plan on a cluster)
and ``overtrain`` (how far past Chinchilla to train given lifetime inference). Thin: parse ->
library call -> report (see cli/__init__.py)."""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Optional

import typer

from ..errors import LlmeconError
from .options import (JsonOpt, Mode, ProfileOpt, TcoOpt, _check_plot_path, _chip_hour_price, _console, _emit_json,
                      _kv_table, _power_basis, app, catalog_app)

TRAIN_MODEL = "llama-3.1-70b"
TRAIN_SYSTEM = "hgx-h100"


class Schedule(str, Enum):
    gpipe = "gpipe"
    one_f_one_b = "1f1b"
    interleaved = "interleaved"
    zero_bubble = "zero-bubble"
    dualpipe = "dualpipe"


class Recompute(str, Enum):
    none = "none"
    selective = "selective"
    full = "full"
    reversible = "reversible"


PlotOpt = Annotated[Optional[str], typer.Option("--plot", help="Write a figure (PNG/SVG/PDF).")]


@app.command("train")
def train_cmd(
    ctx: typer.Context,
    model: Annotated[str, typer.Option("--model", "-m", help="Catalogue name or config.json path.")] = TRAIN_MODEL,
    system: Annotated[str, typer.Option("--system", "-s", help="Catalogue system: one scale-up domain; the "
                                                               "cluster is --gpus of its GPUs.")] = TRAIN_SYSTEM,
    gpus: Annotated[Optional[int], typer.Option("--gpus", help="GPUs in the job (default tp·pp·cp·dp).")] = None,
    tp: Annotated[int, typer.Option("--tp", help="Tensor-parallel degree.")] = 8,
    pp: Annotated[int, typer.Option("--pp", help="Pipeline stages.")] = 1,
    dp: Annotated[Optional[int], typer.Option("--dp", help="Data-parallel degree (default gpus/(tp·pp·cp), "
                                                           "or 8).")] = None,
    ep: Annotated[int, typer.Option("--ep", help="Expert-parallel degree, carved from dp (MoE only).")] = 1,
    cp: Annotated[int, typer.Option("--cp", help="Context-parallel degree (ring attention).")] = 1,
    seq_len: Annotated[int, typer.Option("--seq-len", help="Tokens per sequence.")] = 4096,
    global_batch_tokens: Annotated[float, typer.Option("--global-batch-tokens", help="Tokens per optimizer "
                                                                                     "step.")] = 4 * 1024 * 1024,
    micro_batch: Annotated[int, typer.Option("--micro-batch", help="Sequences per micro-batch.")] = 1,
    schedule: Annotated[Schedule, typer.Option("--schedule", help="Pipeline schedule.")] = Schedule.one_f_one_b,
    chunks: Annotated[int, typer.Option("--chunks", help="Virtual stages per GPU (interleaved).")] = 1,
    zero: Annotated[int, typer.Option("--zero", help="ZeRO stage 0-3 (1 = Megatron distributed optimizer).")] = 1,
    recompute: Annotated[Recompute, typer.Option("--recompute", help="Activation recomputation.")] =
    Recompute.selective,
    eager_attention: Annotated[bool, typer.Option(
        "--eager-attention/--no-eager-attention",
        help="Attention materialises the scores in HBM (no FlashAttention).")] = False,
    efficiency: Annotated[Optional[float], typer.Option("--efficiency", help="Achieved share of dense peak on "
                                                                             "matmuls (default: fitted to "
                                                                             "Megatron-LM on A100; "
                                                                             "1 = ideal).")] = None,
    dp_overlap: Annotated[float, typer.Option("--dp-overlap", help="Share of the last backward that hides the "
                                                                   "DP gradient sync (0-1).")] = 1.0,
    pp_trim: Annotated[int, typer.Option("--pp-trim", help="Layers fewer on the first and last pipeline chunk "
                                                           "(Llama 3: 1).")] = 0,
    dropout: Annotated[bool, typer.Option(
        "--dropout/--no-dropout",
        help="Keep dropout masks (GPT-3/Megatron 2021; Llama and DeepSeek train without).")] = False,
    reserve_gb: Annotated[float, typer.Option("--reserve-gb", help="GB per GPU held back for the framework "
                                                                   "(CUDA context, NCCL, fragmentation).")] = 0.0,
    precision: Annotated[str, typer.Option("--precision", help="bf16, fp8 (per-tensor scaling) or fp8_block "
                                                               "(DeepSeek-V3's 1x128/128x128 scaling): layer GEMMs at "
                                                               "the fp8 peak.")] = "bf16",
    tokens: Annotated[Optional[float], typer.Option("--tokens", help="Total training tokens (adds days, "
                                                                     "GPU-hours).")] = None,
    price_per_gpu_hour: Annotated[Optional[float], typer.Option("--price-per-gpu-hour", help="USD per GPU-hour "
                                                                                             "(adds cost).")] = None,
    tco: TcoOpt = None,
    mode: Annotated[Optional[Mode], typer.Option("--mode", help="ideal = datasheet peaks (efficiency 1); "
                                                              "calibrated = kernel efficiencies from the chip's "
                                                              "measured profile. Default: --efficiency.")] = None,
    profile: ProfileOpt = None,
    mtbf_gpu_hours: Annotated[Optional[float], typer.Option(
        "--mtbf-gpu-hours", help="GPU-hours between interruptions, per GPU (default: Llama 3's 50,677).")] = None,
    checkpoint_s: Annotated[Optional[float], typer.Option("--checkpoint-s", help="Seconds a checkpoint stalls "
                                                                                 "training (adds goodput).")] = None,
    restart_s: Annotated[Optional[float], typer.Option("--restart-s", help="Seconds to restart after a failure "
                                                                           "(adds goodput).")] = None,
    checkpoint_interval_s: Annotated[Optional[float], typer.Option("--checkpoint-interval-s", help="Seconds "
                                                                   "between checkpoints (default: Young's "
                                                                   "optimum).")] = None,
    grad_fp32: Annotated[bool, typer.Option(
        "--grad-fp32/--no-grad-fp32",
        help="Accumulate gradients in fp32 (4 B/param; Megatron main_grad, DeepSeek-V3).")] = False,
    bf16_moments: Annotated[bool, typer.Option(
        "--bf16-moments/--no-bf16-moments", help="Adam moments in bf16 (DeepSeek-V3 §3.3.3).")] = False,
    ema: Annotated[str, typer.Option("--ema", help="fp32 EMA of the weights: none, gpu (+4 B/param, sharded) or "
                                                   "cpu (DeepSeek-V3 §3.2.3: none on the GPU).")] = "none",
    recompute_norms: Annotated[bool, typer.Option(
        "--recompute-norms/--no-recompute-norms",
        help="Recompute RMSNorm outputs in the backward (DeepSeek-V3 §3.2.3).")] = False,
    recompute_mla_up: Annotated[bool, typer.Option(
        "--recompute-mla-up/--no-recompute-mla-up", help="Recompute MLA up-projections (DeepSeek-V3 §3.2.3).")] = False,
    fp8_activations: Annotated[bool, typer.Option(
        "--fp8-activations/--no-fp8-activations",
        help="Cache Linear inputs in FP8, recompute MoE SwiGLU outputs (DeepSeek-V3 §3.3.3).")] = False,
    mtp: Annotated[bool, typer.Option("--mtp/--no-mtp", help="Train the model's multi-token-prediction modules "
                                                    "(DeepSeek-V3 §2.2).")] = False,
    fp8_dispatch: Annotated[bool, typer.Option(
        "--fp8-dispatch/--no-fp8-dispatch", help="MoE dispatch in FP8 (DeepSeek-V3 §3.3.3).")] = False,
    ep_node_limit: Annotated[int, typer.Option("--ep-node-limit", help="Nodes a token's experts may span; one IB "
                                                                       "copy per node (DeepSeek-V3: 4; 0 = no "
                                                                       "limit).")] = 0,
    comm_sm_share: Annotated[float, typer.Option("--comm-sm-share", help="Share of SMs communication kernels "
                                                                         "take from compute (DeepSeek-V3: "
                                                                         "20/132).")] = 0.0,
    kernel_share: Annotated[Optional[float], typer.Option(
        "--kernel-share", help="Share of the profile's GEMM/attention rates a long run sustains (calibrated; "
                               "default: the profile's share fitted on published runs, 1 where none is; "
                               "1 = as measured).")] = None,
    preset: Annotated[Optional[str], typer.Option("--preset", help="A published run (llmecon catalog "
                                                                   "training-runs): its layout, run calibrated, "
                                                                   "beside its published figure; options given "
                                                                   "override it.")] = None,
    plot: PlotOpt = None, as_json: JsonOpt = False,
) -> None:
    """Plan a training run: step time and where it goes, MFU/HFU, memory per GPU, and days to train."""
    params = {k: v for k, v in ctx.params.items() if k != "preset"}
    run = None if preset is None else _apply_preset(ctx, preset, params)
    try:
        _train(run=run, **params)
    except LlmeconError as exc:
        if run is not None and exc.field is not None:  # the option may be the preset's, not the user's
            exc.fix = (exc.fix + "; " if exc.fix else "") + f"preset {preset} sets the options not given"
        raise


def _apply_preset(ctx: typer.Context, name: str, params: dict):
    """Fill ``params`` from the published run ``name`` (``catalog.training_runs.preset_options``: options given
    on the command line win). Returns (run, changed options spelled as flags, whether the layout changed)."""
    from ..catalog.training_runs import get_training_run, preset_options
    from ..errors import unknown_name

    run = get_training_run(name)

    def plain(v):
        return getattr(v, "value", v)

    # by name: typer vendors its own click (typer._click), whose enum is not click's
    given = {p.name: plain(params[p.name]) for p in ctx.command.params if p.name in params
             and getattr(ctx.get_parameter_source(p.name), "name", None) == "COMMANDLINE"}
    defaults = {p.name: plain(p.default) for p in ctx.command.params if p.name in params}
    chosen = preset_options(run, given, defaults)
    for key, kind in (("schedule", Schedule), ("recompute", Recompute), ("mode", Mode)):
        value = chosen.options[key]
        if value is not None and value not in {e.value for e in kind}:
            raise unknown_name(f"{key} in preset {name}", value, [e.value for e in kind], field="preset")
        chosen.options[key] = None if value is None else kind(value)
    params.update(chosen.options)
    def flag(key: str) -> str:  # as typed: --no-mtp for a flag turned off
        param = next(p for p in ctx.command.params if p.name == key)
        off = given.get(key) is False and getattr(param, "secondary_opts", None)
        return param.secondary_opts[0] if off else (param.opts[0] if param.opts else key)

    return run, tuple(flag(k) for k in chosen.changed), chosen.layout_changed


def _train(*, model, system, gpus, tp, pp, dp, ep, cp, seq_len, global_batch_tokens, micro_batch, schedule, chunks,
           zero, recompute, eager_attention, efficiency, dp_overlap, pp_trim, dropout, reserve_gb, precision, tokens,
           price_per_gpu_hour, tco, mode, profile, mtbf_gpu_hours, checkpoint_s, restart_s,
           checkpoint_interval_s, grad_fp32, bf16_moments, ema, recompute_norms, recompute_mla_up,
           fp8_activations, mtp, fp8_dispatch, ep_node_limit, comm_sm_share, kernel_share, plot, as_json,
           run=None) -> None:
    from ..catalog.hardware import get_system
    from ..catalog.models import get_model
    from ..errors import require_number
    from ..report.training import plot_train, published_dict, published_line, train_dict
    from ..econ.training_step import TrainPlan, train_step
    from ..resolve import training_dp, training_fidelity
    from ..report.tco import mw_text, tco_line
    from ..units import fmt_bytes, fmt_seconds

    if plot:
        _check_plot_path(plot)
    m, s = get_model(model), get_system(system)
    price_per_gpu_hour, rate = _chip_hour_price(s, price_per_gpu_hour, tco, price_field="price_per_gpu_hour")
    plan = TrainPlan(tp=tp, pp=pp, dp=training_dp(gpus, dp, tp, pp, cp), ep=ep, cp=cp, microbatch=micro_batch,
                     schedule=schedule.value, chunks=chunks, zero=zero, recompute=recompute.value,
                     flash_attention=not eager_attention, dropout=dropout, pp_trim=pp_trim, grad_fp32=grad_fp32,
                     bf16_moments=bf16_moments, ema=ema, recompute_norms=recompute_norms,
                     recompute_mla_up=recompute_mla_up, fp8_activations=fp8_activations, mtp=mtp,
                     fp8_dispatch=fp8_dispatch, ep_node_limit=ep_node_limit, comm_sm_share=comm_sm_share)
    require_number("--reserve-gb", reserve_gb, minimum=0)
    from ..econ.training_goodput import goodput_inputs
    from ..econ.training_memory import require_fit

    prof, eff = training_fidelity(None if mode is None else mode.value, profile, s, efficiency)
    st = train_step(m, s, plan, seq_len=seq_len, global_batch_tokens=global_batch_tokens, efficiency=eff,
                    dp_overlap=dp_overlap, precision=precision, reserve=reserve_gb * 1e9, profile=prof,
                    kernel_share=kernel_share)
    gp = goodput_inputs(gpus=plan.gpus, checkpoint_s=checkpoint_s, restart_s=restart_s,
                        mtbf_gpu_hours=mtbf_gpu_hours, checkpoint_interval_s=checkpoint_interval_s)
    # a plan that cannot run is an error, not numbers with a warning; a published layout is shown (it did run)
    if run is None or run[2]:  # a published layout is shown with fits false (it did run)
        require_fit(st.memory, model_name=m.name, plan_label=plan.label(), system_name=s.name)
    power = _power_basis(s, rate)
    d = train_dict(st, m, s.name, tokens=tokens, price_per_gpu_hour=price_per_gpu_hour, dp_overlap=dp_overlap,
                   goodput=gp, rate=rate, power=power)
    if run is not None:
        d["published"] = published_dict(run[0], run[1], d)
    if plot:
        plot_train(st, m, s.name, plot)
    if as_json:
        _emit_json(d)
        return
    parts = ", ".join(f"{k} {fmt_seconds(v)}" for k, v in d["time_breakdown_s"].items() if v > 0)
    mem = ", ".join(f"{k} {fmt_bytes(v)}" for k, v in d["memory_breakdown_bytes"].items())
    rows = [("job", f"{m.name} on {st.gpus} GPUs of {s.name}, {plan.label()}"),
            ("batch", f"{global_batch_tokens:,.0f} tokens/step = {st.microbatches} micro-batches × dp {plan.dp}"),
            ("step", f"{fmt_seconds(st.step_s)} ({parts})"),
            ("MFU / HFU", f"{st.mfu:.1%} / {st.hfu:.1%} " + (
                f"at kernel efficiencies of {st.kernels.source}: GEMM {st.kernels.layer_gemm:.2f}, attention "
                f"{st.kernels.attention:.2f}" if prof is not None else f"at efficiency {eff:g}"
                + (" (Megatron-LM A100 fit)" if efficiency is None and mode is None else ""))),
            ("TFLOP/s per GPU", f"{st.tflops_per_gpu:,.0f} model, {st.hardware_tflops_per_gpu:,.0f} hardware"),
            *([("sustained share", f"{st.kernels.sustained_share:g} of the profile's GEMM/attention rates "
                                   f"({st.kernels.sustained_source}; --kernel-share overrides)")]
              if prof is not None else []),
            ("bubble", f"{st.bubble_fraction:.1%} of the step"),
            ("tokens/s", f"{st.tokens_per_s:,.0f}; {mw_text(d['tokens_per_s_per_mw'], power)}"),
            ("memory per GPU", f"{fmt_bytes(st.memory.total)} of {fmt_bytes(st.memory.hbm)} on pipeline rank "
                               f"{st.memory.rank}, the fullest ({mem})"),
            ("memory per rank", "  ".join(f"{r.rank}: {r.total / 1e9:.1f}" for r in st.memory.ranks)
             + " GB (weights, gradients, optimizer, activations per rank: --json memory_per_rank_bytes)"),
            ("collectives on", ", ".join(f"{k} {v}" for k, v in st.tiers.items() if v != "none") or "-")]
    if tokens is not None:
        rows.append(("to train", f"{d['train_days']:,.1f} days, {d['gpu_hours']:,.0f} GPU-hours"
                                 + (f", ${d['usd']:,.0f}" if "usd" in d else "")
                                 + (f" at goodput {gp.goodput:.1%} (job MTBF {gp.job_mtbf_s / 3600:.2f} h, checkpoint "
                                    f"every {gp.checkpoint_interval_s / 60:.0f} min)" if gp is not None else "")))
    if rate is not None:
        rows.append(("TCO", tco_line(rate)))
    if run is not None:
        rows.append(("published", published_line(d["published"])))
        if not st.memory.fits:  # a published run did run: shown, with what this memory model says
            rows.append(("fits", f"NO by this memory model: {fmt_bytes(st.memory.total)} on pipeline rank "
                                 f"{st.memory.rank} of {fmt_bytes(st.memory.hbm)}; the published run did run, so "
                                 "the gap is what the model does not capture (docs/training.md)"))
    console = _console()
    console.print(_kv_table("llmecon train", rows))
    for note in d["assumptions"]:
        console.print(f"[dim]assumption: {note}[/dim]")
    if plot:
        console.print(f"figure written to {plot}")


@catalog_app.command("training-runs")
def catalog_training_runs(as_json: JsonOpt = False) -> None:
    """Published training runs that `llmecon train --preset NAME` runs beside their published figure."""
    from ..catalog.training_runs import training_runs

    rows = [{"name": r.name, "description": r.description, "metric": r.metric, "published": r.value,
             "source": r.source, "status": r.status, "notes": r.notes, "options": dict(r.options)}
            for r in training_runs().values()]
    if as_json:
        _emit_json({"training_runs": rows})
        return
    from rich.table import Table

    table = Table("name", "run", "published", "source")
    for r in rows:
        unit = "TFLOP/s/GPU" if r["metric"] == "tflops_per_gpu" else "GPU-hours"
        table.add_row(r["name"], r["description"], f"{r['published']:,.0f} {unit}",
                      f"{r['source']} ({r['status']})")
    _console().print(table)


@app.command("overtrain")
def overtrain_cmd(
    active_params: Annotated[float, typer.Option("--active-params", help="Active parameters N_a.")] = 100e9,
    inference_tokens_per_s: Annotated[float, typer.Option("--inference-tokens-per-s",
                                                          help="Tokens served per "
                                                               "second, all users.")] = 50e6,
    deployment_days: Annotated[float, typer.Option("--deployment-days", help="How long the model serves.")] = 60.0,
    inference_efficiency: Annotated[float, typer.Option("--inference-efficiency", help="Inference hardware "
                                                                                       "utilisation relative to "
                                                                                       "training (η_inf).")] = 1 / 3,
    rl_tokens: Annotated[Optional[float], typer.Option("--rl-tokens", help="RL tokens (default: the equal "
                                                                           "split's).")] = None,
    rl_flops_per_param_token: Annotated[float, typer.Option("--rl-flops-per-param-token", help="r in [2, 6]: "
                                                                                               "FLOPs per parameter "
                                                                                               "per RL token.")] = 3.0,
    rl_efficiency: Annotated[float, typer.Option("--rl-efficiency", help="RL utilisation relative to "
                                                                         "training (η_RL).")] = 1 / 3,
    tokens_per_param: Annotated[float, typer.Option("--tokens-per-param", help="Chinchilla rule.")] = 20.0,
    plot: PlotOpt = None, as_json: JsonOpt = False,
) -> None:
    """How far past Chinchilla to pretrain: the equal three-way split of lifetime compute (pretraining,
    RL, inference; SPEC F22) and the true optimum at the same loss under the Chinchilla law."""
    from ..report.training import overtrain_dict, plot_overtrain
    from ..econ.training import (CHINCHILLA, chinchilla_tokens, inference_tokens, lifetime_cost, lifetime_optimum,
        pretrain_tokens_matching_inference)
    from ..units import fmt_count

    from ..errors import require_number

    if plot:
        _check_plot_path(plot)
    # checked here, in the user's terms: the closed forms name their own parameters (params, seconds)
    for name, value in (("active_params", active_params), ("inference_tokens_per_s", inference_tokens_per_s),
                        ("deployment_days", deployment_days), ("inference_efficiency", inference_efficiency),
                        ("rl_flops_per_param_token", rl_flops_per_param_token), ("rl_efficiency", rl_efficiency),
                        ("tokens_per_param", tokens_per_param)) + ((("rl_tokens", rl_tokens),) if rl_tokens is not None
                                                                    else ()):
        require_number(name, value, minimum=0, exclusive=True)
    d_inf = float(inference_tokens(tokens_per_s=inference_tokens_per_s, seconds=deployment_days * 86400.0))
    d_pre = float(pretrain_tokens_matching_inference(inference_tokens=d_inf, inference_efficiency=inference_efficiency))
    d_rl = 6.0 * rl_efficiency * d_pre / rl_flops_per_param_token if rl_tokens is None else rl_tokens
    kw = dict(inference_tokens=d_inf, inference_efficiency=inference_efficiency, rl_tokens=d_rl,
              rl_flops_per_param_token=rl_flops_per_param_token, rl_efficiency=rl_efficiency)
    thirds = lifetime_cost(params=active_params, pretrain_tokens=d_pre, **kw)
    best, curve = lifetime_optimum(target_loss=float(thirds.loss), **kw)
    chin = float(chinchilla_tokens(params=active_params, tokens_per_param=tokens_per_param))
    inputs = {"active_params": active_params, "inference_tokens_per_s": inference_tokens_per_s,
              "deployment_days": deployment_days, "inference_efficiency": inference_efficiency,
              "rl_flops_per_param_token": rl_flops_per_param_token, "rl_efficiency": rl_efficiency,
              "tokens_per_param": tokens_per_param}
    d = overtrain_dict(params=active_params, inference_tokens=d_inf, pretrain_tokens=d_pre, chinchilla_tokens=chin,
                       rl_tokens=d_rl, thirds=thirds, optimum=best, law=CHINCHILLA, inputs=inputs)
    if plot:
        plot_overtrain(curve, thirds, best, plot)
    if as_json:
        _emit_json(d)
        return
    o = d["optimum_at_same_loss"]
    sh = o["shares"]
    rows = [("inference tokens", f"{fmt_count(d_inf)} ({fmt_count(inference_tokens_per_s)} tok/s × "
                                 f"{deployment_days:g} days)"),
            ("pretraining tokens", f"{fmt_count(d_pre)}: costs as much as inference (D_inf / (3·η_inf))"),
            ("Chinchilla tokens", f"{fmt_count(chin)} ({tokens_per_param:g} per parameter)"),
            ("over-training", f"{d['overtrain_factor']:,.1f}× Chinchilla"),
            ("RL tokens", f"{fmt_count(d_rl)}" + (" (equal split)" if rl_tokens is None else "")),
            ("loss reached", f"{float(thirds.loss):.4f} (Chinchilla law; RL and inference do not change it)"),
            ("optimum, same loss", f"N = {fmt_count(o['params'])}, D = {fmt_count(o['pretrain_tokens'])} "
                                   f"({o['overtrain_factor']:,.0f}× Chinchilla), split {sh['pretrain']:.0%} / "
                                   f"{sh['rl']:.0%} / {sh['inference']:.0%}, saves {o['saving_vs_equal_split']:.1%}")]
    console = _console()
    console.print(_kv_table("llmecon overtrain", rows))
    console.print("[dim]costs are training-FLOP equivalents (RL and inference FLOPs / their efficiency); an equal "
                  "split is optimal only for equal exponents (SPEC F22)[/dim]")
    if plot:
        console.print(f"figure written to {plot}")
