"""Measurement tables: the one CSV format that ``llmecon measure`` writes, the validation-set
loaders produce, and ``llmecon calibrate`` / ``validate`` read.

One row per measurement. ``kind`` says what was timed and which columns it needs:

========== =========================================================== ==============================
kind       what was timed                                              columns it needs
========== =========================================================== ==============================
gemm       one matmul C[m,n] = A[m,k]·B[k,n]                           accelerator, m, n, k, dtype
elementwise one memory-bound kernel (norm, add, activation, rope)      accelerator, bytes, dtype
copy       a device-to-device copy (``bytes`` = bytes read + written)  accelerator, bytes
all_reduce one NCCL all-reduce of ``bytes`` per rank                   system, participants,
                                                                       chips_per_node, bytes
send_recv  one point-to-point message of ``bytes``                     system, participants (2),
                                                                       chips_per_node, bytes
decode     one decode step (``output_tokens`` > 1: that many steps,    model, system, batch, context
           the context growing by one each step; ``measured_s`` is
           their total)
prefill    one prefill of ``batch`` prompts of ``prompt_tokens`` after model, system, batch,
           ``context`` cached tokens                                   prompt_tokens
static     a static batch: prefill of ``batch`` prompts then           model, system, batch,
           ``output_tokens`` decode steps (``measured_s`` = total)     prompt_tokens, output_tokens
serving    closed-loop benchmark at concurrency ``batch`` with fixed   model, system, batch,
           prompt/output lengths: mean TPOT and TTFT                   prompt_tokens, output_tokens,
                                                                       measured_tpot_s, measured_ttft_s
train      one training step (``batch`` sequences of ``context``       model, system, batch, context,
           tokens over ``gpus`` GPUs)                                  gpus
========== =========================================================== ==============================

Plan columns ``tp, ep, pp`` default to 1; ``weight_dtype``/``kv_dtype`` default to the model's.
``measured_s`` is required for every kind except ``serving``. ``split`` is ``fit`` or
``holdout`` (empty: decided by ``default_split``). Units are SI: seconds, bytes. Metadata
columns (``source``, ``gpu_name``, ``driver``, ``torch``, ``date``, ``note``) are kept, not used.
"""

from __future__ import annotations

import csv
import hashlib
import io
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from pathlib import Path

from ..errors import CatalogError, did_you_mean

KINDS = ("gemm", "elementwise", "copy", "all_reduce", "send_recv", "decode", "prefill", "static", "serving",
         "train")
OP_KINDS = ("gemm", "elementwise", "copy")
COLLECTIVE_KINDS = ("all_reduce", "send_recv")
STEP_KINDS = ("decode", "prefill", "static", "serving", "train")

_NEEDS = {
    "gemm": ("accelerator", "m", "n", "k", "dtype"),
    "elementwise": ("accelerator", "bytes"),
    "copy": ("accelerator", "bytes"),
    "all_reduce": ("system", "participants", "chips_per_node", "bytes"),
    "send_recv": ("system", "participants", "chips_per_node", "bytes"),
    "decode": ("model", "system", "batch", "context"),
    "prefill": ("model", "system", "batch", "prompt_tokens"),
    "static": ("model", "system", "batch", "prompt_tokens", "output_tokens"),
    "serving": ("model", "system", "batch", "prompt_tokens", "output_tokens", "measured_tpot_s", "measured_ttft_s"),
    "train": ("model", "system", "batch", "context", "gpus"),
}
SPLITS = ("fit", "holdout")
HOLDOUT_SHARE = 0.3  # share of rows ``default_split`` holds out


@dataclass(frozen=True, kw_only=True)
class Measurement:
    """One measured row (see the module docstring for which fields each kind needs)."""

    kind: str
    source: str = ""
    accelerator: str = ""
    system: str = ""
    model: str = ""
    m: float | None = None
    n: float | None = None
    k: float | None = None
    dtype: str = ""
    bytes: float | None = None
    participants: int | None = None
    chips_per_node: int | None = None
    batch: float | None = None
    context: float | None = None
    prompt_tokens: float | None = None
    output_tokens: float | None = None
    tp: int = 1
    ep: int = 1
    pp: int = 1
    gpus: int | None = None
    weight_dtype: str = ""
    kv_dtype: str = ""
    measured_s: float | None = None
    measured_tpot_s: float | None = None
    measured_ttft_s: float | None = None
    split: str = ""
    group: str = ""
    gpu_name: str = ""
    driver: str = ""
    torch: str = ""
    date: str = ""
    note: str = ""

    @property
    def key(self) -> str:
        """A stable identity of what was measured (not of the value), for splits and reports."""
        parts = [f"{f.name}={getattr(self, f.name)}" for f in fields(self)
                 if f.name not in _VALUE_FIELDS and getattr(self, f.name) not in ("", None)]
        return ";".join(parts)

    @property
    def label(self) -> str:
        """A short human description for worst-case tables."""
        if self.kind == "gemm":
            return f"gemm {self.accelerator} {self.dtype} m={_i(self.m)} n={_i(self.n)} k={_i(self.k)}"
        if self.kind in OP_KINDS:
            return f"{self.kind} {self.accelerator} {_i(self.bytes)} B"
        if self.kind in COLLECTIVE_KINDS:
            return f"{self.kind} {self.system} x{self.participants} {_i(self.bytes)} B"
        plan = f"tp{self.tp}" + (f"·ep{self.ep}" if self.ep > 1 else "") + (f"·pp{self.pp}" if self.pp > 1 else "")
        shape = f"B={_i(self.batch)}"
        for name in ("context", "prompt_tokens", "output_tokens"):
            if getattr(self, name) is not None:
                shape += f" {name.split('_')[0]}={_i(getattr(self, name))}"
        return f"{self.kind} {self.model} on {self.system} {plan} {shape}"

    def value_s(self) -> float:
        """The measured number the prediction is compared with (serving: TPOT)."""
        return self.measured_tpot_s if self.kind == "serving" else self.measured_s


