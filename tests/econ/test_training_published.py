"""Published training runs against ``train_step`` in ideal and calibrated mode: Megatron-LM 2021
(Narayanan et al. 2021, Table 1), Llama 3 405B (Dubey et al. 2024, Table 4) and DeepSeek-V3 pretraining
(DeepSeek-AI 2024). The issue's target is throughput within 10% and GPU-hours within 15%; these tests
pin where the model stands (benchmarks/results/training_published_2026-11-27.md) so a change that moves
it is seen. The calibrated efficiencies come from serving kernel tables; the one scalar fitted on training
runs (the sustained share, on the Llama 3 runs) is tested out of sample."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import yaml

from llmecon.catalog.efficiency import default_profile, named_profile
from llmecon.catalog.hardware import get_system
from llmecon.catalog.hf_config import model_from_hf_config
from llmecon.catalog.models import get_model
from llmecon.econ.training_goodput import LLAMA3_MTBF_GPU_HOURS, goodput
from llmecon.econ.training_step import TrainPlan, layer_activation_bytes, megatron_flops_per_step, train_step
from llmecon.errors import CatalogError, SpecError

MEGATRON = yaml.safe_load((Path(__file__).parents[1] / "published" / "training_megatron2021.yaml").read_text())[
    "megatron_lm_2021"]
H100, H800, A100 = get_system("hgx-h100"), get_system("hgx-h800"), get_system("hgx-a100")
H100_PROFILE = named_profile("h100-sxm/trtllm")  # TensorRT-LLM kernel tables (aiconfigurator), H100 SXM


def gpt(hidden: int, layers: int, heads: int, vocab: int = 51200):
    return model_from_hf_config({"architectures": ["GPT2LMHeadModel"], "n_embd": hidden, "n_layer": layers,
                                 "n_head": heads, "vocab_size": vocab, "n_positions": 2048}, name=f"gpt-{hidden}")


@pytest.mark.parametrize("row", MEGATRON["rows"], ids=lambda r: f"{r[0]}B")
def test_megatron_2021_calibrated(row):
    """A100 (the a100-80gb profile: vidur kernel fit; TP all-reduces at vidur's measured NCCL ring share of
    NVLink, 151.9 of 300 GB/s; DP reduced hierarchically, a 1/m shard per NIC), fp16, full recomputation,
    eager attention, dropout: calibrated within ±15% of every row and ±10% from 3.6B up (measured: −10.4% at
    1.7B, −7.8% at 3.6B, −5.5% to +4.0% above); ideal is 43-61% high."""
    params_b, heads, hidden, layers, tp, pp, gpus, batch, measured = row[:9]
    m = gpt(hidden, layers, heads)
    plan = TrainPlan(tp=tp, pp=pp, dp=gpus // (tp * pp), recompute="full", zero=0, flash_attention=False,
                     dropout=True)
    flops = megatron_flops_per_step(batch=batch, seq_len=2048, layers=layers, hidden=hidden, vocab=51200)
    kw = dict(seq_len=2048, global_batch_tokens=batch * 2048)
    cal = train_step(m, A100, plan, profile=default_profile(A100.accelerator), **kw)
    ideal = train_step(m, A100, plan, efficiency=1.0, **kw)
    assert flops / cal.step_s / gpus / 1e12 == pytest.approx(measured, rel=0.15 if params_b < 2 else 0.10)
    assert 1.40 < flops / ideal.step_s / gpus / 1e12 / measured < 1.62


# Llama 3 405B, Table 4 (recalled from the paper, arXiv:2407.21783; check against the PDF): GPUs, TP, CP,
# PP, DP, sequence, batch per DP group, TFLOP/s per GPU. 16M-token batches.
LLAMA3 = [(8192, 8, 1, 16, 64, 8192, 32, 430), (16384, 8, 1, 16, 128, 8192, 16, 400),
          (16384, 8, 16, 16, 8, 131072, 16, 380)]


def llama3_step(row, **kw):
    gpus, tp, cp, pp, dp, seq, per_dp, _ = row
    # §3.3.2: interleaved schedule, one layer fewer on the first and last stage, no activation
    # checkpointing at 8K; FSDP shards optimizer states and gradients but keeps the weights (ZeRO-2).
    # The number of virtual stages is not published: v = 8 (one layer per chunk) assumed.
    plan = TrainPlan(tp=tp, cp=cp, pp=pp, dp=dp, recompute="none", zero=2, pp_trim=1, schedule="interleaved",
                     chunks=8)
    assert plan.gpus == gpus
    return train_step(get_model("llama-3.1-405b"), H100, plan, seq_len=seq, global_batch_tokens=dp * per_dp * seq,
                      **kw)


@pytest.mark.parametrize("row,err", zip(LLAMA3, (0.116, 0.129, 0.170)), ids=["8K-gpus", "16K-gpus", "16K-gpus-cp16"])
def test_llama3_405b_throughput_at_the_tables_as_measured(row, err):
    """Model TFLOP/s per GPU (6·N·D + causal attention, the MFU basis) with the kernel tables as measured
    (kernel_share 1): +11.6% (8K GPUs), +12.9% (16K), +17.0% (CP16, 131K; FlashAttention's backward
    recomputing the scores weighs most at long context; ZeRO-2's per-micro-batch gradient reduce-scatter least,
    hidden behind its long backward), with collectives at NCCL's measured shares (sequence-parallel
    reduce-scatter/all-gather 0.662 of NVLink, IB sends 0.718); ideal +54%, +56%, +84%.
    What the tables miss is mostly one common rate factor (next test)."""
    published = row[-1]
    cal = llama3_step(row, profile=H100_PROFILE, kernel_share=1.0).tflops_per_gpu
    ideal = llama3_step(row, efficiency=1.0).tflops_per_gpu
    assert published < cal < ideal
    assert cal / published - 1 == pytest.approx(err, abs=0.01)
    assert ideal / published - 1 < 0.85


def _fit_share(rows) -> float:
    """The share minimising the squared log errors of ``rows``' TFLOP/s (benchmarks/fit_training_share.py)."""
    from scipy.optimize import minimize_scalar

    def loss(share):
        return sum(math.log(llama3_step(r, profile=H100_PROFILE, kernel_share=share).tflops_per_gpu / r[-1]) ** 2
                   for r in rows)
    return float(minimize_scalar(loss, bounds=(0.3, 1.0), method="bounded", options={"xatol": 1e-5}).x)


