"""CLI commands for context length, KV-cache tiers and cost: ``context``, ``cost``, ``cache`` and ``catalog
tiers`` (``prices list|infer|tiers``: cli/prices.py). Thin: parse -> library call -> report (see
cli/__init__.py)."""

from __future__ import annotations

import math
from typing import Annotated, Optional

import typer

from .options import (DEFAULT_MODE, DEFAULT_MODEL, DEFAULT_SYSTEM, PowerBasisChoice, PowerBasisOpt, PriceBasis,
                      PriceBasisOpt,
                      AcceptanceOpt, DraftOpt, EngineOpt, EpOpt, JsonOpt, KvDtypeOpt, Mode,
    ModelOpt, ModeOpt, PpOpt, ProfileOpt, SpecTokensOpt, SystemOpt, TcoOpt, TpOpt, WeightDtypeOpt, _check_plot_path,
    _chip_hour_price, _console, _deployment, _emit_json, _fail, _kv_table, app, catalog_app)

PriceOpt = Annotated[float, typer.Option("--price-per-chip-hour", help="Rent of one accelerator, USD per hour.")]
OptPriceOpt = Annotated[Optional[float], typer.Option("--price-per-chip-hour",
                                                      help="Rent of one accelerator, USD per hour (adds $ columns).")]
UtilOpt = Annotated[float, typer.Option("--utilization", help="Share of paid time the chips serve at this "
                                                              "batch (0-1]; cost is divided by it.")]
ProviderOpt = Annotated[Optional[str], typer.Option("--provider", help="Price-sheet provider (llmecon prices list).")]
PriceModelOpt = Annotated[Optional[str], typer.Option("--price-model", help="Model name on the provider's sheet.")]
CacheHitOpt = Annotated[Optional[float], typer.Option("--cache-hit", help="Prefix-cache hit rate in [0, 1]: adds the "
                                                  "blended input $/Mtok (a hit prefills only the uncached tokens).")]
CacheHoldOpt = Annotated[float, typer.Option("--cache-hold", help="With --cache-hit: seconds each prefix is held for "
                                                                    "reuse, priced in the tier Gray's five-minute "
                                                                    "rule picks (0: holding not priced).")]
CachedPrefixOpt = Annotated[Optional[float], typer.Option("--cached-prefix", help="Tokens of each prompt cached on a "
                                                          "hit (default: all but the last).")]
KvShareOpt = Annotated[int, typer.Option("--kv-share", help="What-if: every N adjacent layers share one KV cache "
                                                            "(cross-layer attention). 1 = as configured.")]


def _dep(model, system, tp, ep, pp, weight_dtype, kv_dtype, mode, kv_share: int = 1, profile=None, spec_tokens=None,
         acceptance=None, draft=None, engine=None):
    from dataclasses import replace

    dep = _deployment(model, system, tp, ep, pp, weight_dtype, kv_dtype, mode, auto=True, profile=profile,
                      spec_tokens=spec_tokens, acceptance=acceptance, draft=draft, engine=engine)
    if kv_share != 1:
        dep = replace(dep, model=dep.model.with_kv_sharing(kv_share))
    return dep


