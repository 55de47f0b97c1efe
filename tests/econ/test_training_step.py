"""Training step time, MFU and memory per GPU (SPEC F21, F23): published formulas (Korthikanti et al.
2022, ZeRO), Megatron-LM's measured throughput (Narayanan et al. 2021, Table 1), hand cases,
properties and bad input."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from llmecon.catalog.hardware import get_system
from llmecon.catalog.models import get_model
from llmecon.errors import CatalogError, InfeasibleError, SpecError
from llmecon.catalog.hf_config import model_from_hf_config
from llmecon.econ.training_step import (MEGATRON_A100_EFFICIENCY, TrainPlan, in_flight_microbatches,
                                   layer_activation_bytes, layer_elementwise_bytes, megatron_flops_per_step,
                                   memory_per_gpu, train_step)

MEGATRON = yaml.safe_load((Path(__file__).parents[1] / "published" / "training_megatron2021.yaml").read_text())[
    "megatron_lm_2021"]


def gpt(hidden: int, layers: int, heads: int, vocab: int = 51200):
    return model_from_hf_config({"architectures": ["GPT2LMHeadModel"], "n_embd": hidden, "n_layer": layers,
                                 "n_head": heads, "vocab_size": vocab, "n_positions": 2048}, name=f"gpt-{hidden}")


A100 = get_system("hgx-a100")


# ---- published formulas ------------------------------------------------------------------------


def test_gpt_parameter_count_matches_megatron_table():
    """Megatron-LM Table 1 lists 1008.0B for h=25600, l=128 (12·l·h² + (V+s)·h, their eq. 2 form);
    ours omits the 2048·h learned positions: 1007.99B."""
    assert gpt(25600, 128, 160).params.total / 1e9 == pytest.approx(1008.0, abs=0.1)


@pytest.mark.parametrize("tp", [1, 8])
def test_activation_bytes_gpt_is_korthikanti(tp):
    """Korthikanti et al. 2022 eq. 1 and Table 2 (with sequence parallelism): a GPT layer keeps
    s·b·h·(34 + 5·a·s/h)/t bytes without recomputation, 34·s·b·h/t with selective, 2·s·b·h/t with full."""
    m = gpt(12288, 2, 96)
    s, b, h, a = 2048, 2, 12288, 96
    kw = dict(seq=s, microbatch=b, tp=tp, moe_layer=False)
    assert layer_activation_bytes(m, recompute="none", **kw) == pytest.approx(s * b * h * (34 + 5 * a * s / h) / tp)
    assert layer_activation_bytes(m, recompute="selective", **kw) == pytest.approx(34 * s * b * h / tp)
    assert layer_activation_bytes(m, recompute="full", **kw) == pytest.approx(2 * s * b * h / tp)
    assert layer_activation_bytes(m, recompute="reversible", **kw) == 0.0


def test_elementwise_bytes_gpt_hand():
    """GPT forward non-matmul traffic: norms 8sbh + residual dropout-adds 14sbh + GELU 4·s·b·4h
    = 38·s·b·h, plus eager softmax + dropout on the scores 9·a·s²·b."""
    m = gpt(2304, 2, 24)
    s, b, h, a = 2048, 1, 2304, 24
    kw = dict(seq=s, microbatch=b, tp=1, moe_layer=False)
    assert layer_elementwise_bytes(m, flash_attention=True, **kw) == pytest.approx(38 * s * b * h)
    assert layer_elementwise_bytes(m, flash_attention=False, **kw) == pytest.approx(38 * s * b * h + 9 * a * s * s * b)
    # without dropout the 1-byte masks go: 36sbh, and 8 bytes per score
    assert layer_elementwise_bytes(m, flash_attention=False, dropout=False, **kw) == pytest.approx(
        36 * s * b * h + 8 * a * s * s * b)


def test_zero_memory_stages_match_the_zero_paper():
    """Rajbhandari et al. 2020 Fig. 1: model states per GPU are 16Ψ (baseline), 4Ψ + 12Ψ/N_d (stage 1),
    2Ψ + 14Ψ/N_d (stage 2) and 16Ψ/N_d (stage 3); with Ψ = 7.5B and N_d = 64: 120, 31.4, 16.6, 1.9 GB."""
    m = gpt(4096, 36, 32)
    psi = m.params.total
    assert psi == pytest.approx(7.5e9, rel=0.04)  # Megatron's "7.5B" row shape
    nd = 64
    expected = {0: 16 * psi, 1: 4 * psi + 12 * psi / nd, 2: 2 * psi + 14 * psi / nd, 3: 16 * psi / nd}
    paper_gb = {0: 120.0, 1: 31.4, 2: 16.6, 3: 1.9}
    for zero, want in expected.items():
        mem = memory_per_gpu(m, A100, TrainPlan(dp=nd, zero=zero), seq_len=2048, microbatches=1)
        assert mem.weights + mem.gradients + mem.optimizer == pytest.approx(want, rel=1e-12)
        assert (mem.weights + mem.gradients + mem.optimizer) / 1e9 * 7.5e9 / psi == pytest.approx(paper_gb[zero],
                                                                                                   rel=0.02)


def test_in_flight_microbatches_per_schedule():
    """Korthikanti et al. 2022 §4.2: 1F1B's first stage holds P micro-batches, interleaved
    P·(1 + (P−1)/(P·v)), GPipe all M."""
    assert in_flight_microbatches(TrainPlan(pp=8), 64) == 8
    assert in_flight_microbatches(TrainPlan(pp=8, schedule="gpipe"), 64) == 64
    assert in_flight_microbatches(TrainPlan(pp=8, schedule="interleaved", chunks=2), 64) == pytest.approx(
        8 * (1 + 7 / 16))
    assert in_flight_microbatches(TrainPlan(pp=8, schedule="zero-bubble"), 64) == 8
    assert in_flight_microbatches(TrainPlan(pp=8), 3) == 3


def test_megatron_flops_formula_hand():
    """Narayanan et al. 2021 eq. 3 at the 1T row: 96·B·s·l·h²(1 + s/6h + V/16lh) per step; with their
    measured 163 TFLOP/s per GPU on 3072 GPUs the step takes F/(3072·163e12) = 102.6 s, and their
    aggregate column (502 PFLOP/s) implies the same step within 1%."""
    f = megatron_flops_per_step(batch=3072, seq_len=2048, layers=128, hidden=25600, vocab=51200)
    by_hand = 96 * 3072 * 2048 * 128 * 25600**2 * (1 + 2048 / (6 * 25600) + 51200 / (16 * 128 * 25600))
    assert f == pytest.approx(by_hand, rel=1e-12)
    assert f / (3072 * 163e12) == pytest.approx(102.6, rel=1e-3)
    assert f / 502.0e15 == pytest.approx(f / (3072 * 163e12), rel=0.01)


# ---- Megatron-LM measured throughput ----------------------------------------------------------


@pytest.mark.parametrize("row", MEGATRON["rows"], ids=lambda r: f"{r[0]}B")
def test_megatron_table_1(row):
    """Measured TFLOP/s per GPU (Megatron's own FLOP count, eq. 3) within ±20% with one stated
    efficiency for every row: A100 80GB DGX nodes (hgx-a100: NVLink3 in the node, 200G HDR per GPU
    across), fp16, full recomputation, eager attention (2021: no FlashAttention), micro-batch 1,
    1F1B (assumed: the table does not list micro-batch sizes or interleaving)."""
    params_b, heads, hidden, layers, tp, pp, gpus, batch, measured = row[:9]
    m = gpt(hidden, layers, heads)
    plan = TrainPlan(tp=tp, pp=pp, dp=gpus // (tp * pp), recompute="full", zero=0, flash_attention=False)
    stp = train_step(m, A100, plan, seq_len=2048, global_batch_tokens=batch * 2048,
                     efficiency=MEGATRON_A100_EFFICIENCY)
    predicted = megatron_flops_per_step(batch=batch, seq_len=2048, layers=layers, hidden=hidden,
                                        vocab=51200) / stp.step_s / gpus / 1e12
    assert predicted == pytest.approx(measured, rel=0.20)
    assert stp.memory.fits
    assert stp.hfu > stp.mfu  # full recomputation counts an extra forward
    assert 0.6 < stp.mfu / stp.hfu < 0.8  # the yaml note: MFU ≈ 3/4 of Megatron's percentage


# ---- hand cases --------------------------------------------------------------------------------


def test_single_gpu_step_is_flops_over_peak_plus_elementwise():
    """One A100, no parallelism, no recomputation, efficiency 1: the step is (6·N·T + 3·attention)
    / 312 TFLOP/s plus the element-wise bytes (3 passes) / 2.039 TB/s; no communication, no bubble."""
    m = gpt(1024, 4, 16, vocab=1000)
    s, seqs = 1024, 8
    stp = train_step(m, get_system("a100-80gb"), TrainPlan(recompute="none", flash_attention=False), seq_len=s,
                     global_batch_tokens=seqs * s, efficiency=1.0)
    n_matmul = 4 * (12 * 1024**2 + 9 * 1024) + 1000 * 1024  # layer weights and biases (6ND counts both) + head
    attn = 4 * 2 * 16 * (64 + 64) * s * (s + 1) / 2  # layers × 2·a·(d_qk+d_v) × causal pairs
    flops = 6 * n_matmul * seqs * s + 3 * attn * seqs
    assert stp.model_flops == pytest.approx(flops, rel=1e-9)
    assert stp.hardware_flops == stp.model_flops
    ew = 3 * 4 * (36 * s * 1024 + 8 * 16 * s * s) * seqs  # no dropout (the default plan): no 1-byte masks
    assert stp.step_s == pytest.approx(flops / 312e12 + ew / 2.039e12, rel=1e-6)
    assert stp.bubble_s == stp.tp_comm_s == stp.dp_comm_s == stp.pp_comm_s == 0.0
    flash = train_step(m, get_system("a100-80gb"), TrainPlan(recompute="none"), seq_len=s,
                       global_batch_tokens=seqs * s, efficiency=1.0)
    # FlashAttention's backward recomputes the scores: 3.5 attention passes, not 3 (Dao 2023)
    flash_flops = flops + 0.5 * attn * seqs
    assert flash.hardware_flops == pytest.approx(flash_flops, rel=1e-9) and flash.model_flops == stp.model_flops
    assert flash.step_s == pytest.approx(flash_flops / 312e12 + 3 * 4 * 36 * s * 1024 * seqs / 2.039e12, rel=1e-6)


def test_bubble_share_is_the_gpipe_formula():
    """With no DP communication the bubble's share of the step is exactly (P−1)/(M+P−1): P=4, M=8 -> 3/11."""
    m = gpt(1024, 8, 16)
    stp = train_step(m, get_system("hgx-a100"), TrainPlan(pp=4, microbatch=1), seq_len=1024,
                     global_batch_tokens=8 * 1024)
    assert stp.microbatches == 8
    assert stp.bubble_fraction == pytest.approx(3 / 11, rel=1e-12)
    zb = train_step(m, get_system("hgx-a100"), TrainPlan(pp=4, schedule="zero-bubble"), seq_len=1024,
                    global_batch_tokens=8 * 1024)
    assert zb.bubble_s == 0.0 and zb.step_s < stp.step_s


def test_recompute_modes_order_memory_and_time():
    """Activations: none > selective > full > reversible; time: none = selective (FlashAttention
    recomputes only the attention core) < full = reversible (one extra forward, 4N vs 3N)."""
    m = get_model("llama-3.1-8b")
    h100 = get_system("hgx-h100")
    out = {r: train_step(m, h100, TrainPlan(tp=8, recompute=r, flash_attention=False), seq_len=8192,
                         global_batch_tokens=8 * 8192) for r in ("none", "selective", "full", "reversible")}
    acts = [out[r].memory.activations for r in ("none", "selective", "full", "reversible")]
    assert acts == sorted(acts, reverse=True) and len(set(acts)) == 4
    assert out["full"].hardware_flops == out["reversible"].hardware_flops
    assert out["full"].hardware_flops / out["none"].hardware_flops == pytest.approx(4 / 3, rel=0.05)
    assert out["full"].mfu < out["none"].mfu


def test_collective_tiers_follow_the_domain():
    """hgx-h100 domains hold 8 GPUs: tp 8 stays on NVLink, dp runs over the NICs; tp 16 spills out."""
    m = get_model("llama-3.1-70b")
    h100 = get_system("hgx-h100")
    a = train_step(m, h100, TrainPlan(tp=8, dp=4), seq_len=4096, global_batch_tokens=64 * 4096)
    assert a.tiers["tp"] == "scale_up" and a.tiers["dp"] == "scale_out" and a.tiers["pp"] == "none"
    b = train_step(m, h100, TrainPlan(tp=4, dp=2), seq_len=4096, global_batch_tokens=64 * 4096)
    assert b.tiers["dp"] == "scale_up"  # 4 × 2 = 8 GPUs: one domain
    c = train_step(m, h100, TrainPlan(tp=16), seq_len=4096, global_batch_tokens=64 * 4096)
    assert c.tiers["tp"] == "scale_out" and c.tp_comm_s > 5 * a.tp_comm_s  # 450 vs 50 GB/s per direction


def test_moe_expert_parallel_all_to_all_is_counted():
    m = get_model("mixtral-8x22b")
    h100 = get_system("hgx-h100")
    base = dict(seq_len=4096, global_batch_tokens=64 * 4096)
    no_ep = train_step(m, h100, TrainPlan(tp=2, dp=8, zero=1), **base)
    ep = train_step(m, h100, TrainPlan(tp=2, dp=8, ep=4, zero=1), **base)
    assert no_ep.ep_comm_s == 0.0 and ep.ep_comm_s > 0.0 and ep.tiers["ep"] == "scale_up"
    # experts split 4 ways: bf16 weights of the routed experts drop to 1/4; the optimizer was already
    # sharded over all 8 data-parallel ranks (ZeRO-1), so it does not change
    p = m.params
    routed = 2 * p.routed_experts / 2  # bf16 bytes over tp 2
    assert no_ep.memory.weights - ep.memory.weights == pytest.approx(routed * 3 / 4, rel=1e-9)
    assert ep.memory.optimizer == pytest.approx(no_ep.memory.optimizer, rel=1e-12)
    zero3 = [train_step(m, h100, TrainPlan(tp=2, dp=8, ep=e, zero=3), **base).memory.total for e in (1, 4)]
    assert zero3[0] == pytest.approx(zero3[1], rel=1e-12)  # ZeRO-3 shards everything over dp either way


def test_train_days_hand():
    """Days = tokens / (tokens per step / step time) / 86400."""
    m = gpt(1024, 4, 16)
    stp = train_step(m, get_system("hgx-a100"), TrainPlan(dp=8), seq_len=1024, global_batch_tokens=64 * 1024)
    assert stp.train_s(1e12) == pytest.approx(1e12 / (64 * 1024) * stp.step_s, rel=1e-12)


# ---- properties --------------------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(pp=st.sampled_from([2, 4, 8]), m1=st.integers(1, 64), extra=st.integers(1, 64),
       schedule=st.sampled_from(["gpipe", "1f1b"]))
