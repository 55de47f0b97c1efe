"""The measured AMD profiles (``catalog/profiles/mi300x-vllm.toml``, ``mi325x-vllm.toml``, ``mi355x-vllm.toml``):
what each term is measured on and what is still borrowed, assembled from the fits of ``amd_fit`` (aiter kernel
tables) and ``amd_serving`` (MI300X vLLM batch latency). ``benchmarks/fit_amd.py`` runs the fits and writes them.

Per chip (the README's chip keys: gfx942/304 = MI300X and MI325X, gfx950/256 = MI350X and MI355X):

* **mi300x/vllm** - measured: GEMM fp8_block and fused MoE bf16/fp8/fp8_block (aiter gfx942, tuning-time
  ceilings), the served FP8 GEMM (``gemm.fp8``: fraction and m ramp), the decode KV bandwidth share
  (``hbm_fraction``) and the per-step overhead (MI300X vLLM batch latency, one software version). Borrowed
  from the pooled NVIDIA vLLM transfer (``mi300x-transferred`` as it was shipped, 2026-11-26): bf16 and
  nvfp4 GEMM (no gfx942 bf16 rows exist in the snapshot), GQA/MLA/Gated DeltaNet attention kernel tables,
  link efficiencies (no RCCL data), MoE routing skew, the TTFT terms (no MI300X TTFT measurement), layer
  overhead and floor scale (held in the served fit).
* **mi325x/vllm** - transferred from mi300x/vllm (``nearest``): the same gfx942 compute die, so kernel
  efficiencies and engine terms carry over as a documented choice; MI325X's own datasheet (6.0 TB/s HBM3E,
  the same dense peaks) scales every term. No MI325X measurement exists in the shared data.
* **mi355x/vllm** - measured: GEMM bf16/fp8/fp8_block/mxfp4 and fused MoE bf16/fp8/fp8_block/mxfp4 (aiter
  gfx950). Transferred from mi300x/vllm: the engine terms (per-step overhead, decode KV bandwidth share); the
  rest borrowed as for mi300x/vllm. The gfx950 rows are read as MI355X (an MI350X tuning machine would make
  the fractions conservative).
"""

from __future__ import annotations

import dataclasses

from ..spec.efficiency import EfficiencyProfile
from .amd_fit import with_kernels

AITER = "ROCm/aiter aiter/configs @e4048607 (2026-08-22, MIT), shared/validation/non_nvidia/rocm_aiter"
SERVED = ("ROCm/vllm docs/dev-docker/README.md @c936f5e7f7 (2025-08-14, vLLM 0.10.0, Apache-2.0), "
          "shared/validation/non_nvidia/rocm_vllm_dev_docker")
SOURCE = f"{AITER}; {SERVED}"
BORROWED = ("borrowed from the pooled NVIDIA vllm transfer (mi300x-transferred, 2026-11-26, term-by-term median over "
            "h100-sxm/h200/b200/b300/gb200/gb300 vllm): GQA prefill/decode attention tables, MLA and Gated DeltaNet "
            "tables, scale-up/scale-out/all-to-all link efficiencies (no RCCL measurement), MoE routing skew, "
            "ttft_prefill_factor, request_overhead_s, layer_overhead_s, engine_floor_scale, elementwise terms")


PROTOCOL = "leave-one-model-out on MI300X vLLM batch latency (MI300X's figure, this chip unmeasured)"
"""How a transferred AMD profile's TPOT error was measured (``EfficiencyProfile.label``): batch latency is
prefill plus output_len - 1 decode steps, so its relative error is close to the mean TPOT's."""


def _kernel_text(fitted: dict) -> str:
    return "; ".join(f"{fam} {', '.join(sorted(fitted[fam]))}" for fam in ("gemm", "moe") if fitted.get(fam))


def _fit_table(rows: dict, scores: dict, date: str) -> dict:
    out = {"as_of": date}
    out.update({f"{k}_rows": int(v) for k, v in rows.items()})
    out.update({k: float(f"{v:.4g}") for k, v in scores.items()})
    return out


def mi300x(base: EfficiencyProfile, kernels: dict, served: dict, *, rows: dict, scores: dict,
           date: str) -> EfficiencyProfile:
    """mi300x/vllm from the transferred profile ``base`` (borrowed terms), aiter gfx942 ``kernels`` and the
    served fit ``served`` (``amd_serving.with_engine`` terms)."""
    from .amd_serving import with_engine

    prof = with_engine(with_kernels(base, kernels), served)
    derivation = (
        f"benchmarks/fit_amd.py ({date}). Measured on AMD: kernel terms fitted by fidelity.amd_fit "
        f"(kernel_fit.fit_gemm/fit_moe, log least squares) on aiter's tuned-kernel rows for gfx942/304 "
        f"(MI300X/MI325X die; tuning-time ceilings): {_kernel_text(kernels)}; served terms fitted by "
        f"fidelity.amd_serving on {rows.get('served', 0)} MI300X vLLM batch-latency rows of one software version "
        f"(8x MI300X, TP8, Llama 3.1 70B/405B FP8 with FP8 KV, vLLM 0.10.0, 2025-08-14): step_overhead_s, "
        f"the served FP8 GEMM (gemm.fp8 fraction and m_half; its n/k ramps, bandwidth and floor are the fp8_block "
        f"terms'), hbm_fraction (decode KV bandwidth share). Not measured, {BORROWED}; bf16 and nvfp4 GEMM also "
        f"borrowed (no gfx942 bf16 rows in the snapshot). Expected error (out of sample, "
        f"benchmarks/results/amd_fit_{date}.md): served batch latency leave-one-model-out median "
        f"{scores.get('served_lomo_median', float('nan')):.1%}; kernels leave-one-model-out in [fit].")
    return dataclasses.replace(prof, name="mi300x/vllm", accelerators=("mi300x",), engine="vllm",
                               derivation=derivation, source=SOURCE, transfer={},
                               fit=_fit_table(rows, scores, date))


