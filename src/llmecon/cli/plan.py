"""CLI command ``plan``: the cheapest (or fastest) deployment of a model over systems under TPOT and
TTFT targets, and the frontier (SPEC D). Thin: parse -> ``commands.plan`` -> report_plan."""

from __future__ import annotations

import os
from typing import Annotated, Optional

import typer

from ..commands.plan import PlanRequest
from .options import JsonOpt, _check_plot_path, _console, _emit_json, _kv_table, app, takes

PIPE_WIDTH = 120  # text width when stdout is not a terminal and COLUMNS is unset


@app.command("plan")
@takes(PlanRequest, tpot_s="50ms", ttft_s="2s")
def plan_cmd(
    req: PlanRequest,
    plot: Annotated[Optional[str], typer.Option("--plot", help="Write the decode frontier figure "
                                                               "(PNG/SVG/PDF).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Plan a deployment: search systems x parallelism plans x batch under TPOT/TTFT targets and HBM, and
    show the best decode and prefill plans, why, and the throughput frontier. With --spec-tokens K the
    decode search also tries speculative decoding with k = 1..K and reports the k chosen. With --frontier,
    compare systems instead: each one's decode frontier and its tokens/s per chip and $/Mtok at
    --interactivity tokens/s per user."""
    from ..commands.plan import plan, prepare

    if plot:
        _check_plot_path(plot)
    p = prepare(req)
    console = None if as_json else _console()
    if console is not None and not console.is_terminal and "COLUMNS" not in os.environ:
        console.width = max(console.width, PIPE_WIDTH)  # a pipe or file does not wrap: keep table rows whole
    if console is not None and console.is_terminal:
        with console.status(f"searching plans of {p.model.name} on {', '.join(s.name for s in p.systems)}..."):
            r = plan(req, prepared=p)
    else:
        r = plan(req, prepared=p)
    if plot:
        from ..report.frontier import plot_frontiers
        from ..report.plan import plot_frontier

        plot_frontiers(r.frontier, plot) if req.frontier else plot_frontier(r.result, plot)
    if as_json:
        _emit_json(r.to_dict(cache_hit=req.cache_hit is not None,
                             interactivity_source="--interactivity" if r.interactivity_given else "1/tpot"))
    elif req.frontier:
        _print_frontier(req, r, console, plot)
    else:
        _print_plan(req, r, console, plot)


def _print_plan(req, p, console, plot) -> None:
    """``plan``'s tables: the best plans, each phase's frontier, the worker ratio, the blended price."""
    from ..report.plan import best_rows, floor_rows, frontier_rows, headline, workers_rows

    r, targets, powers, rates, workers, hit = p.result, p.targets, p.powers, p.rates, p.workers, p.hit
    hbm = {s.name: s.accelerator.hbm_bytes for s in p.systems}
    top, cache_hit = req.top, req.cache_hit
    from rich import box
    from rich.table import Table

    console.print(f"[bold]llmecon plan[/bold] ({r.fidelity}): {headline(r)}")
    for search, target in ((r.decode, targets.tpot_s), (r.prefill, targets.ttft_s)):
        console.print()
        console.print(_kv_table(f"{search.phase}: best plan", best_rows(
            search, hbm_bytes=hbm[search.best.system], target_s=target,
            spec=bool(r.speculation) and search.phase == "decode", power=powers[search.best.system],
            rate=rates.get(search.best.system)) + floor_rows(p.floors[search.phase], search.best)))
        priced = any(v is not None for v in r.prices.values())
        spec = bool(r.speculation) and search.phase == "decode"
        rows = frontier_rows(search, 10 if top is None else top, priced=priced, spec=spec)
        table = Table(title=f"{search.phase} frontier: {len(rows)} of {len(search.frontier)} non-dominated points, "
                            "spread from fastest per user to most per chip", title_justify="left",
                      box=box.SIMPLE_HEAD, pad_edge=False)
        for header in ("system", "plan", "chips", "batch", "step", "tok/s/chip",
                       "tok/s/user" if search.phase == "decode" else "prompt tok/s", *(("$/Mtok",) if priced else ()),
                       "bound", *(("k",) if spec else ())):
            table.add_column(header, justify="left" if header in ("system", "plan", "bound") else "right")
        for row in rows:
            table.add_row(*row)
        console.print(table)
    if workers is not None:
        console.print()
        console.print(_kv_table("disaggregated workers: prefill:decode ratio for this workload", workers_rows(workers)))
    console.print()
    blended = r.usd_per_mtok_blended
    if blended is not None:
        console.print(f"[bold cyan]blended[/bold cyan]  ${blended:.3g} per M tokens of a request "
                      f"({targets.prompt_tokens:,.0f} in + {targets.output_tokens:,.0f} out, prefill and decode "
                      "units together)")
    else:
        console.print("[bold cyan]blended[/bold cyan]  - (give --price-per-chip-hour or --tco for $ per M tokens)")
    if cache_hit is not None and hit is None:
        console.print("[bold cyan]cache hits[/bold cyan]  - (needs --price-per-chip-hour or --tco and a prefill plan "
                      "meeting --ttft)")
    if hit is not None:
        console.print(f"[bold cyan]cache hits[/bold cyan]  input ${hit['usd_per_mtok_input_blended']:.3g} per M "
                      f"tokens at {cache_hit:.0%} hits of a {hit['cached_prefix_tokens']:,.0f}-token prefix (miss "
                      f"${hit['usd_per_mtok_input']:.3g}, hit ${hit['usd_per_mtok_input_hit']:.3g})"
                      + ("" if hit["usd_per_mtok_request_blended"] is None
                         else f"; request ${hit['usd_per_mtok_request_blended']:.3g} per M tokens"))
    console.print("[dim]assumptions: disaggregated prefill/decode; TTFT = one prefill step (+ pipeline fill), "
                  "no queueing (the worker ratio adds the KV transfer); "
                  + ("ideal roofline (a lower bound on time)" if r.fidelity == "ideal" else
                     f"{r.fidelity} (achieved efficiencies and overheads)")
                  + "; chips billed per plan[/dim]")
    if plot:
        console.print(f"figure written to {plot}", soft_wrap=True, markup=False, highlight=False)


def _spread(rows: list, top: int | None) -> list:
    """``top`` of ``rows`` spread evenly along them (first and last kept); all when ``top`` is None or larger."""
    if top is None or len(rows) <= top:
        return rows
    if top == 1:
        return rows[:1]
    picks = sorted({round(i * (len(rows) - 1) / (top - 1)) for i in range(top)})
    return [rows[i] for i in picks]


def _print_frontier(req, p, console, plot) -> None:
    """``plan --frontier``: every system's frontier (whole requests or decode, ``--view``) as a table (``--top``
    rows spread along each when given) and its figures at the interactivity (``report.frontier``)."""
    from rich import box
    from rich.table import Table

    from ..report.frontier import at_line, speculation_line, system_rows
    from ..report.tco import mw_text, tco_line

    f, m, targets, options, powers, rates, top = p.frontier, p.model, p.targets, p.options, p.powers, p.rates, req.top
    interactivity, names = p.interactivity, [s.name for s in p.systems]
    source = "--interactivity" if p.interactivity_given else "1/tpot"
    priced = any(v is not None for v in f.prices.values())
    spec = bool(f.speculation)
    what = ("decode steps only (prefill not paid)" if f.view == "decode" else
            f"whole requests of {targets.prompt_tokens:,.0f}/{targets.output_tokens:,.0f} tokens ({f.view}"
            + ("" if f.view == "disaggregated" else f", token budget {f.token_budget:,.0f}") + ")")
    console.print(f"[bold]llmecon plan --frontier[/bold] ({f.fidelity}): {m.name} on {', '.join(names)}, {what}; "
                  f"decode context {targets.context:,.0f} tokens per sequence; layouts "
                  f"{'the engine runs' if options.layouts == 'engine' else 'any'}; every memory-fitting plan and "
                  "batch, no TPOT target" + ("" if f.view in ("decode", "aggregated") else
                                             f"; prefill workers meet TTFT {targets.ttft_s:g} s"))
    for name in names:
        every = system_rows(f.frontiers[name], priced=priced, spec=spec)
        rows = _spread(every, top)
        shown = "" if len(rows) == len(every) else f", {len(rows)} shown (--top)"
        table = Table(title=f"{name}: {len(every)} frontier points{shown}, fastest per user first",
                      title_justify="left",
                      box=box.SIMPLE_HEAD, pad_edge=False)
        for header in ("plan", "serving", "chips", "batch", "tok/s/user", "tok/s/chip",
                       *(("$/Mtok",) if priced else ()),
                       "bound", *(("k",) if spec else ())):
            table.add_column(header, justify="left" if header in ("plan", "serving", "bound") else "right")
        for row in rows:
            table.add_row(*row)
        console.print()
        console.print(table)
    console.print()
    how = "--interactivity" if source == "--interactivity" else "1 / --tpot; --interactivity sets it"
    console.print(f"[bold cyan]at {interactivity:,.4g} tokens/s per user[/bold cyan] ({how})")
    for name in names:
        per_chip, power = f.at[name].tokens_per_s_per_chip, powers[name]
        mw = "" if per_chip is None else f"; {mw_text(power.tokens_per_s_per_mw(per_chip), power)}"
        console.print("  " + at_line(f.at[name]) + mw, soft_wrap=True, markup=False, highlight=False)
    for name in names:  # speculation searched: both frontiers, labelled (issue 37)
        if (line := speculation_line(f, name)) is not None:
            console.print("  " + line, soft_wrap=True, markup=False, highlight=False)
    for name, rate in (rates or {}).items():
        console.print(f"  {name} TCO: {tco_line(rate)}", soft_wrap=True, markup=False, highlight=False)
    if not priced:
        console.print("[dim]give --price-per-chip-hour or --tco for $/Mtok[/dim]")
    if plot:
        console.print(f"figure written to {plot}", soft_wrap=True, markup=False, highlight=False)
