"""``llmecon validate --frontier``: parse -> ``fidelity.frontier_check.frontier_validation`` -> tables or JSON."""

from __future__ import annotations

from .options import _console, _emit_json


def validate_frontier(path: str, *, terms: str, view: str, chips, models, configs, as_json: bool, bar) -> None:
    """Run and print the frontier validation; ``chips`` (a set or None) already checked, ``bar`` the progress
    bar class of ``cli.fidelity``."""
    from ..errors import require_choice
    from ..fidelity.frontier_check import ORDER_AT, REACHABLE_SHARE, TERMS, frontier_validation
    from ..report.frontier_check import chip_rows, group_rows, order_rows, validation_dict

    require_choice("terms", terms, TERMS)
    require_choice("view", view, ("whole", "measured", "decode"))
    pick_m = None if models is None else {x.strip() for x in models.split(",") if x.strip()}
    with bar("frontiers", as_json) as progress:
        r = frontier_validation(path, configs, terms=terms, view=view, chips=chips, models=pick_m, progress=progress)
    if as_json:
        _emit_json(validation_dict(r))
        return
    from rich import box
    from rich.table import Table

    console = _console()
    sample = {"kernel": "out of sample: kernel tables only", "model": "out of sample: leave one model out",
              "floor": "out of sample: low-batch floor fitted leaving the model out",
              "ideal": "datasheet peaks: a bound"}.get(terms, "in sample")
    console.print(f"llmecon validate --frontier: {r['points']:,} measured points of {path}; view {view}; engine terms "
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
        console.print(table)
