"""CLI command ``plan``: the cheapest (or fastest) deployment of a model over systems under TPOT and
TTFT targets, and the frontier (SPEC D). Thin: parse -> ``planner.plan_deployment`` -> report_plan."""

from __future__ import annotations

import os
from enum import Enum
from typing import Annotated, Optional

import typer

from .options import (DEFAULT_MODE, DEFAULT_MODEL, AcceptanceOpt, DraftOpt, JsonOpt, KvDtypeOpt, ModelOpt, ModeOpt,
    EngineOpt, ProfileOpt, WeightDtypeOpt, _check_plot_path, _console, _emit_json, _kv_table, app)

PLAN_SYSTEMS = "gb200-nvl72,hgx-h100"
PIPE_WIDTH = 120  # text width when stdout is not a terminal and COLUMNS is unset


class Objective(str, Enum):
    cost = "cost"
    throughput = "throughput"


def _duration(text: str, flag: str) -> float:
    """'50ms', '50 ms', '2s' or a bare number of seconds ('0.05') -> seconds."""
    from ..units import parse

    try:
        return float(text)
    except ValueError:
        return parse(text, "s", field=flag)


def _names(text: str, flag: str) -> list[str]:
    from ..errors import SpecError

    names = [n.strip() for n in text.split(",")]
    if not text.strip() or not all(names):
        raise SpecError(f"{flag} {text!r}: give comma-separated names, e.g. {flag} {PLAN_SYSTEMS}")
    return names


def _prices(text: str | None, tco: str | None, systems) -> tuple[dict, dict]:
    """(prices, TCO rates) per system from --price-per-chip-hour or --tco: one for every system, or one per
    system in --systems order (``resolve.chip_hour_prices``)."""
    from ..errors import SpecError
    from ..resolve import chip_hour_prices

    values = None
    if text is not None:
        try:
            values = [float(v) for v in text.split(",")]
        except ValueError:
            raise SpecError(f"--price-per-chip-hour {text!r}: give dollars per chip-hour as a number or a comma "
                            "list, e.g. 2.5 or 3.9,2.2") from None
    paths = None if tco is None else [p.strip() for p in tco.split(",")]
    for k, p in enumerate(paths or ()):
        if not p:
            raise SpecError(f"entry {k + 1} of {len(paths)} in the list is empty", field="tco", value=tco,
                            fix="give a TOML file for every system, or one for all, separated by commas "
                                "(no empty entry, no trailing comma)")
    return chip_hour_prices(systems, prices=values, tco_paths=paths, default="tco")  # none given: TCO defaults


