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
or none. Each finished part's SHA-256 is recorded in ``_manifest.json`` (``parts``: chunk id -> digest,
saved atomically at most every ``SAVE_EVERY_S`` and at the end: ``PartLedger``). A restart with the
same spec hash skips only the chunks whose part is there *and* matches its recorded digest; a part
that is truncated, garbage, copied over another, or not yet recorded is removed and recomputed
(issue 31: a truncated part gave an ArrowInvalid traceback after recomputing the rest, and a part
copied over another finished with 256 duplicated and 256 missing points). A different hash is
refused unless ``force``, which starts over (removing only files this module writes); so is a
damaged ``_manifest.json``, with the way to start over in the message.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from pathlib import Path

from ..errors import SpecError
from .grid import Work
from .table import _pa, write_options

HASH_KEY = b"llmecon.sweep.spec_hash"
SPEC_KEY = b"llmecon.sweep.spec"
MANIFEST = "_manifest.json"
ROW_GROUP_ROWS = 1 << 18   # the largest row group of the final file (a part's row groups are copied as they are)
SAVE_EVERY_S = 1.0  # the manifest's digests are saved at most this often (a part not yet saved is recomputed)


def is_dataset(out: Path) -> bool:
    return out.suffix != ".parquet"


def parts_dir(out: Path) -> Path:
    return out if is_dataset(out) else out.with_name(out.name + ".parts")


def _part(folder: Path, chunk_id: int) -> Path:
    return folder / f"chunk-{chunk_id:08d}.parquet"


def _manifest(folder: Path) -> dict | None:
    m, _ = _read_manifest(folder)
    return m


def _read_manifest(folder: Path) -> tuple[dict | None, str | None]:
    """(the manifest, None), (None, None) when there is none, or (None, what is wrong with it)."""
    path = folder / MANIFEST
    if not path.exists():
        return None, None
    try:
        m = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
        return None, f"cannot be read ({type(exc).__name__}: {str(exc)[:80]})"
    if not isinstance(m, dict) or not isinstance(m.get("spec_hash"), str):
        return None, "is not a sweep manifest (no spec_hash)"
    return m, None


def _save_manifest(folder: Path, m: dict) -> None:
    """Write the manifest atomically (a killed write leaves the previous one)."""
    tmp = folder / f".{MANIFEST}.tmp"
    tmp.write_text(json.dumps(m, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, folder / MANIFEST)


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class PartLedger:
    """The manifest's ``parts`` (chunk id -> SHA-256 of the part's bytes) as chunks finish."""

    def __init__(self, out: Path):
        self.folder = parts_dir(out)
        self.manifest = _manifest(self.folder) or {}
        self.manifest.setdefault("parts", {})
        self.saved = time.monotonic()

    def add(self, chunk_id: int, data: bytes | None) -> None:
        """Record a finished part (``data`` None: a worker wrote it; its bytes are read back)."""
        if data is None:
            data = _part(self.folder, chunk_id).read_bytes()
        self.manifest["parts"][str(chunk_id)] = digest(data)
        if time.monotonic() - self.saved >= SAVE_EVERY_S:
            self.flush()

    def flush(self) -> None:
        _save_manifest(self.folder, self.manifest)
        self.saved = time.monotonic()


def _verified(folder: Path, m: dict, ids: set[int]) -> set[int]:
    """Chunk ids whose part matches the digest recorded for it; every other part file is removed."""
    recorded = m.get("parts") if isinstance(m.get("parts"), dict) else {}
    good = set()
    for p in folder.glob("chunk-*.parquet"):
        key = p.name[6:14]
        ok = key.isdigit() and int(key) in ids and recorded.get(str(int(key))) == digest(p.read_bytes())
        if ok:
            good.add(int(key))
        else:  # truncated, garbage, a copy of another part, or finished after the last save: recompute it
            p.unlink()
    m["parts"] = {k: v for k, v in recorded.items() if k.isdigit() and int(k) in good}
    return good


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
    for p in (list(folder.glob("chunk-*.parquet")) + list(folder.glob(".chunk-*.tmp"))
              + [folder / MANIFEST, folder / f".{MANIFEST}.tmp"]):
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
    stale = out.with_name(f".{out.name}.tmp")  # a concatenation killed before its rename (ours: finish)
    if not is_dataset(out) and stale.is_file():
        stale.unlink()
    if folder.exists():
        if not folder.is_dir():
            raise SpecError(f"{folder} exists and is not a folder", field="out", value=out, fix="choose another {out}")
        m, damaged = _read_manifest(folder)
        if damaged and not force:
            raise SpecError(f"{folder / MANIFEST} {damaged}, so its parts cannot be trusted", field="out", value=out,
                            fix="pass {force} to discard the parts and start over, or choose another {out}")
        if m is None and not damaged and any(folder.iterdir()):
            raise SpecError(f"{folder} is not empty and holds no sweep", field="out", value=out,
                            fix="choose another {out}")
        if m is not None and m.get("spec_hash") != work.spec_hash and not force:
            raise SpecError(f"{folder} holds a sweep of a different spec", field="out", value=out,
                            fix="pass {force} to discard it, or choose another {out}")
        if force and (m is not None or damaged):
            _clear(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for stale in list(folder.glob(".chunk-*.tmp")) + [folder / f".{MANIFEST}.tmp"]:
        stale.unlink(missing_ok=True)
    m = _manifest(folder)
    if m is None:
        m = {"spec_hash": work.spec_hash, "chunks": len(work.chunks), "points": work.points,
             "complete": False, "spec": work.spec.canonical(), "parts": {}}
    done = _verified(folder, m, {c.id for c in work.chunks})
    _save_manifest(folder, m)
    return done


def write_part(out: Path, chunk_id: int, data: bytes) -> None:
    """Write one finished chunk's Parquet bytes atomically (hidden temporary name, then rename)."""
    final = _part(parts_dir(out), chunk_id)
    tmp = final.with_name(f".{final.name}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, final)


def finish(work: Work, out: Path, sch, each=None) -> int:
    """Complete ``out`` from the parts (concatenate them, or mark the dataset complete); returns the
    rows written. A no-op returning the row count when ``out`` is already complete. ``each``: called
    with every table as it is concatenated (``summary.SummaryReducer.add``: the summary streamed from
    the parts, not read back from ``out``)."""
    pa, pq = _pa()
    folder = parts_dir(out)
    if is_dataset(out):
        rows = sum(pq.read_metadata(_part(folder, c.id)).num_rows for c in work.chunks)
        m = _manifest(folder) or {}
        m.update(complete=True, rows=rows)
        _save_manifest(folder, m)
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
                if each is not None:
                    each(t)
                rows += t.num_rows
            part.close()
    os.replace(tmp, out)
    shutil.rmtree(folder)
    return rows
