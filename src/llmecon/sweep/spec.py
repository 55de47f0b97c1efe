"""Sweep specs: a TOML file naming the axes of a design-space sweep, read strictly.

Every key is checked (unknown keys are errors with "did you mean", via ``catalog._strict``), every
axis must be non-empty and free of repeats, and every number is checked here, before any work
starts; model, system and plan checks that need the catalogue happen in ``grid.expand``. Axes:

* ``[analytic]``: models, systems, plans ("auto" = ``planner.candidate_plans``, "smallest" =
  ``batching.smallest_plan``, or a list of ``{tp, ep, pp, adp}`` tables or "tp4·ep8" strings),
  phases (decode, prefill), batches, contexts (for prefill: prompt tokens), prices ($/chip-hour,
  optional), weight_dtypes and kv_dtypes (optional; default the model's own).
* ``[simulation]``: models, systems, plans ("smallest" by default, like ``llmecon simulate``),
  policies, workloads (a list of tables: rate, duration or requests, prompt, output, arrival, cv),
  seeds, batch_caps, prices, and scalar SLOs slo_ttft / slo_tpot (seconds).

A numeric axis is a list or a range table ``{start, stop, num, scale = "log" | "linear"}``;
ranges include both ends and are rounded to whole numbers (batches and token counts are whole),
repeats after rounding dropped. Top-level ``mode = "calibrated"`` prices every analytic point
with its system's shipped efficiency profile (``profile = "file.toml"``: that profile, for every
system; systems without one are skipped, with the reason). Omitted: per-point dispatch dtypes and expert imbalance (the
planner's defaults: bf16 dispatch, uniform routing), traces as workloads.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..catalog._strict import check_keys, read_toml
from ..errors import LlmeconError, SpecError, did_you_mean, require_choice, require_number, require_whole
from ..spec.plan import Plan

PHASES = ("decode", "prefill")
PLAN_MODES = ("auto", "smallest")
DEFAULT_CHUNK_POINTS = 262_144   # ~1/40 s of decode evaluation on one core (benchmarks/sweep_throughput.py)
MAX_CHUNK_POINTS = 1 << 22       # 4M points: ~4 GB of arrays at ~1 kB per point in flight
MAX_RANGE_NUM = 1_000_000        # values one range table may expand to (np.linspace holds them all)
DEFAULT_MAX_CHIPS = 512          # the planner's default (planner.SearchOptions.max_chips)
ANALYTIC_OUTPUTS = ("step_s", "compute_s", "memory_s", "comm_s", "bound", "tokens_per_s", "tokens_per_s_per_chip",
                    "tokens_per_s_per_user", "usd_per_mtok", "fits", "memory_per_chip_bytes", "tokens_per_s_per_mw")
SIMULATION_OUTPUTS = ("ttft_p50_s", "ttft_p99_s", "tpot_p50_s", "tpot_p99_s", "e2e_p50_s", "e2e_p99_s",
                      "goodput_requests_per_s", "slo_attainment", "completed", "rejected", "utilization")
# the summary (best points, frontier) reads these, so they are always written
SUMMARY_OUTPUTS = ("fits", "tokens_per_s", "tokens_per_s_per_chip", "tokens_per_s_per_user", "usd_per_mtok",
                   "step_s", "goodput_requests_per_s", "tokens_per_s_per_mw")
OUTPUTS = ANALYTIC_OUTPUTS + SIMULATION_OUTPUTS
TOP_KEYS = ("name", "chunk_points", "outputs", "mode", "profile", "analytic", "simulation")
MODES = ("ideal", "calibrated")
ANALYTIC_KEYS = ("models", "systems", "plans", "max_chips", "phases", "batches", "contexts", "prices",
                 "weight_dtypes", "kv_dtypes")
SIMULATION_KEYS = ("models", "systems", "plans", "max_chips", "policies", "workloads", "seeds", "batch_caps",
                   "prices", "slo_ttft", "slo_tpot")
WORKLOAD_KEYS = ("name", "rate", "duration", "requests", "prompt", "output", "arrival", "cv")
_PLAN_TEXT = re.compile(r"(tp|ep|pp|adp)(\d+)")


@dataclass(frozen=True, kw_only=True)
class PlanAxis:
    """``mode`` "auto" (every planner candidate up to ``max_chips``), "smallest", or "list"."""

    mode: str
    plans: tuple[Plan, ...] = ()
    max_chips: int = DEFAULT_MAX_CHIPS


@dataclass(frozen=True, kw_only=True)
class AnalyticAxes:
    models: tuple[str, ...]
    systems: tuple[str, ...]
    plans: PlanAxis
    phases: tuple[str, ...]
    batches: tuple[float, ...]
    contexts: tuple[float, ...]
    prices: tuple[float, ...] | None          # None: no $ columns (never invented)
    weight_dtypes: tuple[str | None, ...]     # None = the model's own format
    kv_dtypes: tuple[str | None, ...]


@dataclass(frozen=True, kw_only=True)
class WorkloadSpec:
    """A synthetic workload (``serving.workload.synthetic``); lengths in the CLI's text forms."""

    name: str
    rate_per_s: float
    duration_s: float | None
    requests: int | None
    prompt: str
    output: str
    arrival: str = "poisson"
    cv: float = 1.0


