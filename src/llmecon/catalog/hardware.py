"""The hardware catalogue: ``accelerators.toml`` and ``systems.toml`` -> Accelerator / System specs.

Strict at the edge (DESIGN.md §3, §4): every table is checked for unknown and missing keys (with
"did you mean"), every quantity is parsed with its unit (``"3.35 TB/s"`` -> 3.35e12), every entry
carries ``source`` and an ISO ``as_of`` date, and anything wrong is a ``CatalogError`` naming the
file, the entry and the key. Peaks are dense peaks per dtype; links are per direction per chip.
Where the figures come from is recorded per entry in the TOML files themselves.
"""

from __future__ import annotations

import datetime
import functools
import re
import tomllib
from collections.abc import Mapping
from importlib import resources

from .. import units
from ..errors import CatalogError, LlmeconError, did_you_mean, unknown_name
from ..hardware import Accelerator, Link, System
from ._strict import check_keys

PEAK_DTYPES = ("fp32", "bf16", "fp16", "fp8", "int8", "fp4")
STATUSES = ("datasheet", "announced", "mixed")

_ACCELERATOR_KEYS = dict(
    required=("vendor", "peak_flops", "hbm_capacity", "hbm_bandwidth", "status", "source", "as_of"),
    optional=("power", "notes"),
)
_SYSTEM_KEYS = dict(required=("accelerator", "chips", "description", "source", "as_of"),
                    optional=("scale_up", "scale_out"))
_LINK_KEYS = dict(required=("bandwidth", "latency", "source"), optional=("name",))
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def _read_toml(text: str, where: str) -> dict:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:  # message carries "(at line L, column C)"
        raise CatalogError(f"{where}: invalid TOML: {exc}") from exc


def _quantity(entry: Mapping, key: str, dimension: str, where: str) -> float:
    try:
        return units.parse(entry[key], dimension, field=f"{where} {key}")
    except LlmeconError as exc:
        raise CatalogError(str(exc)) from exc


def _text(entry: Mapping, key: str, where: str) -> str:
    value = entry[key]
    if not isinstance(value, str) or not value.strip():
        raise CatalogError(f"{where} {key}: expected a non-empty string, got {value!r}")
    return value.strip()


def _as_of(entry: Mapping, where: str) -> str:
    value = entry["as_of"]
    if isinstance(value, datetime.date) and not isinstance(value, datetime.datetime):
        return value.isoformat()
    try:
        if isinstance(value, str) and _DATE.fullmatch(value):
            return datetime.date.fromisoformat(value).isoformat()
    except ValueError:
        pass
    raise CatalogError(f"{where} as_of: expected a date 'YYYY-MM-DD', got {value!r}")


def _peaks(entry: Mapping, where: str) -> dict[str, float]:
    table = entry["peak_flops"]
    if not isinstance(table, Mapping) or not table:
        raise CatalogError(f"{where} peak_flops: expected a table of dtype = \"<n> TFLOP/s\" (dense peaks), "
                           f"got {table!r}")
    for dtype in table:
        if dtype not in PEAK_DTYPES:
            raise CatalogError(f"{where} peak_flops: unknown dtype '{dtype}'{did_you_mean(dtype, PEAK_DTYPES)}; "
                               f"allowed: {', '.join(PEAK_DTYPES)}")
    return {dtype: _quantity(table, dtype, "flops_per_s", f"{where} peak_flops") for dtype in table}


