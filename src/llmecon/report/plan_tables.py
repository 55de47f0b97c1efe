"""Text views of ``plan`` and ``plan --frontier``: the typed result in, the rich renderables out, in print
order; the CLI prints them. The JSON view and the rows are in report/plan.py and report/frontier.py."""

from __future__ import annotations

from .tables import Line, kv_table


def plan_view(req, p, plot) -> list:
    """``plan``'s tables: the best plans, each phase's frontier, the worker ratio, the blended price."""
    from .plan import best_rows, floor_rows, frontier_rows, headline, workers_rows

    view: list = []
    r, targets, powers, rates, workers, hit = p.result, p.targets, p.powers, p.rates, p.workers, p.hit
    hbm = {s.name: s.accelerator.hbm_bytes for s in p.systems}
    top, cache_hit = req.top, req.cache_hit
    from rich import box
    from rich.table import Table

    view.append(f"[bold]llmecon plan[/bold] ({r.fidelity}): {headline(r)}")
    for search, target in ((r.decode, targets.tpot_s), (r.prefill, targets.ttft_s)):
        view.append("")
        view.append(kv_table(f"{search.phase}: best plan", best_rows(
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
        view.append(table)
    if workers is not None:
        view.append("")
        view.append(kv_table("disaggregated workers: prefill:decode ratio for this workload", workers_rows(workers)))
    view.append("")
    blended = r.usd_per_mtok_blended
    if blended is not None:
        view.append(f"[bold cyan]blended[/bold cyan]  ${blended:.3g} per M tokens of a request "
                    f"({targets.prompt_tokens:,.0f} in + {targets.output_tokens:,.0f} out, prefill and decode "
                    "units together)")
    else:
        view.append("[bold cyan]blended[/bold cyan]  - (give --price-per-chip-hour or --tco for $ per M tokens)")
    if cache_hit is not None and hit is None:
        view.append("[bold cyan]cache hits[/bold cyan]  - (needs --price-per-chip-hour or --tco and a prefill plan "
                    "meeting --ttft)")
    if hit is not None:
        view.append(f"[bold cyan]cache hits[/bold cyan]  input ${hit['usd_per_mtok_input_blended']:.3g} per M "
                    f"tokens at {cache_hit:.0%} hits of a {hit['cached_prefix_tokens']:,.0f}-token prefix (miss "
                    f"${hit['usd_per_mtok_input']:.3g}, hit ${hit['usd_per_mtok_input_hit']:.3g})"
                    + ("" if hit["usd_per_mtok_request_blended"] is None
                       else f"; request ${hit['usd_per_mtok_request_blended']:.3g} per M tokens"))
    view.append("[dim]assumptions: disaggregated prefill/decode; TTFT = one prefill step (+ pipeline fill), "
                "no queueing (the worker ratio adds the KV transfer); "
                + ("ideal roofline (a lower bound on time)" if r.fidelity == "ideal" else
                   f"{r.fidelity} (achieved efficiencies and overheads)")
                + "; chips billed per plan[/dim]")
    if plot:
        view.append(Line(f"figure written to {plot}", soft_wrap=True))
    return view


def _spread(rows: list, top: int | None) -> list:
    """``top`` of ``rows`` spread evenly along them (first and last kept); all when ``top`` is None or larger."""
    if top is None or len(rows) <= top:
        return rows
    if top == 1:
        return rows[:1]
    picks = sorted({round(i * (len(rows) - 1) / (top - 1)) for i in range(top)})
    return [rows[i] for i in picks]


def frontier_view(req, p, plot) -> list:
    """``plan --frontier``: every system's frontier (whole requests or decode, ``--view``) as a table (``--top``
    rows spread along each when given) and its figures at the interactivity (``report.frontier``)."""
    from rich import box
    from rich.table import Table

    from .frontier import at_line, speculation_line, system_rows
    from .tco import mw_text, tco_line

    view: list = []
    f, m, targets, options, powers, rates, top = p.frontier, p.model, p.targets, p.options, p.powers, p.rates, req.top
    interactivity, names = p.interactivity, [s.name for s in p.systems]
    source = "--interactivity" if p.interactivity_given else "1/tpot"
    priced = any(v is not None for v in f.prices.values())
    spec = bool(f.speculation)
    what = ("decode steps only (prefill not paid)" if f.view == "decode" else
            f"whole requests of {targets.prompt_tokens:,.0f}/{targets.output_tokens:,.0f} tokens ({f.view}"
            + ("" if f.view == "disaggregated" else f", token budget {f.token_budget:,.0f}") + ")")
    view.append(f"[bold]llmecon plan --frontier[/bold] ({f.fidelity}): {m.name} on {', '.join(names)}, {what}; "
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
        view.append("")
        view.append(table)
    view.append("")
    how = "--interactivity" if source == "--interactivity" else "1 / --tpot; --interactivity sets it"
    view.append(f"[bold cyan]at {interactivity:,.4g} tokens/s per user[/bold cyan] ({how})")
    for name in names:
        per_chip, power = f.at[name].tokens_per_s_per_chip, powers[name]
        mw = "" if per_chip is None else f"; {mw_text(power.tokens_per_s_per_mw(per_chip), power)}"
        view.append(Line("  " + at_line(f.at[name]) + mw, soft_wrap=True))
    for name in names:  # speculation searched: both frontiers, labelled (issue 37)
        if (line := speculation_line(f, name)) is not None:
            view.append(Line("  " + line, soft_wrap=True))
    for name, rate in (rates or {}).items():
        view.append(Line(f"  {name} TCO: {tco_line(rate)}", soft_wrap=True))
    if not priced:
        view.append("[dim]give --price-per-chip-hour or --tco for $/Mtok[/dim]")
    if plot:
        view.append(Line(f"figure written to {plot}", soft_wrap=True))
    return view
