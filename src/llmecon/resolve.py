"""Names to specs for the front-ends: one place where the CLI and the web API turn a model name,
a system name, plan degrees, dtypes and a fidelity choice into a ``Deployment``.

Front-end neutral: takes plain strings and numbers, raises ``LlmeconError`` subclasses naming the
field and a fix (the CLI prints them as one line and exits 2; the web API answers 422).
"""

from __future__ import annotations

from .catalog.efficiency import load_profile, resolve as resolve_profile
from .catalog.hardware import get_system
from .catalog.models import get_model
from .dtypes import get_dtype
from .econ.batching import smallest_plan
from .errors import CatalogError, SpecError, require_choice, with_field
from .spec.deployment import Deployment
from .spec.efficiency import IDEAL, MODES, EfficiencyProfile
from .spec.hardware import System
from .spec.plan import Plan
from .spec.speculation import speculation_for


def fidelity(mode: str, profile: str | EfficiencyProfile | None = None,
             system: System | None = None, engine: str | None = None) -> tuple[str, EfficiencyProfile | None]:
    """(mode name, profile) from a mode, an optional profile and an optional serving engine: a profile
    (file path or object) implies calibrated; an engine implies calibrated with ``system``'s profile for
    that engine (``fidelity.engines.engine_profile``: the shipped chip x engine profile, else one
    transferred from the engine's other chips, labelled with its expected error); calibrated without
    either uses ``system``'s default profile (an error names the fix when none exists), or, with no
    system (searches over many systems or rows), None: each is resolved where it is used (an engine is
    then only checked here). ``auto`` (issue 35; the CLI's default for analyze and cost): calibrated with
    the chip's shipped profile (measured, or transferred and labelled with its expected error) where it
    has one, else ideal; with no system, "auto" is returned for the caller to resolve per system
    (``auto_profile``)."""
    require_choice("mode", mode, (*MODES, AUTO))
    if engine is not None:
        from .fidelity.engines import check_engine, engine_profile

        if profile is not None:
            raise SpecError("give {engine} or {profile}, not both", field="engine", value=engine,
                            fix="drop {profile} (the engine picks the chip's profile) or drop {engine}")
        check_engine(engine)
        return "calibrated", None if system is None else engine_profile(system.accelerator, engine)
    if profile is not None:
        return "calibrated", load_profile(profile) if isinstance(profile, str) else profile
    if mode == AUTO:
        if system is None:
            return AUTO, None
        prof = auto_profile(system)
        return ("ideal", None) if prof.is_ideal else ("calibrated", prof)
    if mode == "calibrated":
        return "calibrated", None if system is None else resolve_profile("calibrated", None, system.accelerator)
    return "ideal", None


AUTO = "auto"


def auto_profile(system: System) -> EfficiencyProfile:
    """``mode auto``'s profile on ``system``: its accelerator's shipped profile (``catalog.efficiency``), or
    IDEAL where the chip has none (the report then says ideal)."""
    from .errors import LlmeconError

    try:
        return resolve_profile("calibrated", None, system.accelerator)
    except LlmeconError:
        return IDEAL


def deployment(model: str, system: str, *, tp: int | None = None, ep: int | None = None, pp: int | None = None,
               adp: int | None = None, weight_dtype: str | None = None, kv_dtype: str | None = None,
               mode: str = "ideal", profile: str | EfficiencyProfile | None = None,
               auto: bool = False, redundant_experts: int | None = None, spec_tokens: int | None = None,
               acceptance=None, draft: str | None = None, engine: str | None = None) -> Deployment:
    """Resolve names into a validated Deployment; with ``auto`` and no degree given (nor redundant
    experts), the smallest plan that holds the weights in half of HBM (``batching.smallest_plan``).
    ``spec_tokens``/``acceptance``/``draft``: speculative decoding (``spec.speculation.speculation_for``:
    None/0 = none; acceptance None = the model family's published default); ``engine``: the serving
    engine whose chip profile prices it (``fidelity``)."""
    m, s = get_model(model), get_system(system)
    for field, dt in (("weight_dtype", weight_dtype), ("kv_dtype", kv_dtype)):
        if dt is not None:
            try:
                get_dtype(dt)
            except CatalogError as exc:
                raise with_field(exc, field) from None
    plan = None
    if auto and tp is None and ep is None and pp is None and adp is None and not redundant_experts:
        plan = smallest_plan(m, s, weight_dtype=weight_dtype, kv_dtype=kv_dtype)
    if plan is None:
        plan = Plan(tp=1 if tp is None else tp, ep=1 if ep is None else ep, pp=1 if pp is None else pp, adp=adp,
                    redundant_experts=redundant_experts or 0)
    _, prof = fidelity(mode, profile, s, engine)
    return Deployment(model=m, system=s, plan=plan, weight_dtype=weight_dtype, kv_dtype=kv_dtype,
                      profile=prof or IDEAL, speculation=speculation_for(m, k=spec_tokens, acceptance=acceptance,
                                                                         draft=draft))


