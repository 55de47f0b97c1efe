"""Context, cache and pricing results -> JSON-ready dicts and figures (the report layer for
``context``, ``kvcache`` and ``pricing``; formatting for people stays in the CLI tables)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from ..spec.deployment import Deployment
from ..econ.context import ContextEconomics, PriceCheck, TierSchedule, usd_per_mtok
from ..spec.hardware import MemoryTier
from ..econ.kvcache import CachePlacement
from ..econ.pricing import CacheTierFit, FastModeInference, KvFromPrice, ServingCost
from ..spec.prices import PriceSheet
from .tco import price_fields
from ..units import json_fields, json_num, to_json


def context_floor_dict(e: ContextEconomics, floor: ContextEconomics | None, *,
                       price_per_chip_hour: float | None = None, utilization: float = 1.0) -> dict | None:
    """``context --json`` ``ideal_floor``: the roofline twin's curve (``econ.floor.context_floor``) at the
    same contexts and batches — decode step, $/Mtok out and in when priced, calibrated step over ideal;
    None without a floor (an ideal deployment)."""
    if floor is None:
        return None
    c, f = e.curve, floor.curve
    step = np.broadcast_to(np.asarray(c.decode.step_s, dtype=float), c.context.shape)
    ideal = np.broadcast_to(np.asarray(f.decode.step_s, dtype=float), f.context.shape)
    rows = []
    for i, length in enumerate(f.context):
        fits = bool(f.fits[i])
        row = {"context": json_num(length), "decode_step_s": json_num(ideal[i]) if fits else None,
               "calibrated_over_ideal": json_num(step[i] / ideal[i]) if fits and c.fits[i] else None}
        if price_per_chip_hour is not None:
            kw = dict(price_per_chip_hour=price_per_chip_hour, utilization=utilization)
            row["output_usd_per_mtok"] = json_num(usd_per_mtok(f.decode_chip_s_per_token[i], **kw)) if fits else None
            row["input_usd_per_mtok"] = json_num(usd_per_mtok(f.prefill_chip_s_per_token[i], **kw))
        rows.append(row)
    return {"mode": "ideal", "curve": rows}


def context_floor_row(floor_dict: dict | None) -> list[tuple[str, str]]:
    """The table row of ``context_floor_dict``: its longest fitting context (none without a floor)."""
    rows = [r for r in (floor_dict or {}).get("curve", ()) if r["calibrated_over_ideal"] is not None]
    if not rows:
        return []
    from ..units import fmt_seconds

    r = rows[-1]
    cost = "" if r.get("output_usd_per_mtok") is None else f", ${r['output_usd_per_mtok']:.4g}/Mtok out"
    return [("ideal floor", f"{fmt_seconds(r['decode_step_s'])} per decode step{cost} at {r['context']:,.0f} tokens "
                            f"on the roofline, a lower bound (calibrated is {r['calibrated_over_ideal']:.2f}x it)")]


def context_dict(e: ContextEconomics, dep: Deployment, *, price_per_chip_hour: float | None = None,
                 utilization: float = 1.0, rate=None, floor: ContextEconomics | None = None) -> dict:
    """``llmecon context --json``. Costs in chip-seconds per token; USD per Mtok when priced; ``rate`` (an
    ``econ.tco.TcoRate``): the price came from TCO inputs (``price_source``, ``tco``, as ``cost``); ``floor``
    (``econ.floor.context_floor``): the ideal floor at the same contexts (``ideal_floor``, null without)."""
    c = e.curve
    decode_cost, prefill_cost = c.decode_chip_s_per_token, c.prefill_chip_s_per_token
    rows = []
    bound = np.broadcast_to(np.asarray(c.decode.bound), c.context.shape)
    step_s = np.broadcast_to(np.asarray(c.decode.step_s, dtype=float), c.context.shape)
    for i, length in enumerate(c.context):
        fits = bool(c.fits[i])
        row = {"context": json_num(length), "kv_per_sequence_bytes": json_num(c.kv_per_sequence_bytes[i]),
               "kv_read_per_sequence_bytes": json_num(c.kv_read_per_sequence_bytes[i]),
               "max_sequences": json_num(c.max_sequences[i]), "batch": json_num(c.batch[i]) if fits else None,
               "decode_step_s": json_num(step_s[i]) if fits else None, "bound": str(bound[i]) if fits else None,
               "decode_chip_s_per_token": json_num(decode_cost[i]) if fits else None,
               "prefill_chip_s_per_token": json_num(prefill_cost[i])}
        if price_per_chip_hour is not None:
            kw = dict(price_per_chip_hour=price_per_chip_hour, utilization=utilization)
            row["output_usd_per_mtok"] = json_num(usd_per_mtok(decode_cost[i], **kw)) if fits else None
            row["input_usd_per_mtok"] = json_num(usd_per_mtok(prefill_cost[i], **kw))
        rows.append(row)
    return {
        "model": dep.model.name, "system": dep.system.name, "plan": dep.plan.as_dict(), "mode": dep.mode,
        "fidelity": dep.fidelity, **dep.fidelity_fields,
        "attention": dep.model.attention_label, "kv_dtype": dep.kv_dtype or dep.model.kv_dtype,
        **json_fields(e, "kv_bytes_per_token", "kv_read_bytes_per_token", "kv_sharing_factor", "crossover_context",
                      "balance_batch", "max_context_at_batch_1", "kv_capacity_tokens", "free_hbm_bytes",
                      "weights_per_chip_bytes", "attention_flops_per_kv_byte", "attention_flops_per_kv_byte_per_chip",
                      "attention_ridge_flops_per_byte"),
        "model_max_context": e.model_max_context or None,
        "attention_compute_bound": e.attention_compute_bound, "notes": context_notes(e, dep),
        "price_per_chip_hour": price_per_chip_hour, **price_fields(price_per_chip_hour, rate, dep.system.name),
        "utilization": utilization, "curve": rows,
        "ideal_floor": context_floor_dict(e, floor, price_per_chip_hour=price_per_chip_hour, utilization=utilization),
    }


def context_limit_note(model_name: str, model_max_context: int, kv_capacity_tokens: float) -> str | None:
    """What limits the longest context shown: the model's trained context (and what memory would
    hold), or a statement that the model's context is unknown and nothing was capped."""
    if not model_max_context:
        return (f"{model_name}'s trained context is unknown (its config gives no max_position_embeddings): "
                "contexts are not capped by it, only by memory")
    if kv_capacity_tokens > model_max_context:
        cap = "unbounded" if not math.isfinite(kv_capacity_tokens) else f"{kv_capacity_tokens:,.0f}"
        return (f"contexts stop at {model_name}'s {model_max_context:,}-token context (max_position_embeddings); "
                f"memory would hold {cap} KV tokens across sequences")
    return None


