"""Where a sweep's rows go, and what makes it resumable: one Parquet part per finished chunk.

Two layouts, chosen by the ``--out`` name:

* ``R.parquet`` (a file): while running, ``R.parquet.parts/`` holds ``_manifest.json`` (spec hash,
  chunk and point counts) and ``chunk-NNNNNNNN.parquet`` per finished chunk; at the end the parts
  are concatenated in chunk order (rows sorted by ``point_id``) into ``R.parquet``, streamed row group
  by row group (one part's row group in memory at a time: flat in the number of rows) — written under a
  temporary name and renamed, its schema metadata carrying the spec hash and the spec — and the
  parts folder is removed. The concatenation is serial (decode + re-encode, ~0.7 us per row here).
* any other name (``R/``, ``results``): a Parquet *dataset* folder — the parts are the result, with
  ``_manifest.json`` beside them (readers skip names starting with ``_`` or ``.``:
  ``pyarrow.dataset``, pandas, DuckDB, Spark read the folder as one table). No concatenation.

Parts are written under a hidden temporary name and renamed, so a killed run leaves whole parts
or none. A restart with the same spec hash skips the chunks whose parts exist; a different hash is
refused unless ``force``, which starts over (removing only files this module writes).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from ..errors import SpecError
from .grid import Work
from .table import _pa, write_options

HASH_KEY = b"llmecon.sweep.spec_hash"
SPEC_KEY = b"llmecon.sweep.spec"
MANIFEST = "_manifest.json"
ROW_GROUP_ROWS = 1 << 18   # the largest row group of the final file (a part's row groups are copied as they are)


def is_dataset(out: Path) -> bool:
    return out.suffix != ".parquet"


def parts_dir(out: Path) -> Path:
    return out if is_dataset(out) else out.with_name(out.name + ".parts")


def _part(folder: Path, chunk_id: int) -> Path:
    return folder / f"chunk-{chunk_id:08d}.parquet"


def _manifest(folder: Path) -> dict | None:
    try:
        return json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
        return None


def finished_hash(out: Path) -> str | None:
    """The spec hash a finished sweep file or dataset was written for (None if not one)."""
    if is_dataset(out):
        m = _manifest(out) or {}
        return m.get("spec_hash") if m.get("complete") else None
    _, pq = _pa()
    try:
        meta = pq.read_schema(out).metadata or {}
    except Exception:  # noqa: BLE001 - any unreadable file is "not a sweep result"
        return None
    value = meta.get(HASH_KEY)
    return value.decode() if value else None


def _clear(folder: Path) -> None:
    """Remove what this module wrote in ``folder`` (never anything else)."""
    for p in list(folder.glob("chunk-*.parquet")) + list(folder.glob(".chunk-*.tmp")) + [folder / MANIFEST]:
        p.unlink(missing_ok=True)


def prepare(work: Work, out: Path, *, force: bool) -> set[int]:
    """Make ``out`` ready for ``work``; return the chunk ids already finished. Refuses (SpecError)
    output written for a different spec unless ``force``."""
    folder = parts_dir(out)
    if not is_dataset(out) and out.exists():
        if out.is_dir():
            raise SpecError("is a folder", field="out", value=out,
                            fix="name a .parquet file, or a folder without the .parquet suffix for a dataset")
        done = finished_hash(out)
        if done == work.spec_hash and not force:
            return {c.id for c in work.chunks}
        if not force:
            why = "was written by a different sweep spec" if done else "exists and is not a sweep result"
            raise SpecError(why, field="out", value=out, fix="pass {force} to overwrite it, or choose another {out}")
        out.unlink()
    if folder.exists():
        if not folder.is_dir():
            raise SpecError(f"{folder} exists and is not a folder", field="out", value=out, fix="choose another {out}")
        m = _manifest(folder)
        if m is None and any(folder.iterdir()):
            raise SpecError(f"{folder} is not empty and holds no sweep", field="out", value=out,
                            fix="choose another {out}")
        if m is not None and m.get("spec_hash") != work.spec_hash and not force:
            raise SpecError(f"{folder} holds a sweep of a different spec", field="out", value=out,
                            fix="pass {force} to discard it, or choose another {out}")
        if m is not None and force:
            _clear(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for stale in folder.glob(".chunk-*.tmp"):
        stale.unlink()
    if _manifest(folder) is None:
        text = json.dumps({"spec_hash": work.spec_hash, "chunks": len(work.chunks), "points": work.points,
                           "complete": False, "spec": work.spec.canonical()}, indent=2)
        (folder / MANIFEST).write_text(text + "\n", encoding="utf-8")
    ids = {c.id for c in work.chunks}
    return {int(p.name[6:14]) for p in folder.glob("chunk-*.parquet") if p.name[6:14].isdigit()} & ids


def write_part(out: Path, chunk_id: int, data: bytes) -> None:
    """Write one finished chunk's Parquet bytes atomically (hidden temporary name, then rename)."""
    final = _part(parts_dir(out), chunk_id)
    tmp = final.with_name(f".{final.name}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, final)


def finish(work: Work, out: Path, sch) -> int:
    """Complete ``out`` from the parts (concatenate them, or mark the dataset complete); returns the
    rows written. A no-op returning the row count when ``out`` is already complete."""
    pa, pq = _pa()
    folder = parts_dir(out)
    if is_dataset(out):
        rows = sum(pq.read_metadata(_part(folder, c.id)).num_rows for c in work.chunks)
        m = _manifest(folder) or {}
        m.update(complete=True, rows=rows)
        (folder / MANIFEST).write_text(json.dumps(m, indent=2) + "\n", encoding="utf-8")
        return rows
    if out.exists() and finished_hash(out) == work.spec_hash and not folder.exists():
        return pq.read_metadata(out).num_rows
    sch = sch.with_metadata({HASH_KEY: work.spec_hash.encode(), SPEC_KEY: json.dumps(work.spec.canonical()).encode()})
    tmp = out.with_name(f".{out.name}.tmp")
    rows = 0
    with pq.ParquetWriter(tmp, sch, **write_options(sch)) as writer:
        for c in work.chunks:  # streamed: one part in memory at a time, written as its own row group(s)
            part = pq.ParquetFile(_part(folder, c.id))
            for g in range(part.num_row_groups):
                t = part.read_row_group(g).cast(sch)
                writer.write_table(t, row_group_size=ROW_GROUP_ROWS)
                rows += t.num_rows
            part.close()
    os.replace(tmp, out)
    shutil.rmtree(folder)
    return rows
