"""Sweep results as a JSON-ready dict and terminal tables (``llmecon sweep``).

Formatting only: every number comes from ``sweep.SweepRun`` / ``sweep.SweepSummary`` (which read
the written Parquet file) and ``sweep.Work`` (the expanded spec).
"""

from __future__ import annotations

from .plan import fmt_rate, fmt_usd_per_mtok
from .tables import Line
from ..units import fmt_seconds


def work_dict(work) -> dict:
    """What a spec expands to (also the whole ``--dry-run --json`` object)."""
    return {"spec": work.spec.canonical(), "spec_hash": work.spec_hash, "points": work.points,
            "analytic_points": work.analytic_points, "groups": len(work.groups), "simulations": len(work.scenarios),
            "chunks": len(work.chunks), "skipped_points": sum(s.points for s in work.skipped),
            "skipped": [{"what": s.what, "reason": s.reason, "points": s.points} for s in work.skipped]}


def sweep_dict(work, run, summary, *, frontier_points: bool = False) -> dict:
    """The ``llmecon sweep --json`` object (docs/sweep.md and docs/json.md list the keys): the summary —
    per key the frontier's size and two ends (``frontier_ends``) — and every frontier point only when
    ``frontier_points`` (``--frontier-points``: ~3·10^5 points, 130 MB of JSON, at 10^8 rows)."""
    pps = run.points_per_s
    d = {**work_dict(work), "out": run.out, "mode": run.mode, "workers": run.workers,
         "rows_written": run.rows_written, "skipped_chunks": run.skipped_chunks,
         "computed_chunks": run.computed_chunks, "elapsed_s": run.elapsed_s, "points_per_s": pps,
         "objective": summary.objective, "points_fitting": summary.points_fitting, "best": list(summary.best),
         "frontier_size": summary.frontier.num_rows, "frontier_ends": summary.frontier_ends(),
         "simulation_best": list(summary.simulation_best)}
    if frontier_points:
        d["frontier"] = summary.frontier_points()
    return d


def headline(work, run) -> str:
    parts = [f"{work.points:,} points ({work.analytic_points:,} analytic in {len(work.groups):,} groups, "
             f"{len(work.scenarios):,} simulations) in {len(work.chunks):,} chunks"]
    where = run.mode + (f", {run.workers} workers" if run.workers else "")
    done = f"{run.computed_chunks:,} chunks computed ({where})"
    if run.skipped_chunks:
        done += f", {run.skipped_chunks:,} reused (finished by an earlier run)"
    if run.points_per_s:
        done += f", {run.points_per_s:,.0f} points/s"
    return f"{'; '.join(parts)}; {done}; {run.rows_written:,} rows written to {run.out}"


def _opt(value, fmt) -> str:
    return "-" if value is None else fmt(value)


def best_rows(summary, *, priced: bool) -> list[tuple[str, ...]]:
    def usd(p: dict) -> str:
        price = p["price_per_chip_hour"]
        return fmt_usd_per_mtok(p["usd_per_mtok"]) + ("" if price is None else f" @ ${price:g}/h")

    return [(p["model"], p["system"], p["phase"], f"{p['context']:,.0f}", p["plan"], f"{p['batch']:,.0f}",
             fmt_seconds(p["step_s"]), fmt_rate(p["tokens_per_s_per_chip"]), fmt_rate(p["tokens_per_s_per_user"]),
             *((usd(p),) if priced else ()), p["bound"]) for p in summary.best]


def frontier_rows(summary) -> list[tuple[str, ...]]:
    """One row per (model, system, phase, context): the frontier's size and its two ends (fastest per
    user, most per chip); every frontier point is in ``--json --frontier-points``."""
    rows = []
    for e in summary.frontier_ends():
        fast, dense = e["fastest_per_user"], e["most_per_chip"]
        rows.append((e["model"], e["system"], e["phase"], f"{e['context']:,.0f}", str(e["points"]),
                     f"{fmt_rate(fast['tokens_per_s_per_user'])} ({fast['plan']}, batch {fast['batch']:,.0f})",
                     f"{fmt_rate(dense['tokens_per_s_per_chip'])} ({dense['plan']}, batch {dense['batch']:,.0f})"))
    return rows


