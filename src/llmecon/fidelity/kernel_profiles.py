"""Efficiency profiles of the six measured NVIDIA chips, per engine, from the kernel tables.

``load_tables`` reads one (chip, engine)'s tables (``kernel_tables``; the implementation with the
most rows per dtype), ``fit_terms`` fits every family (``kernel_fit``) and ``build_profile`` turns
the terms into an ``EfficiencyProfile`` with its provenance. benchmarks/derive_kernel_profiles.py
writes the shipped files (``catalog/profiles/<chip>-<engine>.toml``); benchmarks/kernel_accuracy.py
measures their out-of-sample error.

What a kernel-table profile does not have (later work, stated in every ``derivation``): engine
overheads (step and serving-loop terms stay 0 / 1 until they are fitted on end-to-end rows),
element-wise kernels (no table: they take the bf16 GEMM's achieved bandwidth and no floor), the
scale-out tier (no measurement: catalogue link as is), NVLS (the fitted all-reduce is the engine's
custom one-node kernel, priced as ring or one-shot).
"""

from __future__ import annotations

import dataclasses
import datetime

import numpy as np

from ..catalog.hardware import get_system
from ..errors import CatalogError
from ..spec.efficiency import IDEAL, EfficiencyProfile
from .kernel_fit import CollectiveRows, fit_all_reduce, fit_attention, fit_gemm, fit_moe, pool, primary_source
from .kernel_tables import CHIPS, ENGINES, read_frame
from .gdn_fit import fit_gdn
from .mla_fit import fit_mla

FOLDERS = {v: k for k, v in CHIPS.items()}
"""catalogue accelerator -> aiconfigurator folder."""
SYSTEMS = {"h100-sxm": "hgx-h100", "h200": "hgx-h200", "b200": "hgx-b200", "b300": None, "gb200": "gb200-nvl72",
           "gb300": "gb300-nvl72"}
"""The catalogue system whose scale-up link a chip's one-node all-reduce tables measure (None: no
catalogued system yet)."""
FAMILY_NAMES = ("gemm", "context_attention", "generation_attention", "moe", "context_mla", "generation_mla", "gdn")
MOE_FALLBACK = ("sglang", "vllm", "trtllm")
EXCLUDED_GEMM = {("vllm", "fp8_block"): (
    "vllm's fp8_block GEMM table is left out (gemm_terms('fp8_block') falls back to its fp8 terms): it times a "
    "standalone op at 60-800 us for a 4096x4096 GEMM at m = 1, 5-30x the same engine's per-tensor fp8 kernel and "
    "the block-scaled kernels of sglang and trtllm on the same chip; priced with it, one MiniMax-M2.5 decode step "
    "alone exceeds the measured vllm TPOT of silicon_dev.csv")}
"""(engine, GEMM dtype) tables not turned into terms, with the reason (written into ``derivation``)."""
MLA_FALLBACK = ("sglang", "trtllm")
"""Where an engine has no MLA kernel table (vLLM holds only whole-module MLA tables, projections
included), the attention kernel is read from SGLang's (FlashMLA / FlashAttention backends, as
vLLM's), then TensorRT-LLM's; ``derivation`` names the table used."""
GDN_ENGINES = {"trtllm": ("sglang", "vllm"), "sglang": ("sglang", "vllm"), "vllm": ("vllm", "sglang")}
"""The Gated DeltaNet table each engine's profile reads: TensorRT-LLM's is not used (its
convolution rows run up to 4x faster than reading their stated input once at the datasheet
bandwidth allows, and its recurrent and conv-update rows up to 1.1x and 3x: the shapes recorded
are not what ran), so its profiles take SGLang's."""


def load_tables(root, chip: str, engine: str) -> tuple[dict, dict]:
    """({family: columns}, {family: engine whose table was read}) of one catalogue chip and
    engine; MoE falls back to another engine's table (``MOE_FALLBACK``) where the engine has none
    in a kept dtype (TensorRT-LLM on Blackwell holds only a w4a8 table)."""
    tables, used = {}, {}
    for family in FAMILY_NAMES:
        fallback = MOE_FALLBACK if family == "moe" else MLA_FALLBACK if family.endswith("_mla") else ()
        order = GDN_ENGINES[engine] if family == "gdn" else (engine,) + tuple(e for e in fallback if e != engine)
        for eng in order:
            frame = read_frame(root, FOLDERS[chip], eng, family)
            if frame is not None:
                by = "attn_dtype" if family.endswith("_attention") else "kernel" if family == "gdn" else "dtype"
                tables[family] = pool([primary_source(frame, by=by)])
                used[family] = f"{eng} {frame.path.split('/kernels/')[-1]}"
                break
    return tables, used


