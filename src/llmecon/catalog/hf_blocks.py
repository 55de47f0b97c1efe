"""Attention, MoE and window blocks of a Hugging Face config (``hf_config``)."""

from __future__ import annotations

from ..errors import CatalogError, SpecError
from ..spec.model import Attention, MoE
from .hf_fields import Fields
from .hf_layers import block_sparse_index



def attention_block(f: Fields, family: dict, defaults: dict, d: int, n_heads: int, n_layers: int, where: str,
                    assumptions: list[str]) -> Attention:
    bias = f.get("attention_bias", bool)
    qkv_bias = family.get("qkv_bias", False) if bias is None else bias
    for key in ("qkv_bias", "use_qkv_bias"):  # StableLM: use_qkv_bias
        if f.has(key):
            qkv_bias = f.get(key, bool)
    o_bias = family.get("o_bias", False) if bias is None else (bias and family.get("o_bias", True))
    if family.get("o_bias_always"):  # RecurrentGemma: o_proj has a bias whatever attention_bias says
        o_bias = True
    if f.has("attention_out_bias"):  # Seed-OSS: the output projection's bias apart from q, k, v
        o_bias = f.get("attention_out_bias", bool)
    qk_field = family.get("qk_norm_field")
    if qk_field:
        qk_norm = f.get(qk_field, bool, default=defaults.get(qk_field, False))
    else:
        qk_norm = family.get("qk_norm", False) or bool(f.get("qk_layernorm", bool, default=False))
    common = {"qkv_bias": qkv_bias, "o_bias": o_bias, "qk_norm": qk_norm, "sinks": family.get("sinks", False)}
    if f.has("kv_lora_rank"):
        nope = f.get("qk_nope_head_dim", int, required=True, minimum=0)
        rope = f.get("qk_rope_head_dim", int, required=True, minimum=0)
        v = f.get("v_head_dim", int, required=True, minimum=1)
        index = {}
        if f.has("index_topk"):
            index = {"index_n_heads": f.get("index_n_heads", int, required=True, minimum=1),
                     "index_head_dim": f.get("index_head_dim", int, required=True, minimum=1),
                     "index_topk": f.get("index_topk", int, required=True, minimum=1)}
        if f.has("qk_head_dim") and f.get("qk_head_dim", int) != nope + rope:
            raise CatalogError(f"{where}: qk_head_dim ({f.get('qk_head_dim', int)}) must equal qk_nope_head_dim + "
                               f"qk_rope_head_dim ({nope + rope})")
        return Attention(kind="mla", n_heads=n_heads, n_kv_heads=1, head_dim=nope + rope, v_head_dim=v,
                         q_lora_rank=f.get("q_lora_rank", int, default=0, minimum=0) or 0,
                         kv_lora_rank=f.get("kv_lora_rank", int, minimum=1), qk_rope_head_dim=rope,
                         output_gate=f.get("mla_use_output_gate", bool, default=False),
                         **index, **{**common, "qkv_bias": False, "o_bias": False, "qk_norm": False})
    n_kv = 1 if f.get("multi_query", bool, default=False) else f.get("num_key_value_heads", int, default=n_heads,
                                                                        minimum=1)
    if n_heads % n_kv:
        raise SpecError(f"{where}: num_attention_heads ({n_heads}) is not divisible by num_key_value_heads "
                        f"({n_kv}); fix one of them")
    head_dim = f.get("head_dim", int, minimum=1)
    if head_dim is None:
        head_dim = d // n_heads
        if d % n_heads:
            # transformers' attention modules take head_dim = hidden_size // num_attention_heads when the config
            # has none (e.g. Glm4MoeAttention: 4096 // 96 = 42, q_proj 4096 -> 96·42): the floor, not an error
            assumptions.append(f"head_dim absent and hidden_size ({d}) not divisible by num_attention_heads "
                               f"({n_heads}): head_dim = {head_dim} (floor, as transformers' attention modules)")
    kind = "mha" if n_kv == n_heads else ("mqa" if n_kv == 1 else "gqa")
    # Qwen3-Next / Qwen3.5 attention always gates its output (q_proj emits query and gate,
    # transformers Qwen3NextAttention): a family fact, the config fields can only confirm it.
    gate = bool(f.get("attn_output_gate", bool, default=family.get("output_gate", False))
                or f.get("attention_output_gate", bool, default=False)) or _laguna_gate(f, n_heads, d, where,
                                                                                         assumptions)
    return Attention(kind=kind, n_heads=n_heads, n_kv_heads=n_kv, head_dim=head_dim, output_gate=gate,
                     v_head_dim=f.get("v_head_dim", int, default=head_dim, minimum=1),
                     **block_sparse_index(f, where, assumptions), **common)


