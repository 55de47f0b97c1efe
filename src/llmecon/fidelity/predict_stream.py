"""``predict`` from a cases file to a CSV or Parquet file as a stream (issues 31 and 36): memory flat
in the number of rows, and the rows of one chunk predicted as columns.

The file is read ``CHUNK_ROWS``-sized blocks at a time with Arrow's CSV reader (every cell as text).
In a block, rows are grouped by the text of every column that is not a number of tokens (the columns
``predict._group_key`` reads: model, system, phase, plan, formats, speculation, deployment, and any
column added later), so ``_group_key`` runs once per distinct group rather than once per row; the
numbers of each group are parsed and checked as arrays (``predict._num``'s rules: finite, >= 0,
batch > 0, within the model's context) and predicted with ``predict.group_columns``, the function
``predict_cases`` uses. The block is written as Arrow columns (C++ CSV or Parquet writer).

Exactness comes from a fall-back, not from a second copy of the rules: a block in which anything is
off (a bad cell, a key ``_group_key`` refuses, a group the library refuses) is predicted again by
``predict_cases`` on its rows as dicts, which raises the same error, naming the same line, as a
whole-file run; a file Arrow cannot read as plain CSV (ragged rows, a quoted newline, bad UTF-8) is
read with Python's csv module (``files.csv_dict_chunks``) and every block predicted by
``predict_cases``. Output values are those of ``write_cases``: CSV floats rounded to 6 significant
digits (written in Arrow's shortest form: 0.0000123457 where ``%.6g`` printed 1.23457e-05; the same
number), '' where a column does not apply; Parquet keeps every float's full precision.

Nothing is written unless the whole file was predicted (``files.atomic_path``).
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np

from ..errors import CatalogError, LlmeconError
from .predict import (DISAGG_OUTPUT_COLUMNS, INPUT_COLUMNS, OPTIONAL_COLUMNS, OUTPUT_COLUMNS, PHASES,
                      _SEQUENCE, _engine_of, _group_key, check_header, group_columns, predict_cases, shape_columns)
# round6 and typed_table are imported from here too (this module's API before predict_store)
from .predict_store import TEXT, Outputs, maybe_blank, round6, typed_table  # noqa: F401

#: rows per block of the Python-csv path (a file Arrow cannot read as plain CSV)
CHUNK_ROWS = 1 << 16
#: Arrow's read block in bytes (~65k rows of a typical 60-byte case; ~100 MB while a block is predicted)
BLOCK_BYTES = 1 << 22
#: the columns holding numbers of tokens (parsed per row); every other column but ``id`` keys a group
SHAPE = frozenset(c for p in PHASES for c in shape_columns(p))


class _Fallback(Exception):
    """Arrow cannot read the file as plain CSV: read it with Python's csv module instead."""


def predict_file(path: str | Path, out: str | Path, *, mode: str, profile=None, where: str | None = None,
                 engine: str | None = None) -> int:
    """Predict every case of CSV ``path`` into ``out`` (.csv or .parquet); the number of cases. ``engine``
    (or an ``engine`` column) picks each row's chip x engine profile, per group as ``predict_cases``."""
    from ..files import atomic_path, check_input

    p = check_input(path, field="cases", what="cases file")
    where = where or str(p)
    header = _header(p, where)
    disagg = "deployment" in header and _any_disaggregated(p, where)
    columns = [c for c in OPTIONAL_COLUMNS + INPUT_COLUMNS
               if c in header or (c == "engine" and engine is not None)] + list(OUTPUT_COLUMNS)
    columns += list(DISAGG_OUTPUT_COLUMNS) if disagg else []
    parquet = Path(out).suffix.lower() == ".parquet"
    with atomic_path(out) as tmp:
        try:
            n = _write(_fast_tables(p, header, columns, where, mode, profile, parquet, engine), tmp, parquet,
                       columns)
        except _Fallback:
            n = _write(_slow_tables(p, header, columns, where, mode, profile, parquet, engine), tmp, parquet,
                       columns)
        if n == 0:
            raise CatalogError(f"{where}: no cases after the header")
    return n


def _header(p: Path, where: str) -> list[str]:
    from contextlib import closing

    from ..files import csv_dict_chunks

    with closing(csv_dict_chunks(p, where, 1)) as chunks:
        header = next(chunks)[0]
    check_header(header, where)
    return header


