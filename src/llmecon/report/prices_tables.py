"""Text views of ``prices list``, ``prices infer`` and ``prices tiers``: the typed result (or its JSON
view) in, the rich renderables out, in print order; the CLI prints them."""

from __future__ import annotations

from ..units import fmt_bytes, fmt_seconds
from .tables import Line, money, tokens


def list_view(rows: list[dict], cache_hit, width: int) -> list:
    """``llmecon prices list``: one table of every sheet; under 150 columns the narrow form (issue 35)."""
    from rich.table import Table

    hit_col = () if cache_hit is None else (f"blended in (h={cache_hit:g})",)
    if width < 150:  # issue 35: a narrow terminal gets the prices, the tiers as lines below
        return _narrow_list(rows, hit_col, cache_hit)
    table = Table("provider", "model", "input", "output", "out/in", "cached", *hit_col, "cache writes",
                  "long context", "premiums", "status")
    for r in rows:
        writes, longc, prem = _extras(r)
        ratio = r["output_input_ratio"]
        table.add_row(r["provider"], r["model"], money(r["input_usd_per_mtok"]), money(r["output_usd_per_mtok"]),
                      "-" if ratio is None else f"{ratio:.2g}x", money(r["cached_input_usd_per_mtok"]),
                      *(() if cache_hit is None else (money(r["usd_per_mtok_input_blended"]),)), writes or "-",
                      longc or "-", prem or "-", r["status"])
    return [table]


def _extras(r: dict) -> tuple[str, str, str]:
    """(cache writes, long-context tiers, premiums) of a sheet row, as text."""
    writes = ", ".join(f"{w['hold_s'] / 60:g} min {money(w['usd_per_mtok'])}" for w in r["cache_writes"])
    longc = ", ".join(f">{t['above_tokens'] / 1000:g}K {money(t['input_usd_per_mtok'])}/"
                      f"{money(t['output_usd_per_mtok'])}" for t in r["long_context"])
    prem = ", ".join(f"{p['name']} {money(p['input_usd_per_mtok'])}/{money(p['output_usd_per_mtok'])}"
                     for p in r["premiums"])
    return writes, longc, prem


def _narrow_list(rows: list[dict], hit_col: tuple, cache_hit) -> list:
    """``prices list`` under 150 columns: one row per sheet with the prices that fit 80 columns, then each
    sheet's cache writes, long-context tiers and premiums as a line (``--json`` has every field)."""
    from rich import box
    from rich.table import Table

    table = Table("provider/model", "in", "out", "cached", *hit_col, "status", box=box.SIMPLE_HEAD, pad_edge=False)
    notes = []
    for r in rows:
        name = f"{r['provider']}/{r['model']}"
        table.add_row(name, money(r["input_usd_per_mtok"]), money(r["output_usd_per_mtok"]),
                      money(r["cached_input_usd_per_mtok"]),
                      *(() if cache_hit is None else (money(r["usd_per_mtok_input_blended"]),)), r["status"])
        parts = [f"{label} {text}" for label, text in zip(("cache writes", "long context", "premiums"), _extras(r))
                 if text]
        if parts:
            notes.append(f"{name}: " + "; ".join(parts))
    view: list = [table]
    for line in notes:
        view.append(Line(line))
    view.append("USD per million tokens; wider terminals show one table; --json has every field.")
    return view


