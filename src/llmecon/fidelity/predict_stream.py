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
                      _SEQUENCE, _group_key, check_header, group_columns, predict_cases, shape_columns)

#: rows per block of the Python-csv path (a file Arrow cannot read as plain CSV)
CHUNK_ROWS = 1 << 16
#: Arrow's read block in bytes (~65k rows of a typical 60-byte case; ~100 MB while a block is predicted)
BLOCK_BYTES = 1 << 22
#: the columns holding numbers of tokens (parsed per row); every other column but ``id`` keys a group
SHAPE = frozenset(c for p in PHASES for c in shape_columns(p))
#: output columns that are text, or equal on a group's rows
TEXT = ("bound", "mode", "profile")


class _Fallback(Exception):
    """Arrow cannot read the file as plain CSV: read it with Python's csv module instead."""


def predict_file(path: str | Path, out: str | Path, *, mode: str, profile=None, where: str | None = None,
                 engine: str | None = None) -> int:
    """Predict every case of CSV ``path`` into ``out`` (.csv or .parquet); the number of cases. ``engine``
    (or an ``engine`` column) picks each row's chip x engine profile: such files take the exact
    row-by-row path (``predict_cases``), which resolves it per group."""
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
            if engine is not None or "engine" in header:
                raise _Fallback
            n = _write(_fast_tables(p, header, columns, where, mode, profile, parquet), tmp, parquet)
        except _Fallback:
            n = _write(_slow_tables(p, header, columns, where, mode, profile, parquet, engine), tmp, parquet)
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


def _write(tables, tmp: Path, parquet: bool) -> int:
    import pyarrow as pa
    import pyarrow.csv as pcsv

    n, writer = 0, None
    with open(tmp, "wb") as f:
        try:
            for table in tables:
                n += table.num_rows
                if parquet:
                    import pyarrow.parquet as pq

                    writer = writer or pq.ParquetWriter(f, table.schema)
                    writer.write_table(table)
                    continue
                if n == table.num_rows:  # the header as write_cases writes it (Arrow would quote every name)
                    f.write((",".join(table.column_names) + "\n").encode())
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


def round6(x: np.ndarray) -> np.ndarray:
    """The float nearest ``float(f"{v:.6g}")`` of each ``v`` (6 significant digits), vectorised: the
    digits as a whole number, scaled by an exact power of ten (a correctly rounded product or
    quotient, so the shortest repr of the result is those digits). Magnitudes beyond 1e+-290 (whose
    power of ten overflows) are formatted one by one."""
    x = np.asarray(x, dtype=np.float64)
    a = np.abs(x)
    ok = (a > 1e-290) & (a < 1e290)
    with np.errstate(all="ignore"):
        shift = 5 - np.floor(np.log10(np.where(ok, a, 1.0)))  # digits = round(x * 10**shift)
        p = 10.0 ** np.abs(shift)
        up = shift >= 0
        digits = np.round(np.where(up, x * p, x / p))
        big = np.abs(digits) >= 1e6  # log10 rounding put the exponent one too low (9.999995 -> 10.0000)
        if big.any():
            digits = np.where(big, np.round(digits / 10), digits)
            shift = np.where(big, shift - 1, shift)
            p = 10.0 ** np.abs(shift)
            up = shift >= 0
        out = np.where(ok, np.where(up, digits / p, digits * p), x)
    rare = np.nonzero(~ok & np.isfinite(x) & (x != 0))[0]
    if rare.size:
        out[rare] = [float(f"{v:.6g}") for v in x[rare]]
    return out