@dataclass(frozen=True, kw_only=True)
class SimulationAxes:
    models: tuple[str, ...]
    systems: tuple[str, ...]
    plans: PlanAxis
    policies: tuple[str, ...]
    workloads: tuple[WorkloadSpec, ...]
    seeds: tuple[int, ...]
    batch_caps: tuple[int | None, ...]        # None = the policy's default
    prices: tuple[float, ...] | None
    slo_ttft_s: float | None
    slo_tpot_s: float | None


@dataclass(frozen=True, kw_only=True)
class SweepSpec:
    name: str
    chunk_points: int
    outputs: tuple[str, ...]
    analytic: AnalyticAxes | None
    simulation: SimulationAxes | None
    source: str = ""
    mode: str = "ideal"             # "calibrated": each system's shipped profile, or ``profile``
    profile: str | None = None      # an efficiency profile TOML (implies calibrated)
    tco: tuple[tuple[str, float, float], ...] = ()  # (system, $/chip-hour, facility W per chip) from ``with_tco``

    def tco_of(self, system: str) -> tuple[float, float] | None:
        """(USD per chip-hour, facility watts per chip) of ``system`` from the sweep's TCO inputs, else None."""
        return next(((usd, w) for name, usd, w in self.tco if name == system), None)

    @property
    def analytic_priced(self) -> bool:
        return self.analytic is not None and (self.analytic.prices is not None or bool(self.tco))

    @property
    def simulation_priced(self) -> bool:
        return self.simulation is not None and (self.simulation.prices is not None or bool(self.tco))

    def canonical(self) -> dict:
        """A plain, JSON-ready form (the spec hash and ``--json`` use it)."""
        def plans(p: PlanAxis):
            listed = [{"tp": x.tp, "ep": x.ep, "pp": x.pp, "adp": x.adp} for x in p.plans]
            return {"mode": p.mode, "plans": listed, "max_chips": p.max_chips}

        out: dict = {"name": self.name, "chunk_points": self.chunk_points, "outputs": list(self.outputs)}
        if self.mode != "ideal":  # only when given: ideal specs keep the hash they had
            out["mode"], out["profile"] = self.mode, self.profile
        if self.tco:  # likewise
            out["tco"] = [list(t) for t in self.tco]
        if self.analytic is not None:
            a = self.analytic
            out["analytic"] = {"models": list(a.models), "systems": list(a.systems), "plans": plans(a.plans),
                               "phases": list(a.phases), "batches": list(a.batches), "contexts": list(a.contexts),
                               "prices": None if a.prices is None else list(a.prices),
                               "weight_dtypes": list(a.weight_dtypes), "kv_dtypes": list(a.kv_dtypes)}
        if self.simulation is not None:
            s = self.simulation
            out["simulation"] = {"models": list(s.models), "systems": list(s.systems), "plans": plans(s.plans),
                                 "policies": list(s.policies), "workloads": [vars(w) for w in s.workloads],
                                 "seeds": list(s.seeds), "batch_caps": list(s.batch_caps),
                                 "prices": None if s.prices is None else list(s.prices),
                                 "slo_ttft_s": s.slo_ttft_s, "slo_tpot_s": s.slo_tpot_s}
        return out


# ---- reading ----------------------------------------------------------------------------------


def load_spec(path: str | Path) -> SweepSpec:
    """Read and check a sweep spec file (module docstring); SpecError/CatalogError name the key."""
    from ..files import read_text

    p = Path(path)
    return parse_spec(read_text(p, what="sweep spec", fix="give a TOML file (see docs/sweep.md)"), where=str(p))


