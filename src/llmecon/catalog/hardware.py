"""The hardware catalogue: ``accelerators.toml`` and ``systems.toml`` -> Accelerator / System specs.

Strict at the edge (DESIGN.md §3, §4): every table is checked for unknown and missing keys (with
"did you mean"), every quantity is parsed with its unit (``"3.35 TB/s"`` -> 3.35e12), every entry
carries ``source`` and an ISO ``as_of`` date, and anything wrong is a ``CatalogError`` naming the
file, the entry and the key. Peaks are dense peaks per dtype; links are per direction per chip.
Where the figures come from is recorded per entry in the TOML files themselves.

Memory tiers below HBM (``[[<system>.tiers]]`` in ``systems.toml``) and reference storage devices
(``storage.toml``) are ``MemoryTier`` specs read the same strict way (SPEC C12); a bandwidth no
source gives is left unknown (``bandwidth_unknown = "why"``), never guessed.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from importlib import resources

from .. import units
from ..errors import CatalogError, LlmeconError, did_you_mean, require_whole, unknown_name
from ..spec.hardware import TIER_KINDS, TOPOLOGIES, Accelerator, Link, MemoryTier, System
from ._strict import check_keys, iso_date, read_toml as _read_toml, text as _text

PEAK_DTYPES = ("fp32", "bf16", "fp16", "fp8", "int8", "fp4")
STATUSES = ("datasheet", "announced", "mixed")

_ACCELERATOR_KEYS = dict(
    required=("vendor", "peak_flops", "hbm_capacity", "hbm_bandwidth", "status", "source", "as_of"),
    optional=("power", "notes", "peak_unpublished", "peak_derived", "hbm_exposed", "hbm_exposed_source"),
)
_SYSTEM_KEYS = dict(required=("accelerator", "chips", "description", "source", "as_of"),
                    optional=("scale_up", "scale_out", "tiers"))
_LINK_KEYS = dict(required=("bandwidth", "latency", "source"),
                  optional=("name", "in_switch_reduction", "topology", "torus_dims"))
# Tier status words of shared/reference/memory_tiers.yaml: verified (vendor's own document), secondary
# (third-party material quoting the vendor), derived (arithmetic on those), assumed (a stated guess).
TIER_STATUSES = ("verified", "secondary", "derived", "assumed")
SYSTEM_TIER_KINDS = tuple(k for k in TIER_KINDS if k != "hbm")     # HBM comes from the accelerator
STORAGE_KINDS = ("local_nvme", "flash", "hdd", "network_disk")      # devices, not memory
# A tier's price (optional; SPEC C12 and Gray's rule need one per tier): a purchase price per decimal GB,
# straight-line over amortisation_years, with its own source and as_of date; or price_unknown = "why".
_PRICE_KEYS = ("price_usd_per_gb", "amortisation_years", "price_source", "price_as_of")
_TIER_KEYS = dict(required=("name", "kind", "capacity", "status", "source"),
                  optional=("bandwidth", "bandwidth_basis", "bandwidth_unknown", "notes", *_PRICE_KEYS,
                            "price_unknown"))
_STORAGE_KEYS = dict(required=("name", "kind", "capacity", "bandwidth", "bandwidth_basis", "status", "source"),
                     optional=("notes", *_PRICE_KEYS, "price_unknown"))
SECONDS_PER_YEAR = 365.25 * 86400.0  # the Julian year (IAU): amortisation periods are given in years


def _quantity(entry: Mapping, key: str, dimension: str, where: str) -> float:
    try:
        return units.parse(entry[key], dimension, field=f"{where} {key}")
    except LlmeconError as exc:
        raise CatalogError(str(exc)) from exc


def _as_of(entry: Mapping, where: str, key: str = "as_of") -> str:
    date = iso_date(entry[key])
    if date is None:
        raise CatalogError(f"{where} {key}: expected a date 'YYYY-MM-DD', got {entry[key]!r}")
    return date


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


def _unpublished(entry: Mapping, where: str) -> dict[str, str]:
    """``peak_unpublished = { dtype = "why no source states it" }``: formats the chip runs whose dense
    peak is not published; a matmul that would run at one is refused naming the missing figure."""
    table = entry.get("peak_unpublished", {})
    if not isinstance(table, Mapping):
        raise CatalogError(f"{where} peak_unpublished: expected a table of dtype = \"why no source states it\", "
                           f"got {table!r}")
    for dtype, why in table.items():
        if dtype not in PEAK_DTYPES:
            raise CatalogError(f"{where} peak_unpublished: unknown dtype '{dtype}'{did_you_mean(dtype, PEAK_DTYPES)}; "
                               f"allowed: {', '.join(PEAK_DTYPES)}")
        if not isinstance(why, str) or not why.strip():
            raise CatalogError(f"{where} peak_unpublished.{dtype}: expected a non-empty reason (text), got {why!r}")
        if dtype in entry["peak_flops"]:
            raise CatalogError(f"{where} peak_unpublished.{dtype}: '{dtype}' also has a peak in peak_flops; keep one")
    return dict(table)


def _derived(entry: Mapping, where: str) -> dict[str, str]:
    """``peak_derived = { dtype = "arithmetic and source" }``: peaks in ``peak_flops`` that are derived
    (e.g. a rack figure over its chips), not read per chip in a datasheet; outputs label them."""
    table = entry.get("peak_derived", {})
    if not isinstance(table, Mapping):
        raise CatalogError(f"{where} peak_derived: expected a table of dtype = \"how it is derived, source\", "
                           f"got {table!r}")
    for dtype, how in table.items():
        if dtype not in entry["peak_flops"]:
            raise CatalogError(f"{where} peak_derived.{dtype}: no peak_flops.{dtype} to label"
                               f"{did_you_mean(dtype, tuple(entry['peak_flops']))}; give the figure in peak_flops")
        if not isinstance(how, str) or not how.strip():
            raise CatalogError(f"{where} peak_derived.{dtype}: expected a non-empty derivation (text), got {how!r}")
    return dict(table)


def _hbm(entry: Mapping, where: str) -> tuple[float, float | None, str]:
    """(bytes used for fits, nominal bytes or None, source): ``hbm_exposed`` (the capacity the device
    reports, with ``hbm_exposed_source``, both or neither) replaces the nominal ``hbm_capacity``."""
    nominal = _quantity(entry, "hbm_capacity", "bytes", where)
    given = [k for k in ("hbm_exposed", "hbm_exposed_source") if k in entry]
    if len(given) == 1:
        other = "hbm_exposed_source" if given[0] == "hbm_exposed" else "hbm_exposed"
        raise CatalogError(f"{where} {other}: {given[0]} needs {other} too (the exposed capacity and its source)")
    if not given:
        return nominal, None, _text(entry, "source", where)
    return _quantity(entry, "hbm_exposed", "bytes", where), nominal, _text(entry, "hbm_exposed_source", where)


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
        hbm, nominal, hbm_source = _hbm(entry, at)
        try:
            result[name] = Accelerator(
                name=name,
                vendor=_text(entry, "vendor", at),
                peak_flops_per_s=_peaks(entry, at),
                hbm_bytes=hbm, hbm_nominal_bytes=nominal, hbm_source=hbm_source,
                derived_peaks=_derived(entry, at),
                hbm_bandwidth_bytes_per_s=_quantity(entry, "hbm_bandwidth", "bytes_per_s", at),
                power_w=_quantity(entry, "power", "w", at) if "power" in entry else None,
                status=status,
                source=_text(entry, "source", at),
                as_of=_as_of(entry, at),
                notes=_text(entry, "notes", at) if "notes" in entry else "",
                unpublished_peaks=_unpublished(entry, at),
            )
        except CatalogError:
            raise
        except LlmeconError as exc:  # SpecError from the dataclass checks
            raise CatalogError(f"{at}: {exc}") from exc
    return result


def _link(system: str, tier: str, entry: object, where: str) -> Link:
    """One ``Link``; ``in_switch_reduction`` (optional TOML boolean, default false) is set true only
    where the entry's ``source`` says the switches reduce in the network (NVLink SHARP)."""
    at = f"{where} {tier}"
    check_keys(entry, **_LINK_KEYS, where=at)
    in_switch = entry.get("in_switch_reduction", False)
    if not isinstance(in_switch, bool):
        raise CatalogError(f"{at} in_switch_reduction: expected true or false (a TOML boolean), got {in_switch!r}")
    topology = _choice(entry, "topology", TOPOLOGIES, at) if "topology" in entry else "switch"
    if tier != "scale_up" and "topology" in entry:
        raise CatalogError(f"{at} topology: only a scale_up link has a topology (scale-out is a switched network); "
                           f"drop it")
    dims = entry.get("torus_dims", [])
    if not isinstance(dims, list) or not all(isinstance(k, int) and not isinstance(k, bool) and k >= 2 for k in dims):
        raise CatalogError(f"{at} torus_dims: expected a list of whole numbers >= 2 (chips per axis, e.g. [4, 4, 4]), "
                           f"got {dims!r}")
    if topology == "torus" and not dims:
        raise CatalogError(f"{at} torus_dims: missing; a torus needs its chips per axis, e.g. torus_dims = [4, 4, 4]")
    if topology != "torus" and dims:
        raise CatalogError(f"{at} torus_dims: only a link with topology = \"torus\" has torus_dims")
    try:
        return Link(
            name=_text(entry, "name", at) if "name" in entry else f"{system} {tier}",
            bandwidth_bytes_per_s=_quantity(entry, "bandwidth", "bytes_per_s", at),
            latency_s=_quantity(entry, "latency", "s", at),
            source=_text(entry, "source", at),
            in_switch_reduction=in_switch,
            topology=topology,
            torus_dims=tuple(dims),
        )
    except CatalogError:
        raise
    except LlmeconError as exc:
        raise CatalogError(f"{at}: {exc}") from exc


