"""Text view of ``moe``: the typed result in, the rich renderables out, in print order (sparsity, expert
parallelism, pipelines, the scaling law's view); the CLI prints them. The JSON view is in report/moe.py."""

from __future__ import annotations

from .tables import kv_table


def moe_view(r, req, plot: str | None) -> list:
    """``llmecon moe``: its four sections, then the figure's path."""
    return [*_sparsity(r.summary), *_ep(r.summary, r.system, default_batch=req.batch_per_chip is None),
            *_pipeline(r.summary, r.system, r.model), *_law(r.summary, req.law, r.hundred_expert_ratio),
            *((f"figure written to {plot}",) if plot else ())]


def _sparsity(r) -> list:
    from ..units import fmt_params

    view: list = []
    touched = ", ".join(f"{b:,}: {v:.1%}" for b, v in r.touched.items())
    view.append(kv_table(f"llmecon moe: {r.model} on {r.system} ({r.fidelity})", [
        ("experts", f"{r.experts} routed, {r.active_experts} active per token, {r.shared_experts} shared"),
        ("parameters", f"{fmt_params(r.total_params)} total, {fmt_params(r.active_params)} active; "
                       f"S = total/active = {r.sparsity:.2f}"),
        ("routed experts", f"{r.expert_weight_fraction:.1%} of the weight bytes"),
        ("experts touched", f"by a batch of tokens: {touched}"),
        (f"busiest ep{r.pp_ep} group", "experts read per MoE layer, busiest / mean group, by a batch of tokens: "
         + ", ".join(f"{b:,}: {r.busiest_experts[b]:.3g} / {r.mean_experts[b]:.3g}" for b in r.busiest_experts)),
        ("balance batch", f"{r.balance_batch:,.0f} sequences (SPEC A3: weights amortised, KV ignored)")]))
    return view


def _ep(r, system, *, default_batch: bool) -> list:
    from rich.table import Table

    from .moe import tier_label
    from ..units import fmt_bytes, fmt_seconds

    view: list = []
    how = " (default: B*/8, capped so KV fills at most half of HBM)" if default_batch else ""
    view.append("")
    table = Table("ep", "chips", "domains", "all-to-all tier", "fits", "weights/chip", "experts read", "all-to-all",
                  "step", "bound", "chip-µs/token",
                  title=f"Expert parallelism at B = {r.batch_per_chip:,.0f} per chip{how}, context "
                        f"{r.context:,.0f}, dispatch {r.dispatch_dtype}, imbalance {r.expert_imbalance:g}",
                  title_justify="left")
    for row in r.ep_rows:
        table.add_row(row.label[2:], str(row.chips), str(row.domains), tier_label(row.tier),
                      "yes" if row.fits else "no", fmt_bytes(row.weights_per_chip_bytes),
                      f"{row.busiest_experts:.3g} / {row.mean_experts:.3g}",
                      fmt_seconds(row.all_to_all_s) if row.all_to_all_s else "-", fmt_seconds(row.step_s),
                      row.bound, f"{row.chip_s_per_token * 1e6:,.1f}", style=None if row.fits else "dim")
    view.append(table)
    domain = "" if f"{system.chips}-chip" in r.ep_limit_note else f" (scale-up domain: {system.chips} chips)"
    view.append("experts read: per MoE layer and step, by the busiest expert group (which every layer waits "
                "for) / the mean group; ep N+r: r redundant expert copies fill the groups")
    view.append(f"[bold cyan]EP verdict[/bold cyan]  {r.ep_limit_note}{domain}")
    if r.ep_best is not None:
        best = next(row for row in r.ep_rows if row.ep == r.ep_best)
        view.append(f"[bold cyan]best EP[/bold cyan]  {best.label}: {best.chip_s_per_token * 1e6:,.1f} chip-µs "
                    f"per token, {tier_label(best.tier)}, {best.bound}-bound")
    return view


def _pipeline(r, system, model) -> list:
    from rich.table import Table

    from ..units import fmt_bytes, fmt_rate, fmt_seconds

    view: list = []
    view.append("")
    if r.scale_out_ratio is None:
        missing = " and ".join(n for n, link in (("scale-up", system.scale_up), ("scale-out", system.scale_out))
                               if link is None)
        rows = [("not applicable", f"{system.name} has no {missing} link, so there is no BW_up/BW_out ratio")]
    else:
        k = r.active_experts
        rows = [("BW_up / BW_out", f"{r.scale_out_ratio:.3g} per chip "
                                   f"({fmt_rate(system.scale_up.bandwidth_bytes_per_s)}"
                                   f" / {fmt_rate(system.scale_out.bandwidth_bytes_per_s)})")]
        for layers, value in r.stage_ratios.items():
            rows.append((f"{layers} layer{'s' if layers > 1 else ''}/stage",
                         f"2kL/ratio = {2 * k * layers}/{r.scale_out_ratio:.3g} = {value:.2f}: "
                         + ("viable" if value >= 1 else "not viable")))
        rows.append(("min layers/stage", f"{r.min_layers_per_stage} (viable when 2kL >= BW_up/BW_out, k = {k}; "
                                         "SPEC D17)"))
    view.append(kv_table("Pipeline across domains", rows))
    view.append("")
    table = Table("pp", "chips", "weights/chip", "KV/chip", "hop latency (P-1 hops)",
                  title=f"Pipeline for inference at ep = {r.pp_ep} ({model.n_layers} layers; P micro-batches of "
                        f"{r.batch_per_chip * r.pp_ep:,.0f} sequences in flight)", title_justify="left")
    for row in r.pp_rows:
        table.add_row(str(row.pp), str(row.chips), fmt_bytes(row.weights_per_chip_bytes),
                      fmt_bytes(row.kv_per_chip_bytes), fmt_seconds(row.hop_latency_s) if row.pp > 1 else "-")
    view.append(table)
    view.append("[dim]SPEC D18: weights per chip / P (whole layers per stage), KV per chip unchanged, token "
                "latency + P-1 hops[/dim]")
    return view


def _law(r, law_file: str | None, hundred: float) -> list:
    from ..units import fmt_params

    view: list = []
    label = r.law_label + (f" (from {law_file})" if law_file else "")
    view.append("")
    view.append(kv_table("Scaling-law view (routed scaling law, SPEC D14)", [
        ("law", label),
        ("effective size", f"{fmt_params(r.active_params)} active with {r.experts} experts ~ "
                         f"{fmt_params(r.effective_params)} dense ({r.effective_ratio:.2f}x)"),
        ("10x needs", f"{r.experts_for_10x:,.0f} experts"),
        ("reminder", f"\"100x total for 10x active\" is not supported: 100 experts give {hundred:.2f}x")]))
    return view