def profiles_for(mode: str, profile: str | EfficiencyProfile | None, systems,
                 engine: str | None = None) -> dict[str, EfficiencyProfile]:
    """Each system's efficiency profile for a search over ``systems`` (planner): IDEAL in ideal
    mode; calibrated: ``profile`` for every system, each accelerator's profile for ``engine``
    (``fidelity.engines.engine_profile``), or each accelerator's shipped default (an error names the
    system without one)."""
    _, given = fidelity(mode, profile, None, engine)
    if engine is not None:
        from .fidelity.engines import engine_profile

        return {s.name: engine_profile(s.accelerator, engine) for s in systems}
    if given is None and mode == "ideal":
        return {s.name: IDEAL for s in systems}
    if given is None and mode == AUTO:
        return {s.name: auto_profile(s) for s in systems}
    return {s.name: resolve_profile("calibrated", given, s.accelerator) for s in systems}


# ---- TCO: $/chip-hour from capex, power and hosting (econ.tco) ------------------------------------


def tco(system: System | str, *, path: str | None = None, values=None, defaults: bool = False):
    """The ``econ.tco.TcoRate`` of ``system`` from a TCO file (``path``, ``catalog.tco``) and ``values``
    ({field: value or None}, a command's flags or the web's ``tco`` object), which override the file.
    ``watts_per_chip`` defaults to the chip's catalogue power (TDP), ``power_utilization`` to 1.0 (TDP, an
    upper bound); every other input has no default and a missing one is an error naming it: the field
    when the inputs can be given one by one (``values`` is not None), else the file. A hosting value in
    ``values`` replaces the file's hosting form (per rack or per chip). ``defaults``: the catalogue's sourced
    TCO defaults (``catalog.tco_defaults``, issue 35) fill every input not given, watts included (the system's
    power per chip, hosts and network included); ``TcoInputs.defaults_used`` names them."""
    from .catalog.tco import HOSTING_KEYS, REQUIRED_KEYS, load_tco
    from .econ.tco import TcoInputs, tco_rate
    from .errors import LlmeconError, SpecError

    s = get_system(system) if isinstance(system, str) else system
    from_file = load_tco(path) if path is not None else {}
    given = {k: v for k, v in (values or {}).items() if v is not None}
    if any(k in given for k in HOSTING_KEYS):  # a hosting flag replaces the file's hosting form
        drop = set(HOSTING_KEYS) | ({"chips_per_rack"} if "hosting_usd_per_chip_month" in given else set())
        from_file = {k: v for k, v in from_file.items() if k not in drop}
    merged = {**from_file, **given}
    merged, defaulted = _with_tco_defaults(s, merged) if defaults else (merged, ())
    by_field = values is not None
    where = f"TCO file {path}" if path is not None else "TCO inputs"

    def missing(key: str, why: str = "no sourced default", fix: str | None = None) -> LlmeconError:
        if by_field:
            also = " or the key " + key + (" in the {tco} file" if path is not None else " in a {tco} file")
            return SpecError(f"missing ({why})", field=key, show_value=False,
                             fix=f"{fix or 'give {' + key + '}'}{also} (template: docs/tco.md)")
        hint = "" if fix is None else fix.removeprefix("give {" + key + "}").strip()  # the flag has no use here
        return CatalogError(f"{where}: missing '{key}' ({why})",
                            fix=f"add {key} = <value>{' ' + hint if hint else ''} (template: docs/tco.md)")

    for key in REQUIRED_KEYS:
        if key not in merged:
            raise missing(key)
    if not any(k in merged for k in HOSTING_KEYS):
        raise missing("hosting_usd_per_rack_month", "or hosting_usd_per_chip_month; no sourced default")
    watts, watts_source = merged.get("watts_per_chip"), "given"
    if "watts_per_chip" in defaulted:
        watts_source = (f"catalogue system power per chip of {s.accelerator.name} (hosts, NICs and switches "
                        f"included; catalog/tco_defaults.toml)")
    if watts is None:
        watts, watts_source = s.accelerator.power_w, f"catalogue TDP of {s.accelerator.name}"
        if watts is None:
            raise missing("watts_per_chip", f"the catalogue has no power for {s.accelerator.name}")
    try:
        inputs = TcoInputs(chip_capex_usd=merged["chip_capex_usd"], system_capex_usd=merged["system_capex_usd"],
                           chips_per_system=s.chips, amortisation_years=merged["amortisation_years"],
                           cost_of_capital=merged["cost_of_capital"], watts_per_chip=watts, pue=merged["pue"],
                           usd_per_kwh=merged["usd_per_kwh"], power_utilization=merged.get("power_utilization", 1.0),
                           hosting_usd_per_rack_month=merged.get("hosting_usd_per_rack_month"),
                           chips_per_rack=merged.get("chips_per_rack"),
                           hosting_usd_per_chip_month=merged.get("hosting_usd_per_chip_month"),
                           watts_source=watts_source, source=merged.get("source", ""), as_of=merged.get("as_of", ""),
                           notes=merged.get("notes", ""), defaults_used=defaulted)
    except LlmeconError as exc:
        if exc.field is not None and exc.field in from_file and exc.field not in given:  # the key came from the file
            raise type(exc)(f"{where}: {exc.render()}", fix=None) from None
        if exc.field is not None and exc.field not in merged and exc.rule.startswith("missing"):
            # missing everywhere (chips_per_rack of a per-rack price): name the flag or field, and the key
            raise missing(exc.field, exc.rule.removeprefix("missing").lstrip(": ") or "no sourced default",
                          fix=exc.fix) from None
        raise
    return tco_rate(inputs)


