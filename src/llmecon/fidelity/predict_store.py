"""The outputs a streamed ``predict`` (to a file) has computed so far, one row per distinct (group, shape)
(issue 36 item 4): the rows of a block are integer codes into it, so an output is computed, rounded
and formatted once however often its case repeats in the file (a sweep, a benchmark mix), and a block
is written by gathering rows (``Outputs.lines``, ``Outputs.table``) rather than by formatting every
number of every row.

Why this is exact: every output column ``predict.group_columns`` returns is an element-wise function
of its row's numbers (``predict.shape_columns``) and of the group (model, system, plan, formats,
speculation, engine), so a row's outputs do not depend on the rows predicted beside it: the stored
row of a (group, shape) is the row ``predict_cases`` computes for it. CSV text is ``write_cases``'
(6 significant digits: ``round6``, then Arrow's shortest float text, the same characters its CSV
writer prints; '' where a column does not apply); Parquet keeps every float's full precision.

Bounded: past ``STORE_ROWS`` rows the store is emptied before the next block (``Outputs.bound``), so
memory is flat in the file's rows whatever its number of distinct cases (~0.3 kB a stored row).
"""

from __future__ import annotations

import numpy as np

from .predict import DISAGG_OUTPUT_COLUMNS, OUTPUT_COLUMNS

#: stored (group, shape) rows beyond which the store restarts between blocks (~40 MB)
STORE_ROWS = 1 << 17
#: output columns that are text, or equal on a group's rows
TEXT = ("bound", "mode", "profile")
#: characters a CSV cell cannot hold unquoted (RFC 4180)
STRUCTURAL = '[,"\r\n]'
_STRUCTURAL_BYTES = np.frombuffer(b',"\r\n', dtype=np.uint8)


def maybe_blank(a) -> bool:
    """Whether some byte of string array ``a``'s data could be whitespace (ASCII <= 32 or any byte of
    a multi-byte character): False means trimming changes nothing (conservative, never wrong)."""
    b = _data(a)
    return b is not None and bool(np.any((b <= 32) | (b >= 128)))


def plain(a) -> bool:
    """Whether no cell of string array ``a`` holds a comma, quote or line break (its data bytes scanned
    with numpy: ~50x faster than a regex match over its cells; conservative, never wrong)."""
    b = _data(a)
    return b is None or not np.any(np.isin(b, _STRUCTURAL_BYTES, kind="table"))


def _data(a):
    import pyarrow as pa

    if isinstance(a, pa.ChunkedArray):
        a = a.combine_chunks()
    if isinstance(a, pa.DictionaryArray):
        a = a.dictionary
    buf = a.buffers()[2]
    return None if buf is None else np.frombuffer(buf, dtype=np.uint8)


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


def float_columns(columns: list[str]) -> list[str]:
    outputs = OUTPUT_COLUMNS + DISAGG_OUTPUT_COLUMNS
    return [c for c in columns if c in outputs and c not in TEXT + ("chips", "transferred")]


def typed_table(columns: list[str], text_in: dict, floats: dict, texts: dict, chips, transferred, parquet: bool):
    """One block as an Arrow table of ``columns``: input cells and ``texts`` as Arrow text arrays,
    outputs typed (NaN = ''; CSV floats ``round6``-ed, ``transferred`` as True/False)."""
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