def _expected(scores: dict, keys: dict) -> dict:
    return {k: float(f"{scores[v]:.4g}") for k, v in keys.items() if v in scores}


def mi325x(measured: EfficiencyProfile, *, scores: dict, date: str) -> EfficiencyProfile:
    """mi325x/vllm: mi300x/vllm's terms on MI325X's datasheet (same gfx942 die), labelled transferred."""
    derivation = (
        f"benchmarks/fit_amd.py ({date}): every term of mi300x/vllm (its derivation) transferred to MI325X "
        f"(method nearest): MI325X is the MI300X compute die (gfx942, 304 CUs, the same dense peaks) with 256 GB "
        f"HBM3E at 6.0 TB/s, so kernel efficiencies and engine terms carry over by choice and MI325X's own "
        f"datasheet scales them. No MI325X measurement exists in the shared data (aiter rows cannot tell MI300X "
        f"from MI325X; no MI325X serving table). Expected error: MI300X's own out-of-sample figures (a floor: "
        f"memory-bound terms at the higher bandwidth are not measured).")
    transfer = {"source": "mi300x/vllm", "method": "nearest", "date": date,
                "rule": "same gfx942 compute die: every term of mi300x/vllm, MI325X datasheet",
                "borrowed": "every term (mi300x/vllm's measured and borrowed terms alike)",
                "error_scope": "MI300X out-of-sample figures (served leave-one-model-out, kernels "
                               "leave-one-model-out); MI325X itself unmeasured",
                "error_protocol": PROTOCOL,
                "expected_error": _expected(scores, {"tpot_median": "served_lomo_median",
                                                     "tpot_p90": "served_lomo_p90",
                                                     "gemm_median": "gemm_fp8_block_lomo_median",
                                                     "moe_median": "moe_fp8_block_lomo_median"})}
    return dataclasses.replace(measured, name="mi325x/vllm", accelerators=("mi325x",), derivation=derivation,
                               transfer=transfer, fit={"as_of": date})


def mi355x(base: EfficiencyProfile, kernels: dict, measured_mi300x: EfficiencyProfile, *, rows: dict,
           scores: dict, date: str) -> EfficiencyProfile:
    """mi355x/vllm: aiter gfx950 kernel terms on ``base`` (the borrowed terms), engine terms of mi300x/vllm."""
    engine = {k: getattr(measured_mi300x, k) for k in ("step_overhead_s", "hbm_fraction")}
    prof = dataclasses.replace(with_kernels(base, kernels), **engine)
    derivation = (
        f"benchmarks/fit_amd.py ({date}). Measured on AMD: kernel terms fitted by fidelity.amd_fit on aiter's "
        f"tuned-kernel rows for gfx950/256 (MI350X/MI355X die, read as MI355X; tuning-time ceilings): "
        f"{_kernel_text(kernels)}. Transferred from mi300x/vllm (fitted on MI300X vLLM batch latency; no MI355X "
        f"serving measurement exists in the shared data): step_overhead_s, hbm_fraction. Not measured, {BORROWED}. "
        f"Expected error: kernels leave-one-model-out and leave-one-chip-out in [fit] and "
        f"benchmarks/results/amd_fit_{date}.md; served error unmeasured on MI355X (MI300X's served figure given as "
        f"the transfer's expected error).")
    transfer = {"source": "mi300x/vllm", "method": "nearest", "date": date,
                "rule": "engine terms (step_overhead_s, hbm_fraction) of mi300x/vllm; gfx950 kernel terms measured",
                "engine_terms_from": "mi300x/vllm (MI300X vLLM 0.10.0 batch latency)",
                "borrowed": "step_overhead_s, hbm_fraction from mi300x/vllm; " + BORROWED,
                "error_scope": "kernels: gfx950 aiter rows leave-one-model-out; served: MI300X leave-one-model-out "
                               "(MI355X serving unmeasured)",
                "error_protocol": PROTOCOL,
                "expected_error": _expected(scores, {"tpot_median": "served_lomo_median",
                                                     "tpot_p90": "served_lomo_p90",
                                                     "gemm_median": "gemm_fp8_block_lomo_median",
                                                     "moe_median": "moe_fp8_block_lomo_median"})}
    return dataclasses.replace(prof, name="mi355x/vllm", accelerators=("mi355x",), engine="vllm",
                               derivation=derivation, source=AITER, transfer=transfer,
                               fit=_fit_table(rows, scores, date))
