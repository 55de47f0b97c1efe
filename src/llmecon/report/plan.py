"""Deployment-planner results as JSON-ready dicts, text rows and a frontier figure (``llmecon plan``).

Formatting only: every number, and what limits the best batch, comes from ``planner.PlanResult``.
"""

from __future__ import annotations

from pathlib import Path

from ..econ.planner import PhaseSearch, PlanResult, Point
from ..units import fmt_bytes, fmt_seconds, json_num
from .figure import pyplot, save_figure

ASSUMPTIONS = (
    "disaggregated serving: prefill and decode run on separate units, each planned on its own; the worker "
    "ratio (econ.workers) adds the KV transfer over the scale-out network to TTFT and bills every worker's chips",
    "TTFT = one prefill step of the whole prefill batch plus the pipeline fill when pp > 1, without queueing",
    "roofline, ideal mode: datasheet peaks and perfect overlap (step = max of compute, memory, "
    "communication), a lower bound on time",
    "chips are billed per plan (tp·adp·pp of one replica); chips a plan leaves idle in a scale-up "
    "domain are not billed; replicas (dp) scale throughput linearly and are not searched",
)

PHASE_WORDS = {
    "decode": {"target": "tpot", "batch": "sequences", "tokens": "output", "user": "tokens/s per user"},
    "prefill": {"target": "ttft", "batch": "prompts per step", "tokens": "input",
                "user": "prompt tokens/s per request"},
}

COMM_PARTS = (("TP all-reduce", "tp_all_reduce_s", "tp_bytes_per_chip", "tp"),
              ("EP all-to-all", "ep_all_to_all_s", "ep_bytes_per_chip", "ep"),
              ("PP hops", "pp_hops_s", "pp_hop_bytes_per_chip", "pp"))


def point_dict(p: Point, powers: dict | None = None) -> dict:
    """One evaluated (system, plan, batch): the frontier rows of ``--json``; ``powers`` ({system:
    ``econ.tco.PowerBasis``}) adds ``tokens_per_s_per_mw``."""
    mw = {} if powers is None else {"tokens_per_s_per_mw": powers[p.system].tokens_per_s_per_mw(
        p.tokens_per_s_per_chip)}
    return {**mw, "system": p.system, "plan": p.plan.as_dict(), "batch": p.batch,
            "step_s": p.step_s, "latency_s": p.latency_s, "tokens_per_s_per_chip": p.tokens_per_s_per_chip,
            "tokens_per_s_per_user": p.tokens_per_s_per_user, "usd_per_mtok": json_num(p.usd_per_mtok),
            "memory_per_chip_bytes": p.memory_per_chip_bytes, "compute_s": p.compute_s, "memory_s": p.memory_s,
            "comm_s": p.comm_s, "overhead_s": p.overhead_s, "bound": p.bound, "spec_tokens": p.spec_tokens,
            "tokens_per_step": p.tokens_per_step}


def _latency_note(p: Point, target: str) -> str:
    """What separates the latency from the step: the pipeline fill (prefill) or E tokens per iteration."""
    if p.spec_tokens:
        return (f"{target} {fmt_seconds(p.latency_s)} = the iteration over {p.tokens_per_step:.3g} tokens "
                f"(k={p.spec_tokens})")
    return f"{target} {fmt_seconds(p.latency_s)} with the pipeline fill of pp {p.plan.pp}"


def comm_dict(c) -> dict:
    """The best point's ``inference.CommParts`` as plain numbers (seconds and bytes per chip)."""
    if c is None:
        return {}
    return {"tp_all_reduce_s": float(c.tp_all_reduce_s), "ep_all_to_all_s": float(c.ep_all_to_all_s),
            "pp_hops_s": float(c.pp_hops_s), "tp_bytes_per_chip": float(c.tp_bytes),
            "ep_bytes_per_chip": float(c.ep_bytes), "pp_hop_bytes_per_chip": float(c.pp_hop_bytes),
            "tiers": dict(c.tiers)}


