"""``llmecon plan --frontier``: the per-system decode frontiers as a JSON-ready dict, text rows and one
figure (``econ.frontier``). Formatting only."""

from __future__ import annotations

from pathlib import Path

from ..econ.frontier import AtInteractivity, Frontier, at_interactivity
from ..econ.planner import Point
from ..units import json_num
from .figure import pyplot, save_figure
from .plan import fmt_rate, fmt_usd_per_mtok

VIEW_ASSUMPTIONS = {
    "decode": "decode only: output tokens of the decode steps alone (prefill not paid); tokens/s per user = 1 / TPOT "
              "(speculative points: E / iteration)",
    "whole": "whole requests: output tokens/s per GPU of the whole serving system, prefill paid for (aggregated: "
             "interleaved on the same GPUs at the token budget; disaggregated: prefill GPUs counted at the ratio "
             "that keeps pace); econ.serving_frontier",
}
VIEW_ASSUMPTIONS["aggregated"] = VIEW_ASSUMPTIONS["disaggregated"] = VIEW_ASSUMPTIONS["whole"]
ASSUMPTIONS = (
    "the frontier spans every memory-fitting (plan, batch) point of the planner's search; no latency target applied",
    "at an interactivity: 'interpolated' = log-log linear between the two frontier points bracketing it (an "
    "estimate between grid batches); 'point' = the best evaluated frontier point meeting it",
    "$/Mtok = price per chip-hour / 3600 / tokens/s per chip x 1e6, chips busy all the time",
)


def frontier_point_dict(p: Point, power=None) -> dict:
    """One frontier point of ``plan --frontier --json`` (``power``, an ``econ.tco.PowerBasis``: with
    ``tokens_per_s_per_mw``)."""
    mw = {} if power is None else {"tokens_per_s_per_mw": power.tokens_per_s_per_mw(p.tokens_per_s_per_chip)}
    return {**mw, "plan": p.plan.label(), "chips": p.plan.chips, "batch": p.batch, "step_s": p.step_s,
            "tokens_per_s_per_chip": p.tokens_per_s_per_chip, "tokens_per_s_per_user": p.tokens_per_s_per_user,
            "usd_per_mtok": json_num(p.usd_per_mtok), "bound": p.bound, "spec_tokens": p.spec_tokens,
            "serving": p.serving, "engine": p.engine or None}


def at_dict(a: AtInteractivity, power=None) -> dict:
    """One system's figures at the interactivity."""
    mw = {} if power is None else {"tokens_per_s_per_mw": None if a.tokens_per_s_per_chip is None else
                                   power.tokens_per_s_per_mw(a.tokens_per_s_per_chip)}
    return {**mw, "method": a.method, "tokens_per_s_per_chip": json_num(a.tokens_per_s_per_chip),
            "usd_per_mtok": json_num(a.usd_per_mtok),
            "interpolated": None if a.interpolated_per_chip is None else {
                "tokens_per_s_per_chip": a.interpolated_per_chip,
                "usd_per_mtok": json_num(a.interpolated_usd_per_mtok),
                "between": [frontier_point_dict(p) for p in a.between]},
            "best_point": None if a.point is None else frontier_point_dict(a.point, power)}


def frontier_dict(f: Frontier, *, interactivity_source: str = "--interactivity", model_assumptions=(),
                  powers: dict | None = None, rates: dict | None = None) -> dict:
    """The ``llmecon plan --frontier --json`` object (docs/json.md); ``powers`` (system ->
    ``econ.tco.PowerBasis``) adds tokens/s per MW, ``rates`` (system -> ``econ.tco.TcoRate``) the TCO behind
    each price (``price_source``, ``tco``, as ``plan --json``)."""
    from .tco import systems_price_fields

    t = f.targets
    pw = powers or {}
    return {
        "model": f.model, "systems": list(f.systems), "phase": "decode",
        "view": f.view, "token_budget": json_num(f.token_budget),
        "workload": {"context": t.context, "prompt_tokens": t.prompt_tokens, "output_tokens": t.output_tokens},
        "prices": {s: json_num(f.prices.get(s)) for s in f.systems},
        **systems_price_fields({s: f.prices.get(s) for s in f.systems}, rates),
        "power": None if powers is None else {s: b.as_dict() for s, b in powers.items()},
        "frontier": {s: [frontier_point_dict(p, pw.get(s)) for p in f.frontiers[s]] for s in f.systems},
        "at_interactivity": None if f.interactivity is None else {
            "tokens_per_s_per_user": f.interactivity, "source": interactivity_source,
            "systems": {s: at_dict(f.at[s], pw.get(s)) for s in f.systems}},
        "speculation_searched": [sp.as_dict() for sp in f.speculation],
        "frontier_without_speculation": None if not f.without_speculation else {
            s: [frontier_point_dict(p, pw.get(s)) for p in f.without_speculation[s]] for s in f.systems},
        "mode": "ideal" if f.fidelity == "ideal" else "calibrated", "fidelity": f.fidelity, **f.fidelity_fields,
        "assumptions": [VIEW_ASSUMPTIONS[f.view], *ASSUMPTIONS, *model_assumptions],
    }


def system_rows(points, *, priced: bool, spec: bool = False) -> list[tuple[str, ...]]:
    """Every frontier point of one system, fastest per user first (never cut)."""
    return [(p.plan.label(), p.serving[:5] + (f" {p.engine}" if p.engine else ""), str(p.plan.chips),
             f"{p.batch:,.0f}", fmt_rate(p.tokens_per_s_per_user),
             fmt_rate(p.tokens_per_s_per_chip), *((fmt_usd_per_mtok(p.usd_per_mtok),) if priced else ()), p.bound,
             *((str(p.spec_tokens),) if spec else ())) for p in points]


