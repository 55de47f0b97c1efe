"""Fit the sustained share of a profile's kernel rates (``econ.training_kernels.SUSTAINED_SHARES``) on the three
Llama 3 405B runs of its paper's Table 4, and print the out-of-sample errors: each Llama run with the share fitted
on the other two, and DeepSeek-V3's GPU-hours (another model, MoE, FP8, DualPipe, H800) with the share fitted on
all three Llama runs. Prints markdown; nothing is written.

    PYTHONPATH=src python benchmarks/fit_training_share.py [PROFILE ...]   (default: the H100 kernel-table ones)
"""

from __future__ import annotations

import math
import sys

from scipy.optimize import minimize_scalar

from llmecon.catalog.efficiency import named_profile
from llmecon.catalog.hardware import get_system
from llmecon.catalog.models import get_model
from llmecon.econ.training_step import TrainPlan, train_step
from training_published import DSV3_EP, DSV3_MEMORY

# Llama 3 (arXiv:2407.21783) Table 4, recalled: GPUs, TP, CP, PP, DP, sequence, sequences per DP group, TFLOP/s
LLAMA3 = (("8K GPUs", (8192, 8, 1, 16, 64, 8192, 32), 430), ("16K GPUs", (16384, 8, 1, 16, 128, 8192, 16), 400),
          ("16K GPUs, CP16, 131K", (16384, 8, 16, 16, 8, 131072, 16), 380))
DSV3_GPU_HOURS = 2.664e6  # DeepSeek-V3 report Table 1: pretraining, 14.8T tokens, 2,048 H800


def llama_tflops(profile, row, share: float) -> float:
    gpus, tp, cp, pp, dp, seq, per_dp = row
    plan = TrainPlan(tp=tp, cp=cp, pp=pp, dp=dp, recompute="none", zero=2, pp_trim=1, schedule="interleaved",
                     chunks=8)
    return train_step(get_model("llama-3.1-405b"), get_system("hgx-h100"), plan, seq_len=seq,
                      global_batch_tokens=dp * per_dp * seq, profile=profile, kernel_share=share).tflops_per_gpu


def dsv3_gpu_hours(profile, share: float, trim: int) -> float:
    plan = TrainPlan(tp=1, pp=16, dp=128, ep=64, schedule="dualpipe", recompute="none", zero=1, pp_trim=trim,
                     **DSV3_MEMORY, **DSV3_EP)
    st = train_step(get_model("deepseek-v3"), get_system("hgx-h800"), plan, seq_len=4096,
                    global_batch_tokens=15360 * 4096, precision="fp8_block", profile=profile, kernel_share=share)
    return st.train_s(14.8e12) * 2048 / 3600


def fit_share(profile, runs) -> float:
    """The share minimising the sum of squared log errors of the runs' TFLOP/s per GPU."""
    def loss(share: float) -> float:
        return sum(math.log(llama_tflops(profile, row, share) / pub) ** 2 for _, row, pub in runs)
    return float(minimize_scalar(loss, bounds=(0.3, 1.0), method="bounded", options={"xatol": 1e-5}).x)


def report(name: str) -> str:
    prof = named_profile(name)
    share = fit_share(prof, LLAMA3)
    out = [f"### {name}: share {share:.4f} fitted on the three Llama 3 runs", "",
           "| run | published | as measured (1) | err | leave-one-out share | err (out of sample) |",
           "|---|---:|---:|---:|---:|---:|"]
    for i, (label, row, pub) in enumerate(LLAMA3):
        held = fit_share(prof, LLAMA3[:i] + LLAMA3[i + 1:])
        raw, oos = llama_tflops(prof, row, 1.0), llama_tflops(prof, row, held)
        out.append(f"| Llama 3 405B, {label} (TFLOP/s/GPU) | {pub} | {raw:.0f} | {raw / pub - 1:+.1%} | "
                   f"{held:.4f} | {oos / pub - 1:+.1%} |")
    for trim, split in ((1, "one layer fewer on the end stages (fits 80 GB)"), (0, "even split (does not fit)")):
        raw, oos = dsv3_gpu_hours(prof, 1.0, trim), dsv3_gpu_hours(prof, share, trim)
        out.append(f"| DeepSeek-V3, {split} (M GPU-hours) | {DSV3_GPU_HOURS / 1e6:.3f} | {raw / 1e6:.3f} | "
                   f"{raw / DSV3_GPU_HOURS - 1:+.1%} | {share:.4f} (all Llama) | "
                   f"{oos / DSV3_GPU_HOURS - 1:+.1%} |")
    return "\n".join(out)


def main(names) -> None:
    for name in names or ("h100-sxm/trtllm", "h100-sxm/vllm", "h100-sxm/sglang"):
        print(report(name))
        print()


if __name__ == "__main__":
    main(sys.argv[1:])
