"""MI300X vLLM served measurements (batch latency) and the engine terms of an AMD profile fitted on them.

Data (``shared/validation/non_nvidia/``, README sections 2-4), all 8x MI300X, TP8, FP8 weights and activations
with an FP8 KV cache:

* ``rocm_vllm_dev_docker/``: ROCm/vllm dev-docker README tables, 20 versions with numbers (vLLM 0.6.6 ... 0.10.0,
  2025-01-27 ... 2025-08-14), ``benchmark_latency.py``: seconds for a batch of ``batch`` prompts of ``input_len``
  tokens to finish prefill and ``output_len`` = 2048 tokens each (Llama 3.1 70B and 405B, batch 1 ... 128);
* ``amd_rocm_hub_performance_results/``: the same protocol on named release images (Llama 3.1 70B, batch 1/2/4,
  low/medium confidence web transcriptions);
* ``oracle_oci_blog/``: Llama 3.1 405B FP8 on OCI, 128/128 tokens, batch 1 ... 256, vLLM version not stated.

A batch-latency row is priced as one prefill of the batch (``prefill_of``, its latency) plus ``output_len`` - 1
decode steps of the batch at contexts input_len + 1 ... input_len + output_len - 1 (``decode_of``, the mean step
over ``CONTEXT_POINTS`` evenly spaced contexts, times the step count: decode step time is close to linear in
context, so this is the sum to well under 1%). Omitted: sampling on the host beyond what the fitted terms absorb,
the benchmark's warm-up (excluded by the script), request arrival (all requests are present at t = 0).

The offline-throughput rows are not used: their unit (total or output tokens) is not stated in the source
(README section 2), and a scheduler-bound run of 3,200 requests at ``max_num_seqs`` needs the simulator.

Engine terms fitted (``fit_engine``): ``step_overhead_s`` (once per forward step) and ``layer_overhead_s`` (per
layer per step: on these TP8 rows it cannot be told apart from the all-reduce call overhead, two calls per
layer, so it carries both); every other term is the profile's. Fit: bounded least squares on log(predicted /
measured) over the rows of one software version (the README: numbers move by up to 30% between images, never
pool versions without a version term).
"""

from __future__ import annotations

import csv
import dataclasses
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..catalog.hardware import get_system
from ..errors import SpecError
from ..catalog.models import get_model
from ..spec.deployment import Deployment
from ..spec.efficiency import EfficiencyProfile
from ..spec.plan import Plan
from ..step.inference import decode_of, prefill_of

FILES = ("rocm_vllm_dev_docker/mi300x_vllm_dev_docker_readme_tidy.csv",
         "amd_rocm_hub_performance_results/mi300x_vllm_rocm_hub_tidy.csv",
         "oracle_oci_blog/mi300x_llama405b_oci_tidy.csv")
MODELS = {"amd/Llama-3.1-70B-Instruct-FP8-KV": "llama-3.1-70b", "amd/Llama-3.1-405B-Instruct-FP8-KV": "llama-3.1-405b",
          "Llama 3.1 405B FP8": "llama-3.1-405b"}
"""Source model id -> catalogue model (the Quark FP8-KV checkpoints keep the Llama 3.1 architecture)."""
SYSTEMS = {"MI300X": "mi300x-8"}
CONTEXT_POINTS = 16
ENGINE_TERMS = ("step_overhead_s", "fp8_fraction", "fp8_m_half", "hbm_fraction")
"""Fitted on served rows (module docstring): the per-step overhead, the FP8 GEMM as vLLM runs it (fraction of
the fp8 peak and its m ramp, the ``gemm.fp8`` entry; n, k ramps, bandwidth and floor kept from the profile's
fp8 terms) and the decode KV bandwidth share (the profile's scalar ``hbm_fraction``, which the served step
prices GQA attention's KV traffic with: ``step.calibrated.attention_rates``)."""
BOUNDS = {"step_overhead_s": (1e-7, 0.05), "fp8_fraction": (0.02, 1.0), "fp8_m_half": (1.0, 1e4),
          "hbm_fraction": (0.05, 1.0)}
START = {"step_overhead_s": 1e-3, "fp8_fraction": 0.5, "fp8_m_half": 100.0, "hbm_fraction": 0.7}


def default_root() -> Path | None:
    """``shared/validation/non_nvidia`` beside the repository, or None when absent."""
    here = Path(__file__).resolve()
    for parent in here.parents:
        for cand in (parent / "shared", parent.parent / "shared"):
            path = cand / "validation" / "non_nvidia"
            if (path / FILES[0]).is_file():
                return path
    return None


@dataclass(frozen=True, kw_only=True)
class LatencyRow:
    """One measured batch latency: ``seconds`` for ``batch`` prompts of ``input_len`` tokens to produce
    ``output_len`` tokens each, on ``system`` with TP ``tp``; ``source``, ``version`` (engine version or date),
    ``confidence`` as the tidy table gives them."""

    model: str
    system: str
    tp: int
    batch: int
    input_len: int
    output_len: int
    seconds: float
    source: str
    version: str
    date: str
    confidence: str


