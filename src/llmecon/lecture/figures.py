"""Figures of the lecture report, as matplotlib ``Figure`` objects (no pyplot state, no files).

Each figure is drawn from the same library calls as the claims: batch economics and context
economics of catalogue deployments, pipeline memory per chip, the lifetime-compute curve of
SPEC F22 and activation memory against depth (SPEC F24). ``LectureFigure`` carries the SPEC
section it illustrates and a caption; ``html_report.figure_svg`` turns it into inline SVG.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..spec.deployment import Deployment
from ..econ.batching import batch_economics, smallest_plan
from ..catalog.hardware import get_system
from ..catalog.models import get_model
from ..econ.context import context_economics
from ..spec.plan import Plan
from . import inputs as I
from .section_df import activation_memory, lifetime_split, pipeline_memory

GB = 1e-9
CHIP_HOURS_PER_MTOK = 1e6 / 3600.0  # chip-seconds per token -> chip-hours per million tokens


@dataclass(frozen=True)
class LectureFigure:
    """A figure for one SPEC section: ``key`` (stable name), ``section`` ("A".."F"), caption."""

    key: str
    section: str
    caption: str
    figure: object  # matplotlib.figure.Figure


def _figure(width: float = 11.0, height: float = 4.2, panels: int = 2):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height))
    axes = fig.subplots(1, panels)
    return fig, (axes if panels > 1 else [axes])


def deployments() -> list[tuple[str, Deployment]]:
    """The two deployments the batch and context figures compare: an MoE (DeepSeek-V3, fp8, on
    GB200 NVL72 with the smallest plan that leaves half of HBM for KV) and a dense model
    (Llama-3.1-70B, bf16, tensor-parallel over one HGX H100)."""
    ds, nvl = get_model("deepseek-v3"), get_system("gb200-nvl72")
    return [("DeepSeek-V3 fp8, GB200 NVL72", Deployment(model=ds, system=nvl, plan=smallest_plan(ds, nvl))),
            ("Llama-3.1-70B bf16, HGX H100", Deployment(model=get_model("llama-3.1-70b"), system=get_system("hgx-h100"),
                                                        plan=Plan(tp=8)))]


def batch_figure(context: float = 4096.0) -> LectureFigure:
    """SPEC A2-A3: decode latency and device time per token against batch, with KV ignored (the
    lecture's balance-batch argument; B* marked) and at ``context`` tokens (dotted)."""
    fig, (ax1, ax2) = _figure()
    for i, (label, dep) in enumerate(deployments()):
        for length, style in ((0.0, "-"), (context, ":")):
            e = batch_economics(dep, context=length)
            c = e.curve
            cost = c.chip_s_per_token * CHIP_HOURS_PER_MTOK
            name = f"{label} ({dep.plan.label()})" if length == 0 else f"same at {context:,.0f} tokens"
            ax1.loglog(c.batch, c.step_s * 1e3, style, color=f"C{i}", lw=2, label=name)
            ax2.loglog(c.batch, cost, style, color=f"C{i}", lw=2)
            if length == 0:
                b = e.balance_batch
                ax1.plot([b], [np.interp(b, c.batch, c.step_s * 1e3)], "o", color=f"C{i}")
                ax2.plot([b], [np.interp(b, c.batch, cost)], "o", color=f"C{i}")
    ax1.set_xlabel("batch (sequences)")
    ax1.set_ylabel("decode step (ms)")
    ax1.set_title("Latency vs batch (solid: KV ignored, dot: B*)")
    ax1.legend(fontsize=7)
    ax2.set_xlabel("batch (sequences)")
    ax2.set_ylabel("chip-hours per million output tokens")
    ax2.set_title("Cost per token vs batch")
    fig.tight_layout()
    return LectureFigure(key="batch", section="A", figure=fig,
                         caption="Latency is flat (the weights are read every step) until compute takes over at the "
                                 "balance batch B*; cost per token falls as weight reads amortise and flattens at the "
                                 "compute floor. With KV (dotted) the step grows with batch sooner and the memory "
                                 "limit ends the curve (SPEC A2-A3; ideal roofline, a lower bound).")


def context_figure() -> LectureFigure:
    """SPEC B8: cost per output token against context, crossover L_x marked; the memory wall."""
    fig, (ax1, ax2) = _figure()
    for i, (label, dep) in enumerate(deployments()):
        e = context_economics(dep)
        c = e.curve
        ok = c.fits
        ax1.loglog(c.context[ok], c.decode_chip_s_per_token[ok] * CHIP_HOURS_PER_MTOK, color=f"C{i}", lw=2, label=label)
        if math.isfinite(e.crossover_context):
            ax1.axvline(e.crossover_context, color=f"C{i}", ls="-.", lw=1,
                        label=f"L_x = {e.crossover_context:,.0f} tokens")
        ax2.loglog(c.context, np.maximum(c.max_sequences, 0.5), color=f"C{i}", lw=2, label=label)
    ax1.set_xlabel("context (tokens)")
    ax1.set_ylabel("chip-hours per million output tokens")
    ax1.set_title("Cost per output token vs context (largest batch that fits)")
    ax1.legend(fontsize=8)
    ax2.set_xlabel("context (tokens)")
    ax2.set_ylabel("sequences that fit beside the weights")
    ax2.set_title("Memory wall (n·C − W)/(L·kv)")
    fig.tight_layout()
    return LectureFigure(key="context", section="B", figure=fig,
                         caption="Above the crossover context L_x (KV reads = matmul + attention time, per chip) "
                                 "cost per output token grows ∝ L/L_x; MLA's small KV and its attention FLOPs push "
                                 "L_x out (SPEC B8, issue 18). Curves stop at the model's context.")


def pipeline_figure(stages=(1, 2, 4, 8, 16)) -> LectureFigure:
    """SPEC D18: weights per chip fall as 1/P, KV per chip stays put (P micro-batches in flight)."""
    ds = get_model("deepseek-v3")
    w, kv = pipeline_memory(ds, stages)
    fig, (ax,) = _figure(7.0, 4.2, 1)
    ax.plot(stages, np.asarray(w) * GB, "o-", lw=2, label="weights per chip")
    ax.plot(stages, np.asarray(kv) * GB, "s-", lw=2, label="KV per chip")
    ax.axhline(get_system("gb200-nvl72").accelerator.hbm_bytes * GB, color="grey", ls="--", lw=1,
               label="GB200 HBM per chip")
    ax.set_xscale("log", base=2)
    ax.set_xticks(list(stages), [str(p) for p in stages])
    ax.set_xlabel("pipeline stages P")
    ax.set_ylabel("GB per chip")
    ax.set_title(f"DeepSeek-V3 fp8, EP {I.PP_EXPERT_PARALLEL}, P × {I.PP_MICRO_BATCH:,} sequences at "
                 f"{I.PP_CONTEXT:,} tokens")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return LectureFigure(key="pipeline", section="D", figure=fig,
                         caption="Pipelining for inference divides the weights per chip by P but not the KV: P "
                                 "micro-batches are in flight, each chip holds its 1/P of the layers for all of them "
                                 "(SPEC D18; 61 layers split unevenly, hence the small rise).")


def overtrain_figure() -> LectureFigure:
    """SPEC F22: lifetime compute at a fixed loss against pretraining tokens per parameter."""
    _, _, _, thirds, best, curve = lifetime_split()
    n = np.asarray(curve.params, dtype=float)
    d = np.asarray(curve.pretrain_tokens, dtype=float)
    ok = np.isfinite(np.asarray(curve.total_flops, dtype=float)) & np.isfinite(d)
    x = d[ok] / n[ok] / 20.0  # tokens per parameter over Chinchilla's ~20 (SPEC F21)
    fig, (ax,) = _figure(7.5, 4.4, 1)
    for label, y, style in (("lifetime total", curve.total_flops, "k-"), ("pretraining", curve.pretrain_flops, "C0-"),
                            ("RL", curve.rl_flops, "C1--"), ("inference", curve.inference_flops, "C2:")):
        ax.loglog(x, np.asarray(y, dtype=float)[ok], style, lw=2 if label == "lifetime total" else 1.5, label=label)
    for label, c, mark in (("equal split (thirds)", thirds, "s"), ("optimum at the same loss", best, "o")):
        ax.plot([float(c.pretrain_tokens) / float(c.params) / 20.0], [float(c.total_flops)], mark, color="C3",
                label=label)
    top = float(np.min(np.asarray(curve.total_flops, dtype=float)[ok]))
    ax.set_ylim(top / 30, top * 10)
    ax.set_xlim(1.0, 1e4)
    ax.set_xlabel("over-training D/(20·N): pretraining tokens per parameter over Chinchilla's")
    ax.set_ylabel("training-FLOP equivalents")
    ax.set_title(f"Lifetime compute at loss {float(thirds.loss):.3f} (Chinchilla law)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return LectureFigure(key="overtrain", section="F", figure=fig,
                         caption="Along one loss, a smaller model trained longer costs more to pretrain and less to "
                                 "serve; equal thirds (square) sit near, not at, the cheapest point (circle) "
                                 "(SPEC F22; 50M tokens/s for 60 days, η = 1/3).")


def revnet_figure() -> LectureFigure:
    """SPEC F24: activation memory against depth for store-all, checkpointing and reversible layers."""
    depths = I.REVNET_DEPTHS
    mem = activation_memory(depths)
    fig, (ax,) = _figure(7.0, 4.2, 1)
    for i, (label, values) in enumerate(mem.items()):
        ax.plot(depths, np.asarray(values) * GB, "o-", color=f"C{i}", lw=2, label=label)
    ax.set_xscale("log", base=2)
    ax.set_xticks(list(depths), [str(d) for d in depths])
    ax.set_xlabel("layers")
    ax.set_ylabel("activation memory per GPU (GB)")
    ax.set_title(f"{I.REVNET_MODEL} layers, one sequence of {I.REVNET_SEQ_LEN:,} tokens")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return LectureFigure(key="revnet", section="F", figure=fig,
                         caption="Stored activations grow O(L); checkpointing keeps one input per layer; reversible "
                                 "blocks keep only the last output (plus the logits), O(1) in depth, for ~1/3 more "
                                 "compute (SPEC F24; formulas of llmecon.econ.training_step).")


FIGURES = {"batch": batch_figure, "context": context_figure, "pipeline": pipeline_figure,
           "overtrain": overtrain_figure, "revnet": revnet_figure}


def figures() -> list[LectureFigure]:
    """Every figure of the report, in section order (one per entry of ``FIGURES``)."""
    return [make() for make in FIGURES.values()]
