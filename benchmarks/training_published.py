"""Published training runs against ``llmecon train`` (issue 24): Megatron-LM 2021 Table 1, Llama 3 405B
Table 4, DeepSeek-V3 pretraining GPU-hours, in ideal and calibrated mode. The calibrated kernel efficiencies
are the shipped serving profiles' (``default_training_profile``), as measured and at the profile's sustained
share (the default; fitted on the Llama 3 rows by benchmarks/fit_training_share.py, which prints its
out-of-sample errors). Prints a markdown table.

    PYTHONPATH=src python benchmarks/training_published.py
"""

from __future__ import annotations

from pathlib import Path

import yaml

from llmecon.catalog.efficiency import default_training_profile
from llmecon.catalog.hardware import get_system
from llmecon.catalog.hf_config import model_from_hf_config
from llmecon.catalog.models import get_model
from llmecon.econ.training_step import TrainPlan, megatron_flops_per_step, train_step

ROOT = Path(__file__).parents[1]
# DeepSeek-V3 report (arXiv:2412.19437) §3.2.3 and §3.3.3: what it does to save memory
DSV3_MEMORY = dict(grad_fp32=True, bf16_moments=True, ema="cpu", recompute_norms=True, recompute_mla_up=True,
                   fp8_activations=True, mtp=True)
# §2.1.2, §3.2.2, §3.3.3: node-limited routing (4 nodes), FP8 dispatch, 20 of 132 SMs for communication
DSV3_EP = dict(fp8_dispatch=True, ep_node_limit=4, comm_sm_share=20 / 132)


def gpt(hidden, layers, heads, vocab=51200):
    return model_from_hf_config({"architectures": ["GPT2LMHeadModel"], "n_embd": hidden, "n_layer": layers,
                                 "n_head": heads, "vocab_size": vocab, "n_positions": 2048}, name=f"gpt-{hidden}")


def main() -> None:
    rows = ["| run | published | ideal | err | calibrated, tables as measured | err | calibrated (default) | err "
            "| profile | fits (GB/GPU) |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---|---|"]
    a100 = get_system("hgx-a100")
    meg = yaml.safe_load((ROOT / "tests/published/training_megatron2021.yaml").read_text())["megatron_lm_2021"]
    for r in meg["rows"]:
        params_b, heads, hidden, layers, tp, pp, gpus, batch, measured = r[:9]
        plan = TrainPlan(tp=tp, pp=pp, dp=gpus // (tp * pp), recompute="full", zero=0, flash_attention=False,
                         dropout=True)
        f = megatron_flops_per_step(batch=batch, seq_len=2048, layers=layers, hidden=hidden, vocab=51200)
        prof = default_training_profile(a100.accelerator)
        out = [train_step(gpt(hidden, layers, heads), a100, plan, seq_len=2048, global_batch_tokens=batch * 2048,
                          **kw) for kw in (dict(efficiency=1.0), dict(profile=prof, kernel_share=1.0),
                                           dict(profile=prof))]
        vals = [f / s.step_s / gpus / 1e12 for s in out]
        rows.append(f"| Megatron {params_b}B, {gpus} A100 (TFLOP/s, eq. 3) | {measured} | "
                    + " | ".join(f"{v:.0f} | {v / measured - 1:+.1%}" for v in vals)
                    + f" | {prof.name} | {out[0].memory.fits} ({out[0].memory.total / 1e9:.1f}) |")
    h100 = get_system("hgx-h100")
    prof = default_training_profile(h100.accelerator)
    for gpus, tp, cp, pp, dp, seq, per_dp, pub in [(8192, 8, 1, 16, 64, 8192, 32, 430),
                                                   (16384, 8, 1, 16, 128, 8192, 16, 400),
                                                   (16384, 8, 16, 16, 8, 131072, 16, 380)]:
        for sched, v in (("interleaved", 8), ("1f1b", 1)):
            plan = TrainPlan(tp=tp, cp=cp, pp=pp, dp=dp, recompute="none", zero=2, pp_trim=1, schedule=sched,
                             chunks=v)
            kw = dict(seq_len=seq, global_batch_tokens=dp * per_dp * seq)
            out = [train_step(get_model("llama-3.1-405b"), h100, plan, **k, **kw)
                   for k in (dict(efficiency=1.0), dict(profile=prof, kernel_share=1.0), dict(profile=prof))]
            rows.append(f"| Llama 3 405B, {gpus} H100, TP{tp} CP{cp} PP{pp} DP{dp}, {seq} tok, {plan.schedule}"
                        f"{f' v={v}' if v > 1 else ''} (TFLOP/s) | {pub} | "
                        + " | ".join(f"{s.tflops_per_gpu:.0f} | {s.tflops_per_gpu / pub - 1:+.1%}" for s in out)
                        + f" | {prof.name} | {out[0].memory.fits} ({out[0].memory.total / 1e9:.1f}, "
                          f"rank {out[0].memory.rank}) |")
    h800 = get_system("hgx-h800")
    no_limit = dict(comm_sm_share=DSV3_EP["comm_sm_share"])  # bf16 dispatch, every routed copy sent
    for sched, trim, ep in (("dualpipe", 0, DSV3_EP), ("dualpipe", 1, DSV3_EP), ("dualpipe", 1, no_limit),
                            ("1f1b", 0, DSV3_EP)):
        plan = TrainPlan(tp=1, pp=16, dp=128, ep=64, schedule=sched, recompute="none", zero=1, pp_trim=trim,
                         **DSV3_MEMORY, **ep)
        kw = dict(seq_len=4096, global_batch_tokens=15360 * 4096, precision="fp8_block")
        out = [train_step(get_model("deepseek-v3"), h800, plan, **k, **kw)
               for k in (dict(efficiency=1.0), dict(profile=prof, kernel_share=1.0), dict(profile=prof))]
        hours = [s.train_s(14.8e12) * 2048 / 3600 / 1e6 for s in out]
        rows.append(f"| DeepSeek-V3, 2048 H800, PP16 EP64 DP128, fp8_block, {sched}{f' trim {trim}' if trim else ''}"
                    f"{'' if ep is DSV3_EP else ', bf16 dispatch without the node limit'} "
                    f"(M GPU-hours, 14.8T tok) | 2.664 | "
                    + " | ".join(f"{h:.3f} | {h / 2.664 - 1:+.1%}" for h in hours)
                    + f" | {prof.name} | {out[0].memory.fits} ({out[0].memory.total / 1e9:.1f}, "
                      f"rank {out[0].memory.rank}) |")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
