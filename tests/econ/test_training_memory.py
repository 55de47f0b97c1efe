"""Memory per pipeline rank (llmecon.econ.training_memory): stage layouts, the in-flight micro-batches
each schedule holds, dropout-free activations, and Meta's Llama 3 405B configurations fitting in 80 GB."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmecon.catalog.hardware import get_system
from llmecon.catalog.hf_config import model_from_hf_config
from llmecon.catalog.models import get_model
from llmecon.errors import SpecError
from llmecon.econ.training_memory import chunk_layers, peak_in_flight
from llmecon.econ.training_step import (TrainPlan, in_flight_microbatches, layer_activation_bytes, memory_per_gpu,
                                        train_step)

H100 = get_system("hgx-h100")


def gpt(hidden: int, layers: int, heads: int, vocab: int = 51200):
    return model_from_hf_config({"architectures": ["GPT2LMHeadModel"], "n_embd": hidden, "n_layer": layers,
                                 "n_head": heads, "vocab_size": vocab, "n_positions": 2048}, name=f"gpt-{hidden}")


def test_activation_bytes_without_dropout():
    """Korthikanti et al. 2022 Table 2 less the dropout masks (attention output and MLP output, 1 byte
    each) and the scores' mask and dropout output (3·a·s²·b): 32·s·b·h + 2·a·s²·b."""
    m = gpt(12288, 2, 96)
    s, b, h, a = 2048, 1, 12288, 96
    kw = dict(seq=s, microbatch=b, tp=1, moe_layer=False, dropout=False)
    assert layer_activation_bytes(m, recompute="none", **kw) == pytest.approx(32 * s * b * h + 2 * a * s * s * b)
    assert layer_activation_bytes(m, recompute="selective", **kw) == pytest.approx(32 * s * b * h)


def test_chunk_layers_llama3_layout():
    """Llama 3 §3.3.2: one layer fewer on the first and last stage: 126 layers over 16 stages ->
    7, 8 × 14, 7; with 8 virtual chunks (128 positions) the first and last chunks hold no layer."""
    assert chunk_layers(126, 16, 1, 1) == (7,) + (8,) * 14 + (7,)
    v8 = chunk_layers(126, 16, 8, 1)
    assert v8[0] == v8[-1] == 0 and set(v8[1:-1]) == {1} and sum(v8) == 126
    assert chunk_layers(10, 4) == (3, 3, 2, 2)
    with pytest.raises(SpecError, match="^pp_trim"):
        chunk_layers(4, 4, 1, 3)


@settings(max_examples=40, deadline=None)
@given(p=st.sampled_from([2, 4, 8, 16]), v=st.sampled_from([2, 3, 4]), groups=st.integers(1, 4))
def test_interleaved_walk_matches_korthikanti(p, v, groups):
    """Walking Megatron's interleaved order with equal chunks gives the first rank's closed form
    p·(1 + (p−1)/(p·v)) stages of activations (Korthikanti et al. 2022 §4.2), in units of one chunk
    (1/v of a stage), when M >= 2p (warm-up fits in the schedule)."""
    m = p * (groups + 1)
    walked = peak_in_flight("interleaved", rank=0, pp=p, microbatches=m, chunk_sizes=(1.0,) * v)
    closed = in_flight_microbatches(TrainPlan(pp=p, schedule="interleaved", chunks=v), m)
    assert walked / v == pytest.approx(closed, rel=1e-12)


def test_one_f_one_b_ranks_hold_pp_minus_rank():
    sizes = (1.0,)
    assert [peak_in_flight("1f1b", rank=r, pp=4, microbatches=8, chunk_sizes=sizes) for r in range(4)] == [4, 3, 2, 1]
    assert peak_in_flight("gpipe", rank=3, pp=4, microbatches=8, chunk_sizes=sizes) == 8



def test_dualpipe_peak_splits_pp_plus_one():
    """DualPipe rank r (h = min(r, pp − 1 − r)) holds pp − h micro-batches of model stage h and h + 1 of
    stage pp − 1 − h: PP + 1 in all (DeepSeek-V3 Table 2). pp 4, rank 0 (stages 0 and 3, sizes 1 and 2):
    4·1 + 1·2 = 6; rank 1 (stages 1 and 2): 3·1 + 2·2 = 7; rank 3 holds (stage 3, stage 0): 4·2 + 1·1."""
    assert peak_in_flight("dualpipe", rank=0, pp=4, microbatches=8, chunk_sizes=(1.0, 2.0)) == 6
    assert peak_in_flight("dualpipe", rank=1, pp=4, microbatches=8, chunk_sizes=(1.0, 2.0)) == 7
    assert peak_in_flight("dualpipe", rank=3, pp=4, microbatches=8, chunk_sizes=(1.0, 2.0)) == 9
    assert all(peak_in_flight("dualpipe", rank=r, pp=16, microbatches=64, chunk_sizes=(1.0, 1.0)) == 17
               for r in range(16))


