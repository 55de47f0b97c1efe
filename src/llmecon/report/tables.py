"""What every command's text view shares: the two-column key/value table and the number formats the
tables use (tokens, dollars). The CLI prints what the views return; nothing here prints."""

from __future__ import annotations

import math
from dataclasses import dataclass


def kv_table(title: str, rows: list[tuple[str, str]]):
    """A titled, header-less two-column table: one label (bold cyan) and one value per row."""
    from rich.table import Table

    table = Table(title=title, show_header=False, title_justify="left", box=None, pad_edge=False)
    table.add_column(style="bold cyan", no_wrap=True)
    table.add_column()
    for label, value in rows:
        table.add_row(label, value)
    return table


def fmt_tokens(value) -> str:
    """A token count for people: whole tokens below a million, then millions to three digits."""
    value = float(value)
    if not math.isfinite(value):
        return "unbounded"
    return f"{value:,.0f}" if value < 1e6 else f"{value / 1e6:.3g}M"


def tokens(x: float) -> str:
    """A token count for people ("unbounded" when infinite)."""
    return fmt_tokens(x)


def money(x) -> str:
    """Dollars: three decimals below $100, whole dollars above, "-" when unknown."""
    return "-" if x is None or not math.isfinite(x) else (f"${x:,.3f}" if x < 100 else f"${x:,.0f}")


def small_money(x) -> str:
    """Dollars with three significant digits below a cent (holding and fetching costs are often tiny)."""
    return money(x) if x is None or not math.isfinite(x) or x >= 0.01 else f"${x:.3g}"


@dataclass(frozen=True)
class Line:
    """A line of a view printed with rich's console options other than a plain string's: markup read only
    with ``markup``, highlighted only with ``highlight``, soft-wrapped (not folded to the width) with
    ``soft_wrap``."""

    text: str
    soft_wrap: bool = False
    markup: bool = False
    highlight: bool = False