def test_sustained_share_is_the_fit_and_predicts_held_out_runs():
    """The shipped share of h100-sxm/trtllm is the one fitted on the three Llama 3 runs (0.7787), and is
    calibrated mode's default (the other TensorRT-LLM kernel-table profiles take it, assumed). Out of sample:
    each Llama run with the share fitted on the other two: +3.8%, +6.6%, −9.6% (target 10%); DeepSeek-V3
    (another model, MoE, block FP8, DualPipe, H800; not fitted on, though it decided which profiles carry a
    share) with the shipped share: GPU-hours +9.1% with the stage split that fits 80e9 B (+35% with the even
    split, which needs 85.1 GB; target 15%)."""
    from llmecon.econ.training_kernels import SUSTAINED_SHARES

    shipped = SUSTAINED_SHARES["h100-sxm/trtllm"].value
    for chip in ("h200", "b200", "b300", "gb200", "gb300"):  # transferred: chips compare on one footing
        assert SUSTAINED_SHARES[f"{chip}/trtllm"].value == shipped
        assert "transferred" in SUSTAINED_SHARES[f"{chip}/trtllm"].source
    assert "h100-sxm/vllm" not in SUSTAINED_SHARES and "h100-sxm/sglang" not in SUSTAINED_SHARES
    assert _fit_share(LLAMA3) == pytest.approx(shipped, abs=0.002)
    for i, (row, want) in enumerate(zip(LLAMA3, (0.038, 0.066, -0.096))):
        held = _fit_share(LLAMA3[:i] + LLAMA3[i + 1:])
        err = llama3_step(row, profile=H100_PROFILE, kernel_share=held).tflops_per_gpu / row[-1] - 1
        assert abs(err) < 0.10 and err == pytest.approx(want, abs=0.01)
    default = dsv3_step(pp_trim=1, profile=H100_PROFILE)
    assert default.kernels.sustained_share == shipped
    hours = default.train_s(14.8e12) * 2048 / 3600
    assert hours / 2.664e6 - 1 == pytest.approx(0.091, abs=0.01)
    # given explicitly, a share overrides the fitted one; 1 prices the tables as measured
    assert dsv3_step(pp_trim=1, profile=H100_PROFILE, kernel_share=1.0).kernels.sustained_share == 1.0
    with pytest.raises(SpecError, match="^kernel_share"):
        dsv3_step(efficiency=1.0, kernel_share=0.5)
    with pytest.raises(SpecError, match="^kernel_share"):
        dsv3_step(profile=H100_PROFILE, kernel_share=1.5)


