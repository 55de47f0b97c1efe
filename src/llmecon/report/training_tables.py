"""Text views of ``train``, ``overtrain`` and ``catalog training-runs``: the typed result in, the rich
renderables out, in print order; the CLI prints them. The JSON views are in report/training.py."""

from __future__ import annotations

from .tables import kv_table


def train_view(r, plot: str | None) -> list:
    """``llmecon train``: the job, its step and where the time goes, memory, days and dollars."""
    from .training import published_line
    from .tco import mw_text, tco_line
    from ..units import fmt_bytes, fmt_seconds

    view: list = []
    d, st, m, s, plan, gp, rate, power = r.view, r.step, r.model, r.system, r.plan, r.goodput, r.rate, r.power
    prof, eff, run, tokens = r.profile, r.efficiency, r.run, r.options["tokens"]
    efficiency, mode, global_batch_tokens = r.options["efficiency"], r.options["mode"], r.options["global_batch_tokens"]
    parts = ", ".join(f"{k} {fmt_seconds(v)}" for k, v in d["time_breakdown_s"].items() if v > 0)
    mem = ", ".join(f"{k} {fmt_bytes(v)}" for k, v in d["memory_breakdown_bytes"].items())
    rows = [("job", f"{m.name} on {st.gpus} GPUs of {s.name}, {plan.label()}"),
            ("batch", f"{global_batch_tokens:,.0f} tokens/step = {st.microbatches} micro-batches × dp {plan.dp}"),
            ("step", f"{fmt_seconds(st.step_s)} ({parts})"),
            ("MFU / HFU", f"{st.mfu:.1%} / {st.hfu:.1%} " + (
                f"at kernel efficiencies of {st.kernels.source}: GEMM {st.kernels.layer_gemm:.2f}, attention "
                f"{st.kernels.attention:.2f}" if prof is not None else f"at efficiency {eff:g}"
                + (" (Megatron-LM A100 fit)" if efficiency is None and mode is None else ""))),
            ("TFLOP/s per GPU", f"{st.tflops_per_gpu:,.0f} model, {st.hardware_tflops_per_gpu:,.0f} hardware"),
            *([("sustained share", f"{st.kernels.sustained_share:g} of the profile's GEMM/attention rates "
                                   f"({st.kernels.sustained_source}; --kernel-share overrides)")]
              if prof is not None else []),
            ("bubble", f"{st.bubble_fraction:.1%} of the step"),
            ("tokens/s", f"{st.tokens_per_s:,.0f}; {mw_text(d['tokens_per_s_per_mw'], power)}"),
            ("memory per GPU", f"{fmt_bytes(st.memory.total)} of {fmt_bytes(st.memory.hbm)} on pipeline rank "
                               f"{st.memory.rank}, the fullest ({mem})"),
            ("memory per rank", "  ".join(f"{r.rank}: {r.total / 1e9:.1f}" for r in st.memory.ranks)
             + " GB (weights, gradients, optimizer, activations per rank: --json memory_per_rank_bytes)"),
            ("collectives on", ", ".join(f"{k} {v}" for k, v in st.tiers.items() if v != "none") or "-")]
    if tokens is not None:
        rows.append(("to train", f"{d['train_days']:,.1f} days, {d['gpu_hours']:,.0f} GPU-hours"
                                 + (f", ${d['usd']:,.0f}" if "usd" in d else "")
                                 + (f" at goodput {gp.goodput:.1%} (job MTBF {gp.job_mtbf_s / 3600:.2f} h, checkpoint "
                                    f"every {gp.checkpoint_interval_s / 60:.0f} min)" if gp is not None else "")))
    if rate is not None:
        rows.append(("TCO", tco_line(rate)))
    if run is not None:
        rows.append(("published", published_line(d["published"])))
        if not st.memory.fits:  # a published run did run: shown, with what this memory model says
            rows.append(("fits", f"NO by this memory model: {fmt_bytes(st.memory.total)} on pipeline rank "
                                 f"{st.memory.rank} of {fmt_bytes(st.memory.hbm)}; the published run did run, so "
                                 "the gap is what the model does not capture (docs/training.md)"))
    view.append(kv_table("llmecon train", rows))
    for note in d["assumptions"]:
        view.append(f"[dim]assumption: {note}[/dim]")
    return [*view, *((f"figure written to {plot}",) if plot else ())]


def training_runs_view(rows: list[dict]) -> list:
    """``llmecon catalog training-runs``: one row per published run."""
    from rich.table import Table

    table = Table("name", "run", "published", "source")
    for r in rows:
        unit = "TFLOP/s/GPU" if r["metric"] == "tflops_per_gpu" else "GPU-hours"
        table.add_row(r["name"], r["description"], f"{r['published']:,.0f} {unit}",
                      f"{r['source']} ({r['status']})")
    return [table]


def overtrain_view(r, req, plot: str | None) -> list:
    """``llmecon overtrain``: the three-way split of lifetime compute and the optimum at the same loss."""
    from ..units import fmt_count

    d = r.view
    d_inf, d_pre, d_rl, chin, thirds = r.inference_tokens, r.pretrain_tokens, r.rl_tokens, r.chinchilla_tokens, r.thirds
    inference_tokens_per_s, deployment_days = req.inference_tokens_per_s, req.deployment_days
    tokens_per_param, rl_tokens = req.tokens_per_param, req.rl_tokens
    o = d["optimum_at_same_loss"]
    sh = o["shares"]
    rows = [("inference tokens", f"{fmt_count(d_inf)} ({fmt_count(inference_tokens_per_s)} tok/s × "
                                 f"{deployment_days:g} days)"),
            ("pretraining tokens", f"{fmt_count(d_pre)}: costs as much as inference (D_inf / (3·η_inf))"),
            ("Chinchilla tokens", f"{fmt_count(chin)} ({tokens_per_param:g} per parameter)"),
            ("over-training", f"{d['overtrain_factor']:,.1f}× Chinchilla"),
            ("RL tokens", f"{fmt_count(d_rl)}" + (" (equal split)" if rl_tokens is None else "")),
            ("loss reached", f"{float(thirds.loss):.4f} (Chinchilla law; RL and inference do not change it)"),
            ("optimum, same loss", f"N = {fmt_count(o['params'])}, D = {fmt_count(o['pretrain_tokens'])} "
                                   f"({o['overtrain_factor']:,.0f}× Chinchilla), split {sh['pretrain']:.0%} / "
                                   f"{sh['rl']:.0%} / {sh['inference']:.0%}, saves {o['saving_vs_equal_split']:.1%}")]
    view: list = [kv_table("llmecon overtrain", rows)]
    view.append("[dim]costs are training-FLOP equivalents (RL and inference FLOPs / their efficiency); an equal "
                "split is optimal only for equal exponents (SPEC F22)[/dim]")
    if plot:
        view.append(f"figure written to {plot}")
    return view