def context_notes(e: ContextEconomics, dep: Deployment) -> list[str]:
    """Plain-language notes on ``context``'s numbers: why the crossover is what it is on this plan
    (agreeing with the curve's own bound column), and what caps the longest context."""
    notes = []
    plan = dep.plan.label()
    ridge, per_chip, per_seq = (e.attention_ridge_flops_per_byte, e.attention_flops_per_kv_byte_per_chip,
                                e.attention_flops_per_kv_byte)
    c = e.curve
    last = int(np.nonzero(c.fits)[0][-1]) if np.any(c.fits) else None
    if not math.isfinite(e.crossover_context) and e.attention_compute_bound:
        text = (f"KV reads never outweigh compute per sequence: on each chip under {plan} attention does "
                f"{per_chip:.0f} FLOP per KV byte read, above the chip's bf16 ridge {ridge:.0f}, so every cached "
                "token adds more compute time than read time")
        if last is not None:
            bound = str(np.broadcast_to(np.asarray(c.decode.bound), c.context.shape)[last])
            text += (f"; at {c.context[last]:,.0f} tokens (batch {c.batch[last]:,.0f}) the step is {bound}-bound"
                     + (" through weight plus KV reads" if bound == "memory" else ""))
        notes.append(text)
    elif not math.isfinite(e.crossover_context):
        notes.append("KV stops growing with context (every attending layer is windowed): KV reads never outweigh "
                     "compute per sequence")
    elif per_seq > ridge >= per_chip:
        notes.append(f"attention does {per_seq:.0f} FLOP per KV byte per sequence, above the chip's bf16 ridge "
                     f"{ridge:.0f}, but under {plan} each chip reads all of a sequence's KV and does "
                     f"1/{per_seq / per_chip:.3g} of its attention ({per_chip:.0f} FLOP per KV byte per chip): "
                     f"KV reads outweigh compute from L_x = {e.crossover_context:,.0f} tokens")
    limit = context_limit_note(dep.model.name, e.model_max_context, e.kv_capacity_tokens)
    if limit:
        notes.append(limit)
    return notes


