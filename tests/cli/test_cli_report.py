"""``llmecon analyze --report FILE.html``: a self-contained page with analyze's headline numbers,
the decode step, bounds by batch, the two figures and the assumptions; works with --json; bad
paths exit 2 with one line and write nothing. Also: the figure functions factored out of
``plot_batch_curve``/``plot_context`` return Figures and the wrappers still write files."""

from __future__ import annotations

import json
import re
from html import escape as html_escape

import pytest
from cli_run import run

from llmecon.spec.deployment import Deployment
from llmecon.econ.batching import batch_economics
from llmecon.catalog.hardware import get_system
from llmecon.catalog.models import get_model
from llmecon.econ.context import context_economics
from llmecon.spec.plan import Plan
from llmecon.report.analyze import batch_curve_figure, plot_batch_curve
from llmecon.report.context import context_figure, plot_context
from llmecon.report.analyze_html import bound_spans

ARGS = ("analyze", "--mode", "ideal", "--model", "gpt-oss-20b", "--system", "h100-sxm", "--context",
        "2048")  # has assumptions


@pytest.fixture(scope="module")
def analyzed(tmp_path_factory):
    """analyze --json --report, once: (JSON printed, HTML written)."""
    out = tmp_path_factory.mktemp("report") / "analyze.html"
    proc = run(*ARGS, "--json", "--report", str(out))
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout), out.read_text(encoding="utf-8")


def test_report_has_the_headline_numbers(analyzed):
    d, html = analyzed
    assert f"{d['balance_batch']:,.0f} at short context" in html          # same formatting as analyze's table
    assert f"{d['crossover_context']:,.0f} tokens" in html
    assert f"max batch {d['max_batch']:,}" in html
    batch = d["decode_at_batch"]["batch"]
    assert f"Decode step at batch {batch:g}" in html
    assert d["decode_at_batch"]["bound"] + "-bound" in html
    for heading in ("Headline numbers", "Bound by batch", "Latency and cost per token against batch",
                    "Cost per token against context", "Assumptions"):
        assert heading in html
    assert get_model("gpt-oss-20b").assumptions
    for note in get_model("gpt-oss-20b").assumptions:
        assert html_escape(note, quote=True) in html


def test_report_figures_and_self_contained(analyzed):
    _, html = analyzed
    assert html.count("<svg") == 2                                        # batch curve and context curve
    low = html.lower()
    assert "<script" not in low and "<link" not in low and "<img" not in low
    for attr in re.findall(r'\b(?:src|href)\s*=\s*"([^"]*)"', html):
        assert attr.startswith("#"), attr


def test_report_without_json_says_where(tmp_path):
    out = tmp_path / "a.html"
    proc = run(*ARGS, "--report", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "balance batch" in proc.stdout and f"report written to {out}" in proc.stdout
    assert out.stat().st_size > 10_000


@pytest.mark.parametrize("name", ["missing/a.html", "a.png"])
def test_bad_report_path_exits_2_and_writes_nothing(tmp_path, name):
    proc = run(*ARGS, "--report", str(tmp_path / name))
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: --report") and "Traceback" not in proc.stderr
    assert list(tmp_path.iterdir()) == []


def test_bound_spans_cover_the_curve():
    dep = Deployment(model=get_model("llama-3.1-8b"), system=get_system("h100-sxm"), plan=Plan())
    e = batch_economics(dep, context=2048.0)
    spans = bound_spans(e.curve)
    assert spans[0][1] == e.curve.batch[0] and spans[-1][2] == e.curve.batch[-1]
    for (_, _, hi), (_, lo, _) in zip(spans, spans[1:]):
        assert lo > hi
    assert all(a[0] != b[0] for a, b in zip(spans, spans[1:]))


def test_figure_functions_and_file_wrappers(tmp_path):
    from matplotlib.figure import Figure

    dep = Deployment(model=get_model("llama-3.1-8b"), system=get_system("h100-sxm"), plan=Plan())
    e = batch_economics(dep, context=2048.0)
    assert isinstance(batch_curve_figure(e.curve, dep, economics=e), Figure)
    c = context_economics(dep)
    assert isinstance(context_figure(c, dep, price_per_chip_hour=2.0), Figure)
    plot_batch_curve(e.curve, dep, tmp_path / "b.png", economics=e)
    plot_context(c, dep, tmp_path / "c.svg")
    assert (tmp_path / "b.png").read_bytes()[:4] == b"\x89PNG"
    assert "<svg" in (tmp_path / "c.svg").read_text(encoding="utf-8")
