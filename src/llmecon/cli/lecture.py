"""``llmecon lecture``: every claim of the lecture (SPEC A-F) recomputed, with verdicts; optional
self-contained HTML report. Thin: parse -> llmecon.lecture -> report (see cli/__init__.py)."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from .options import JsonOpt, _emit_json, _show, app


@app.command("lecture")
def lecture_cmd(
    out: Annotated[Optional[str], typer.Option("--out", "-o", help="Write a self-contained HTML report (claims, "
                                                                   "verdicts, figures).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """The lecture, claim by claim: each number recomputed through llmecon, compared with what the
    lecture said under a stated tolerance, and marked "matches" or "corrected" (with SPEC's reason), or "open"
    where the answer hinges on an input no catalogued source gives (the threshold is shown)."""
    from ..report.html import check_html_path, write_html

    path = check_html_path(out, "--out") if out else None
    from ..lecture import build_claims
    from ..report.lecture import claims_dict, lecture_view

    claims = build_claims()
    if path is not None:
        from ..lecture.figures import figures
        from ..report.lecture import lecture_html

        write_html(path, lecture_html(claims, figures()))
    if as_json:
        _emit_json(claims_dict(claims))
        return
    _show(lecture_view(claims, out))