def context_figure(e: ContextEconomics, dep: Deployment, *, price_per_chip_hour: float | None = None,
                   utilization: float = 1.0):
    """Cost per token against context (log-log; USD per Mtok when priced, else chip-hours per Mtok)
    and the memory wall (max concurrent sequences), as a matplotlib ``Figure`` (no pyplot state).
    Needs matplotlib."""
    from matplotlib.figure import Figure

    c = e.curve
    if price_per_chip_hour is None:
        scale, unit = 1e6 / 3600.0, "chip-hours per million tokens"
    else:
        scale, unit = float(usd_per_mtok(1.0, price_per_chip_hour=price_per_chip_hour, utilization=utilization)), \
            "USD per million tokens"
    fig = Figure(figsize=(11, 4.2))
    ax1, ax2 = fig.subplots(1, 2)
    ax1.loglog(c.context, c.decode_chip_s_per_token * scale, lw=2, color="C0", label="output (decode, max batch)")
    ax1.loglog(c.context, c.prefill_chip_s_per_token * scale, lw=2, color="C1", label="input (prefill)")
    if math.isfinite(e.crossover_context):
        ax1.axvline(e.crossover_context, color="grey", ls="-.", lw=0.8, label="crossover L_x")
    ax1.set_xlabel("context (tokens)")
    ax1.set_ylabel(unit)
    ax1.set_title("Cost per token vs context")
    ax1.legend(fontsize=8)
    ax2.loglog(c.context, np.maximum(c.max_sequences, 0.5), lw=2, color="C2")
    ax2.set_xlabel("context (tokens)")
    ax2.set_ylabel("sequences that fit beside the weights")
    ax2.set_title("Memory wall")
    fig.suptitle(f"{dep.model.name} on {dep.system.name} ({dep.plan.label()}, {dep.mode})", fontsize=10)
    fig.tight_layout()
    return fig


def plot_context(e: ContextEconomics, dep: Deployment, path: str | Path, *, price_per_chip_hour: float | None = None,
                 utilization: float = 1.0):
    """Write :func:`context_figure` to ``path`` (PNG/SVG/PDF by its suffix). Needs matplotlib."""
    from .figure import write_figure

    write_figure(context_figure(e, dep, price_per_chip_hour=price_per_chip_hour, utilization=utilization), path)