def _choice(entry: Mapping, key: str, allowed: tuple[str, ...], where: str) -> str:
    value = _text(entry, key, where)
    if value not in allowed:
        raise CatalogError(f"{where} {key}: '{value}' is not one of {', '.join(allowed)}{did_you_mean(value, allowed)}")
    return value


def _positive_quantity(entry: Mapping, key: str, dimension: str, where: str) -> float:
    value = _quantity(entry, key, dimension, where)
    if not value > 0:
        raise CatalogError(f"{where} {key}: must be positive, got {entry[key]!r}")
    return value


def _price(entry: Mapping, where: str) -> dict:
    """The optional price keys as ``MemoryTier`` fields: all four of ``_PRICE_KEYS`` together (a dated,
    sourced purchase price per GB and the years it is spread over), or ``price_unknown``, or none."""
    given = [k for k in _PRICE_KEYS if k in entry]
    if "price_unknown" in entry and given:
        raise CatalogError(f"{where} price_unknown: give the price keys or price_unknown, not both")
    if not given:
        return {}
    missing = [k for k in _PRICE_KEYS if k not in entry]
    if missing:
        raise CatalogError(f"{where}: a price needs {', '.join(_PRICE_KEYS)}; missing {', '.join(missing)}")
    numbers = {}
    for key in ("price_usd_per_gb", "amortisation_years"):
        value = entry[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
            raise CatalogError(f"{where} {key}: expected a positive number, got {value!r}")
        numbers[key] = float(value)
    return dict(usd_per_byte=numbers["price_usd_per_gb"] / 1e9,
                amortisation_s=numbers["amortisation_years"] * SECONDS_PER_YEAR,
                price_source=_text(entry, "price_source", where), price_as_of=_as_of(entry, where, "price_as_of"))


def _tier(entry: object, where: str, *, keys: Mapping, kinds: tuple[str, ...]) -> MemoryTier:
    """One ``MemoryTier`` from a TOML table. With ``bandwidth`` goes ``bandwidth_basis`` (peak or
    sustained); without it, ``bandwidth_unknown`` must say why no source gives it (kept in notes)."""
    check_keys(entry, **keys, where=where)
    if entry["kind"] == "hbm" and "hbm" not in kinds:
        raise CatalogError(f"{where} kind: 'hbm' is not a tier below HBM; HBM comes from the system's accelerator")
    kind = _choice(entry, "kind", kinds, where)
    notes = _text(entry, "notes", where) if "notes" in entry else ""
    if "bandwidth" in entry:
        if "bandwidth_unknown" in entry:
            raise CatalogError(f"{where} bandwidth_unknown: give bandwidth or bandwidth_unknown, not both")
        if "bandwidth_basis" not in entry:
            raise CatalogError(f"{where}: missing required key 'bandwidth_basis' (peak or sustained) for its bandwidth")
        bandwidth = _positive_quantity(entry, "bandwidth", "bytes_per_s", where)
        basis = _choice(entry, "bandwidth_basis", ("peak", "sustained"), where)
    else:
        if "bandwidth_unknown" not in entry:
            raise CatalogError(f"{where} bandwidth: missing; give bandwidth, or bandwidth_unknown = \"why no source "
                               f"gives it\" (never a guess)")
        if "bandwidth_basis" in entry:
            raise CatalogError(f"{where} bandwidth_basis: only meaningful with a bandwidth")
        bandwidth, basis = None, "peak"
        notes = f"Bandwidth unknown: {_text(entry, 'bandwidth_unknown', where)}" + (f" {notes}" if notes else "")
    price = _price(entry, where)
    if "price_unknown" in entry:
        notes += (" " if notes else "") + f"Price unknown: {_text(entry, 'price_unknown', where)}"
    try:
        return MemoryTier(name=_text(entry, "name", where), kind=kind,
                          capacity_bytes=_positive_quantity(entry, "capacity", "bytes", where),
                          bandwidth_bytes_per_s=bandwidth, bandwidth_basis=basis, **price,
                          status=_choice(entry, "status", TIER_STATUSES, where),
                          source=_text(entry, "source", where), notes=notes)
    except CatalogError:
        raise
    except LlmeconError as exc:
        raise CatalogError(f"{where}: {exc}") from exc


def _system_tiers(entries: object, where: str) -> tuple[MemoryTier, ...]:
    if not isinstance(entries, list):
        raise CatalogError(f"{where} tiers: expected an array of tables [[<system>.tiers]], "
                           f"got {type(entries).__name__}")
    tiers = []
    for i, entry in enumerate(entries):
        label = f" '{entry['name']}'" if isinstance(entry, Mapping) and isinstance(entry.get("name"), str) else ""
        tier = _tier(entry, f"{where} tiers[{i}]{label}", keys=_TIER_KEYS, kinds=SYSTEM_TIER_KINDS)
        if any(t.name == tier.name for t in tiers):
            raise CatalogError(f"{where} tiers[{i}] name: '{tier.name}' appears twice")
        tiers.append(tier)
    return tuple(tiers)


def _check_tier_order(system: System, where: str) -> None:
    """HBM first, then tiers in non-decreasing drain time (capacity / bandwidth). A tier whose
    bandwidth is unknown has no drain time: it may sit anywhere after HBM and is skipped here."""
    known = [t for t in system.memory_tiers if t.drain_s is not None]
    for faster, slower in zip(known, known[1:]):
        if slower.drain_s < faster.drain_s:
            raise CatalogError(
                f"{where} tiers: tiers must be listed fastest-draining first (HBM, then capacity/bandwidth "
                f"non-decreasing); '{slower.name}' drains in {units.fmt_seconds(slower.drain_s)}, faster than "
                f"'{faster.name}' before it ({units.fmt_seconds(faster.drain_s)})")


def load_systems(text: str, accelerators: Mapping[str, Accelerator],
                 where: str = "systems.toml") -> dict[str, System]:
    """Parse system tables from TOML ``text``, resolving each ``accelerator`` by name.

    ``[[<system>.tiers]]`` lists the memory levels below HBM (never HBM itself), fastest-draining
    first: HBM's drain time, then each known tier's capacity / bandwidth, must be non-decreasing. A
    tier with ``bandwidth_unknown`` has no drain time (``drain_s`` is None): it may appear anywhere
    after HBM, the ordering check skips it, and users of the tier must treat its drain time as
    unknown (neither zero nor infinite).
    """
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
        try:
            require_whole("chips", chips)
        except LlmeconError:
            raise CatalogError(f"{at} chips: expected a whole number >= 1, got {chips!r}") from None
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
                tiers=_system_tiers(entry["tiers"], at) if "tiers" in entry else (),
            )
        except CatalogError:
            raise
        except LlmeconError as exc:  # SpecError, e.g. a multi-chip domain without scale_up
            raise CatalogError(f"{at}: {exc}") from exc
        _check_tier_order(result[name], at)
    return result