def test_bubble_shrinks_as_microbatches_grow(pp, m1, extra, schedule):
    m = gpt(512, 16, 8, vocab=1000)
    sys_ = get_system("hgx-a100")
    f = [train_step(m, sys_, TrainPlan(pp=pp, schedule=schedule), seq_len=256,
                    global_batch_tokens=mb * 256).bubble_fraction for mb in (m1, m1 + extra)]
    assert f[1] < f[0]
    assert f[1] == pytest.approx((pp - 1) / (m1 + extra + pp - 1), rel=1e-9)


@settings(max_examples=40, deadline=None)
@given(dp=st.sampled_from([2, 4, 8, 16, 64]), tp=st.sampled_from([1, 2, 4, 8]), pp=st.sampled_from([1, 2, 4]))
def test_memory_per_gpu_decreases_with_each_zero_stage(dp, tp, pp):
    m = gpt(2048, 16, 16)
    mems = [memory_per_gpu(m, get_system("hgx-a100"), TrainPlan(tp=tp, pp=pp, dp=dp, zero=z), seq_len=2048,
                           microbatches=pp).total for z in range(4)]
    assert all(a > b for a, b in zip(mems, mems[1:]))


@settings(max_examples=30, deadline=None)
@given(eff=st.floats(0.05, 1.0), tp=st.sampled_from([1, 2, 8]), pp=st.sampled_from([1, 2]))
def test_mfu_never_exceeds_efficiency(eff, tp, pp):
    """MFU <= efficiency (bubbles, communication and element-wise time only add); HFU >= MFU."""
    m = gpt(2048, 8, 16)
    stp = train_step(m, get_system("hgx-a100"), TrainPlan(tp=tp, pp=pp, dp=2), seq_len=2048,
                     global_batch_tokens=16 * 2048, efficiency=eff)
    assert 0 < stp.mfu <= eff * (1 + 1e-12)
    assert stp.hfu >= stp.mfu


