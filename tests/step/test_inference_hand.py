"""Hand-computed inference steps on tiny synthetic models and chips (exact, rel=1e-9).

Every expected number below is worked out on paper from the config; the arithmetic is written
out in comments and as literals, never by calling llmecon's internals.

Tiny dense model (LlamaForCausalLM): d 64, 2 layers, 4 heads x 16 (2 KV heads), FFN 128, vocab 100,
untied, bf16.
  attention/layer  q 64·64 + k 64·32 + v 64·32 + o 64·64     = 12,288
  MLP/layer        3·64·128                                   = 24,576
  norms/layer      2·64                                       =    128   -> layer 36,992, x2 = 73,984
  embedding 100·64 = 6,400; lm_head 6,400; final norm 64      -> total 86,848 params = 173,696 B bf16
  Weights HELD (memory_per_chip, fits, max batch): all 173,696 B. Weights READ per step: the untied
  input embedding (6,400·2 = 12,800 B) is only looked up (B rows, omitted), the lm_head is read in
  full -> 173,696 - 12,800 = 160,896 B (non-expert bytes - untied embedding, /tp, + touched experts).
  matmul FLOPs/token 2·(2·12,288 + 2·24,576 + 6,400) = 2·80,128 = 160,256
  KV/token 2 layers · (K+V) · 2 heads · 16 · 2 B = 256 B
  attention FLOPs/token at context L: 2 layers · 2·4 heads·(16+16)·L = 512·L
Chip A: 1e12 FLOP/s bf16, 1e9 B/s, 1e9 B HBM.  Chip B: 1e11 FLOP/s, 1e9 B/s (compute-bound sooner).

TP all-reduce of S bytes over p chips, link BW and alpha (the per-operation latency floor, charged
once per all-reduce in ideal mode): the fastest of
  ring     alpha + 2(p-1)/p·S/BW
  tree     alpha + 2·S/BW
  one-shot alpha + (p-1)·S/BW
(the toy link has no in-switch reduction), i.e. always the ring: its bytes are the fewest, and ring
and one-shot tie at p = 2. With a latency per algorithm step (calibrated mode: the profile sets
``Link.step_latency_s``, here LINK_STEPS with 1 us per step) the ring pays 2(p-1) steps and
one-shot 1, so one-shot wins small messages: at p = 4 ring wins once 1.5·S/BW > 5 steps, i.e.
S > 333.3 B on the 1e8 B/s link.
"""

from __future__ import annotations

import pytest

from llmecon.spec.deployment import Deployment
from llmecon.econ.batching import balance_batch_with_kv, batch_economics, max_batch
from llmecon.step.collectives import all_reduce_s, one_shot_all_reduce_s, ring_all_reduce_s
from llmecon.spec.hardware import Accelerator, Link, System
from llmecon.catalog.hf_config import model_from_hf_config
from llmecon.step.inference import decode_step, memory_per_chip, prefill_step
from llmecon.spec.plan import Plan

EXACT = 1e-9

DENSE = {"architectures": ["LlamaForCausalLM"], "hidden_size": 64, "num_hidden_layers": 2,
         "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 128, "vocab_size": 100,
         "tie_word_embeddings": False, "torch_dtype": "bfloat16"}
SLIDING = {**DENSE, "architectures": ["MistralForCausalLM"], "sliding_window": 4}
MOE = {**DENSE, "architectures": ["MixtralForCausalLM"], "num_local_experts": 4, "num_experts_per_tok": 2}


def _chip(peak: float = 1e12) -> Accelerator:
    return Accelerator(name=f"toy {peak:g}", vendor="test", peak_flops_per_s={"bf16": peak}, hbm_bytes=1e9,
                       hbm_bandwidth_bytes_per_s=1e9)