def load_all_reduce(root, chip: str, engine: str) -> tuple[CollectiveRows | None, str]:
    """The engine's own all-reduce rows of ``chip`` (CUDA-graph variant where there is one)."""
    from .collective_fit import load_aiconfigurator_comm

    try:
        groups = load_aiconfigurator_comm(root, FOLDERS[chip])
    except CatalogError:
        return None, ""
    mine = [g for g in groups if g.op == "all_reduce" and f" {engine}/" in g.cluster]
    graph = [g for g in mine if "graph" in g.cluster.lower()]
    mine = graph or mine
    if not mine:
        return None, ""
    return (CollectiveRows(message_bytes=np.concatenate([g.size_bytes for g in mine]),
                           participants=np.concatenate([g.participants for g in mine]),
                           time_s=np.concatenate([g.time_s for g in mine])),
            "; ".join(sorted({g.cluster for g in mine})))


def fit_terms(tables: dict, *, system=None, all_reduce: CollectiveRows | None = None) -> dict:
    """Profile keyword arguments fitted on pooled ``tables`` ({family: columns})."""
    kw: dict = {}
    g = tables.get("gemm")
    if g:
        kw["gemm"] = tuple((dt, t) for dt in sorted(np.unique(g["dtype"]).astype(str))
                           if (t := fit_gemm(g, dt)) is not None)
    kw.update(fit_attention(tables.get("context_attention") or {}, tables.get("generation_attention") or {}))
    kw.update(fit_mla(tables.get("context_mla") or {}, tables.get("generation_mla") or {}))
    kw.update(fit_gdn(tables.get("gdn") or {}))
    m = tables.get("moe")
    if m:
        moe, skew = [], {}
        for dt in sorted(np.unique(m["dtype"]).astype(str)):
            got = fit_moe(m, dt)
            if got is not None:
                moe.append((dt, got[0]))
                for d, v in got[1].items():
                    skew.setdefault(d, []).append(v)
        kw["moe"] = tuple(moe)
        kw["moe_skew"] = tuple((d, float(f"{np.median([c for c, _ in v]):.4g}"),
                                float(f"{np.median([w for _, w in v]):.4g}")) for d, v in sorted(skew.items()))
    if system is not None and all_reduce is not None:
        link = fit_all_reduce(system, all_reduce)
        if link is not None:
            kw["scale_up"] = link
    return kw


def build_profile(chip: str, engine: str, kw: dict, *, used: dict, ar_source: str = "", rows: dict | None = None,
                  today: str | None = None) -> EfficiencyProfile:
    """An ``EfficiencyProfile`` for (chip, engine) from fitted terms ``kw``, with provenance."""
    gemm = dict(kw.get("gemm", ()))
    base = gemm.get("bf16") or next(iter(gemm.values()), None)
    legacy = {} if base is None else {"matmul_fraction": base.fraction, "matmul_m_half": base.m_half,
                                      "kernel_floor_s": base.floor_s, "elementwise_fraction": base.hbm_fraction}
    today = today or datetime.date.today().isoformat()
    tables = "; ".join(f"{fam}: {src}" for fam, src in used.items())
    derivation = (
        f"benchmarks/derive_kernel_profiles.py ({today}) on NVIDIA's measured kernel tables "
        f"(aiconfigurator @095f58a, shared/validation/aiconfigurator/kernels), {chip} with {engine}: {tables}"
        + (f"; all-reduce: {ar_source}" if ar_source else "")
        + ". Fitted by fidelity.kernel_fit (log least squares, <= 4000 sampled rows per fit; the implementation "
        "with the most rows per dtype). Not fitted here: engine overheads (step_overhead_s, serving-loop terms: "
        "0 / 1, a later fit on end-to-end rows), element-wise kernels (no table: the bf16 GEMM's achieved bandwidth, "
        "no floor), scale-out (no measurement), NVLS. Legacy scalars matmul_fraction/m_half/kernel_floor_s are the "
        "bf16 GEMM's terms; hbm_fraction/attention_fraction are the decode KV bandwidth and prefill FLOP shares"
        + (f"{MLA_NOTE}, per KV dtype) fitted by fidelity.mla_fit on the context_mla/generation_mla tables above "
           "(DeepSeek-V3's MLA shape; unabsorbed prefill, absorbed decode; used by the calibrated step for MLA models)"
           if kw.get("mla_prefill") or kw.get("mla_decode") else "") + "."
        + "".join(f" {why}." for (eng, _), why in EXCLUDED_GEMM.items() if eng == engine))
    fit = {f"{fam}_rows": int(n) for fam, n in (rows or {}).items()}
    return dataclasses.replace(IDEAL, name=f"{chip}/{engine}", accelerators=(chip,), engine=engine,
                               derivation=derivation, source="https://github.com/ai-dynamo/aiconfigurator "
                               "(commit 095f58a, aic-core/src/aiconfigurator_core/systems, Apache-2.0)",
                               fit=fit, **legacy, **kw)