def speculation_line(f: Frontier, system: str) -> str | None:
    """With speculation searched: one system's top speed and, at the interactivity, tokens/s per chip with
    and without it (the two frontiers, ``Frontier.without_speculation``); None when none was searched."""
    plain = f.without_speculation.get(system)
    if not plain:
        return None
    both = f.frontiers[system]
    top = (f"{system}: top {fmt_rate(both[0].tokens_per_s_per_user)} tok/s/user with speculation "
           f"(k={both[0].spec_tokens}), {fmt_rate(plain[0].tokens_per_s_per_user)} without")
    if f.interactivity is None:
        return top
    with_ = at_interactivity(both, f.interactivity, system=system, price=None).tokens_per_s_per_chip
    without = at_interactivity(plain, f.interactivity, system=system, price=None).tokens_per_s_per_chip
    rate = (lambda x: "unreachable" if x is None else f"{fmt_rate(x)} tok/s/chip")
    return f"{top}; at {fmt_rate(f.interactivity)} tok/s/user: {rate(with_)} with, {rate(without)} without"


def at_line(a: AtInteractivity) -> str:
    """One system's figures at the interactivity, saying which kind each is."""
    u = f"{fmt_rate(a.tokens_per_s_per_user)} tok/s/user"
    if a.method == "unreachable":
        return f"{a.system}: no frontier point reaches {u}"
    cost = "" if a.usd_per_mtok is None else f", {fmt_usd_per_mtok(a.usd_per_mtok)}/Mtok"
    if a.method == "interpolated":
        i, j = a.between
        how = (f"on the point {i.plan.label()} batch {i.batch:,.0f}" if i is j else
               f"interpolated log-log between {i.plan.label()} batch {i.batch:,.0f} and {j.plan.label()} batch "
               f"{j.batch:,.0f}")
    else:
        how = "slower than the frontier's slowest point: its best point"
    best = a.point
    tail = "" if best is None or a.method == "point" else (
        f"; best evaluated point meeting it: {best.plan.label()} batch {best.batch:,.0f}, "
        f"{fmt_rate(best.tokens_per_s_per_chip)} tok/s/chip"
        + ("" if best.usd_per_mtok is None else f", {fmt_usd_per_mtok(best.usd_per_mtok)}/Mtok"))
    return f"{a.system}: {fmt_rate(a.tokens_per_s_per_chip)} tok/s/chip{cost} at {u} ({how}){tail}"


def _legend_at(a: AtInteractivity) -> str:
    """A system's figure at the interactivity, short, for the legend."""
    if a.method == "unreachable":
        return f"never reaches {fmt_rate(a.tokens_per_s_per_user)} tok/s/user"
    what = (f"{fmt_usd_per_mtok(a.usd_per_mtok)}/Mtok" if a.usd_per_mtok is not None else
            f"{fmt_rate(a.tokens_per_s_per_chip)} tok/s/chip")
    return f"{what} at {fmt_rate(a.tokens_per_s_per_user)} tok/s/user"


def plot_frontiers(f: Frontier, path: str | Path) -> None:
    """One figure, log-log: tokens/s per chip against tokens/s per user, one line per system, the
    interactivity as a vertical line with each system's figure there marked (and its $/Mtok when priced)."""
    fig, ax = pyplot().subplots(figsize=(8, 5))
    for i, system in enumerate(f.systems):
        pts = sorted(f.frontiers[system], key=lambda p: p.tokens_per_s_per_user)
        a = f.at.get(system)
        if pts:
            ax.loglog([p.tokens_per_s_per_user for p in pts], [p.tokens_per_s_per_chip for p in pts], "-o",
                      color=f"C{i}", ms=2.5, lw=1.4, label=system + ("" if a is None else f": {_legend_at(a)}"))
        if a is not None and a.tokens_per_s_per_chip is not None:
            ax.plot([a.tokens_per_s_per_user], [a.tokens_per_s_per_chip], "D", color=f"C{i}", ms=7, mec="k", zorder=5)
            if a.method == "point":  # slower than the slowest point: that point's throughput, drawn flat to it
                ax.plot([a.tokens_per_s_per_user, a.point.tokens_per_s_per_user], [a.tokens_per_s_per_chip] * 2, ":",
                        color=f"C{i}", lw=1)
            if a.usd_per_mtok is not None:
                ax.annotate(f"{fmt_usd_per_mtok(a.usd_per_mtok)}/Mtok", (a.tokens_per_s_per_user,
                            a.tokens_per_s_per_chip), textcoords="offset points", xytext=(8, 4), fontsize=8,
                            color=f"C{i}", bbox=dict(boxstyle="round,pad=0.2", fc="white", ec="none", alpha=0.85))
    if f.interactivity is not None:
        ax.axvline(f.interactivity, color="k", ls="--", lw=1,
                   label=f"{fmt_rate(f.interactivity)} tok/s/user")
    ax.set_xlabel("interactivity: tokens/s per user (decode)")
    ax.set_ylabel("throughput: tokens/s per chip (GPU)")
    mode = "ideal roofline" if f.fidelity == "ideal" else f.fidelity
    ax.set_title(f"{f.model} decode frontier, context {f.targets.context:,.0f} tokens\n{mode}", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    save_figure(fig, path)