# ---- bad input ---------------------------------------------------------------------------------


@pytest.mark.parametrize("kwargs,match", [
    (dict(tp=0), "^tp"), (dict(zero=4), "^zero"), (dict(microbatch=0), "^micro_batch"),
    (dict(schedule="1f1bb"), "did you mean '1f1b'"), (dict(recompute="ful"), "did you mean 'full'"),
    (dict(chunks=2), "^chunks"), (dict(dp=6, ep=4), "^ep 4"),
])
def test_bad_plans(kwargs, match):
    with pytest.raises((SpecError, CatalogError), match=match):
        TrainPlan(**kwargs)


@pytest.mark.parametrize("plan,kw,match", [
    (TrainPlan(tp=3), {}, "^tp 3"),
    (TrainPlan(dp=3), {}, "do not split"),
    (TrainPlan(), dict(global_batch_tokens=1000.0), "whole number"),
    (TrainPlan(cp=3), {}, "cp 3"),
    (TrainPlan(ep=2, dp=2), {}, "^ep 2"),
    (TrainPlan(pp=4, schedule="interleaved", chunks=2, dp=1), dict(global_batch_tokens=6 * 4096), "multiple of pp"),
    (TrainPlan(), dict(efficiency=1.5), "^efficiency"),
    (TrainPlan(), dict(dp_overlap=-0.1), "^dp_overlap"),
    (TrainPlan(pp=200), {}, "^pp 200"),
])
def test_bad_steps(plan, kw, match):
    args = dict(seq_len=4096, global_batch_tokens=16 * 4096) | kw
    with pytest.raises(SpecError, match=match):
        train_step(gpt(1024, 8, 16), get_system("hgx-h100"), plan, **args)


