"""DeepSeek-V4 configs (``DeepseekV4ForCausalLM``, ``model_type`` deepseek_v4 / deepseek_ref).

What each field is taken to mean (shapes and sources: ``spec/compressed.py``; the list of
inferences: docs/assumptions.md, "DeepSeek-V4"):

- ``head_dim`` with ``num_key_value_heads`` 1: one shared KV head of ``head_dim`` (rope dims
  ``qk_rope_head_dim`` inside it) that serves as key and value (MQA, K = V); queries through a
  ``q_lora_rank`` LoRA; the output through ``o_groups`` groups of rank ``o_lora_rank``; a sink per head.
- ``compress_ratios``: one entry per decoder layer, then one per MTP module: 0 = the layer attends
  only its ``sliding_window`` of raw tokens; 4 (CSA) and 128 (HCA) = it also caches one pooled entry
  per 4 / 128 tokens; CSA layers carry the indexer (``index_*``: top-``index_topk`` of the compressed
  entries), HCA layers attend every compressed entry.
- ``hc_mult``: residual stream of hc_mult copies of d (mHC), ``num_hash_layers``: the first MoE
  layers route by a token-id table, ``expert_dtype`` fp4: routed experts in MXFP4.
"""

from __future__ import annotations

from dataclasses import replace

from ..errors import CatalogError
from ..spec.layers import Attention, MoE
from ..spec.model import COMPRESS_RATIOS


def is_dsv4(f) -> bool:
    return f.has("compress_ratios")


def attention(f, d: int, n_heads: int, where: str, assumptions: list[str]) -> Attention:
    """The V4 attention block (one spec for every layer; compression is per layer)."""
    need = ("head_dim", "qk_rope_head_dim", "q_lora_rank", "o_lora_rank", "o_groups", "index_n_heads",
            "index_head_dim", "index_topk", "sliding_window")
    v = {k: f.get(k, int, required=True, minimum=1) for k in need}
    if f.get("num_key_value_heads", int, default=1) != 1:
        raise CatalogError(f"{where}: DeepSeek-V4 attention has one shared KV head; num_key_value_heads = "
                           f"{f.get('num_key_value_heads', int)} is not modelled")
    if v["qk_rope_head_dim"] >= v["head_dim"] or n_heads % v["o_groups"]:
        raise CatalogError(f"{where}: qk_rope_head_dim must be < head_dim and o_groups must divide "
                           f"num_attention_heads ({n_heads})")
    if f.get("attention_bias", bool, default=False):
        raise CatalogError(f"{where}: attention_bias true is not modelled for DeepSeek-V4")
    assumptions.append(
        f"DeepSeek-V4 attention (inferred from SGLang's deepseek_v4.py, spec/compressed.py): one K = V head "
        f"of {v['head_dim']} incl. {v['qk_rope_head_dim']} rope dims, q LoRA {v['q_lora_rank']}, output in "
        f"{v['o_groups']} groups of rank {v['o_lora_rank']} (wo_a {n_heads}·{v['head_dim']}·{v['o_lora_rank']}, "
        f"wo_b {v['o_groups'] * v['o_lora_rank']}·{d}), one sink per head")
    return Attention(kind="mqa", n_heads=n_heads, n_kv_heads=1, head_dim=v["head_dim"], v_head_dim=v["head_dim"],
                     k_eq_v=True, sinks=True, q_lora_rank=v["q_lora_rank"], qk_rope_head_dim=v["qk_rope_head_dim"],
                     o_lora_rank=v["o_lora_rank"], o_groups=v["o_groups"], compressed_kv=True,
                     index_n_heads=v["index_n_heads"], index_head_dim=v["index_head_dim"],
                     index_topk=v["index_topk"])


def structure(f, *, n_layers: int, n_mtp: int, att: Attention, moe: MoE | None, where: str,
              assumptions: list[str]) -> tuple[dict, MoE | None]:
    """(per-layer Model fields, MoE with its hash layers) of a V4 config."""
    ratios = f.get("compress_ratios", list)
    if not all(isinstance(r, int) and not isinstance(r, bool) for r in ratios) or len(ratios) not in (
            n_layers, n_layers + n_mtp):
        raise CatalogError(f"{where}: field 'compress_ratios' must list a whole number for each of the {n_layers} "
                           f"layers (and the {n_mtp} MTP modules), got {len(ratios)} entries")
    for i, r in enumerate(ratios):
        if r not in COMPRESS_RATIOS:
            raise CatalogError(f"{where}: compress_ratios[{i}] = {r} is not one of {COMPRESS_RATIOS}")
    if any(ratios[n_layers:]):
        raise CatalogError(f"{where}: a compressed MTP module (compress_ratios[{n_layers}:] = {ratios[n_layers:]}) "
                           "is not modelled; only 0 is read there")
    layer = tuple(ratios[:n_layers])
    window = f.get("sliding_window", int, required=True, minimum=1)
    hc = f.get("hc_mult", int, default=1, minimum=1)
    counts = {r: layer.count(r) for r in COMPRESS_RATIOS}
    assumptions.append(
        f"DeepSeek-V4 layers: {counts[0]} attend only a {window}-token window, {counts[4]} also cache 1 entry per "
        f"4 tokens and attend the indexer's top-{att.index_topk} of them (CSA: indexer on ratio-4 layers only, "
        f"as SGLang's C4Indexer and aiconfigurator's dsv4_csa tables), {counts[128]} also cache and attend 1 "
        f"entry per 128 tokens (HCA, no indexer); KV held per layer min(L, {window}) + L/r entries, the "
        "pooled entry in progress held in a constant fp32 compressor state; the MTP module's entry "
        f"({ratios[n_layers:] or 'absent'}) is uncompressed")
    assumptions.append("KV cache at fp8 by default (DeepSeek's V4 layout: 448 nope dims fp8 + 8 scale bytes + "
                       "64 rope dims bf16 = 584 B per entry; every V4 kernel aiconfigurator measured uses an fp8 "
                       "cache), indexer keys fp8 + one fp32 scale per 128 (SGLang's default, not its FP4 option)")
    out = {"layer_compress": layer, "layer_windows": (window,) * n_layers,
           "layer_sparsity": tuple("indexed" if r == 4 else "dense" for r in layer),
           "hyper_connections": hc, "kv_dtype": "fp8"}
    if hc > 1:
        assumptions.append(f"hc_mult {hc}: manifold-constrained hyper-connections, a residual stream of {hc}·d; "
                           f"their mixing maps ({(2 + hc) * hc} x {hc}·d per attention and FFN site, fp32 in the "
                           "checkpoint, counted at the weight format) are parameters; the Sinkhorn iterations, "
                           "the stream mixing and the wider residual's activation traffic are omitted")
    hash_layers = f.get("num_hash_layers", int, default=0, minimum=0) or 0
    if moe is not None and hash_layers:
        moe = replace(moe, hash_layers=hash_layers)
        assumptions.append(f"num_hash_layers {hash_layers}: the first {hash_layers} MoE layers pick experts from a "
                           "token-id table (SGLang HashTopK): the gate still scores them (router FLOPs kept), no "
                           "router bias; the vocab x top-k int32 table is not counted as weights")
    return out, moe