def _any_disaggregated(p: Path, where: str) -> bool:
    """Whether some row is disaggregated (its output columns are then written): the deployment column
    read alone with Arrow, or with Python's csv module where Arrow cannot read the file."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.csv as pcsv

    from ..files import csv_dict_chunks

    try:
        reader = pcsv.open_csv(p, read_options=pcsv.ReadOptions(block_size=BLOCK_BYTES, use_threads=False),
                               convert_options=pcsv.ConvertOptions(include_columns=["deployment"],
                                                                   column_types={"deployment": pa.string()},
                                                                   strings_can_be_null=False))
        return any(pc.any(pc.equal(pc.utf8_trim_whitespace(b.column(0)), "disaggregated")).as_py() for b in reader)
    except (pa.ArrowInvalid, pa.ArrowKeyError):
        for _, rows, _ in csv_dict_chunks(p, where, CHUNK_ROWS):
            if any(r.get("deployment") == "disaggregated" for r in rows):
                return True
        return False


# ---- writing ---------------------------------------------------------------------------------------


def _write(tables, tmp: Path, parquet: bool, columns: list[str]) -> int:
    """Write the blocks ``tables`` yields: Arrow tables, or (CSV) string arrays of whole lines
    (``predict_store.Outputs.lines``), whose bytes are written as they are."""
    import pyarrow as pa
    import pyarrow.csv as pcsv

    n, writer = 0, None
    with open(tmp, "wb") as f:
        try:
            for table in tables:
                if parquet:
                    import pyarrow.parquet as pq

                    n += table.num_rows
                    writer = writer or pq.ParquetWriter(f, table.schema)
                    writer.write_table(table)
                    continue
                if n == 0:  # the header as write_cases writes it (Arrow would quote every name)
                    f.write((",".join(columns) + "\n").encode())
                if isinstance(table, pa.Array):
                    n += len(table)
                    offsets = np.frombuffer(table.buffers()[1], dtype=np.int32)[table.offset:]
                    f.write(memoryview(table.buffers()[2])[offsets[0]:offsets[len(table)]])
                    continue
                n += table.num_rows
                buf = io.BytesIO()
                try:  # no quotes unless a cell needs them (Arrow's "needed" quotes every text cell)
                    pcsv.write_csv(table, buf, pcsv.WriteOptions(include_header=False, quoting_style="none"))
                except pa.ArrowInvalid:
                    buf = io.BytesIO()
                    pcsv.write_csv(table, buf, pcsv.WriteOptions(include_header=False))
                f.write(buf.getvalue())
        finally:
            if writer is not None:
                writer.close()
    return n


def _floats(columns: list[str], n: int) -> dict:
    return {c: np.full(n, np.nan) for c in OUTPUT_COLUMNS + DISAGG_OUTPUT_COLUMNS
            if c in columns and c not in TEXT + ("chips", "transferred")}


# ---- the slow, exact path: predict_cases on rows as dicts ------------------------------------------


def _rows_table(rows: list[dict], columns: list[str], parquet: bool):
    """``predict_cases``' rows as one block (``_table``)."""
    import pyarrow as pa

    n = len(rows)
    floats = _floats(columns, n)
    for c, arr in floats.items():
        arr[:] = [np.nan if r.get(c, "") == "" else r[c] for r in rows]
    texts = {c: pa.array([str(r.get(c, "")) for r in rows], type=pa.string()) for c in TEXT}
    chips = np.array([r["chips"] for r in rows], dtype=np.int64)
    transferred = np.array([bool(r["transferred"]) for r in rows])
    text_in = {c: pa.array([r.get(c, "") for r in rows], type=pa.string())
               for c in columns if c in INPUT_COLUMNS + OPTIONAL_COLUMNS}
    return typed_table(columns, text_in, floats, texts, chips, transferred, parquet)


def _slow_tables(p, header, columns, where, mode, profile, parquet, engine=None):
    from ..files import csv_dict_chunks

    for _, rows, start in csv_dict_chunks(p, where, CHUNK_ROWS):
        if rows:
            yield _rows_table(predict_cases(rows, mode=mode, profile=profile, where=where, first_line=start + 2,
                                            engine=engine), columns, parquet)


# ---- the fast path: Arrow blocks, rows grouped by their key cells ----------------------------------


