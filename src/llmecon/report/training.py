"""Training results as JSON-ready dicts and figures (``llmecon train`` and ``llmecon overtrain``)."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import numpy as np

from ..spec.model import Model
from ..econ.training import LifetimeCost, ScalingLaw
from ..econ.training_step import SECONDS_PER_DAY, TrainStep
from .figure import pyplot, save_figure

TIME_PARTS = (("compute", "compute_s"), ("element-wise", "elementwise_s"), ("TP comm", "tp_comm_s"),
              ("EP comm", "ep_comm_s"), ("CP comm", "cp_comm_s"), ("PP comm", "pp_comm_s"),
              ("ZeRO-3 gathers", "zero3_gather_s"), ("bubble", "bubble_s"), ("DP comm", "dp_comm_s"))
MEMORY_PARTS = ("weights", "gradients", "optimizer", "activations", "reserve")

TRAIN_ASSUMPTIONS = (
    "mixed-precision Adam: 2 + 2 + 12 bytes per parameter (bf16 weights and grads, fp32 master, m, v; "
    "--grad-fp32 makes the gradients 4, --bf16-moments the optimizer states 8, --ema gpu adds 4); "
    "ZeRO shards over the data-parallel × context-parallel group; every pipeline rank's memory is laid out "
    "(its layers, embedding on the first, head on the last, in-flight micro-batches of its schedule) and the "
    "fullest decides whether the plan fits; the framework reserve is --reserve-gb (0 unless given)",
    "activations: Korthikanti et al. 2022 accounting with sequence parallelism when tp > 1",
    "TP all-reduces, EP all-to-alls and PP hops are exposed (DualPipe hides all-to-alls and PP sends behind the "
    "paired chunk's compute); DP gradient sync hides behind the last micro-batch's backward by --dp-overlap; CP ring "
    "traffic hides behind attention compute; calibrated mode runs the links at NCCL's measured share of their "
    "bandwidth where the chip has one (kernel_efficiency.links_source)",
    "collectives on scale-up inside a domain, else on the per-GPU scale-out link (ranks ordered tp, cp, dp, pp)",
    "omitted: optimizer-step time, launch/framework overheads beyond --efficiency (or, calibrated, the sustained "
    "share), stragglers, MoE imbalance",
)


def train_dict(st: TrainStep, model: Model, system_name: str, *, tokens: float | None = None,
               price_per_gpu_hour: float | None = None, dp_overlap: float = 1.0, goodput=None, rate=None,
               power=None) -> dict:
    """The JSON of ``llmecon train``; with ``goodput`` (``econ.training_goodput.Goodput``) days, GPU-hours
    and dollars are wall time at that goodput (ideal time / goodput). ``rate`` (``econ.tco.TcoRate``): the
    price came from TCO inputs; ``power`` (``econ.tco.PowerBasis``): what tokens/s per MW divide by."""
    out = {
        "model": model.name, "system": system_name, "gpus": st.gpus, "plan": asdict(st.plan),
        "seq_len": st.seq_len, "global_batch_tokens": st.global_batch_tokens, "microbatches": st.microbatches,
        "efficiency": st.efficiency, "dp_overlap": dp_overlap, "step_s": st.step_s,
        "time_breakdown_s": {key.removesuffix("_s"): getattr(st, key) for _, key in TIME_PARTS},
        "collective_tiers": dict(st.tiers), "bubble_fraction": st.bubble_fraction, "mfu": st.mfu, "hfu": st.hfu,
        "tflops_per_gpu": st.tflops_per_gpu, "hardware_tflops_per_gpu": st.hardware_tflops_per_gpu,
        "tokens_per_s": st.tokens_per_s, "model_flops_per_step": st.model_flops,
        "hardware_flops_per_step": st.hardware_flops, "memory_per_gpu_bytes": st.memory.total,
        "memory_breakdown_bytes": {k: getattr(st.memory, k) for k in MEMORY_PARTS},
        "hbm_per_gpu_bytes": st.memory.hbm, "fits": st.memory.fits, "fullest_pipeline_rank": st.memory.rank,
        "memory_per_rank_bytes": [dict(rank=r.rank, layers=r.layers, total=r.total,
                                       **{k: getattr(r, k) for k in MEMORY_PARTS}) for r in st.memory.ranks],
        "precision": st.precision,
        "assumptions": list(TRAIN_ASSUMPTIONS) + list(model.assumptions),
    }
    if st.kernels is not None:
        out["kernel_efficiency"] = asdict(st.kernels)
    if goodput is not None:
        out["goodput"] = asdict(goodput)
    if tokens is not None:
        seconds = st.train_s(tokens) / (1.0 if goodput is None else goodput.goodput)
        out.update(train_tokens=float(tokens), train_days=seconds / SECONDS_PER_DAY,
                   gpu_hours=seconds * st.gpus / 3600.0)
        if price_per_gpu_hour is not None:
            out["usd"] = out["gpu_hours"] * price_per_gpu_hour
    if price_per_gpu_hour is not None:
        out["price_per_gpu_hour"] = price_per_gpu_hour
        out["usd_per_mtok"] = price_per_gpu_hour * st.gpus / 3600.0 / st.tokens_per_s * 1e6
    if power is not None:
        from .tco import priced_fields

        out["tokens_per_s_per_mw"] = power.tokens_per_s_per_mw(st.tokens_per_s / st.gpus)
        out.update(priced_fields(price_per_gpu_hour, rate, power, system_name))
    return out


def published_dict(run, changed: tuple[str, ...], d: dict) -> dict:
    """A published run's figure beside the prediction in ``d`` (the JSON of ``llmecon train``); ``changed``:
    the options given that differ from the published layout (the comparison is then not like for like)."""
    predicted = d.get(run.metric)
    return {"run": run.name, "metric": run.metric, "value": run.value, "predicted": predicted,
            "error": None if predicted is None else predicted / run.value - 1, "source": run.source,
            "status": run.status, "notes": run.notes, "changed_options": list(changed)}


def published_line(p: dict) -> str:
    """One line for the text report."""
    unit = {"tflops_per_gpu": "TFLOP/s per GPU", "gpu_hours": "GPU-hours"}[p["metric"]]
    pred = ("not computed (give --tokens)" if p["predicted"] is None else
            f"predicted {p['predicted']:,.0f} ({p['error']:+.1%})")
    changed = (f"; NOT the published layout: {', '.join(p['changed_options'])} changed" if p["changed_options"]
               else "")
    return f"{p['value']:,.0f} {unit} ({p['run']}: {p['source']}; {p['status']}), {pred}{changed}"


def _lifetime(c: LifetimeCost) -> dict:
    pre, rl, inf = (float(x) for x in c.shares)
    return {"params": float(c.params), "pretrain_tokens": float(c.pretrain_tokens), "loss": float(c.loss),
            "pretrain_flops": float(c.pretrain_flops), "rl_flops": float(c.rl_flops),
            "inference_flops": float(c.inference_flops), "total_flops": float(c.total_flops),
            "shares": {"pretrain": pre, "rl": rl, "inference": inf}}


def overtrain_dict(*, params: float, inference_tokens: float, pretrain_tokens: float, chinchilla_tokens: float,
                   rl_tokens: float, thirds: LifetimeCost, optimum: LifetimeCost, law: ScalingLaw,
                   inputs: dict) -> dict:
    best = _lifetime(optimum)
    best["overtrain_factor"] = best["pretrain_tokens"] / (20.0 * best["params"])
    best["saving_vs_equal_split"] = 1.0 - best["total_flops"] / float(thirds.total_flops)
    return {
        "inputs": inputs, "active_params": params, "inference_tokens": inference_tokens,
        "pretrain_tokens": pretrain_tokens, "chinchilla_tokens": chinchilla_tokens,
        "overtrain_factor": pretrain_tokens / chinchilla_tokens, "rl_tokens": rl_tokens,
        "equal_split": _lifetime(thirds), "optimum_at_same_loss": best,
        "scaling_law": {"E": law.E, "A": law.A, "B": law.B, "alpha": law.alpha, "beta": law.beta,
                        "source": law.source},
        "units": "FLOPs are training-FLOP equivalents: RL and inference FLOPs divided by their efficiency "
                 "relative to pretraining",
    }


def plot_train(st: TrainStep, model: Model, system_name: str, path: str | Path) -> None:
    """Where a step's time goes, and what fills a GPU's memory against its HBM."""
    plt = pyplot()
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 3.6))
    left = 0.0
    for i, (label, key) in enumerate(TIME_PARTS):
        value = getattr(st, key)
        if value > 0:
            ax1.barh(0, value, left=left, color=f"C{i}", label=f"{label} {value:.3g} s")
            left += value
    ax1.set_yticks([])
    ax1.set_xlabel("seconds per step")
    ax1.set_title(f"Step {st.step_s:.3g} s, MFU {st.mfu:.1%}, bubble {st.bubble_fraction:.1%}")
    ax1.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.3), ncol=3)
    left = 0.0
    for i, key in enumerate(MEMORY_PARTS):
        value = getattr(st.memory, key) / 1e9
        ax2.barh(0, value, left=left, color=f"C{i}", label=f"{key} {value:.3g} GB")
        left += value
    ax2.axvline(st.memory.hbm / 1e9, color="k", ls="--", lw=1, label=f"HBM {st.memory.hbm / 1e9:.0f} GB")
    ax2.set_yticks([])
    ax2.set_xlabel("GB per GPU")
    ax2.set_title("Memory per GPU (fullest stage)")
    ax2.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.3), ncol=3)
    fig.suptitle(f"{model.name}, {st.gpus} GPUs of {system_name}, {st.plan.label()}", fontsize=10)
    save_figure(fig, path)


def plot_overtrain(curve: LifetimeCost, thirds: LifetimeCost, optimum: LifetimeCost, path: str | Path) -> None:
    """Lifetime compute against model size at a fixed loss: pretraining falls, RL and inference rise."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.2))
    n = np.asarray(curve.params)
    ok = np.isfinite(np.asarray(curve.total_flops))
    ax.loglog(n[ok], np.asarray(curve.total_flops)[ok], lw=2, color="k", label="lifetime total")
    ax.loglog(n[ok], np.asarray(curve.pretrain_flops)[ok], color="C0", label="pretraining")
    ax.loglog(n[ok], np.add(curve.rl_flops, curve.inference_flops)[ok], color="C1", label="RL + inference")
    ax.plot([float(thirds.params)], [float(thirds.total_flops)], "s", color="C2", label="equal split")
    ax.plot([float(optimum.params)], [float(optimum.total_flops)], "o", color="C3", label="optimum")
    ax.set_xlim(float(optimum.params) / 10, float(optimum.params) * 30)
    top = float(np.asarray(curve.total_flops)[ok].min())
    ax.set_ylim(top / 20, top * 20)
    ax.set_xlabel("active parameters N")
    ax.set_ylabel("training-FLOP equivalents")
    ax.set_title(f"Lifetime compute at loss {float(optimum.loss):.3f} (Chinchilla law)")
    ax.legend(fontsize=8)
    save_figure(fig, path)
