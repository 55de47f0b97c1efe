"""DeepSeek-V4 compressed attention on a model small enough to count by hand (spec/compressed.py,
Model._reach): KV held and read per decode step of sliding-only, CSA (ratio 4, indexed) and HCA
(ratio 128) layers, attention FLOPs (decode and causal prefill), parameter pieces, mHC, hash
layers, and the spec's refusals. Every expected number is worked out in the comments."""

from __future__ import annotations

import pytest

from llmecon.errors import SpecError
from llmecon.spec import compressed
from llmecon.spec.layers import Attention, MoE
from llmecon.spec.model import Model

# d 64, 4 heads of 32 (8 rope dims) sharing one K = V head, q LoRA 16, 2 output groups of rank 8,
# indexer 2 heads x 16 keeping the top 5; window 8 on every layer; layers: ratio 0, 4, 128.
ATT = Attention(kind="mqa", n_heads=4, n_kv_heads=1, head_dim=32, v_head_dim=32, k_eq_v=True, sinks=True,
                q_lora_rank=16, qk_rope_head_dim=8, o_lora_rank=8, o_groups=2, compressed_kv=True,
                index_n_heads=2, index_head_dim=16, index_topk=5)


def _model(**kw) -> Model:
    base = dict(name="tiny-v4", d_model=64, n_layers=3, vocab_size=100, attention=ATT, dense_ffn_dim=128,
                layer_windows=(8, 8, 8), layer_compress=(0, 4, 128), layer_sparsity=("dense", "indexed", "dense"))
    return Model(**{**base, **kw})


def test_state_of_the_compressors():
    # ratio 4 overlaps (c = 2): ring of 4·2 rows x (2·2·w) fp32; ratio 128: 128 rows x 2·w fp32
    assert compressed.compressor_state_bytes(4, 32) == 8 * 128 * 4 == 4096
    assert compressed.compressor_state_bytes(4, 16) == 8 * 64 * 4 == 2048
    assert compressed.compressor_state_bytes(128, 32) == 128 * 64 * 4 == 32768
    assert _model().state_bytes_per_sequence() == 4096 + 2048 + 32768 == 38912


def test_kv_held_grows_as_window_plus_L_over_r():
    m = _model()  # bf16 entry 32·2 = 64 B; indexer key fp8 16 + one fp32 scale = 20 B
    # L = 1000: layer 0: 8·64 = 512; layer 1: (8 + 250)·64 + 250·20 = 21512; layer 2: (8 + 1000/128)·64 = 1012
    assert float(m.kv_bytes(1000)) == pytest.approx(512 + 21512 + 1012 + 38912, rel=1e-12)
    # short context, per token: 64 + (64 + 64/4 + 20/4) + (64 + 64/128)
    assert m.kv_bytes_per_token() == pytest.approx(64 + 85 + 64.5, rel=1e-12)


def test_decode_reads_window_indexer_and_top_k():
    m = _model()
    # layer 1 reads its window (8·64), the top-5 compressed entries (5·64) and all 250 index keys (250·20)
    expected = 512 + (512 + 320 + 5000) + 1012 + 38912
    assert float(m.kv_read_bytes(1000)) == pytest.approx(expected, rel=1e-12)
    # without top-k: dense attention over the same layout reads every held entry, no index keys
    assert float(m.dense_kv_read_bytes(1000)) == pytest.approx(512 + 258 * 64 + 1012 + 38912, rel=1e-12)


def test_attention_flops_decode_and_prefill():
    m = _model()  # 2·N·(d_qk + d_v) = 2·4·64 = 512 FLOPs per attended entry; indexer 2·2·16 = 64 per key
    # decode at 1000: 8 + (8 + 5) + (8 + 7.8125) entries, indexer over 250
    assert float(m.attention_flops_per_token(1000)) == pytest.approx(
        512 * (8 + 13 + 15.8125) + 64 * 250, rel=1e-12)
    # prefill of 40 tokens: sum min(p, 8) = 36 + 32·8 = 292; sum p = 820; sum min(p/4, 5) = (210 + 400)/4
    expected = 512 * 292 + 512 * (292 + 152.5) + 64 * 820 / 4 + 512 * (292 + 820 / 128)
    assert float(m.prefill_attention_flops(40)) == pytest.approx(expected, rel=1e-12) == 542992
    # a prompt after a cached prefix telescopes
    assert float(m.prefill_attention_flops(25, 15) + m.prefill_attention_flops(15)) == pytest.approx(542992, rel=1e-12)


