"""Efficiency profiles on disk: the strict TOML reader (did-you-mean on keys), the shipped
profiles in ``catalog/profiles/`` and the choice of profile for an accelerator."""

from __future__ import annotations

import functools
from importlib import resources
from pathlib import Path

from ..errors import CatalogError, SpecError, require_choice, require_number
from ..spec.efficiency import (_FRACTIONS, _TIMES, ATTENTION_TABLES, ATTENTION_TERM_KEYS, IDEAL, KERNEL_TERM_KEYS,
                               MODES, TIERS, AttentionTerms, EfficiencyProfile, KernelTerms, LinkEfficiency)
from ..spec.hardware import Accelerator
from ._strict import check_keys, read_toml


_TOP = (("name", "accelerators", "derivation", "source") + _FRACTIONS + _TIMES
        + ("matmul_m_half", "prefill_stall_factor", "ttft_prefill_factor", "prefill_cohort_share", "attention_floor_s",
           "engine"))
_TABLES = ("gemm", "moe", "moe_skew") + ATTENTION_TABLES
_TIER_KEYS = ("op_overhead_s", "p2p_overhead_s", "step_latency_s", "bandwidth_fraction")


def parse_profile(text: str, where: str = "profile") -> EfficiencyProfile:
    """A profile from TOML ``text``; unknown or missing keys are CatalogErrors with "did you mean"."""
    data = read_toml(text, where)
    check_keys(data, required=("name", "accelerators", "derivation"),
               optional=tuple(k for k in _TOP if k not in ("name", "accelerators", "derivation")) + TIERS
               + ("all_to_all",) + _TABLES + ("fit", "transfer"),
               where=where)
    kwargs = {}
    for key, value in data.items():
        if key in TIERS + ("all_to_all",):
            check_keys(value, required=(), optional=_TIER_KEYS, where=f"{where} [{key}]")
            kwargs[key] = LinkEfficiency(**{k: _number(v, f"{where} [{key}] {k}") for k, v in value.items()})
        elif key == "fit":
            kwargs[key] = dict(value)
        elif key == "transfer":
            kwargs[key] = _transfer(value, f"{where} [transfer]")
        elif key in ("gemm", "moe") + ATTENTION_TABLES:
            keys, cls = (KERNEL_TERM_KEYS, KernelTerms) if key in ("gemm", "moe") else (ATTENTION_TERM_KEYS,
                                                                                      AttentionTerms)
            if not isinstance(value, dict):
                raise CatalogError(f"{where} [{key}]: expected tables [{key}.<dtype>]")
            terms = []
            for dt, t in value.items():
                if not isinstance(t, dict):
                    raise CatalogError(f"{where} [{key}.{dt}]: expected a table of {', '.join(keys)}")
                check_keys(t, required=keys, where=f"{where} [{key}.{dt}]")
                terms.append((str(dt), cls(**{k: _number(v, f"{where} [{key}.{dt}] {k}") for k, v in t.items()})))
            kwargs[key] = tuple(terms)
        elif key == "moe_skew":
            skew = []
            for d, v in (value.items() if isinstance(value, dict) else ()):
                if not isinstance(v, dict):
                    raise CatalogError(f"{where} [moe_skew.{d}]: expected compute_factor and weight_factor")
                check_keys(v, required=("compute_factor", "weight_factor"), where=f"{where} [moe_skew.{d}]")
                skew.append((str(d), _number(v["compute_factor"], f"{where} [moe_skew.{d}] compute_factor"),
                             _number(v["weight_factor"], f"{where} [moe_skew.{d}] weight_factor")))
            kwargs[key] = tuple(skew)
        elif key == "engine":
            kwargs[key] = str(value)
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


_TRANSFER_KEYS = ("source", "method", "date")
_TRANSFER_OPTIONAL = ("rule", "engine_terms_from", "datasheet", "borrowed", "error_scope", "error_protocol",
                      "expected_error")
ERROR_KEYS = ("tpot_median", "tpot_p90", "ttft_median", "ttft_p90", "gemm_median", "attention_median", "moe_median")
"""The expected-error figures a transferred profile carries (shares; ``benchmarks/transfer_accuracy.py``)."""


def _transfer(value, where: str) -> dict:
    """A transferred profile's provenance table (``fidelity.transfer``), read strictly."""
    check_keys(value, required=_TRANSFER_KEYS, optional=_TRANSFER_OPTIONAL, where=where)
    out = {}
    for key, v in value.items():
        if key == "expected_error":
            check_keys(v, required=(), optional=ERROR_KEYS, where=f"{where} expected_error")
            out[key] = {k: _number(x, f"{where} expected_error {k}") for k, x in v.items()}
        elif key == "method" and v not in ("nearest", "pooled"):
            raise CatalogError(f"{where} method: expected 'nearest' or 'pooled', got {v!r}")
        else:
            out[key] = str(v)
    return out


def _number(value, where: str) -> float:
    """A finite number (``errors.require_number``), else a CatalogError naming the file and key."""
    try:
        return require_number(where, value)
    except SpecError:
        raise CatalogError(f"{where}: expected a finite number, got {value!r}") from None


def load_profile(path: str | Path) -> EfficiencyProfile:
    """A profile by shipped name (``b200/sglang``: chip/engine; ``b200``: the chip's default engine;
    ``h100-sxm``: a profile's name) or from a TOML file (the ``profile`` input)."""
    p = Path(path)
    if not p.is_file() and not str(path).endswith(".toml"):
        return named_profile(str(path))
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


def _default_engines() -> dict[str, str | None]:
    from .engines import engine_catalog

    return {chip: d.engine or None for chip, d in engine_catalog().defaults.items()}