def test_dualpipe_holds_two_stages_of_parameters():
    """DeepSeek-V3 Table 2: DualPipe keeps 2× the parameters of 1F1B per rank."""
    m = gpt(2048, 16, 16)
    one = memory_per_gpu(m, H100, TrainPlan(pp=4, zero=0), seq_len=2048, microbatches=8).ranks[1]
    two = memory_per_gpu(m, H100, TrainPlan(pp=4, zero=0, schedule="dualpipe"), seq_len=2048,
                         microbatches=8).ranks[1]
    assert two.weights == pytest.approx(2 * one.weights, rel=1e-12) and two.layers == 2 * one.layers


def test_per_rank_breakdown_worst_rank_decides():
    m = gpt(2048, 16, 16)
    mem = memory_per_gpu(m, H100, TrainPlan(pp=4, dp=2), seq_len=2048, microbatches=8, reserve=3e9)
    assert len(mem.ranks) == 4 and mem.total == max(r.total for r in mem.ranks)
    assert all(r.reserve == 3e9 for r in mem.ranks) and mem.reserve == 3e9
    with pytest.raises(SpecError, match="^reserve"):
        memory_per_gpu(m, H100, TrainPlan(), seq_len=2048, microbatches=1, reserve=-1.0)


# ---- Llama 3 405B (Dubey et al. 2024, arXiv:2407.21783) ---------------------------------------
# Table 4 (recalled from the paper; check against the PDF): 8,192 GPUs TP8 CP1 PP16 DP64, 8K sequences,
# batch/DP 32, 16M tokens, 430 TFLOP/s/GPU; 16,384 GPUs TP8 CP1 PP16 DP128, batch/DP 16, 400; 16,384 GPUs
# TP8 CP16 PP16 DP8 at 131,072 tokens, batch/DP 16, 380. §3.3.2: trained "without activation
# checkpointing" at 8K, one layer fewer on the first and last stage, FSDP sharding optimizer states and
# gradients but not resharding the weights after the forward (= ZeRO-2).
LLAMA3 = [(64, 1, 8192, 32), (128, 1, 8192, 16), (8, 16, 131072, 16)]


@pytest.mark.parametrize("dp,cp,seq,per_dp", LLAMA3, ids=["8K-gpus", "16K-gpus", "16K-gpus-cp16"])
def test_llama3_405b_fits_in_80gb(dp, cp, seq, per_dp):
    m = get_model("llama-3.1-405b")
    plan = TrainPlan(tp=8, cp=cp, pp=16, dp=dp, recompute="none", zero=2, pp_trim=1)
    stp = train_step(m, H100, plan, seq_len=seq, global_batch_tokens=dp * per_dp * seq)
    assert stp.gpus == (8192 if dp == 64 else 16384) and stp.microbatches == per_dp
    assert stp.memory.fits and stp.memory.total == pytest.approx(71e9, rel=0.02)
    # the rank that decides is a full 8-layer stage holding pp − 1 = 15 micro-batches (rank 1), not
    # rank 0 (7 layers × 16) nor the last rank (7 layers + the head)
    assert stp.memory.rank == 1


def test_llama3_405b_16k_interleaved_fits_and_8k_does_not():
    """With Megatron's interleaved order (v = 8) the 16K-GPU configurations (16 micro-batches) still fit;
    the 8K-GPU one (32 micro-batches) needs about 82 GB: over the datasheet's 80 GB, within the 81,559 MiB
    (85.52e9 B) an H100 exposes, so it fits (issue 35: it ran; the nominal capacity said it could not).
    Meta's own schedule (§3.3.2, a tunable number of contiguous micro-batches per stage) holds fewer in
    flight and is not modelled."""
    m = get_model("llama-3.1-405b")
    kw = dict(tp=8, pp=16, recompute="none", zero=2, pp_trim=1, schedule="interleaved", chunks=8)
    big = train_step(m, H100, TrainPlan(dp=128, **kw), seq_len=8192, global_batch_tokens=128 * 16 * 8192)
    small = train_step(m, H100, TrainPlan(dp=64, **kw), seq_len=8192, global_batch_tokens=64 * 32 * 8192)
    assert big.memory.fits and small.memory.fits
    assert small.memory.total == pytest.approx(82e9, rel=0.03)
    assert 80e9 < small.memory.total <= 81_559 * 2**20 == small.memory.hbm


