"""Layer kinds added for issue 33: Mamba-1 and short-convolution mixers, cross-attention layers,
per-layer input embeddings and learned positions. Every expected value is counted by hand from
the shapes in the docstrings (transformers MambaMixer / JambaMambaMixer, Lfm2ShortConv,
MllamaTextCrossAttention, Gemma4TextModel), written out term by term below."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmecon.errors import SpecError
from llmecon.spec.model import Attention, LinearMixer, Model


def _mamba1(**kw) -> LinearMixer:
    base = dict(kind="mamba1", n_heads=8, n_key_heads=1, key_dim=2, value_dim=1, conv_kernel=3, conv_bias=True,
                dt_rank=1)
    return LinearMixer(**{**base, **kw})


def test_mamba1_mixer_weights_by_hand():
    # d = 4, d_inner = 8, N = 2, R = 1, kernel 3 (conv bias), no projection bias:
    # in_proj 4·16 = 64, conv 8·3 + 8 = 32, x_proj 8·(1 + 4) = 40, dt_proj 1·8 + 8 = 16, A_log 8·2 = 16,
    # D 8, out_proj 8·4 = 32  ->  208
    assert _mamba1().params_per_layer(4) == 64 + 32 + 40 + 16 + 16 + 8 + 32
    # Jamba's RMSNorms of dt (R) and B, C (N each): + 1 + 2 + 2
    assert _mamba1(dt_norms=True).params_per_layer(4) == 208 + 5
    # projection biases: in_proj 16 + out_proj 4
    assert _mamba1(proj_bias=True).params_per_layer(4) == 208 + 20


def test_mamba1_state_and_conv_state_by_hand():
    m = _mamba1()
    assert m.state_elements() == 8 * 2          # N per channel
    assert m.conv_state_elements() == 2 * 8     # kernel - 1 inputs per channel
    assert m.state_bytes() == 16 * 4 + 16 * 2   # fp32 state, bf16 conv state
    # per channel: decay N + update 2N + read-out 2N; conv 2·kernel per channel
    assert m.recurrent_flops_per_token() == 8 * 5 * 2 + 2 * 3 * 8


def test_mamba1_needs_a_dt_rank():
    with pytest.raises(SpecError, match="dt_rank"):
        _mamba1(dt_rank=0)


def test_short_convolution_by_hand():
    conv = LinearMixer(kind="short_conv", n_heads=4, n_key_heads=1, key_dim=1, value_dim=1, conv_kernel=3)
    # in_proj 4·12 = 48, depthwise conv 4·3 = 12, out_proj 4·4 = 16
    assert conv.params_per_layer(4) == 48 + 12 + 16
    assert conv.state_elements() == 0 and conv.conv_state_elements() == 2 * 4
    assert conv.recurrent_flops_per_token() == 2 * 3 * 4 + 2 * 4
    biased = replace(conv, conv_bias=True, proj_bias=True)
    assert biased.params_per_layer(4) == 76 + 4 + 12 + 4


ATT = Attention(kind="gqa", n_heads=2, n_kv_heads=1, head_dim=4, v_head_dim=4)


def _cross_model(tokens: int = 0) -> Model:
    return Model(name="x", d_model=8, n_layers=2, vocab_size=10, attention=ATT, dense_ffn_dim=16,
                 layer_mixers=("attention", "cross"), cross_attention=replace(ATT, qk_norm=True),
                 cross_attention_tokens=tokens)


def test_cross_attention_layer_params_flops_and_cache_by_hand():
    m = _cross_model(tokens=5)
    # self-attention: q 8·8 + k 8·4 + v 8·4 + o 8·8 = 192; cross: the same + q/k norms 2·4 + 2 gates = 202
    assert m.params.attention == 192 + 202
    ffn, head = 2 * 3 * 8 * 16, 10 * 8
    assert m.params.total == 10 * 8 + 10 * 8 + 192 + 202 + ffn + (2 * 2 * 8 + 8)
    # a text token runs q and o in a cross layer (k, v act on image tokens): 8·8 + 8·8
    assert m.matmul_flops_per_token().non_expert == 2.0 * (192 + 128 + ffn + head)
    # KV per text token: only the self-attention layer, K and V of one head of 4 at bf16
    assert m.kv_bytes_per_token("bf16") == 2 * 4 * 2
    # image tokens' K and V held per sequence: 1 cross layer · 5 tokens · 1 head · (4 + 4) · 2 B
    assert m.state_bytes_per_sequence() == 5 * 8 * 2
    assert _cross_model(tokens=0).state_bytes_per_sequence() == 0
    assert "+cross 1" in m.attention_label and m.layer_breakdown()["cross_attention"] == 1


def test_cross_layers_need_a_spec_and_a_valid_token_count():
    with pytest.raises(SpecError, match="cross_attention"):
        Model(name="x", d_model=8, n_layers=2, vocab_size=10, attention=ATT, dense_ffn_dim=16,
              layer_mixers=("attention", "cross"))
    with pytest.raises(SpecError, match="cross_attention_tokens"):
        _cross_model(tokens=-1)


def test_per_layer_input_embeddings_by_hand():
    m = Model(name="ple", d_model=8, n_layers=2, vocab_size=10, attention=ATT, dense_ffn_dim=16,
              per_layer_input_dim=3, per_layer_vocab=10)
    base = replace(m, per_layer_input_dim=0, per_layer_vocab=0, _cache={})
    # table 10 x 2·3; model projection 8 x 2·3, its norm 3, per layer gate 8·3 + projection 3·8 + norm 8
    assert m.params.per_layer_embedding == 60
    assert m.params.per_layer_projections == 48 + 3 + 2 * (24 + 24 + 8)
    assert m.params.total == base.params.total + 60 + 163
    # the table is looked up, not multiplied: FLOPs grow by the projections only
    assert m.matmul_flops_per_token().total == base.matmul_flops_per_token().total + 2 * 163
    assert m.weight_bytes("bf16").input_embedding == base.weight_bytes("bf16").input_embedding + 60 * 2


def test_learned_positions_are_counted_with_the_embedding():
    m = Model(name="p", d_model=8, n_layers=1, vocab_size=10, attention=ATT, dense_ffn_dim=16, learned_positions=5)
    assert m.params.embedding == 10 * 8 + 5 * 8
    with pytest.raises(SpecError, match="learned_positions"):
        replace(m, learned_positions=-1)


def test_a_stack_of_mixers_without_ffn_is_valid():
    """Mamba: one norm and one mixer per layer, no MLP (explicit FFN widths of 0)."""
    m = Model(name="m", d_model=4, n_layers=2, vocab_size=10, attention=ATT, dense_ffn_dim=0,
              layer_mixers=("linear", "linear"), layer_ffn_dims=(0, 0), linear=_mamba1(), norms_per_layer=1)
    assert m.params.dense_ffn == 0 and m.kv_bytes_per_token() == 0
    assert m.params.linear_mixers == 2 * 208
    with pytest.raises(SpecError, match="FFN width"):
        Model(name="m", d_model=4, n_layers=2, vocab_size=10, attention=ATT, dense_ffn_dim=0)


@settings(max_examples=40, deadline=None)
@given(inner=st.integers(1, 64), n=st.integers(1, 32), r=st.integers(1, 16), k=st.integers(2, 5),
       d=st.integers(1, 64))
def test_mamba1_weights_grow_with_every_dimension(inner, n, r, k, d):
    m = _mamba1(n_heads=inner, key_dim=n, dt_rank=r, conv_kernel=k)
    base = m.params_per_layer(d)
    assert _mamba1(n_heads=inner + 1, key_dim=n, dt_rank=r, conv_kernel=k).params_per_layer(d) > base
    assert _mamba1(n_heads=inner, key_dim=n + 1, dt_rank=r, conv_kernel=k).params_per_layer(d) > base
    assert _mamba1(n_heads=inner, key_dim=n, dt_rank=r + 1, conv_kernel=k).params_per_layer(d) > base
    assert m.state_elements() == inner * n


def test_lightning_attention_by_hand():
    """MiniMax-01 lightning attention: qkv 4·3·8, output gate 4·8, norm 8, out_proj 8·4 (H = 2, h = 4)."""
    mix = LinearMixer(kind="lightning", n_heads=2, n_key_heads=2, key_dim=4, value_dim=4, conv_kernel=1)
    assert mix.params_per_layer(4) == 96 + 32 + 8 + 32
    assert mix.state_elements() == 2 * 4 * 4 and mix.conv_state_elements() == 0
    assert mix.recurrent_flops_per_token() == 2 * 5 * 16


def test_rglru_recurrent_block_by_hand():
    """Griffin recurrent block, d = 4, w = 8 in H = 2 gate blocks of 4, conv of 3 taps with bias:
    linear_y and linear_x 2·(4·8 + 8), conv 8·3 + 8, recurrence parameter 8, gates 2·(2·4·4 + 8),
    linear_out 8·4 + 4."""
    mix = LinearMixer(kind="rglru", n_heads=2, n_key_heads=1, key_dim=1, value_dim=4, conv_kernel=3, conv_bias=True)
    assert mix.params_per_layer(4) == 2 * 40 + 32 + 8 + 2 * 40 + 36
    assert mix.state_elements() == 8 and mix.conv_state_elements() == 2 * 8


def test_kda_full_rank_gates_by_hand():
    """d = 8, H = 2 heads of 2: KDA's low-rank gates f (d -> dv -> H·dk), beta (d -> H), g (d -> dv -> H·dv)
    against Bailing's full-rank f (d -> H·dk) and g (d -> H·dv)."""
    kda = LinearMixer(kind="kda", n_heads=2, n_key_heads=2, key_dim=2, value_dim=2, conv_kernel=3)
    full = replace(kda, full_rank_gates=True)
    # the rest: q,k,v 8·(2·4 + 4) = 96, conv 12·3 = 36, A_log 2, dt_bias 4, norm 2, o_proj 4·8 = 32
    rest = 96 + 36 + 2 + 4 + 2 + 32
    assert kda.params_per_layer(8) == rest + (8 * 2 + 2 * 4) + 8 * 2 + (8 * 2 + 2 * 4)
    assert full.params_per_layer(8) == rest + 8 * 4 + 8 * 2 + 8 * 4
