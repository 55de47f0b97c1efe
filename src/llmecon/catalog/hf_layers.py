"""Per-layer structure, linear mixers and per-layer attention for ``hf_config``.

``read_structure`` turns the per-layer fields of a Hugging Face config (``layer_types``,
``hybrid_override_pattern``, ``layers_block_type``, Kimi's ``linear_attn_config``, MiMo's
``hybrid_layer_pattern``, DeciLM ``block_configs``, per-layer ``moe_layer_freq`` lists,
``mlp_layer_types``, GLM's ``indexer_types``, MiniMax's ``sparse_attention_config``) into the
per-layer tuples of ``Model``. It follows the lists exactly: one entry per decoder layer, every
entry a known kind, else an error naming the field and the entry.

``layer_attention`` gives windowed layers their own heads; ``mtp_layers`` counts multi-token-
prediction modules. Field policy and weight formats: ``hf_formats``.
"""

from __future__ import annotations


from ..errors import CatalogError
from dataclasses import replace

from ..spec.layers import Attention, LinearMixer

# ---- per-layer structure -----------------------------------------------------------------------
def _int_list(f, key: str, n: int | None, where: str) -> list[int]:
    values = f.get(key, list)
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        raise CatalogError(f"{where}: field '{key}' must be a list of whole numbers")
    if n is not None and len(values) != n:
        raise CatalogError(f"{where}: field '{key}' has {len(values)} entries for {n} layers")
    return values


def _pattern_kinds(f, n_layers: int, where: str) -> list[str] | None:
    """Nemotron-H: one block per layer: M = Mamba-2, * = attention, - = MLP, E = MoE."""
    if f.has("hybrid_override_pattern"):
        pattern = f.get("hybrid_override_pattern", str)
        table = {"M": "mamba", "*": "attention", "-": "mlp", "E": "moe"}
        key = "hybrid_override_pattern"
    elif f.has("layers_block_type"):
        pattern = f.get("layers_block_type", list)
        # transformers 5 NemotronHConfig spells Mamba-2 and attention blocks linear_attention / full_attention
        table = {"mamba": "mamba", "attention": "attention", "mlp": "mlp", "moe": "moe", "linear_attention": "mamba",
                 "full_attention": "attention"}
        key = "layers_block_type"
    else:
        return None
    if len(pattern) != n_layers:
        raise CatalogError(f"{where}: field '{key}' has {len(pattern)} entries for {n_layers} layers")
    out = []
    for i, c in enumerate(pattern):
        if c not in table:
            raise CatalogError(f"{where}: {key}[{i}] = {c!r} is not one of {', '.join(map(repr, table))}")
        out.append(table[c])
    return out


def normalize_layer_types(f, n_layers: int, where: str, assumptions: list[str], family: dict | None = None) -> None:
    """Make ``layer_types`` explicit when a config gives the pattern another way, and cross-check
    when it gives both: ``full_attention_interval`` k (Qwen3-Next / Qwen3.5, transformers
    ``Qwen3NextConfig``: layer i is full attention iff (i + 1) % k == 0, else Gated DeltaNet
    ``linear_attention``). When both fields are set and disagree, refuse naming both."""
    if f.has("global_attn_every_n_layers"):
        _global_every(f, n_layers, where, assumptions)
    if f.has("mamba_num_heads") and not f.has("layer_types") and not f.has("hybrid_override_pattern") \
            and not f.has("layers_block_type") and (f.has("attn_layer_indices") or (family or {}).get("mamba_default")):
        # Bamba (BambaConfig.layers_block_type): attention at attn_layer_indices, Mamba-2 elsewhere
        attn = set(_int_list(f, "attn_layer_indices", None, where)) if f.has("attn_layer_indices") else set()
        f.config["layer_types"] = ["full_attention" if i in attn else "linear_attention" for i in range(n_layers)]
        assumptions.append(f"layer_types absent: attention at layers {sorted(attn)}, Mamba-2 elsewhere "
                           "(attn_layer_indices)")
    if not f.has("full_attention_interval"):
        return
    k = f.get("full_attention_interval", int, minimum=1)
    derived = ["full_attention" if (i + 1) % k == 0 else "linear_attention" for i in range(n_layers)]
    if not f.has("layer_types"):
        if not f.has("linear_num_value_heads"):
            raise CatalogError(f"{where}: full_attention_interval = {k} without the linear-attention fields "
                               "(linear_num_value_heads, ...): the layers between full-attention ones are not "
                               "described; add them or layer_types")
        f.config["layer_types"] = derived
        assumptions.append(f"layer_types absent: every {k}th layer full attention, the other "
                           f"{derived.count('linear_attention')} Gated DeltaNet (full_attention_interval)")
        return
    given = f.get("layer_types", list)
    if len(given) == n_layers and [t == "full_attention" for t in given] != [t == "full_attention" for t in derived]:
        raise CatalogError(f"{where}: field 'layer_types' and field 'full_attention_interval' = {k} disagree on "
                           "which layers are full attention; fix one of them")


