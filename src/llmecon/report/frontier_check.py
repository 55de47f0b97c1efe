"""``llmecon validate --frontier``: the frontier validation (``fidelity.frontier_check``) as a JSON-ready dict and
table rows. Formatting only."""

from __future__ import annotations

from ..units import json_num


def _num(v, fmt: str) -> str:
    return "–" if v is None or v != v else format(v, fmt)


def group_dict(s) -> dict:
    return {"chip": s.chip, "model": s.model, "weight_dtype": s.weight_dtype, "workload": s.workload,
            "engines": list(s.engines), "points": s.points, "median_predicted_over_measured": json_num(s.median_ratio),
            "reachable_share": json_num(s.reachable), "max_tokens_per_s_per_user_measured": s.max_per_user_measured,
            "max_tokens_per_s_per_user_predicted": json_num(s.max_per_user_predicted),
            "at_order_interactivity": {k: json_num(v) for k, v in s.at_order.items()}}


def validation_dict(r: dict) -> dict:
    """The ``validate --frontier --json`` object (docs/json.md)."""
    from ..fidelity.frontier_check import ORDER_AT, REACHABLE_SHARE

    return {"source": "silicon", "terms": r["terms"], "view": r["view"], "layouts": r["layouts"],
            "batches_capped_at_measured_concurrency": r["cap"], "points": r["points"],
            "reachable_at": REACHABLE_SHARE, "order_at_tokens_per_s_per_user": ORDER_AT,
            "all": _summary(r["all"]["all"]), "per_chip": {k: _summary(v) for k, v in r["per_chip"].items()},
            "groups": [group_dict(s) for s in r["groups"]], "chip_order": r["order"]}


def _summary(v: dict) -> dict:
    return {"points": v["points"], "median_predicted_over_measured": json_num(v["median_ratio"]),
            "reachable_share": json_num(v["reachable"])}


def group_rows(r: dict) -> list[tuple[str, ...]]:
    return [(s.chip, s.model.split("/")[-1], s.weight_dtype, s.workload, ",".join(s.engines), str(s.points),
             _num(s.median_ratio, ".2f"), _num(s.reachable, ".0%"), _num(s.max_per_user_measured, ".0f"),
             _num(s.max_per_user_predicted, ".0f")) for s in r["groups"]]


def chip_rows(r: dict) -> list[tuple[str, ...]]:
    return [(k, str(v["points"]), _num(v["median_ratio"], ".2f"), _num(v["reachable"], ".0%"))
            for k, v in [*r["per_chip"].items(), ("all", r["all"]["all"])]]


def order_rows(r: dict) -> list[tuple[str, ...]]:
    return [(o["model"].split("/")[-1], o["weight_dtype"], o["workload"], ", ".join(o["chips"]), f"{o['tau']:.2f}")
            for o in r["order"]]


def validation_view(r: dict, path: str, *, terms: str, view: str) -> list:
    """``llmecon validate --frontier``: the run's scope, then per group, per chip and the chips' order."""
    from rich import box
    from rich.table import Table

    from ..fidelity.frontier_check import ORDER_AT, REACHABLE_SHARE

    out: list = []
    sample = {"kernel": "out of sample: kernel tables only", "model": "out of sample: leave one model out",
              "floor": "out of sample: low-batch floor fitted leaving the model out",
              "ideal": "datasheet peaks: a bound"}.get(terms, "in sample")
    out.append(f"llmecon validate --frontier: {r['points']:,} measured points of {path}; view {view}; engine terms "
               f"{terms} ({sample}); "
               f"reachable = predicted >= {REACHABLE_SHARE:.0%} of the point at its tokens/s per user")
    for title, heads, rows in (
            ("per chip, model, format, workload",
             ("chip", "model", "format", "P/O", "engines", "points", "pred/meas", "reachable", "max u meas",
              "max u pred"), group_rows(r)),
            ("per chip", ("chip", "points", "median pred/meas", "reachable"), chip_rows(r)),
            (f"chip order at {ORDER_AT:g} tokens/s per user (Kendall tau)", ("model", "format", "P/O", "chips",
                                                                             "tau"), order_rows(r))):
        table = Table(*heads, title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
        for row in rows:
            table.add_row(*row)
        out.append(table)
    return out