def _records(f, size: int):
    """Chunks of ~``size`` bytes of file ``f`` ending at a record boundary: a newline preceded by an even
    number of quote characters (RFC 4180: a doubled quote keeps the parity), so no chunk splits a row."""
    rest = b""
    while True:
        data = f.read(size)
        buf = rest + data
        if not data:
            if buf:
                yield buf
            return
        b = np.frombuffer(buf, dtype=np.uint8)
        newlines = np.flatnonzero(b == 10)
        quotes = np.flatnonzero(b == 34)
        if quotes.size:
            newlines = newlines[np.searchsorted(quotes, newlines) % 2 == 0]
        if not newlines.size:  # no whole record yet: read on
            rest = buf
            continue
        cut = int(newlines[-1]) + 1
        yield buf[:cut]
        rest = buf[cut:]


def _fast_tables(p, header, columns, where, mode, profile, parquet, engine=None):
    """The blocks of a file Arrow reads as plain CSV, predicted. The file is cut into ``BLOCK_BYTES``
    chunks of whole records here and each chunk parsed by Arrow (every cell as text) in this thread:
    Arrow's streaming reader read ahead on its I/O thread (58 MB of a 51 MB file buffered at open,
    75 MB of a 153 MB one), the memory that grew with the rows."""
    import pyarrow as pa
    import pyarrow.csv as pcsv

    convert = pcsv.ConvertOptions(column_types={c: pa.string() for c in header}, strings_can_be_null=False,
                                  quoted_strings_can_be_null=False)
    start = 0
    state = {"limits": {}, "profiles": {}, "store": Outputs(columns, csv=not parquet), "engine": engine}
    with open(p, "rb") as f:
        for chunk in _records(f, BLOCK_BYTES):
            read = pcsv.ReadOptions(column_names=header, skip_rows=1 if start == 0 else 0, use_threads=False,
                                    block_size=len(chunk) + 1)
            try:
                table = pcsv.read_csv(pa.py_buffer(chunk), read_options=read, convert_options=convert)
            except (pa.ArrowInvalid, pa.ArrowKeyError):
                raise _Fallback from None
            if table.num_rows:
                batch = table.combine_chunks().to_batches()[0]
                yield _block(batch, header, columns, where, start, mode, profile, parquet, state)
            start += table.num_rows


def _block(batch, header, columns, where, start, mode, profile, parquet, state):
    """One block: fast when every row is fine, else ``predict_cases`` on its rows (the exact error)."""
    import pyarrow.compute as pc

    cols = {c: (pc.utf8_trim_whitespace(a) if maybe_blank(a) else a) for c, a in zip(header, batch.columns)}
    out = _fast_block(cols, header, columns, where, start, mode, profile, parquet, state)
    if out is not None:
        return out
    names = list(cols)
    rows = [dict(zip(names, vals)) for vals in zip(*(cols[c].to_pylist() for c in names))]
    got = predict_cases(rows, mode=mode, profile=profile, where=where, first_line=start + 2, engine=state["engine"])
    return _rows_table(got, columns, parquet)


def _key_codes(cols: dict, key_cols: list[str], n: int) -> np.ndarray:
    """One integer per row, equal where every key cell is equal: each column dictionary-encoded and
    the codes combined mixed-radix (renumbered densely before they could overflow)."""
    import pyarrow.compute as pc

    code = np.zeros(n, dtype=np.int64)
    for c in key_cols:
        enc = pc.dictionary_encode(cols[c])
        code = code * len(enc.dictionary) + enc.indices.to_numpy(zero_copy_only=False)
        if len(enc.dictionary) > 1 and int(code.max()) > 1 << 40:
            code = np.unique(code, return_inverse=True)[1].ravel().astype(np.int64)
    return code


def _groups(cols: dict, header: list[str], where: str, start: int, engine, profile):
    """{(key, engine): row indices (ascending)} of a block, or None when a key or an engine is refused;
    ``_group_key`` and ``_engine_of`` run on the first row of each distinct combination of key cells."""
    key_cols = [c for c in header if c not in SHAPE and c != "id"]
    n = len(cols[header[0]])
    _, first, inverse = np.unique(_key_codes(cols, key_cols, n), return_index=True, return_inverse=True)
    key_of_code, merged = [], {}
    for i in first:
        row = {c: cols[c][int(i)].as_py() for c in header}
        at = f"{where} line {start + int(i) + 2}"
        try:
            key = (_group_key(row, at), _engine_of(row, engine, profile, at))
        except LlmeconError:
            return None
        key_of_code.append(merged.setdefault(key, len(merged)))
    group = np.asarray(key_of_code)[np.ravel(inverse)]
    order = np.argsort(group, kind="stable")
    bounds = np.searchsorted(group[order], np.arange(len(merged) + 1))
    return {key: order[bounds[g]:bounds[g + 1]] for key, g in merged.items()}


