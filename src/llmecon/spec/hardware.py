"""Hardware specs: accelerators, links, and systems (a scale-up domain plus its scale-out network).

Facts only (from the catalogue, each with its source); derived numbers are properties.
Conventions (DESIGN.md §3): dense peaks per dtype, per-direction link bandwidths per chip,
decimal bytes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from ..dtypes import DType, get_dtype
from ..errors import SpecError, require_choice, require_number, require_whole


@dataclass(frozen=True, kw_only=True)
class Accelerator:
    """One chip (package): dense peak FLOP/s per dtype, HBM capacity and bandwidth.

    ``unpublished_peaks`` maps a dtype the chip runs but whose dense peak no source states to why
    (e.g. Rubin's bf16 and fp8): a matmul that would run at that format is refused with an error
    naming the missing fact, instead of silently falling back to a slower format it has a peak for.
    ``derived_peaks`` maps a dtype whose peak is arithmetic on a published figure (not a per-chip
    datasheet value) to that arithmetic and its source; outputs label it derived.

    ``hbm_bytes`` is the capacity every fit uses: the bytes the device exposes (``hbm_basis``
    "device", e.g. nvidia-smi's memory.total) where a source gives them, else the nominal datasheet
    figure ("nominal"); ``hbm_nominal_bytes`` keeps the datasheet figure when the two differ.
    """

    name: str
    vendor: str
    peak_flops_per_s: Mapping[str, float]
    hbm_bytes: float
    hbm_bandwidth_bytes_per_s: float
    power_w: float | None = None
    hbm_nominal_bytes: float | None = None
    hbm_source: str = ""
    status: str = "datasheet"
    source: str = ""
    as_of: str = ""
    notes: str = ""
    unpublished_peaks: Mapping[str, str] = field(default_factory=dict)
    derived_peaks: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "peak_flops_per_s", MappingProxyType(dict(self.peak_flops_per_s)))
        object.__setattr__(self, "derived_peaks", MappingProxyType(dict(self.derived_peaks)))
        stray = sorted(set(self.derived_peaks) - set(self.peak_flops_per_s))
        if stray:
            raise SpecError(f"accelerator {self.name}: derived_peaks names {', '.join(stray)} without a peak",
                            field="derived_peaks", fix="give the derived figure in peak_flops_per_s too")
        object.__setattr__(self, "unpublished_peaks", MappingProxyType(dict(self.unpublished_peaks)))
        both = sorted(set(self.peak_flops_per_s) & set(self.unpublished_peaks))
        if both:
            raise SpecError(f"accelerator {self.name}: {', '.join(both)} has both a peak and an unpublished "
                            f"reason; keep one")
        if not self.peak_flops_per_s:
            raise SpecError(f"accelerator {self.name}: peak_flops_per_s needs at least one dtype")
        owner = f"accelerator {self.name}"
        for dtype, value in self.peak_flops_per_s.items():
            require_number(f"peak_flops_per_s.{dtype}", value, minimum=0, exclusive=True, owner=owner)
        require_number("hbm_bytes", self.hbm_bytes, minimum=0, exclusive=True, owner=owner)
        require_number("hbm_bandwidth_bytes_per_s", self.hbm_bandwidth_bytes_per_s, minimum=0, exclusive=True,
                       owner=owner)

    @property
    def hbm_basis(self) -> str:
        """'device' when ``hbm_bytes`` is the capacity the device exposes, else 'nominal' (datasheet)."""
        return "device" if self.hbm_nominal_bytes is not None else "nominal"

    @property
    def hbm_datasheet_bytes(self) -> float:
        """The datasheet's (nominal) capacity: ``hbm_nominal_bytes`` where a device figure replaces it in
        the fits, else ``hbm_bytes`` (H100: 80e9 B, against the 85.52e9 B the device exposes). For
        quoting the vendor's figure (the lecture's claims); fits use ``hbm_bytes``."""
        return self.hbm_bytes if self.hbm_nominal_bytes is None else self.hbm_nominal_bytes

    def compute_dtype(self, dtype: str | DType) -> str:
        """The tensor-core format a matmul on ``dtype`` weights runs at on this chip.

        The first of ``DType.compute`` this chip has a peak for (fp16 shares the bf16 peak). A format
        listed in ``unpublished_peaks`` before it stops the search with an error naming the missing
        figure: the chip has those units, so falling back would price a slower format it would not use.
        """
        d = get_dtype(dtype)
        for candidate in d.compute:
            key = "bf16" if candidate == "fp16" and "fp16" not in self.peak_flops_per_s else candidate
            if key in self.peak_flops_per_s:
                return key
            if key in self.unpublished_peaks:
                raise SpecError(
                    f"accelerator {self.name} has no published dense {key} peak ({self.unpublished_peaks[key]}), "
                    f"so a {d.name} matmul cannot be timed on it", field="system",
                    fix=f"pick another system, or formats whose matmuls run at a published peak of {self.name} "
                        f"({', '.join(self.peak_flops_per_s)}) where the analysis allows")
        raise SpecError(
            f"accelerator {self.name}: no dense peak for {d.name} or any format it can run at "
            f"({', '.join(d.compute)}); known peaks: {', '.join(self.peak_flops_per_s)}"
        )

    def peak(self, dtype: str | DType) -> float:
        """Dense peak FLOP/s of a matmul on ``dtype`` weights (after the compute fallback)."""
        return self.peak_flops_per_s[self.compute_dtype(dtype)]

    def flops_per_byte(self, dtype: str | DType = "bf16") -> float:
        """Roofline ridge point: peak FLOP/s over HBM bytes/s (H100 bf16: 989e12/3.35e12 = 295)."""
        return self.peak(dtype) / self.hbm_bandwidth_bytes_per_s

    @property
    def hbm_drain_s(self) -> float:
        """Time to read all of HBM once: the capacity in use (``hbm_bytes``) / bandwidth (SPEC A4: H100
        23.9 ms on the datasheet's 80 GB; 25.5 ms on the 85.52e9 B the device exposes)."""
        return self.hbm_bytes / self.hbm_bandwidth_bytes_per_s


@dataclass(frozen=True, kw_only=True)
class Link:
    """One network tier as seen by one chip: per-direction bandwidth and latencies.

    ``topology`` says how the chips of the tier are wired: ``"switch"`` (every chip reaches every
    other at its full ``bandwidth_bytes_per_s``: NVSwitch, InfiniBand, UB switches) or ``"torus"``
    (TPU ICI, Trainium NeuronLink: each chip has 2 links per axis to its neighbours, wrapping
    around; ``torus_dims`` = chips per axis; ``bandwidth_bytes_per_s`` is still the chip's
    per-direction total over all its links). Collectives on a torus are priced by
    ``step.torus`` (dimension-ordered rings), not the switch formulas.

    ``latency_s`` is the tier's per-operation latency floor: every collective or send on the tier
    pays it once, whatever its step count (``collectives``; the catalogue's values are lower
    bounds on every measured operation, docs/assumptions.md "Collectives"). ``step_latency_s`` is
    a latency per algorithm step (per ring hop): 0 on a catalogue link (ideal mode), set by an
    efficiency profile (``LinkEfficiency.apply``, calibrated mode).

    ``in_switch_reduction`` says the switches of this tier can reduce in the network (NVLink SHARP,
    "NVLS", on NVSwitch gen3 and later; InfiniBand SHARP), so an all-reduce can send and receive
    each byte once (``collectives.in_switch_all_reduce_s``). False unless a source says the
    hardware has it and it is enabled; the catalogue cites that source in ``source``.
    """

    name: str
    bandwidth_bytes_per_s: float
    latency_s: float
    source: str = ""
    in_switch_reduction: bool = False
    step_latency_s: float = 0.0
    topology: str = "switch"
    torus_dims: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        owner = f"link {self.name}"
        require_number("bandwidth_bytes_per_s", self.bandwidth_bytes_per_s, minimum=0, exclusive=True, owner=owner)
        require_number("latency_s", self.latency_s, minimum=0, owner=owner)
        require_number("step_latency_s", self.step_latency_s, minimum=0, owner=owner)
        if not isinstance(self.in_switch_reduction, bool):
            raise SpecError(f"{owner}: in_switch_reduction must be True or False, got {self.in_switch_reduction!r}")
        require_choice("topology", self.topology, TOPOLOGIES, owner=owner)
        if isinstance(self.torus_dims, (str, bytes)) or not hasattr(self.torus_dims, "__iter__"):
            raise SpecError(f"{owner}: torus_dims must be a sequence of whole numbers, got {self.torus_dims!r}")
        object.__setattr__(self, "torus_dims", tuple(self.torus_dims))
        if self.topology == "torus":
            if not self.torus_dims:
                raise SpecError(f"{owner}: a torus needs torus_dims, its chips along each axis (e.g. (4, 4, 4))",
                                field="torus_dims", fix="give torus_dims = [4, 4, 4] (chips per axis)")
            for i, k in enumerate(self.torus_dims):
                require_whole(f"torus_dims[{i}]", k, minimum=2, owner=owner)
            if self.in_switch_reduction:
                raise SpecError(f"{owner}: a torus has no switches, so in_switch_reduction must be False",
                                field="in_switch_reduction", fix="drop in_switch_reduction or use topology 'switch'")
        elif self.torus_dims:
            raise SpecError(f"{owner}: torus_dims {self.torus_dims} given for topology '{self.topology}'",
                            field="torus_dims", fix="set topology = 'torus' or drop torus_dims")

    @property
    def torus_chips(self) -> int:
        """Chips in the torus (the product of ``torus_dims``); 0 for a switch."""
        return math.prod(self.torus_dims) if self.torus_dims else 0

    @property
    def torus_link_bytes_per_s(self) -> float:
        """Per-direction bandwidth of ONE torus link: the chip's per-direction total spread evenly over
        its 2 links per axis (2·len(torus_dims) links: 6 in a 3D torus). SpecError on a switch."""
        if self.topology != "torus":
            raise SpecError(f"link {self.name}: per-link bandwidth is defined for a torus only")
        return self.bandwidth_bytes_per_s / (2 * len(self.torus_dims))

    @classmethod
    def from_bidirectional(cls, *, name: str, bidirectional_bytes_per_s: float, latency_s: float,
                           source: str = "", in_switch_reduction: bool = False) -> "Link":
        """Vendors quote NVLink both directions summed (H100 "900 GB/s" = 450 GB/s each way)."""
        return cls(name=name, bandwidth_bytes_per_s=bidirectional_bytes_per_s / 2.0,
                   latency_s=latency_s, source=source, in_switch_reduction=in_switch_reduction)

    @classmethod
    def from_bits_per_s(cls, *, name: str, bits_per_s: float, latency_s: float, source: str = "",
                        in_switch_reduction: bool = False) -> "Link":
        """NICs are quoted in bits per second per direction (400 Gb/s = 50 GB/s)."""
        return cls(name=name, bandwidth_bytes_per_s=bits_per_s / 8.0, latency_s=latency_s, source=source,
                   in_switch_reduction=in_switch_reduction)


TOPOLOGIES = ("switch", "torus")
TIER_KINDS = ("hbm", "host_dram", "cpu_lpddr", "local_nvme", "flash", "hdd", "network_disk")


@dataclass(frozen=True, kw_only=True)
class MemoryTier:
    """One level of the memory hierarchy a system can hold KV cache in (SPEC C12).

    ``capacity_bytes`` and ``bandwidth_bytes_per_s`` are for the whole tier as the system sees it
    (e.g. all host DIMMs of a DGX node). ``bandwidth_bytes_per_s`` is None where no source states
    it (the analysis then says so instead of guessing); ``bandwidth_basis`` says whether the figure
    is an interface/datasheet "peak" or a measured "sustained" one.

    Two ways to price a tier, both optional and never invented: ``usd_per_hour``, the whole tier's
    rent (or the user's own amortised cost) per hour; or ``usd_per_byte``, its purchase price per
    byte (capex), spread evenly over ``amortisation_s`` (straight-line, no cost of capital, no power
    or floor space), dated by ``price_as_of`` and sourced by ``price_source``. ``usd_per_hour`` wins
    when both are set (it is the deployment's actual rate). ``holding_usd_per_byte_s`` is what Gray's
    break-even interval needs (``llmecon.econ.kvcache.gray_break_even_s``).
    """

    name: str
    kind: str
    capacity_bytes: float
    bandwidth_bytes_per_s: float | None
    bandwidth_basis: str = "peak"
    usd_per_hour: float | None = None
    usd_per_byte: float | None = None
    amortisation_s: float | None = None
    price_source: str = ""
    price_as_of: str = ""
    status: str = ""
    source: str = ""
    notes: str = ""

    def __post_init__(self) -> None:
        owner = f"memory tier {self.name}"
        require_choice("kind", self.kind, TIER_KINDS, owner=owner)
        require_number("capacity_bytes", self.capacity_bytes, minimum=0, exclusive=True, owner=owner)
        if self.bandwidth_bytes_per_s is not None:
            require_number("bandwidth_bytes_per_s", self.bandwidth_bytes_per_s, minimum=0, exclusive=True,
                           owner=owner)
        require_choice("bandwidth_basis", self.bandwidth_basis, ("peak", "sustained"), owner=owner)
        if self.usd_per_hour is not None:
            require_number("usd_per_hour", self.usd_per_hour, minimum=0, hint="omit it when unknown", owner=owner)
        if self.usd_per_byte is not None:
            require_number("usd_per_byte", self.usd_per_byte, minimum=0, hint="omit it when unknown", owner=owner)
            if self.amortisation_s is None:
                raise SpecError(f"{owner}: usd_per_byte (a purchase price) needs amortisation_s, the period in "
                                f"seconds it is spread over")
        if self.amortisation_s is not None:
            require_number("amortisation_s", self.amortisation_s, minimum=0, exclusive=True, hint="seconds",
                           owner=owner)

    @property
    def drain_s(self) -> float | None:
        """Capacity over bandwidth: the time to read the whole tier once. It is also Gray's break-even
        interval of a tier against itself (holding s bytes T costs T·s/C of the tier, re-reading them
        s/BW of it, whatever its price); between two tiers the break-even is the slower tier's drain
        time x its price per byte / the faster tier's (``econ.pricing.break_even_hold_s``). None if
        the bandwidth is unknown."""
        if self.bandwidth_bytes_per_s is None:
            return None
        return self.capacity_bytes / self.bandwidth_bytes_per_s

    @property
    def holding_usd_per_byte_s(self) -> float | None:
        """Dollars per byte per second of holding data in this tier: ``usd_per_hour`` / 3600 / capacity
        (rent), else ``usd_per_byte`` / ``amortisation_s`` (straight-line capex); None if unpriced."""
        if self.usd_per_hour is not None:
            return self.usd_per_hour / 3600.0 / self.capacity_bytes
        if self.usd_per_byte is not None:
            return self.usd_per_byte / self.amortisation_s
        return None


@dataclass(frozen=True, kw_only=True)
class System:
    """A scale-up domain of ``chips`` identical accelerators, and the scale-out network beyond it.

    Aggregate FLOP/s, HBM bandwidth and capacity are ``chips`` x per chip (SPEC conventions).
    ``scale_up`` may be None only for a single chip; ``scale_out`` is None where no NIC is stated.
    """

    name: str
    accelerator: Accelerator
    chips: int
    scale_up: Link | None
    scale_out: Link | None
    description: str = ""
    source: str = ""
    as_of: str = ""
    tiers: tuple[MemoryTier, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "tiers", tuple(self.tiers))
        if any(t.kind == "hbm" for t in self.tiers):
            raise SpecError(f"system {self.name}: tiers lists the levels below HBM; HBM comes from the accelerator")
        require_whole("chips", self.chips, owner=f"system {self.name}")
        if self.chips > 1 and self.scale_up is None:
            raise SpecError(f"system {self.name}: a domain of {self.chips} chips needs a scale_up link")
        up = self.scale_up
        if up is not None and up.topology == "torus" and up.torus_chips != self.chips:
            dims = "x".join(map(str, up.torus_dims))
            raise SpecError(f"system {self.name}: scale_up torus {dims} has {up.torus_chips} chips, the system "
                            f"{self.chips}", field="scale_up.torus_dims",
                            fix="make the product of torus_dims equal chips")
        if self.scale_out is not None and self.scale_out.topology != "switch":
            raise SpecError(f"system {self.name}: scale_out must be a switched network (topology 'switch'); "
                            f"a torus is a scale-up domain", field="scale_out.topology", fix="drop topology there")

    @property
    def hbm_bytes(self) -> float:
        return self.chips * self.accelerator.hbm_bytes

    @property
    def hbm_bandwidth_bytes_per_s(self) -> float:
        return self.chips * self.accelerator.hbm_bandwidth_bytes_per_s

    @property
    def hbm_tier(self) -> MemoryTier:
        """HBM of the whole domain as a tier (chips x per-chip capacity and bandwidth)."""
        a = self.accelerator
        return MemoryTier(name="HBM", kind="hbm", capacity_bytes=self.hbm_bytes,
                          bandwidth_bytes_per_s=self.hbm_bandwidth_bytes_per_s,
                          status=a.status, source=a.source)

    @property
    def memory_tiers(self) -> tuple[MemoryTier, ...]:
        """HBM first, then the catalogued tiers below it."""
        return (self.hbm_tier, *self.tiers)

    def peak(self, dtype: str | DType) -> float:
        return self.chips * self.accelerator.peak(dtype)

    @property
    def scale_out_ratio(self) -> float:
        """Scale-up over scale-out per-direction bandwidth per chip (DGX H100: 450/50 = 9)."""
        if self.scale_up is None or self.scale_out is None:
            raise SpecError(f"system {self.name}: needs both scale_up and scale_out links for this ratio")
        return self.scale_up.bandwidth_bytes_per_s / self.scale_out.bandwidth_bytes_per_s
