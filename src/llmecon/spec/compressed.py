"""DeepSeek-V4 compressed attention and manifold-constrained hyper-connections (mHC): shapes.

DeepSeek-V4's config names the fields (``compress_ratios``, ``o_lora_rank``, ``o_groups``,
``index_*``, ``hc_mult``) but not the weight shapes they imply. The shapes here are read from the
public serving code that runs the released checkpoints, SGLang 0.5.23 (PyPI wheel ``sglang``,
``srt/models/deepseek_v4.py``, ``srt/layers/attention/dsv4/{compressor,indexer}.py``,
``srt/mem_cache/deepseek_v4_memory_pool.py``), and cross-checked with NVIDIA aiconfigurator-core
0.12.0 (``sdk/models/deepseek_v4.py``) and the kernel tables it measured
(``validation/aiconfigurator/kernels/*/sparse_attention``: ``dsv4_csa_*`` at compress_ratio 4 with an
indexer kernel ``dsv4_paged_mqa_logits`` at 64 heads, ``dsv4_hca_*`` at 128 without one;
``mhc``: hc_mult 4 at hidden 4096 / 7168, 2 sites per layer). Where the sources disagree the
choice is stated. docs/assumptions.md ("DeepSeek-V4") lists every inference.

Per layer, with ratio r (0 = none, 4 = CSA, 128 = HCA), hidden d, heads N of width h (one shared
KV head of width h, rope dims inside it), q LoRA rank R_q, G output groups of rank R_o:

- attention: wq_a d·R_q, q_norm R_q, wq_b R_q·N·h, wkv d·h, kv_norm h, wo_a (grouped: G blocks of
  (N·h/G) x R_o, i.e. N·h·R_o), wo_b G·R_o·d, attn_sink N. Keys double as values (MQA, K = V).
- compressor (r > 0): ape r·c·h (fp32), wkv_gate d·2·c·h, norm h, with c = 2 when r = 4
  (overlapping windows of 2r tokens) else 1. It pools r tokens into one cached entry.
- indexer (r = 4 only): wq_b R_q·H_i·D_i, weights_proj d·H_i, and its own ratio-4 compressor of
  width D_i. It scores every compressed entry and keeps the top ``index_topk``.
- every layer also attends a sliding window of its last ``sliding_window`` raw tokens.
"""

from __future__ import annotations

from .layers import Attention

# SGLang deepseek_v4_memory_pool.py: "qk_nope_head_dim FP8 (448) + qk_rope_head_dim BF16 (64*2) +
# nope FP8 scales + scale_pad = 584 bytes/token": one ue8m0 byte per 64 nope values, padded to 8.
_FP8_SCALE_BLOCK = 64
_FP8_SCALE_PAD_TO = 8


def coff(ratio: int) -> int:
    """Compressor overlap factor: ratio 4 pools overlapping windows of 2·4 tokens (c = 2)."""
    return 2 if ratio == 4 else 1


def compressor_params(d_model: int, ratio: int, width: int) -> int:
    """One KV compressor of ``width``: ape r·c·w + wkv_gate d·2·c·w + norm w (SGLang Compressor)."""
    c = coff(ratio)
    return ratio * c * width + d_model * 2 * c * width + width


def compressor_state_bytes(ratio: int, width: int) -> float:
    """Constant per-sequence buffer of one compressor: the last r·c raw tokens' kv and gate scores
    (2·c·w values each) in fp32, the pending tokens of the entry being pooled (SGLang
    ``CompressStatePool``: ring of 8 rows at r = 4, 128 at r = 128, ``last_dim = 2·(1+overlap)·w``,
    fp32). aiconfigurator counts r (not r·c) rows, half this at r = 4."""
    c = coff(ratio)
    return ratio * c * (2 * c * width) * 4.0


def attention_params(att: Attention, d_model: int, ratio: int, *, indexer: bool = True) -> int:
    """Weights of one V4 attention layer of compress ratio ``ratio`` (shapes in the module doc)."""
    n, h, rq = att.n_heads, att.head_dim, att.q_lora_rank
    q = d_model * rq + rq + rq * n * h
    kv = d_model * h + h
    out = n * h * att.o_lora_rank + att.o_groups * att.o_lora_rank * d_model
    params = q + kv + out + (n if att.sinks else 0)
    if ratio:
        params += compressor_params(d_model, ratio, h)
    if ratio == 4 and indexer and att.is_sparse:
        params += (rq * att.index_n_heads * att.index_head_dim + d_model * att.index_n_heads
                   + compressor_params(d_model, 4, att.index_head_dim))
    return params


def layer_state_bytes(att: Attention, ratio: int) -> float:
    """Constant per-sequence compressor state of one layer (its KV compressor, plus the indexer's
    at ratio 4)."""
    if not ratio:
        return 0.0
    state = compressor_state_bytes(ratio, att.head_dim)
    if ratio == 4 and att.is_sparse:
        state += compressor_state_bytes(4, att.index_head_dim)
    return state


def fp8_entry_bytes(att: Attention) -> float:
    """One cached entry (raw or compressed) at 8 bits in DeepSeek's V4 layout: nope dims fp8 with one
    ue8m0 scale byte per 64, padded to 8 bytes, rope dims bf16: 448 + 8 + 128 = 584 B at h = 512."""
    nope = att.head_dim - att.qk_rope_head_dim
    scales = -(-nope // _FP8_SCALE_BLOCK)
    scales = -(-scales // _FP8_SCALE_PAD_TO) * _FP8_SCALE_PAD_TO
    return nope + scales + 2.0 * att.qk_rope_head_dim


def hyper_connection_params(hc: int, d_model: int, n_layers: int) -> int:
    """mHC weights (SGLang ``make_hc_mixing_params`` / ``make_hc_head_params``, fp32): per layer two
    sites (attention, FFN), each a (2+hc)·hc x hc·d mixing map, a (2+hc)·hc base and 3 scales; one
    head collapsing the hc streams before the final norm: hc x hc·d, hc, 1. hc = 1: none."""
    if hc <= 1:
        return 0
    mix = (2 + hc) * hc
    per_layer = 2 * (mix * hc * d_model + mix + 3)
    return n_layers * per_layer + hc * hc * d_model + hc + 1