def _system(chips: int = 1, peak: float = 1e12, link_bw: float = 1e8, latency: float = 1e-6) -> System:
    link = Link(name="toy link", bandwidth_bytes_per_s=link_bw, latency_s=latency) if chips > 1 else None
    return System(name=f"toy x{chips}", accelerator=_chip(peak), chips=chips, scale_up=link, scale_out=None)


@pytest.fixture(scope="module")
def dense():
    return model_from_hf_config(DENSE, name="tiny-dense")


def test_tiny_dense_counts(dense):
    p = dense.params
    assert (p.attention, p.dense_ffn, p.norms) == (2 * 12_288, 2 * 24_576, 2 * 128 + 64)
    assert p.embedding == p.lm_head == 6_400
    assert p.total == 86_848
    w = dense.weight_bytes()
    assert w.total == 173_696
    assert w.input_embedding == 12_800  # untied: 6,400 params x 2 B
    assert w.non_expert_read_per_step == 160_896  # 173,696 - 12,800
    assert dense.matmul_flops_per_token().total == 160_256
    assert dense.kv_bytes_per_token() == 256
    assert float(dense.attention_flops_per_token(10)) == 5_120


def test_decode_memory_bound(dense):
    """B=4, L=10 on chip A.
    FLOPs 4·160,256 + 4·512·10 = 641,024 + 20,480 = 661,504 -> 6.61504e-7 s.
    Bytes: weights read 160,896 + KV read 4·10·256 = 10,240 + KV write 4·256 = 1,024 -> 172,160
    -> 1.7216e-4 s. Held: all 173,696 B of weights + 10,240 B of KV = 183,936 B."""
    step = decode_step(dense, _system(), batch=4, context=10)
    assert float(step.flops) == pytest.approx(661_504, rel=EXACT)
    assert float(step.weight_bytes) == pytest.approx(160_896, rel=EXACT)
    assert float(step.kv_bytes) == pytest.approx(11_264, rel=EXACT)
    assert float(step.time.compute_s) == pytest.approx(6.61504e-7, rel=EXACT)
    assert float(step.time.memory_s) == pytest.approx(1.7216e-4, rel=EXACT)
    assert float(step.time.comm_s) == 0.0
    assert step.bound == "memory"
    assert float(step.step_s) == pytest.approx(1.7216e-4, rel=EXACT)
    assert float(step.upper_s) == pytest.approx(1.7216e-4 + 6.61504e-7, rel=EXACT)
    assert float(step.tokens_per_s) == pytest.approx(4 / 1.7216e-4, rel=EXACT)
    # held: all weights (embedding included) + 4 sequences x 10 tokens x 256 B
    assert float(step.memory_per_chip_bytes) == pytest.approx(173_696 + 10_240, rel=EXACT)
    assert bool(step.fits)


def test_decode_compute_bound(dense):
    """B=1000, L=0 on chip B (1e11 FLOP/s): FLOPs 1000·160,256 = 1.60256e8 -> 1.60256e-3 s;
    bytes 160,896 + 1000·256 = 416,896 -> 4.16896e-4 s: compute-bound."""
    step = decode_step(dense, _system(peak=1e11), batch=1000, context=0)
    assert float(step.time.compute_s) == pytest.approx(1.60256e-3, rel=EXACT)
    assert float(step.time.memory_s) == pytest.approx(4.16896e-4, rel=EXACT)
    assert step.bound == "compute"
    assert float(step.step_s) == pytest.approx(1.60256e-3, rel=EXACT)


def test_prefill_causal_sum(dense):
    """2 prompts of 4 tokens, nothing cached: position p attends p tokens, sum 1+2+3+4 = 10 pairs;
    per pair per layer 2·4·32 = 256 FLOPs -> 2 layers · 2,560 = 5,120 per prompt.
    FLOPs 2·(4·160,256 + 5,120) = 1,292,288; KV written 2·4·256 = 2,048, none read.
    Bytes: weights read 160,896 + 2,048 = 162,944 -> 1.62944e-4 s."""
    step = prefill_step(dense, _system(), batch=2, prompt_tokens=4)
    assert float(dense.prefill_attention_flops(4)) == 5_120
    assert float(step.flops) == pytest.approx(1_292_288, rel=EXACT)
    assert float(step.kv_bytes) == pytest.approx(2_048, rel=EXACT)
    assert float(step.tokens) == 8
    assert float(step.time.compute_s) == pytest.approx(1.292288e-6, rel=EXACT)
    assert float(step.time.memory_s) == pytest.approx(1.62944e-4, rel=EXACT)


