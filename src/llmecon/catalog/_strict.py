"""Strict reading of catalogue tables: unknown or missing keys are errors with "did you mean"."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ..errors import CatalogError, did_you_mean


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
