"""Typed, bounded access to the fields of a Hugging Face ``config.json`` (``hf_config``).

``flatten`` lifts a multimodal wrapper's ``text_config`` to the top and maps legacy GPT-style names;
``Fields`` reads one field with its type, lower bound and a plausibility ceiling (issue 19).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from ..errors import CatalogError


# Plausibility bounds (issue 19): a config whose sizes no model could have (hidden_size 1e30) is refused
# rather than carried into step times of 1e40 s. Each bound is >= 10x the largest published value we know
# (hidden_size 16,384 Llama 3.1 405B / 18,432 Nemotron-4 340B; 126 layers Llama 3.1 405B; vocab 262,144
# Gemma 3; 384 routed experts Kimi K2; 10M-token context Llama 4 Scout); other whole-number fields stop at 2^31.
MAX_CONFIG_BYTES = 16 << 20  # a config.json is a few kB
PLAUSIBLE_MAX = {"hidden_size": 1 << 18, "num_hidden_layers": 1 << 14, "num_attention_heads": 1 << 14,
                 "num_key_value_heads": 1 << 14, "head_dim": 1 << 14, "vocab_size": 1 << 24,
                 "intermediate_size": 1 << 22, "moe_intermediate_size": 1 << 22, "intermediate_size_mlp": 1 << 22,
                 "n_routed_experts": 1 << 16, "num_local_experts": 1 << 16, "num_experts": 1 << 16,
                 "max_position_embeddings": 1 << 31}
PLAUSIBLE_MAX_DEFAULT = 1 << 31


class Fields:
    """Typed access to config fields, recording which were read."""

    def __init__(self, config: Mapping, where: str) -> None:
        self.config, self.where = config, where

    def has(self, key: str) -> bool:
        return self.config.get(key) is not None

    def get(self, key: str, kind: type | tuple, default=None, *, required: bool = False, minimum: int | None = None):
        value = self.config.get(key)
        if value is None:
            if required:
                raise CatalogError(f"{self.where}: missing required field '{key}'")
            return default
        ok = isinstance(value, kind) and not (isinstance(value, bool) and kind is not bool and bool not in
                                              (kind if isinstance(kind, tuple) else (kind,)))
        if not ok:
            expected = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
            raise CatalogError(f"{self.where}: field '{key}' must be {expected}, got {value!r}")
        if minimum is not None and value < minimum:
            raise CatalogError(f"{self.where}: field '{key}' must be >= {minimum}, got {value!r}")
        if isinstance(value, float) and not math.isfinite(value):
            raise CatalogError(f"{self.where}: field '{key}' must be a finite number, got {value!r}")
        limit = PLAUSIBLE_MAX.get(key, PLAUSIBLE_MAX_DEFAULT)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and kind is not float and value > limit:
            raise CatalogError(f"{self.where}: field '{key}' = {value:,} is implausibly large (at most {limit:,}, "
                               f"far above any published model); check the config")
        return value

    def first(self, keys: tuple[str, ...], kind: type, default=None, *, minimum: int | None = None):
        for key in keys:
            if self.has(key):
                return self.get(key, kind, minimum=minimum)
        return default


def rename(flat: dict, old: str, new: str, where: str) -> None:
    """Read ``old`` as ``new`` (another name for the same quantity): moved when ``new`` is absent, dropped
    when both are given and agree (Mamba configs carry n_layer and num_hidden_layers), refused naming both
    when they disagree."""
    if old not in flat:
        return
    if flat.get(new) is None:
        flat[new] = flat.pop(old)
    elif flat[old] is None or flat[old] == flat[new]:
        flat.pop(old)
    else:
        raise CatalogError(f"{where}: field '{old}' = {flat[old]!r} and field '{new}' = {flat[new]!r} name the same "
                           "quantity and disagree; fix one of them")


def flatten(config: Mapping, where: str) -> dict:
    if not isinstance(config, Mapping):
        raise CatalogError(f"{where}: a config.json must be a JSON object, got {type(config).__name__}")
    flat = {k: v for k, v in config.items() if not str(k).startswith("_")}
    text = flat.pop("text_config", None)
    if text is not None:
        if not isinstance(text, Mapping):
            raise CatalogError(f"{where}: field 'text_config' must be an object")
        top_tie = flat.get("tie_word_embeddings")
        flat.update({k: v for k, v in text.items() if (k != "model_type" or "model_type" not in flat)
                     and not str(k).startswith("_")})
        if isinstance(top_tie, bool):
            # the wrapper's own value decides: transformers ties the head of the model class built from the
            # top-level config (PreTrainedModel.tie_weights reads self.config.tie_word_embeddings)
            flat["tie_word_embeddings"] = top_tie
    # legacy GPT-style names (phi-msft, GPT-2)
    for old, new in (("n_embd", "hidden_size"), ("n_layer", "num_hidden_layers"), ("n_head", "num_attention_heads"),
                     ("n_inner", "intermediate_size"), ("n_positions", "max_position_embeddings")):
        rename(flat, old, new, where)
    # the same quantity under another family's name (transformers AriaTextConfig.moe_num_experts,
    # Ernie4_5_MoeConfig.moe_k): read as the common name when that is absent
    # Ernie4_5_MoeConfig.moe_num_shared_experts, AfmoeConfig.num_dense_layers (layer < k is dense,
    # as DeepSeek's first_k_dense_replace)
    for old, new in (("moe_num_experts", "num_local_experts"), ("moe_k", "num_experts_per_tok"),
                     ("moe_topk", "num_experts_per_tok"), ("moe_num_shared_experts", "num_shared_experts"),
                     ("shared_experts_intermediate_size", "shared_expert_intermediate_size"),
                     ("num_dense_layers", "first_k_dense_replace"),
                     # Bamba / GraniteMoeHybrid Mamba-2 mixers (transformers BambaConfig names)
                     ("mamba_n_heads", "mamba_num_heads"), ("mamba_d_head", "mamba_head_dim"),
                     ("mamba_n_groups", "n_groups"), ("mamba_d_state", "ssm_state_size"),
                     ("mamba_d_conv", "conv_kernel"), ("mamba_conv_bias", "use_conv_bias")):
        if old in flat and new not in flat:
            flat[new] = flat.pop(old)
    return flat