class _Texts:
    """A text output column of a block as codes into its few distinct values (bound, mode, profile)."""

    def __init__(self, n: int):
        self.codes, self.values = np.full(n, -1, dtype=np.int32), []

    def code(self, value: str) -> int:
        if value not in self.values:
            self.values.append(value)
        return self.values.index(value)

    def put(self, idx: np.ndarray, value) -> None:
        if isinstance(value, str):
            self.codes[idx] = self.code(value)
            return
        distinct, inverse = np.unique(np.asarray(value).astype(str), return_inverse=True)
        self.codes[idx] = np.array([self.code(str(v)) for v in distinct], dtype=np.int32)[inverse]

    def arrow(self):
        import pyarrow as pa

        codes = np.where(self.codes < 0, len(self.values), self.codes).astype(np.int32)  # unset: ''
        return pa.DictionaryArray.from_arrays(pa.array(codes), pa.array(self.values + [""], type=pa.string())) \
            .cast(pa.string())


def _table(columns: list[str], text_in: dict, floats: dict, texts: dict, chips, transferred, parquet: bool):
    """One block as an Arrow table of ``columns``: input cells and ``texts`` as Arrow text arrays,
    outputs typed (NaN = '')."""
    import pyarrow as pa

    arrays = []
    for c in columns:
        if c in text_in:
            arrays.append(text_in[c])
        elif c in texts:
            arrays.append(texts[c])
        elif c == "chips":
            arrays.append(pa.array(chips, type=pa.int64()))
        elif c == "transferred":
            arrays.append(pa.array(transferred, type=pa.bool_()) if parquet
                          else pa.array(np.where(transferred, "True", "False"), type=pa.string()))
        else:
            v = floats[c] if parquet else round6(floats[c])
            arrays.append(pa.array(v, type=pa.float64(), mask=np.isnan(v)))
    return pa.Table.from_arrays(arrays, names=columns)


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
    return _table(columns, text_in, floats, texts, chips, transferred, parquet)


def _slow_tables(p, header, columns, where, mode, profile, parquet, engine=None):
    from ..files import csv_dict_chunks

    for _, rows, start in csv_dict_chunks(p, where, CHUNK_ROWS):
        if rows:
            yield _rows_table(predict_cases(rows, mode=mode, profile=profile, where=where, first_line=start + 2,
                                            engine=engine), columns, parquet)


# ---- the fast path: Arrow blocks, rows grouped by their key text ------------------------------------


def _fast_tables(p, header, columns, where, mode, profile, parquet):
    import pyarrow as pa
    import pyarrow.csv as pcsv

    opts = dict(read_options=pcsv.ReadOptions(block_size=BLOCK_BYTES, use_threads=False),
                convert_options=pcsv.ConvertOptions(column_types={c: pa.string() for c in header},
                                                    strings_can_be_null=False, quoted_strings_can_be_null=False))
    try:
        reader = pcsv.open_csv(p, **opts)
        if reader.schema.names != header:
            raise _Fallback
    except (pa.ArrowInvalid, pa.ArrowKeyError):
        raise _Fallback from None
    start, limits = 0, {}
    while True:
        try:
            batch = reader.read_next_batch()
        except StopIteration:
            return
        except pa.ArrowInvalid:
            raise _Fallback from None
        yield _block(batch, header, columns, where, start, mode, profile, parquet, limits)
        start += batch.num_rows


def _block(batch, header, columns, where, start, mode, profile, parquet, limits):
    """One block: fast when every row is fine, else ``predict_cases`` on its rows (the exact error)."""
    import pyarrow.compute as pc

    cols = {c: pc.utf8_trim_whitespace(batch.column(i)) for i, c in enumerate(header)}
    table = _fast_block(cols, header, columns, where, start, mode, profile, parquet, limits)
    if table is not None:
        return table
    names = list(cols)
    rows = [dict(zip(names, vals)) for vals in zip(*(cols[c].to_pylist() for c in names))]
    out = predict_cases(rows, mode=mode, profile=profile, where=where, first_line=start + 2)
    return _rows_table(out, columns, parquet)


