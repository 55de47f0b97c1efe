"""CLI commands for API price sheets: ``prices list|infer|tiers``. Thin: parse -> library call -> report (see
cli/__init__.py); the options and helpers they share with ``cost`` live in cli/context.py."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from ..commands.cache import device_tiers, tier_prices
from ..commands.prices import TiersRequest
from ..report.tables import money as _money, tokens as _tokens
from .options import JsonOpt, _console, _emit_json, app, takes

prices_app = typer.Typer(add_completion=False, no_args_is_help=True,
                         help="API price sheets: list them, read them backwards, design context tiers.")
app.add_typer(prices_app, name="prices")

OptPriceOpt = Annotated[Optional[float], typer.Option("--price-per-chip-hour",
                                                      help="Rent of one accelerator, USD per hour (adds $ columns).")]
UtilOpt = Annotated[float, typer.Option("--utilization", help="Share of paid time the chips serve at this "
                                                              "batch (0-1]; cost is divided by it.")]
ProviderOpt = Annotated[Optional[str], typer.Option("--provider", help="Price-sheet provider (llmecon prices list).")]
PriceModelOpt = Annotated[Optional[str], typer.Option("--price-model", help="Model name on the provider's sheet.")]
CacheHitOpt = Annotated[Optional[float], typer.Option("--cache-hit", help="Prefix-cache hit rate in [0, 1]: adds the "
                                                  "blended input $/Mtok (a hit prefills only the uncached tokens).")]


@prices_app.command("list")
def prices_list(provider: ProviderOpt = None, cache_hit: CacheHitOpt = None,
                cached_fraction: Annotated[float, typer.Option("--cached-fraction", help="With --cache-hit: share "
                                                               "of a hit prompt billed at the cached price.")] = 1.0,
                as_json: JsonOpt = False) -> None:
    """Every catalogued price sheet (USD per million tokens, dated and sourced). --cache-hit RATE adds
    the blended input price, (1 - h·f)·input + h·f·cached, where the sheet prices cached input."""
    from ..commands.prices import price_list

    rows = price_list(provider=provider, cache_hit=cache_hit, cached_fraction=cached_fraction)
    if as_json:
        _emit_json({"sheets": rows})
        return
    from rich.table import Table

    hit_col = () if cache_hit is None else (f"blended in (h={cache_hit:g})",)
    console = _console()
    if console.width < 150:  # issue 35: a narrow terminal gets the prices, the tiers as lines below
        _narrow_list(console, rows, hit_col, cache_hit)
        return
    table = Table("provider", "model", "input", "output", "out/in", "cached", *hit_col, "cache writes",
                  "long context", "premiums", "status")
    for r in rows:
        writes, longc, prem = _extras(r)
        ratio = r["output_input_ratio"]
        table.add_row(r["provider"], r["model"], _money(r["input_usd_per_mtok"]), _money(r["output_usd_per_mtok"]),
                      "-" if ratio is None else f"{ratio:.2g}x", _money(r["cached_input_usd_per_mtok"]),
                      *(() if cache_hit is None else (_money(r["usd_per_mtok_input_blended"]),)), writes or "-",
                      longc or "-", prem or "-", r["status"])
    console.print(table)


def _extras(r: dict) -> tuple[str, str, str]:
    """(cache writes, long-context tiers, premiums) of a sheet row, as text."""
    writes = ", ".join(f"{w['hold_s'] / 60:g} min {_money(w['usd_per_mtok'])}" for w in r["cache_writes"])
    longc = ", ".join(f">{t['above_tokens'] / 1000:g}K {_money(t['input_usd_per_mtok'])}/"
                      f"{_money(t['output_usd_per_mtok'])}" for t in r["long_context"])
    prem = ", ".join(f"{p['name']} {_money(p['input_usd_per_mtok'])}/{_money(p['output_usd_per_mtok'])}"
                     for p in r["premiums"])
    return writes, longc, prem


def _narrow_list(console, rows: list[dict], hit_col: tuple, cache_hit) -> None:
    """``prices list`` under 150 columns: one row per sheet with the prices that fit 80 columns, then each
    sheet's cache writes, long-context tiers and premiums as a line (``--json`` has every field)."""
    from rich import box
    from rich.table import Table

    table = Table("provider/model", "in", "out", "cached", *hit_col, "status", box=box.SIMPLE_HEAD, pad_edge=False)
    notes = []
    for r in rows:
        name = f"{r['provider']}/{r['model']}"
        table.add_row(name, _money(r["input_usd_per_mtok"]), _money(r["output_usd_per_mtok"]),
                      _money(r["cached_input_usd_per_mtok"]),
                      *(() if cache_hit is None else (_money(r["usd_per_mtok_input_blended"]),)), r["status"])
        parts = [f"{label} {text}" for label, text in zip(("cache writes", "long context", "premiums"), _extras(r))
                 if text]
        if parts:
            notes.append(f"{name}: " + "; ".join(parts))
    console.print(table)
    for line in notes:
        console.print(line, soft_wrap=False, markup=False, highlight=False)
    console.print("USD per million tokens; wider terminals show one table; --json has every field.")