def simulation_rows(summary) -> list[tuple[str, ...]]:
    return [(p["model"], p["system"], p["plan"], p["policy"], p["workload"], str(p["seed"]), str(p["batch_cap"]),
             _opt(p["goodput_requests_per_s"], lambda v: f"{v:,.2f}"), _opt(p["ttft_p99_s"], fmt_seconds),
             _opt(p["tpot_p99_s"], fmt_seconds), fmt_usd_per_mtok(p["usd_per_mtok"])) for p in summary.simulation_best]


def sweep_view(work, run, summary) -> list:
    """``llmecon sweep``: the run's headline, the best points, the frontier's ends, the best simulations."""
    from rich import box
    from rich.table import Table

    view: list = []

    def table(title: str, headers: tuple[str, ...], rows, left: int) -> None:
        t = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
        for i, h in enumerate(headers):
            t.add_column(h, justify="left" if i < left else "right")
        for r in rows:
            t.add_row(*r)
        view.append(t)

    view.append(Line(f"[bold]llmecon sweep[/bold] {work.spec.name}: {headline(work, run)}", soft_wrap=True,
                     markup=True, highlight=True))
    if work.skipped:
        view.append(Line(f"[yellow]skipped[/yellow] {sum(s.points for s in work.skipped):,} points in "
                         f"{len(work.skipped):,} combination(s), e.g. {work.skipped[0].what}: "
                         f"{work.skipped[0].reason}", soft_wrap=True, markup=True))
    priced = summary.objective == "usd_per_mtok"
    if summary.best:
        objective = "lowest $/Mtok" if priced else "most tokens/s per chip"
        table(f"best point per model, system, phase and context ({objective}, among {summary.points_fitting:,} "
              "points that fit)", ("model", "system", "phase", "context", "plan", "batch", "step", "tok/s/chip",
                                   "tok/s/user", *(("$/Mtok",) if priced else ()), "bound"),
              best_rows(summary, priced=priced), 3)
        table(f"frontier, tokens/s per chip vs per user: {summary.frontier.num_rows:,} non-dominated points "
              "(all in --json --frontier-points), its two ends",
              ("model", "system", "phase", "context", "points", "fastest per user", "most per chip"),
              frontier_rows(summary), 3)
    elif work.groups:
        view.append("[yellow]no analytic point fits in memory[/yellow]: see the fits column")
    if summary.simulation_best:
        table("best simulation per model and system (" + ("lowest $/Mtok" if summary.simulation_best and
                                                           summary.simulation_best[0]["usd_per_mtok"] is not None
                                                           else "highest goodput") + ")",
              ("model", "system", "plan", "policy", "workload", "seed", "batch cap", "goodput req/s", "TTFT p99",
               "TPOT p99", "$/Mtok"), simulation_rows(summary), 5)
    fidelity = ("ideal roofline (a lower bound on time)" if work.spec.mode == "ideal" else
                "calibrated (" + ", ".join(sorted({g.profile.name for g in work.groups})) + ")")
    view.append(f"[dim]{fidelity}; every point is a row of the Parquet file, "
                "including those that do not fit (fits = false)[/dim]")
    return view


def dry_run_view(spec: str, size: str, work, render) -> list:
    """``llmecon sweep --dry-run``: the points, groups and chunks a run would compute, and what it skips
    (``render``: a skip's error as the front-end spells it)."""
    d = work_dict(work)
    view: list = [Line(f"{spec}: {size}; {d['points']:,} points ({d['analytic_points']:,} analytic in "
                       f"{d['groups']:,} groups, {d['simulations']:,} simulations) in {d['chunks']:,} chunks; "
                       f"{d['skipped_points']:,} points skipped in {len(d['skipped']):,} combination(s)",
                       soft_wrap=True, markup=True)]
    for s in work.skipped:
        why = render(s.error) if s.error else s.reason
        view.append(Line(f"  skipped {s.what} ({s.points:,} points): {why}", soft_wrap=True))
    return view
