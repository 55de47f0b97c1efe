"""Hand-computed cases for linear-attention / state-space mixers and per-layer model structure."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmecon.errors import SpecError
from llmecon.spec.model import Attention, LinearMixer, Model, MoE


def _gdn():
    # d = 8, 1 key head x dk 2, 2 value heads x dv 3, conv kernel 4
    return LinearMixer(kind="gated_deltanet", n_heads=2, n_key_heads=1, key_dim=2, value_dim=3, conv_kernel=4)


def test_gated_deltanet_params_state_and_flops_by_hand():
    m = _gdn()
    # in_proj_qkvz 8·(2·1·2 + 2·6) = 128; in_proj_ba 8·4 = 32; conv (2·2 + 6 = 10 channels) x 4 = 40;
    # dt_bias + A_log 2 + 2 = 4; gated norm 3; out_proj 6·8 = 48 -> 255
    assert m.params_per_layer(8) == 255
    # recurrent 2 heads x 2 x 3 = 12 fp32 = 48 B; conv state 3 x 10 bf16 = 60 B
    assert m.state_bytes() == 108.0
    # 2 heads x 7·2·3 = 84, conv 2·4·10 = 80
    assert m.recurrent_flops_per_token() == 164.0


def test_mamba2_params_and_state_by_hand():
    # d = 8, H = 2 heads of P = 3, G = 1 group, N = 4, kernel 4, conv bias
    m = LinearMixer(kind="mamba2", n_heads=2, n_key_heads=1, key_dim=4, value_dim=3, conv_kernel=4, conv_bias=True)
    # in_proj 8·(2·6 + 2·4 + 2) = 176; conv (6 + 8 = 14) x 4 + 14 = 70; dt_bias, A_log, D 6; norm 6; out 48
    assert m.params_per_layer(8) == 306
    # recurrent 2·3·4 = 24 fp32 = 96 B; conv 3 x 14 bf16 = 84 B
    assert m.state_bytes() == 180.0
    assert m.recurrent_flops_per_token() == 2 * 5 * 12 + 2 * 4 * 14


def test_kda_params_by_hand():
    # d = 8, 2 heads, dk = dv = 2, kernel 4
    m = LinearMixer(kind="kda", n_heads=2, n_key_heads=2, key_dim=2, value_dim=2, conv_kernel=4)
    # q,k,v 8·12 = 96; conv 12·4 = 48; f 8·2 + 2·4 = 24; beta 8·2 = 16; g 8·2 + 2·4 = 24; A_log 2;
    # dt_bias 4; norm 2; o 4·8 = 32 -> 248
    assert m.params_per_layer(8) == 248


def _hybrid(**kw):
    att = Attention(kind="gqa", n_heads=4, n_kv_heads=2, head_dim=4, v_head_dim=4)
    return Model(name="h", d_model=16, n_layers=4, vocab_size=10, attention=att, dense_ffn_dim=32, linear=_gdn(),
                 layer_mixers=("linear", "linear", "linear", "attention"), **kw)


def test_linear_layers_hold_a_constant_state_and_attention_layers_a_growing_cache():
    m = _hybrid()
    # one attention layer: 2 x 2 KV heads x 4 x 2 B = 32 B per token; 3 linear layers x 108 B
    assert m.kv_bytes_per_token() == 32.0
    assert m.state_bytes_per_sequence() == 324.0
    assert float(m.kv_bytes(100)) == 32.0 * 100 + 324.0
    assert float(m.kv_read_bytes(100)) == 32.0 * 100 + 324.0
    # attention FLOPs: 2·4·(4 + 4)·L on one layer + 3 x 164 recurrence
    assert float(m.attention_flops_per_token(10)) == 64.0 * 10 + 3 * 164.0
    assert m.layer_breakdown()["linear_gated_deltanet"] == 3
    assert m.attention_label == "gqa+gated_deltanet 3:1"


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 10_000), st.integers(1, 10_000))
def test_kv_bytes_is_affine_in_context_with_the_state_as_intercept(a, b):
    m = _hybrid()
    lhs = float(m.kv_bytes(a + b)) - m.state_bytes_per_sequence()
    rhs = float(m.kv_bytes(a)) + float(m.kv_bytes(b)) - 2 * m.state_bytes_per_sequence()
    assert lhs == pytest.approx(rhs, rel=1e-12)


def test_prefill_counts_the_recurrence_once_per_prompt_token():
    m = _hybrid()
    # one full-attention layer: causal sum T(T+1)/2 tokens x 64 FLOPs, plus T x 3 x 164
    assert float(m.prefill_attention_flops(8)) == 64.0 * 36 + 8 * 3 * 164.0


def test_layers_without_mixer_or_ffn_and_per_layer_ffn_widths():
    att = Attention(kind="mha", n_heads=2, n_kv_heads=2, head_dim=4, v_head_dim=4)
    m = Model(name="nas", d_model=8, n_layers=3, vocab_size=10, attention=att, dense_ffn_dim=16,
              layer_mixers=("attention", "none", "attention"), layer_ffn_dims=(16, 8, 0), tie_embeddings=True)
    p = m.params
    assert p.attention == 2 * (4 * 8 * 8)          # 2 attention layers of 4 d x d matrices
    assert p.dense_ffn == 3 * 8 * 16 + 3 * 8 * 8   # gated: 3 matrices each
    assert m.kv_bytes_per_token() == 2 * (2 * 2 * 4 * 2)
    assert m.layer_breakdown()["no_mixer"] == 1 and m.layer_breakdown()["ffn_none"] == 1


def test_windowed_layers_use_their_own_heads():
    full = Attention(kind="gqa", n_heads=4, n_kv_heads=1, head_dim=8, v_head_dim=8, k_eq_v=True)
    local = Attention(kind="gqa", n_heads=4, n_kv_heads=2, head_dim=4, v_head_dim=4)
    m = Model(name="w", d_model=16, n_layers=2, vocab_size=10, attention=full, local_attention=local,
              dense_ffn_dim=8, layer_windows=(5, 0))
    # full layer, K = V: 1 x 8 x 2 B = 16 B/token; local: 2 x 2 x 4 x 2 B = 32 B/token up to 5 tokens
    assert float(m.kv_bytes(100)) == 16 * 100 + 32 * 5
    # K = V drops v_proj: q 16·32 + k 16·8 + o 32·16; local q 16·16 + k,v 2·16·8 + o 16·16
    assert m.params.attention == (512 + 128 + 512) + (256 + 256 + 256)


def test_latent_moe_and_shared_expert_widths():
    att = Attention(kind="mha", n_heads=2, n_kv_heads=2, head_dim=4, v_head_dim=4)
    moe = MoE(n_routed=4, top_k=2, expert_ffn_dim=6, n_shared=1, shared_ffn_dim=10, latent_dim=3)
    m = Model(name="l", d_model=8, n_layers=1, vocab_size=10, attention=att, dense_ffn_dim=0, moe=moe,
              ffn_gated=False)
    p = m.params
    assert p.routed_experts == 4 * 2 * 3 * 6      # experts run latent (3) x width (6), 2 matrices
    assert p.routed_experts_active == 2 * 2 * 3 * 6
    assert p.shared_experts == 2 * 8 * 10          # shared expert at d, its own width
    assert p.moe_latent == 2 * 8 * 3


def test_sparse_layers_need_an_indexer_and_mixers_are_checked():
    att = Attention(kind="mha", n_heads=2, n_kv_heads=2, head_dim=4, v_head_dim=4)
    with pytest.raises(SpecError, match="sparse"):
        Model(name="s", d_model=8, n_layers=1, vocab_size=10, attention=att, dense_ffn_dim=8,
              layer_sparsity=("indexed",))
    with pytest.raises(SpecError, match="linear mixer"):
        Model(name="s", d_model=8, n_layers=1, vocab_size=10, attention=att, dense_ffn_dim=8,
              layer_mixers=("linear",))
    with pytest.raises(SpecError, match="layer_mixers"):
        Model(name="s", d_model=8, n_layers=1, vocab_size=10, attention=att, dense_ffn_dim=8,
              layer_mixers=("mamba",))
    assert np.isfinite(float(Model(name="ok", d_model=8, n_layers=1, vocab_size=10, attention=att,
                                   dense_ffn_dim=8).kv_bytes(3)))