def test_profiles_without_a_fitted_share_price_the_tables_as_measured():
    a100 = train_step(gpt(2048, 4, 16), A100, TrainPlan(), seq_len=2048, global_batch_tokens=2048,
                      profile=default_profile(A100.accelerator))
    assert a100.kernels.sustained_share == 1.0 and "as measured" in a100.kernels.sustained_source


# DeepSeek-V3 report (arXiv:2412.19437): §3.2.3 recomputes every RMSNorm and the MLA up-projections,
# keeps the EMA in CPU memory and places embedding and head (shared with MTP) on one PP rank; §3.3.3 keeps
# AdamW moments in BF16, master weights and gradients in FP32 and caches activations in FP8 (E5M6 for
# the attention output, SwiGLU inputs in MoE with the output recomputed); §2.2 trains one MTP module.
DSV3_MEMORY = dict(grad_fp32=True, bf16_moments=True, ema="cpu", recompute_norms=True, recompute_mla_up=True,
                   fp8_activations=True, mtp=True)
# §2.1.2 node-limited routing (M = 4), §3.3.3 FP8 dispatch, §3.2.2 20 of the H800's 132 SMs communicate
# (the SM count recalled from NVIDIA's H100 SXM specification)
DSV3_EP = dict(fp8_dispatch=True, ep_node_limit=4, comm_sm_share=20 / 132)


def dsv3_step(memory=DSV3_MEMORY, pp_trim=0, ep=DSV3_EP, precision="fp8_block", **kw):
    # §3.1-3.3 and §4.2: 2,048 H800, PP16 (DualPipe), EP64 across 8 nodes, ZeRO-1 data parallelism, no TP,
    # block-scaled FP8 GEMMs (§3.3.2), 4K sequences, batch 15,360 sequences (after the ramp over the first 469B
    # tokens, ignored).
    # No activation checkpointing beyond §3.2.3's. Micro-batch 1 sequence: assumed (not published).
    plan = TrainPlan(tp=1, pp=16, dp=128, ep=64, schedule="dualpipe", recompute="none", zero=1, pp_trim=pp_trim,
                     **memory, **ep)
    return train_step(get_model("deepseek-v3"), H800, plan, seq_len=4096, global_batch_tokens=15360 * 4096,
                      precision=precision, **kw)


def test_deepseek_v3_gpu_hours():
    """2.664M H800 GPU-hours for 14.8T tokens (DeepSeek-V3 report, Table 1), with the report's memory
    layout, MTP, all-to-all and block-scaled FP8 GEMMs (§3.3.2), the kernel tables as measured: +6.4% with
    layers split evenly (does not fit 80 GB), −14.2% with one layer fewer on the first and last stage (the
    layout that fits); ideal −50%. DualPipe hides the node-limited FP8 all-to-all and the pipeline sends
    entirely (§3.2.1)."""
    for kw, trim, err in ((dict(profile=H100_PROFILE, kernel_share=1.0), 0, 0.064),
                          (dict(profile=H100_PROFILE, kernel_share=1.0), 1, -0.142),
                          (dict(efficiency=1.0), 0, -0.497)):
        stp = dsv3_step(pp_trim=trim, **kw)
        assert stp.ep_comm_s == 0.0 and stp.pp_comm_s == 0.0
        hours = stp.train_s(14.8e12) * 2048 / 3600
        assert hours / 2.664e6 - 1 == pytest.approx(err, abs=0.02)