def _with_tco_defaults(system: System, merged: dict) -> tuple[dict, tuple[str, ...]]:
    """``merged`` with the catalogue's TCO defaults (``catalog.tco_defaults``) under it, and the keys taken
    from them; unchanged when the chip has none. A hosting form given replaces the default's (per chip);
    the defaults' ``source`` names each figure used."""
    from .catalog.tco_defaults import default_tco_values
    from .catalog.tco import HOSTING_KEYS

    defaults = default_tco_values(system)
    if defaults is None:
        return merged, ()
    if any(k in merged for k in HOSTING_KEYS):
        defaults = {k: v for k, v in defaults.items() if k not in HOSTING_KEYS}
    used = tuple(k for k in defaults if k not in merged and k not in ("source", "notes"))
    if not used:
        return merged, ()
    out = {**defaults, **merged}
    if "source" in merged:
        out["source"] = f"{merged['source']}; the rest: {defaults['source']}"
    return out, used


#: where a price comes from when none is given: the catalogue's TCO defaults or its published rents
PRICE_BASES = ("tco", "rent")


def chip_hour_price(system: System | str, *, price_per_chip_hour: float | None = None, tco_path: str | None = None,
                    tco_values=None, required: bool = False, price_field: str = "price_per_chip_hour",
                    default: str | None = None):
    """(USD per chip-hour or None, the ``TcoRate`` or None) from a rent or TCO inputs, never both: the one
    place every command and the web turn ``price_per_chip_hour`` / ``tco`` into a price. ``required``:
    neither is an error naming both. ``price_field``: the rent's name in the caller (``train`` says
    ``price_per_gpu_hour``)."""
    from .errors import SpecError, require_number

    has_tco = tco_path is not None or tco_values is not None
    if price_per_chip_hour is not None and has_tco:
        raise SpecError(f"give {{{price_field}}} or {{tco}}, not both", field="tco", show_value=False,
                        fix="drop one (a TCO rate replaces the rent)")
    if has_tco:
        rate = tco(system, path=tco_path, values=tco_values)
        return rate.usd_per_chip_hour, rate
    if price_per_chip_hour is None and default is not None:
        found = default_price(system, default, required=required, price_field=price_field)
        if found is not None:
            return found
    if price_per_chip_hour is None and required:
        raise SpecError("missing: a price per chip-hour is needed", field=price_field, show_value=False,
                        fix=f"give {{{price_field}}} (a rent) or {{tco}} (TCO inputs, docs/tco.md)")
    if price_per_chip_hour is not None:
        require_number(price_field, price_per_chip_hour, minimum=0, hint="dollars per chip-hour")
    return price_per_chip_hour, None