def test_prefill_after_cache(dense):
    """2 new tokens after 3 cached: positions 4 and 5 attend 4 + 5 = 9 tokens -> 2·256·9 = 4,608 FLOPs;
    KV read 3·256 = 768, written 2·256 = 512."""
    assert float(dense.prefill_attention_flops(2, 3)) == 4_608
    step = prefill_step(dense, _system(), batch=1, prompt_tokens=2, cached_tokens=3)
    assert float(step.flops) == pytest.approx(2 * 160_256 + 4_608, rel=EXACT)
    assert float(step.kv_bytes) == pytest.approx(768 + 512, rel=EXACT)


def test_sliding_window():
    """Same model with a 4-token window on both layers: KV held min(L, 4)·256; one token at L=10
    attends 4: 512·4 = 2,048 FLOPs; prefill of 6 attends 1+2+3+4+4+4 = 18 -> 2·256·18 = 9,216.
    Decode B=1, L=10: bytes 160,896 weights read + 4·256 KV read + 256 written = 162,176."""
    m = model_from_hf_config(SLIDING, name="tiny-sliding")
    assert m.layer_windows == (4, 4)
    assert float(m.kv_bytes(10)) == 1_024
    assert float(m.kv_bytes(3)) == 768
    assert float(m.attention_flops_per_token(10)) == 2_048
    assert float(m.prefill_attention_flops(6)) == 9_216
    step = decode_step(m, _system(), batch=1, context=10)
    assert float(step.time.memory_s) == pytest.approx(162_176 / 1e9, rel=EXACT)
    assert float(step.flops) == pytest.approx(160_256 + 2_048, rel=EXACT)


@pytest.fixture(scope="module")
def moe():
    return model_from_hf_config(MOE, name="tiny-moe")


def test_tiny_moe_counts(moe):
    """Mixtral-like: 4 experts of 3·64·128 = 24,576, top-2, router 64·4 = 256 per layer.
    Layer 12,288 + 4·24,576 + 256 + 128 = 110,976; x2 + 12,800 + 64 = 234,816.
    Routed 2·4·24,576 = 196,608; non-expert 38,208; active 38,208 + 2·2·24,576 = 136,512.
    Bytes bf16: non-expert 76,416 held, of which 76,416 - 12,800 (untied embedding) = 63,616 read per
    step; routed 393,216.
    Matmul FLOPs/token 2·(24,576 + 512 + 6,400 + 98,304) = 259,584."""
    p = moe.params
    assert p.total == 234_816
    assert p.routed_experts == 196_608
    assert p.active == 136_512
    assert moe.matmul_flops_per_token().total == 259_584


def test_moe_touched_experts_batch_1_and_2(moe):
    """B=1: one token touches exactly k/E = 2/4 of each layer's experts:
    weights read (2·38,208 - 12,800) + 0.5·2·196,608 = 63,616 + 196,608 = 260,224 B, + 256 B KV write
    = 260,480 B -> 2.6048e-4 s.
    B=2: 1 - (1/2)^2 = 3/4 touched: 63,616 + 0.75·393,216 = 63,616 + 294,912 = 358,528 B.
    Held: every expert and the embedding, 2·234,816 = 469,632 B."""
    s = _system()
    one = decode_step(moe, s, batch=1, context=0)
    assert float(one.weight_bytes) == pytest.approx(260_224, rel=EXACT)
    assert float(one.time.memory_s) == pytest.approx(2.6048e-4, rel=EXACT)
    assert float(one.flops) == pytest.approx(259_584, rel=EXACT)
    two = decode_step(moe, s, batch=2, context=0)
    assert float(two.weight_bytes) == pytest.approx(358_528, rel=EXACT)
    # memory held is every expert regardless of batch
    assert float(one.memory_per_chip_bytes) == pytest.approx(2 * 234_816, rel=EXACT)


