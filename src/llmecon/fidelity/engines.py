"""Chip x engine -> efficiency profile: the serving engine as an input (issue 34).

Rule (``engine_profile``), in order:

1. no engine: the chip's default profile (``catalog.efficiency.default_profile``; each chip's default
   engine and why in ``catalog/engines.toml``);
2. a shipped profile of the chip for the engine (``catalog/profiles/<chip>-<engine>.toml``; a shipped
   transferred profile whose ``engine`` is it, e.g. ``tpu-v6e-transferred.toml`` for vllm);
3. otherwise a profile transferred to the chip from the engine's measured profiles on other chips
   (``fidelity.transfer``: 'nearest' when the chip's vendor has a measured chip for that engine,
   'pooled' otherwise),
   labelled with its expected error: the leave-one-chip-out error of that (method, engine) stored in
   ``catalog/engines.toml`` (``benchmarks/transfer_accuracy.py``).

An engine that no chip has a measured profile for is refused, naming the engines that have one (an
engine measured later ships as ``<chip>-<name>.toml`` and is then accepted with no change here).
"""

from __future__ import annotations

import functools

from ..catalog.efficiency import default_profile, default_profiles
from ..catalog.engines import engine_catalog
from ..catalog.hardware import get_accelerator
from ..errors import SpecError, did_you_mean
from ..spec.efficiency import EfficiencyProfile
from ..spec.hardware import Accelerator


def measured_engines() -> tuple[str, ...]:
    """Engines with at least one measured (not transferred) shipped profile, sorted."""
    return tuple(sorted({p.engine for p in default_profiles() if p.engine and not p.transferred}))


def check_engine(engine: str, field: str = "engine") -> str:
    """``engine`` stripped, or a SpecError naming the engines with measured profiles."""
    known = measured_engines()
    name = engine.strip() if isinstance(engine, str) else engine
    if name not in known:
        raise SpecError(f"no chip has a measured profile for this engine{did_you_mean(str(name), known)}",
                        field=field, value=engine,
                        fix=f"use one of {', '.join(known)}, or {{profile}} FILE.toml (llmecon calibrate)")
    return name


def engine_profile(accelerator: Accelerator, engine: str | None) -> EfficiencyProfile:
    """The profile of ``accelerator`` served by ``engine`` (module docstring); None = the default."""
    if engine is None or engine == "":
        return default_profile(accelerator)
    engine = check_engine(engine)
    own = [p for p in default_profiles() if accelerator.name in p.accelerators and p.engine == engine]
    for prof in sorted(own, key=lambda p: p.transferred):
        return prof
    return _transferred(accelerator.name, engine)


@functools.lru_cache(maxsize=None)
def _transferred(chip: str, engine: str) -> EfficiencyProfile:
    import dataclasses

    from .transfer import method_for, transfer

    target = get_accelerator(chip)
    sources = [p for p in default_profiles() if p.engine and not p.transferred]
    # nearest only when the target's vendor has a measured chip for this engine (AMD has vLLM only)
    method = method_for(target, [p for p in sources if p.engine == engine])
    cat = engine_catalog()
    err = cat.transfer_error.get((method, engine))
    if err is None:
        raise SpecError(f"no expected error is recorded for a '{method}' transfer of {engine} profiles "
                        f"(catalog/engines.toml [transfer.{method}.{engine}])", field="engine", value=engine,
                        fix="run benchmarks/transfer_accuracy.py and record its figures, or use {profile} FILE.toml")
    prof = transfer(target, sources, method=method, engine=engine, expected_error=err,
                    error_scope=f"leave-one-chip-out over the measured NVIDIA chips, {method} method, {engine} "
                                f"engine ({cat.transfer_source[(method, engine)]})")
    return dataclasses.replace(prof, name=f"{chip}/{engine} (transferred)")
