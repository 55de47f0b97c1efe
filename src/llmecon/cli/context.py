"""CLI commands for context length, KV-cache tiers and cost: ``context``, ``cost``, ``cache`` and ``catalog
tiers`` (``prices list|infer|tiers``: cli/prices.py). Thin: parse -> library call -> report (see
cli/__init__.py)."""

from __future__ import annotations

import math
from typing import Annotated, Optional

import typer

from ..commands.cache import CacheRequest
from ..commands.deployment import ContextRequest, CostRequest
from .options import JsonOpt, _check_plot_path, _console, _emit_json, _kv_table, app, catalog_app, takes


def _tokens(x: float) -> str:
    from ..report.analyze import fmt_tokens

    return "unbounded" if not math.isfinite(x) else fmt_tokens(x)


def _crossover(x: float) -> str:
    """The crossover row: where one sequence's KV reads outweigh its compute, per chip."""
    what = "KV reads = matmul + attention compute per sequence, per chip; SPEC B8"
    return f"{_tokens(x)} tokens ({what})" if math.isfinite(x) else f"never ({what.replace('=', 'stay below')})"


def _small(x) -> str:
    """Dollars with three significant digits below a cent (holding and fetching costs are often tiny)."""
    return _money(x) if x is None or not math.isfinite(x) or x >= 0.01 else f"${x:.3g}"


def _money(x) -> str:
    return "-" if x is None or not math.isfinite(x) else (f"${x:,.3f}" if x < 100 else f"${x:,.0f}")


# ---- context --------------------------------------------------------------------------------


