"""Efficiency profiles on disk: the strict TOML reader (did-you-mean on keys), the shipped
profiles in ``catalog/profiles/`` and the choice of profile for an accelerator."""

from __future__ import annotations

import functools
from importlib import resources
from pathlib import Path

from ..errors import CatalogError, SpecError, require_choice, require_number
from ..spec.efficiency import _FRACTIONS, _TIMES, IDEAL, MODES, TIERS, EfficiencyProfile, LinkEfficiency
from ..spec.hardware import Accelerator
from ._strict import check_keys, read_toml


_TOP = (("name", "accelerators", "derivation", "source") + _FRACTIONS + _TIMES
        + ("matmul_m_half", "prefill_stall_factor", "ttft_prefill_factor"))
_TIER_KEYS = ("op_overhead_s", "p2p_overhead_s", "step_latency_s", "bandwidth_fraction")


def parse_profile(text: str, where: str = "profile") -> EfficiencyProfile:
    """A profile from TOML ``text``; unknown or missing keys are CatalogErrors with "did you mean"."""
    data = read_toml(text, where)
    check_keys(data, required=("name", "accelerators", "derivation"),
               optional=tuple(k for k in _TOP if k not in ("name", "accelerators", "derivation")) + TIERS + ("fit",),
               where=where)
    kwargs = {}
    for key, value in data.items():
        if key in TIERS:
            check_keys(value, required=(), optional=_TIER_KEYS, where=f"{where} [{key}]")
            kwargs[key] = LinkEfficiency(**{k: _number(v, f"{where} [{key}] {k}") for k, v in value.items()})
        elif key == "fit":
            kwargs[key] = dict(value)
        elif key == "accelerators":
            if not (isinstance(value, list) and value and all(isinstance(a, str) for a in value)):
                raise CatalogError(f"{where} accelerators: expected a non-empty list of accelerator names")
            kwargs[key] = tuple(value)
        elif key in ("name", "derivation", "source"):
            kwargs[key] = str(value)
        else:
            kwargs[key] = _number(value, f"{where} {key}")
    try:
        return EfficiencyProfile(**kwargs)
    except SpecError as exc:
        raise CatalogError(f"{where}: {exc}") from exc


def _number(value, where: str) -> float:
    """A finite number (``errors.require_number``), else a CatalogError naming the file and key."""
    try:
        return require_number(where, value)
    except SpecError:
        raise CatalogError(f"{where}: expected a finite number, got {value!r}") from None


def load_profile(path: str | Path) -> EfficiencyProfile:
    """Read a profile TOML file (the ``profile`` input)."""
    p = Path(path)
    if not p.is_file():
        raise CatalogError(f"no such file {p}", field="profile", fix="write one with `llmecon calibrate`")
    from ..files import read_text

    return parse_profile(read_text(p, field="profile", what="profile", fix="write one with `llmecon calibrate`"),
                         where=str(p))


@functools.lru_cache(maxsize=None)
def default_profiles() -> tuple[EfficiencyProfile, ...]:
    """The shipped profiles (``catalog/profiles/*.toml``)."""
    folder = resources.files("llmecon.catalog").joinpath("profiles")
    return tuple(parse_profile(f.read_text(encoding="utf-8"), where=f"catalog/profiles/{f.name}")
                 for f in sorted(folder.iterdir(), key=lambda f: f.name) if f.name.endswith(".toml"))


def default_profile(accelerator: Accelerator) -> EfficiencyProfile:
    """The shipped profile that lists ``accelerator``; a clear error when none does."""
    for prof in default_profiles():
        if accelerator.name in prof.accelerators:
            return prof
    known = sorted({a for p in default_profiles() for a in p.accelerators})
    raise SpecError(f"no efficiency profile for accelerator '{accelerator.name}' (profiles exist for "
                    f"{', '.join(known) or 'none'})", field="mode", value="calibrated",
                    fix="pass {profile} FILE.toml (llmecon calibrate writes one from measurements) or use {mode} ideal")


def resolve(mode: str, profile: EfficiencyProfile | None, accelerator: Accelerator) -> EfficiencyProfile:
    """The profile a request runs with: IDEAL for ``mode='ideal'`` (a profile then is an error),
    ``profile`` or the accelerator's default for ``mode='calibrated'``."""
    if mode == "ideal":
        if profile is not None and not profile.is_ideal:
            raise SpecError("a profile needs {mode} calibrated (ideal mode uses datasheet peaks)", field="profile")
        return IDEAL
    require_choice("mode", mode, MODES)
    return profile if profile is not None else default_profile(accelerator)
