"""Read a Hugging Face ``config.json`` into a ``Model``.

Field names and the defaults transformers applies when a field is absent are documented in
``reference/models/README.md`` ("What a parser must handle"); each default used here is recorded
in ``Model.assumptions`` so the user sees it. Per-architecture facts that are not config fields
(gated MLP or not, norms, biases) come from ``hf_families``, looked up by ``architectures`` then
``model_type`` (Kimi K2 is ``model_type: kimi_k2`` with ``DeepseekV3ForCausalLM``); a config that
names an architecture llmecon does not know is refused, naming it. Blocks: ``hf_blocks``
(attention, MoE, windows), ``hf_layers`` (per-layer structure), ``hf_dsv4`` (DeepSeek-V4).

Strictness (``hf_policy``, docs/model_reader.md): missing or mistyped required fields are errors
naming the field; a key that looks like a read one (a typo) is an error with "did you mean"; a key
that can change parameters, bytes or FLOPs and is not modelled is refused, naming the field, its
value and a workaround; known-harmless keys, and those the caller names in ``ignore_fields``, are
listed in ``Model.ignored_fields``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from ..errors import CatalogError
from ..spec.model import Model
from . import hf_dsv4, hf_per_layer
from .hf_blocks import attention_block, moe_block, windows
from .hf_families import family_of
from .hf_fields import MAX_CONFIG_BYTES, Fields, flatten
from .hf_formats import sibling_quant_config, vision_tower_params, weight_dtypes
from .hf_names import normalize as normalize_names
from .hf_layers import layer_attention, mtp_layers, normalize_layer_types, read_structure
from .hf_policy import check_fields


def load_config_file(path: str | Path, *, name: str | None = None, ignore_fields: tuple[str, ...] = ()) -> Model:
    """Read a config.json from disk (errors name the file)."""
    from ..files import parse_json, read_text

    path = Path(path)
    text = read_text(path, field="model", what="config file", max_bytes=MAX_CONFIG_BYTES,
                     fix="give a config.json path or a catalogue name (llmecon catalog models)")
    config = parse_json(text, str(path))
    return model_from_hf_config(config, name=name or path.stem if path.stem != "config" else path.parent.name,
                                where=str(path), hf_quant=sibling_quant_config(path), ignore_fields=ignore_fields)


def model_from_hf_config(config: Mapping, *, name: str = "custom", where: str | None = None,
                         source: str = "", hf_quant: Mapping | None = None,
                         ignore_fields: tuple[str, ...] | list[str] = ()) -> Model:
    """Build a ``Model`` from a parsed config.json mapping (and, when given, the parsed
    ``hf_quant_config.json`` published beside it). ``ignore_fields``: keys the caller knows to be
    harmless for this model; they are read as absent and listed in ``Model.ignored_fields``."""
    where = where or f"config for {name}"
    flat = flatten(config, where)
    normalize_names(flat, where)
    switches = {k: flat.pop(k) for k in list(flat) if k.startswith("_")}  # set by normalize_names
    text = config.get("text_config") if isinstance(config, Mapping) else None
    wrapper = frozenset(k for k in config if k not in text) if isinstance(text, Mapping) else frozenset()
    ignored, unrecognized = check_fields(flat, where, tuple(ignore_fields), wrapper)
    f = Fields(flat, where)
    assumptions: list[str] = list(switches.get("_assumptions", ()))
    vouched = [k for k in ignore_fields if k in ignored]
    if vouched:
        assumptions.append(f"ignore_fields (--ignore-field): {', '.join(vouched)} read as absent; the user vouches "
                           "they change nothing llmecon computes")
    arch, family = family_of(f, where, assumptions, text.get("model_type") if isinstance(text, Mapping) else None)
    d, n_layers, n_heads, vocab = _sizes(f, family, arch, where, assumptions)
    defaults = family.get("defaults", {})
    normalize_layer_types(f, n_layers, where, assumptions, family)
    dsv4 = hf_dsv4.is_dsv4(f)
    attention = (hf_dsv4.attention(f, d, n_heads, where, assumptions) if dsv4
                 else attention_block(f, family, defaults, d, n_heads, n_layers, where, assumptions))
    moe, moe_mask = moe_block(f, family, defaults, n_layers, where, assumptions)
    layer_windows = windows(f, family, defaults, n_layers, where, assumptions)
    dense_width = _dense_width(f, family, arch, d, moe_mask, where, assumptions)
    structure = read_structure(f, n_layers=n_layers, d=d, attention=attention, windows=layer_windows,
                               moe_mask=moe_mask, dense_width=dense_width, where=where, assumptions=assumptions)
    if family.get("moe_plus_dense") and moe is not None:
        # Gemma 4 MoE: every layer runs its dense MLP (intermediate_size) and the MoE block side by side
        structure["layer_ffn_dims"] = (dense_width or 0,) * n_layers
        assumptions.append("MoE layers also run a dense MLP of intermediate_size in parallel (Gemma 4)")
    attention, local = layer_attention(f, attention, structure, where)
    attention, local = _per_layer(f, family, (attention, local), structure, d, n_layers, where, assumptions)
    if local is None and family.get("swa_kv_heads_mult") and any(structure["layer_windows"]):
        n_kv = attention.n_kv_heads * family["swa_kv_heads_mult"]
        local = replace(attention, n_kv_heads=n_kv, kind="mqa" if n_kv == 1 else "gqa", sinks=True)
        assumptions.append(f"sliding layers: {n_kv} KV heads and a sink per head, {family['swa_kv_heads_mult']} x "
                           "num_key_value_heads (transformers MiMoV2FlashAttention; no swa_* fields given)")
    n_mtp = mtp_layers(f, where, assumptions)
    if dsv4:
        v4, moe = hf_dsv4.structure(f, n_layers=n_layers, n_mtp=n_mtp, att=attention, moe=moe, where=where,
                                    assumptions=assumptions)
        structure.update(v4)
    encoder = _encoder(config, family, assumptions)
    tie = _tie(f, family, arch, assumptions)
    weight_dtype, expert_dtype, ffn_dtype = weight_dtypes(f, where, assumptions, hf_quant, moe is not None)
    mlp_bias = bool(f.get("mlp_bias", bool, default=False))
    structure.pop("decilm_kv_heads", None)
    norms = structure.pop("norms_per_layer", switches.get("_norms_per_layer", family["norms_per_layer"]))
    if switches.get("_norms_without_weights"):
        norms = 0
        assumptions.append("LayerNorms without weights (layer_norm_elementwise_affine false): no norm parameters "
                           "per layer")
    if f.get("use_post_norm", bool, default=False):  # HyperCLOVA X: post-norms after both blocks (4 per layer)
        norms = 4
    return Model(
        name=name, d_model=d, n_layers=n_layers, vocab_size=vocab, attention=attention,
        dense_ffn_dim=dense_width or 0, ffn_gated=family["gated"],
        ffn_bias=family.get("ffn_bias", False) or mlp_bias, moe=moe, **structure, local_attention=local,
        tie_embeddings=tie, norm=switches.get("_norm", family["norm"]),
        norms_per_layer=norms, lm_head_bias=f.get("lm_head_bias", bool, default=family.get("lm_head_bias", False)),
        weight_dtype=weight_dtype, expert_weight_dtype=expert_dtype, ffn_weight_dtype=ffn_dtype,
        max_context=f.get("max_position_embeddings", int, default=0) or 0, source=source,
        assumptions=tuple(assumptions), unrecognized_fields=unrecognized, ignored_fields=ignored,
        extra_layers_not_counted=n_mtp, encoder_params=encoder,
        learned_positions=_positions(f, family, d, assumptions),
        **_per_layer_inputs(f, vocab, assumptions),
    )


def _sizes(f: Fields, family: dict, arch: str, where: str, assumptions: list[str]) -> tuple[int, int, int, int]:
    """(hidden size, decoder layers, attention heads, vocabulary)."""
    defaults = family.get("defaults", {})
    d = f.get("hidden_size", int, required=True, minimum=1)
    if not f.has("num_hidden_layers") and isinstance(f.config.get("layers_block_type"), list):
        f.config["num_hidden_layers"] = len(f.config["layers_block_type"])
        assumptions.append(f"num_hidden_layers absent: {f.config['num_hidden_layers']} = entries of layers_block_type")
    n_layers = f.get("num_hidden_layers", int, required=True, minimum=1)
    if f.has("attn_type_list") and set(f.get("attn_type_list", list)) != {1}:
        raise CatalogError(f"{where}: attn_type_list has entries other than 1 (softmax attention); MiniMax "
                           "lightning (linear) attention layers are not modelled")
    pattern = f.config.get("hybrid_override_pattern")
    if not f.has("num_attention_heads") and isinstance(pattern, str) and "*" not in pattern:
        n_heads = 1  # no attention layer: the attention spec is a placeholder no layer uses
        assumptions.append("no attention layers (every layer a Mamba mixer): no KV cache")
    else:
        n_heads = f.get("num_attention_heads", int, required=True, minimum=1)
    vocab = f.get("vocab_size", int, minimum=1)
    if vocab is None:
        if "vocab_size" not in defaults:
            raise CatalogError(f"{where}: missing required field 'vocab_size'")
        vocab = defaults["vocab_size"]
        assumptions.append(f"vocab_size absent: transformers default {vocab} for {arch}")
    return d, n_layers, n_heads, vocab


def _dense_width(f: Fields, family: dict, arch: str, d: int, moe_mask: list[bool], where: str,
                 assumptions: list[str]) -> int | None:
    """FFN width of dense layers (None when no layer needs one or a per-layer field gives them)."""
    dense_width = f.first(("intermediate_size_mlp", "intermediate_size"), int, minimum=1)
    if dense_width is None and "ffn_width_default_mult" in family:
        dense_width = family["ffn_width_default_mult"] * d
        assumptions.append(f"FFN width absent: {dense_width} = {family['ffn_width_default_mult']}·hidden "
                           f"(transformers default for {arch})")
    per_layer = ("block_configs", "dense_intermediate_size", "hybrid_override_pattern", "layers_block_type")
    if dense_width is None and moe_mask.count(False) and not any(f.has(k) for k in per_layer):
        raise CatalogError(f"{where}: missing required field 'intermediate_size' (FFN width of dense layers)")
    if dense_width is None and f.has("dense_intermediate_size"):
        dense_width = f.get("dense_intermediate_size", int, minimum=1)
    return dense_width


def _per_layer(f: Fields, family: dict, specs: tuple, structure: dict, d: int, n_layers: int, where: str,
               assumptions: list[str]) -> tuple:
    """(attention, windowed attention) after per-layer settings (``hf_per_layer``), when the config has any."""
    per_layer = hf_per_layer.overrides(f, n_layers, where)
    if per_layer is None:
        return specs
    if specs[1] is not None and any(per_layer):
        raise CatalogError(f"{where}: per-layer attention settings and another source of windowed-layer heads "
                           "(swa_* / global_* fields) are both given; llmecon reads one")

    def build(ov: dict):
        g = Fields({**f.config, **ov}, where)
        heads = g.get("num_attention_heads", int, minimum=1)
        return attention_block(g, family, family.get("defaults", {}), d, heads, n_layers, where, [])

    wins = list(structure.get("layer_windows") or [0] * n_layers)
    mixers = list(structure.get("layer_mixers") or ["attention"] * n_layers)
    return hf_per_layer.split(f, per_layer, wins, mixers, build, where, assumptions)


def _per_layer_inputs(f: Fields, vocab: int, assumptions: list[str]) -> dict:
    """Gemma 3n/4 per-layer input embeddings (``hidden_size_per_layer_input`` p, a table of
    ``vocab_size_per_layer_input`` rows): Model.per_layer_input_dim / per_layer_vocab."""
    p = f.get("hidden_size_per_layer_input", int, default=0, minimum=0) or 0
    if not p:
        return {}
    rows = f.get("vocab_size_per_layer_input", int, default=vocab, minimum=1)
    assumptions.append(f"per-layer input embeddings: a {rows} x layers·{p} table looked up per token (weight bytes, "
                       "no FLOPs), its d -> layers·{p} projection and per layer a gate and projection of d x {p}")
    return {"per_layer_input_dim": p, "per_layer_vocab": rows}


def _positions(f: Fields, family: dict, d: int, assumptions: list[str]) -> int:
    """Rows of a learned absolute position table: max_position_embeddings, plus the family's offset
    (OPT and BioGPT keep 2 extra rows: OPTLearnedPositionalEmbedding, BioGptLearnedPositionalEmbedding)."""
    if not family.get("learned_positions"):
        return 0
    rows = (f.get("max_position_embeddings", int, default=0) or 0) + family.get("position_offset", 0)
    assumptions.append(f"learned position embeddings: {rows} rows x {d} counted with the embedding")
    return rows


def _encoder(config: Mapping, family: dict, assumptions: list[str]) -> int:
    encoder = vision_tower_params(config.get("vision_config") if isinstance(config, Mapping) else None)
    if family.get("multimodal") or encoder:
        assumptions.append(f"the {family.get('multimodal', 'vision')} encoder is not in the totals: llmecon costs the "
                           f"language model a request runs through; estimated vision tower {encoder / 1e9:.2f}B "
                           "(Model.encoder_params; published sizes may include it)")
    return encoder


def _tie(f: Fields, family: dict, arch: str, assumptions: list[str]) -> bool:
    tie = f.get("tie_word_embeddings", bool)
    if tie is None:
        tie = family["tie"]
        assumptions.append(f"tie_word_embeddings absent: {tie} (transformers default for {arch or 'this family'})")
    return tie