def _laguna_gate(f: Fields, n_heads: int, d: int, where: str, assumptions: list[str]) -> bool:
    """Laguna ``gating`` (LagunaAttention.g_proj): "per-element" gates each of the N·H output channels
    (a d x N·H projection, read as an output gate); True / "per-head" gates each head (d x N: its
    weights, 0.01-0.1% of a layer, and FLOPs are omitted and stated)."""
    if not f.has("gating"):
        return False
    gating = f.get("gating", (bool, str))
    if gating == "per-element":
        return True
    if gating is True or gating == "per-head":
        assumptions.append(f"gating {gating!r}: a per-head output gate (d x {n_heads} per layer) is omitted")
        return False
    if gating is False:
        return False
    raise CatalogError(f"{where}: field 'gating' = {gating!r} is not true, false, 'per-head' or 'per-element'")


def moe_block(f: Fields, family: dict, defaults: dict, n_layers: int, where: str,
              assumptions: list[str]) -> tuple[MoE | None, list[bool]]:
    n_routed = f.first(("n_routed_experts", "num_local_experts", "num_experts"), int, minimum=0)
    if not n_routed or f.get("enable_moe_block", bool, default=True) is False:
        return None, [False] * n_layers
    top_k = f.first(("num_experts_per_tok", "experts_per_token", "num_experts_per_token", "top_k_experts"), int,
                    minimum=1)
    if top_k is None:
        raise CatalogError(f"{where}: MoE config ({n_routed} experts) is missing 'num_experts_per_tok'")
    width = f.first(("moe_intermediate_size", "intermediate_size"), int, minimum=1)
    if width is None:
        raise CatalogError(f"{where}: MoE config is missing 'moe_intermediate_size' or 'intermediate_size'")
    n_shared = f.first(("n_shared_experts", "num_shared_experts"), int, minimum=0)
    shared_width = f.first(("shared_expert_intermediate_size", "moe_shared_expert_intermediate_size",
                            "shared_intermediate_size", "share_expert_dim"), int, minimum=0)
    if shared_width == 0:  # Qwen3-Coder-480B: shared_expert_intermediate_size 0 = no shared expert
        n_shared, shared_width = 0, 0
    elif n_shared is None and shared_width:
        n_shared = 1
    shared_width = shared_width or 0
    if n_shared is None:
        n_shared = family.get("shared_experts", 0)
        if n_shared:
            assumptions.append(f"{n_shared} always-on shared expert per MoE layer (hard-coded in the modeling "
                               "code, no config field)")
    router_bias = (family.get("router_bias", False) or f.get("topk_method", str, default="") == "noaux_tc"
                   or f.get("use_routing_bias", bool, default=False)
                   or f.get("use_moe_router_bias", bool, default=False))
    latent = f.first(("moe_latent_size", "routed_expert_hidden_size"), int, minimum=1) or 0
    moe = MoE(n_routed=n_routed, top_k=top_k, expert_ffn_dim=width, n_shared=n_shared, shared_ffn_dim=shared_width,
              router_bias=router_bias, expert_bias=family.get("expert_bias", False), latent_dim=latent,
              latent_norm=bool(latent and f.get("latent_moe_use_norm", bool, default=False)))
    return moe, _moe_mask(f, defaults, n_layers, where, assumptions)


def _moe_mask(f: Fields, defaults: dict, n_layers: int, where: str, assumptions: list[str]) -> list[bool]:
    if isinstance(f.config.get("moe_layer_freq"), list):
        return [True] * n_layers  # a per-layer list: read by hf_layers.read_structure
    if f.has("first_k_dense_replace") or f.has("moe_layer_freq"):
        # DeepSeek modeling: MoE iff layer >= first_k_dense_replace and layer % moe_layer_freq == 0
        first = f.get("first_k_dense_replace", int, default=0, minimum=0)
        freq = f.get("moe_layer_freq", int, default=1, minimum=1)
        return [i >= first and i % freq == 0 for i in range(n_layers)]
    if f.has("decoder_sparse_step") or f.has("mlp_only_layers"):
        # Qwen-MoE modeling: MoE iff layer not in mlp_only_layers and (layer + 1) % step == 0
        step = f.get("decoder_sparse_step", int, default=1, minimum=1)
        only = set(f.get("mlp_only_layers", list, default=[]))
        return [i not in only and (i + 1) % step == 0 for i in range(n_layers)]
    if f.has("moe_layer_start_index") or f.has("moe_layer_end_index") or f.has("moe_layer_interval"):
        # Ernie 4.5 MoE (Ernie4_5_MoeDecoderLayer): MoE iff start <= layer <= end and (layer + 1) % interval == 0
        start = f.get("moe_layer_start_index", int, default=0, minimum=0)
        end = f.get("moe_layer_end_index", int, default=n_layers - 1)
        end = n_layers - 1 if end < 0 else end
        step = f.get("moe_layer_interval", int, default=1, minimum=1)
        return [start <= i <= end and (i + 1) % step == 0 for i in range(n_layers)]
    if f.has("moe_layers"):
        layers = f.get("moe_layers", list)
        if not all(isinstance(i, int) and 0 <= i < n_layers for i in layers):
            raise CatalogError(f"{where}: field 'moe_layers' must list layer indices in 0..{n_layers - 1}")
        return [i in set(layers) for i in range(n_layers)]
    if f.has("interleave_moe_layer_step") or "interleave_moe_layer_step" in defaults:
        step = f.get("interleave_moe_layer_step", int, default=defaults.get("interleave_moe_layer_step", 1), minimum=1)
        # Llama 4: moe_layers = range(step - 1, L, step) when absent
        if step > 1:
            assumptions.append(f"moe_layers absent: every {step}th layer is MoE (transformers Llama4 default)")
        return [(i + 1) % step == 0 for i in range(n_layers)]
    return [True] * n_layers