def _global_every(f, n_layers: int, where: str, assumptions: list[str]) -> None:
    """``global_attn_every_n_layers`` k (AfmoeConfig): layer i attends globally iff (i + 1) % k == 0,
    the others through ``sliding_window``; checked against ``layer_types`` when both are given."""
    k = f.get("global_attn_every_n_layers", int, minimum=1)
    derived = ["full_attention" if (i + 1) % k == 0 else "sliding_attention" for i in range(n_layers)]
    if not f.has("layer_types"):
        f.config["layer_types"] = derived
        assumptions.append(f"layer_types absent: every {k}th layer global, the rest sliding "
                           "(global_attn_every_n_layers)")
    elif [t == "full_attention" for t in f.get("layer_types", list)] != [t == "full_attention" for t in derived]:
        raise CatalogError(f"{where}: field 'layer_types' and field 'global_attn_every_n_layers' = {k} disagree on "
                           "which layers attend globally; fix one of them")


def read_structure(f, *, n_layers: int, d: int, attention: Attention, windows: list[int], moe_mask: list[bool],
                   dense_width: int | None, where: str, assumptions: list[str]) -> dict:
    """Per-layer Model fields beyond windows and MoE mask (which may be replaced here)."""
    out: dict = {}
    mixers = ["attention"] * n_layers
    ffn = [0 if m else (dense_width or 0) for m in moe_mask]
    kinds = _pattern_kinds(f, n_layers, where)
    if kinds is not None:
        mixers = ["linear" if k == "mamba" else ("attention" if k == "attention" else "none") for k in kinds]
        moe_mask = [k == "moe" for k in kinds]
        ffn = [(dense_width or 0) if k == "mlp" else 0 for k in kinds]
        if "mlp" in kinds and not dense_width:
            raise CatalogError(f"{where}: MLP layers in the pattern need 'intermediate_size'")
        if "mamba" in kinds:
            out["linear"] = _linear_mixer(f, d, where)
        out["norms_per_layer"] = 1
        mixer = out["linear"].kind if "linear" in out else "Mamba"
        assumptions.append(f"layer pattern: each layer is one block ({mixer}, attention, MLP or MoE) with one "
                           "pre-norm (Nemotron-H's convention; Mamba stacks)")
    if f.has("layer_types"):
        types = f.get("layer_types", list)
        if len(types) != n_layers:
            raise CatalogError(f"{where}: field 'layer_types' has {len(types)} entries for {n_layers} layers")
        if "linear_attention" in types:
            mixers = ["linear" if t == "linear_attention" else "attention" for t in types]
            # the linear mixer the config's fields describe: Gated DeltaNet (Qwen3-Next) or Mamba-2
            # (GraniteMoeHybrid / Bamba: transformers writes their Mamba-2 layers as linear_attention)
            out["linear"] = _linear_mixer(f, d, where)
    if f.has("linear_attn_config"):
        mixers, linear = _kimi_linear(f, n_layers, where)
        out["linear"] = linear
    if f.has("moe_layer_freq") and isinstance(f.config.get("moe_layer_freq"), list):
        moe_mask = [bool(v) for v in _int_list(f, "moe_layer_freq", n_layers, where)]
        width = f.first(("dense_intermediate_size", "intermediate_size"), int, minimum=1)
        ffn = [0 if m else (width or 0) for m in moe_mask]
    if f.has("mlp_layer_types"):
        moe_mask, ffn = _mlp_layer_types(f, n_layers, moe_mask, dense_width, where)
    if f.has("cross_attention_layers"):
        # Llama-3.2-Vision (MllamaTextModel): these layers cross-attend the image tokens instead of self-attending
        cross = set(_int_list(f, "cross_attention_layers", None, where))
        if not cross <= set(range(n_layers)):
            raise CatalogError(f"{where}: field 'cross_attention_layers' must list layers in 0..{n_layers - 1}")
        mixers = ["cross" if i in cross else m for i, m in enumerate(mixers)]
        out["cross_attention"] = replace(attention, qk_norm=True)
        assumptions.append(f"{len(cross)} cross-attention layers (q/k RMSNorms, 2 gates) attend the image tokens: "
                           "their K and V are per-sequence state for cross_attention_tokens image tokens, 0 here "
                           "(text-only requests); attention over image tokens omitted")
    if f.has("block_configs"):
        mixers, ffn, kv_heads = _decilm_blocks(f, n_layers, d, where)
        out["decilm_kv_heads"] = kv_heads
    out.update(layer_mixers=tuple(mixers), layer_ffn_dims=tuple(ffn), moe_layers=tuple(moe_mask),
               layer_windows=tuple(w if m == "attention" else 0 for w, m in zip(windows, mixers)))
    if any(m == "none" for m in mixers) and kinds is None:
        assumptions.append(f"{mixers.count('none')} layers without attention (no-op blocks)")
    out["layer_sparsity"] = _sparsity(f, n_layers, attention, where)
    return out