@app.command("context")
@takes(ContextRequest, exclude=("adp", "redundant_experts", "spec_tokens", "acceptance", "draft"))
def context_cmd(
    req: ContextRequest,
    plot: Annotated[Optional[str], typer.Option("--plot", help="Write cost-vs-context figure (PNG/SVG/PDF).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """KV economics against context length: KV bytes per token, crossover context, memory wall, and
    cost per input and output token from 256 tokens to the longest context that fits."""
    from ..commands.deployment import context as run
    from ..report.context import plot_context

    if plot:
        _check_plot_path(plot)
    r = run(req, what="llmecon context")
    d = r.to_dict()
    if plot:
        plot_context(r.economics, r.deployment, plot, price_per_chip_hour=r.price_per_chip_hour,
                     utilization=req.utilization)
    if as_json:
        _emit_json(d)
        return
    _print_context(r, d, plot)


def _print_context(r, d, plot) -> None:
    from ..units import fmt_bytes, fmt_seconds

    dep, e, rate, price_per_chip_hour = r.deployment, r.economics, r.rate, r.price_per_chip_hour
    from rich.table import Table

    from ..report.tco import tco_line

    from ..report.context import context_floor_row

    rows = [("deployment", f"{dep.model.name} on {dep.system.name}, {dep.plan.label()}, {dep.fidelity}"),
            *((("TCO", tco_line(rate)),) if rate is not None else ()),
            ("attention", d["attention"]),
            ("KV per token", f"{fmt_bytes(e.kv_bytes_per_token)} held, {fmt_bytes(e.kv_read_bytes_per_token)} read "
                             f"per step at {d['kv_dtype']} (short context, all layers)"),
            ("crossover context L_x", _crossover(e.crossover_context)),
            ("balance batch", f"{e.balance_batch:,.0f}"),
            ("max context, batch 1", f"{_tokens(e.max_context_at_batch_1)} tokens ("
                                     + ("model limit" if e.model_max_context
                                        and e.max_context_at_batch_1 >= e.model_max_context else "memory limit")
                                     + ")"),
            ("KV capacity", f"{_tokens(e.kv_capacity_tokens)} tokens across sequences, beside "
                            f"{fmt_bytes(e.weights_per_chip_bytes)} of weights per chip"),
            ("HBM free for KV", fmt_bytes(e.free_hbm_bytes)), *context_floor_row(d["ideal_floor"])]
    if e.kv_sharing_factor != 1:
        rows.append(("KV sharing", f"{e.kv_sharing_factor:g} layers per cache: saves capacity, not reads"))
    rows += [("note", n) for n in d["notes"]]
    console = _console()
    console.print(_kv_table("llmecon context", rows))
    priced = price_per_chip_hour is not None
    unit = "$/Mtok" if priced else "chip-s/Mtok"
    table = Table("context", "KV/seq", "max seqs", "batch", "step", "bound", f"output {unit}", f"input {unit}")
    for r in d["curve"]:
        out = r["output_usd_per_mtok"] if priced else (r["decode_chip_s_per_token"] or math.nan) * 1e6
        inp = r["input_usd_per_mtok"] if priced else (r["prefill_chip_s_per_token"] or math.nan) * 1e6
        fmt = _money if priced else (lambda x: "-" if x is None or not math.isfinite(x) else f"{x:,.1f}")
        table.add_row(_tokens(r["context"]), fmt_bytes(r["kv_per_sequence_bytes"]), f"{r['max_sequences']:,.0f}",
                      "-" if r["batch"] is None else f"{r['batch']:,.0f}",
                      "-" if r["decode_step_s"] is None else fmt_seconds(r["decode_step_s"]), r["bound"] or "-",
                      fmt(out), fmt(inp))
    console.print(table)
    if plot:
        console.print(f"figure written to {plot}")


# ---- cost -----------------------------------------------------------------------------------


@app.command("cost")
@takes(CostRequest, exclude=("adp", "redundant_experts"))
def cost_cmd(req: CostRequest, as_json: JsonOpt = False) -> None:
    """$ per million input and output tokens for a deployment, and the margin against a list price.
    With --spec-tokens, output tokens are decoded speculatively (E tokens per verify step); with
    --cache-hit, input is blended over prefix-cache hits and misses (docs/assumptions.md)."""
    from ..commands.deployment import cost as run

    r = run(req)
    d = r.to_dict(power_basis=req.power_basis, mode_requested=req.mode)
    if as_json:
        _emit_json(d)
        return
    _print_cost(r.deployment, r.cost, d, rate=r.rate, floor=r.floor, hit=r.hit, sheet=r.sheet, cache_hit=req.cache_hit,
                price_per_chip_hour=r.price_per_chip_hour, utilization=req.utilization, context=req.context,
                power_basis=req.power_basis)


def _print_cost(dep, c, d, *, rate, floor, hit, sheet, cache_hit, price_per_chip_hour, utilization, context,
                power_basis) -> None:
    """``cost``'s table: the deployment, prices, power, the ideal floor, cache hits and a list price's margin."""
    from ..econ.tco import power_for
    from ..report.tco import mw_text, tco_line
    from ..units import fmt_seconds

    rows = [("deployment", f"{dep.model.name} on {dep.system.name}, {dep.plan.label()} ({c.chips} chips), "
                           f"{dep.fidelity}"),
            *((("TCO", tco_line(rate)),) if rate is not None else ()),
            ("assumptions", f"${price_per_chip_hour:.4g}/chip-hour, {utilization:.0%} utilised, context "
                            f"{_tokens(context)}, decode batch {c.batch:,.0f}, prefills batched to the balance batch"),
            ("decode step", fmt_seconds(c.step_s) + ("" if dep.speculation is None else
                            f" (verify + draft of k={dep.speculation.k}: {c.tokens_per_step:.3g} tokens per step, "
                            f"TPOT {fmt_seconds(c.tpot_s)})")),
            ("input (prefill)", f"{_money(c.input_usd_per_mtok)} per million tokens"),
            ("output (decode)", f"{_money(c.output_usd_per_mtok)} per million tokens"),
            ("output tokens/s per MW", mw_text(d["tokens_per_s_per_mw"], power_for(dep.system, rate, power_basis))),
            *((("ideal floor", f"{_money(floor.input_usd_per_mtok)} in / {_money(floor.output_usd_per_mtok)} out "
                               f"per million tokens at batch {floor.batch:,.0f}: the roofline lower bound "
                               f"(calibrated is {c.output_usd_per_mtok / floor.output_usd_per_mtok:.2f}x it on "
                               f"output)"),) if floor is not None else ())]
    if hit is not None:
        ch = d["cache_hit"]
        prefix = _tokens(ch["cached_prefix_tokens"])
        rows.append(("input, cache hits", f"{_money(ch['usd_per_mtok_input_blended'])} per million tokens blended at "
                                          f"{cache_hit:.0%} hits of a {prefix}-token prefix "
                                          f"(every prompt a hit: {_small(ch['usd_per_mtok_input_hit_all_in'])}"
                                          + (", holding and fetching included)" if ch["hold_s"] else ")")))
        rows.append(("cached token cost", f"{ch['cached_token_cost_ratio']:.3g}x an uncached one (hit prompt "
                                          f"{ch['hit_cost_ratio']:.3g}x a miss, compute only)"))
        if ch["hold_s"] is not None:
            h_star = ch["break_even_hit_rate"]
            rows.append(("holding the prefix", f"{_small(ch['usd_per_mtok_hold'])} per million prompt tokens held "
                                               f"{ch['hold_s']:g} s in {ch['cache_tier'] or 'no priced tier'}, "
                                               f"{_small(ch['usd_per_mtok_fetch'])} to fetch on a hit; caching pays "
                         + (f"above a {h_star:.1%} hit rate" if h_star is not None else "at no hit rate")))
    if sheet is not None:
        lp = d["list_price"]
        rows.append((f"{sheet.provider} {sheet.model}", f"list {_money(lp['input_usd_per_mtok'])} in / "
                                                       f"{_money(lp['output_usd_per_mtok'])} out ({sheet.as_of})"))
        rows.append(("margin", f"input {lp['input_margin']:+.0%}, output {lp['output_margin']:+.0%} "
                               f"(negative = below cost)"))
        if hit is not None and "cached_input_multiplier" in lp:
            rows.append(("list, cache hits", f"{_money(lp['usd_per_mtok_input_blended'])} blended (cached input "
                                             f"{lp['cached_input_multiplier']:.3g}x list; llmecon's cost "
                                             f"{d['cache_hit']['cached_token_cost_ratio']:.3g}x), margin "
                                             f"{lp['input_margin_blended']:+.0%}"))
    what = "ideal roofline: a lower bound on cost" if dep.profile.is_ideal else \
        f"{dep.fidelity}, with the ideal floor"
    _console().print(_kv_table(f"llmecon cost ({what})", rows))


# ---- cache ----------------------------------------------------------------------------------


@app.command("cache")
@takes(CacheRequest)
def cache_cmd(req: CacheRequest, as_json: JsonOpt = False) -> None:
    """Where to keep a KV/prefix cache: each memory tier (hold + read-back cost, drain time) against
    recomputing it by prefill; the tier Gray's five-minute rule picks from the tiers' prices."""
    from ..commands.cache import cache
    from ..units import fmt_bytes, fmt_seconds

    r = cache(req)
    dep, p, hold_s, sequences, context = r.deployment, r.placement, r.hold_s, req.sequences, req.context
    d = r.to_dict()
    if as_json:
        _emit_json(d)
        return
    from rich.table import Table

    console = _console()
    console.print(_kv_table("llmecon cache", [
        ("cache", f"{sequences:,.0f} x {_tokens(context)} tokens = {fmt_bytes(p.bytes_total)} "
                  f"({fmt_bytes(p.bytes_per_sequence)} each), held {fmt_seconds(hold_s)}"),
        ("recompute", f"{fmt_seconds(p.recompute_s)} of prefill on {dep.plan.chips} chips = "
                      f"{_money(p.recompute_usd)}"),
        ("cheapest", p.cheapest),
        ("five-minute rule", p.five_minute_tier or "needs prices for at least two fitting tiers (--tier-price)")]))
    for e in p.break_evens:
        console.print(f"break-even {e.faster} -> {e.slower}: {fmt_seconds(e.hold_s)} (re-read more often: keep it "
                      f"in {e.faster})")
    table = Table("tier", "free", "drain", "fits", "Gray's tier", "read back", "hold $", "read $", "total $")
    for o in p.options:
        table.add_row(o.tier, fmt_bytes(o.capacity_bytes), "?" if o.drain_s is None else fmt_seconds(o.drain_s),
                      "yes" if o.fits else "no", {True: "yes", False: "no", None: "?"}[o.consistent],
                      "?" if o.retrieve_s is None else fmt_seconds(o.retrieve_s), _money(o.hold_usd),
                      _money(o.retrieve_usd), _money(o.total_usd))
    console.print(table)
    unpriced = [o.tier for o in p.options if o.hold_usd is None]
    if unpriced:
        console.print(f"[dim]no price for: {', '.join(unpriced)} (give --tier-price NAME=USD_PER_HOUR; "
                      f"llmecon never guesses one)[/dim]")
    console.print("[dim]Gray's rule (Gray & Putzolu 1987): keep data in the faster tier if re-read within "
                  "T* = slower tier's $ per byte read / faster tier's $ per byte-second held = slower drain x "
                  "slower $/B / faster $/B[/dim]")


@catalog_app.command("tiers")
def catalog_tiers(system: Annotated[Optional[str], typer.Option("--system", "-s", help="One system only.")] = None,
                  as_json: JsonOpt = False) -> None:
    """Memory tiers per system (HBM, host memory, local NVMe) and storage devices, with drain times."""
    from ..catalog.hardware import get_system, storage_devices, systems
    from ..report.context import tier_row
    from ..units import fmt_bytes, fmt_rate, fmt_seconds

    chosen = [get_system(system)] if system else list(systems().values())
    out = {"systems": {s.name: [tier_row(t) for t in s.memory_tiers] for s in chosen},
           "devices": {name: tier_row(t) for name, t in storage_devices().items()}}
    if as_json:
        _emit_json(out)
        return
    from rich.table import Table

    table = Table("system / device", "tier", "capacity", "bandwidth", "drain", "status")
    groups = list(out["systems"].items()) + [(f"device {n}", [r]) for n, r in out["devices"].items()]
    for owner, rows in groups:
        for r in rows:
            bw = r["bandwidth_bytes_per_s"]
            table.add_row(owner, r["name"], fmt_bytes(r["capacity_bytes"]), "?" if bw is None else fmt_rate(bw),
                          "?" if r["drain_s"] is None else fmt_seconds(r["drain_s"]), r["status"])
    _console().print(table)