def windows(f: Fields, family: dict, defaults: dict, n_layers: int, where: str,
            assumptions: list[str]) -> list[int]:
    window = f.get("sliding_window", int, minimum=0) or None  # 0: no window (Qwen2-MoE default)
    if f.has("index_topk_blocks") and not f.has("layer_types"):
        raise CatalogError(f"{where}: index_topk_blocks (MiniMax-M3 block-sparse layers) without layer_types: which "
                           "layers are sparse is not stated; add layer_types")
    if f.has("layer_types"):
        types = f.get("layer_types", list)
        if len(types) != n_layers:
            raise CatalogError(f"{where}: field 'layer_types' has {len(types)} entries for {n_layers} layers")
        out = []
        for i, t in enumerate(types):
            if t == "full_attention":
                out.append(0)
            elif t == "sliding_attention":
                if window is None:
                    raise CatalogError(f"{where}: layer_types[{i}] is sliding_attention but 'sliding_window' is unset")
                out.append(window)
            elif t in ("linear_attention", "deepseek_sparse_attention", "indexed_attention"):
                out.append(0)  # linear layers hold no window; DSA layers attend the full context
            elif t == "chunked_attention":
                out.append(f.get("attention_chunk_size", int, required=True, minimum=1))
            else:
                raise CatalogError(f"{where}: layer_types[{i}] = {t!r} is not full_attention, sliding_attention, "
                                   "chunked_attention, linear_attention, deepseek_sparse_attention or "
                                   "indexed_attention")
        return out
    if f.has("hybrid_layer_pattern"):
        # MiMo-V2: 1 = sliding-window layer (its own swa_* heads), 0 = full attention
        pattern = f.get("hybrid_layer_pattern", list)
        if len(pattern) != n_layers or any(p not in (0, 1) for p in pattern):
            raise CatalogError(f"{where}: field 'hybrid_layer_pattern' must list 0 or 1 for each of {n_layers} layers")
        size = f.first(("sliding_window_size", "sliding_window"), int, minimum=1)
        if size is None and any(pattern):
            raise CatalogError(f"{where}: hybrid_layer_pattern marks sliding layers but 'sliding_window' is unset")
        return [size if p else 0 for p in pattern]
    if f.has("attention_chunk_size"):
        # Llama 4 iRoPE: RoPE layers use chunked local attention; every no_rope_layer_interval-th
        # layer is a global NoPE layer. KV held is bounded by the chunk (an upper bound: a chunk
        # restarts at its boundary, so on average half is attended).
        chunk = f.get("attention_chunk_size", int, minimum=1)
        interval = f.get("no_rope_layer_interval", int, default=defaults.get("no_rope_layer_interval", 4), minimum=1)
        if not f.has("no_rope_layer_interval"):
            assumptions.append(f"no_rope_layer_interval absent: every {interval}th layer is global (NoPE), "
                               f"the rest chunked-local ({chunk}) (transformers default)")
        return [0 if (i + 1) % interval == 0 else chunk for i in range(n_layers)]
    if window is None or f.get("use_sliding_window", bool, default=True) is False:
        return [0] * n_layers
    pattern = f.get("sliding_window_pattern", int, minimum=1)
    if pattern is None and "sliding_window_pattern" in defaults:
        pattern = defaults["sliding_window_pattern"]
        assumptions.append(f"sliding_window_pattern absent: every {pattern}th layer is global "
                           "(transformers default)")
    if pattern:
        return [0 if (i + 1) % pattern == 0 else window for i in range(n_layers)]
    return [window] * n_layers