def load_storage(text: str, where: str = "storage.toml") -> dict[str, MemoryTier]:
    """Parse reference storage devices (one drive each) from TOML ``text``, keyed by table name."""
    return {key: _tier(entry, f"{where} [{key}]", keys=_STORAGE_KEYS, kinds=STORAGE_KINDS)
            for key, entry in _read_toml(text, where).items()}


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


@functools.cache
def _storage() -> dict[str, MemoryTier]:
    return load_storage(_resource("storage.toml"), "storage.toml")


def storage_devices() -> dict[str, MemoryTier]:
    """All catalogued storage devices (one drive each) by name (a fresh dict over cached specs)."""
    return dict(_storage())


def get_storage_device(name: str) -> MemoryTier:
    """One storage device by name; an unknown name raises CatalogError with "did you mean"."""
    table = _storage()
    if name not in table:
        raise unknown_name("storage device", name, table)
    return table[name]


def device_tier(name: str, count: int) -> MemoryTier:
    """``count`` catalogued drives striped into one tier named ``"<count> x <name>"``.

    Capacity and bandwidth are ``count`` x one drive's: striping is assumed to scale linearly,
    an upper bound (host PCIe lanes, controllers and filesystems are not modelled). Drain time is
    therefore one drive's.
    """
    require_whole("count", count, owner="device_tier")
    drive = get_storage_device(name)
    if count == 1:
        notes = f"One {drive.name}. {drive.notes}".strip()
    else:
        notes = (f"{count} x {drive.name} striped: capacity and bandwidth are {count} x one drive's, assuming "
                 f"striping scales linearly - an upper bound (host PCIe lanes, controllers and filesystems not "
                 f"modelled). Per drive: {drive.notes}").strip()
    bandwidth = None if drive.bandwidth_bytes_per_s is None else count * drive.bandwidth_bytes_per_s
    return MemoryTier(name=f"{count} x {name}", kind=drive.kind, capacity_bytes=count * drive.capacity_bytes,
                      bandwidth_bytes_per_s=bandwidth, bandwidth_basis=drive.bandwidth_basis,
                      usd_per_hour=None if drive.usd_per_hour is None else count * drive.usd_per_hour,
                      usd_per_byte=drive.usd_per_byte, amortisation_s=drive.amortisation_s,
                      price_source=drive.price_source, price_as_of=drive.price_as_of,
                      status=drive.status if count == 1 else "derived", source=drive.source, notes=notes)