def why_line(search: PhaseSearch, *, hbm_bytes: float, target_s: float | None) -> str:
    """One sentence: which bound binds the best point's step and what limits its batch."""
    p = search.best
    words = PHASE_WORDS[search.phase]
    flag = words["target"].upper()
    step = f"the step is {p.bound}-bound ({fmt_seconds(p.step_s)}"
    if p.latency_s != p.step_s:
        step += f"; {_latency_note(p, flag)}"
    step += f" of the {fmt_seconds(target_s)} {flag})" if target_s else ")"
    mem = f"{fmt_bytes(p.memory_per_chip_bytes)} of {fmt_bytes(hbm_bytes)} HBM per chip"
    limit = search.batch_limited_by
    if limit == "memory":
        tail = f"batch {p.batch:,.0f} is limited by memory ({mem}): the next batch does not fit"
    elif limit == "target":
        tail = f"batch {p.batch:,.0f} is limited by the {flag}: the next batch misses it ({mem})"
    elif limit == "objective":
        tail = (f"batch {p.batch:,.0f} is the objective's choice: a larger one fits and meets the {flag} but "
                "scores worse")
    else:
        tail = f"batch {p.batch:,.0f} is the largest of the search grid ({mem})"
    return f"{step}; {tail}"


def best_dict(search: PhaseSearch, *, hbm_bytes: float, target_s: float | None, powers=None) -> dict | None:
    """The best point of a phase with its communication breakdown and what limits its batch."""
    p = search.best
    if p is None:
        return None
    return {**point_dict(p, powers), "comm": comm_dict(search.comm), "hbm_per_chip_bytes": hbm_bytes,
            "batch_limited_by": search.batch_limited_by}


def workers_dict(w) -> dict | None:
    """The prefill:decode worker ratio (``econ.workers.WorkerRatio``) as plain numbers."""
    if w is None:
        return None
    return {"ratio": w.ratio, "prefill_workers": w.prefill_workers, "decode_workers": w.decode_workers,
            "prefill_chips_per_worker": w.prefill_chips_per_worker,
            "decode_chips_per_worker": w.decode_chips_per_worker,
            "chips": w.chips, "max_workers": w.max_workers,
            "prefill_requests_per_s_per_worker": w.prefill_requests_per_s,
            "decode_requests_per_s_per_worker": w.decode_requests_per_s, "requests_per_s": w.requests_per_s,
            "prefill_utilisation": w.prefill_utilisation, "decode_utilisation": w.decode_utilisation,
            "kv_transfer_s": json_num(w.kv_transfer_s), "kv_transfer_unpriced": w.no_transfer or None,
            "ttft_s": w.ttft_s, "tpot_s": w.tpot_s, "meets_ttft": w.meets_ttft,
            "usd_per_mtok": json_num(w.usd_per_mtok), "at_bound": w.at_bound, "decode_point": w.decode_point}


def workers_rows(w) -> list[tuple[str, str]]:
    """(label, value) rows of the worker ratio for the text table."""
    ttft = (f"{fmt_seconds(w.ttft_s)} = prefill {fmt_seconds(w.prefill_latency_s)} + KV transfer "
            f"{fmt_seconds(w.kv_transfer_s)}" if w.kv_transfer_s is not None else
            f"{fmt_seconds(w.ttft_s)} = prefill alone; KV transfer not priced: {w.no_transfer}")
    if w.ttft_target_s is not None:
        ttft += (f" (meets the {fmt_seconds(w.ttft_target_s)} TTFT)" if w.meets_ttft else
                 f" — MISSES the {fmt_seconds(w.ttft_target_s)} TTFT once the transfer is added")
    return [
        ("ratio", f"{w.ratio} prefill:decode workers (searched 1..{w.max_workers} each"
                  + ("; at the bound: the balance wants more, raise --max-workers)" if w.at_bound else ")")),
        ("chips", f"{w.chips:,} = {w.prefill_workers} × {w.prefill_chips_per_worker} prefill + {w.decode_workers} × "
                  f"{w.decode_chips_per_worker} decode"),
        ("requests/s", f"{w.requests_per_s:.4g} (a prefill worker {w.prefill_requests_per_s:.4g}, a decode worker "
                       f"{w.decode_requests_per_s:.4g}; busy {w.prefill_utilisation:.0%} / "
                       f"{w.decode_utilisation:.0%})"),
        ("ttft", ttft),
        *([("decode point", w.decode_point)] if w.decode_point != "best" else []),
        ("cost", f"{fmt_usd_per_mtok(w.usd_per_mtok)} per M tokens of a request, every chip billed"
         if w.usd_per_mtok is not None else "- (no --price-per-chip-hour; counts chosen for requests/s per chip)"),
    ]


