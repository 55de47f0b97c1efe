"""Text views of ``analyze``, ``step``, ``batch``, ``model`` and the ``catalog`` listings of chips,
systems and models: the typed result (or its JSON view) in, the rich renderables out, in print order;
the CLI prints them. The JSON views are in report/analyze.py."""

from __future__ import annotations

from ..units import fmt_bytes, fmt_params, fmt_rate, fmt_seconds
from .tables import Line, kv_table


def analyze_view(r, report: str | None) -> list:
    """``llmecon analyze``: the headline table, which bound binds where, the model's assumptions."""
    from .analyze import analysis_title, bound_spans, floor_line, headline_lines

    dep, a, floor = r.deployment, r.analysis, r.floor
    spans = [f"{bound}-bound for batch {lo:,.0f}-{hi:,.0f}" for bound, lo, hi in bound_spans(a.economics.curve)]
    view: list = [kv_table(analysis_title(a), [*headline_lines(dep, a.economics, a.step, a.batch),
                                               *floor_line(floor, a.step, a.batch)]),
                  "[bold cyan]bound by batch[/bold cyan]  " + "; ".join(spans)]
    view += [f"[dim]assumption: {note}[/dim]" for note in dep.model.assumptions]
    if report is not None:
        view.append(Line(f"report written to {report}", soft_wrap=True))
    return view


def step_view(req, r, d: dict) -> list:
    """``llmecon step``: the step's times, traffic and memory, and speculation's rows."""
    from .speculation import speculation_rows

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
    return [kv_table("llmecon step", rows)]


def batch_view(req, r, d: dict, plot: str | None) -> list:
    """``llmecon batch``: the batching facts, then latency and cost against batch (16 rows at most)."""
    from rich.table import Table

    from .tables import fmt_tokens

    dep, e, context = r.deployment, r.economics, req.context
    view: list = [kv_table(f"llmecon batch: {dep.model.name} on {dep.system.name} ({dep.plan.label()})", [
        *([("plan", r.chosen_plan)] if r.chosen_plan else []),
        ("balance batch", f"{e.balance_batch:,.0f} (short context), {fmt_tokens(e.balance_batch_at_context)} at "
                          f"{fmt_tokens(context)} tokens"),
        ("latency floor", fmt_seconds(e.latency_floor_s)), ("HBM drain time", fmt_seconds(e.hbm_drain_s)),
        ("no-batching cost ratio", f"{e.no_batching_cost_ratio:,.1f}x (batch 1 vs best batch {e.best_batch:,.0f})"),
        ("max batch", f"{e.max_batch:,} at {fmt_tokens(context)} tokens"),
        *_spec_batch_rows(d["speculation"])])]
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
    return [*view, table, *((f"figure written to {plot}",) if plot else ())]


def _spec_batch_rows(d) -> list[tuple[str, str]]:
    if not d:
        return []
    acc = ", ".join(f"{a:g}" for a in d["acceptance"])
    stop = (f"stops paying at batch {d['breakeven_batch']:,.0f}" if d["breakeven_batch"] is not None
            else "pays at every batch scanned")
    return [("speculation", f"k={d['spec_tokens']} ({d['draft']}), acceptance {acc}: {d['tokens_per_step']:.3g} "
                            f"tokens per verify step; {stop}")]


def model_view(m, d: dict) -> list:
    """``llmecon model``: parameters per component, KV and state per token, attention and MoE shape."""
    from .analyze import attention_line

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
    view: list = [kv_table(f"llmecon model {m.name}", rows), *(f"[dim]assumption: {n}[/dim]" for n in m.assumptions)]
    if m.ignored_fields:
        view.append(f"[dim]config fields not read (harmless by category, or named by --ignore-field): "
                    f"{', '.join(m.ignored_fields)}[/dim]")
    return view


def accelerators_view(rows: list[dict]) -> list:
    """``llmecon catalog accelerators``: one row per chip."""
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
    return [table]


def systems_view(rows: list[dict]) -> list:
    """``llmecon catalog systems``: one row per system."""
    from rich.table import Table

    table = Table("name", "chip", "chips", "HBM total", "scale-up /dir", "scale-out /dir")
    for r in rows:
        table.add_row(r["name"], r["accelerator"], str(r["chips"]), fmt_bytes(r["hbm_bytes"]),
                      fmt_rate(r["scale_up"]["bandwidth_bytes_per_s"]) if r["scale_up"] else "-",
                      fmt_rate(r["scale_out"]["bandwidth_bytes_per_s"]) if r["scale_out"] else "-")
    return [table]


def models_view(rows: list[dict]) -> list:
    """``llmecon catalog models``: one row per catalogued model."""
    from rich.table import Table

    table = Table("name", "total", "active", "attention", "weights", "KV/token (bf16)")
    for r in rows:
        table.add_row(r["name"], fmt_params(r["total_params"]), fmt_params(r["active_params"]), r["attention"],
                      r["weight_dtype"], fmt_bytes(r["kv_bytes_per_token"]))
    return [table]
