"""``llmecon lecture``: every claim of the lecture (SPEC A-F) recomputed, with verdicts; optional
self-contained HTML report. Thin: parse -> llmecon.lecture -> report (see cli/__init__.py)."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from .options import JsonOpt, _console, _emit_json, app


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
    from ..lecture import build_claims, counts
    from ..report.lecture import claims_dict, table_rows

    claims = build_claims()
    if path is not None:
        from ..lecture.figures import figures
        from ..report.lecture import lecture_html

        write_html(path, lecture_html(claims, figures()))
    if as_json:
        _emit_json(claims_dict(claims))
        return
    from rich.table import Table

    n = counts(claims)
    table = Table(title=f"llmecon lecture: {len(claims)} claims, {n['matches']} match, {n['corrected']} corrected"
                        f", {n['open']} open",
                  title_justify="left")
    table.add_column("id", no_wrap=True, min_width=max(len(c.id) for c in claims))
    for name in ("lecture", "llmecon"):
        table.add_column(name, overflow="fold")
    table.add_column("verdict", no_wrap=True)
    for cid, said, got, verdict in table_rows(claims):
        colour = {"matches": "green", "open": "yellow"}.get(verdict, "red")
        table.add_row(cid, said, got, f"[{colour}]{verdict}[/{colour}]")
    console = _console()
    console.print(table)
    if out:
        console.print(f"report written to {out}", soft_wrap=True, markup=False, highlight=False)