LINK = Link(name="toy link", bandwidth_bytes_per_s=1e8, latency_s=1e-6)
LINK_STEPS = Link(name="toy link with steps", bandwidth_bytes_per_s=1e8, latency_s=1e-6, step_latency_s=1e-6)


def test_ring_all_reduce_alone():
    """Ring, p=4, S=1,000 B on 1e8 B/s, 1 us floor: 1e-6 + 2·3/4·1,000/1e8 = 1e-6 + 1.5e-5 = 1.6e-5 s;
    p=2, S=512: 1e-6 + 2·1/2·512/1e8 = 1e-6 + 5.12e-6 = 6.12e-6 s; p=1: nothing to reduce, 0.
    With 1 us per step (LINK_STEPS), p=4 adds 2·3 steps: 1.6e-5 + 6e-6 = 2.2e-5 s."""
    assert float(ring_all_reduce_s(message_bytes=1_000, participants=4, link=LINK)) == pytest.approx(1.6e-5, rel=EXACT)
    assert float(ring_all_reduce_s(message_bytes=512, participants=2, link=LINK)) == pytest.approx(6.12e-6, rel=EXACT)
    assert float(ring_all_reduce_s(message_bytes=512, participants=1, link=LINK)) == 0.0
    assert float(ring_all_reduce_s(message_bytes=1_000, participants=4, link=LINK_STEPS)) == pytest.approx(
        2.2e-5, rel=EXACT)


def test_one_shot_all_reduce_alone():
    """One-shot, p=4, S=1,000 B: 3·1,000/1e8 + 1e-6 = 3e-5 + 1e-6 = 3.1e-5 s;
    p=2, S=512: 1·512/1e8 + 1e-6 = 5.12e-6 + 1e-6 = 6.12e-6 s; p=1: 0."""
    assert float(one_shot_all_reduce_s(message_bytes=1_000, participants=4, link=LINK)) == pytest.approx(
        3.1e-5, rel=EXACT)
    assert float(one_shot_all_reduce_s(message_bytes=512, participants=2, link=LINK)) == pytest.approx(
        6.12e-6, rel=EXACT)
    assert float(one_shot_all_reduce_s(message_bytes=512, participants=1, link=LINK)) == 0.0


def test_all_reduce_picks_the_faster():
    """Ideal (LINK, one 1 us floor): the ring always, p=4:
      S = 100 B: 1e-6 + 1.5e-6 = 2.5e-6;  S = 1,000/3 B: 1e-6 + 5e-6 = 6e-6;  S = 1,000 B: 1.6e-5 s.
    With 1 us per step (LINK_STEPS): ring 1e-6 + 6e-6 + 1.5·S/1e8, one-shot 1e-6 + 1e-6 + 3·S/1e8;
    crossover at 1.5·S/1e8 = 5e-6 -> S = 1,000/3 B (both 1.2e-5 s there).
      S = 100 B:   ring 7e-6 + 1.5e-6 = 8.5e-6, one-shot 2e-6 + 3e-6 = 5e-6    -> one-shot, 5e-6 s
      S = 1,000 B: ring 7e-6 + 1.5e-5 = 2.2e-5, one-shot 2e-6 + 3e-5 = 3.2e-5  -> ring, 2.2e-5 s
    p=2, S=512: ring 1e-6 + 2e-6 + 5.12e-6 = 8.12e-6, one-shot 7.12e-6 -> one-shot, by one step
    (on LINK both are 6.12e-6 s)."""
    sizes = [100.0, 1_000 / 3, 1_000.0]
    got = all_reduce_s(message_bytes=sizes, participants=4, link=LINK)
    assert [float(x) for x in got] == pytest.approx([2.5e-6, 6e-6, 1.6e-5], rel=EXACT)
    got = all_reduce_s(message_bytes=sizes, participants=4, link=LINK_STEPS)
    assert [float(x) for x in got] == pytest.approx([5e-6, 1.2e-5, 2.2e-5], rel=EXACT)
    assert float(all_reduce_s(message_bytes=512, participants=2, link=LINK)) == pytest.approx(6.12e-6, rel=EXACT)
    assert float(all_reduce_s(message_bytes=512, participants=2, link=LINK_STEPS)) == pytest.approx(
        7.12e-6, rel=EXACT)