def parse_spec(text: str, *, where: str = "sweep spec") -> SweepSpec:
    raw = read_toml(text, where)
    check_keys(raw, required=(), optional=TOP_KEYS, where=where)
    if "analytic" not in raw and "simulation" not in raw:
        raise SpecError(f"{where}: give an [analytic] table, a [simulation] table or both (see docs/sweep.md)")
    name = raw.get("name", Path(where).stem)
    if not isinstance(name, str):
        raise SpecError(f"{where} name: expected a string, got {name!r}")
    chunk = require_whole("chunk_points", raw.get("chunk_points", DEFAULT_CHUNK_POINTS), owner=where)
    if chunk > MAX_CHUNK_POINTS:  # one chunk's arrays are held in memory at once (~1 kB per point)
        raise SpecError(f"{where}: chunk_points {chunk:,} is more than {MAX_CHUNK_POINTS:,}; use the default "
                        f"{DEFAULT_CHUNK_POINTS:,}")
    outputs = _outputs(raw.get("outputs"), where)
    analytic = _analytic(raw["analytic"], f"{where} [analytic]") if "analytic" in raw else None
    simulation = _simulation(raw["simulation"], f"{where} [simulation]") if "simulation" in raw else None
    mode = require_choice("mode", raw.get("mode", "ideal"), MODES, owner=where)
    profile = raw.get("profile")
    if profile is not None:
        if not isinstance(profile, str):
            raise SpecError(f"{where} profile: expected a path to a profile TOML, got {profile!r}")
        mode = "calibrated"
    return SweepSpec(name=name, chunk_points=chunk, outputs=outputs, analytic=analytic, simulation=simulation,
                     source=where, mode=mode, profile=profile)


def _outputs(value, where: str) -> tuple[str, ...]:
    if value is None:
        return OUTPUTS
    names = _strings(value, f"{where} outputs")
    for n in names:
        if n not in OUTPUTS:
            raise SpecError(f"{where} outputs: unknown output '{n}'{did_you_mean(n, OUTPUTS)}; known: "
                            f"{', '.join(OUTPUTS)}")
    wanted = set(names) | set(SUMMARY_OUTPUTS)
    return tuple(n for n in OUTPUTS if n in wanted)


def _analytic(t, where: str) -> AnalyticAxes:
    check_keys(t, required=("models", "systems", "batches", "contexts"), optional=ANALYTIC_KEYS, where=where)
    phases = _strings(t.get("phases", ["decode"]), f"{where} phases")
    for ph in phases:
        if ph not in PHASES:
            raise SpecError(f"{where} phases: unknown phase '{ph}'{did_you_mean(ph, PHASES)}; use decode, prefill")
    batches = _numbers(t["batches"], f"{where} batches", minimum=1)
    contexts = _numbers(t["contexts"], f"{where} contexts", minimum=1 if "prefill" in phases else 0)
    return AnalyticAxes(models=_strings(t["models"], f"{where} models"),
                        systems=_strings(t["systems"], f"{where} systems"),
                        plans=_plans(t.get("plans", "auto"), t.get("max_chips"), where),
                        phases=phases, batches=batches, contexts=contexts,
                        prices=_prices(t.get("prices"), f"{where} prices"),
                        weight_dtypes=_dtypes(t.get("weight_dtypes"), f"{where} weight_dtypes"),
                        kv_dtypes=_dtypes(t.get("kv_dtypes"), f"{where} kv_dtypes"))


def _simulation(t, where: str) -> SimulationAxes:
    from ..serving.policies import POLICIES

    check_keys(t, required=("models", "systems", "workloads"), optional=SIMULATION_KEYS, where=where)
    policies = _strings(t.get("policies", ["continuous"]), f"{where} policies")
    for p in policies:
        if p not in POLICIES:
            raise SpecError(f"{where} policies: unknown policy '{p}'{did_you_mean(p, POLICIES)}; use one of "
                            f"{', '.join(POLICIES)}")
    loads = t["workloads"]
    if not isinstance(loads, list) or not loads:
        raise SpecError(f"{where} workloads: give at least one [[simulation.workloads]] table")
    workloads = tuple(_workload(w, f"{where} workloads[{i}]", i) for i, w in enumerate(loads))
    names = [w.name for w in workloads]
    if len(set(names)) != len(names):
        raise SpecError(f"{where} workloads: names must differ, got {names}")
    caps = t.get("batch_caps")
    slo = {k: t.get(k) for k in ("slo_ttft", "slo_tpot")}
    for k, v in slo.items():
        if v is not None:
            require_number(k, v, minimum=0, exclusive=True, hint="a time in seconds", owner=where)
    return SimulationAxes(models=_strings(t["models"], f"{where} models"),
                          systems=_strings(t["systems"], f"{where} systems"),
                          plans=_plans(t.get("plans", "smallest"), t.get("max_chips"), where),
                          policies=policies, workloads=workloads,
                          seeds=tuple(int(s) for s in _numbers(t.get("seeds", [0]), f"{where} seeds", minimum=0,
                                                               whole=True)),
                          batch_caps=(None,) if caps is None else tuple(
                              int(c) for c in _numbers(caps, f"{where} batch_caps", minimum=1, whole=True)),
                          prices=_prices(t.get("prices"), f"{where} prices"),
                          slo_ttft_s=slo["slo_ttft"], slo_tpot_s=slo["slo_tpot"])