@app.command("plan")
def plan_cmd(
    model: ModelOpt = DEFAULT_MODEL,
    systems: Annotated[str, typer.Option("--systems", "-s", help="Comma-separated catalogue systems to search "
                                                                 "(llmecon catalog systems).")] = PLAN_SYSTEMS,
    tpot: Annotated[str, typer.Option("--tpot", help="Time per output token target: one decode step "
                                                     "('50ms', '0.05' = seconds).")] = "50ms",
    ttft: Annotated[str, typer.Option("--ttft", help="Time to first token target: one prefill step (plus "
                                                     "the pipeline fill when pp > 1), no queueing ('2s').")] = "2s",
    price_per_chip_hour: Annotated[Optional[str], typer.Option(
        "--price-per-chip-hour", help="USD per chip-hour: one number for all systems or a comma list in "
                                      "--systems order. Without it $ figures are absent.")] = None,
    tco: Annotated[Optional[str], typer.Option(
        "--tco", help="TCO inputs instead of --price-per-chip-hour: a TOML file (docs/tco.md) for all systems, or "
                      "a comma list of files in --systems order.")] = None,
    context: Annotated[float, typer.Option("--context", "-L", help="Mean KV tokens per sequence during "
                                                                   "decode.")] = 4096,
    prompt_tokens: Annotated[float, typer.Option("--prompt-tokens", help="Tokens prefilled per request.")] = 4096,
    output_tokens: Annotated[float, typer.Option("--output-tokens", help="Tokens generated per request (weights "
                                                                         "the blended $/Mtok).")] = 512,
    max_chips: Annotated[int, typer.Option("--max-chips", help="Most chips one replica may use.")] = 512,
    objective: Annotated[Optional[Objective], typer.Option(
        "--objective", help="cost ($/Mtok) or throughput (tokens/s per chip); default cost when priced, else "
                            "throughput.")] = None,
    weight_dtype: WeightDtypeOpt = None, kv_dtype: KvDtypeOpt = None,
    dispatch_dtype: Annotated[Optional[str], typer.Option(
        "--dispatch-dtype", help="MoE all-to-all dispatch format (e.g. fp8); combine stays bf16.")] = None,
    expert_imbalance: Annotated[float, typer.Option(
        "--expert-imbalance", help="Routing skew: the busiest expert group's tokens over what uniform routing "
                                   "gives it (>= 1; 1 = uniform; scales its reads, FLOPs and all-to-all).")] = 1.0,
    top: Annotated[Optional[int], typer.Option("--top", help="Frontier rows shown, spread along the frontier "
                                                             "(fastest per user first); default 10, and with "
                                                             "--frontier every point.")] = None,
    plot: Annotated[Optional[str], typer.Option("--plot", help="Write the decode frontier figure "
                                                               "(PNG/SVG/PDF).")] = None,
    spec_tokens: Annotated[Optional[int], typer.Option(
        "--spec-tokens", help="Speculative decoding: search draft tokens per verify step k = 0..K (default 0 = "
                              "plain decoding only).")] = None,
    acceptance: AcceptanceOpt = None, draft: DraftOpt = None,
    frontier: Annotated[bool, typer.Option(
        "--frontier", help="Compare systems: each one's frontier (tokens/s per chip vs tokens/s per user, of "
                           "what --view pays for; no latency target), every point, and its tokens/s per chip and "
                           "$/Mtok at --interactivity; --plot draws one line per system.")] = False,
    view: Annotated[str, typer.Option(
        "--view", help="With --frontier: what tokens/s per chip pays for: whole (default: whole requests of "
                       "--prompt-tokens/--output-tokens, aggregated and disaggregated serving), aggregated, "
                       "disaggregated, or decode (decode steps only, the old view).")] = "whole",
    token_budget: Annotated[float, typer.Option(
        "--token-budget", help="With --frontier: prompt tokens per engine step per attention group when prefill "
                               "is interleaved (aggregated serving; engines' default 8192).")] = 8192,
    layouts: Annotated[Optional[str], typer.Option(
        "--layouts", help="engine: only layouts the profile's serving engine runs, pipeline parallelism only "
                          "where pp 1 does not fit (default with --frontier); any: every plan of the search "
                          "(default without --frontier).")] = None,
    max_chips_per_system: Annotated[Optional[str], typer.Option(
        "--max-chips-per-system", help="GPU budget of one replica per system, e.g. gb200-nvl72=72,hgx-h100=16 "
                                       "(others: --max-chips).")] = None,
    interactivity: Annotated[Optional[float], typer.Option(
        "--interactivity", help="With --frontier: tokens/s per user to compare systems at (default 1 / "
                                "--tpot).")] = None,
    mode: ModeOpt = DEFAULT_MODE, profile: ProfileOpt = None, engine: EngineOpt = None,
    cache_hit: Annotated[Optional[float], typer.Option(
        "--cache-hit", help="Prefix-cache hit rate in [0, 1]: blends the best prefill plan's input $/Mtok over "
                            "hits (a hit prefills only the uncached tokens).")] = None,
    cached_prefix: Annotated[Optional[float], typer.Option(
        "--cached-prefix", help="Prompt tokens cached on a hit (default: all but the last).")] = None,
    max_workers: Annotated[int, typer.Option(
        "--max-workers", help="Most prefill (and decode) workers the prefill:decode ratio may use (<= 1024).")] = 16,
    as_json: JsonOpt = False,
) -> None:
    """Plan a deployment: search systems x parallelism plans x batch under TPOT/TTFT targets and HBM, and
    show the best decode and prefill plans, why, and the throughput frontier. With --spec-tokens K the
    decode search also tries speculative decoding with k = 1..K and reports the k chosen. With --frontier,
    compare systems instead: each one's decode frontier and its tokens/s per chip and $/Mtok at
    --interactivity tokens/s per user."""
    from ..catalog.hardware import get_system
    from ..catalog.models import get_model
    from ..dtypes import get_dtype
    from ..errors import require_number
    from ..econ.workers import MAX_WORKERS_LIMIT
    from ..econ.planner import SearchOptions, PlanTargets, plan_deployment
    from ..report.plan import (best_rows, floor_rows, frontier_rows, headline, plan_result_dict, plot_frontier,
                               workers_rows)

    if plot:
        _check_plot_path(plot)
    if interactivity is not None:
        require_number("--interactivity", interactivity, minimum=0, exclusive=True, hint="tokens/s per user")
    if top is not None:
        require_number("--top", top, minimum=1)
    require_number("--max-workers", max_workers, minimum=1, maximum=MAX_WORKERS_LIMIT,
                   hint="workers per pool the prefill:decode ratio may use")
    require_number("--expert-imbalance", expert_imbalance, minimum=1,
                   hint="the busiest expert group's tokens over uniform routing's; 1 = uniform routing")
    m = get_model(model)
    if cache_hit is not None or cached_prefix is not None:
        from ..econ.cache_hit import check_cache_hit

        check_cache_hit(cache_hit_rate=cache_hit, cached_prefix_tokens=cached_prefix, prompt_tokens=prompt_tokens,
                        max_context=m.max_context)
    names = _names(systems, "--systems")
    targets = PlanTargets(tpot_s=_duration(tpot, "--tpot"), ttft_s=_duration(ttft, "--ttft"), context=context,
                      prompt_tokens=prompt_tokens, output_tokens=output_tokens)
    from ..resolve import profiles_for

    found = [get_system(n) for n in names]
    prices, rates = _prices(price_per_chip_hour, tco, found)
    from ..econ.tco import power_for

    powers = {sy.name: power_for(sy, rates.get(sy.name)) for sy in found}
    from ..spec.speculation import speculation_candidates

    options = SearchOptions(max_chips=max_chips, weight_dtype=weight_dtype, kv_dtype=kv_dtype,
                            max_chips_by_system=_budgets(max_chips_per_system, names),
                            layouts=layouts or ("engine" if frontier else "any"),
                            dispatch_dtype=dispatch_dtype, expert_imbalance=expert_imbalance,
                            profiles=profiles_for(mode.value, profile, found, engine),
                            speculation=speculation_candidates(m, max_k=spec_tokens, acceptance=acceptance,
                                                               draft=draft))
    for dt in (weight_dtype, kv_dtype, dispatch_dtype):
        if dt is not None:
            get_dtype(dt)
    console = None if as_json else _console()
    if console is not None and not console.is_terminal and "COLUMNS" not in os.environ:
        console.width = max(console.width, PIPE_WIDTH)  # a pipe or file does not wrap: keep table rows whole
    if frontier:
        source = "--interactivity" if interactivity is not None else "1/tpot"
        _frontier(m, found, targets=targets, options=options, prices=prices, plot=plot, console=console, powers=powers,
                  rates=rates, view=view, token_budget=token_budget,
                  interactivity=interactivity if interactivity is not None else 1.0 / targets.tpot_s,
                  source=source, top=top)
        return
    kw = dict(targets=targets, options=options, prices=prices, objective=objective.value if objective else None)
    if console is not None and console.is_terminal:
        with console.status(f"searching plans of {m.name} on {', '.join(names)}..."):
            r = plan_deployment(m, found, **kw)
    else:
        r = plan_deployment(m, found, **kw)
    hbm = {s.name: s.accelerator.hbm_bytes for s in found}
    from ..econ.floor import plan_floors
    floors = plan_floors(r, m, found, options)
    from ..econ.workers import plan_workers

    workers = plan_workers(r, m, found, options, max_workers=max_workers)
    if plot:
        plot_frontier(r, plot)
    hit = None
    if cache_hit is not None:
        from ..econ.cache_hit import plan_cache_hit

        hit = plan_cache_hit(r, m, found, options, cache_hit_rate=cache_hit, cached_prefix_tokens=cached_prefix)
    if as_json:
        out = plan_result_dict(r, hbm_bytes=hbm, model_assumptions=m.assumptions, workers=workers, powers=powers,
                               rates=rates, floors=floors)
        if cache_hit is not None:
            out["cache_hit"] = hit
        _emit_json(out)
        return
    from rich import box
    from rich.table import Table

    console.print(f"[bold]llmecon plan[/bold] ({r.fidelity}): {headline(r)}")
    for search, target in ((r.decode, targets.tpot_s), (r.prefill, targets.ttft_s)):
        console.print()
        console.print(_kv_table(f"{search.phase}: best plan", best_rows(
            search, hbm_bytes=hbm[search.best.system], target_s=target,
            spec=bool(r.speculation) and search.phase == "decode", power=powers[search.best.system],
            rate=rates.get(search.best.system)) + floor_rows(floors[search.phase], search.best)))
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