DEFAULT_ENGINE = _default_engines()
"""The engine whose kernel-table profile is a chip's default in calibrated mode (None: the chip's
legacy profile stays the default), read from ``catalog/engines.toml``, where each choice says why and
cites its source (``catalog.engines``). Engine terms fitted on the silicon rows (``fidelity.engine_fit``)
are in the profiles that have aggregated rows (not b300/trtllm, gb200/sglang, gb200/vllm, gb300). AMD
(mi300x, mi325x, mi355x): vLLM, the only engine with AMD serving measurements in the shared data
(``fidelity.amd_serving``, ``fidelity.amd_profiles``)."""


def named_profile(name: str) -> EfficiencyProfile:
    """A shipped profile by name: ``chip/engine`` (``b200/sglang``), ``chip`` (the default engine,
    ``DEFAULT_ENGINE``) or a profile's own name; an unknown name is an error listing the known ones."""
    profiles = default_profiles()
    by_name = {p.name: p for p in profiles}
    if name in by_name:
        return by_name[name]
    chip = name.split("/")[0]
    if "/" not in name and (chip in DEFAULT_ENGINE or any(chip in p.accelerators for p in profiles)):
        try:
            return default_profile_for(chip)
        except SpecError:
            pass
    from ..errors import did_you_mean

    raise CatalogError(f"no shipped efficiency profile named {name!r}{did_you_mean(name, sorted(by_name))}",
                       field="profile", value=name,
                       fix=f"use one of {', '.join(sorted(by_name))}, or a profile FILE.toml")


def default_profile_for(accelerator_name: str) -> EfficiencyProfile:
    """The default shipped profile of an accelerator (by name): its measured profile for the
    ``DEFAULT_ENGINE``, its legacy one, or its transferred one (``<chip>-transferred.toml``)."""
    engine = DEFAULT_ENGINE.get(accelerator_name)
    cands = [p for p in default_profiles() if accelerator_name in p.accelerators]
    for prof in cands:
        if engine is not None and prof.engine == engine and not prof.transferred:
            return prof
    for prof in cands:
        if not prof.engine:
            return prof
    if cands:
        return sorted(cands, key=lambda p: p.transferred)[0]
    raise _no_profile(accelerator_name, None)


TRAINING_ENGINE = "trtllm"
"""The engine whose kernel-table profile prices a training step in calibrated mode when the chip's serving
default is its legacy profile (h100-sxm): the legacy profiles carry no attention, MoE or FP8 measurement
(attention_fraction stays 1), which a training step needs; TensorRT-LLM's tables cover every family."""


def default_training_profile(accelerator: Accelerator) -> EfficiencyProfile:
    """The profile ``llmecon train`` runs with in calibrated mode: the chip's kernel-table profile of its
    ``DEFAULT_ENGINE`` (``TRAINING_ENGINE`` where that is None), else :func:`default_profile` (a100-80gb:
    vidur's kernel fit, no attention measurement; other chips: their transferred profile)."""
    engine = DEFAULT_ENGINE.get(accelerator.name) or TRAINING_ENGINE
    for prof in default_profiles():
        if accelerator.name in prof.accelerators and prof.engine == engine and not prof.transferred:
            return prof
    return default_profile(accelerator)


def transfer_refusal(accelerator: Accelerator) -> str | None:
    """Why no profile can be transferred to ``accelerator`` (``fidelity.transfer``), or None.

    The transfer needs two datasheet facts: the HBM bandwidth (a catalogue requirement, always
    there) and the dense bf16 peak, the rate of attention and of bf16 matmuls in every step and
    one axis of the nearest-chip rule. A chip whose bf16 peak is unpublished is refused, naming
    the source's reason; nothing is filled in."""
    if "bf16" in accelerator.unpublished_peaks:
        return f"its dense bf16 peak is unpublished ({accelerator.unpublished_peaks['bf16']})"
    if "bf16" not in accelerator.peak_flops_per_s:
        return "the catalogue has no dense bf16 peak for it"
    return None


def _no_profile(name: str, accelerator: Accelerator | None) -> SpecError:
    known = sorted({a for p in default_profiles() for a in p.accelerators})
    why = transfer_refusal(accelerator) if accelerator is not None else None
    if why is not None:
        return SpecError(f"no efficiency profile for accelerator '{name}': it has no measurements, and none can be "
                         f"transferred from a measured chip because {why}", field="mode", value="calibrated",
                         fix="use {mode} ideal, or pass {profile} FILE.toml (llmecon calibrate writes one from "
                             "measurements)")
    return SpecError(f"no efficiency profile for accelerator '{name}' (profiles exist for "
                     f"{', '.join(known) or 'none'})", field="mode", value="calibrated",
                     fix="pass {profile} FILE.toml (llmecon calibrate writes one from measurements) or use "
                         "{mode} ideal")


def default_profile(accelerator: Accelerator) -> EfficiencyProfile:
    """The shipped profile for ``accelerator`` (``default_profile_for``); a clear error when none
    (naming the missing datasheet fact where a transfer is refused)."""
    if any(accelerator.name in p.accelerators for p in default_profiles()):
        return default_profile_for(accelerator.name)
    raise _no_profile(accelerator.name, accelerator)


def resolve(mode: str, profile: EfficiencyProfile | None, accelerator: Accelerator) -> EfficiencyProfile:
    """The profile a request runs with: IDEAL for ``mode='ideal'`` (a profile then is an error),
    ``profile`` or the accelerator's default for ``mode='calibrated'``."""
    if mode == "ideal":
        if profile is not None and not profile.is_ideal:
            raise SpecError("a profile needs {mode} calibrated (ideal mode uses datasheet peaks)", field="profile")
        return IDEAL
    require_choice("mode", mode, MODES)
    return profile if profile is not None else default_profile(accelerator)