def cost_dict(c: ServingCost, dep: Deployment, sheet: PriceSheet | None = None, hit=None, rate=None,
              power_basis: str = "facility", *, mode_requested: str | None = None,
              floor: ServingCost | None = None) -> dict:
    """``llmecon cost --json``; ``hit`` (an ``econ.cache_hit.CacheHitCost``) adds ``cache_hit`` and the
    blended list price; ``rate`` (an ``econ.tco.TcoRate`` or ``Rent``) says where the price came from. Output
    tokens/s per MW divide by the facility power (``econ.tco.power_for``) or, ``power_basis`` "tdp", the TDP.
    ``mode_requested`` (given: the key is added) is the mode asked for; ``floor``, the same deployment's ideal
    cost beside a calibrated one (``ideal_floor``, null when the cost is ideal)."""
    from ..econ.tco import power_for
    from .tco import priced_fields

    power = power_for(dep.system, rate, power_basis)
    out = {"model": dep.model.name, "system": dep.system.name, "plan": dep.plan.as_dict(), "mode": dep.mode,
           "fidelity": dep.fidelity, **dep.fidelity_fields,
           "context": c.context, "batch": c.batch, "decode_step_s": c.step_s, "chips": c.chips,
           "price_per_chip_hour": c.price_per_chip_hour, "utilization": c.utilization,
           "input_usd_per_mtok": c.input_usd_per_mtok, "output_usd_per_mtok": c.output_usd_per_mtok,
           "tpot_s": c.tpot_s if c.tpot_s is not None else c.step_s,
           "speculation": None if dep.speculation is None else dep.speculation.as_dict(),
           "output_tokens_per_s_per_chip": c.output_tokens_per_s_per_chip,
           "tokens_per_s_per_mw": power.tokens_per_s_per_mw(c.output_tokens_per_s_per_chip),
           **priced_fields(c.price_per_chip_hour, rate, power, dep.system.name)}
    if sheet is not None:
        price_in, price_out = sheet.price_at(c.context)
        m_in, m_out = c.margin_against(sheet)
        out["list_price"] = {"provider": sheet.provider, "model": sheet.model, "input_usd_per_mtok": price_in,
                             "output_usd_per_mtok": price_out, "input_margin": m_in, "output_margin": m_out,
                             "as_of": sheet.as_of, "status": sheet.status}
    if hit is not None:
        out["cache_hit"] = {"cache_hit_rate": hit.cache_hit_rate, "cached_prefix_tokens": hit.cached_prefix_tokens,
                            "prompt_tokens": hit.prompt_tokens, "usd_per_mtok_input": hit.input_usd_per_mtok,
                            "usd_per_mtok_input_hit": hit.hit_input_usd_per_mtok,
                            "usd_per_mtok_input_blended": hit.input_usd_per_mtok_blended,
                            "hit_cost_ratio": hit.hit_cost_ratio,
                            "cached_token_cost_ratio": hit.cached_token_cost_ratio,
                            "hold_s": hit.hold_s, "cache_tier": hit.cache_tier,
                            "usd_per_mtok_hold": hit.hold_usd_per_mtok, "usd_per_mtok_fetch": hit.fetch_usd_per_mtok,
                            "usd_per_mtok_input_hit_all_in": hit.hit_all_in_usd_per_mtok,
                            "break_even_hit_rate": hit.break_even_hit_rate}
        if sheet is not None and sheet.cached_input_usd_per_mtok is not None:
            from ..econ.cache_hit import blended_list_price

            lp = out["list_price"]
            m = sheet.cached_input_usd_per_mtok / sheet.input_usd_per_mtok
            blended = blended_list_price(input_usd_per_mtok=lp["input_usd_per_mtok"],
                                         cached_input_usd_per_mtok=lp["input_usd_per_mtok"] * m,
                                         cache_hit_rate=hit.cache_hit_rate,
                                         cached_fraction=hit.cached_prefix_tokens / hit.prompt_tokens)
            lp.update(cached_input_multiplier=m, usd_per_mtok_input_blended=blended,
                      input_margin_blended=1.0 - hit.input_usd_per_mtok_blended / blended)
    if mode_requested is not None:
        out["mode_requested"] = mode_requested
        out["ideal_floor"] = None if floor is None else {
            "mode": "ideal", "batch": floor.batch, "decode_step_s": floor.step_s,
            "input_usd_per_mtok": floor.input_usd_per_mtok, "output_usd_per_mtok": floor.output_usd_per_mtok}
    return out


def tier_row(t: MemoryTier) -> dict:
    return {"name": t.name, "kind": t.kind, "capacity_bytes": t.capacity_bytes,
            "bandwidth_bytes_per_s": t.bandwidth_bytes_per_s, "bandwidth_basis": t.bandwidth_basis,
            "drain_s": t.drain_s, "usd_per_hour": t.usd_per_hour, "usd_per_byte": t.usd_per_byte,
            "amortisation_s": t.amortisation_s, "price_source": t.price_source, "price_as_of": t.price_as_of,
            "status": t.status, "source": t.source, "notes": t.notes}


def break_even_rows(evens) -> list[dict]:
    """Gray's break-even intervals between adjacent priced tiers (``econ.kvcache.BreakEven``)."""
    return [{"faster": e.faster, "slower": e.slower, "hold_s": e.hold_s} for e in evens]


def placement_dict(p: CachePlacement, dep: Deployment) -> dict:
    return {"model": dep.model.name, "system": dep.system.name, "plan": dep.plan.as_dict(), "fidelity": dep.fidelity,
            **dep.fidelity_fields,
            "sequences": p.sequences, "context": p.context, "hold_s": p.hold_s, "bytes_total": p.bytes_total,
            "bytes_per_sequence": p.bytes_per_sequence, "recompute_s": p.recompute_s,
            "recompute_usd": p.recompute_usd, "cheapest": p.cheapest, "five_minute_tier": p.five_minute_tier,
            "break_even_holds": break_even_rows(p.break_evens),
            "unranked_tiers": [{"tier": name, "why": why} for name, why in p.ladder.skipped],
            "options": [{"tier": o.tier, "free_capacity_bytes": o.capacity_bytes, "drain_s": o.drain_s,
                         "fits": o.fits, "consistent": o.consistent, "retrieve_s": o.retrieve_s,
                         "hold_usd": o.hold_usd, "retrieve_usd": o.retrieve_usd, "total_usd": o.total_usd}
                        for o in p.options]}