class Outputs:
    """The stored (group, shape) rows of one file (module docstring). ``rows`` maps a group's shapes to
    store rows (computing the new ones); ``lines``/``table`` gather a block's rows."""

    def __init__(self, columns: list[str], *, csv: bool):
        self.columns, self.csv = columns, csv
        self.outputs = [c for c in columns if c in OUTPUT_COLUMNS + DISAGG_OUTPUT_COLUMNS]
        self.floats = float_columns(columns)
        self.clear()

    def clear(self) -> None:
        self.known: dict = {}           # group -> (its shapes as sorted void rows, their store rows)
        self.parts: list[dict] = []     # segments appended since the last gather
        self.flat: dict | None = None   # every segment, concatenated
        self.size = 0
        self.values = {c: [] for c in TEXT}   # the text of each code of a text column
        self.quoted = False             # some stored text needs CSV quotes

    def bound(self) -> None:
        """Empty the store when it holds more than ``STORE_ROWS`` rows (called between blocks)."""
        if self.size > STORE_ROWS:
            self.clear()

    def rows(self, group, col: dict, compute) -> np.ndarray:
        """Store rows of a group's cases (``col``: shape column -> floats); ``compute(col)`` gives
        ``group_columns`` of the shapes not stored yet."""
        names = list(col)
        m = np.ascontiguousarray(np.column_stack([col[c] for c in names]))
        rows = m.view(np.dtype((np.void, m.dtype.itemsize * m.shape[1]))).ravel()
        shapes, inverse = np.unique(rows, return_inverse=True)
        known = self.known.get(group)
        if known is not None:
            pos = np.minimum(np.searchsorted(known[0], shapes), len(known[0]) - 1)
            new = known[0][pos] != shapes
        else:
            new = np.ones(len(shapes), dtype=bool)
        if new.any():
            fresh = shapes[new].view(np.float64).reshape(-1, len(names))
            values, meta = compute({c: fresh[:, j] for j, c in enumerate(names)})
            ids = self._append(values, meta, len(fresh))
            merged = np.concatenate([known[0], shapes[new]]) if known is not None else shapes[new]
            at = np.concatenate([known[1], ids]) if known is not None else ids
            order = np.argsort(merged, kind="stable")
            known = self.known[group] = (merged[order], at[order])
            pos = np.searchsorted(known[0], shapes)
        return known[1][pos][np.ravel(inverse)]

    def _code(self, c: str, value: str) -> int:
        values = self.values[c]
        if value not in values:
            values.append(value)
        return values.index(value)

    def _append(self, values: dict, meta: dict, m: int) -> np.ndarray:
        seg = {c: np.full(m, np.nan) for c in self.floats}
        for c, v in values.items():
            if c in seg:
                seg[c] = np.asarray(v, dtype=np.float64)
        err = meta["expected_tpot_error"]
        if "expected_tpot_error" in seg and err != "":
            seg["expected_tpot_error"] = np.full(m, float(err))
        bound = np.asarray(values["bound"]).astype(str)
        distinct, inverse = np.unique(bound, return_inverse=True)
        seg["bound"] = np.array([self._code("bound", str(v)) for v in distinct], dtype=np.int32)[np.ravel(inverse)]
        seg["mode"] = np.full(m, self._code("mode", str(meta["mode"])), dtype=np.int32)
        seg["profile"] = np.full(m, self._code("profile", str(meta["profile"])), dtype=np.int32)
        seg["chips"] = np.full(m, int(meta["chips"]), dtype=np.int64)
        seg["transferred"] = np.full(m, bool(meta["transferred"]))
        self.parts.append(seg)
        self.flat = None
        self.size += m
        return np.arange(self.size - m, self.size, dtype=np.int64)

    def _texts(self, seg: dict, c: str):
        import pyarrow as pa

        return pa.DictionaryArray.from_arrays(pa.array(seg[c]), pa.array(self.values[c], type=pa.string())) \
            .cast(pa.string())

    def _text(self, seg: dict):
        """The CSV text of a segment's outputs, each row ending its line: ``write_cases``' cells."""
        import pyarrow as pa
        import pyarrow.compute as pc

        cells = []
        for c in self.outputs:
            if c in TEXT:
                cells.append(self._texts(seg, c))
            elif c == "chips":
                cells.append(pc.cast(pa.array(seg[c]), pa.string()))
            elif c == "transferred":
                cells.append(pa.array(np.where(seg[c], "True", "False"), type=pa.string()))
            else:
                v = round6(seg[c])
                cells.append(pc.cast(pa.array(v, type=pa.float64(), mask=np.isnan(v)), pa.string()))
        self.quoted = self.quoted or any(pc.any(pc.match_substring_regex(a, STRUCTURAL)).as_py()
                                         for a, c in zip(cells, self.outputs) if c in TEXT)
        text = pc.binary_join_element_wise(*cells, ",", null_handling="replace", null_replacement="")
        return pc.binary_join_element_wise(text, pa.scalar(""), "\n")

    def _gather(self) -> dict:
        """Every stored row as one array per column; CSV text formatted once per block for the rows
        stored since the last gather (one call over them, not one per group)."""
        import pyarrow as pa

        if self.flat is None:
            done = self.parts[0] if "text" in self.parts[0] else None
            new = self.parts[1:] if done is not None else self.parts
            flat = {c: np.concatenate([p[c] for p in self.parts]) for c in new[0]}
            if self.csv:
                fresh = self._text({c: np.concatenate([p[c] for p in new]) for c in new[0]})
                flat["text"] = fresh if done is None else pa.concat_arrays([done["text"], fresh])
            self.flat = flat
            self.parts = [flat]
        return self.flat

    def lines(self, codes: np.ndarray, text_in: list):
        """A block as CSV text (a string array: each row's line), or None when a cell needs quotes
        (then ``table`` and Arrow's quoting CSV writer)."""
        import pyarrow as pa
        import pyarrow.compute as pc

        if self.quoted or not all(plain(a) for a in text_in):
            return None
        return pc.binary_join_element_wise(*text_in, self._gather()["text"].take(pa.array(codes)), ",")

    def table(self, codes: np.ndarray, text_in: dict, parquet: bool):
        """A block as a typed Arrow table (``typed_table``)."""
        import pyarrow as pa

        flat = self._gather()
        texts = {c: pa.DictionaryArray.from_arrays(pa.array(flat[c][codes]), pa.array(self.values[c] or [""],
                                                                                      type=pa.string()))
                 .cast(pa.string()) for c in TEXT}
        floats = {c: flat[c][codes] for c in self.floats}
        return typed_table(self.columns, text_in, floats, texts, flat["chips"][codes], flat["transferred"][codes],
                           parquet)