def _workload(t, where: str, index: int) -> WorkloadSpec:
    from ..serving.workload import ARRIVALS, parse_lengths

    check_keys(t, required=("rate",), optional=WORKLOAD_KEYS, where=where)
    if ("duration" in t) == ("requests" in t):
        raise SpecError(f"{where}: give exactly one of duration (seconds of arrivals) or requests (a count)")
    rate = t["rate"]
    require_number("rate", rate, minimum=0, exclusive=True, hint="requests per second", owner=where)
    duration, requests = t.get("duration"), t.get("requests")
    if duration is not None:
        require_number("duration", duration, minimum=0, exclusive=True, hint="a time in seconds", owner=where)
    if requests is not None:
        requests = require_whole("requests", requests, owner=where)
    from ..serving.budget import DEFAULT_MAX_MEMORY_BYTES, expected_requests, simulation_bytes

    n = expected_requests(rate_per_s=rate, duration_s=duration, requests=requests)
    if simulation_bytes(requests=n) > DEFAULT_MAX_MEMORY_BYTES:  # each simulation holds its requests in memory
        raise SpecError(f"{where}: {n:,.0f} requests need about {simulation_bytes(requests=n) / 1e9:,.1f} GB per "
                        f"simulation, more than {DEFAULT_MAX_MEMORY_BYTES / 1e9:g} GB; lower rate, duration "
                        f"or requests")
    prompt, output = str(t.get("prompt", "1024")), str(t.get("output", "256"))
    parse_lengths(prompt, field=f"{where} prompt")
    parse_lengths(output, field=f"{where} output")
    arrival = t.get("arrival", "poisson")
    if arrival not in ARRIVALS:
        raise SpecError(f"{where} arrival: unknown process {arrival!r}{did_you_mean(str(arrival), ARRIVALS)}; use "
                        f"one of {', '.join(ARRIVALS)}")
    cv = t.get("cv", 1.0)
    require_number("cv", cv, minimum=0, exclusive=True, owner=where)
    name = t.get("name", f"w{index}")
    if not isinstance(name, str) or not name:
        raise SpecError(f"{where} name: expected a non-empty string, got {name!r}")
    return WorkloadSpec(name=name, rate_per_s=float(rate), duration_s=None if duration is None else float(duration),
                        requests=requests, prompt=prompt, output=output, arrival=arrival, cv=float(cv))


# ---- axis helpers ------------------------------------------------------------------------------


def _no_repeats(values: list, where: str) -> None:
    seen = set()
    for v in values:
        if v in seen:
            raise SpecError(f"{where}: {v!r} given twice; give each value once")
        seen.add(v)


