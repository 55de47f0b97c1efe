"""``llmecon validate --frontier``: parse -> ``fidelity.frontier_check.frontier_validation`` -> tables or JSON."""

from __future__ import annotations

from .options import _emit_json, _show


def validate_frontier(path: str, *, terms: str, view: str, chips, models, configs, as_json: bool, bar) -> None:
    """Run and print the frontier validation; ``chips`` (a set or None) already checked, ``bar`` the progress
    bar class of ``cli.fidelity``."""
    from ..errors import require_choice
    from ..fidelity.frontier_check import TERMS, frontier_validation
    from ..report.frontier_check import validation_dict, validation_view

    require_choice("terms", terms, TERMS)
    require_choice("view", view, ("whole", "measured", "decode"))
    pick_m = None if models is None else {x.strip() for x in models.split(",") if x.strip()}
    with bar("frontiers", as_json) as progress:
        r = frontier_validation(path, configs, terms=terms, view=view, chips=chips, models=pick_m, progress=progress)
    if as_json:
        _emit_json(validation_dict(r))
        return
    _show(validation_view(r, path, terms=terms, view=view))