@prices_app.command("infer")
def prices_infer(
    provider: Annotated[str, typer.Option("--provider", help="Price-sheet provider (llmecon prices list).")],
    model: Annotated[str, typer.Option("--model", "-m", help="Model name on the provider's sheet.")],
    active_params: Annotated[list[float], typer.Option("--active-params", help="Assumed active parameters "
                                                                               "(repeatable).")] = [30e9, 100e9, 300e9],
    chip: Annotated[list[str], typer.Option("--chip", help="Accelerators the provider might serve on "
                                                           "(repeatable).")] = ["h100-sxm", "gb200", "tpu-v6e"],
    dtype: Annotated[list[str], typer.Option("--dtype", help="Weight formats to consider (repeatable).")]
    = ["bf16", "fp8"],
    kv_bytes_per_token: Annotated[Optional[float], typer.Option("--kv-bytes-per-token", help="KV size for the cache "
                                                               "analysis (default: geometric middle of the "
                                                               "inferred range).")] = None,
    system: Annotated[str, typer.Option("--system", "-s", help="System whose memory tiers the cache prices are "
                                                                "mapped onto.")] = "hgx-h100",
    device: Annotated[list[str], typer.Option("--device", help="Add a storage device tier NAME[:COUNT].")]
    = ["pm1743:8", "exos-x24:8"],
    tier_price: Annotated[list[str], typer.Option("--tier-price", help="NAME=USD_PER_HOUR for a tier (repeatable): "
                                                                       "Gray's rule needs at least two priced.")]
    = [],
    price_per_chip_hour: OptPriceOpt = None, cache_hit: CacheHitOpt = None,
    cached_fraction: Annotated[float, typer.Option("--cached-fraction", help="Share of a hit prompt billed at the "
                                                   "cached price (cached prefix / prompt), 0-1.")] = 1.0,
    as_json: JsonOpt = False,
) -> None:
    """Read a price sheet backwards: KV bytes per token from a long-context price step, the operating
    point its output/input ratio implies, memory tiers consistent with its cache prices, and the
    batch ratio behind a fast-mode premium. Every assumption is printed."""
    from ..commands.prices import infer

    out = infer(provider=provider, model=model, active_params=active_params, chips=chip, dtypes=dtype, system=system,
                extra_tiers=device_tiers(device), kv_bytes_per_token=kv_bytes_per_token,
                price_per_chip_hour=price_per_chip_hour, tier_prices=tier_prices(tier_price),
                cache_hit_rate=cache_hit, cached_fraction=cached_fraction)
    if as_json:
        _emit_json(out)
        return
    _print_infer(out)