def test_cluster_beyond_one_domain_needs_a_scale_out_link():
    from dataclasses import replace

    lonely = replace(get_system("hgx-h100"), scale_out=None)
    with pytest.raises(InfeasibleError, match="scale-out"):
        train_step(gpt(1024, 8, 16), lonely, TrainPlan(dp=16), seq_len=1024, global_batch_tokens=16 * 1024)


def test_validation_changes_nothing():
    plan = TrainPlan(tp=2)
    with pytest.raises(SpecError):
        train_step(gpt(1024, 8, 16), get_system("hgx-h100"), plan, seq_len=1024, global_batch_tokens=1.0)
    assert plan == TrainPlan(tp=2) and math.isfinite(
        train_step(gpt(1024, 8, 16), get_system("hgx-h100"), plan, seq_len=1024, global_batch_tokens=1024.0).step_s)


# ---- collectives across domains, gradient dtypes, attention passes (issue 24 review) ------------


def test_data_parallel_group_with_eight_ranks_per_node_reduces_hierarchically():
    """tp 1, dp 32 on HGX A100 (8 GPUs per node): the DP group has 8 ranks in each of 4 nodes, so NCCL reduces
    hierarchically: a reduce-scatter and an all-gather among the 8 on NVLink and a ring all-reduce of the 1/8
    shard among the 4 nodes on each GPU's NIC (two_tier_all_reduce_s), not the whole gradient through one
    NIC. Ideal mode, no overlap: the DP time is exactly that, by hand."""
    from llmecon.step.collectives import two_tier_all_reduce_s

    m = gpt(2304, 24, 24)
    plan = TrainPlan(tp=1, dp=32, zero=1, recompute="full")
    st_ = train_step(m, A100, plan, seq_len=2048, global_batch_tokens=32 * 2048, efficiency=1.0, dp_overlap=0.0)
    grads = 2.0 * m.params.total  # bf16 gradients reduce-scattered + bf16 weights all-gathered: 2 + 2 over 2
    up, out = A100.scale_up, A100.scale_out
    want = float(two_tier_all_reduce_s(message_bytes=grads, participants=32, domain_chips=8, scale_up=up,
                                       scale_out=out, algorithm="ring"))
    assert st_.dp_comm_s == pytest.approx(want, rel=1e-12)
    shard = 2 * 3 / 4 * grads / 8 / out.bandwidth_bytes_per_s  # the NIC's bandwidth term
    assert shard < want < shard + 2 * 7 / 8 * grads / up.bandwidth_bytes_per_s + 1e-3