def infer_view(out: dict) -> list:
    """``llmecon prices infer``: what the sheet implies, section by section, every assumption printed."""
    from rich.table import Table

    from ..econ.pricing import equivalent_kv_layers

    view: list = []
    view.append(f"[bold]llmecon prices infer[/bold] {out['provider']}/{out['model']} "
                f"(prices {out['status']}, {out['as_of']})")
    k = out.get("kv_from_price_step")
    if k is not None:
        view.append(f"\n[bold cyan]KV bytes per token from the >{k['crossover_context']:,.0f}-token price step"
                    f"[/bold cyan] (input x{k['input_uplift']:g}, output x{k['output_uplift']:g})")
        table = Table("N_active", *(f["label"] for f in k["flops_per_byte"]))
        for n, row in zip(k["active_params"], k["kv_bytes_per_token"]):
            table.add_row(f"{n / 1e9:g}B", *(fmt_bytes(v) for v in row))
        view.append(table)
        view.append(f"range {fmt_bytes(k['low'])} - {fmt_bytes(k['high'])} per token = "
                    f"{float(equivalent_kv_layers(k['low'])):.2g}-{float(equivalent_kv_layers(k['high'])):.2g} KV "
                    f"layers of 8 heads x 128 at fp8 (2,048 B each); per-layer GQA at 61-80 layers would be "
                    f"100-300 KB")
        for a in k["assumptions"]:
            view.append(f"[dim]assumption: {a}[/dim]")
    else:
        view.append("\n[dim]no long-context price step on this sheet: KV size not inferable from it[/dim]")
    op = out["operating_point"]
    line = (f"output/input = {op['price_ratio']:.3g}: at short context "
            f"B = {op['batch_over_balance_at_short_context']:.2g}"
            f" x B*; at B = B*, L = {op['context_over_crossover_at_balance']:.3g} x L_x")
    if "context_at_balance_tokens" in op:
        line += f" (~{op['context_at_balance_tokens']:,.0f} tokens if L_x is the price step)"
    view.append(f"\n[bold cyan]Operating point[/bold cyan]\n{line}")
    view.append("[dim]assumption: prices proportional to roofline cost (r = max(1, B*/B + L/L_x)); providers "
                "also price margin and demand, so this is a reading, not a law[/dim]")
    if "cache_tiers" in out:
        ct = out["cache_tiers"]
        view.append(f"\n[bold cyan]Cache prices against {ct['system']} memory tiers[/bold cyan]"
                    + (f" (KV {fmt_bytes(ct['kv_bytes_per_token'])}/token)" if ct["kv_bytes_per_token"] else ""))
        table = Table("hold", "surcharge $/Mtok-h", "tier", "drain", "Gray's tier", "price $/GB-h", "tier cost $/GB-h")
        for f in ct["fits"]:
            table.add_row(fmt_seconds(f["hold_s"]), f"{f['hold_price_usd_per_mtok_hour']:.3g}", f["tier"],
                          "?" if f["drain_s"] is None else fmt_seconds(f["drain_s"]),
                          {True: "yes", False: "no", None: "?"}[f["consistent"]],
                          "-" if f["price_usd_per_byte_hour"] is None else f"{f['price_usd_per_byte_hour'] * 1e9:.3g}",
                          "-" if f["tier_cost_usd_per_byte_hour"] is None
                          else f"{f['tier_cost_usd_per_byte_hour'] * 1e9:.3g}")
        view.append(table)
        for e in ct["break_even_holds"]:
            view.append(f"break-even {e['faster']} -> {e['slower']}: {fmt_seconds(e['hold_s'])}")
        for row in ct["five_minute_tier"]:
            view.append(f"held {fmt_seconds(row['hold_s'])}: the five-minute rule puts it in "
                        f"[bold]{row['tier'] or 'no tier (price at least two)'}[/bold]")
        view.append("[dim]five-minute rule (Gray & Putzolu 1987): a cache re-read every T stays in the faster of "
                    "two tiers while T <= T* = slower drain time x slower $/B / faster $/B[/dim]")
    ci = out.get("cached_input")
    if ci is not None:
        view.append(f"\n[bold cyan]Cached input[/bold cyan] {money(ci['cached_input_usd_per_mtok'])} = "
                    f"{ci['cached_input_multiplier']:.3g}x the input price; blended input at hit rate h with "
                    f"{ci['cached_fraction']:.0%} of a hit prompt cached: " + ", ".join(
                        f"h={b['cache_hit_rate']:g} {money(b['usd_per_mtok_input_blended'])}"
                        for b in ci["blended"]))
        view.append("hits lose no money while a cached token costs at most " + ", ".join(
            f"{r['cost_ratio']:.3g}x an uncached one at {r['uncached_margin']:.0%} uncached margin"
            for r in ci["max_cached_cost_ratio"]) + " (llmecon cost --cache-hit predicts the ratio for a model)")
        view.append(f"[dim]{ci['note']}[/dim]")
    for p in out["premiums"]:
        view.append(f"\n[bold cyan]Premium '{p['premium']}'[/bold cyan]: {p['price_ratio']:g}x price for "
                    f"{p['speedup']:g}x speed => regular batch = {p['batch_ratio']:g}x the fast batch; pure "
                    f"max-roofline: regular at {p['regular_batch_over_balance']:g} B*, fast at "
                    f"{p['fast_batch_over_balance']:.3g} B*")
    return view


def tiers_view(r, req) -> list:
    """``llmecon prices tiers``: the schedule, its notes and, with a provider's sheet, where it loses money."""
    from rich.table import Table

    dep, sched, sheet, out = r.deployment, r.schedule, r.sheet, r.view
    price_per_chip_hour, utilization, margin = req.price_per_chip_hour, req.utilization, req.margin
    view: list = []
    view.append(f"[bold]llmecon prices tiers[/bold] {dep.model.name} on {dep.system.name} ({dep.plan.label()}), "
                f"${price_per_chip_hour:g}/chip-hour, {utilization:.0%} utilised, margin {margin:.0%}")
    table = Table("prompt up to", "input $/Mtok", "x", "output $/Mtok", "x")
    for t in out["schedule"]["tiers"]:
        table.add_row(tokens(t["up_to_tokens"]), money(t["input_usd_per_mtok"]), f"{t['input_multiplier']:.3g}",
                      money(t["output_usd_per_mtok"]), f"{t['output_multiplier']:.3g}")
    view.append(table)
    for note in out["notes"]:
        view.append(f"[dim]{note}[/dim]")
    if sched.uncovered_from is not None:
        view.append(f"[yellow]contexts from {tokens(sched.uncovered_from)} tokens are not covered (they do not "
                    f"fit, or the tiers ran out)[/yellow]")
    if sheet is not None:
        losing = out["check"]["losing"]
        for kind in ("input", "output"):
            spans = "; ".join(f"{tokens(r['from_tokens'])}-{tokens(r['to_tokens'])}" for r in losing[kind])
            view.append(f"{sheet.provider} {sheet.model} {kind}: "
                        + (f"[red]below this cost at {spans} tokens[/red]" if spans
                           else "covers this cost everywhere"))
        view.append("[dim]assumption: the provider's model costs what this model costs on this system "
                    "(a stand-in; closed models' sizes are unknown)[/dim]")
    return view