def _parsed(cols: dict) -> dict:
    """{shape column: (floats, empty mask)} of a whole block, parsed once (floats None when some cell
    is no number: that column is then parsed group by group, where a row may not read it)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    out = {}
    for c in SHAPE & set(cols):
        empty = pc.equal(cols[c], "")
        try:
            v = pc.cast(pc.if_else(empty, "0", cols[c]), pa.float64()).to_numpy(zero_copy_only=False)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            v = None
        out[c] = (v, empty.to_numpy(zero_copy_only=False))
    return out


def _column(cols: dict, parsed: dict, c: str, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """(floats with 0 where empty, empty mask) of column ``c`` at rows ``idx``; None if a cell is no number."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if c not in cols:  # an absent column reads as empty cells, as in ``predict._num``
        return np.zeros(len(idx)), np.ones(len(idx), dtype=bool)
    v, empty = parsed[c]
    if v is not None:
        return v[idx], empty[idx]
    cells = cols[c].take(pa.array(idx))
    e = pc.equal(cells, "")
    try:
        return (pc.cast(pc.if_else(e, "0", cells), pa.float64()).to_numpy(zero_copy_only=False),
                e.to_numpy(zero_copy_only=False))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None


def _numbers(cols: dict, parsed: dict, key, idx: np.ndarray, limits: dict) -> dict | None:
    """The group's ``shape_columns`` as float arrays under ``predict._num``'s rules, or None."""
    phase = key[2]
    out = {}
    for c in shape_columns(phase):
        got = _column(cols, parsed, c, idx)
        if got is None:
            return None
        v, empty = got
        if empty.any() and (c != "context" or phase == "decode"):
            return None
        if not np.all(np.isfinite(v) & (v >= 0)) or (c == "batch" and not np.all(v > 0)):
            return None
        out[c] = v
    from ..catalog.models import get_model

    model = key[0]
    if model not in limits:
        try:
            limits[model] = get_model(model).max_context
        except LlmeconError:
            return None
    seq, _ = _SEQUENCE[phase]
    if limits[model] and np.any(sum(out[c] for c in seq) > limits[model]):
        return None
    return out


def _fidelity(key, eng: str, mode, profile, cache: dict):
    """(mode, profile) of a group: the command's, or calibrated with the chip's profile for ``eng``
    (``predict_cases``' rule)."""
    if not eng:
        return mode, profile
    if (key[1], eng) not in cache:
        from ..catalog.hardware import get_system
        from .engines import engine_profile

        cache[key[1], eng] = ("calibrated", engine_profile(get_system(key[1]).accelerator, eng))
    return cache[key[1], eng]


def _fast_block(cols, header, columns, where, start, mode, profile, parquet, state):
    """A block predicted on its distinct rows (every cell but ``id`` equal: a repeated case is
    grouped, parsed, checked and looked up once), or None when some row is not fine."""
    import pyarrow as pa

    store = state["store"]
    store.bound()
    n = len(cols[header[0]])
    cells = [c for c in header if c != "id"]
    _, first, inverse = np.unique(_key_codes(cols, cells, n), return_index=True, return_inverse=True)
    distinct = {c: cols[c].take(pa.array(first)) for c in cells}
    groups = _groups(distinct, cells, where, start, state["engine"], profile)
    if groups is None:
        return None
    codes = np.empty(len(first), dtype=np.int64)
    engines, which = [], np.zeros(len(first), dtype=np.int32)
    parsed = _parsed(distinct)
    for (key, eng), idx in groups.items():
        col = _numbers(distinct, parsed, key, idx, state["limits"])
        if col is None:
            return None
        try:
            g_mode, g_prof = _fidelity(key, eng, mode, profile, state["profiles"])
            codes[idx] = store.rows((key, eng), col, lambda c: group_columns(key, c, mode=g_mode, profile=g_prof))
        except LlmeconError:
            return None
        which[idx] = len(engines)
        engines.append(eng)
    inverse = np.ravel(inverse)
    codes, which = codes[inverse], which[inverse]
    text_in = {c: cols[c] for c in columns if c in cols and c != "engine"}
    if "engine" in columns:  # the engine each row was priced with ('' = none), as predict_cases writes it
        text_in["engine"] = pa.DictionaryArray.from_arrays(pa.array(which), pa.array(engines, type=pa.string())) \
            .cast(pa.string())
    if not parquet:
        lines = store.lines(codes, [text_in[c] for c in columns if c in text_in])
        if lines is not None:
            return lines
    return store.table(codes, text_in, parquet)