def _strings(value, where: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not value:
        raise SpecError(f"{where}: empty axis; give a non-empty list, e.g. [\"a\", \"b\"]")
    if not all(isinstance(v, str) and v.strip() for v in value):
        raise SpecError(f"{where}: expected non-empty strings, got {value!r}")
    out = [v.strip() for v in value]
    _no_repeats(out, where)
    return tuple(out)


def _numbers(value, where: str, *, minimum: float, whole: bool = False) -> tuple[float, ...]:
    """A list, or a range table {start, stop, num, scale} (rounded to whole numbers, repeats dropped)."""
    if isinstance(value, dict):
        check_keys(value, required=("start", "stop", "num"), optional=("scale",), where=where)
        start, stop, num = value["start"], value["stop"], value["num"]
        scale = value.get("scale", "linear")
        if scale not in ("linear", "log"):
            raise SpecError(f"{where} scale: use \"linear\" or \"log\", got {scale!r}")
        require_number("start", start, owner=where)
        require_number("stop", stop, minimum=start, hint="start <= stop", owner=where)
        num = require_whole("num", num, owner=where)
        if num > MAX_RANGE_NUM:
            raise SpecError(f"{where}: num {num:,} is more than {MAX_RANGE_NUM:,} values on one axis; use fewer")
        if scale == "log" and start <= 0:
            raise SpecError(f"{where}: a log range needs start > 0, got {start!r}")
        grid = np.geomspace(start, stop, num) if scale == "log" else np.linspace(start, stop, num)
        values = [float(v) for v in dict.fromkeys(np.round(grid).tolist())]
    elif isinstance(value, list):
        values = [require_number("value", v, owner=where) for v in value]
        _no_repeats(values, where)
    else:
        raise SpecError(f"{where}: expected a list of numbers or a range table {{start, stop, num, scale}}, "
                        f"got {value!r}")
    if not values:
        raise SpecError(f"{where}: empty axis; give at least one value")
    for v in values:
        if v < minimum or (whole and not float(v).is_integer()):
            kind = "whole numbers" if whole else "numbers"
            raise SpecError(f"{where}: every value must be {kind} >= {minimum:g}, got {v:g}")
    return tuple(values)


def _prices(value, where: str) -> tuple[float, ...] | None:
    if value is None:
        return None
    return _numbers(value, where, minimum=0)


def tco_systems(spec: SweepSpec) -> tuple[str, ...]:
    """The systems a sweep priced by TCO inputs must price (each its own TCO rate: its chips' TDP and count
    differ); a spec with a ``prices`` axis is refused, naming both."""
    parts = [p for p in (spec.analytic, spec.simulation) if p is not None]
    if any(p.prices is not None for p in parts):
        raise SpecError(f"the spec {spec.source} has a prices axis; give it or {{tco}}, not both", field="tco",
                        show_value=False, fix="drop the prices axis or the TCO file")
    return tuple(dict.fromkeys(n for p in parts for n in p.systems))


def with_tco(spec: SweepSpec, rates) -> SweepSpec:
    """``spec`` priced per system from ``rates`` ({system: ``econ.tco.TcoRate``} over ``tco_systems``)."""
    from dataclasses import replace

    return replace(spec, tco=tuple((name, rates[name].usd_per_chip_hour, rates[name].facility_watts_per_chip)
                                   for name in tco_systems(spec)))


def _dtypes(value, where: str) -> tuple[str | None, ...]:
    from ..dtypes import get_dtype

    if value is None:
        return (None,)
    names = _strings(value, where)
    for n in names:
        try:
            get_dtype(n)
        except LlmeconError as exc:
            raise SpecError(f"{where}: {exc}") from None
    return names


def _plan_from_text(text: str, where: str) -> Plan:
    """'tp4·ep8·pp2' (separators ·, ., -, _ or space; omitted degrees default as in Plan)."""
    body = re.sub(r"[·.\-_ ]", "", text.lower())
    parts = _PLAN_TEXT.findall(body)
    if not parts or "".join(k + v for k, v in parts) != body:
        raise SpecError(f"{where}: cannot read plan {text!r}; write e.g. \"tp4·ep8·pp2\" or {{tp = 4, ep = 8}}")
    return _plan({k: int(v) for k, v in parts}, where)


def _plan(entry: dict, where: str) -> Plan:
    check_keys(entry, required=(), optional=("tp", "ep", "pp", "adp"), where=where)
    for k, v in entry.items():
        require_whole(k, v, owner=where)
    try:
        return Plan(**entry)
    except LlmeconError as exc:  # ep not tiling tp·adp
        raise SpecError(f"{where}: {exc}") from None


def _plans(value, max_chips, table: str) -> PlanAxis:
    where = f"{table} plans"
    if max_chips is not None:
        max_chips = require_whole("max_chips", max_chips, owner=table)
        if value != "auto":
            raise SpecError(f"{table} max_chips: only applies to plans = \"auto\"")
    if isinstance(value, str) and value in PLAN_MODES:
        return PlanAxis(mode=value, max_chips=max_chips or DEFAULT_MAX_CHIPS)
    if isinstance(value, str):
        raise SpecError(f"{where}: unknown mode {value!r}{did_you_mean(value, PLAN_MODES)}; use \"auto\", "
                        "\"smallest\" or a list of plans")
    if not isinstance(value, list) or not value:
        raise SpecError(f"{where}: empty axis; give \"auto\", \"smallest\" or a non-empty list of plans")
    plans = [_plan_from_text(v, f"{where}[{i}]") if isinstance(v, str) else _plan(v, f"{where}[{i}]")
             for i, v in enumerate(value)]
    _no_repeats([p.label() for p in plans], where)
    return PlanAxis(mode="list", plans=tuple(plans))
