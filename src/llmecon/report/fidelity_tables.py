"""Text views of ``validate`` and ``calibrate``: the error reports in, the rich renderables out, in print
order; the CLI prints them. The JSON views are the reports' ``as_dict``."""

from __future__ import annotations

from .tables import kv_table


def _pct(v: float) -> str:
    import math

    return "–" if v is None or not math.isfinite(v) else f"{v:.1%}"


BY_TITLES = {"all": "all rows", "vendor": "per vendor", "vendor/engine": "per vendor and engine",
             "chip": "per chip", "model": "per held-out model", "engine": "per engine",
             "chip/engine": "per chip and engine", "concurrency": "per concurrency band"}


def holdout_view(report, where: str) -> list:
    """``llmecon validate`` on silicon rows or kernel tables: held-out errors, one table per grouping."""
    from rich.table import Table

    view: list = []
    scheme = {"model": "leave one model out" if report.source == "silicon" else "k-fold by shape group (the shapes "
                                                                                 "a model brings)",
              "chip": "leave one chip out", "none": "in-sample (not an accuracy claim)"}[report.holdout]
    view.append(f"llmecon validate: {report.rows:,} rows of {where} ({report.source}); {scheme}; errors "
                "|pred/meas - 1| of held-out predictions")
    vendors = {c.group for c in report.cells if c.by == "vendor"}
    for vendor in ("NVIDIA", "AMD"):  # both always named: a vendor without rows says so
        if report.source == "silicon" and vendor not in vendors:
            view.append(f"per vendor: no {vendor} rows in {where}")
    for by in BY_TITLES:
        mine = [c for c in report.cells if c.by == by]
        groups = sorted({c.group for c in mine})
        if not mine:
            continue
        if by != "all" and len(groups) == 1:  # one group: the same figures as all rows
            view.append(f"{BY_TITLES[by]}: only {groups[0]} (as all rows)")
            continue
        heads = ("quantity",) + (() if by == "all" else (by,))
        table = Table(*heads, "rows", "predicted", "coverage", "median", "p90", "ideal <= meas", title=BY_TITLES[by],
                      title_justify="left")
        for c in mine:
            table.add_row(c.quantity, *(() if by == "all" else (c.group,)), f"{c.rows:,}", f"{c.predicted:,}",
                          _pct(c.predicted / c.rows if c.rows else float("nan")), _pct(c.median), _pct(c.p90),
                          _pct(c.ideal_below) if c.ideal_rows else "–")
        view.append(table)
    for note in report.notes:
        view.append(f"  note: {note}")
    return view


def errors_view(ev) -> list:
    """The error table of ``validate``/``calibrate`` on measurements, the worst rows, what was not predicted."""
    from rich.table import Table

    view: list = []
    table = Table("metric", "mode", "split", "rows", "median", "p90", "pred <= meas")
    for metric, modes in ev.metrics.items():
        for mode, splits in modes.items():
            for split, s in splits.items():
                if s["n"]:
                    table.add_row(metric, mode, split, str(s["n"]), f"{s['median']:.1%}", f"{s['p90']:.1%}",
                                  f"{s['below_share']:.0%}")
    view.append(table)
    for w in ev.worst:
        view.append(f"  worst: {w['row']} [{w['split']}] measured {w['measured_s']:.4g} s, calibrated "
                    f"{w['calibrated_s']:.4g} s ({w['error']:.0%})")
    for problem, count in ev.problems.items():
        view.append(f"  not predicted ({count}): {problem}")
    return view


def calibrate_view(rows, chosen: str, out: str, report: dict, ev) -> list:
    """``llmecon calibrate``: what was fitted per stage from which rows, then the errors."""
    view: list = [f"llmecon calibrate: {len(rows)} rows of {chosen} -> {out}"]
    for stage, v in report.items():
        fitted = ", ".join(f"{k}={val:.4g}" for k, val in v["params"].items())
        view.append(f"  {stage}: {v['rows']} rows; " + (fitted or f"not fitted ({v['skipped']})"))
    return view + errors_view(ev)


def _fmt(key: str, value: float) -> str:
    from ..units import fmt_rate

    if key.endswith("_share"):
        return f"{100 * value:.0f}% of datasheet"
    if key.endswith("bytes_per_s"):
        return fmt_rate(value)
    if key.endswith("flops_per_s"):
        return fmt_rate(value, "FLOP/s")
    return f"{value:,.0f} tok/s"


def measure_view(result, counts: dict) -> list:
    """``llmecon measure``: the GPU, the model timed, the rows written and the best figure of each kind."""
    env = result.env
    lines = [("GPU", f"{env.gpu_name} ({env.driver or 'driver unknown'}; torch {env.torch_version})"),
             ("catalogue ids", f"accelerator {result.accelerator}, system {result.system}"),
             ("model", f"{result.model} (random bf16 weights, tp=1; decode timed {result.step_timing})"),
             ("rows", ", ".join(f"{k} {v}" for k, v in counts.items()) + f" in {result.wall_s:.0f} s")]
    head = result.headline()
    for key, value in head.items():
        if key.endswith("_share"):
            continue
        share_key = key.replace("bytes_per_s", "hbm_share") if "bytes" in key else key.replace("flops_per_s",
                                                                                               "peak_share")
        share = head.get(share_key) if share_key != key else None
        label = "best " + key.rsplit("_", 3)[0].replace("_", " ")
        lines.append((label, _fmt(key, value) + (f" ({_fmt(share_key, share)})" if share is not None else "")))
    return [kv_table(f"llmecon measure ({result.preset})", lines)]