def default_price(system: System | str, basis: str, *, required: bool = False,
                  price_field: str = "price_per_chip_hour"):
    """(USD per chip-hour, TcoRate or Rent) from the catalogue when no price is given: ``basis`` "tco", the
    TCO defaults (``catalog.tco_defaults``), or "rent", the published rent; None where the catalogue has
    no such figure for the chip, or an error naming what to give when ``required``."""
    from .catalog.tco_defaults import default_tco_values, rent
    from .econ.tco import Rent
    from .errors import SpecError, require_choice

    require_choice("price_basis", basis, PRICE_BASES)
    s = get_system(system) if isinstance(system, str) else system
    if basis == "rent":
        r = rent(s)
        if r is not None:
            return r.value, Rent(usd_per_chip_hour=r.value, accelerator=s.accelerator.name, source=r.source,
                                 as_of=r.as_of, cite=r.cite())
        other = "tco" if default_tco_values(s) is not None else None
    else:
        if default_tco_values(s) is not None:
            rate = tco(s, values={}, defaults=True)
            return rate.usd_per_chip_hour, rate
        other = "rent" if rent(s) is not None else None
    if not required:
        return None
    what = "published rent" if basis == "rent" else "sourced TCO default (capex and system power)"
    also = f", or {{price_basis}} {other}" if other else ""
    raise SpecError(f"missing: the catalogue has no {what} for {s.accelerator.name}", field=price_field,
                    show_value=False, fix=f"give {{{price_field}}} (a rent) or {{tco}} (TCO inputs, docs/tco.md){also}")


def chip_hour_prices(systems, *, prices=None, tco_paths=None, tco_values=None, default: str | None = None):
    """({system name: USD per chip-hour}, {system name: TcoRate}) for a search over ``systems``: ``prices``
    (one for all or one per system) or ``tco_paths`` (one TCO file for all or one per system) or the
    ``tco_values`` inputs for all, through ``chip_hour_price``; nothing given: two empty dicts."""
    from .errors import SpecError

    systems = [get_system(s) if isinstance(s, str) else s for s in systems]
    names = ", ".join(s.name for s in systems)

    def spread(values, field: str) -> list:
        if values is None:
            return [None] * len(systems)
        values = list(values)
        if len(values) == 1:
            values = values * len(systems)
        if len(values) != len(systems):
            raise SpecError(f"{len(values)} values for {len(systems)} systems ({names})", field=field,
                            show_value=False, fix="give one, or one per system in the systems' order")
        return values

    rents, paths = spread(prices, "price_per_chip_hour"), spread(tco_paths, "tco")
    out_prices, out_rates = {}, {}
    for s, rent, path in zip(systems, rents, paths):
        price, rate = chip_hour_price(s, price_per_chip_hour=rent, tco_path=path, tco_values=tco_values,
                                      default=default)
        if price is not None:
            out_prices[s.name] = price
        if rate is not None:
            out_rates[s.name] = rate
    return out_prices, out_rates


def training_fidelity(mode: str | None, profile: str | EfficiencyProfile | None, system: System,
                      efficiency: float | None = None) -> tuple[EfficiencyProfile | None, float]:
    """(profile, efficiency) of a training step (``econ.training_step.train_step``): a profile or mode
    'calibrated' runs the given profile or the chip's kernel-table one (``default_training_profile``);
    'ideal' is efficiency 1; neither keeps ``efficiency`` (default: the Megatron-LM A100 fit, 0.65).
    An efficiency with a mode or profile is refused (calibrated takes the profile's kernel efficiencies)."""
    from .catalog.efficiency import default_training_profile
    from .econ.training_step import MEGATRON_A100_EFFICIENCY
    from .errors import SpecError

    if mode is None and profile is None:
        return None, MEGATRON_A100_EFFICIENCY if efficiency is None else efficiency
    if efficiency is not None:
        raise SpecError("give it without {mode}/{profile} (ideal is efficiency 1; calibrated takes the profile's "
                        "kernel efficiencies)", field="efficiency", value=efficiency)
    _, prof = fidelity(mode or "calibrated", profile, system)
    if prof is not None and profile is None:  # calibrated, no profile named: the chip's kernel-table profile
        prof = default_training_profile(system.accelerator)
    return prof, 1.0


def training_dp(gpus: int | None, dp: int | None, tp: int, pp: int, cp: int) -> int:
    """The data-parallel degree of a training job (``llmecon train``, ``/api/train``): ``gpus`` / (tp·pp·cp)
    when the job size is given (``dp`` too must then agree), else ``dp``, else 8."""
    from .errors import SpecError

    per_replica = tp * pp * cp
    if gpus is None:
        return 8 if dp is None else dp
    if gpus < 1 or gpus % per_replica:
        raise SpecError(f"must be a multiple of tp·pp·cp = {per_replica}", field="gpus", value=gpus)
    if dp is not None and dp * per_replica != gpus:
        raise SpecError(f"!= tp·pp·cp·dp = {per_replica * dp}", field="gpus", value=gpus,
                        fix="give one of {gpus} and {dp}, or make them agree")
    return gpus // per_replica
