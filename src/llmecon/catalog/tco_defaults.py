"""Default TCO inputs and rents per accelerator (``tco_defaults.toml``), copied with their sources from
shared/reference/economics.yaml (issue 35, items 2 and 3). Read strictly: unknown or missing keys are
errors with "did you mean".

``default_tco_values(system)`` gives the inputs of ``resolve.tco`` for a system whose chip has a capex and a
system-power figure (else None); ``facility_watts(system)`` the chip's share of its system's rated power
(hosts, NICs and switches included; None without a figure); ``rent(system)`` the published rent per
chip-hour (None without one). Each returns its figures' sources.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from importlib import resources

from ..errors import CatalogError, did_you_mean
from ._strict import check_keys, read_toml, text

FILE = "tco_defaults.toml"
_FIGURE_KEYS = dict(required=("value", "id", "source", "as_of", "primary"), optional=("derived", "notes", "divide_by"))
COMMON_KEYS = ("amortisation_years", "cost_of_capital", "pue", "usd_per_kwh", "hosting_usd_per_kw_month")
CHIP_KEYS = ("capex_usd_per_chip", "system_watts_per_chip")


@dataclass(frozen=True, kw_only=True)
class Figure:
    """One sourced number: its value, the economics.yaml entry it is copied from, source, date, whether the
    source is primary, and the arithmetic when derived."""

    value: float
    id: str
    source: str
    as_of: str
    primary: bool
    derived: str = ""
    notes: str = ""

    def cite(self) -> str:
        how = f"; {self.derived}" if self.derived else ""
        return f"{self.id} ({'primary' if self.primary else 'secondary'}, {self.as_of}{how})"


def _figure(entry: object, where: str) -> Figure:
    check_keys(entry, **_FIGURE_KEYS, where=where)
    value = entry["value"]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise CatalogError(f"{where} value: expected a number >= 0, got {value!r}")
    divide = entry.get("divide_by", 1)
    if isinstance(divide, bool) or not isinstance(divide, (int, float)) or divide <= 0:
        raise CatalogError(f"{where} divide_by: expected a number > 0, got {divide!r}")
    value = value / divide
    if not isinstance(entry["primary"], bool):
        raise CatalogError(f"{where} primary: expected true or false, got {entry['primary']!r}")
    return Figure(value=float(value), id=text(entry, "id", where), source=text(entry, "source", where),
                  as_of=text(entry, "as_of", where), primary=entry["primary"],
                  derived=text(entry, "derived", where) if "derived" in entry else "",
                  notes=text(entry, "notes", where) if "notes" in entry else "")


def parse_defaults(raw: str, where: str = FILE, accelerators=None) -> tuple[dict, dict, dict, dict]:
    """(common {key: Figure}, chips {accelerator: {key: Figure}}, rents {accelerator: Figure}, tier prices
    {tier kind: Figure in USD per GB}) from TOML."""
    table = read_toml(raw, where)
    check_keys(table, required=("common",), optional=("chip", "rent", "tier_price"), where=where)
    check_keys(table["common"], required=COMMON_KEYS, where=f"{where} [common]")
    common = {k: _figure(v, f"{where} [common.{k}]") for k, v in table["common"].items()}
    known = None if accelerators is None else tuple(accelerators)

    def accel(name: str, at: str) -> str:
        if known is not None and name not in known:
            raise CatalogError(f"{at}: unknown accelerator '{name}'{did_you_mean(name, known)}")
        return name

    chips = {}
    for name, entry in table.get("chip", {}).items():
        at = f"{where} [chip.{name}]"
        check_keys(entry, required=(), optional=CHIP_KEYS, where=at)
        chips[accel(name, at)] = {k: _figure(v, f"{at}.{k}") for k, v in entry.items()}
    rents = {accel(n, f"{where} [rent.{n}]"): _figure(e, f"{where} [rent.{n}]")
             for n, e in table.get("rent", {}).items()}
    from ..spec.hardware import TIER_KINDS

    tiers = {}
    for kind, entry in table.get("tier_price", {}).items():
        at = f"{where} [tier_price.{kind}]"
        if kind not in TIER_KINDS or kind == "hbm":
            raise CatalogError(f"{at}: unknown tier kind '{kind}'{did_you_mean(kind, TIER_KINDS)}")
        tiers[kind] = _figure(entry, at)
    return common, chips, rents, tiers


@functools.cache
def _defaults() -> tuple[dict, dict, dict, dict]:
    from .hardware import accelerators

    raw = resources.files(__package__).joinpath(FILE).read_text(encoding="utf-8")
    return parse_defaults(raw, accelerators=accelerators())


def _chip(system) -> dict:
    return _defaults()[1].get(system.accelerator.name, {})


def facility_watts(system) -> Figure | None:
    """The chip's share of its system's rated power (hosts, NICs, switches included), or None."""
    return _chip(system).get("system_watts_per_chip")


def rent(system) -> Figure | None:
    """The published rent per chip-hour of ``system``'s accelerator, or None."""
    return _defaults()[2].get(system.accelerator.name)


def common() -> dict:
    """The inputs every system shares: {key: Figure}."""
    return dict(_defaults()[0])


def default_tco_values(system) -> dict | None:
    """``resolve.tco`` values for ``system`` from the defaults (all-in capex per chip, system capex 0, the
    system's power per chip, the common inputs, hosting = $/kW-month x the chip's system kW), with
    ``source`` and ``as_of`` naming every figure; None when the chip has no capex or no power figure."""
    chip = _chip(system)
    if not all(k in chip for k in CHIP_KEYS):
        return None
    c = common()
    capex, watts = chip["capex_usd_per_chip"], chip["system_watts_per_chip"]
    figures = {"chip_capex_usd": capex, "watts_per_chip": watts, **{k: c[k] for k in COMMON_KEYS}}
    source = "catalogue TCO defaults (llmecon/catalog/tco_defaults.toml, from shared/reference/economics.yaml): " \
             + "; ".join(f"{k} {f.value:g} = {f.cite()}" for k, f in figures.items())
    return {"chip_capex_usd": capex.value, "system_capex_usd": 0.0,
            "amortisation_years": c["amortisation_years"].value, "cost_of_capital": c["cost_of_capital"].value,
            "watts_per_chip": watts.value, "pue": c["pue"].value, "usd_per_kwh": c["usd_per_kwh"].value,
            "hosting_usd_per_chip_month": c["hosting_usd_per_kw_month"].value * watts.value / 1000.0,
            "source": source, "notes": "catalogue defaults as read up to 2026-11; each figure's date is in source"}


def tier_price(kind: str) -> Figure | None:
    """The default purchase price in USD per decimal GB of a memory tier of ``kind`` (None: no figure)."""
    return _defaults()[3].get(kind)


def with_default_tier_prices(tiers) -> tuple:
    """``tiers`` (``spec.hardware.MemoryTier``) with each unpriced non-HBM tier priced at the default USD/GB
    of its kind, amortised straight-line over the default amortisation (``MemoryTier.usd_per_byte``)."""
    from dataclasses import replace

    years = common()["amortisation_years"].value
    out = []
    for t in tiers:
        fig = tier_price(t.kind) if t.kind != "hbm" else None
        if fig is not None and t.usd_per_hour is None and t.usd_per_byte is None:
            t = replace(t, usd_per_byte=fig.value / 1e9, amortisation_s=years * 365.25 * 86400.0,
                        price_source=f"catalogue default: {fig.cite()}", price_as_of=fig.as_of)
        out.append(t)
    return tuple(out)