def floor_dict(floor: Point | None, best: Point | None) -> dict | None:
    """One phase's ideal floor (``econ.floor.plan_floors``): the best point's plan, batch and speculation on
    the roofline, with the calibrated step over it; None when there is no floor (ideal search, no best)."""
    if floor is None or best is None:
        return None
    return {"mode": "ideal", "plan": floor.plan.label(), "batch": floor.batch, "step_s": floor.step_s,
            "latency_s": floor.latency_s, "tokens_per_s_per_chip": floor.tokens_per_s_per_chip,
            "tokens_per_s_per_user": floor.tokens_per_s_per_user, "usd_per_mtok": json_num(floor.usd_per_mtok),
            "bound": floor.bound, "calibrated_over_ideal": best.step_s / floor.step_s}


def floor_rows(floor: Point | None, best: Point | None) -> list[tuple[str, str]]:
    """The table row of ``floor_dict`` (none without a floor)."""
    if floor is None or best is None:
        return []
    cost = "" if floor.usd_per_mtok is None else f", {fmt_usd_per_mtok(floor.usd_per_mtok)} per M tokens"
    return [("ideal floor", f"{fmt_seconds(floor.step_s)} step ({floor.bound}-bound), "
                            f"{fmt_rate(floor.tokens_per_s_per_chip)} tokens/s per chip{cost}: the same plan and "
                            f"batch on the roofline, a lower bound (calibrated is {best.step_s / floor.step_s:.2f}x "
                            "it)")]


def plan_result_dict(r: PlanResult, *, hbm_bytes: dict, model_assumptions=(), workers=None,
                     powers: dict | None = None, rates: dict | None = None, floors: dict | None = None) -> dict:
    """The ``llmecon plan --json`` object (docs/json.md). ``hbm_bytes`` maps system -> HBM per chip;
    ``workers`` the prefill:decode worker ratio (``econ.workers``); ``powers`` (system ->
    ``econ.tco.PowerBasis``) adds tokens/s per MW to every point, ``rates`` (system -> ``econ.tco.TcoRate``)
    the TCO behind each price; ``floors`` ({phase: Point or None}, ``econ.floor.plan_floors``) the ideal
    floor of each best point (``ideal_floor``: null without floors or when every floor is None)."""
    from .tco import systems_price_fields
    t = r.targets
    phases = {"decode": (r.decode, t.tpot_s), "prefill": (r.prefill, t.ttft_s)}
    best = {}
    for name, (search, target) in phases.items():
        best[name] = (None if search.best is None else
                      best_dict(search, hbm_bytes=hbm_bytes[search.best.system], target_s=target, powers=powers))
    return {
        "model": r.model, "systems": list(r.systems), "objective": r.objective,
        "targets": {"tpot_s": json_num(t.tpot_s), "ttft_s": json_num(t.ttft_s), "context": t.context,
                    "prompt_tokens": t.prompt_tokens, "output_tokens": t.output_tokens},
        "prices": {s: json_num(r.prices.get(s)) for s in r.systems},
        **systems_price_fields(r.prices, rates),
        "power": None if powers is None else {s: b.as_dict() for s, b in powers.items()},
        "best": best,
        "frontier": [point_dict(p, powers) for p in r.decode.frontier],
        "prefill_frontier": [point_dict(p, powers) for p in r.prefill.frontier],
        "usd_per_mtok_blended": json_num(r.usd_per_mtok_blended),
        "ideal_floor": None if not floors or all(f is None for f in floors.values()) else {
            ph: floor_dict(floors.get(ph), s.best) for ph, (s, _) in phases.items()},
        "workers": workers_dict(workers),
        "speculation_searched": [sp.as_dict() for sp in r.speculation],
        "points_evaluated": {n: s.points_evaluated for n, (s, _) in phases.items()},
        "points_fitting": {n: s.points_fitting for n, (s, _) in phases.items()},
        "points_meeting_slo": {n: s.points_meeting_slo for n, (s, _) in phases.items()},
        "best_achievable_s": {n: json_num(s.best_achievable_s) for n, (s, _) in phases.items()},
        "mode": "ideal" if r.fidelity == "ideal" else "calibrated", "fidelity": r.fidelity,
        **r.fidelity_fields,
        "assumptions": assumptions(r) + list(model_assumptions),
    }


