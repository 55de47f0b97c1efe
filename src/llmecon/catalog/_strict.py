"""Strict reading of catalogue tables: unknown or missing keys are errors with "did you mean"."""

from __future__ import annotations

import datetime
import re
from collections.abc import Iterable, Mapping

from ..errors import CatalogError, did_you_mean

_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def read_toml(text: str, where: str) -> dict:
    """Parse TOML ``text``; a syntax error is a CatalogError naming ``where`` (and line/column)."""
    from ..files import parse_toml

    return parse_toml(text, where)


def text(entry: Mapping, key: str, where: str) -> str:
    """``entry[key]`` as a stripped non-empty string, else CatalogError."""
    value = entry[key]
    if not isinstance(value, str) or not value.strip():
        raise CatalogError(f"{where} {key}: expected a non-empty string, got {value!r}")
    return value.strip()


def iso_date(value: object) -> str | None:
    """A TOML date or a 'YYYY-MM-DD' string as ISO text; None if it is neither (or not a real date)."""
    if isinstance(value, datetime.date) and not isinstance(value, datetime.datetime):
        return value.isoformat()
    if isinstance(value, str) and _DATE.fullmatch(value.strip()):
        try:
            return datetime.date.fromisoformat(value.strip()).isoformat()
        except ValueError:
            return None
    return None


def check_keys(entry: Mapping, *, required: Iterable[str], optional: Iterable[str] = (), where: str) -> None:
    """Raise CatalogError naming the first unknown or missing key of ``entry`` (a TOML table)."""
    if not isinstance(entry, Mapping):
        raise CatalogError(f"{where}: expected a table of keys, got {type(entry).__name__}")
    required, optional = set(required), set(optional)
    allowed = required | optional
    for key in entry:
        if key not in allowed:
            raise CatalogError(f"{where}: unknown key '{key}'{did_you_mean(key, allowed)}; "
                               f"allowed: {', '.join(sorted(allowed))}")
    for key in sorted(required):
        if key not in entry:
            raise CatalogError(f"{where}: missing required key '{key}'")
