"""Text views of ``context``, ``cost``, ``cache`` and ``catalog tiers``: the typed result in, the rich
renderables (tables and lines) out, in print order. The CLI prints them; the JSON views are in
report/context.py."""

from __future__ import annotations

import math

from ..units import fmt_bytes, fmt_rate, fmt_seconds
from .tables import kv_table, money, small_money, tokens
from .tco import mw_text, tco_line


def _crossover(x: float) -> str:
    """The crossover row: where one sequence's KV reads outweigh its compute, per chip."""
    what = "KV reads = matmul + attention compute per sequence, per chip; SPEC B8"
    return f"{tokens(x)} tokens ({what})" if math.isfinite(x) else f"never ({what.replace('=', 'stay below')})"


def context_view(r, d: dict, plot: str | None) -> list:
    """``llmecon context``: the deployment's KV facts, then cost per token against context length."""
    from rich.table import Table

    dep, e, rate, price_per_chip_hour = r.deployment, r.economics, r.rate, r.price_per_chip_hour
    from .context import context_floor_row

    rows = [("deployment", f"{dep.model.name} on {dep.system.name}, {dep.plan.label()}, {dep.fidelity}"),
            *((("TCO", tco_line(rate)),) if rate is not None else ()),
            ("attention", d["attention"]),
            ("KV per token", f"{fmt_bytes(e.kv_bytes_per_token)} held, {fmt_bytes(e.kv_read_bytes_per_token)} read "
                             f"per step at {d['kv_dtype']} (short context, all layers)"),
            ("crossover context L_x", _crossover(e.crossover_context)),
            ("balance batch", f"{e.balance_batch:,.0f}"),
            ("max context, batch 1", f"{tokens(e.max_context_at_batch_1)} tokens ("
                                     + ("model limit" if e.model_max_context
                                        and e.max_context_at_batch_1 >= e.model_max_context else "memory limit")
                                     + ")"),
            ("KV capacity", f"{tokens(e.kv_capacity_tokens)} tokens across sequences, beside "
                            f"{fmt_bytes(e.weights_per_chip_bytes)} of weights per chip"),
            ("HBM free for KV", fmt_bytes(e.free_hbm_bytes)), *context_floor_row(d["ideal_floor"])]
    if e.kv_sharing_factor != 1:
        rows.append(("KV sharing", f"{e.kv_sharing_factor:g} layers per cache: saves capacity, not reads"))
    rows += [("note", n) for n in d["notes"]]
    priced = price_per_chip_hour is not None
    unit = "$/Mtok" if priced else "chip-s/Mtok"
    table = Table("context", "KV/seq", "max seqs", "batch", "step", "bound", f"output {unit}", f"input {unit}")
    for row in d["curve"]:
        out = row["output_usd_per_mtok"] if priced else (row["decode_chip_s_per_token"] or math.nan) * 1e6
        inp = row["input_usd_per_mtok"] if priced else (row["prefill_chip_s_per_token"] or math.nan) * 1e6
        fmt = money if priced else (lambda x: "-" if x is None or not math.isfinite(x) else f"{x:,.1f}")
        table.add_row(tokens(row["context"]), fmt_bytes(row["kv_per_sequence_bytes"]),
                      f"{row['max_sequences']:,.0f}", "-" if row["batch"] is None else f"{row['batch']:,.0f}",
                      "-" if row["decode_step_s"] is None else fmt_seconds(row["decode_step_s"]),
                      row["bound"] or "-", fmt(out), fmt(inp))
    return [kv_table("llmecon context", rows), table, *((f"figure written to {plot}",) if plot else ())]


def _cache_hit_rows(d: dict, cache_hit: float) -> list[tuple[str, str]]:
    """``cost``'s prefix-cache rows: the blended input price, a cached token's cost, holding the prefix."""
    ch = d["cache_hit"]
    prefix = tokens(ch["cached_prefix_tokens"])
    rows = [("input, cache hits", f"{money(ch['usd_per_mtok_input_blended'])} per million tokens blended at "
                                  f"{cache_hit:.0%} hits of a {prefix}-token prefix "
                                  f"(every prompt a hit: {small_money(ch['usd_per_mtok_input_hit_all_in'])}"
                                  + (", holding and fetching included)" if ch["hold_s"] else ")")),
            ("cached token cost", f"{ch['cached_token_cost_ratio']:.3g}x an uncached one (hit prompt "
                                  f"{ch['hit_cost_ratio']:.3g}x a miss, compute only)")]
    if ch["hold_s"] is not None:
        h_star = ch["break_even_hit_rate"]
        rows.append(("holding the prefix", f"{small_money(ch['usd_per_mtok_hold'])} per million prompt tokens held "
                                           f"{ch['hold_s']:g} s in {ch['cache_tier'] or 'no priced tier'}, "
                                           f"{small_money(ch['usd_per_mtok_fetch'])} to fetch on a hit; caching pays "
                     + (f"above a {h_star:.1%} hit rate" if h_star is not None else "at no hit rate")))
    return rows


def _list_price_rows(d: dict, sheet, hit) -> list[tuple[str, str]]:
    """``cost``'s rows against a provider's list price: the price, the margin, the blended margin."""
    lp = d["list_price"]
    rows = [(f"{sheet.provider} {sheet.model}", f"list {money(lp['input_usd_per_mtok'])} in / "
                                                f"{money(lp['output_usd_per_mtok'])} out ({sheet.as_of})"),
            ("margin", f"input {lp['input_margin']:+.0%}, output {lp['output_margin']:+.0%} (negative = below cost)")]
    if hit is not None and "cached_input_multiplier" in lp:
        rows.append(("list, cache hits", f"{money(lp['usd_per_mtok_input_blended'])} blended (cached input "
                                         f"{lp['cached_input_multiplier']:.3g}x list; llmecon's cost "
                                         f"{d['cache_hit']['cached_token_cost_ratio']:.3g}x), margin "
                                         f"{lp['input_margin_blended']:+.0%}"))
    return rows