def assumptions(r: PlanResult) -> list[str]:
    """The planner's assumptions, the fidelity one stated for the mode the plan was priced in."""
    if r.fidelity == "ideal":
        return list(ASSUMPTIONS)
    return [a if not a.startswith("roofline, ideal mode") else
            f"{r.fidelity}: achieved efficiencies, kernel floors and overheads, no overlap of kernel classes or "
            "communication (docs/calibration.md)" for a in ASSUMPTIONS]


# --------------------------------------------------------------------------------------------
# Text
# --------------------------------------------------------------------------------------------


def fmt_rate(value: float) -> str:
    """Tokens/s: whole numbers with separators from 100 up, three significant digits below."""
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


def fmt_usd_per_mtok(value: float | None) -> str:
    if value is None:
        return "-"
    return f"${value:.3g}" if value < 1000 else f"${value:,.0f}"


def headline(r: PlanResult) -> str:
    t = r.targets
    targets = ", ".join(f"{name} ≤ {fmt_seconds(v)}" for name, v in (("TPOT", t.tpot_s), ("TTFT", t.ttft_s))
                        if v is not None) or "no latency target"
    return (f"how to serve {r.model} on {' or '.join(r.systems)} at {targets} (objective: {r.objective}; "
            f"decode context {t.context:,.0f}, prompts {t.prompt_tokens:,.0f}, outputs {t.output_tokens:,.0f} tokens)")


def comm_text(comm: dict) -> str:
    """Per-collective time, bytes per chip and the network tier each lands on."""
    tiers = comm.get("tiers", {})
    parts = []
    for label, time_key, bytes_key, tier_key in COMM_PARTS:
        tier = tiers.get(tier_key, "none")
        if tier == "none" and not comm.get(time_key):
            continue
        parts.append(f"{label} {fmt_seconds(comm.get(time_key, 0.0))} ({fmt_bytes(comm.get(bytes_key, 0.0))}/chip, "
                     f"{tier.replace('_', '-')})")
    return "; ".join(parts) or "none (one chip per stage, one stage)"


def best_rows(search: PhaseSearch, *, hbm_bytes: float, target_s: float | None,
              spec: bool = False, power=None, rate=None) -> list[tuple[str, str]]:
    """(label, value) rows describing a phase's best plan, its search and why (``spec``: the k chosen;
    ``power``: an ``econ.tco.PowerBasis`` adds tokens/s per MW; ``rate``: the TCO behind the price)."""
    from .tco import mw_text, tco_line

    p = search.best
    w = PHASE_WORDS[search.phase]
    plan = p.plan
    return [
        ("system", p.system),
        ("plan", f"{plan.label()}: {plan.chips} chips per replica (tp {plan.tp} × adp {plan.adp} × pp {plan.pp}), "
                 f"expert-TP {plan.expert_tp}, ep {plan.ep}"),
        ("batch", f"{p.batch:,.0f} {w['batch']} per replica"),
        ("step", f"{fmt_seconds(p.step_s)} ({p.bound}-bound: compute {fmt_seconds(p.compute_s)}, memory "
                 f"{fmt_seconds(p.memory_s)}, comm {fmt_seconds(p.comm_s)})" + (
                     f"; {_latency_note(p, w['target'].upper())}" if p.latency_s != p.step_s else "")),
        ("throughput", f"{fmt_rate(p.tokens_per_s_per_chip)} tokens/s per chip, {fmt_rate(p.tokens_per_s_per_user)} "
                       f"{w['user']}"),
        *([("tokens/s per MW", mw_text(power.tokens_per_s_per_mw(p.tokens_per_s_per_chip), power))]
          if power is not None else []),
        ("cost", f"{fmt_usd_per_mtok(p.usd_per_mtok)} per M {w['tokens']} tokens" if p.usd_per_mtok is not None
         else "- (no --price-per-chip-hour or --tco)"),
        *([("TCO", tco_line(rate))] if rate is not None else []),
        *([("speculation", f"k={p.spec_tokens}: {p.tokens_per_step:.3g} tokens per verify step (searched with "
                            "plain decoding, k = 0)" if p.spec_tokens else "none (k = 0 beat every k searched)")]
          if spec else []),
        ("memory per chip", f"{fmt_bytes(p.memory_per_chip_bytes)} of {fmt_bytes(hbm_bytes)}"),
        ("communication", comm_text(comm_dict(search.comm))),
        ("search", f"{search.points_evaluated:,} (plan, batch) points, {search.points_fitting:,} fit in memory, "
                   f"{search.points_meeting_slo:,} meet the {w['target'].upper()}"),
        ("why", why_line(search, hbm_bytes=hbm_bytes, target_s=target_s)),
    ]