def _print_infer(out: dict) -> None:
    from rich.table import Table

    from ..econ.pricing import equivalent_kv_layers

    from ..units import fmt_bytes, fmt_seconds

    console = _console()
    console.print(f"[bold]llmecon prices infer[/bold] {out['provider']}/{out['model']} "
                  f"(prices {out['status']}, {out['as_of']})")
    k = out.get("kv_from_price_step")
    if k is not None:
        console.print(f"\n[bold cyan]KV bytes per token from the >{k['crossover_context']:,.0f}-token price step"
                      f"[/bold cyan] (input x{k['input_uplift']:g}, output x{k['output_uplift']:g})")
        table = Table("N_active", *(f["label"] for f in k["flops_per_byte"]))
        for n, row in zip(k["active_params"], k["kv_bytes_per_token"]):
            table.add_row(f"{n / 1e9:g}B", *(fmt_bytes(v) for v in row))
        console.print(table)
        console.print(f"range {fmt_bytes(k['low'])} - {fmt_bytes(k['high'])} per token = "
                      f"{float(equivalent_kv_layers(k['low'])):.2g}-{float(equivalent_kv_layers(k['high'])):.2g} KV "
                      f"layers of 8 heads x 128 at fp8 (2,048 B each); per-layer GQA at 61-80 layers would be "
                      f"100-300 KB")
        for a in k["assumptions"]:
            console.print(f"[dim]assumption: {a}[/dim]")
    else:
        console.print("\n[dim]no long-context price step on this sheet: KV size not inferable from it[/dim]")
    op = out["operating_point"]
    line = (f"output/input = {op['price_ratio']:.3g}: at short context "
            f"B = {op['batch_over_balance_at_short_context']:.2g}"
            f" x B*; at B = B*, L = {op['context_over_crossover_at_balance']:.3g} x L_x")
    if "context_at_balance_tokens" in op:
        line += f" (~{op['context_at_balance_tokens']:,.0f} tokens if L_x is the price step)"
    console.print(f"\n[bold cyan]Operating point[/bold cyan]\n{line}")
    console.print("[dim]assumption: prices proportional to roofline cost (r = max(1, B*/B + L/L_x)); providers "
                  "also price margin and demand, so this is a reading, not a law[/dim]")
    if "cache_tiers" in out:
        ct = out["cache_tiers"]
        console.print(f"\n[bold cyan]Cache prices against {ct['system']} memory tiers[/bold cyan]"
                      + (f" (KV {fmt_bytes(ct['kv_bytes_per_token'])}/token)" if ct["kv_bytes_per_token"] else ""))
        table = Table("hold", "surcharge $/Mtok-h", "tier", "drain", "Gray's tier", "price $/GB-h", "tier cost $/GB-h")
        for f in ct["fits"]:
            table.add_row(fmt_seconds(f["hold_s"]), f"{f['hold_price_usd_per_mtok_hour']:.3g}", f["tier"],
                          "?" if f["drain_s"] is None else fmt_seconds(f["drain_s"]),
                          {True: "yes", False: "no", None: "?"}[f["consistent"]],
                          "-" if f["price_usd_per_byte_hour"] is None else f"{f['price_usd_per_byte_hour'] * 1e9:.3g}",
                          "-" if f["tier_cost_usd_per_byte_hour"] is None
                          else f"{f['tier_cost_usd_per_byte_hour'] * 1e9:.3g}")
        console.print(table)
        for e in ct["break_even_holds"]:
            console.print(f"break-even {e['faster']} -> {e['slower']}: {fmt_seconds(e['hold_s'])}")
        for row in ct["five_minute_tier"]:
            console.print(f"held {fmt_seconds(row['hold_s'])}: the five-minute rule puts it in "
                          f"[bold]{row['tier'] or 'no tier (price at least two)'}[/bold]")
        console.print("[dim]five-minute rule (Gray & Putzolu 1987): a cache re-read every T stays in the faster of "
                      "two tiers while T <= T* = slower drain time x slower $/B / faster $/B[/dim]")
    ci = out.get("cached_input")
    if ci is not None:
        console.print(f"\n[bold cyan]Cached input[/bold cyan] {_money(ci['cached_input_usd_per_mtok'])} = "
                      f"{ci['cached_input_multiplier']:.3g}x the input price; blended input at hit rate h with "
                      f"{ci['cached_fraction']:.0%} of a hit prompt cached: " + ", ".join(
                          f"h={b['cache_hit_rate']:g} {_money(b['usd_per_mtok_input_blended'])}"
                          for b in ci["blended"]))
        console.print("hits lose no money while a cached token costs at most " + ", ".join(
            f"{r['cost_ratio']:.3g}x an uncached one at {r['uncached_margin']:.0%} uncached margin"
            for r in ci["max_cached_cost_ratio"]) + " (llmecon cost --cache-hit predicts the ratio for a model)")
        console.print(f"[dim]{ci['note']}[/dim]")
    for p in out["premiums"]:
        console.print(f"\n[bold cyan]Premium '{p['premium']}'[/bold cyan]: {p['price_ratio']:g}x price for "
                      f"{p['speedup']:g}x speed => regular batch = {p['batch_ratio']:g}x the fast batch; pure "
                      f"max-roofline: regular at {p['regular_batch_over_balance']:g} B*, fast at "
                      f"{p['fast_batch_over_balance']:.3g} B*")


@prices_app.command("tiers")
@takes(TiersRequest)
def prices_tiers(req: TiersRequest, as_json: JsonOpt = False) -> None:
    """Design context-length price tiers that never sell below cost on a given deployment, and check a
    provider's published tiers against the same cost curve."""
    from ..commands.prices import tiers

    r = tiers(req)
    dep, sched, sheet, out = r.deployment, r.schedule, r.sheet, r.view
    price_per_chip_hour, utilization, margin = req.price_per_chip_hour, req.utilization, req.margin
    if as_json:
        _emit_json(out)
        return
    from rich.table import Table

    console = _console()
    console.print(f"[bold]llmecon prices tiers[/bold] {dep.model.name} on {dep.system.name} ({dep.plan.label()}), "
                  f"${price_per_chip_hour:g}/chip-hour, {utilization:.0%} utilised, margin {margin:.0%}")
    table = Table("prompt up to", "input $/Mtok", "x", "output $/Mtok", "x")
    for t in out["schedule"]["tiers"]:
        table.add_row(_tokens(t["up_to_tokens"]), _money(t["input_usd_per_mtok"]), f"{t['input_multiplier']:.3g}",
                      _money(t["output_usd_per_mtok"]), f"{t['output_multiplier']:.3g}")
    console.print(table)
    for note in out["notes"]:
        console.print(f"[dim]{note}[/dim]")
    if sched.uncovered_from is not None:
        console.print(f"[yellow]contexts from {_tokens(sched.uncovered_from)} tokens are not covered (they do not "
                      f"fit, or the tiers ran out)[/yellow]")
    if sheet is not None:
        losing = out["check"]["losing"]
        for kind in ("input", "output"):
            spans = "; ".join(f"{_tokens(r['from_tokens'])}-{_tokens(r['to_tokens'])}" for r in losing[kind])
            console.print(f"{sheet.provider} {sheet.model} {kind}: "
                          + (f"[red]below this cost at {spans} tokens[/red]" if spans
                             else "covers this cost everywhere"))
        console.print("[dim]assumption: the provider's model costs what this model costs on this system "
                      "(a stand-in; closed models' sizes are unknown)[/dim]")