def test_tensor_parallel_one_shot_all_reduce(dense):
    """TP=2 over a link of 1e8 B/s and 1 us. B=4, L=10.
    Compute 661,504/(2·1e12) = 3.30752e-7 s. Per chip: weights read 160,896/2 = 80,448, KV split over
    the 2 KV heads 11,264/2 = 5,632 -> 86,080 B -> 8.608e-5 s.
    Comm: 2 layers x 2 all-reduces of 4 tokens·64·2 B = 512 B, p=2 (ring and one-shot tie):
      1e-6 + 1·512/1e8 = 1e-6 + 5.12e-6 = 6.12e-6 s
    -> 4 x 6.12e-6 = 2.448e-5 s. Memory-bound.
    Held per chip: 173,696/2 = 86,848 of weights + 10,240/2 = 5,120 of KV."""
    step = decode_step(dense, _system(chips=2), batch=4, context=10, plan=Plan(tp=2))
    assert float(step.time.compute_s) == pytest.approx(3.30752e-7, rel=EXACT)
    assert float(step.time.memory_s) == pytest.approx(8.608e-5, rel=EXACT)
    assert float(step.time.comm_s) == pytest.approx(2.448e-5, rel=EXACT)
    assert step.bound == "memory"
    assert float(step.upper_s) == pytest.approx(8.608e-5 + 3.30752e-7 + 2.448e-5, rel=EXACT)
    assert float(step.flops) == pytest.approx(661_504, rel=EXACT)
    assert float(step.weight_bytes) == pytest.approx(160_896, rel=EXACT)  # 2 chips x 80,448
    assert float(step.memory_per_chip_bytes) == pytest.approx(86_848 + 5_120, rel=EXACT)


def test_tensor_parallel_comm_bound(dense):
    """Same on a 1e6 B/s link, S = 512 B, p=2 (ring = one-shot): 512/1e6 + 1e-6 = 5.13e-4 s,
    x4 = 2.052e-3 s, above memory 8.608e-5 s: comm-bound."""
    step = decode_step(dense, _system(chips=2, link_bw=1e6), batch=4, context=10, plan=Plan(tp=2))
    assert float(step.time.comm_s) == pytest.approx(2.052e-3, rel=EXACT)
    assert step.bound == "comm"


