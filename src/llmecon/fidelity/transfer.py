"""Calibrated mode for chips without measurements: a profile transferred from measured chips.

A kernel-table profile (``kernel_profiles``) holds *dimensionless* terms and fixed costs; the
chip's datasheet enters only when a kernel is priced (``step.kernels``: FLOPs / (fraction·ramps·
peak), bytes / (hbm_fraction·BW), collectives over the catalogue link). So a profile measured on
one chip prices another chip through the other chip's own datasheet. What is whose:

=============================================  ==============================================
datasheet of the target (catalogue, applied    dense peak per dtype, HBM bandwidth, the
at pricing time, never copied)                 system's link bandwidths and latency floors
borrowed from the source profile(s)            achieved FLOP fractions and HBM fractions per
                                               kernel family and dtype; the ramps' half-
                                               points (m, n, k in rows/columns, isl, head
                                               dim, items: shape units, NOT scaled: no
                                               datasheet figure sets tile or SM counts);
                                               kernel floors, per-item times and launch
                                               latencies (seconds, NOT scaled: host, driver
                                               and kernel-launch costs, not a datasheet rate);
                                               MoE skew factors; the scale-up tier's achieved
                                               bandwidth share and per-call / per-step
                                               overheads; the engine terms (``engine_fit``)
=============================================  ==============================================

Source rule (fixed before any leave-one-chip-out number was seen, ``benchmarks/transfer_accuracy.py``):

* **nearest** (a target of a measured vendor, NVIDIA today): the measured chip of the same vendor
  closest in datasheet, distance = sqrt(ln(bf16 peak ratio)^2 + ln(HBM bandwidth ratio)^2) (the
  compute axis and the memory axis of the roofline with equal weight; ties by name). Engine terms
  come from the nearest chip that has them fitted (``has_engine_terms``), else pooled as below.
* **pooled** (a vendor with no measured chip: Google, AWS, Huawei; AMD until 2026-11-28, when
  ``fidelity.amd_profiles`` measured mi300x/vllm): every term is the median
  over the measured chips' profiles of one engine (term by term, per kernel family and dtype, over
  the profiles that have it; engine terms over the profiles that have them fitted). The median
  of each term is not a joint fit: it is the typical NVIDIA chip, term by term.

Needed datasheet facts (``catalog.efficiency.transfer_refusal``): HBM bandwidth and the dense
bf16 peak; a chip without a published bf16 peak (Rubin) is refused with the source's reason.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from ..catalog.efficiency import transfer_refusal
from ..catalog.hardware import get_accelerator
from ..errors import SpecError
from ..spec.efficiency import IDEAL, EfficiencyProfile
from ..spec.hardware import Accelerator
from .engine_fit import BASE, PARAMS

KERNEL_SCALARS = ("hbm_fraction", "matmul_fraction", "matmul_m_half", "kernel_floor_s", "elementwise_fraction",
                  "elementwise_floor_s", "attention_fraction", "attention_floor_s")
KERNEL_TABLES = ("gemm", "moe", "prefill_attention", "decode_attention", "mla_prefill", "mla_decode", "gdn")
ENGINE_TERMS = PARAMS + ("iteration_overhead_s",)
DATASHEET = "peaks per dtype, HBM bandwidth and link bandwidths/latency floors of the target (catalogue)"
BORROWED = ("kernel fractions, ramps (shape units, unscaled), floors and per-item times (seconds, unscaled), MoE "
            "skew, MLA and Gated DeltaNet attention terms, scale-up achieved bandwidth share and overheads "
            "(all-reduce and EP all-to-all), engine terms")


def has_engine_terms(profile: EfficiencyProfile) -> bool:
    """True when a profile's engine terms were fitted (any differs from the kernel-only ``BASE``)."""
    return any(getattr(profile, k) != BASE[k] for k in PARAMS)


def distance(a: Accelerator, b: Accelerator) -> float:
    """The nearest-chip rule's datasheet distance: sqrt(ln(bf16 peak ratio)^2 + ln(HBM BW ratio)^2)."""
    return math.hypot(math.log(a.peak("bf16") / b.peak("bf16")),
                      math.log(a.hbm_bandwidth_bytes_per_s / b.hbm_bandwidth_bytes_per_s))


def rank_sources(target: Accelerator, sources: list[EfficiencyProfile]) -> list[EfficiencyProfile]:
    """``sources`` (measured profiles) nearest first by ``distance`` to ``target`` (ties by name)."""
    return sorted(sources, key=lambda p: (distance(target, get_accelerator(p.accelerators[0])), p.name))


SHIPPED_ENGINE = {"nearest": "trtllm", "pooled": "vllm"}
"""The engine a shipped transferred profile takes its terms from: a chip of a measured vendor
(NVIDIA) takes the calibrated default engine of the measured chips (``catalog.efficiency.DEFAULT_ENGINE``);
any other vendor takes vLLM's, the one of the three measured engines that also runs on AMD (ROCm),
Google TPUs, AWS Neuron and Ascend (vllm-ascend); TensorRT-LLM runs on NVIDIA only."""


def method_for(target: Accelerator, sources: list[EfficiencyProfile]) -> str:
    """'nearest' when a measured chip of ``target``'s vendor exists among ``sources``, else 'pooled'."""
    vendors = {get_accelerator(p.accelerators[0]).vendor for p in sources if p.engine and not p.transferred}
    return "nearest" if target.vendor in vendors else "pooled"