def frontier_rows(search: PhaseSearch, top: int, *, priced: bool, spec: bool = False) -> list[tuple[str, ...]]:
    """``top`` frontier points (all systems) spread evenly along the frontier from the fastest per
    user to the most per chip, so the table shows the whole trade-off; $/Mtok only when ``priced``."""
    ranked = sorted(search.frontier, key=lambda p: -p.tokens_per_s_per_user)
    if len(ranked) > top:
        picks = sorted({round(i * (len(ranked) - 1) / max(top - 1, 1)) for i in range(top)})
        ranked = [ranked[i] for i in picks]
    points = ranked
    return [(p.system, p.plan.label(), str(p.plan.chips), f"{p.batch:,.0f}", fmt_seconds(p.step_s),
             fmt_rate(p.tokens_per_s_per_chip), fmt_rate(p.tokens_per_s_per_user),
             *((fmt_usd_per_mtok(p.usd_per_mtok),) if priced else ()), p.bound,
             *((str(p.spec_tokens),) if spec else ())) for p in points]


# --------------------------------------------------------------------------------------------
# Figure
# --------------------------------------------------------------------------------------------


def plot_frontier(r: PlanResult, path: str | Path) -> None:
    """Decode frontier, log-log: tokens/s per user against tokens/s per chip, one line per system,
    the TPOT target as a vertical line at 1/TPOT and the best point annotated with its plan."""
    fig, ax = pyplot().subplots(figsize=(7.5, 4.8))
    top = max((p.tokens_per_s_per_chip for p in r.decode.frontier), default=1.0)
    for i, system in enumerate(r.systems):
        pts = sorted((p for p in r.decode.frontier if p.system == system), key=lambda p: p.tokens_per_s_per_user)
        if pts:
            ax.loglog([p.tokens_per_s_per_user for p in pts], [p.tokens_per_s_per_chip for p in pts], "-o",
                      color=f"C{i}", ms=3, lw=1.2, label=system)
    t = r.targets
    if t.tpot_s is not None:
        ax.axvline(1.0 / t.tpot_s, color="k", ls="--", lw=1, label=f"TPOT {fmt_seconds(t.tpot_s)}")
    b = r.decode.best
    if b is not None:
        ax.plot([b.tokens_per_s_per_user], [b.tokens_per_s_per_chip], "*", color="crimson", ms=14, zorder=5,
                label="best")
        ax.annotate(f"{b.system} {b.plan.label()}\nbatch {b.batch:,.0f}",
                    (b.tokens_per_s_per_user, b.tokens_per_s_per_chip), textcoords="offset points", xytext=(12, -26),
                    fontsize=8, arrowprops=dict(arrowstyle="-", color="crimson", lw=0.8),
                    bbox=dict(boxstyle="round,pad=0.2", fc="white", ec="none", alpha=0.85))
    ax.set_ylim(top=top * 3)  # headroom for the legend and the annotation
    ax.set_xlabel("tokens/s per user (1 / TPOT)")
    ax.set_ylabel("tokens/s per chip")
    targets = ", ".join(f"{n} ≤ {fmt_seconds(v)}" for n, v in (("TPOT", t.tpot_s), ("TTFT", t.ttft_s))
                        if v is not None)
    ax.set_title(f"{r.model} decode frontier ({targets}, context {t.context:,.0f})", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    save_figure(fig, path)