def load_accelerators(text: str, where: str = "accelerators.toml") -> dict[str, Accelerator]:
    """Parse accelerator tables from TOML ``text`` (``where`` names the file in errors)."""
    result = {}
    for name, entry in _read_toml(text, where).items():
        at = f"{where} [{name}]"
        check_keys(entry, **_ACCELERATOR_KEYS, where=at)
        status = _text(entry, "status", at)
        if status not in STATUSES:
            raise CatalogError(f"{at} status: '{status}' is not one of {', '.join(STATUSES)}"
                               f"{did_you_mean(status, STATUSES)}")
        try:
            result[name] = Accelerator(
                name=name,
                vendor=_text(entry, "vendor", at),
                peak_flops_per_s=_peaks(entry, at),
                hbm_bytes=_quantity(entry, "hbm_capacity", "bytes", at),
                hbm_bandwidth_bytes_per_s=_quantity(entry, "hbm_bandwidth", "bytes_per_s", at),
                power_w=_quantity(entry, "power", "w", at) if "power" in entry else None,
                status=status,
                source=_text(entry, "source", at),
                as_of=_as_of(entry, at),
                notes=_text(entry, "notes", at) if "notes" in entry else "",
            )
        except CatalogError:
            raise
        except LlmeconError as exc:  # SpecError from the dataclass checks
            raise CatalogError(f"{at}: {exc}") from exc
    return result


def _link(system: str, tier: str, entry: object, where: str) -> Link:
    at = f"{where} {tier}"
    check_keys(entry, **_LINK_KEYS, where=at)
    try:
        return Link(
            name=_text(entry, "name", at) if "name" in entry else f"{system} {tier}",
            bandwidth_bytes_per_s=_quantity(entry, "bandwidth", "bytes_per_s", at),
            latency_s=_quantity(entry, "latency", "s", at),
            source=_text(entry, "source", at),
        )
    except CatalogError:
        raise
    except LlmeconError as exc:
        raise CatalogError(f"{at}: {exc}") from exc


def load_systems(text: str, accelerators: Mapping[str, Accelerator],
                 where: str = "systems.toml") -> dict[str, System]:
    """Parse system tables from TOML ``text``, resolving each ``accelerator`` by name."""
    result = {}
    for name, entry in _read_toml(text, where).items():
        at = f"{where} [{name}]"
        check_keys(entry, **_SYSTEM_KEYS, where=at)
        chip = entry["accelerator"]
        if chip not in accelerators:
            hint = did_you_mean(str(chip), accelerators)
            raise CatalogError(f"{at} accelerator: unknown accelerator '{chip}'{hint}; "
                               f"known: {', '.join(sorted(accelerators))}")
        chips = entry["chips"]
        if not isinstance(chips, int) or isinstance(chips, bool) or chips < 1:
            raise CatalogError(f"{at} chips: expected a whole number >= 1, got {chips!r}")
        try:
            result[name] = System(
                name=name,
                accelerator=accelerators[chip],
                chips=chips,
                scale_up=_link(name, "scale_up", entry["scale_up"], at) if "scale_up" in entry else None,
                scale_out=_link(name, "scale_out", entry["scale_out"], at) if "scale_out" in entry else None,
                description=_text(entry, "description", at),
                source=_text(entry, "source", at),
                as_of=_as_of(entry, at),
            )
        except CatalogError:
            raise
        except LlmeconError as exc:  # SpecError, e.g. a multi-chip domain without scale_up
            raise CatalogError(f"{at}: {exc}") from exc
    return result


def _resource(filename: str) -> str:
    return resources.files(__package__).joinpath(filename).read_text(encoding="utf-8")


@functools.cache
def _accelerators() -> dict[str, Accelerator]:
    return load_accelerators(_resource("accelerators.toml"), "accelerators.toml")


@functools.cache
def _systems() -> dict[str, System]:
    return load_systems(_resource("systems.toml"), _accelerators(), "systems.toml")


def accelerators() -> dict[str, Accelerator]:
    """All catalogued accelerators by name (a fresh dict over cached, frozen specs)."""
    return dict(_accelerators())


def systems() -> dict[str, System]:
    """All catalogued systems by name (a fresh dict over cached, frozen specs)."""
    return dict(_systems())


def get_accelerator(name: str) -> Accelerator:
    """One accelerator by name; an unknown name raises CatalogError with "did you mean"."""
    table = _accelerators()
    if name not in table:
        raise unknown_name("accelerator", name, table)
    return table[name]


def get_system(name: str) -> System:
    """One system by name; an unknown name raises CatalogError with "did you mean"."""
    table = _systems()
    if name not in table:
        raise unknown_name("system", name, table)
    return table[name]