_MOE_PATTERN_FIELDS = ("first_k_dense_replace", "moe_layer_freq", "decoder_sparse_step", "mlp_only_layers",
                       "moe_layers", "interleave_moe_layer_step")


def _mlp_layer_types(f, n_layers: int, moe_mask: list[bool], dense_width: int | None,
                     where: str) -> tuple[list[bool], list[int]]:
    """``mlp_layer_types`` ('dense' / 'sparse' per layer) decides which layers are MoE; when the
    config also sets a pattern field (first_k_dense_replace, ...) the two must agree, else refused
    naming both. A pattern field the config does not set is not checked against (its default is
    not the config's statement)."""
    types = f.get("mlp_layer_types", list)
    table = {"dense": False, "sparse": True, "moe": True}
    if len(types) != n_layers or any(t not in table for t in types):
        raise CatalogError(f"{where}: field 'mlp_layer_types' must list 'dense' or 'sparse' for each of "
                           f"{n_layers} layers")
    mask = [table[t] for t in types]
    given = [k for k in _MOE_PATTERN_FIELDS if f.has(k)]
    if given and mask != moe_mask:
        raise CatalogError(f"{where}: field 'mlp_layer_types' and field '{given[0]}' = {f.config[given[0]]!r} "
                           "disagree on which layers are MoE; fix one of them")
    if any(not m for m in mask) and not dense_width:
        raise CatalogError(f"{where}: mlp_layer_types lists dense layers but 'intermediate_size' is unset")
    return mask, [0 if m else (dense_width or 0) for m in mask]


def _sparsity(f, n_layers: int, attention: Attention, where: str) -> tuple[str, ...] | tuple:
    if not attention.is_sparse:
        return ()
    if f.has("indexer_types"):
        types = f.get("indexer_types", list)
        table = {"full": "indexed", "shared": "shared"}
        if len(types) != n_layers or any(t not in table for t in types):
            raise CatalogError(f"{where}: field 'indexer_types' must list 'full' or 'shared' for each of "
                               f"{n_layers} layers")
        return tuple(table[t] for t in types)
    types = f.config.get("layer_types")
    if isinstance(types, list) and "indexed_attention" in types and len(set(types)) > 1:
        # dots3 (Dots3NoteTextAttention): an indexer only on "indexed_attention" layers; the others are dense
        return tuple("indexed" if t == "indexed_attention" else "dense" for t in types)
    freq = (f.config.get("sparse_attention_config") or {}).get("sparse_attention_freq")
    if freq is not None:
        if not isinstance(freq, list) or len(freq) != n_layers or any(v not in (0, 1) for v in freq):
            raise CatalogError(f"{where}: sparse_attention_config.sparse_attention_freq must list 0 or 1 for each "
                               f"of {n_layers} layers")
        return tuple("indexed" if v else "dense" for v in freq)
    for key in ("index_topk_freq", "index_skip_topk_offset", "index_topk_pattern"):
        if f.has(key):
            raise CatalogError(f"{where}: field '{key}' without 'indexer_types' is not read; give indexer_types")
    return ()