def test_tensor_parallel_4_ring_all_reduce(dense):
    """TP=4 on 4 chips over 1e8 B/s, 1 us. B=4, L=10; KV split over min(2 KV heads, 4) = 2.
    Compute 661,504/(4·1e12) = 1.65376e-7 s. Per chip: weights read 160,896/4 = 40,224,
    KV 11,264/2 = 5,632 -> 45,856 B -> 4.5856e-5 s.
    Comm: 4 all-reduces of S = 512 B, p=4:
      ring     1e-6 + 2·3/4·512/1e8 = 1e-6 + 7.68e-6 = 8.68e-6 s  <- wins
      one-shot 1e-6 + 3·512/1e8     = 1e-6 + 1.536e-5 = 1.636e-5 s
    -> 4 x 8.68e-6 = 3.472e-5 s < 4.5856e-5 s: memory-bound (one floor per all-reduce; charging
    it at each of the ring's 6 steps made this step comm-bound at 5.472e-5 s).
    Held per chip: 173,696/4 = 43,424 of weights + 10,240/2 = 5,120 of KV."""
    step = decode_step(dense, _system(chips=4), batch=4, context=10, plan=Plan(tp=4))
    assert float(step.time.compute_s) == pytest.approx(1.65376e-7, rel=EXACT)
    assert float(step.time.memory_s) == pytest.approx(4.5856e-5, rel=EXACT)
    assert float(step.time.comm_s) == pytest.approx(3.472e-5, rel=EXACT)
    assert step.bound == "memory"
    assert float(step.step_s) == pytest.approx(4.5856e-5, rel=EXACT)
    assert float(step.weight_bytes) == pytest.approx(160_896, rel=EXACT)  # 4 chips x 40,224
    assert float(step.memory_per_chip_bytes) == pytest.approx(43_424 + 5_120, rel=EXACT)


def test_expert_parallel_all_to_all(moe):
    """EP=2 (two groups of 2 experts), B=4, L=0. The critical chip is the busiest group's (issue 18;
    the old mean-load numbers were 2.48448e-4 s memory, 5.19168e-7 s compute, 1.424e-5 s comm).
    Over the 6^4 equally likely routings (tests/step/test_expert_load.py enumerates them) the busiest
    group touches 647/324 of its 2 experts (the mean group 15/8) and receives 787/162 token-expert
    pairs (the mean 4·2/2 = 4).
    Per chip: non-expert read 76,416 - 12,800 = 63,616 (replicated) + (647/648)·393,216/2 =
    196,304.59 -> plus KV writes 4·256/2 = 512 B = 260,432.59 B -> 2.6043259e-4 s.
    Compute: non-expert 259,584 - 2·2·2·24,576 = 62,976 FLOPs/token x 2 tokens = 125,952, routed
    787/162 pairs x 2·24,576 x 2 layers = 477,563.26 -> 603,515.26 / 1e12 = 6.0351526e-7 s. TP=1.
    All-to-all (SPEC D15: 2·k·D·bytes per token, x(1 - 1/EP)): each rank sends 2 tokens·2 experts·64·2 B
    = 512 B, x 787/648 for the busiest receiver, half of it off-chip: 256·787/648/1e8 + 1e-6 =
    4.1091358e-6 s; dispatch + combine in 2 layers -> 1.6436543e-5 s.
    Held per chip: all non-expert bytes 76,416 (embedding included) + half the experts 393,216/2."""
    step = decode_step(moe, _system(chips=2), batch=4, context=0, plan=Plan(ep=2))
    assert float(step.time.memory_s) == pytest.approx((63_616 + 647 / 648 * 196_608 + 512) / 1e9, rel=EXACT)
    assert float(step.time.compute_s) == pytest.approx((125_952 + 787 / 162 * 98_304) / 1e12, rel=EXACT)
    assert float(step.time.comm_s) == pytest.approx(4 * (256 * 787 / 648 / 1e8 + 1e-6), rel=EXACT)
    assert float(step.weight_bytes_per_chip) == pytest.approx(63_616 + 647 / 648 * 196_608, rel=EXACT)
    # the total over both chips stays the mean's: 2 x (63,616 + (15/16)·196,608)
    assert float(step.weight_bytes) == pytest.approx(2 * (63_616 + 15 / 16 * 196_608), rel=EXACT)
    assert float(memory_per_chip(moe, Plan(ep=2), batch=4, context=0)) == pytest.approx(
        76_416 + 393_216 / 2, rel=EXACT)