def test_llama3_405b_issue_case_no_longer_overflows_with_dropout_free_layout():
    """The issue's report: 86.6 GB with selective recomputation, dropout masks, ZeRO-1 and no trimming;
    the same plan without dropout masks (Llama has none) at ZeRO-2 fits."""
    m = get_model("llama-3.1-405b")
    old = TrainPlan(tp=8, pp=16, dp=128, dropout=True)
    new = TrainPlan(tp=8, pp=16, dp=128, zero=2)
    kw = dict(seq_len=8192, microbatches=16)
    assert not memory_per_gpu(m, H100, old, **kw).fits
    assert memory_per_gpu(m, H100, new, **kw).fits


def test_layer_params_place_each_layer_kind():
    """Per-layer parameters sum to the model's decoder parameters; DeepSeek-V3's first three layers are dense
    (an 18,432-wide SwiGLU FFN, no routed experts), the other 58 carry 1/58 of the routed experts each; a
    dense model's layers are equal."""
    from llmecon.econ.training_memory import layer_params

    m = get_model("deepseek-v3")
    p = m.params
    dense, expert = layer_params(m)
    assert dense.sum() + expert.sum() == pytest.approx(p.total - p.embedding - p.lm_head, rel=1e-12)
    assert (expert[:3] == 0).all() and expert[3:] == pytest.approx(p.routed_experts / 58, rel=1e-12)
    assert dense[0] - dense[3] == pytest.approx(3 * 7168 * 18432 - (p.shared_experts + p.router) / 58, rel=1e-9)
    d, e = layer_params(get_model("llama-3.1-8b"))
    assert (e == 0).all() and d == pytest.approx(d[0], rel=1e-12)


@settings(max_examples=40, deadline=None)
@given(seq=st.sampled_from([512, 4096, 32768]), b=st.integers(1, 4), tp=st.sampled_from([1, 2, 8]),
       moe=st.booleans(), norms=st.booleans(), up=st.booleans(), fp8=st.booleans())
def test_memory_options_never_add_activations(seq, b, tp, moe, norms, up, fp8):
    """Each DeepSeek-V3 option (recomputed norms, recomputed MLA up-projections, FP8 cache) only drops or
    shrinks kept tensors: adding one to any combination never raises a layer's bytes, and all of them scale
    with s·b/tp (no s² term once the scores are gone)."""
    m = get_model("deepseek-v3")
    kw = dict(seq=seq, microbatch=b, tp=tp, recompute="selective", moe_layer=moe, dropout=False)
    opts = dict(norms_recomputed=norms, mla_up_recomputed=up, fp8_cache=fp8)
    here = layer_activation_bytes(m, **kw, **opts)
    for key in opts:
        assert layer_activation_bytes(m, **kw, **{**opts, key: True}) <= here
    twice = layer_activation_bytes(m, **{**kw, "seq": 2 * seq}, **opts)
    assert twice == pytest.approx(2 * here, rel=1e-12)


def test_tied_embedding_is_held_again_by_the_last_stage():
    """A tied embedding is also the output head: with pp > 1 the last stage holds a copy (its weights,
    gradients and optimizer state), the embedding's parameters / tp more than the same model untied with no
    head parameters; the first stage is unchanged. With pp 1 it is held once."""
    import dataclasses

    m = get_model("gemma-3-27b")
    assert m.tie_embeddings and m.params.lm_head == 0
    untied = dataclasses.replace(m, tie_embeddings=False)
    plan, kw = TrainPlan(tp=8, pp=2, zero=0), dict(seq_len=4096, microbatches=8)
    tied_r = memory_per_gpu(m, H100, plan, **kw).ranks
    bare_r = memory_per_gpu(untied, H100, plan, **kw).ranks
    w = tied_r[-1].weights - bare_r[-1].weights
    assert w == pytest.approx(m.params.embedding / 8 * 2, rel=1e-9)      # bf16 weights
    assert tied_r[0].weights == bare_r[0].weights
    one = memory_per_gpu(m, H100, TrainPlan(tp=8, pp=1, zero=0), **kw).ranks[0]
    assert one.weights == pytest.approx(memory_per_gpu(untied, H100, TrainPlan(tp=8, pp=1, zero=0),
                                                       **kw).ranks[0].weights, rel=1e-12)
