"""CLI command ``simulate``: the serving simulator (SPEC E20). Thin: parse -> ``commands.simulate`` -> report."""

from __future__ import annotations

import sys
from typing import Annotated, Optional

import typer

from ..commands.simulate import SimulateRequest
from .options import JsonOpt, _check_plot_path, _console, _emit_json, _kv_table, _power_basis, app, takes

PROGRESS_MIN_REQUESTS = 50_000
# show a progress bar (stderr TTY only) for runs at least this large


@app.command("simulate")
@takes(SimulateRequest)
def simulate_cmd(
    req: SimulateRequest,
    plot: Annotated[Optional[str], typer.Option("--plot", help="Write latency CDFs and queue length over time "
                                                               "(PNG/SVG/PDF).")] = None,
    requests_out: Annotated[Optional[str], typer.Option("--requests-out", help="Write the per-request table (.csv, "
                                                                               "or .parquet with pyarrow).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Simulate serving traffic: continuous batching, train schedule, adaptive dispatch or
    prefill/decode disaggregation, with step times from the roofline of each actual batch.

    Without --tp/--ep/--pp the plan is the smallest that holds the weights in half of HBM.
    With --spec-tokens k each decode iteration is a verify step over k+1 tokens plus k draft passes
    (--draft: MTP or a draft model) and every running request advances by the expected accepted
    tokens E (docs/serving.md).
    """
    from ..commands.simulate import simulate
    from ..report.serving import check_requests_path, plot_simulation, write_requests

    # validate everything before running (nothing is written half-way)
    if plot:
        _check_plot_path(plot)
    if requests_out:
        check_requests_path(requests_out)
    r = simulate(req, run=_run)
    d = r.to_dict()
    if requests_out:
        write_requests(r.result, requests_out)
    if plot:
        dep = r.deployment
        plot_simulation(r.result, plot, title=f"{dep.model.name} on {dep.system.name}, {r.config.policy.name}")
    if as_json:
        _emit_json(d)
        return
    _print(d, plot, requests_out, r.rate, _power_basis(r.deployment.system, r.rate))


def _run(dep, wl, cfg):
    from ..serving import simulate

    if wl.n < PROGRESS_MIN_REQUESTS or not sys.stderr.isatty():
        return simulate(dep, wl, cfg)
    from rich.console import Console
    from rich.progress import Progress

    with Progress(console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task("simulating", total=1.0)
        return simulate(dep, wl, cfg, progress=lambda f: bar.update(task, completed=f))


def _print(d: dict, plot, requests_out, rate=None, power=None) -> None:
    from ..report.tco import mw_text, tco_line
    from ..units import fmt_seconds

    def s(x):
        return "-" if x is None else fmt_seconds(x)

    p = d["plan"]
    how = ("ideal roofline (a lower bound on time)" if d["mode"] == "ideal" else
           f"{d['fidelity']}: achieved efficiencies and overheads")
    rows = [("deployment", f"{d['model']} on {d['system']}, {p['label']}, {how}")]
    sp = d.get("speculation")
    if sp:
        acc = ",".join(f"{a:g}" for a in sp["acceptance"])
        rows.append(("speculation", f"k={sp['spec_tokens']} ({sp['draft']}), acceptance {acc} "
                                    f"({sp['acceptance_source']}): E = {sp['tokens_per_step']:.4g} tokens per verify "
                                    "iteration"))
    rows += [("workload", f"{d['workload']}, {d['arrived']:,} arrived in {d['run_s']:,.1f} s"),
             ("requests", f"{d['completed']:,} completed, {d['rejected']:,} rejected, {d['in_flight']:,} in flight"),
             ("TTFT", f"p50 {s(d['ttft_p50_s'])}, p99 {s(d['ttft_p99_s'])}"),
             ("TPOT", f"p50 {s(d['tpot_p50_s'])}, p99 {s(d['tpot_p99_s'])}"),
             ("ITL", f"p50 {s(d['itl_p50_s'])}, p99 {s(d['itl_p99_s'])}"),
             ("end to end", f"p50 {s(d['e2e_p50_s'])}, p99 {s(d['e2e_p99_s'])}"),
             ("throughput", f"{d['throughput_tokens_per_s']:,.0f} output tokens/s"),
             ("goodput", f"{d['goodput_requests_per_s']:,.2f} requests/s"
                         + ("" if d["slo_ttft_s"] or d["slo_tpot_s"] else " (no SLO given: all completed count)")),
             ("utilisation", f"{d['utilization']:.1%} of replica time in iterations"),
             ("preemptions", f"{d['preemptions']:,}"),
             ("$/Mtok (output)",
              f"${d['usd_per_mtok']:,.4f}" if d["usd_per_mtok"] is not None else d["usd_per_mtok_reason"]),
             *((("TCO", tco_line(rate)),) if rate is not None else ()),
             ("tokens/s per MW", mw_text(d["tokens_per_s_per_mw"], power)),
             ("Little's law", f"L = {d['littles_law']['L']:.4g}, lambda*W = {d['littles_law']['lambda_W']:.4g}")]
    rows += [("note", n) for n in d["notes"]]
    console = _console()
    console.print(_kv_table(f"llmecon simulate ({d['policy']})", rows))
    if len(d["classes"]) > 1:
        from rich.table import Table

        t = Table("class", "completed", "TTFT p50", "TPOT p50", "$/Mtok", "price", "margin")
        for c in d["classes"]:
            t.add_row(c["name"], f"{c['completed']:,}", s(c["ttft_p50_s"]), s(c["tpot_p50_s"]),
                      "-" if c["usd_per_mtok"] is None else f"${c['usd_per_mtok']:,.4f}",
                      "-" if c["price_usd_per_mtok"] is None else f"${c['price_usd_per_mtok']:,.2f}",
                      "-" if c["margin"] is None else f"{c['margin']:.0%}")
        console.print(t)
    for what, path in (("figure", plot), ("requests", requests_out)):
        if path:
            console.print(f"{what} written to {path}")