def _sheet(provider: str | None, model: str | None):
    if provider is None and model is None:
        return None
    if provider is None or model is None:
        _fail("--provider and --price-model go together (see llmecon prices list)")
    from ..catalog.prices import get_price_sheet

    return get_price_sheet(provider, model)


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
def context_cmd(
    model: ModelOpt = DEFAULT_MODEL, system: SystemOpt = DEFAULT_SYSTEM,
    batch: Annotated[Optional[float], typer.Option("--batch", "-b", help="Fixed decode batch (default: the "
                                                                         "largest that fits at each context).")] = None,
    max_batch: Annotated[Optional[float], typer.Option("--max-batch", help="Cap on the memory-limited batch.")] = None,
    price_per_chip_hour: OptPriceOpt = None, tco: TcoOpt = None, price_basis: PriceBasisOpt = PriceBasis.tco,
    utilization: UtilOpt = 1.0, kv_share: KvShareOpt = 1,
    plot: Annotated[Optional[str], typer.Option("--plot", help="Write cost-vs-context figure (PNG/SVG/PDF).")] = None,
    weight_dtype: WeightDtypeOpt = None, kv_dtype: KvDtypeOpt = None, tp: TpOpt = None, ep: EpOpt = None,
    pp: PpOpt = None, mode: ModeOpt = DEFAULT_MODE, profile: ProfileOpt = None, engine: EngineOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """KV economics against context length: KV bytes per token, crossover context, memory wall, and
    cost per input and output token from 256 tokens to the longest context that fits."""
    from ..econ.context import context_economics, usd_per_mtok
    from ..report.context import context_dict, plot_context
    from ..units import fmt_bytes, fmt_seconds

    if plot:
        _check_plot_path(plot)
    dep = _dep(model, system, tp, ep, pp, weight_dtype, kv_dtype, mode, kv_share, profile=profile, engine=engine)
    price_per_chip_hour, rate = _chip_hour_price(dep.system, price_per_chip_hour, tco, default=price_basis)
    usd_per_mtok(0.0, price_per_chip_hour=price_per_chip_hour or 0.0, utilization=utilization)  # validate early
    e = context_economics(dep, batch=batch, batch_cap=max_batch)
    from ..econ.floor import context_floor
    d = context_dict(e, dep, price_per_chip_hour=price_per_chip_hour, utilization=utilization, rate=rate,
                     floor=context_floor(dep, e, batch=batch, batch_cap=max_batch))
    if plot:
        plot_context(e, dep, plot, price_per_chip_hour=price_per_chip_hour, utilization=utilization)
    if as_json:
        _emit_json(d)
        return
    from rich.table import Table

    from ..report.context import context_floor_row
    from ..report.tco import tco_line

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
def cost_cmd(
    price_per_chip_hour: OptPriceOpt = None, tco: TcoOpt = None, price_basis: PriceBasisOpt = PriceBasis.tco,
    power_basis: PowerBasisOpt = PowerBasisChoice.facility,
    model: ModelOpt = DEFAULT_MODEL, system: SystemOpt = DEFAULT_SYSTEM,
    context: Annotated[float, typer.Option("--context", "-L", help="Prompt / KV tokens per sequence.")] = 4096,
    batch: Annotated[Optional[float], typer.Option("--batch", "-b", help="Decode batch (default: the largest "
                                                                         "that fits).")] = None,
    utilization: UtilOpt = 1.0, provider: ProviderOpt = None, price_model: PriceModelOpt = None,
    weight_dtype: WeightDtypeOpt = None, kv_dtype: KvDtypeOpt = None, tp: TpOpt = None, ep: EpOpt = None,
    pp: PpOpt = None, mode: ModeOpt = DEFAULT_MODE, profile: ProfileOpt = None, engine: EngineOpt = None,
    spec_tokens: SpecTokensOpt = None,
    acceptance: AcceptanceOpt = None, draft: DraftOpt = None, cache_hit: CacheHitOpt = None,
    cached_prefix: CachedPrefixOpt = None, cache_hold: CacheHoldOpt = 300.0, as_json: JsonOpt = False,
) -> None:
    """$ per million input and output tokens for a deployment, and the margin against a list price.
    With --spec-tokens, output tokens are decoded speculatively (E tokens per verify step); with
    --cache-hit, input is blended over prefix-cache hits and misses (docs/assumptions.md)."""
    from ..econ.pricing import serving_cost
    from ..report.context import cost_dict

    dep = _dep(model, system, tp, ep, pp, weight_dtype, kv_dtype, mode, profile=profile, engine=engine,
               spec_tokens=spec_tokens,
               acceptance=acceptance, draft=draft)
    price_per_chip_hour, rate = _chip_hour_price(dep.system, price_per_chip_hour, tco, required=True,
                                                 default=price_basis)
    sheet = _sheet(provider, price_model)
    if cache_hit is not None or cached_prefix is not None:
        from ..econ.cache_hit import check_cache_hit

        check_cache_hit(cache_hit_rate=cache_hit, cached_prefix_tokens=cached_prefix, prompt_tokens=context,
                        max_context=dep.model.max_context)
    c = serving_cost(dep, context=context, price_per_chip_hour=price_per_chip_hour, utilization=utilization,
                     batch=batch)
    hit = None
    if cache_hit is not None:
        from ..econ.cache_hit import cache_hit_cost

        hit = cache_hit_cost(dep, context=context, cache_hit_rate=cache_hit, cached_prefix_tokens=cached_prefix,
                             price_per_chip_hour=price_per_chip_hour, utilization=utilization,
                             hold_s=cache_hold or None)
    floor = None
    if not dep.profile.is_ideal:  # the ideal floor beside a calibrated cost (issue 35): same plan and price
        from ..econ.batching import roofline_twin

        floor = serving_cost(roofline_twin(dep), context=context, price_per_chip_hour=price_per_chip_hour,
                             utilization=utilization, batch=batch)
    d = cost_dict(c, dep, sheet, hit, rate, power_basis=power_basis.value, mode_requested=mode.value, floor=floor)
    if as_json:
        _emit_json(d)
        return
    _print_cost(dep, c, d, rate=rate, floor=floor, hit=hit, sheet=sheet, cache_hit=cache_hit,
                price_per_chip_hour=price_per_chip_hour, utilization=utilization, context=context,
                power_basis=power_basis.value)


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


def _parse_tier_prices(items: list[str]) -> dict[str, float]:
    out = {}
    for item in items:
        name, sep, value = item.rpartition("=")
        if name.strip() in out:
            _fail(f"--tier-price: '{name.strip()}' given twice; give each tier's price once")
        try:
            out[name.strip()] = float(value)
        except ValueError:
            sep = ""
        if not sep or not name.strip():
            _fail(f"--tier-price {item!r}: expected NAME=USD_PER_HOUR, e.g. --tier-price 'host DDR5=1.5'")
    return out


def _parse_devices(items: list[str]):
    """--device NAME[:COUNT] items as storage memory tiers (catalogue devices)."""
    from ..catalog.hardware import device_tier

    tiers = []
    for item in items:
        name, _, count = item.partition(":")
        try:
            n = int(count) if count else 1
        except ValueError:
            _fail(f"--device {item!r}: expected NAME or NAME:COUNT, e.g. --device pm1743:8")
        tiers.append(device_tier(name.strip(), n))
    return tiers


@app.command("cache")
def cache_cmd(
    price_per_chip_hour: PriceOpt,
    sequences: Annotated[float, typer.Option("--sequences", "-n", help="Cached sequences (prefixes).")] = 100,
    context: Annotated[float, typer.Option("--context", "-L", help="Tokens per cached sequence.")] = 32768,
    hold: Annotated[str, typer.Option("--hold", help="How long each is kept before it is read again, "
                                                     "e.g. '5 min', '1 h', '30 s'.")] = "5 min",
    tier_price: Annotated[list[str], typer.Option("--tier-price", help="NAME=USD_PER_HOUR for a tier "
                                                                       "(repeatable); HBM is priced from the chips.")]
    = [],
    device: Annotated[list[str], typer.Option("--device", help="Add a storage device tier NAME[:COUNT] "
                                                               "(llmecon catalog tiers).")] = [],
    model: ModelOpt = DEFAULT_MODEL, system: SystemOpt = DEFAULT_SYSTEM,
    weight_dtype: WeightDtypeOpt = None, kv_dtype: KvDtypeOpt = None, tp: TpOpt = None, ep: EpOpt = None,
    pp: PpOpt = None, mode: ModeOpt = Mode.ideal, profile: ProfileOpt = None, engine: EngineOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Where to keep a KV/prefix cache: each memory tier (hold + read-back cost, drain time) against
    recomputing it by prefill; the tier Gray's five-minute rule picks from the tiers' prices."""
    from ..econ.kvcache import cache_placement, priced_tiers
    from ..report.context import placement_dict
    from ..units import fmt_bytes, fmt_seconds, parse

    hold_s = parse(hold, "s", field="--hold")
    dep = _dep(model, system, tp, ep, pp, weight_dtype, kv_dtype, mode, profile=profile, engine=engine)
    tiers = priced_tiers(dep, price_per_chip_hour=price_per_chip_hour, tier_prices=_parse_tier_prices(tier_price),
                         extra=_parse_devices(device))
    p = cache_placement(dep, tiers, sequences=sequences, context=context, hold_s=hold_s,
                        price_per_chip_hour=price_per_chip_hour)
    d = placement_dict(p, dep)
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