def test_fp32_gradients_reduce_in_fp32():
    """With --grad-fp32 and ZeRO >= 1 the reduce-scatter carries 4-byte gradients and the all-gather 2-byte
    weights: 1.5× the bf16 ring volume (bandwidth terms; latencies aside); with ZeRO 0 the all-reduce is fp32
    throughout: 2×."""
    m = gpt(4096, 8, 32)
    kw = dict(seq_len=2048, global_batch_tokens=64 * 2048, efficiency=1.0, dp_overlap=0.0)
    for zero, ratio in ((1, 1.5), (0, 2.0)):
        bf16, fp32 = (train_step(m, A100, TrainPlan(tp=8, dp=8, zero=zero, grad_fp32=g), **kw).dp_comm_s
                      for g in (False, True))
        assert fp32 / bf16 == pytest.approx(ratio, rel=0.01)


@pytest.mark.parametrize("flash,recompute,passes", [
    (True, "none", 3.5), (True, "selective", 3.5), (True, "full", 4.5),
    (False, "none", 3.0), (False, "selective", 4.0), (False, "full", 4.0)])
def test_attention_passes(flash, recompute, passes):
    """FlashAttention's backward recomputes the scores (5 matmuls against the forward's 2: 2.5 forwards; Dao
    2023), so selective recomputation adds nothing to it; eager attention's backward is 2 forwards and
    selective recomputation adds one forward (Korthikanti et al. 2022)."""
    from llmecon.econ.training_step import attention_passes

    assert attention_passes(TrainPlan(flash_attention=flash, recompute=recompute)) == passes