def _budgets(given: str | None, names) -> dict:
    """--max-chips-per-system NAME=N,... as {system: chips}."""
    if not given:
        return {}
    from ..errors import SpecError, unknown_name

    out = {}
    for part in given.split(","):
        name, _, value = part.strip().partition("=")
        if name.strip() not in names:
            raise unknown_name("system", name.strip(), sorted(names), field="max_chips_per_system")
        try:
            out[name.strip()] = int(value)
        except ValueError:
            raise SpecError(f"{part.strip()!r} is not SYSTEM=CHIPS", field="max_chips_per_system",
                            fix="write e.g. gb200-nvl72=72,hgx-h100=16") from None
    return out


def _spread(rows: list, top: int | None) -> list:
    """``top`` of ``rows`` spread evenly along them (first and last kept); all when ``top`` is None or larger."""
    if top is None or len(rows) <= top:
        return rows
    if top == 1:
        return rows[:1]
    picks = sorted({round(i * (len(rows) - 1) / (top - 1)) for i in range(top)})
    return [rows[i] for i in picks]


def _frontier(m, found, *, targets, options, prices, plot, console, interactivity, source, powers,
              rates=None, view="whole", token_budget=8192, top: int | None = None) -> None:
    """``plan --frontier``: every system's frontier (whole requests or decode, ``--view``) as a table, its
    figures at the interactivity (``top`` rows spread along each when given), the figure
    (``econ.serving_frontier``, ``report.frontier``)."""
    from functools import partial

    from ..econ.serving_frontier import serving_frontier

    decode_frontier = partial(serving_frontier, view=view, token_budget=token_budget)
    from ..report.frontier import at_line, frontier_dict, plot_frontiers, system_rows
    from ..report.tco import mw_text, tco_line

    names = [s.name for s in found]
    if console is not None and console.is_terminal:
        with console.status(f"searching plans of {m.name} on {', '.join(names)}..."):
            f = decode_frontier(m, found, targets=targets, options=options, prices=prices, interactivity=interactivity)
    else:
        f = decode_frontier(m, found, targets=targets, options=options, prices=prices, interactivity=interactivity)
    if plot:
        plot_frontiers(f, plot)
    if console is None:
        _emit_json(frontier_dict(f, interactivity_source=source, model_assumptions=m.assumptions, powers=powers,
                                 rates=rates))
        return
    from rich import box
    from rich.table import Table

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
    for name, rate in (rates or {}).items():
        console.print(f"  {name} TCO: {tco_line(rate)}", soft_wrap=True, markup=False, highlight=False)
    if not priced:
        console.print("[dim]give --price-per-chip-hour or --tco for $/Mtok[/dim]")
    if plot:
        console.print(f"figure written to {plot}", soft_wrap=True, markup=False, highlight=False)
