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
from .errors import CatalogError, require_choice, with_field
from .spec.deployment import Deployment
from .spec.efficiency import IDEAL, MODES, EfficiencyProfile
from .spec.hardware import System
from .spec.plan import Plan
from .spec.speculation import speculation_for


def fidelity(mode: str, profile: str | EfficiencyProfile | None = None,
             system: System | None = None) -> tuple[str, EfficiencyProfile | None]:
    """(mode name, profile) from a mode and an optional profile: a profile (file path or object)
    implies calibrated; calibrated without one uses ``system``'s shipped profile (an error names the
    fix when none exists), or, with no system (searches over many systems or rows), None: each is
    resolved where it is used."""
    require_choice("mode", mode, MODES)
    if profile is not None:
        return "calibrated", load_profile(profile) if isinstance(profile, str) else profile
    if mode == "calibrated":
        return "calibrated", None if system is None else resolve_profile("calibrated", None, system.accelerator)
    return "ideal", None


def deployment(model: str, system: str, *, tp: int | None = None, ep: int | None = None, pp: int | None = None,
               adp: int | None = None, weight_dtype: str | None = None, kv_dtype: str | None = None,
               mode: str = "ideal", profile: str | EfficiencyProfile | None = None,
               auto: bool = False, redundant_experts: int | None = None, spec_tokens: int | None = None,
               acceptance=None, draft: str | None = None) -> Deployment:
    """Resolve names into a validated Deployment; with ``auto`` and no degree given (nor redundant
    experts), the smallest plan that holds the weights in half of HBM (``batching.smallest_plan``).
    ``spec_tokens``/``acceptance``/``draft``: speculative decoding (``spec.speculation.speculation_for``:
    None/0 = none; acceptance None = the model family's published default)."""
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
    _, prof = fidelity(mode, profile, s)
    return Deployment(model=m, system=s, plan=plan, weight_dtype=weight_dtype, kv_dtype=kv_dtype,
                      profile=prof or IDEAL, speculation=speculation_for(m, k=spec_tokens, acceptance=acceptance,
                                                                         draft=draft))


def profiles_for(mode: str, profile: str | EfficiencyProfile | None, systems) -> dict[str, EfficiencyProfile]:
    """Each system's efficiency profile for a search over ``systems`` (planner): IDEAL in ideal
    mode; calibrated: ``profile`` for every system, or each accelerator's shipped profile (an error
    names the system without one)."""
    _, given = fidelity(mode, profile)
    if given is None and mode == "ideal":
        return {s.name: IDEAL for s in systems}
    return {s.name: resolve_profile("calibrated", given, s.accelerator) for s in systems}