def test_block_fp8_uses_the_block_scaled_kernel_tables():
    """fp8_block (DeepSeek-V3's 1×128/128×128 scaling) has fp8's peak in ideal mode, and the profile's
    fp8_block GEMM and MoE tables in calibrated mode (slower than per-tensor FP8 on H100's TensorRT-LLM
    tables)."""
    ideal = [dsv3_step(precision=p, efficiency=1.0).step_s for p in ("fp8", "fp8_block")]
    assert ideal[0] == ideal[1]
    cal = [dsv3_step(precision=p, profile=H100_PROFILE, kernel_share=1.0) for p in ("fp8", "fp8_block")]
    assert cal[1].kernels.layer_gemm < cal[0].kernels.layer_gemm and cal[1].compute_s > cal[0].compute_s


def test_node_limited_fp8_dispatch_by_hand():
    """DeepSeek-V3 dispatch of 4,096 tokens from one GPU, EP64 over 8 nodes, at most 4 nodes per token:
    4·7/8 = 3.5 remote copies of 7,168 FP8 values (+ a 4-byte scale per 128): 4096·3.5·7168·1.03125 =
    105.97 MB through one 50 GB/s NIC at 13 µs (catalogue link): 2.1324 ms; the combine in BF16 2×."""
    from llmecon.econ.training_step import expert_exchange_s

    plan = TrainPlan(tp=1, pp=16, dp=128, ep=64, **DSV3_EP)
    kw = dict(tokens=4096, link=H800.scale_out, tier="scale-out")
    d = expert_exchange_s(get_model("deepseek-v3"), H800, plan, dispatch=True, **kw)
    c = expert_exchange_s(get_model("deepseek-v3"), H800, plan, dispatch=False, **kw)
    assert d == pytest.approx(13e-6 + 4096 * 3.5 * 7168 * 1.03125 / 50e9, rel=1e-9)
    assert c - 13e-6 == pytest.approx(2 / 1.03125 * (d - 13e-6), rel=1e-9)


def test_deepseek_v3_activation_per_token_by_hand():
    """One MoE layer, per token, with all of §3.2.3/§3.3.3 (tp 1, no dropout): MLA latents kept as norm
    inputs 2·(1536 + 512) = 4,096 B; attention output in E5M6 (1.5 + 4/128)·16,384 = 25,088 B; two norm
    inputs 2·2·7168 = 28,672 B; 8 routed copies of the FP8 dispatch (7168·1.03125 = 7,392 B) and FP8
    SwiGLU input (2·2048·1.03125 = 4,224 B) = 92,928 B, the shared expert's SwiGLU input 4,224 B:
    155,008 B, against 454,656 B with none of them (the expanded Q, K, V alone 131,072 B; the latents
    and their normed copies 8,192 B)."""
    m = get_model("deepseek-v3")
    kw = dict(seq=1, microbatch=1, tp=1, recompute="selective", moe_layer=True, dropout=False)
    on = dict(norms_recomputed=True, mla_up_recomputed=True, fp8_cache=True)
    assert layer_activation_bytes(m, **kw, **on) == pytest.approx(155008, rel=1e-12)
    assert layer_activation_bytes(m, **kw) == pytest.approx(454656, rel=1e-12)