_VALUE_FIELDS = {"measured_s", "measured_tpot_s", "measured_ttft_s", "split", "source", "gpu_name", "driver",
                 "torch", "date", "note"}
_FIELDS = {f.name: f for f in fields(Measurement)}
_INT_FIELDS = {"participants", "chips_per_node", "tp", "ep", "pp", "gpus"}
_FLOAT_FIELDS = {"m", "n", "k", "bytes", "batch", "context", "prompt_tokens", "output_tokens", "measured_s",
                 "measured_tpot_s", "measured_ttft_s"}
COLUMNS = tuple(_FIELDS)


def _i(x) -> str:
    return "?" if x is None else f"{x:.0f}" if float(x).is_integer() else f"{x:g}"


def parse_whole(raw: str, column: str, where: str) -> int:
    """CSV text as a whole number >= 1 ('8' or '8.0'), else CatalogError naming the column."""
    try:
        value = float(raw)
    except ValueError:
        raise CatalogError(f"{where} {column}: expected a whole number, got {raw!r}") from None
    if not value.is_integer() or value < 1:
        raise CatalogError(f"{where} {column}: expected a whole number >= 1, got {raw!r}")
    return int(value)


def _parse(name: str, raw: str, where: str):
    raw = raw.strip()
    if name in _INT_FIELDS:
        if raw == "":
            return 1 if name in ("tp", "ep", "pp") else None
        return parse_whole(raw, name, where)
    if name in _FLOAT_FIELDS:
        if raw == "":
            return None
        try:
            value = float(raw)
        except ValueError:
            raise CatalogError(f"{where} {name}: expected a number, got {raw!r}") from None
        if not math.isfinite(value) or value < 0 or (name.startswith("measured") and value == 0):
            raise CatalogError(f"{where} {name}: expected a finite number > 0, got {raw!r}")
        return value
    return raw


def make(row: Mapping, where: str = "measurement") -> Measurement:
    """A validated Measurement from a mapping of column -> text or value (unknown or missing
    columns for its kind are CatalogErrors naming the column)."""
    for key in row:
        if key not in _FIELDS:
            raise CatalogError(f"{where}: unknown column '{key}'{did_you_mean(key, _FIELDS)}; "
                               f"allowed: {', '.join(COLUMNS)}")
    values = {k: _parse(k, "" if v is None else str(v), where) for k, v in row.items()}
    kind = values.get("kind", "")
    if kind not in KINDS:
        raise CatalogError(f"{where} kind: unknown kind {kind!r}{did_you_mean(str(kind), KINDS)}; "
                           f"one of {', '.join(KINDS)}")
    for need in _NEEDS[kind] + (() if kind == "serving" else ("measured_s",)):
        if values.get(need) in (None, ""):
            raise CatalogError(f"{where}: kind '{kind}' needs column '{need}'")
    if values.get("split", "") not in ("",) + SPLITS:
        raise CatalogError(f"{where} split: must be empty, 'fit' or 'holdout', got {values['split']!r}")
    return Measurement(**{k: v for k, v in values.items() if v is not None or _FIELDS[k].default is None})


def read_csv(path: str | Path) -> list[Measurement]:
    """Read a measurement CSV (header row required). Errors name the file, the line and the column."""
    from ..files import read_text

    p = Path(path)
    return parse_csv(read_text(p, field="measurements", what="measurement file"), where=str(p))


def parse_csv(text: str, *, where: str = "measurements") -> list[Measurement]:
    from ..files import csv_rows

    header, reader = csv_rows(text, where)
    if not header:
        raise CatalogError(f"{where}: empty file; expected a header row with at least 'kind'")
    rows = [make({k: v for k, v in r.items() if k is not None}, f"{where} line {i + 2}")
            for i, r in enumerate(reader)]
    if not rows:
        raise CatalogError(f"{where}: no rows after the header")
    return rows


def write_csv(rows: Iterable[Measurement], path: str | Path | None = None) -> str:
    """CSV text of ``rows`` with every column (written to ``path`` when given)."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    for r in rows:
        writer.writerow({k: ("" if getattr(r, k) is None else getattr(r, k)) for k in COLUMNS})
    if path is not None:
        from ..files import write_text

        write_text(path, buf.getvalue())
    return buf.getvalue()


def default_split(row: Measurement) -> str:
    """``row.split`` if set; else a deterministic ~30% hold-out by a hash of ``row.group`` (so
    that whole groups, e.g. one model's rows, are held out together) or of ``row.key``."""
    if row.split:
        return row.split
    digest = hashlib.sha256((row.group or row.key).encode()).digest()
    return "holdout" if int.from_bytes(digest[:4], "big") / 2**32 < HOLDOUT_SHARE else "fit"
