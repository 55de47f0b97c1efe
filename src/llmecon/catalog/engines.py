"""The serving engine as an input (``catalog/engines.toml``): each chip's default engine with why, and
the expected error of a profile transferred to a chip that has no data for an engine. Read strictly
(unknown or missing keys are CatalogErrors with "did you mean")."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from importlib import resources

from ..errors import CatalogError
from ._strict import check_keys, read_toml, text

ERROR_KEYS = ("tpot_median", "tpot_p90", "ttft_median", "ttft_p90")
METHODS = ("nearest", "pooled")


@dataclass(frozen=True, kw_only=True)
class EngineDefault:
    """A chip's default engine ('' = its legacy engine-less profile), why, and the source of the why."""

    chip: str
    engine: str
    why: str
    source: str


@dataclass(frozen=True, kw_only=True)
class EngineCatalog:
    defaults: dict[str, EngineDefault]
    transfer_error: dict[tuple[str, str], dict[str, float]]   # (method, engine) -> {ERROR_KEYS: share}
    transfer_source: dict[tuple[str, str], str]


def parse_engines(raw: str, where: str = "catalog/engines.toml") -> EngineCatalog:
    """The engine catalogue from TOML text (module docstring)."""
    data = read_toml(raw, where)
    check_keys(data, required=("defaults",), optional=("transfer",), where=where)
    defaults = {}
    for chip, entry in data["defaults"].items():
        at = f"{where} [defaults.{chip}]"
        check_keys(entry, required=("engine", "why", "source"), where=at)
        if not isinstance(entry["engine"], str):
            raise CatalogError(f"{at} engine: expected a string ('' = the legacy profile), got {entry['engine']!r}")
        defaults[chip] = EngineDefault(chip=chip, engine=entry["engine"].strip(), why=text(entry, "why", at),
                                       source=text(entry, "source", at))
    errors, sources = {}, {}
    for method, engines in data.get("transfer", {}).items():
        check_keys({method: 0}, required=(), optional=METHODS, where=f"{where} [transfer]")
        for engine, entry in engines.items():
            at = f"{where} [transfer.{method}.{engine}]"
            check_keys(entry, required=ERROR_KEYS + ("source",), where=at)
            vals = {}
            for k in ERROR_KEYS:
                v = entry[k]
                if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v < 100:
                    raise CatalogError(f"{at} {k}: expected a share >= 0 (0.12 = 12%), got {v!r}")
                vals[k] = float(v)
            errors[(method, engine)] = vals
            sources[(method, engine)] = text(entry, "source", at)
    return EngineCatalog(defaults=defaults, transfer_error=errors, transfer_source=sources)


@functools.lru_cache(maxsize=None)
def engine_catalog() -> EngineCatalog:
    """The shipped ``catalog/engines.toml``."""
    raw = resources.files("llmecon.catalog").joinpath("engines.toml").read_text(encoding="utf-8")
    return parse_engines(raw)


def default_engine(chip: str) -> str | None:
    """The default engine of ``chip`` (None: not listed, or '' = its legacy profile)."""
    d = engine_catalog().defaults.get(chip)
    return d.engine or None if d is not None else None