def test_members_per_domain():
    from llmecon.econ.training_step import members_per_domain

    assert members_per_domain(A100, stride=1, size=8) == 8       # inside one node
    assert members_per_domain(A100, stride=1, size=32) == 8      # 4 nodes of 8
    assert members_per_domain(A100, stride=2, size=32) == 4      # tp 2: 4 DP ranks per node
    assert members_per_domain(A100, stride=8, size=64) == 1      # tp 8: one per node
    assert members_per_domain(A100, stride=3, size=32) == 2      # ranks 0, 3, ..., 93: 3, 3 or 2 per node


def test_groups_that_do_not_tile_domains_are_as_slow_as_their_thinnest_domain():
    """On NVL72 (72 GPUs a domain) a tp 8 DP group of 16 ranks sits 9 + 7 in two domains: the hierarchical
    reduction is as slow as the 7-rank domain (a 1/7 shard per NIC), between the 18-rank group (9 + 9) and a flat
    ring; dp 64 at tp 8 leaves one rank alone in the eighth domain, whose NIC carries the whole gradient."""
    from llmecon.econ.training_comm import domain_split, group_link

    nvl = get_system("gb200-nvl72")
    assert domain_split(nvl, [8 * i for i in range(16)]) == (7, 2)
    assert domain_split(nvl, [8 * i for i in range(18)]) == (9, 2)
    assert domain_split(nvl, [8 * i for i in range(64)]) == (1, 8)
    assert group_link(nvl, stride=5, size=15, what="dp")[1] == "scale_up"  # ranks 0..70: one domain
    m = get_model("llama-3.1-70b")
    kw = dict(seq_len=8192, global_batch_tokens=8192 * 144, efficiency=1.0, dp_overlap=0.0)
    t16, t18 = (train_step(m, nvl, TrainPlan(tp=8, dp=dp, zero=1), **kw).dp_comm_s for dp in (16, 18))
    assert t18 < t16 < 1.5 * t18  # no cliff: 1/7 against 1/9 of the gradient per NIC


def test_sharded_gradients_are_reduce_scattered_every_micro_batch():
    """ZeRO 1 keeps a full gradient buffer: one reduce-scatter + one weight all-gather per step (a ring
    all-reduce's volume, R). From ZeRO 2 the gradients are sharded, so each of the M micro-batches' is
    reduce-scattered (R/2 each; no overlap here); ZeRO 2 all-gathers the weights once (R/2), ZeRO 3 per
    micro-batch (zero3_gather). M = 64 sequences / dp 8 = 8."""
    m = gpt(4096, 8, 32)
    kw = dict(seq_len=2048, global_batch_tokens=64 * 2048, efficiency=1.0, dp_overlap=0.0)
    z1, z2, z3 = (train_step(m, A100, TrainPlan(tp=8, dp=8, zero=z), **kw) for z in (1, 2, 3))
    r = z1.dp_comm_s
    assert z2.dp_comm_s == pytest.approx((1 + 8) * r / 2, rel=0.02)
    assert z3.dp_comm_s == pytest.approx(8 * r / 2, rel=0.02)
    assert z3.zero3_gather_s > 0 == z1.zero3_gather_s == z2.zero3_gather_s


def test_fp8_needs_an_fp8_peak():
    with pytest.raises(SpecError, match="^precision"):
        train_step(gpt(1024, 2, 16), A100, TrainPlan(), seq_len=1024, global_batch_tokens=1024, precision="fp8")
