"""Shared pieces of the validation-set loaders: the ``Skipped`` record, file access, YAML."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ...errors import CatalogError

MS = 1e-3  # seconds per millisecond: every raw time in these sets is in ms


@dataclass(frozen=True, kw_only=True)
class Skipped:
    """Raw items of a set that were not turned into measurement rows, and why."""

    source: str   # file relative to the validation folder (and the table inside it)
    items: int    # how many raw rows / entries
    reason: str


def need_file(root: Path, rel: str) -> Path:
    """``root / rel``, or a CatalogError naming the file that is missing."""
    path = root / rel
    if not path.is_file():
        raise CatalogError(f"{path}: no such file; the validation folder {root} is incomplete "
                           "(expected the layout of shared/validation/README.md)")
    return path


def read_yaml(root: Path, rel: str) -> dict:
    """The parsed YAML file ``root / rel`` (PyYAML is imported only here, when a YAML set is read)."""
    try:
        import yaml
    except ImportError:
        raise CatalogError(f"reading {rel} needs PyYAML: pip install pyyaml (or 'llmecon[dev]')") from None
    path = need_file(root, rel)
    from ...files import parse_yaml, read_text

    data = parse_yaml(read_text(path, what="YAML file"), str(path))
    if not isinstance(data, dict):
        raise CatalogError(f"{path}: expected a mapping at the top level")
    return data


def table(data: dict, rel: str, entry: dict, needed: tuple[str, ...]) -> list[dict]:
    """Rows of a ``{columns: [...], rows: [[...], ...]}`` block as dicts; CatalogError naming
    ``rel``, the block and the missing column or the ragged row."""
    columns = entry.get("columns") or []
    where = f"{rel} {entry.get('id', '')}".strip()
    missing = [c for c in needed if c not in columns]
    if missing:
        raise CatalogError(f"{where}: missing column '{missing[0]}'; has {', '.join(map(str, columns))}")
    out = []
    for i, row in enumerate(entry.get("rows") or []):
        if not isinstance(row, list) or len(row) != len(columns):
            raise CatalogError(f"{where} row {i}: expected {len(columns)} values ({', '.join(columns)}), got {row!r}")
        out.append(dict(zip(columns, row)))
    return out