def test_pipeline_two_stages(dense):
    """PP=2 on 2 chips, B=4, L=10: one layer per stage, 2 micro-batches of 2.
    Per stage-step: compute 0.5·2·(160,256 + 5,120)/1e12 = 1.65376e-7, x2 stage-steps = 3.30752e-7 s;
    bytes 0.5·160,896 + 0.5·2·(2,560 + 256) = 80,448 + 2,816 = 83,264, x2 = 1.66528e-4 s;
    TP=1, so no all-reduce; one hop of 2 tokens·64·2 B = 256 B: 1e-6 + 256/1e8 = 3.56e-6 s.
    Held per chip: half of all weights 173,696/2 = 86,848 + half the layers of 4 x 10 tokens of KV 5,120."""
    step = decode_step(dense, _system(chips=2), batch=4, context=10, plan=Plan(pp=2))
    assert float(step.time.compute_s) == pytest.approx(3.30752e-7, rel=EXACT)
    assert float(step.time.memory_s) == pytest.approx(1.66528e-4, rel=EXACT)
    assert float(step.time.comm_s) == pytest.approx(3.56e-6, rel=EXACT)
    assert float(step.memory_per_chip_bytes) == pytest.approx(86_848 + 5_120, rel=EXACT)
    assert float(step.flops) == pytest.approx(661_504, rel=EXACT)


def test_batch_economics_tiny(dense):
    """Chip A. Balance batch (compute = weight-read time at short context): a step reads 160,896 B of
    weights (the untied embedding is only looked up) in 160,896/1e9 s; one token's compute is
    160,256/1e12 s -> B* = 160,896,000/160,256 = 314,250/313 = 1003.9936...
    Full weight read = those 160,896 B once -> 1.60896e-4 s (all experts touched; none here).
    Latency floor = decode at B=1, L=0: 160,896 + one KV write 256 = 161,152 B -> 1.61152e-4 s.
    Drain 1e9/1e9 = 1 s. Max batch at L=10 uses the weights HELD, embedding included:
    (1e9 - 173,696) // 2,560 = 999,826,304 // 2,560 = 390,557."""
    dep = Deployment(model=dense, system=_system(), plan=Plan())
    econ = batch_economics(dep, context=10.0, batches=[1.0, 10.0, 100.0, 10_000.0])
    assert econ.balance_batch == pytest.approx(314_250 / 313, rel=EXACT)
    assert econ.latency_floor_s == pytest.approx(161_152 / 1e9, rel=EXACT)
    assert econ.full_weight_read_s == pytest.approx(160_896 / 1e9, rel=EXACT)
    assert econ.hbm_drain_s == pytest.approx(1.0, rel=EXACT)
    assert econ.weights_per_chip_bytes == pytest.approx(173_696, rel=EXACT)
    assert max_batch(dep, context=10) == 390_557
    assert econ.max_batch == 390_557


def test_balance_batch_with_kv_beyond_crossover():
    """B*(L) = B*0/(1 - L/L_x): 300 at L=0, 400 at L = L_x/4, infinite at and beyond L_x."""
    got = balance_batch_with_kv(balance_batch=300.0, context=[0.0, 250.0, 1000.0, 2000.0], crossover_context=1000.0)
    assert got[0] == 300.0 and got[1] == pytest.approx(400.0, rel=EXACT)
    assert got[2] == float("inf") and got[3] == float("inf")


def test_the_step_takes_a_profile_it_does_not_choose_one():
    """Calibrated mode without a profile is refused, naming the field and the fix (the step layer does
    not read the catalogue: ``llmecon.resolve`` and ``llmecon.default_profile`` choose profiles)."""
    from llmecon.catalog.hardware import get_system
    from llmecon.catalog.models import get_model
    from llmecon.errors import SpecError
    from llmecon.step.inference import decode_step

    with pytest.raises(SpecError, match="calibrated mode needs an efficiency profile") as raised:
        decode_step(get_model("llama-3.1-8b"), get_system("hgx-h100"), batch=1, context=8, mode="calibrated")
    assert raised.value.field == "profile" and "default_profile" in raised.value.fix