def cost_view(r, d: dict, *, cache_hit, utilization, context, power_basis) -> list:
    """``llmecon cost``: the deployment, prices, power, the ideal floor, cache hits and a list price's margin."""
    from ..econ.tco import power_for

    dep, c, rate, floor, hit, sheet = r.deployment, r.cost, r.rate, r.floor, r.hit, r.sheet
    rows = [("deployment", f"{dep.model.name} on {dep.system.name}, {dep.plan.label()} ({c.chips} chips), "
                           f"{dep.fidelity}"),
            *((("TCO", tco_line(rate)),) if rate is not None else ()),
            ("assumptions", f"${r.price_per_chip_hour:.4g}/chip-hour, {utilization:.0%} utilised, context "
                            f"{tokens(context)}, decode batch {c.batch:,.0f}, prefills batched to the balance batch"),
            ("decode step", fmt_seconds(c.step_s) + ("" if dep.speculation is None else
                            f" (verify + draft of k={dep.speculation.k}: {c.tokens_per_step:.3g} tokens per step, "
                            f"TPOT {fmt_seconds(c.tpot_s)})")),
            ("input (prefill)", f"{money(c.input_usd_per_mtok)} per million tokens"),
            ("output (decode)", f"{money(c.output_usd_per_mtok)} per million tokens"),
            ("output tokens/s per MW", mw_text(d["tokens_per_s_per_mw"], power_for(dep.system, rate, power_basis))),
            *((("ideal floor", f"{money(floor.input_usd_per_mtok)} in / {money(floor.output_usd_per_mtok)} out "
                               f"per million tokens at batch {floor.batch:,.0f}: the roofline lower bound "
                               f"(calibrated is {c.output_usd_per_mtok / floor.output_usd_per_mtok:.2f}x it on "
                               f"output)"),) if floor is not None else ())]
    if hit is not None:
        rows += _cache_hit_rows(d, cache_hit)
    if sheet is not None:
        rows += _list_price_rows(d, sheet, hit)
    what = "ideal roofline: a lower bound on cost" if dep.profile.is_ideal else \
        f"{dep.fidelity}, with the ideal floor"
    return [kv_table(f"llmecon cost ({what})", rows)]


def cache_view(r, *, sequences: float, context: float) -> list:
    """``llmecon cache``: the cache, recomputing it, each tier's cost and Gray's break-even hold times."""
    from rich.table import Table

    dep, p, hold_s = r.deployment, r.placement, r.hold_s
    out: list = [kv_table("llmecon cache", [
        ("cache", f"{sequences:,.0f} x {tokens(context)} tokens = {fmt_bytes(p.bytes_total)} "
                  f"({fmt_bytes(p.bytes_per_sequence)} each), held {fmt_seconds(hold_s)}"),
        ("recompute", f"{fmt_seconds(p.recompute_s)} of prefill on {dep.plan.chips} chips = "
                      f"{money(p.recompute_usd)}"),
        ("cheapest", p.cheapest),
        ("five-minute rule", p.five_minute_tier or "needs prices for at least two fitting tiers (--tier-price)")])]
    out += [f"break-even {e.faster} -> {e.slower}: {fmt_seconds(e.hold_s)} (re-read more often: keep it "
            f"in {e.faster})" for e in p.break_evens]
    table = Table("tier", "free", "drain", "fits", "Gray's tier", "read back", "hold $", "read $", "total $")
    for o in p.options:
        table.add_row(o.tier, fmt_bytes(o.capacity_bytes), "?" if o.drain_s is None else fmt_seconds(o.drain_s),
                      "yes" if o.fits else "no", {True: "yes", False: "no", None: "?"}[o.consistent],
                      "?" if o.retrieve_s is None else fmt_seconds(o.retrieve_s), money(o.hold_usd),
                      money(o.retrieve_usd), money(o.total_usd))
    out.append(table)
    unpriced = [o.tier for o in p.options if o.hold_usd is None]
    if unpriced:
        out.append(f"[dim]no price for: {', '.join(unpriced)} (give --tier-price NAME=USD_PER_HOUR; "
                   f"llmecon never guesses one)[/dim]")
    out.append("[dim]Gray's rule (Gray & Putzolu 1987): keep data in the faster tier if re-read within "
               "T* = slower tier's $ per byte read / faster tier's $ per byte-second held = slower drain x "
               "slower $/B / faster $/B[/dim]")
    return out


def tiers_view(out: dict) -> list:
    """``llmecon catalog tiers``: each system's memory tiers, then the storage devices."""
    from rich.table import Table

    table = Table("system / device", "tier", "capacity", "bandwidth", "drain", "status")
    groups = list(out["systems"].items()) + [(f"device {n}", [r]) for n, r in out["devices"].items()]
    for owner, rows in groups:
        for r in rows:
            bw = r["bandwidth_bytes_per_s"]
            table.add_row(owner, r["name"], fmt_bytes(r["capacity_bytes"]), "?" if bw is None else fmt_rate(bw),
                          "?" if r["drain_s"] is None else fmt_seconds(r["drain_s"]), r["status"])
    return [table]
