"""Self-contained HTML reports: one file, inline CSS, figures as inline SVG, no external references.

A small builder shared by ``llmecon lecture --out`` and ``llmecon analyze --report``::

    doc = Document("llmecon analyze", subtitle="DeepSeek-V3 on GB200 NVL72")
    sec = doc.section("Headline numbers")
    sec.kv_table([("balance batch", "5,741")])
    sec.table(["batch", "bound"], [["1", Badge("memory", "info")]])
    sec.figure(fig, caption="Latency and cost per token against batch")
    html = doc.render()

Every piece of text goes through ``html.escape``; the page has no ``<script>``, no ``<link>`` and
no ``src``/``href`` to anything outside itself (SVG ``xlink:href="#..."`` fragments stay inside
the figure), so it opens offline and can be mailed or archived as one file. Figures are
matplotlib figures rendered by the SVG backend (no display needed); plotly is not used here (it
is an optional dependency of the web front-end only).
"""

from __future__ import annotations

import html
import io
import re
from dataclasses import dataclass, field
from pathlib import Path


__all__ = ["Badge", "Document", "Section", "check_html_path", "figure_svg", "write_html"]

_BADGE_KINDS = ("ok", "warn", "bad", "info")

_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;margin:0;color:#1d2330;
background:#f6f7f9;line-height:1.45}
main{max-width:1180px;margin:0 auto;padding:24px 28px 48px}
h1{font-size:1.7em;margin:0.2em 0}h2{font-size:1.3em;margin:1.6em 0 0.4em;border-bottom:2px solid #d8dce4;
padding-bottom:0.2em}h3{font-size:1.05em;margin:1.2em 0 0.3em}
p.subtitle{color:#4a5468;margin:0 0 1em}
section{background:#fff;border:1px solid #e1e4ea;border-radius:8px;padding:4px 20px 16px;margin:18px 0}
table{border-collapse:collapse;margin:8px 0 12px;font-size:0.9em;width:100%}
th,td{border-bottom:1px solid #e6e8ee;padding:5px 8px;text-align:left;vertical-align:top}
th{background:#eef1f6;font-weight:600}
table.kv th{width:24%;background:#f4f6f9}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
caption{caption-side:top;text-align:left;font-weight:600;padding:4px 0}
.badge{display:inline-block;border-radius:10px;padding:1px 9px;font-size:0.85em;font-weight:600;white-space:nowrap}
.badge-ok{background:#dcf3e3;color:#1f6b36}.badge-warn{background:#fdf0d5;color:#8a5a00}
.badge-bad{background:#fbe0e0;color:#9b1c1c}.badge-info{background:#e3ecfb;color:#1d4c9b}
figure{margin:12px 0;text-align:center}figure svg{max-width:100%;height:auto}
figcaption{font-size:0.88em;color:#4a5468;margin-top:4px}
.note{font-size:0.88em;color:#4a5468;margin:4px 0}
code{background:#eef1f6;border-radius:3px;padding:0 3px}
footer{font-size:0.8em;color:#6b7385;margin-top:24px}
"""


def _esc(value: object) -> str:
    return html.escape(str(value), quote=True)


def _anchor(title: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")
    return slug or "section"


_SVG_START = re.compile(r"<svg\b", re.IGNORECASE)
_METADATA = re.compile(r"<metadata>.*?</metadata>\s*", re.DOTALL)
# namespace declarations: not references, but inline SVG in HTML needs none (the HTML parser puts
# <svg> in the SVG namespace and knows xlink:href), so the page stays free of URLs
_XMLNS = re.compile(r'\s+xmlns(?::\w+)?="[^"]*"')


def check_html_path(path: str, flag: str = "--out") -> Path:
    """``path`` as a Path if it names a new or existing .html file in an existing folder;
    else SpecError naming the flag and the fix (checked before any work, so nothing is written
    half-way)."""
    from ..files import check_output

    return check_output(path, field=flag, suffixes=(".html",))


def write_html(path: str | Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same folder and an atomic rename,
    so a reader never sees half a report."""
    from ..files import write_text

    write_text(path, text)


def figure_svg(fig, *, close: bool = True) -> str:
    """A matplotlib figure as an inline ``<svg>`` element (no XML prolog, no metadata block).

    Text stays text (``svg.fonttype = 'none'``: smaller pages, selectable labels). Works with a
    bare ``matplotlib.figure.Figure`` (no pyplot state) and with pyplot figures; ``close`` closes
    the latter so that reports built in a loop do not accumulate open figures.
    """
    import matplotlib

    buf = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "llmecon"}):
        fig.savefig(buf, format="svg", bbox_inches="tight")
    if close:
        import sys

        plt = sys.modules.get("matplotlib.pyplot")
        if plt is not None:
            plt.close(fig)
    text = buf.getvalue()
    start = _SVG_START.search(text)
    if start is None:
        raise RuntimeError("matplotlib produced no <svg> element")
    return _XMLNS.sub("", _METADATA.sub("", text[start.start():])).strip()


@dataclass(frozen=True)
class Badge:
    """A coloured label in a table cell: kind is ok (green), warn (amber), bad (red) or info (blue)."""

    text: str
    kind: str = "info"

    def __post_init__(self) -> None:
        if self.kind not in _BADGE_KINDS:
            raise ValueError(f"badge kind must be one of {_BADGE_KINDS}, got {self.kind!r}")

    def render(self) -> str:
        return f'<span class="badge badge-{self.kind}">{_esc(self.text)}</span>'


def _cell(value: object, tag: str = "td") -> str:
    if isinstance(value, Badge):
        return f"<{tag}>{value.render()}</{tag}>"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return f'<{tag} class="num">{_esc(f"{value:,.6g}")}</{tag}>'
    return f"<{tag}>{_esc('' if value is None else value)}</{tag}>"


@dataclass
class Section:
    """A titled block of a document; its methods append content in order (all text escaped)."""

    title: str
    anchor: str
    parts: list[str] = field(default_factory=list)

    def heading(self, text: str) -> "Section":
        self.parts.append(f"<h3>{_esc(text)}</h3>")
        return self

    def paragraph(self, text: str) -> "Section":
        self.parts.append(f"<p>{_esc(text)}</p>")
        return self

    def note(self, text: str) -> "Section":
        self.parts.append(f'<p class="note">{_esc(text)}</p>')
        return self

    def bullets(self, items) -> "Section":
        self.parts.append("<ul>" + "".join(f"<li>{_esc(i)}</li>" for i in items) + "</ul>")
        return self

    def kv_table(self, rows, *, caption: str = "") -> "Section":
        """Two columns, label and value: ``rows`` is a sequence of (label, value) pairs."""
        body = "".join(f"<tr>{_cell(label, 'th')}{_cell(value)}</tr>" for label, value in rows)
        cap = f"<caption>{_esc(caption)}</caption>" if caption else ""
        self.parts.append(f'<table class="kv">{cap}<tbody>{body}</tbody></table>')
        return self

    def table(self, header, rows, *, caption: str = "", row_ids=None) -> "Section":
        """A table with a header row; cells are text, numbers (right-aligned) or ``Badge``.
        ``row_ids`` (optional) gives each row an ``id`` attribute, so a report can link to it."""
        rows = [list(r) for r in rows]
        width = len(header)
        for i, r in enumerate(rows):
            if len(r) != width:
                raise ValueError(f"table row {i} has {len(r)} cells for {width} columns")
        ids = list(row_ids) if row_ids is not None else [None] * len(rows)
        if len(ids) != len(rows):
            raise ValueError(f"row_ids has {len(ids)} entries for {len(rows)} rows")
        head = "<tr>" + "".join(_cell(h, "th") for h in header) + "</tr>"
        body = "".join((f'<tr id="{_esc(rid)}">' if rid else "<tr>") + "".join(_cell(c) for c in r) + "</tr>"
                       for rid, r in zip(ids, rows))
        cap = f"<caption>{_esc(caption)}</caption>" if caption else ""
        self.parts.append(f"<table>{cap}<thead>{head}</thead><tbody>{body}</tbody></table>")
        return self

    def figure(self, fig, *, caption: str = "") -> "Section":
        """A matplotlib figure (rendered now, inline SVG) or an SVG string from ``figure_svg``."""
        svg = fig if isinstance(fig, str) else figure_svg(fig)
        if not svg.lstrip().lower().startswith("<svg"):
            raise ValueError("figure: expected a matplotlib figure or an '<svg ...>' string")
        cap = f"<figcaption>{_esc(caption)}</figcaption>" if caption else ""
        self.parts.append(f"<figure>{svg}{cap}</figure>")
        return self

    def render(self) -> str:
        return f'<section id="{_esc(self.anchor)}"><h2>{_esc(self.title)}</h2>{"".join(self.parts)}</section>'


@dataclass
class Document:
    """A whole page: title, optional subtitle, sections in order and a footer line."""

    title: str
    subtitle: str = ""
    footer: str = ""
    sections: list[Section] = field(default_factory=list)

    def section(self, title: str, *, anchor: str | None = None) -> Section:
        taken = {s.anchor for s in self.sections}
        base = anchor or _anchor(title)
        name, n = base, 2
        while name in taken:
            name, n = f"{base}-{n}", n + 1
        sec = Section(title=title, anchor=name)
        self.sections.append(sec)
        return sec

    def render(self) -> str:
        toc = ""
        if len(self.sections) > 2:
            toc = "<nav><p>" + " · ".join(f'<a href="#{_esc(s.anchor)}">{_esc(s.title)}</a>'
                                            for s in self.sections) + "</p></nav>"
        sub = f'<p class="subtitle">{_esc(self.subtitle)}</p>' if self.subtitle else ""
        foot = f"<footer>{_esc(self.footer)}</footer>" if self.footer else ""
        body = "".join(s.render() for s in self.sections)
        return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
                f"<title>{_esc(self.title)}</title><style>{_CSS}</style></head>"
                f"<body><main><h1>{_esc(self.title)}</h1>{sub}{toc}{body}{foot}</main></body></html>\n")
