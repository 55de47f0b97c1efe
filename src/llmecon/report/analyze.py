"""Result objects -> JSON-ready dicts, terminal tables and figures. The one place units are
formatted for people; the core stays in SI floats."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from ..econ.batching import Analysis, BatchCurve, BatchEconomics
from ..spec.deployment import Deployment
from ..spec.hardware import Accelerator, System
from ..step.inference import StepResult
from ..spec.model import Model
from ..spec.plan import place
from ..units import fmt_bytes, fmt_params, fmt_rate, fmt_seconds, json_fields, json_num
from .tables import fmt_tokens


def model_dict(model: Model, kv_dtype: str | None = None) -> dict:
    """``llmecon model --json``: derived facts of a model."""
    p = model.params
    out = {
        "name": model.name, "total_params": p.total, "active_params": p.active,
        "active_params_excluding_embedding": p.active_excluding_embedding, "non_embedding_params": p.non_embedding,
        "params_by_component": p.as_dict(), "sparsity": model.sparsity,
        "kv_dtype": kv_dtype or model.kv_dtype, "kv_bytes_per_token": model.kv_bytes_per_token(kv_dtype),
        "n_layers": model.n_layers, "d_model": model.d_model, "vocab_size": model.vocab_size,
        "attention": model.attention_label, "attention_kind": model.attention.kind,
        "n_heads": model.attention.n_heads, "n_kv_heads": model.attention.n_kv_heads,
        "head_dim": model.attention.head_dim, "is_moe": model.is_moe,
        "weight_dtype": model.weight_dtype, "expert_weight_dtype": model.expert_weight_dtype,
        "weight_bytes": model.weight_bytes().total, "max_context": model.max_context,
        "extra_layers_not_counted": model.extra_layers_not_counted,
        "assumptions": list(model.assumptions), "unrecognized_fields": list(model.unrecognized_fields),
        "ignored_fields": list(model.ignored_fields),
        "source": model.source,
        "layers": model.layer_breakdown(), "mtp_layers": model.mtp_layers, "mtp_params": p.mtp,
        "encoder_params": model.encoder_params, "ffn_weight_dtype": model.ffn_weight_dtype or None,
        "state_bytes_per_sequence": model.state_bytes_per_sequence(),
        "kv_bytes_per_sequence_at_max_context": (float(model.kv_bytes(model.max_context, kv_dtype))
                                                 if model.max_context else None),
    }
    if model.local_attention is not None:
        la = model.local_attention
        out["windowed_attention"] = {"kind": la.kind, "n_heads": la.n_heads, "n_kv_heads": la.n_kv_heads,
                                     "head_dim": la.head_dim, "v_head_dim": la.v_head_dim}
    if model.linear is not None:
        lin = model.linear
        out["linear_mixer"] = {"kind": lin.kind, "n_heads": lin.n_heads, "n_key_heads": lin.n_key_heads,
                               "key_dim": lin.key_dim, "value_dim": lin.value_dim, "conv_kernel": lin.conv_kernel,
                               "state_dtype": lin.state_dtype, "state_bytes_per_layer": lin.state_bytes(),
                               "layers": model.n_linear_layers}
    if model.is_moe:
        m = model.moe
        out["moe"] = {"routed_experts": m.n_routed, "experts_per_token": m.top_k, "shared_experts": m.n_shared,
                      "expert_ffn_dim": m.expert_ffn_dim, "shared_ffn_dim": m.shared_ffn_dim or m.expert_ffn_dim,
                      "latent_dim": m.latent_dim, "moe_layers": model.n_moe_layers,
                      "dense_layers": model.n_dense_layers}
    return out


def attention_line(d: dict) -> str:
    """The ``attention`` row of ``llmecon model``'s table from :func:`model_dict`'s output: the global
    attention's heads and head dim, or, for a stack without softmax-attention layers (a pure Mamba or other
    recurrent model, whose spec carries a placeholder attention no layer runs), that there is none."""
    n_attention = sum(v for k, v in d["layers"].items() if k.startswith("attention_"))
    if n_attention == 0:
        mixers = [k for k, v in d["layers"].items() if v and not k.startswith("ffn_")]
        return "none (no attention layers: " + ", ".join(mixers) + ")"
    return (f"{d['attention']}: {d['n_heads']} heads, {d['n_kv_heads']} KV heads, head dim {d['head_dim']}"
            f" ({n_attention} of {d['n_layers']} layers)")


def step_dict(result: StepResult, dep: Deployment) -> dict:
    """``llmecon step --json``: one step's time breakdown. Bytes and FLOPs summed over all chips, and
    the weights the critical chip (the busiest expert group's) reads."""
    return {
        "model": dep.model.name, "system": dep.system.name, "phase": result.phase, "mode": result.mode,
        "profile": result.profile, "fidelity": dep.fidelity, **dep.fidelity_fields, "plan": dep.plan.as_dict(),
        **json_fields(result, "batch", "context"),
        **json_fields(result.time, "compute_s", "memory_s", "comm_s", "overhead_s"),
        **json_fields(result, "step_s", "upper_s", "latency_s"), "bound": str(result.bound),
        **json_fields(result, "tokens_per_s", "tokens", "flops", "weight_bytes", "weight_bytes_per_chip",
                      "expert_load_factor", "kv_bytes", "memory_per_chip_bytes"),
        "hbm_per_chip_bytes": result.hbm_per_chip_bytes, "fits": bool(np.all(result.fits)),
        "compute_dtype": result.compute_dtype,
        "weight_dtype": dep.weight_dtype or dep.model.weight_dtype, "kv_dtype": dep.kv_dtype or dep.model.kv_dtype,
        "ignored_fields": list(dep.model.ignored_fields),
    }


def curve_rows(curve: BatchCurve) -> list[dict]:
    step = curve.step
    bound = np.broadcast_to(np.asarray(step.bound), curve.batch.shape)
    return [{"batch": json_num(b), "step_s": json_num(t), "compute_s": json_num(c), "memory_s": json_num(m),
             "comm_s": json_num(k), "bound": str(bd), "tokens_per_s": json_num(tp), "chip_s_per_token": json_num(cs)}
            for b, t, c, m, k, bd, tp, cs in zip(
                curve.batch, curve.step_s, np.broadcast_to(step.time.compute_s, curve.batch.shape),
                np.broadcast_to(step.time.memory_s, curve.batch.shape),
                np.broadcast_to(step.time.comm_s, curve.batch.shape), bound, curve.tokens_per_s,
                curve.chip_s_per_token)]


def economics_dict(e: BatchEconomics, dep: Deployment, *, with_curve: bool = True) -> dict:
    """``llmecon batch --json``. Infinite values (never compute-bound, unbounded context) are null."""
    out = {
        "model": dep.model.name, "system": dep.system.name, "plan": dep.plan.as_dict(), "mode": dep.mode,
        "fidelity": dep.fidelity, **dep.fidelity_fields, "context": e.context,
        **json_fields(e, "balance_batch", "balance_batch_at_context", "crossover_context", "latency_floor_s",
                      "full_weight_read_s", "hbm_drain_s", "no_batching_cost_ratio", "best_batch"),
        "max_batch": e.max_batch,
        **json_fields(e, "max_context_at_batch_1", "kv_capacity_tokens"),
        "model_max_context": e.model_max_context or None,
        **json_fields(e, "weights_per_chip_bytes", "kv_bytes_per_token"),
    }
    if e.speculative is not None:
        out["speculation"] = {**dep.speculation.as_dict(), "breakeven_batch": json_num(e.spec_breakeven_batch)}
    else:
        out["speculation"] = None
    if with_curve:
        out["curve"] = curve_rows(e.curve)
        if e.speculative is not None:  # per batch: TPOT, output tokens/s and chip-s per token with speculation
            s = e.speculative
            tpot = np.broadcast_to(np.asarray(s.tpot_s, dtype=float), e.curve.batch.shape)
            tps = np.broadcast_to(np.asarray(s.tokens_per_s, dtype=float), e.curve.batch.shape)
            for row, t, r in zip(out["curve"], tpot, tps):
                row.update(spec_tpot_s=json_num(t), spec_tokens_per_s=json_num(r),
                           spec_chip_s_per_token=json_num(e.curve.chips / r))
    return out


def bound_spans(curve: BatchCurve) -> list[tuple[str, float, float]]:
    """(bound, first batch, last batch) for each run of batches on ``curve`` with the same bound."""
    bound = np.broadcast_to(np.asarray(curve.step.bound), curve.batch.shape)
    spans, start = [], 0
    for i in range(1, len(bound) + 1):
        if i == len(bound) or bound[i] != bound[start]:
            spans.append((str(bound[start]), float(curve.batch[start]), float(curve.batch[i - 1])))
            start = i
    return spans


def accelerator_row(a: Accelerator) -> dict:
    return {"name": a.name, "vendor": a.vendor, "peak_flops_per_s": dict(a.peak_flops_per_s),
            "unpublished_peaks": dict(a.unpublished_peaks), "power_w": a.power_w,
            "hbm_bytes": a.hbm_bytes, "hbm_basis": a.hbm_basis, "hbm_nominal_bytes": a.hbm_datasheet_bytes,
            "hbm_source": a.hbm_source, "hbm_bandwidth_bytes_per_s": a.hbm_bandwidth_bytes_per_s,
            "flops_per_byte_bf16": a.flops_per_byte("bf16") if "bf16" in a.peak_flops_per_s else None,
            "hbm_drain_s": a.hbm_drain_s, "status": a.status, "source": a.source, "as_of": a.as_of}


def system_row(s: System) -> dict:
    def link(lk):
        return None if lk is None else {"name": lk.name, "bandwidth_bytes_per_s": lk.bandwidth_bytes_per_s,
                                        "latency_s": lk.latency_s, "topology": lk.topology,
                                        "torus_dims": list(lk.torus_dims) or None}
    return {"name": s.name, "accelerator": s.accelerator.name, "chips": s.chips, "hbm_bytes": s.hbm_bytes,
            "hbm_bandwidth_bytes_per_s": s.hbm_bandwidth_bytes_per_s, "scale_up": link(s.scale_up),
            "scale_out": link(s.scale_out), "description": s.description, "source": s.source, "as_of": s.as_of}


# ---- human formatting -------------------------------------------------------------------------

def headline_lines(dep: Deployment, e: BatchEconomics, batch_result: StepResult, batch: float) -> list[tuple[str, str]]:
    """(label, value) pairs for ``analyze``."""
    m, s = dep.model, dep.system
    a = s.accelerator
    p = m.params
    step_s = float(batch_result.step_s)
    return [
        ("model", f"{m.name}: {fmt_params(p.total)} total, {fmt_params(p.active)} active, {m.attention_label}, "
                  f"{m.n_layers} layers"),
        ("system", f"{s.name}: {s.chips} x {a.name} ({fmt_bytes(a.hbm_bytes)}, {fmt_rate(a.hbm_bandwidth_bytes_per_s)} "
                   f"HBM each)"),
        ("plan", f"{dep.plan.label()} = {dep.plan.chips} chips per replica, " + (
            f"{s.chips // dep.plan.chips} replica(s) per domain" if dep.plan.chips <= s.chips else
            f"spanning {place(dep.plan, s).domains} scale-up domains")),
        ("formats", f"weights {dep.weight_dtype or m.weight_dtype}"
                    + (f" (experts {m.expert_weight_dtype})" if not dep.weight_dtype and m.expert_weight_dtype
                       != m.weight_dtype else "")
                    + f", KV {dep.kv_dtype or m.kv_dtype}, mode {dep.fidelity}"),
        ("weights per chip", f"{fmt_bytes(e.weights_per_chip_bytes)} of {fmt_bytes(a.hbm_bytes)}"),
        ("KV per token", f"{fmt_bytes(e.kv_bytes_per_token)} (all layers)"),
        ("latency floor", f"{fmt_seconds(e.latency_floor_s)} per decode step at batch 1 "
                          f"(all weights: {fmt_seconds(e.full_weight_read_s)}; "
                          f"HBM drain {fmt_seconds(e.hbm_drain_s)})"),
        ("balance batch", f"{e.balance_batch:,.0f} at short context; "
                          + (f"{e.balance_batch_at_context:,.0f} at {fmt_tokens(e.context)} tokens"
                             if math.isfinite(e.balance_batch_at_context)
                             else f"never compute-bound at {fmt_tokens(e.context)} tokens (> crossover)")),
        ("crossover context", (f"{fmt_tokens(e.crossover_context)} tokens" if math.isfinite(e.crossover_context)
                               else "never") + " (KV reads = matmul + attention compute per sequence, per chip)"),
        ("memory limits", f"max batch {e.max_batch:,} at {fmt_tokens(e.context)} tokens; "
                          f"max context {fmt_tokens(e.max_context_at_batch_1)} tokens at batch 1 "
                          + (f"(the model's context; memory holds {fmt_tokens(e.kv_capacity_tokens)} KV tokens)"
                             if m.max_context and e.kv_capacity_tokens > m.max_context else
                             "(memory)" if m.max_context else "(memory; the model's trained context is unknown)")),
        (f"decode at batch {batch:g}", f"{fmt_seconds(step_s)} per step "
                                       f"({batch_result.bound}-bound), {float(batch_result.tokens_per_s):,.0f} tok/s "
                                       f"per replica, {step_s and 1 / step_s:.1f} tok/s per user"),
        ("cost of no batching", f"{e.no_batching_cost_ratio:,.0f}x the device time per token of the best batch "
                                f"({e.best_batch:,.0f})"),
        *_speculation_line(dep, e),
    ]


def _speculation_line(dep: Deployment, e: BatchEconomics) -> list[tuple[str, str]]:
    """The headline row of speculative decoding (none without it)."""
    if dep.speculation is None:
        return []
    sp = dep.speculation
    stop = (f"stops paying at batch {e.spec_breakeven_batch:,.0f}" if e.spec_breakeven_batch is not None
            else "pays at every batch scanned")
    return [("speculative decoding", f"k={sp.k} ({sp.draft}), acceptance {', '.join(f'{a:g}' for a in sp.acceptance)}"
                                     f": {sp.tokens_per_step:.3g} tokens per verify step; {stop}")]


def batch_curve_figure(curve: BatchCurve, dep: Deployment, *, economics: BatchEconomics | None = None):
    """Latency and cost per token against batch (log-log), bound regions marked, as a matplotlib
    ``Figure`` (no pyplot state: safe to build in a server or a loop). Needs matplotlib."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(11, 4.2))
    ax1, ax2 = fig.subplots(1, 2)
    b = curve.batch
    ax1.loglog(b, curve.step_s * 1e3, label="step (roofline, max)", color="C0", lw=2)
    ax1.loglog(b, np.broadcast_to(curve.step.time.compute_s, b.shape) * 1e3, "--", color="C1", label="compute")
    ax1.loglog(b, np.broadcast_to(curve.step.time.memory_s, b.shape) * 1e3, "--", color="C2", label="memory")
    comm = np.broadcast_to(curve.step.time.comm_s, b.shape)
    if np.any(comm > 0):
        ax1.loglog(b, comm * 1e3, ":", color="C3", label="communication")
    ax1.set_xlabel("batch (sequences)")
    ax1.set_ylabel("decode step (ms)")
    ax1.set_title(f"Latency vs batch at {fmt_tokens(curve.context)} tokens")
    ax2.loglog(b, curve.chip_s_per_token * 1e6 / 3600, color="C4", lw=2)
    ax2.set_xlabel("batch (sequences)")
    ax2.set_ylabel("chip-hours per million tokens")
    ax2.set_title("Cost per token vs batch")
    if economics is not None and math.isfinite(economics.balance_batch):
        for ax in (ax1, ax2):
            ax.axvline(economics.balance_batch, color="grey", lw=0.8, ls="-.", label="balance batch B*")
    ax1.legend(fontsize=8)
    fig.suptitle(f"{dep.model.name} on {dep.system.name} ({dep.plan.label()}, {dep.fidelity})", fontsize=10)
    fig.tight_layout()
    return fig


def plot_batch_curve(curve: BatchCurve, dep: Deployment, path: str | Path, *, economics: BatchEconomics | None = None):
    """Write :func:`batch_curve_figure` to ``path`` (PNG/SVG/PDF by its suffix). Needs matplotlib."""
    from .figure import write_figure

    write_figure(batch_curve_figure(curve, dep, economics=economics), path)


def analysis_dict(a: Analysis, *, page: bool = False, price_per_chip_hour: float | None = None, rate=None) -> dict:
    """The ``llmecon analyze --json`` object; ``page`` adds what the web page plots: the batch curve
    (with $/Mtok when priced, ``price_source`` and ``tco`` saying from what: ``rate``, an
    ``econ.tco.TcoRate``), the headline rows, the roofline and the model's assumptions."""
    dep, e = a.deployment, a.economics
    out = economics_dict(e, dep, with_curve=page)
    if page:
        from .tco import price_fields

        out["curve"] = _with_usd(out["curve"], price_per_chip_hour)
        out.update(price_fields(price_per_chip_hour, rate, dep.system.name))
    out["decode_at_batch"] = step_dict(a.step, dep)
    if page:
        from .roofline import roofline_dict

        out["headline"] = [{"label": k, "value": v} for k, v in headline_lines(dep, e, a.step, a.batch)]
        out["roofline"] = roofline_dict(e.curve, dep, at=a.step)
    out["model_facts"] = {"total_params": dep.model.params.total, "active_params": dep.model.params.active,
                          "attention": dep.model.attention_label, "is_moe": dep.model.is_moe,
                          "ignored_fields": list(dep.model.ignored_fields)}
    if page:
        out["assumptions"] = list(dep.model.assumptions)
    return out


def floor_dict(floor: StepResult | None, at: StepResult) -> dict | None:
    """The ideal floor beside a calibrated step (``analyze --json`` ``ideal_floor``): the same plan and batch on
    the roofline; None when the step is ideal already."""
    if floor is None:
        return None
    step_s = float(floor.step_s)
    return {"mode": "ideal", "decode_step_s": step_s, "bound": str(floor.bound),
            "tokens_per_s": float(floor.tokens_per_s), "calibrated_over_ideal": float(at.step_s) / step_s}


def floor_line(floor: StepResult | None, at: StepResult, batch: float) -> list[tuple[str, str]]:
    """The table row of ``floor_dict`` (none when ideal)."""
    if floor is None:
        return []
    step_s = float(floor.step_s)
    return [("ideal floor", f"{fmt_seconds(step_s)} per step at batch {batch:g} ({floor.bound}-bound), "
                            f"{float(floor.tokens_per_s):,.0f} tok/s per replica: the roofline lower bound "
                            f"(calibrated is {float(at.step_s) / step_s:.2f}x it)")]


def analysis_title(a: Analysis) -> str:
    """The title of the analyze table: which fidelity priced it."""
    dep = a.deployment
    what = ("ideal roofline: a lower bound on time" if dep.mode == "ideal" else
            f"{dep.fidelity}: achieved efficiencies and overheads")
    return f"llmecon analyze ({what})"


def _with_usd(rows: list[dict], price_per_chip_hour: float | None) -> list[dict]:
    """Batch-curve rows with $/Mtok when a chip-hour price is given (``context.usd_per_mtok``)."""
    if price_per_chip_hour is None:
        return rows
    from ..econ.context import usd_per_mtok

    cost = usd_per_mtok(np.array([r["chip_s_per_token"] for r in rows], dtype=float),
                        price_per_chip_hour=price_per_chip_hour)
    return [{**r, "usd_per_mtok": float(c)} for r, c in zip(rows, cost)]