def sheet_row(s: PriceSheet) -> dict:
    return {"provider": s.provider, "model": s.model, "input_usd_per_mtok": s.input_usd_per_mtok,
            "output_usd_per_mtok": s.output_usd_per_mtok,
            "output_input_ratio": s.output_input_ratio if s.input_usd_per_mtok else None,
            "cached_input_usd_per_mtok": s.cached_input_usd_per_mtok,
            "cache_writes": [{"hold_s": w.hold_s, "usd_per_mtok": w.usd_per_mtok} for w in s.cache_writes],
            "cache_storage_usd_per_mtok_hour": s.cache_storage_usd_per_mtok_hour,
            "long_context": [{"above_tokens": t.above_tokens, "input_usd_per_mtok": t.input_usd_per_mtok,
                              "output_usd_per_mtok": t.output_usd_per_mtok} for t in s.long_context],
            "premiums": [{"name": p.name, "input_usd_per_mtok": p.input_usd_per_mtok,
                          "output_usd_per_mtok": p.output_usd_per_mtok, "speedup": p.speedup, "note": p.note}
                         for p in s.premiums],
            "status": s.status, "source": s.source, "as_of": s.as_of, "notes": s.notes}


def kv_inference_dict(k: KvFromPrice) -> dict:
    return {"crossover_context": k.crossover_context, "input_uplift": k.input_uplift,
            "output_uplift": k.output_uplift, "active_params": list(k.active_params),
            "flops_per_byte": [{"label": lab, "value": r} for lab, r in zip(k.flops_per_byte_labels, k.flops_per_byte)],
            "kv_bytes_per_token": to_json(np.asarray(k.kv_bytes_per_token, dtype=float)), "low": k.low,
            "high": k.high, "assumptions": list(k.assumptions)}


def tier_fit_rows(fits: list[CacheTierFit]) -> list[dict]:
    return [{"hold_s": f.hold_s, "tier": f.tier, "drain_s": f.drain_s,
             "hold_price_usd_per_mtok_hour": f.hold_price_usd_per_mtok_hour,
             "price_usd_per_byte_hour": f.price_usd_per_byte_hour,
             "tier_cost_usd_per_byte_hour": f.tier_cost_usd_per_byte_hour, "consistent": f.consistent,
             "covers_cost": f.covers_cost} for f in fits]


def fast_mode_dict(name: str, f: FastModeInference) -> dict:
    return {"premium": name, "price_ratio": f.price_ratio, "speedup": f.speedup, "batch_ratio": f.batch_ratio,
            "regular_batch_over_balance": f.regular_over_balance, "fast_batch_over_balance": f.fast_over_balance,
            "max_roofline_cost_ratio": f.max_model_cost_ratio, "additive_model_load": f.additive_load}


def schedule_dict(s: TierSchedule) -> dict:
    return {"margin": s.margin, "uncovered_from": s.uncovered_from,
            "tiers": [{"up_to_tokens": u, "input_usd_per_mtok": i, "output_usd_per_mtok": o,
                       "input_multiplier": mi, "output_multiplier": mo}
                      for u, i, o, mi, mo in zip(s.upper_tokens, s.input_usd_per_mtok, s.output_usd_per_mtok,
                                                 s.input_multipliers, s.output_multipliers)]}


def price_check_dict(p: PriceCheck, sheet: PriceSheet) -> dict:
    return {"provider": sheet.provider, "model": sheet.model, "losing": {
        k: [{"from_tokens": a, "to_tokens": b} for a, b in v] for k, v in p.losing_contexts().items()},
        "rows": [{"context": json_num(c), "input_price": json_num(ip), "input_cost": json_num(ic),
                  "output_price": json_num(op), "output_cost": json_num(oc)} for c, ip, ic, op, oc in
                 zip(p.context, p.input_price, p.input_cost, p.output_price, p.output_cost)]}