def test_deepseek_v3_memory_fits_only_with_its_own_layout():
    """Why our layout gave 151 GB: every DualPipe rank keeps 17 micro-batch-stages (rank 3: 13 of stage 3,
    4 of stage 12), 8 MoE layers of bf16 activations with the expanded MLA Q/K/V and 8 dispatched copies
    each (454,656 B per token per layer): 126.6 GB, 148.4 GB in all on rank 3 with the three dense layers
    placed on stage 0. With §3.2.3/§3.3.3 the activations fall by 2.9×, but fp32 gradients and the MTP module
    bring rank 0 (embedding, head, MTP) to 85.1 GB with layers split evenly (4 per stage, 3 on the last
    three): over the nominal 80 GB, within the 85.52e9 B an H800 (an H100's memory) exposes by only 0.4 GB,
    which the CUDA context and the allocator's reserve (not modelled) would take. The report does not give
    its stage split; one layer fewer on the first and last stage (as Llama 3 does) fits every rank (68.6 GB,
    a middle rank the fullest)."""
    base = dsv3_step(memory={}, efficiency=1.0).memory
    assert not base.fits and base.total == pytest.approx(148.4e9, rel=0.01) and base.rank == 3
    assert base.activations == pytest.approx(17 * 4 * 454656 * 4096, rel=1e-9)
    full = dsv3_step(efficiency=1.0).memory
    assert full.total == pytest.approx(85.1e9, rel=0.01) and full.rank in (0, 15)
    assert 80e9 < full.total <= full.hbm == 81_559 * 2**20 and full.hbm - full.total < 0.5e9
    assert full.gradients == pytest.approx(2 * full.weights, rel=1e-12)  # fp32 gradients, bf16 weights
    trimmed = dsv3_step(pp_trim=1, efficiency=1.0).memory
    assert trimmed.fits and trimmed.total == pytest.approx(68.6e9, rel=0.01) and 0 < trimmed.rank < 15
    # each option lowers (or, for fp32 gradients and MTP, raises) the fullest rank as its section says
    prev = base.total
    for key in ("bf16_moments", "recompute_norms", "recompute_mla_up", "fp8_activations"):
        now = dsv3_step(memory={key: True}, efficiency=1.0).memory.total
        assert now < prev
    assert dsv3_step(memory=dict(grad_fp32=True), efficiency=1.0).memory.total > base.total
    assert dsv3_step(memory=dict(ema="gpu"), efficiency=1.0).memory.total > base.total
    assert dsv3_step(memory=dict(ema="cpu"), efficiency=1.0).memory.total == base.total


def test_memory_options_refused_where_they_do_not_apply():
    llama = get_model("llama-3.1-8b")
    for kw, field in ((dict(recompute_mla_up=True), "^recompute_mla_up"), (dict(mtp=True), "^mtp")):
        with pytest.raises(SpecError, match=field):
            train_step(llama, H100, TrainPlan(tp=8, **kw), seq_len=4096, global_batch_tokens=8 * 4096)
    with pytest.raises(CatalogError, match="^ema"):
        TrainPlan(ema="host")


def test_goodput_hand_llama3():
    """16,384 GPUs at 50,677 GPU-hours per interruption fail every 3.093 h (M = 11,135 s); a 60 s checkpoint
    and a 10 min restart: Young's τ* = sqrt(2·60·M) = 1,156 s, waste = 60/τ* + (τ*/2 + 600)/M = 0.158."""
    g = goodput(gpus=16384, checkpoint_s=60, restart_s=600)
    m = LLAMA3_MTBF_GPU_HOURS * 3600 / 16384
    assert m == pytest.approx(11135, rel=1e-3)
    tau = (2 * 60 * m) ** 0.5
    assert g.checkpoint_interval_s == pytest.approx(tau, rel=1e-12)
    assert g.waste == pytest.approx(60 / tau + (tau / 2 + 600) / m, rel=1e-12)
    assert g.goodput == pytest.approx(0.842, abs=0.002)
    fixed = goodput(gpus=16384, checkpoint_s=60, restart_s=600, checkpoint_interval_s=3600)
    assert fixed.goodput < g.goodput  # Young's interval is the optimum
    assert goodput(gpus=8, checkpoint_s=0, restart_s=0).goodput == 1.0


@pytest.mark.parametrize("kw,field", [
    (dict(gpus=16384, checkpoint_s=-1, restart_s=0), "^checkpoint_s"),
    (dict(gpus=16384, checkpoint_s=0, restart_s=0, mtbf_gpu_hours=0), "^mtbf_gpu_hours"),
    (dict(gpus=10**6, checkpoint_s=600, restart_s=3600), "^restart_s"),
    (dict(gpus=8, checkpoint_s=1, restart_s=1, checkpoint_interval_s=0), "^checkpoint_interval_s"),
])
def test_goodput_bad_input(kw, field):
    with pytest.raises(SpecError, match=field):
        goodput(**kw)