def test_attention_parameter_pieces():
    d = 64
    # q: 64·16 + 16 + 16·4·32 = 3088; kv: 64·32 + 32 = 2080; out: 4·32·8 + 2·8·64 = 2048; sinks 4
    assert compressed.attention_params(ATT, d, 0) == 3088 + 2080 + 2048 + 4 == 7220
    # compressor r=4 (c=2): ape 4·2·32, wkv_gate 64·4·32, norm 32 = 8480; indexer: wq_b 16·2·16,
    # weights_proj 64·2, its compressor (4, 16): 4·2·16 + 64·4·16 + 16 = 4240
    assert compressed.compressor_params(d, 4, 32) == 256 + 8192 + 32 == 8480
    assert compressed.attention_params(ATT, d, 4) == 7220 + 8480 + 512 + 128 + 4240 == 20580
    # compressor r=128 (c=1): ape 128·32, wkv_gate 64·2·32, norm 32
    assert compressed.attention_params(ATT, d, 128) == 7220 + 4096 + 4096 + 32 == 15444
    assert _model().params.attention == 7220 + 20580 + 15444


def test_hyper_connections_and_hash_layers():
    # hc 4: per layer 2 sites x (24·4·64 + 24 + 3); head 4·4·64 + 4 + 1
    assert compressed.hyper_connection_params(4, 64, 3) == 3 * 2 * (6144 + 27) + 1029 == 38055
    assert compressed.hyper_connection_params(1, 64, 3) == 0
    moe = MoE(n_routed=8, top_k=2, expert_ffn_dim=32, n_shared=1, router_bias=True, hash_layers=2)
    m = _model(moe=moe, hyper_connections=4)
    p = m.params
    assert p.hyper_connections == 38055 and p.total - _model(moe=moe).params.total == 38055
    assert p.router == 3 * (64 * 8 + 8) - 2 * 8  # hash layers keep the gate, lose the bias
    # MTP module: uncompressed attention, its layer's mHC (2·6171) and head (1029), 2d + 2d² + d
    layer = 7220 + 2 * 64 + 2 * 6171 + 1029 + 8 * 3 * 64 * 32 + 3 * 64 * 32 + 64 * 8 + 8
    assert (_model(moe=moe, hyper_connections=4, extra_layers_not_counted=1).params.mtp
            == 2 * 64 + 2 * 64 * 64 + layer + 64)


def test_fp8_entry_layout():
    # DeepSeek's V4 cache entry: 448 fp8 + 8 scale bytes + 64 bf16 rope dims (SGLang asserts 584)
    big = Attention(kind="mqa", n_heads=64, n_kv_heads=1, head_dim=512, v_head_dim=512, k_eq_v=True,
                    q_lora_rank=1024, qk_rope_head_dim=64, o_lora_rank=1024, o_groups=8, compressed_kv=True)
    assert compressed.fp8_entry_bytes(big) == 584
    # tiny: 24 nope fp8 + 1 scale padded to 8 + 8 rope bf16 = 48
    assert _model().kv_bytes_per_token("fp8") == pytest.approx(48 + (48 + 12 + 5) + 48.375, rel=1e-12)


def test_refusals():
    with pytest.raises(SpecError, match="layer_compress"):
        _model(layer_compress=(0, 3, 128))
    plain = Attention(kind="mqa", n_heads=4, n_kv_heads=1, head_dim=32, v_head_dim=32)
    with pytest.raises(SpecError, match="no compressor"):
        _model(attention=plain, layer_sparsity=())
    with pytest.raises(SpecError, match="o_groups"):
        Attention(kind="mqa", n_heads=4, n_kv_heads=1, head_dim=32, v_head_dim=32, k_eq_v=True, q_lora_rank=16,
                  o_lora_rank=8, o_groups=3, compressed_kv=True)