def check_transferable(target: Accelerator) -> None:
    """Raise a SpecError naming the missing datasheet fact when ``target`` cannot get a transfer."""
    why = transfer_refusal(target)
    if why is not None:
        raise SpecError(f"no profile can be transferred to accelerator '{target.name}': {why}", field="mode",
                        value="calibrated", fix="use {mode} ideal")


def _median(values):
    return float(f"{np.median(np.asarray(values, dtype=float)):.4g}")


def _median_terms(terms: list):
    """Term-by-term median of same-class frozen dataclasses (None kept where every one is None)."""
    out = {}
    for f in dataclasses.fields(terms[0]):
        vals = [getattr(t, f.name) for t in terms if getattr(t, f.name) is not None]
        out[f.name] = _median(vals) if vals else None
    return type(terms[0])(**out)


def _pooled_kernel(sources: list[EfficiencyProfile]) -> dict:
    kw: dict = {}
    for key in KERNEL_SCALARS:
        vals = [getattr(p, key) for p in sources if getattr(p, key) is not None]
        kw[key] = _median(vals) if vals else None
    for table in KERNEL_TABLES:
        dtypes = dict.fromkeys(dt for p in sources for dt, _ in getattr(p, table))
        kw[table] = tuple((dt, _median_terms([t for p in sources for d, t in getattr(p, table) if d == dt]))
                          for dt in dtypes)
    dists = dict.fromkeys(d for p in sources for d, _, _ in p.moe_skew)
    kw["moe_skew"] = tuple((d, _median([c for p in sources for dd, c, _ in p.moe_skew if dd == d]),
                            _median([w for p in sources for dd, _, w in p.moe_skew if dd == d])) for d in dists)
    kw["scale_up"] = _median_terms([p.scale_up for p in sources])
    a2a = [p.all_to_all for p in sources if p.all_to_all is not None]
    kw["all_to_all"] = _median_terms(a2a) if a2a else None
    return kw


def _own_kernel(source: EfficiencyProfile) -> dict:
    kw = {k: getattr(source, k) for k in KERNEL_SCALARS + KERNEL_TABLES + ("moe_skew",)}
    kw["scale_up"], kw["all_to_all"] = source.scale_up, source.all_to_all
    return kw


def _engine(ranked: list[EfficiencyProfile], method: str) -> tuple[dict, str]:
    """(engine terms, where from): the nearest fitted source's, or the median of the fitted ones."""
    fitted = [p for p in ranked if has_engine_terms(p)]
    if not fitted:
        return {k: getattr(IDEAL, k) for k in ENGINE_TERMS}, "none fitted: kernel-only (no engine overheads)"
    if method == "nearest":
        return {k: getattr(fitted[0], k) for k in ENGINE_TERMS}, fitted[0].name
    return ({k: _median([getattr(p, k) for p in fitted]) for k in ENGINE_TERMS},
            "median of " + ", ".join(p.name for p in fitted))


def transfer(target: Accelerator, sources: list[EfficiencyProfile], *, method: str, engine: str,
             expected_error: dict | None = None, error_scope: str = "", date: str = "") -> EfficiencyProfile:
    """The profile of ``target`` transferred from the measured ``sources`` of ``engine`` by
    ``method`` ('nearest' or 'pooled'; module docstring). ``expected_error`` (shares) and its
    scope are the leave-one-chip-out figures stored with it (``benchmarks/transfer_accuracy.py``)."""
    check_transferable(target)
    if method not in ("nearest", "pooled"):
        raise SpecError(f"transfer method must be 'nearest' or 'pooled', got {method!r}", field="method",
                        value=method)
    pool = [p for p in sources if p.engine == engine and not p.transferred]
    if method == "nearest":
        pool = [p for p in pool if get_accelerator(p.accelerators[0]).vendor == target.vendor]
    if not pool:
        raise SpecError(f"no measured {engine} profile to transfer to '{target.name}' by {method}"
                        + (f" (no measured {target.vendor} chip)" if method == "nearest" else ""), field="profile",
                        value=engine, fix="pick an engine with measured profiles (trtllm, sglang, vllm)")
    ranked = rank_sources(target, pool)
    if method == "nearest":
        kernel, source = _own_kernel(ranked[0]), ranked[0].name
    else:
        kernel, source = _pooled_kernel(ranked), f"pooled NVIDIA {engine} profiles"
    terms, engine_from = _engine(ranked, method)
    rule = ("nearest measured chip of the same vendor by sqrt(ln(bf16 peak ratio)^2 + ln(HBM BW ratio)^2)"
            if method == "nearest" else "term-by-term median over " + ", ".join(p.name for p in ranked))
    info = {"source": source, "method": method, "date": date, "rule": rule, "engine_terms_from": engine_from,
            "datasheet": DATASHEET, "borrowed": BORROWED}
    if error_scope:
        info["error_scope"] = error_scope
    if expected_error:
        info["expected_error"] = dict(expected_error)
    derivation = (f"fidelity.transfer ({method}) of {source} to {target.name}'s datasheet: {target.name} has no "
                  f"measurements. Datasheet: {DATASHEET}. Borrowed: {BORROWED} (engine terms: {engine_from}). "
                  f"Rule: {rule}. Expected error: leave-one-chip-out in benchmarks/results/transfer_accuracy_*.md"
                  + (f" ({error_scope})" if error_scope else "") + ".")
    return dataclasses.replace(IDEAL, name=f"{target.name}/transferred", accelerators=(target.name,), engine=engine,
                               derivation=derivation, source="; ".join(p.source for p in ranked[:1]),
                               transfer=info, **kernel, **terms)