def _gated_deltanet(f, where: str) -> LinearMixer:
    need = ("linear_num_value_heads", "linear_num_key_heads", "linear_key_head_dim", "linear_value_head_dim",
            "linear_conv_kernel_dim")
    v = {k: f.get(k, int, required=True, minimum=1) for k in need}
    return LinearMixer(kind="gated_deltanet", n_heads=v["linear_num_value_heads"],
                       n_key_heads=v["linear_num_key_heads"], key_dim=v["linear_key_head_dim"],
                       value_dim=v["linear_value_head_dim"], conv_kernel=v["linear_conv_kernel_dim"],
                       state_dtype=_state_dtype(f, "mamba_ssm_dtype"))


def _state_dtype(f, key: str) -> str:
    """The recurrent state's format: the config's ``key``, else fp32 (the delta-rule and SSD
    recurrences accumulate in fp32 in the reference kernels)."""
    raw = f.get(key, str, default="float32")
    table = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}
    if raw not in table:
        raise CatalogError(f"{f.where}: field '{key}' = {raw!r} is not one of {', '.join(table)}")
    return table[raw]


def _linear_mixer(f, d: int, where: str) -> LinearMixer:
    """The linear mixer the config's fields describe: lightning attention (MiniMax-01), a short convolution
    (LFM2, ``short_conv_kernel``),
    Mamba-1 (``mamba_dt_rank``), Mamba-2 (``mamba_num_heads``: Nemotron-H, Bamba, GraniteMoeHybrid, whose
    Mamba-2 layers transformers writes as linear_attention) or Gated DeltaNet (Qwen3-Next)."""
    if f.has("rglru_width"):
        heads, width = f.get("num_attention_heads", int, minimum=1), f.get("rglru_width", int, minimum=1)
        if width % heads:
            raise CatalogError(f"{where}: lru_width ({width}) must be a multiple of num_attention_heads ({heads}), "
                               "the RG-LRU gate blocks")
        return LinearMixer(kind="rglru", n_heads=heads, n_key_heads=1, key_dim=1, value_dim=width // heads,
                           conv_kernel=f.get("rglru_conv_width", int, minimum=1), conv_bias=True)
    if f.get("lightning_attention", bool, default=False):
        heads = f.get("num_attention_heads", int, required=True, minimum=1)
        dim = f.get("head_dim", int, default=d // heads, minimum=1)
        return LinearMixer(kind="lightning", n_heads=heads, n_key_heads=heads, key_dim=dim, value_dim=dim,
                           conv_kernel=1)
    if f.has("short_conv_kernel"):
        return LinearMixer(kind="short_conv", n_heads=d, n_key_heads=1, key_dim=1, value_dim=1,
                           conv_kernel=f.get("short_conv_kernel", int, minimum=1),
                           conv_bias=f.get("short_conv_bias", bool, default=False),
                           proj_bias=f.get("short_conv_bias", bool, default=False))
    if f.has("mamba_dt_rank"):
        return LinearMixer(kind="mamba1", n_heads=f.get("mamba_d_inner", int, required=True, minimum=1),
                           n_key_heads=1, key_dim=f.get("ssm_state_size", int, required=True, minimum=1),
                           value_dim=1, conv_kernel=f.get("conv_kernel", int, required=True, minimum=1),
                           conv_bias=f.get("use_conv_bias", bool, default=True),
                           proj_bias=f.get("mamba_proj_bias", bool, default=False),
                           dt_rank=f.get("mamba_dt_rank", int, minimum=1),
                           dt_norms=f.get("mamba_dt_norms", bool, default=False),
                           state_dtype=_state_dtype(f, "mamba_ssm_cache_dtype"))
    if f.has("mamba_num_heads"):
        return _mamba2(f, d, where)
    return _gated_deltanet(f, where)


def _mamba2(f, d: int, where: str) -> LinearMixer:
    heads = f.get("mamba_num_heads", int, required=True, minimum=1)
    head_dim = f.get("mamba_head_dim", int, required=True, minimum=1)
    return LinearMixer(kind="mamba2", n_heads=heads, value_dim=head_dim,
                       n_key_heads=f.get("n_groups", int, required=True, minimum=1),
                       key_dim=f.get("ssm_state_size", int, required=True, minimum=1),
                       conv_kernel=f.get("conv_kernel", int, required=True, minimum=1),
                       conv_bias=f.get("use_conv_bias", bool, default=True),
                       proj_bias=bool(f.get("use_bias", bool, default=False)
                                      or f.get("mamba_proj_bias", bool, default=False)),
                       state_dtype=_state_dtype(f, "mamba_ssm_cache_dtype"))


def _kimi_linear(f, n_layers: int, where: str) -> tuple[list[str], LinearMixer]:
    """Kimi Linear ``linear_attn_config``: ``kda_layers`` and ``full_attn_layers`` are 1-based
    layer numbers (Kimi-Linear-48B-A3B config.json: kda_layers [1, 2, 3, 5, ...], full [4, 8, ...])."""
    cfg = f.get("linear_attn_config", dict)
    kda, full = cfg.get("kda_layers"), cfg.get("full_attn_layers")
    if not isinstance(kda, list) or not isinstance(full, list):
        raise CatalogError(f"{where}: linear_attn_config needs 'kda_layers' and 'full_attn_layers' lists")
    if sorted(kda + full) != list(range(1, n_layers + 1)):
        raise CatalogError(f"{where}: linear_attn_config kda_layers + full_attn_layers must number the layers "
                           f"1..{n_layers} once each")
    for key in ("num_heads", "head_dim", "short_conv_kernel_size"):
        if not isinstance(cfg.get(key), int) or cfg[key] < 1:
            raise CatalogError(f"{where}: linear_attn_config is missing '{key}' (a whole number)")
    kda_set = set(kda)
    mixers = ["linear" if i + 1 in kda_set else "attention" for i in range(n_layers)]
    return mixers, LinearMixer(kind="kda", n_heads=cfg["num_heads"], n_key_heads=cfg["num_heads"],
                               key_dim=cfg["head_dim"], value_dim=cfg["head_dim"],
                               conv_kernel=cfg["short_conv_kernel_size"],
                               full_rank_gates=cfg.get("full_rank_gates") is True)


def _decilm_blocks(f, n_layers: int, d: int, where: str) -> tuple[list[str], list[int], list[int]]:
    """DeciLM / Llama-Nemotron NAS ``block_configs``: per layer, attention is a no-op or GQA with
    n_heads / n_heads_in_group KV heads; the FFN width is ffn_mult·2d/3 rounded up to a multiple of
    256 (nvidia/Llama-3_3-Nemotron-Super-49B-v1 modeling_decilm.py ``_ffn_mult_to_intermediate_size``)."""
    blocks = f.get("block_configs", list)
    if len(blocks) != n_layers:
        raise CatalogError(f"{where}: field 'block_configs' has {len(blocks)} entries for {n_layers} layers")
    mixers, ffn, kv = [], [], []
    for i, b in enumerate(blocks):
        att, mlp = (b or {}).get("attention", {}), (b or {}).get("ffn", {})
        for part, key in ((att, "attention"), (mlp, "ffn")):
            for bad in ("replace_with_linear", "sparsify", "window_length", "num_sink_tokens"):
                if part.get(bad) not in (None, False):
                    raise CatalogError(f"{where}: block_configs[{i}].{key}.{bad} = {part[bad]!r} is not modelled")
        if att.get("no_op"):
            mixers.append("none")
            kv.append(0)
        else:
            group = att.get("n_heads_in_group")
            if not isinstance(group, int) or group < 1:
                raise CatalogError(f"{where}: block_configs[{i}].attention.n_heads_in_group must be a whole number")
            mixers.append("attention")
            kv.append(group)
        if mlp.get("no_op"):
            ffn.append(0)
        else:
            mult = mlp.get("ffn_mult")
            if not isinstance(mult, (int, float)) or mult <= 0:
                raise CatalogError(f"{where}: block_configs[{i}].ffn.ffn_mult must be a positive number")
            width = int(2 * mult * d / 3)
            ffn.append(-(-width // 256) * 256)
    return mixers, ffn, kv


def mtp_layers(f, where: str, assumptions: list[str]) -> int:
    """Multi-token-prediction modules: num_nextn_predict_layers (DeepSeek, GLM, Nemotron-3),
    mtp_num_hidden_layers (Qwen3.5), num_mtp_modules x mtp_transformer_layers when use_mtp (MiniMax)."""
    n = f.first(("num_nextn_predict_layers", "mtp_num_hidden_layers"), int, minimum=0)
    if n is None and f.get("use_mtp", bool, default=False):
        n = (f.get("num_mtp_modules", int, default=0, minimum=0) or 0) * (
            f.get("mtp_transformer_layers", int, default=1, minimum=0) or 0)
    if n:
        assumptions.append(f"{n} multi-token-prediction module(s) counted apart (ParamCounts.mtp), not as decoder "
                           "layers: one full-attention layer with the last layer's FFN, 2 norms and a 2d x d "
                           "projection each (DeepSeek-V3 MTP layout)")
    return n or 0


def layer_attention(f, attention: Attention, structure: dict, where: str) -> tuple[Attention, Attention | None]:
    """(main attention, windowed-layer attention or None). Windowed layers with their own heads:
    MiMo-V2 ``swa_*`` fields; Gemma 4, whose full layers have ``num_global_key_value_heads`` x
    ``global_head_dim`` with K = V (``attention_k_eq_v``) while sliding layers use the base heads;
    DeciLM per-layer KV heads (one value per model is read)."""
    kv = [k for k in structure.get("decilm_kv_heads", []) if k]
    if kv:
        if len(set(kv)) != 1:
            raise CatalogError(f"{where}: block_configs use several n_heads_in_group values {sorted(set(kv))}; "
                               "one per model is read")
        n_kv = attention.n_heads // kv[0]
        return replace(attention, n_kv_heads=n_kv, kind="mqa" if n_kv == 1 else "gqa"), None
    if f.has("swa_num_attention_heads"):
        local = replace(attention, n_heads=f.get("swa_num_attention_heads", int, minimum=1),
                        n_kv_heads=f.get("swa_num_key_value_heads", int, required=True, minimum=1),
                        head_dim=f.get("swa_head_dim", int, default=attention.head_dim, minimum=1),
                        v_head_dim=f.get("swa_v_head_dim", int, default=attention.v_head_dim, minimum=1),
                        kind="gqa", sinks=f.get("add_swa_attention_sink_bias", bool, default=False))
        return replace(attention, sinks=f.get("add_full_attention_sink_bias", bool, default=False)), local
    if f.has("global_head_dim") or f.has("num_global_key_value_heads"):
        dim = f.get("global_head_dim", int, default=attention.head_dim, minimum=1)
        n_kv = f.get("num_global_key_value_heads", int, default=attention.n_kv_heads, minimum=1)
        main = replace(attention, head_dim=dim, v_head_dim=dim, n_kv_heads=n_kv,
                       kind="mqa" if n_kv == 1 else "gqa", k_eq_v=f.get("attention_k_eq_v", bool, default=False))
        return main, attention
    return attention, None


def block_sparse_index(f, where: str, assumptions: list[str]) -> dict:
    """MiniMax-M3 ``sparse_attention_config``: an indexer of ``sparse_num_index_heads`` x
    ``sparse_index_dim`` picks ``sparse_topk_blocks`` blocks of ``sparse_block_size`` tokens plus
    ``sparse_local_block`` local blocks; read as DSA with top-k = (topk + local) x block tokens."""
    cfg = f.get("sparse_attention_config", dict, default=None)
    if not cfg or not cfg.get("use_sparse_attention"):
        return {}
    try:
        block, topk = int(cfg["sparse_block_size"]), int(cfg["sparse_topk_blocks"])
        local = int(cfg.get("sparse_local_block", 0)) + int(cfg.get("sparse_init_block", 0))
        heads, dim = int(cfg["sparse_num_index_heads"]), int(cfg["sparse_index_dim"])
    except (KeyError, TypeError, ValueError) as exc:
        raise CatalogError(f"{where}: sparse_attention_config is missing or mistypes {exc}") from None
    assumptions.append(f"block-sparse attention read as DSA: top-k = ({topk} + {local}) blocks x {block} tokens, "
                       f"indexer {heads} heads x {dim} with its query projected from the hidden state (inferred)")
    return {"index_n_heads": heads, "index_head_dim": dim, "index_topk": (topk + local) * block}