def test_fp8_runs_layer_gemms_at_the_fp8_peak():
    """At efficiency 1 with no communication, fp8 halves the layer-GEMM time only: attention and the head
    stay at the bf16 peak."""
    m = gpt(2048, 4, 16, vocab=1000)
    chip = get_system("h100-sxm")
    kw = dict(seq_len=2048, global_batch_tokens=2048, efficiency=1.0)
    bf, f8 = (train_step(m, chip, TrainPlan(), precision=p, **kw) for p in ("bf16", "fp8"))
    assert f8.compute_s < bf.compute_s < 2 * f8.compute_s and f8.mfu > bf.mfu
    with pytest.raises(CatalogError, match="^precision"):
        train_step(m, chip, TrainPlan(), precision="fp4x", **kw)


def test_hgx_h800_is_an_h100_with_slower_nvlink():
    """H800: the H100 SXM die with NVLink 400 GB/s bidirectional = 200 GB/s per direction; IB 50 GB/s per GPU
    (DeepSeek-V3 §3.2.2)."""
    assert H800.accelerator == H100.accelerator and H800.chips == 8
    assert H800.scale_up.bandwidth_bytes_per_s == 200e9 and H100.scale_up.bandwidth_bytes_per_s == 450e9
    assert H800.scale_out.bandwidth_bytes_per_s == 50e9


AIC = Path(__file__).parents[3] / "shared" / "validation" / "aiconfigurator" / "kernels"


@pytest.mark.skipif(not AIC.is_dir(), reason="../shared/validation/aiconfigurator absent (fresh clone)")
def test_measured_nvlink_share_rederived_from_nccl_table():
    """The H100 scale-up share training's collectives use (MEASURED_LINKS) is re-derived from NCCL's
    bf16 reduce-scatter/all-gather rows (8 GPUs, >= 16 MiB): 0.662 of 450 GB/s."""
    from llmecon.econ.training_kernels import MEASURED_LINKS
    from llmecon.fidelity.comm_fit import ring_bandwidth_share

    for folder, chip, system in (("h100_sxm", "h100-sxm", "hgx-h100"), ("h200_sxm", "h200", "hgx-h200"),
                                 ("b200_sxm", "b200", "hgx-b200"), ("b300_sxm", "b300", "hgx-b300")):
        share, source = ring_bandwidth_share(AIC, folder, get_system(system))
        assert "nccl" in source and share == pytest.approx(MEASURED_LINKS[chip].scale_up, abs=0.001)


def test_calibrated_collectives_take_the_measured_shares():
    """Calibrated mode prices the TP ring at 0.662 of NVLink and PP sends at 0.718 of IB on H100: the TP and
    PP times of the Llama 3 16K configuration grow by 1/0.662 and about 1/0.718 (floors aside) over the
    same step priced at catalogue links."""
    import dataclasses as dc

    from llmecon.econ import training_kernels as tk

    row = LLAMA3[1]
    cal = llama3_step(row, profile=H100_PROFILE)
    assert cal.kernels.scale_up_share == 0.662 and cal.kernels.scale_out_share == pytest.approx(0.718)
    plain = dc.replace(tk.MEASURED_LINKS["h100-sxm"], scale_up=1.0, scale_out=1.0)
    saved = dict(tk.MEASURED_LINKS)
    try:
        tk.MEASURED_LINKS["h100-sxm"] = plain
        cat = llama3_step(row, profile=H100_PROFILE)
    finally:
        tk.MEASURED_LINKS.clear()
        tk.MEASURED_LINKS.update(saved)
    assert cal.tp_comm_s / cat.tp_comm_s == pytest.approx(1 / 0.662, rel=0.01)
    assert cal.pp_comm_s / cat.pp_comm_s == pytest.approx(1 / 0.718, rel=0.03)
    assert cal.compute_s == cat.compute_s