def derive(root, chip: str, engine: str) -> EfficiencyProfile:
    """Load, fit and build one (chip, engine) profile."""
    tables, used = load_tables(root, chip, engine)
    system = get_system(SYSTEMS[chip]) if SYSTEMS.get(chip) else None
    ar, ar_source = load_all_reduce(root, chip, engine) if system is not None else (None, "")
    kw = fit_terms(tables, system=system, all_reduce=ar)
    kw["gemm"] = tuple((dt, t) for dt, t in kw.get("gemm", ()) if (engine, dt) not in EXCLUDED_GEMM)
    rows = {fam: len(c["time_s"]) for fam, c in tables.items()}
    if ar is not None:
        rows["all_reduce"] = len(ar.time_s)
    return with_all_to_all(build_profile(chip, engine, kw, used=used, ar_source=ar_source, rows=rows), root, chip)


MLA_NOTE = "; MLA attention (mla_prefill/mla_decode"


def with_mla(profile: EfficiencyProfile, root, chip: str, engine: str, *,
             today: str | None = None) -> EfficiencyProfile:
    """``profile`` with its MLA attention tables (re)fitted on the (chip, engine) ``mla`` tables and
    every other term kept (engine terms fitted later on end-to-end rows stay as they are); the
    derivation says which tables, and ``fit`` counts their rows."""
    tables, used = {}, {}
    for family in ("context_mla", "generation_mla"):
        for eng in (engine,) + tuple(e for e in MLA_FALLBACK if e != engine):
            frame = read_frame(root, FOLDERS[chip], eng, family)
            if frame is not None:
                tables[family] = pool([primary_source(frame)])
                used[family] = f"{eng} {frame.path.split('/kernels/')[-1]}"
                break
    kw = fit_mla(tables.get("context_mla") or {}, tables.get("generation_mla") or {})
    if not kw:
        return profile
    today = today or datetime.date.today().isoformat()
    base = profile.derivation.split(MLA_NOTE)[0].rstrip(".")   # drops a later all-to-all note too: refit it after
    note = (f"{MLA_NOTE}, per KV dtype) fitted by fidelity.mla_fit ({today}) on "
            + "; ".join(f"{fam}: {src}" for fam, src in used.items())
            + " (DeepSeek-V3's MLA shape; unabsorbed prefill, absorbed decode; used by the calibrated step for MLA "
            "models).")
    fit = {k: v for k, v in profile.fit.items() if not k.endswith("_mla_rows")}
    fit.update({f"{fam}_rows": len(c["time_s"]) for fam, c in tables.items()})
    return dataclasses.replace(profile, derivation=base + note, fit=fit, mla_prefill=kw.get("mla_prefill", ()),
                               mla_decode=kw.get("mla_decode", ()))


GDN_NOTE = "; Gated DeltaNet kernels (gdn"


