"""The text views (issue 32): report/ builds each command's tables and lines and never prints; the CLI's
``_show`` prints them. Formats checked by hand; a view is data a test can read; ``Line``'s options reach rich."""

from __future__ import annotations

import ast
import io
import math
from pathlib import Path

import pytest
from rich.console import Console
from rich.table import Table

from llmecon.cli.options import _show
from llmecon.commands.prices import PriceListRequest, price_list
from llmecon.report.prices_tables import list_view
from llmecon.report.tables import Line, kv_table, money, small_money, tokens

REPORT = Path(__file__).resolve().parents[2] / "src" / "llmecon" / "report"


def test_money_and_tokens_by_hand():
    assert money(2.5) == "$2.500" and money(99.9994) == "$99.999" and money(1500.0) == "$1,500"
    assert money(None) == "-" and money(math.nan) == "-"
    assert small_money(0.001234) == "$0.00123" and small_money(0.5) == "$0.500" and small_money(None) == "-"
    assert tokens(math.inf) == "unbounded" and tokens(131072) == "131,072" and tokens(2_500_000) == "2.5M"


def _printed(view: list, width: int = 80) -> str:
    buf = io.StringIO()
    _show(view, Console(file=buf, width=width, color_system=None))
    return buf.getvalue()


def test_show_prints_markup_in_strings_and_lines_as_they_are():
    assert _printed(["[bold]bold[/bold] text"]) == "bold text\n"
    assert _printed([Line("[bold]kept[/bold]")]) == "[bold]kept[/bold]\n"
    assert _printed([Line("[dim]read[/dim]", markup=True)]) == "read\n"
    long = "x" * 100
    assert _printed([Line(long, soft_wrap=True)], width=40) == long + "\n"  # soft wrap: one line, not folded
    assert _printed([long], width=40).count("\n") == 3  # a plain string folds at the width: 40 + 40 + 20


def test_kv_table_has_a_title_no_header_and_one_row_per_pair():
    table = kv_table("t", [("a", "1"), ("b", "2")])
    assert isinstance(table, Table) and table.title == "t" and not table.show_header
    assert table.row_count == 2 and [x.rstrip() for x in _printed([table]).splitlines()] == ["t", "a  1", "b  2"]


def test_prices_list_view_is_one_table_wide_and_a_narrow_table_plus_lines_below_150_columns():
    rows = price_list(PriceListRequest())
    (wide,) = list_view(rows, None, 160)
    assert isinstance(wide, Table) and wide.row_count == len(rows)
    narrow = list_view(price_list(PriceListRequest(cache_hit=0.5)), 0.5, 100)
    assert isinstance(narrow[0], Table) and narrow[0].row_count == len(rows)
    assert [c.header for c in narrow[0].columns] == ["provider/model", "in", "out", "cached", "blended in (h=0.5)",
                                                     "status"]
    assert all(isinstance(x, Line) for x in narrow[1:-1]) and narrow[-1].startswith("USD per million tokens")


@pytest.mark.parametrize("path", sorted(REPORT.glob("*.py")), ids=lambda p: p.name)
def test_report_never_prints(path):
    """A view returns what to print; printing is the front-end's (a console.print or print() in report/ fails)."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
            assert name != "print", f"{path.name}:{node.lineno} prints"