def _groups(cols: dict, header: list[str], where: str, start: int):
    """{key: row indices (ascending)} of a block, or None when a key is refused or a key cell holds
    the separator; ``_group_key`` runs on the first row of each distinct key text."""
    import pyarrow.compute as pc

    key_cols = [c for c in header if c not in SHAPE and c != "id"]
    sep = "\x00\x1f"
    for c in key_cols:
        if pc.any(pc.match_substring(cols[c], "\x00")).as_py():
            return None
    joined = pc.binary_join_element_wise(*(cols[c] for c in key_cols), sep)
    codes = pc.dictionary_encode(joined).indices.to_numpy(zero_copy_only=False)
    _, first = np.unique(codes, return_index=True)
    key_of_code, merged = [], {}
    for i in first:
        row = {c: cols[c][int(i)].as_py() for c in header}
        try:
            key = _group_key(row, f"{where} line {start + int(i) + 2}")
        except LlmeconError:
            return None
        key_of_code.append(merged.setdefault(key, len(merged)))
    group = np.asarray(key_of_code)[codes]
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


_CACHE = object()  # the key of the shape cache in ``limits`` (the per-file state a block passes on)
#: most distinct shapes remembered per group across blocks (~100 B each); beyond, a group's memory restarts
CACHE_SHAPES = 1 << 18


def _cached_columns(key, col: dict, cache: dict, *, mode, profile) -> tuple[dict, dict]:
    """``group_columns`` of the distinct shapes of a group not predicted in an earlier block, and the
    remembered outputs of the others (rows of a file repeat shapes: a sweep, a benchmark mix): each
    output is an element-wise function of its row's numbers, so a row's output does not depend on the
    rows predicted beside it."""
    names = list(col)
    m = np.ascontiguousarray(np.column_stack([col[c] for c in names]))
    rows = m.view(np.dtype((np.void, m.dtype.itemsize * m.shape[1]))).ravel()
    shapes, inverse = np.unique(rows, return_inverse=True)
    known = cache.get(key)
    if known is not None:
        pos = np.minimum(np.searchsorted(known[0], shapes), len(known[0]) - 1)
        new = known[0][pos] != shapes
    else:
        new = np.ones(len(shapes), dtype=bool)
    if new.any():
        fresh = shapes[new].view(np.float64).reshape(-1, len(names))
        values, meta = group_columns(key, {c: fresh[:, j] for j, c in enumerate(names)}, mode=mode, profile=profile)
        if known is None or len(known[0]) + int(new.sum()) > CACHE_SHAPES:
            known = (shapes[:0], {c: np.asarray(v)[:0] for c, v in values.items()}, meta)
        merged = np.concatenate([known[0], shapes[new]])
        order = np.argsort(merged, kind="stable")
        known = (merged[order], {c: np.concatenate([known[1][c], np.asarray(values[c])])[order] for c in values},
                 known[2])
        cache[key] = known
        pos = np.searchsorted(known[0], shapes)
    at = pos[inverse]
    return {c: v[at] for c, v in known[1].items()}, known[2]


def _fast_block(cols, header, columns, where, start, mode, profile, parquet, limits):
    groups = _groups(cols, header, where, start)
    if groups is None:
        return None
    n = len(cols[header[0]])
    floats, texts = _floats(columns, n), {c: _Texts(n) for c in TEXT}
    chips, transferred = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=bool)
    parsed = _parsed(cols)
    for key, idx in groups.items():
        col = _numbers(cols, parsed, key, idx, limits)
        if col is None:
            return None
        try:
            values, meta = _cached_columns(key, col, limits.setdefault(_CACHE, {}), mode=mode, profile=profile)
        except LlmeconError:
            return None
        for c, v in values.items():
            if c == "bound":
                texts[c].put(idx, v)
            else:
                floats[c][idx] = v
        texts["mode"].put(idx, str(meta["mode"]))
        texts["profile"].put(idx, str(meta["profile"]))
        chips[idx], transferred[idx] = meta["chips"], bool(meta["transferred"])
        err = meta["expected_tpot_error"]
        if "expected_tpot_error" in floats and err != "":
            floats["expected_tpot_error"][idx] = err
    text_in = {c: cols[c] for c in columns if c in cols}
    return _table(columns, text_in, floats, {c: t.arrow() for c, t in texts.items()}, chips, transferred, parquet)