def read_latency(root: str | Path) -> list[LatencyRow]:
    """Every batch-latency row (metric ``e2e_batch_latency``, seconds) of the MI300X vLLM tables, repeats
    included (a repeated value is that version's number too; ``is_repeat`` only matters when versions are
    pooled, which the fit does not do)."""
    out = []
    for name in FILES:
        with (Path(root) / name).open(newline="", encoding="utf-8") as fh:
            for r in csv.DictReader(fh):
                if r["workload"] != "batch_latency" or r["metric"] != "e2e_batch_latency" or r["unit"] != "s":
                    continue
                out.append(LatencyRow(model=MODELS[r["model"]], system=SYSTEMS[r["chip"]], tp=int(r["tp"]),
                                      batch=int(r["batch_or_concurrency"]), input_len=int(r["input_len"]),
                                      output_len=int(r["output_len"]), seconds=float(r["value"]),
                                      source=r["source_id"], version=r["engine_version"] or "?",
                                      date=r["date"], confidence=r["confidence"].split(" ")[0]))
    return out


def predict_latency(rows: list[LatencyRow], profile: EfficiencyProfile) -> np.ndarray:
    """Seconds of each row's batch under ``profile`` (module docstring), vectorised per (model, system, tp)."""
    out = np.empty(len(rows))
    groups: dict[tuple, list[int]] = {}
    for i, r in enumerate(rows):
        groups.setdefault((r.model, r.system, r.tp), []).append(i)
    for (model, system, tp), idx in groups.items():
        dep = Deployment(model=get_model(model), system=get_system(system), plan=Plan(tp=tp), weight_dtype="fp8",
                         kv_dtype="fp8", profile=profile)
        b = np.array([rows[i].batch for i in idx], dtype=float)
        isl = np.array([rows[i].input_len for i in idx], dtype=float)
        osl = np.array([rows[i].output_len for i in idx], dtype=float)
        prefill = np.asarray(prefill_of(dep, batch=b, prompt_tokens=isl).latency_s, dtype=float)
        frac = (np.arange(CONTEXT_POINTS) + 0.5) / CONTEXT_POINTS
        ctx = isl[:, None] + 1.0 + frac[None, :] * np.maximum(osl - 2.0, 0.0)[:, None]
        step = np.asarray(decode_of(dep, batch=np.repeat(b, CONTEXT_POINTS), context=ctx.ravel()).step_s, dtype=float)
        out[idx] = prefill + (osl - 1.0) * step.reshape(len(idx), CONTEXT_POINTS).mean(axis=1)
    return out


def with_engine(profile: EfficiencyProfile, terms: dict) -> EfficiencyProfile:
    """``profile`` with the fitted terms: scalars as they are; ``fp8_fraction`` / ``fp8_m_half`` as the
    ``gemm.fp8`` entry (the profile's fp8 terms, fp8_block where it has no fp8 entry, with those two replaced)."""
    kw = {k: v for k, v in terms.items() if not k.startswith("fp8_")}
    if "fp8_fraction" in terms or "fp8_m_half" in terms:
        t = profile.gemm_terms("fp8")
        fp8 = dataclasses.replace(t, fraction=terms.get("fp8_fraction", t.fraction),
                                  m_half=terms.get("fp8_m_half", t.m_half))
        kw["gemm"] = tuple((k, v) for k, v in profile.gemm if k != "fp8") + (("fp8", fp8),)
    return dataclasses.replace(profile, **kw)


def fit_engine(rows: list[LatencyRow], profile: EfficiencyProfile) -> dict:
    """``ENGINE_TERMS`` fitted on ``rows`` with the rest of ``profile`` held (module docstring); 4 significant
    digits."""
    from scipy.optimize import least_squares

    if not rows:
        raise SpecError("no batch-latency rows to fit engine terms on", field="rows",
                        fix="give rows of one software version (amd_serving.latest)")
    y = np.array([r.seconds for r in rows])
    lo = np.log([BOUNDS[n][0] for n in ENGINE_TERMS])
    hi = np.log([BOUNDS[n][1] for n in ENGINE_TERMS])

    def residual(z):
        terms = dict(zip(ENGINE_TERMS, np.exp(z)))
        return np.log(predict_latency(rows, with_engine(profile, terms)) / y)

    x0 = np.clip(np.log([START[n] for n in ENGINE_TERMS]), lo + 1e-9, hi - 1e-9)
    res = least_squares(residual, x0, bounds=(lo, hi), loss="soft_l1", f_scale=0.1, max_nfev=100)
    return {n: float(f"{v:.4g}") for n, v in zip(ENGINE_TERMS, np.exp(res.x))}


def config(r: LatencyRow) -> tuple:
    """What a row measured and what it read: (model, system, tp, batch, input, output, seconds)."""
    return (r.model, r.system, r.tp, r.batch, r.input_len, r.output_len, r.seconds)


def latest(rows: list[LatencyRow], source: str = "rocm_vllm_dev_docker_readme") -> list[LatencyRow]:
    """The rows of ``source``'s latest date (one software version: the fit set), each (configuration, value)
    once (two README versions share the last date and repeat most values)."""
    mine = [r for r in rows if r.source == source]
    last = max(r.date for r in mine)
    seen: dict[tuple, LatencyRow] = {}
    for r in mine:
        if r.date == last:
            seen.setdefault(config(r), r)
    return list(seen.values())


def unseen(rows: list[LatencyRow], fitted: list[LatencyRow]) -> list[LatencyRow]:
    """``rows`` less those repeating a fitted (configuration, value): a number copied from one README version
    into the next is not out of sample."""
    known = {config(r) for r in fitted}
    return [r for r in rows if config(r) not in known]
