"""Commands on one deployment: analyze (the main job), step, batch, model, and the catalogue
listings. Thin: parse -> library call -> report view."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from ..commands.deployment import AnalyzeRequest, BatchRequest, StepRequest
from ..commands.args import DeploymentArgs
from .options import JsonOpt, _check_plot_path, _console, _emit_json, _kv_table, app, catalog_app, option, takes


@app.command()
@takes(AnalyzeRequest)
def analyze(
    req: AnalyzeRequest, as_json: JsonOpt = False,
    report: Annotated[Optional[str], typer.Option("--report", help="Also write a self-contained HTML report "
                                                                   "(headline numbers, figures, assumptions).")] = None,
) -> None:
    """The main job: one screen with the headline numbers of a deployment and which bound binds where.

    Without --tp/--ep/--pp the plan is the smallest that holds the weights in half of HBM.
    """
    from ..commands.deployment import analyze as run
    from ..report.analyze import analysis_dict, analysis_title, floor_dict, floor_line, headline_lines

    report_path = None
    if report is not None:
        from ..report.html import check_html_path  # only with --report (html.entities: ~6 ms at start-up)

        report_path = check_html_path(report, "--report")
    r = run(req)
    dep, a, floor = r.deployment, r.analysis, r.floor
    if report_path is not None:
        from ..report.analyze_html import analyze_report
        from ..report.html import write_html

        write_html(report_path, analyze_report(dep, a.economics, a.step, a.batch))
    if as_json:
        _emit_json({**analysis_dict(a), "mode_requested": req.mode, "ideal_floor": floor_dict(floor, a.step)})
        return
    console = _console()
    console.print(_kv_table(analysis_title(a), [*headline_lines(dep, a.economics, a.step, a.batch),
                                                *floor_line(floor, a.step, a.batch)]))
    _print_bounds(console, a.economics)
    for note in dep.model.assumptions:
        console.print(f"[dim]assumption: {note}[/dim]")
    if report_path is not None:
        console.print(f"report written to {report}", soft_wrap=True, markup=False, highlight=False)


def _print_bounds(console, e) -> None:
    """Which bound binds where along the batch axis."""
    from ..report.analyze import bound_spans

    spans = [f"{bound}-bound for batch {lo:,.0f}-{hi:,.0f}" for bound, lo, hi in bound_spans(e.curve)]
    console.print("[bold cyan]bound by batch[/bold cyan]  " + "; ".join(spans))


@app.command()
@takes(StepRequest)
def step(req: StepRequest, as_json: JsonOpt = False) -> None:
    """Time of one decode or prefill step, and which of compute, memory or communication binds.

    Without --tp/--ep/--pp the plan is the smallest that holds the weights in half of HBM. With
    --spec-tokens k (decode): the verify step over k+1 tokens, the draft cost, TPOT per output token
    and the batch at which speculation stops paying.
    """
    from ..commands.deployment import step as run

    r = run(req)
    d = r.to_dict()
    if as_json:
        _emit_json(d)
        return
    _print_step(req, r, d)


def _print_step(req, r, d) -> None:
    from ..report.speculation import speculation_rows
    from ..units import fmt_bytes, fmt_seconds

    dep = r.deployment
    calibrated = dep.mode != "ideal"
    rows = [("deployment", f"{dep.model.name} on {dep.system.name}, {dep.plan.label()}, {dep.fidelity}"),
            *([("plan", r.chosen_plan)] if r.chosen_plan else []),
            ("step", f"{req.phase}, batch {req.batch:g}, context {req.context:g}"),
            ("compute", fmt_seconds(d["compute_s"])), ("memory", fmt_seconds(d["memory_s"])),
            ("communication", fmt_seconds(d["comm_s"]))]
    if calibrated:
        rows.append(("kernel floors + framework", fmt_seconds(d["overhead_s"])))
    rows += [("step time", f"{fmt_seconds(d['step_s'])} ({d['bound']}-bound); " + (
                "kernel classes in sequence, communication not overlapped" if calibrated
                else f"no overlap: {fmt_seconds(d['upper_s'])}")),
            *([("TTFT", f"{fmt_seconds(d['latency_s'])}: the step plus the pipeline fill of pp {dep.plan.pp} "
                        "((2pp-1)/pp of it), no queueing")] if d["latency_s"] != d["step_s"] else []),
            ("throughput", f"{d['tokens_per_s']:,.0f} tokens/s"),
            ("traffic", f"weights {fmt_bytes(d['weight_bytes'])}, KV {fmt_bytes(d['kv_bytes'])}, "
                        f"{d['flops']:.3g} FLOP (all chips)"),
            ("critical chip", f"reads {fmt_bytes(d['weight_bytes_per_chip'])} of weights per step" + (
                f"; its expert group computes {d['expert_load_factor']:.3g}x the mean group's token-expert pairs"
                if dep.plan.ep > 1 else "")),
            ("memory per chip", f"{fmt_bytes(d['memory_per_chip_bytes'])} of {fmt_bytes(d['hbm_per_chip_bytes'])}")]
    rows += speculation_rows(d["speculation"])
    _console().print(_kv_table("llmecon step", rows))


@app.command("batch")
@takes(BatchRequest)
def batch_cmd(
    req: BatchRequest,
    plot: Annotated[Optional[str], typer.Option("--plot", help="Write latency/cost-vs-batch figure (PNG/SVG/PDF).")]
    = None,
    as_json: JsonOpt = False,
) -> None:
    """Latency and cost per token against batch; balance batch, latency floor, drain time, and the
    cost of not batching.

    Without --tp/--ep/--pp the plan is the smallest that holds the weights in half of HBM. With
    --spec-tokens: TPOT and cost per output token with speculative decoding beside plain decoding's,
    and the batch at which speculation stops paying.
    """
    from ..commands.deployment import batch as run
    from ..report.analyze import plot_batch_curve

    if plot:
        _check_plot_path(plot)
    r = run(req)
    if plot:
        plot_batch_curve(r.economics.curve, r.deployment, plot, economics=r.economics)
    d = r.to_dict()
    if as_json:
        _emit_json(d)
        return
    _print_batch(req, r, d)
    if plot:
        _console().print(f"figure written to {plot}")


def _print_batch(req, r, d) -> None:
    from rich.table import Table

    from ..report.analyze import fmt_tokens
    from ..units import fmt_seconds

    dep, e, context = r.deployment, r.economics, req.context
    console = _console()
    console.print(_kv_table(f"llmecon batch: {dep.model.name} on {dep.system.name} ({dep.plan.label()})", [
        *([("plan", r.chosen_plan)] if r.chosen_plan else []),
        ("balance batch", f"{e.balance_batch:,.0f} (short context), {fmt_tokens(e.balance_batch_at_context)} at "
                          f"{fmt_tokens(context)} tokens"),
        ("latency floor", fmt_seconds(e.latency_floor_s)), ("HBM drain time", fmt_seconds(e.hbm_drain_s)),
        ("no-batching cost ratio", f"{e.no_batching_cost_ratio:,.1f}x (batch 1 vs best batch {e.best_batch:,.0f})"),
        ("max batch", f"{e.max_batch:,} at {fmt_tokens(context)} tokens"),
        *_spec_batch_rows(d["speculation"])]))
    spec = d["speculation"] is not None
    table = Table("batch", "step", "bound", "tokens/s", "chip-s per Mtok",
                  *(("spec TPOT", "spec tokens/s", "spec chip-s per Mtok") if spec else ()))
    rows = d["curve"]
    stride = max(1, len(rows) // 16)
    for row in rows[::stride] + ([rows[-1]] if (len(rows) - 1) % stride else []):
        table.add_row(f"{row['batch']:,.0f}", fmt_seconds(row["step_s"]), row["bound"], f"{row['tokens_per_s']:,.0f}",
                      f"{row['chip_s_per_token'] * 1e6:,.1f}",
                      *((fmt_seconds(row["spec_tpot_s"]), f"{row['spec_tokens_per_s']:,.0f}",
                         f"{row['spec_chip_s_per_token'] * 1e6:,.1f}") if spec else ()))
    console.print(table)


def _spec_batch_rows(d) -> list[tuple[str, str]]:
    if not d:
        return []
    acc = ", ".join(f"{a:g}" for a in d["acceptance"])
    stop = (f"stops paying at batch {d['breakeven_batch']:,.0f}" if d["breakeven_batch"] is not None
            else "pays at every batch scanned")
    return [("speculation", f"k={d['spec_tokens']} ({d['draft']}), acceptance {acc}: {d['tokens_per_step']:.3g} "
                            f"tokens per verify step; {stop}")]


KvDtypeOpt = option(DeploymentArgs, "kv_dtype")


@app.command("model")
def model_cmd(
    name: Annotated[str, typer.Argument(help="Catalogue name or path to a config.json.")],
    kv_dtype: KvDtypeOpt = None, as_json: JsonOpt = False,
) -> None:
    """Derived facts of a model: parameters per component, KV bytes per token, attention and MoE shape."""
    from ..catalog.models import get_model
    from ..dtypes import get_dtype
    from ..report.analyze import attention_line, model_dict
    from ..units import fmt_bytes, fmt_params

    m = get_model(name)
    if kv_dtype is not None:
        get_dtype(kv_dtype)
    d = model_dict(m, kv_dtype)
    if as_json:
        _emit_json(d)
        return
    rows = [("parameters", f"{fmt_params(d['total_params'])} total, {fmt_params(d['active_params'])} active "
                           f"(sparsity {d['sparsity']:.2f})"),
            ("layers", f"{d['n_layers']} x d_model {d['d_model']}, vocab {d['vocab_size']:,}"),
            ("attention", attention_line(d)),
            ("KV per token", f"{fmt_bytes(d['kv_bytes_per_token'])} at {d['kv_dtype']} (attention layers)"),
            ("state per sequence",
             f"{fmt_bytes(d['state_bytes_per_sequence'])} (linear/SSM layers, KV compressors; constant)"),
            ("layer kinds", ", ".join(f"{k} {v}" for k, v in d["layers"].items() if v)),
            ("weights", f"{fmt_bytes(d['weight_bytes'])} at {d['weight_dtype']}"
                        + (f" (experts {d['expert_weight_dtype']})" if d['expert_weight_dtype'] != d['weight_dtype']
                           else ""))]
    if "windowed_attention" in d:
        w = d["windowed_attention"]
        rows.append(("windowed attention", f"{w['kind']}: {w['n_heads']} heads, {w['n_kv_heads']} KV heads, head dim "
                                           f"{w['head_dim']}"))
    if "linear_mixer" in d:
        lm = d["linear_mixer"]
        rows.append(("linear mixer", f"{lm['kind']} in {lm['layers']} layers: {lm['n_heads']} heads x "
                                     f"{lm['key_dim']}x{lm['value_dim']} state at {lm['state_dtype']} "
                                     f"({fmt_bytes(lm['state_bytes_per_layer'])}/layer)"))
    if d["kv_bytes_per_sequence_at_max_context"]:
        rows.append(("KV+state at max context", f"{fmt_bytes(d['kv_bytes_per_sequence_at_max_context'])} per "
                                                f"sequence ({d['max_context']:,} tokens)"))
    if m.is_moe:
        mo = d["moe"]
        rows.append(("MoE", f"{mo['routed_experts']} routed (top {mo['experts_per_token']}) + {mo['shared_experts']} "
                            f"shared, in {mo['moe_layers']} of {d['n_layers']} layers"
                            + (f", latent {mo['latent_dim']}" if mo["latent_dim"] else "")))
    if d["mtp_layers"]:
        rows.append(("MTP modules", f"{d['mtp_layers']} ({fmt_params(d['mtp_params'])}, not in the totals)"))
    if d["encoder_params"]:
        rows.append(("vision encoder", f"~{fmt_params(d['encoder_params'])} (estimated, not in the totals)"))
    for comp, count in d["params_by_component"].items():
        if count and comp not in ("total", "active"):
            rows.append((f"  {comp}", fmt_params(count)))
    console = _console()
    console.print(_kv_table(f"llmecon model {m.name}", rows))
    for note in m.assumptions:
        console.print(f"[dim]assumption: {note}[/dim]")
    if m.ignored_fields:
        console.print(f"[dim]config fields not read (harmless by category, or named by --ignore-field): "
                      f"{', '.join(m.ignored_fields)}[/dim]")


@catalog_app.command("accelerators")
def catalog_accelerators(as_json: JsonOpt = False) -> None:
    """Chips: dense peak FLOP/s per dtype, HBM capacity and bandwidth, sources."""
    from ..catalog.hardware import accelerators
    from ..report.analyze import accelerator_row
    from ..units import fmt_bytes, fmt_rate, fmt_seconds

    rows = [accelerator_row(a) for a in accelerators().values()]
    if as_json:
        _emit_json({"accelerators": rows})
        return
    from rich.table import Table

    table = Table("name", "bf16", "fp8", "fp4", "HBM", "HBM BW", "FLOP/B", "drain", "status")
    for r in rows:
        peaks = r["peak_flops_per_s"]
        table.add_row(r["name"], *(fmt_rate(peaks[k], "FLOP/s") if k in peaks else
                                   "unpublished" if k in r["unpublished_peaks"] else "-"
                                   for k in ("bf16", "fp8", "fp4")),
                      fmt_bytes(r["hbm_bytes"]), fmt_rate(r["hbm_bandwidth_bytes_per_s"]),
                      f"{r['flops_per_byte_bf16']:.0f}" if r["flops_per_byte_bf16"] else "-",
                      fmt_seconds(r["hbm_drain_s"]), r["status"])
    _console().print(table)


@catalog_app.command("systems")
def catalog_systems(as_json: JsonOpt = False) -> None:
    """Systems: scale-up domain (chips, per-direction link bandwidth) and scale-out network."""
    from ..catalog.hardware import systems
    from ..report.analyze import system_row
    from ..units import fmt_bytes, fmt_rate

    rows = [system_row(s) for s in systems().values()]
    if as_json:
        _emit_json({"systems": rows})
        return
    from rich.table import Table

    table = Table("name", "chip", "chips", "HBM total", "scale-up /dir", "scale-out /dir")
    for r in rows:
        table.add_row(r["name"], r["accelerator"], str(r["chips"]), fmt_bytes(r["hbm_bytes"]),
                      fmt_rate(r["scale_up"]["bandwidth_bytes_per_s"]) if r["scale_up"] else "-",
                      fmt_rate(r["scale_out"]["bandwidth_bytes_per_s"]) if r["scale_out"] else "-")
    _console().print(table)


@catalog_app.command("models")
def catalog_models(as_json: JsonOpt = False) -> None:
    """Models shipped with llmecon (any config.json path works too)."""
    from ..catalog.models import get_model, model_names
    from ..units import fmt_bytes, fmt_params

    rows = []
    for name in model_names():
        m = get_model(name)
        rows.append({"name": name, "total_params": m.params.total, "active_params": m.params.active,
                     "attention": m.attention_label, "is_moe": m.is_moe, "weight_dtype": m.weight_dtype,
                     "kv_bytes_per_token": m.kv_bytes_per_token()})
    if as_json:
        _emit_json({"models": rows})
        return
    from rich.table import Table

    table = Table("name", "total", "active", "attention", "weights", "KV/token (bf16)")
    for r in rows:
        table.add_row(r["name"], fmt_params(r["total_params"]), fmt_params(r["active_params"]), r["attention"],
                      r["weight_dtype"], fmt_bytes(r["kv_bytes_per_token"]))
    _console().print(table)
