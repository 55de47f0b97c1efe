"""The shared self-contained HTML builder (``llmecon.report.html``): inline SVG figures, escaping,
tables and badges, no external references, path checks and atomic writes."""

from __future__ import annotations

import re

import pytest
from matplotlib.figure import Figure

from llmecon.errors import SpecError
from llmecon.report.html import Badge, Document, check_html_path, figure_svg, write_html


def _figure(label: str = "decode step (ms)") -> Figure:
    fig = Figure(figsize=(3, 2))
    ax = fig.subplots()
    ax.loglog([1, 10, 100], [5, 5, 50])
    ax.set_ylabel(label)
    return fig


def _external_refs(html: str) -> list[str]:
    """src/href values that leave the page, <script>/<link> tags, url() that is not a fragment."""
    bad = [v for v in re.findall(r'\b(?:src|href)\s*=\s*["\']([^"\']*)', html) if not v.startswith("#")]
    bad += re.findall(r"<(?:script|link|iframe|img)\b", html, flags=re.IGNORECASE)
    bad += re.findall(r"url\(\s*(?!#)[^)]*\)", html)
    return bad


def test_figure_svg_is_inline_svg_with_text():
    svg = figure_svg(_figure())
    assert svg.startswith("<svg") and svg.rstrip().endswith("</svg>")
    assert "<?xml" not in svg and "<!DOCTYPE" not in svg and "<metadata>" not in svg
    assert "decode step (ms)" in svg          # svg.fonttype 'none': labels stay text
    assert "http" not in svg                  # no namespace URLs or links
    assert _external_refs(svg) == []


def test_figure_svg_closes_pyplot_figures():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1])
    n = len(plt.get_fignums())
    figure_svg(fig)
    assert len(plt.get_fignums()) == n - 1


def test_document_escapes_everything():
    doc = Document(title="<script>alert(1)</script>", subtitle='a "quoted" & <b>bold</b>')
    sec = doc.section("Results & <notes>")
    sec.paragraph("x < y & z")
    sec.kv_table([("<x-k>", "<x-v>")])
    sec.table(["<x-h>"], [["<x-cell>"]])
    sec.note("<x-n>")
    sec.bullets(["<x-item>"])
    html = doc.render()
    assert "<script>" not in html and "&lt;script&gt;" in html
    for raw in ("<b>bold", "<notes>", "<x-k>", "<x-v>", "<x-h>", "<x-cell>", "<x-n>", "<x-item>"):
        assert raw not in html
    assert "x &lt; y &amp; z" in html and "&lt;x-cell&gt;" in html


def test_tables_badges_and_anchors():
    doc = Document(title="t")
    a = doc.section("Same title")
    b = doc.section("Same title")
    assert a.anchor != b.anchor
    a.table(["id", "value", "verdict"], [["A3.x", 5354.0, Badge("corrected", "bad")]], row_ids=["A3.x"])
    html = doc.render()
    assert '<tr id="A3.x">' in html
    assert '<td class="num">5,354</td>' in html
    assert '<span class="badge badge-bad">corrected</span>' in html
    with pytest.raises(ValueError):
        Badge("x", "purple")
    with pytest.raises(ValueError):
        a.table(["one", "two"], [["only one"]])
    with pytest.raises(ValueError):
        a.table(["one"], [["x"]], row_ids=["a", "b"])


def test_document_with_figures_is_self_contained():
    doc = Document(title="report", footer="source: https://example.org/datasheet (a citation, plain text)")
    sec = doc.section("Figures")
    sec.figure(_figure("first"), caption="one")
    sec.figure(figure_svg(_figure("second")), caption="two")   # an SVG string is accepted as is
    html = doc.render()
    assert html.count("<svg") == 2 and "<style>" in html
    assert _external_refs(html) == []
    with pytest.raises(ValueError):
        sec.figure("<div>not a figure</div>")


def test_check_html_path(tmp_path):
    assert check_html_path(str(tmp_path / "r.html")) == tmp_path / "r.html"
    assert check_html_path(str(tmp_path / "r.HTML"), "--report").name == "r.HTML"
    for bad, words in ((tmp_path / "r.png", "ending in .html"), (tmp_path / "r.htm", "ending in .html"),
                       (tmp_path / "no" / "r.html", "does not exist")):
        with pytest.raises(SpecError, match=words):
            check_html_path(str(bad), "--report")
    (tmp_path / "dir.html").mkdir()
    with pytest.raises(SpecError, match="is a folder"):
        check_html_path(str(tmp_path / "dir.html"))


def test_write_html_replaces_atomically(tmp_path):
    path = tmp_path / "r.html"
    write_html(path, "<p>one</p>")
    write_html(path, "<p>two</p>")
    assert path.read_text(encoding="utf-8") == "<p>two</p>"
    assert [p.name for p in tmp_path.iterdir()] == ["r.html"]   # no temporary file left behind
