"""Cross-attention layers (vision-conditioned decoders): parameters, per-token matmuls and the
per-sequence cache, for ``Model`` layers whose mixer is ``"cross"``.

Llama-3.2-Vision (transformers ``MllamaCrossAttentionDecoderLayer`` / ``MllamaTextCrossAttention``):
the layer attends, instead of the text so far, to the vision encoder's output tokens: q from the text
(d -> N·H), k and v from the image tokens (d -> K·H each), o (N·H -> d), RMSNorms on q and k (H each),
and two scalar tanh gates (attention and MLP); its MLP and two norms are those of any layer.

Per text token the layer runs its q and o projections and attends the image tokens; k and v are
computed once per image token and held for the sequence: 2·K·H values per image token per layer,
a per-sequence cache that does not grow with the text (``Model.cross_attention_tokens`` image tokens,
a documented input: 0 for text-only requests). Omitted: the attention scores over the image tokens
(2·2·N·H FLOPs per text token per image token and layer) and the k/v projections of the image tokens.
"""

from __future__ import annotations

from ..dtypes import get_dtype


def layer_params(spec, d_model: int) -> int:
    """Weights of one cross-attention block: projections (``spec.params_per_layer``) and two gates."""
    return spec.params_per_layer(d_model, indexer=False) + 2


def token_matmul_params(spec, d_model: int) -> int:
    """Weights one text token multiplies in one cross-attention block: q and o (k, v act on image tokens)."""
    return d_model * spec.n_heads * spec.head_dim + spec.n_heads * spec.v_head_dim * d_model


def sequence_cache_bytes(spec, n_layers: int, image_tokens: int, kv_dtype) -> float:
    """K and V of ``image_tokens`` image tokens held by ``n_layers`` cross-attention layers."""
    per_token = spec.n_kv_heads * (spec.head_dim + spec.v_head_dim)
    return float(n_layers * image_tokens * per_token * get_dtype(kv_dtype).bytes)
