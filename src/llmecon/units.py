"""SI constants, quantity parsing at the edges, human formatting, and numbers made JSON-safe.

Inside llmecon every quantity is a float in SI base units with the unit in its name
(``hbm_bandwidth_bytes_per_s``). Rates use decimal prefixes (1 TB/s = 1e12 B/s); binary prefixes
(KiB, MiB, GiB, TiB) only where a source says so. Bits are converted to bytes here (``b`` = bit,
``B`` = byte), so "400 Gb/s" is 50e9 B/s.
"""

from __future__ import annotations

import math
import re

import numpy as np

from .errors import UnitError

KILO, MEGA, GIGA, TERA, PETA, EXA = 1e3, 1e6, 1e9, 1e12, 1e15, 1e18
KIB, MIB, GIB, TIB = 2.0**10, 2.0**20, 2.0**30, 2.0**40
MILLI, MICRO, NANO = 1e-3, 1e-6, 1e-9

_PREFIX = {
    "": 1.0, "k": KILO, "K": KILO, "M": MEGA, "G": GIGA, "T": TERA, "P": PETA, "E": EXA,
    "Ki": KIB, "Mi": MIB, "Gi": GIB, "Ti": TIB,
    "m": MILLI, "u": MICRO, "µ": MICRO, "n": NANO,
}
# unit symbol -> (dimension, factor to SI)
_UNITS = {
    "B": ("bytes", 1.0), "b": ("bytes", 1.0 / 8.0),
    "B/s": ("bytes_per_s", 1.0), "b/s": ("bytes_per_s", 1.0 / 8.0), "bps": ("bytes_per_s", 1.0 / 8.0),
    "FLOP/s": ("flops_per_s", 1.0), "FLOPS": ("flops_per_s", 1.0), "OP/s": ("flops_per_s", 1.0),
    "FLOP": ("flops", 1.0),
    "s": ("s", 1.0), "min": ("s", 60.0), "h": ("s", 3600.0), "day": ("s", 86400.0),
    "W": ("w", 1.0),
    "tok": ("tokens", 1.0), "tokens": ("tokens", 1.0), "": ("count", 1.0),
}
_EXAMPLES = {"bytes": "'80 GB'", "bytes_per_s": "'3.35 TB/s'", "flops_per_s": "'989 TFLOP/s'",
             "s": "'5 min', '1 h' or '30 s'", "w": "'700 W'", "tokens": "'200000'"}
_PATTERN = re.compile(r"^\s*([-+]?[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*([A-Za-zµ/]*)\s*$")


def parse(text: str | float | int, dimension: str, *, field: str = "value") -> float:
    """Parse ``"3.35 TB/s"`` into 3.35e12, checking it has ``dimension`` (e.g. ``"bytes_per_s"``).

    A bare number is accepted and taken to be already in SI base units.
    """
    if isinstance(text, bool):
        raise UnitError(f"{field}: expected a quantity in {dimension}, got a boolean")
    if isinstance(text, (int, float)):
        value = float(text)
    else:
        match = _PATTERN.match(str(text))
        if not match:
            raise UnitError(f"{field}: cannot read '{text}' as a quantity; write e.g. "
                            f"{_EXAMPLES.get(dimension, _EXAMPLES['bytes'])}")
        number, unit = float(match.group(1)), match.group(2)
        value = number * _factor(unit, dimension, field, text)
    if not math.isfinite(value):
        raise UnitError(f"{field}: '{text}' is not finite")
    return value


def _factor(unit: str, dimension: str, field: str, text: object) -> float:
    for symbol, (dim, factor) in sorted(_UNITS.items(), key=lambda kv: -len(kv[0])):
        if unit.endswith(symbol) and unit[: len(unit) - len(symbol)] in _PREFIX:
            if dim != dimension:
                continue
            return _PREFIX[unit[: len(unit) - len(symbol)]] * factor
    raise UnitError(f"{field}: '{text}' is not a quantity in {dimension}; write e.g. "
                    f"{_EXAMPLES.get(dimension, _EXAMPLES['bytes'])}")  # the example is of the dimension asked for


def _fmt(value: float, unit: str, prefixes: tuple[tuple[float, str], ...], digits: int) -> str:
    if value is None or not math.isfinite(value):
        return f"{value} {unit}"
    mag = abs(value)
    for factor, prefix in prefixes:
        if mag >= factor:
            return f"{value / factor:.{digits}g} {prefix}{unit}"
    factor, prefix = prefixes[-1]
    return f"{value / factor:.{digits}g} {prefix}{unit}"


_DEC = ((EXA, "E"), (PETA, "P"), (TERA, "T"), (GIGA, "G"), (MEGA, "M"), (KILO, "k"), (1.0, ""))


def fmt_bytes(value: float, digits: int = 3) -> str:
    """Decimal-prefixed bytes: 6.4e11 -> '640 GB'."""
    return _fmt(value, "B", _DEC, digits)


def fmt_rate(value: float, unit: str = "B/s", digits: int = 3) -> str:
    """Decimal-prefixed rate: 3.35e12 -> '3.35 TB/s'."""
    return _fmt(value, unit, _DEC, digits)


def fmt_count(value: float, digits: int = 3) -> str:
    """Decimal-prefixed count: 6.71e11 -> '671 G' (params use fmt_params)."""
    return _fmt(value, "", _DEC, digits).strip()


def fmt_params(value: float, digits: int = 4) -> str:
    """Parameter counts the way model cards write them: 6.71e11 -> '671B'."""
    for factor, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "K")):
        if abs(value) >= factor:
            return f"{value / factor:.{digits}g}{suffix}"
    return f"{value:.{digits}g}"


def fmt_seconds(value: float, digits: int = 3) -> str:
    """Seconds with a readable unit: 0.0131 -> '13.1 ms'."""
    if value is None or not math.isfinite(value):
        return f"{value} s"
    mag = abs(value)
    if mag >= 86400:
        return f"{value / 86400:.{digits}g} day"
    if mag >= 3600:
        return f"{value / 3600:.{digits}g} h"
    if mag >= 60:
        return f"{value / 60:.{digits}g} min"
    for factor, unit in ((1.0, "s"), (MILLI, "ms"), (MICRO, "us"), (NANO, "ns")):
        if mag >= factor:
            return f"{value / factor:.{digits}g} {unit}"
    return f"{value / NANO:.{digits}g} ns"


# ---- JSON at the edges (every --json object and web response) ---------------------------------


def json_num(value) -> float | None:
    """One number as JSON has it: a Python float (from an int, a numpy scalar or a 0-d array), and
    None for None, inf and NaN (JSON has no infinity; docs/json.md: infinite values are null)."""
    if value is None:
        return None
    value = float(np.asarray(value))
    return value if math.isfinite(value) else None


def to_json(obj):
    """A JSON-safe copy of ``obj``: dicts (keys as str), lists, tuples and numpy arrays recursively;
    numpy bools, ints and floats as Python ones; non-finite floats as None. Python ints stay ints
    (use :func:`json_num` where a number must be a float); strings, None and bools pass through."""
    if isinstance(obj, dict):
        return {str(k): to_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_json(v) for v in obj]
    if isinstance(obj, (np.ndarray, np.generic)):
        return to_json(obj.tolist())
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    return obj


def json_fields(obj, *names: str) -> dict:
    """``{name: json_num(obj.name)}`` for each name, in order: the numeric fields of a result object."""
    return {name: json_num(getattr(obj, name)) for name in names}