def with_gdn(profile: EfficiencyProfile, root, chip: str, engine: str, *,
             today: str | None = None) -> EfficiencyProfile:
    """``profile`` with its ``gdn`` tables (re)fitted on the chip's ``gdn_perf`` table
    (``GDN_ENGINES``), every other term kept; call after ``with_mla``, before ``with_all_to_all``."""
    for eng in GDN_ENGINES[engine]:
        frame = read_frame(root, FOLDERS[chip], eng, "gdn")
        if frame is not None:
            break
    else:
        return profile
    cols = pool([primary_source(frame, by="kernel")])
    kw = fit_gdn(cols)
    if not kw:
        return profile
    today = today or datetime.date.today().isoformat()
    base = profile.derivation.split(GDN_NOTE)[0].rstrip(".")   # drops a later all-to-all note too: refit it after
    note = (f"{GDN_NOTE}: chunk, recurrent, conv, conv_update) fitted by fidelity.gdn_fit ({today}) on {eng} "
            f"{frame.path.split('/kernels/')[-1]} (the calibrated step prices GDN layers' "
            "recurrence with the recurrent and chunk rates: docs/calibration.md).")
    fit = dict(profile.fit)
    fit["gdn_rows"] = len(cols["time_s"])
    return dataclasses.replace(profile, derivation=base + note, fit=fit, gdn=kw["gdn"])


MXFP4_NOTE = "; MXFP4 MoE ([moe.mxfp4]"


def with_mxfp4_moe(profile: EfficiencyProfile, root, chip: str, engine: str, *,
                   today: str | None = None) -> EfficiencyProfile:
    """``profile`` with its ``moe.mxfp4`` terms (re)fitted on the engine's own MoE table rows of the
    format ``kernel_tables.MXFP4_MOE`` names for the chip (Hopper: W4A16 MXFP4), every other term (MoE
    skew factors included) kept; unchanged on other chips. Call after ``with_gdn``, before
    ``with_all_to_all`` (each drops the notes after its own)."""
    from .kernel_tables import MXFP4_MOE

    folder = FOLDERS[chip]
    frame = read_frame(root, folder, engine, "moe") if folder in MXFP4_MOE else None
    if frame is None:
        return profile
    cols = pool([primary_source(frame, by="dtype")])
    got = fit_moe(cols, "mxfp4")
    if got is None:
        return profile
    today = today or datetime.date.today().isoformat()
    base = profile.derivation.split(MXFP4_NOTE)[0].rstrip(".")
    note = (f"{MXFP4_NOTE}: the {MXFP4_MOE[folder]} rows, weights dequantised in the kernel) fitted by "
            f"fidelity.kernel_fit.fit_moe ({today}) on {engine} {frame.path.split('/kernels/')[-1]} "
            "(kernel_tables.MXFP4_MOE).")
    fit = dict(profile.fit)
    fit["moe_mxfp4_rows"] = int((cols["dtype"] == "mxfp4").sum())
    moe = tuple((d, t) for d, t in profile.moe if d != "mxfp4") + (("mxfp4", got[0]),)
    return dataclasses.replace(profile, derivation=base + note, fit=fit, moe=tuple(sorted(moe)))


A2A_NOTE = "; EP all-to-all ([all_to_all]"


def with_all_to_all(profile: EfficiencyProfile, root, chip: str, *, today: str | None = None) -> EfficiencyProfile:
    """``profile`` with its ``all_to_all`` link terms (re)fitted on the chip's NCCL one-node
    all-to-all (``comm_fit``; the same for every engine), every other term kept; unchanged where
    the chip has no catalogued system or no table."""
    from .comm_fit import fit_all_to_all, load_all_to_all

    if not SYSTEMS.get(chip):
        return profile
    rows, source = load_all_to_all(root, FOLDERS[chip])
    link = fit_all_to_all(get_system(SYSTEMS[chip]), rows) if rows is not None else None
    if link is None:
        return profile
    today = today or datetime.date.today().isoformat()
    base = profile.derivation.split(A2A_NOTE)[0].rstrip(".")   # appended last (after the MLA note)
    note = (f"{A2A_NOTE}: per-call overhead, per-step latency, bandwidth share of the scale-up link) fitted by "
            f"fidelity.comm_fit ({today}) on NCCL's bf16 one-node all-to-all, {source}; the scale_up terms stay the "
            "engine all-reduce's; DeepEP tables are not in the shared data).")
    fit = dict(profile.fit)
    fit["all_to_all_rows"] = len(rows.time_s)
    return dataclasses.replace(profile, derivation=base + note, fit=fit, all_to_all=link)


ALL = tuple((chip, engine) for chip in CHIPS.values() for engine in ENGINES)