@pytest.mark.parametrize("model", ["gpt-oss-120b", "deepseek-v3"])
@pytest.mark.parametrize("limit", [1, 2, 4, 8, 16])
def test_a_node_limit_never_costs_more_than_k_copies(model, limit):
    """Node-limited routing sends a token once per target node: never more copies than its k experts (gpt-oss-120b
    k = 4 over 8 nodes: at most 8·(1 − (7/8)^4) = 3.31 nodes, so a limit of 8 cannot raise the traffic)."""
    from llmecon.econ.training_step import expert_exchange_s

    m = get_model(model)
    kw = dict(tokens=4096, link=H800.scale_out, tier="scale-out", dispatch=False)
    limited = expert_exchange_s(m, H800, TrainPlan(tp=1, pp=16, dp=128, ep=64, ep_node_limit=limit), **kw)
    k, nodes = m.moe.top_k, 8
    link = H800.scale_out
    bound = link.latency_s + 4096 * k * (nodes - 1) / nodes * m.d_model * 2 / link.bandwidth_bytes_per_s
    assert limited <= bound * (1 + 1e-12)
    distinct = nodes * (1 - (1 - 1 / nodes) ** k)
    expect = min(limit, distinct) * (nodes - 1) / nodes
    assert limited == pytest.approx(H800.scale_out.latency_s + 4096 * expect * m.d_model * 2
                                    / H800.scale_out.bandwidth_bytes_per_s, rel=1e-12)


def test_expert_options_on_a_plan_without_ep_are_refused():
    from llmecon.errors import SpecError

    for opt in (dict(fp8_dispatch=True), dict(ep_node_limit=4)):
        with pytest.raises(SpecError, match="ep 1") as e:
            train_step(get_model("llama-3.1-8b"), H800, TrainPlan(tp=8, pp=1, dp=1, **opt), seq_len=4096,
                       global_batch_tokens=4096 * 8)
        assert e.value.field in ("fp8_dispatch", "ep_node_limit")


def test_all_to_all_without_node_limit_keeps_its_own_node_on_nvlink():
    """EP64 over 8 H800 nodes, no node limit: 7 of each GPU's 64 destinations share its node, so 7/64 of the
    all-to-all goes over NVLink and 56/64 through the NIC, concurrently (two_tier_all_to_all_s), not all 63/64
    through the NIC."""
    from llmecon.econ.training_step import expert_exchange_s
    from llmecon.step.collectives import all_to_all_s, two_tier_all_to_all_s

    m = get_model("deepseek-v3")
    plan = TrainPlan(tp=1, pp=16, dp=128, ep=64)
    got = expert_exchange_s(m, H800, plan, tokens=4096, link=H800.scale_out, tier="scale-out", dispatch=True)
    msg = 2 * 4096 * 8 * 7168
    want = two_tier_all_to_all_s(message_bytes=msg, participants=64, domain_chips=8, scale_up=H800.scale_up,
                                 scale_out=H800.scale_out)
    assert got == pytest.approx(float(want), rel=1e-12)
    flat = all_to_all_s(message_bytes=msg, participants=64, link=H800.scale_out)
    assert got < float(flat) and got == pytest.approx(H800.scale_out.latency_s + 56 / 64 * msg / 50e9, rel=1e-9)


def test_goodput_inputs_and_training_fidelity():
    """The front-ends' shared rules: goodput needs both costs or neither (and checks the MTBF even when it is not
    computed); a mode or profile picks the profile (calibrated: the chip's kernel-table one), never with an
    efficiency."""
    from llmecon.econ.training_goodput import goodput_inputs
    from llmecon.resolve import training_fidelity

    assert goodput_inputs(gpus=8, checkpoint_s=None, restart_s=None) is None
    with pytest.raises(SpecError, match="^restart_s"):
        goodput_inputs(gpus=8, checkpoint_s=60, restart_s=None)
    with pytest.raises(SpecError, match="^mtbf_gpu_hours"):
        goodput_inputs(gpus=8, checkpoint_s=None, restart_s=None, mtbf_gpu_hours=0)
    assert goodput_inputs(gpus=16384, checkpoint_s=60, restart_s=600).goodput == pytest.approx(0.842, abs=0.002)
    assert training_fidelity(None, None, H100) == (None, 0.65)
    assert training_fidelity("ideal", None, H100) == (None, 1.0)
    prof, eff = training_fidelity("calibrated", None, H800)
    assert prof.name == "h100-sxm/trtllm" and eff == 1.0
    assert training_fidelity(None, "h100-sxm/vllm", H100)[0].name == "h100-sxm/vllm"
    assert training_fidelity("calibrated", None, A100)[0].name == "a100-80gb"
    with pytest.raises(SpecError, match="^efficiency"):
        training_fidelity("ideal", None, H100, efficiency=0.5)
