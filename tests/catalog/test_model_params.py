"""Parameter counts and KV bytes of the catalogue models against published figures and the
hand derivations of shared/reference/models/README.md ("Parameter checks").

Three kinds of check:
- published totals (model cards, tests/published/model_params.toml), one test per catalogue model;
- exact component counts derived by hand in the reference README (integers, no tolerance);
- KV bytes per token: published/derived values and the lecture cases (tests/published/lecture_cases.yaml).
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
import yaml

from llmecon.catalog.models import get_model, model_names
from llmecon.catalog.hf_config import model_from_hf_config

PUBLISHED = Path(__file__).parents[1] / "published"
PARAMS = tomllib.loads((PUBLISHED / "model_params.toml").read_text(encoding="utf-8"))
CASES = {c["name"]: c for c in yaml.safe_load((PUBLISHED / "lecture_cases.yaml").read_text(encoding="utf-8"))[
    "acceptance_cases"]}
FIGURES = ("total", "active", "non_embedding", "embedding")


def test_published_table_covers_every_catalogue_model():
    assert set(PARAMS) == set(model_names())
    assert len(PARAMS) == 34
    for name, entry in PARAMS.items():
        assert entry.get("citation"), name
        assert entry.get("none") or any(k in entry for k in FIGURES), name


def _within_published(ours: float, figure: dict) -> tuple[bool, str]:
    """Tolerance rule: max(1% of the figure, half a unit in its last printed digit), so "7B"
    accepts [6.5B, 7.5B] and "46.7B" accepts 46.7B +- 0.467B. "truncated" figures accept
    [figure, figure + one unit) as well; an explicit `rel` (always with a `why`) replaces the rule."""
    pub, digit = float(figure["published"]), float(figure["digit"])
    if "rel" in figure:
        assert figure.get("why"), "an explicit tolerance needs a reason"
        tol = float(figure["rel"]) * pub
        return abs(ours - pub) <= tol, f"|{ours:.6g} - {pub:.6g}| <= {tol:.3g} (rel {figure['rel']})"
    tol = max(0.01 * pub, digit / 2.0)
    ok = abs(ours - pub) <= tol
    if figure.get("rounding", "nearest") == "truncated":
        assert figure.get("why"), "a truncated reading needs a reason"
        ok = ok or pub <= ours < pub + digit
        return ok, f"{ours:.6g} in [{pub:.6g}, {pub + digit:.6g}) or within {tol:.3g}"
    return ok, f"|{ours:.6g} - {pub:.6g}| <= {tol:.3g}"


@pytest.mark.parametrize("name", sorted(PARAMS))
def test_published_parameter_counts(name):
    """Published total / active / non-embedding counts (model cards; citation per entry in
    tests/published/model_params.toml), compared with ``Model.params`` within
    max(1%, half a unit in the last published digit): a card's "7B" means [6.5B, 7.5B].
    Which ParamCounts attribute a figure is compared with (active with or without the input
    embedding) follows the source's convention, justified per entry in the TOML."""
    entry = PARAMS[name]
    model = get_model(name)
    counts = model.params
    if not model.is_moe:
        # a dense model's card gives one size: every parameter is active
        assert counts.active == counts.total
        assert counts.routed_experts == counts.routed_experts_active == 0
    if entry.get("none") and name != "deepseek-v3.2-exp":
        pytest.skip(f"{name}: {entry['none']}")
    if entry.get("none"):
        # nothing published: total = DeepSeek-V3 + the DSA lightning indexer in each of the 61 layers
        # (reference README: 61·(1536·8192 + 7168·128 + 256 + 7168·64) = 0.85B -> 671.88B)
        indexer = 61 * (1536 * 8192 + 7168 * 128 + 256 + 7168 * 64)
        assert indexer == 851_524_864
        assert counts.total == 671_026_419_200 + indexer
        return
    checked = 0
    for key in FIGURES:
        if key not in entry:
            continue
        figure = entry[key]
        ours = float(getattr(counts, figure["compare"]))
        ok, detail = _within_published(ours, figure)
        assert ok, f"{name} {key} ({entry['citation']}): {detail}"
        checked += 1
    assert checked >= 1


# ---- exact component counts: shared/reference/models/README.md "Parameter checks" ---------------


def test_llama_2_7b_exact():
    """README check 1: attn 4·4096² = 67,108,864; MLP 3·4096·11008 = 135,266,304; norms 8,192 per
    layer; ×32 + 2·32000·4096 + 4,096 = 6,738,415,616."""
    p = get_model("llama-2-7b").params
    assert 4 * 4096**2 == 67_108_864 and 3 * 4096 * 11008 == 135_266_304
    assert p.attention == 32 * 67_108_864
    assert p.dense_ffn == 32 * 135_266_304
    assert p.norms == 32 * 8_192 + 4_096
    assert p.embedding == p.lm_head == 131_072_000
    assert p.total == 6_738_415_616


def test_mixtral_8x7b_exact():
    """README check 2: attn 41,943,040; one expert 3·4096·14336 = 176,160,768; router 32,768;
    layer 1,451,270,144; total ×32 + 262,144,000 + 4,096; active with 2 of 8 experts."""
    m = get_model("mixtral-8x7b")
    p = m.params
    assert m.attention.params_per_layer(4096) == 41_943_040
    assert p.routed_experts == 32 * 8 * 176_160_768
    assert p.routed_experts_active == 32 * 2 * 176_160_768
    assert p.router == 32 * 32_768
    assert 41_943_040 + 8 * 176_160_768 + 32_768 + 8_192 == 1_451_270_144
    assert p.total == 1_451_270_144 * 32 + 262_144_000 + 4_096 == 46_702_792_704
    assert p.active == (41_943_040 + 2 * 176_160_768 + 32_768 + 8_192) * 32 + 262_144_000 + 4_096


def test_qwen3_30b_a3b_exact():
    """README check 3: attn (with q/k norms) 18,874,624; expert 3·2048·768 = 4,718,592; router
    262,144; layer 623,120,640; ×48 + 2·151936·2048 + 2,048."""
    m = get_model("qwen3-30b-a3b")
    p = m.params
    assert m.attention.params_per_layer(2048) == 18_874_624
    assert p.routed_experts == 48 * 128 * 4_718_592
    assert p.router == 48 * 262_144
    assert 18_874_624 + 128 * 4_718_592 + 262_144 + 4_096 == 623_120_640
    assert p.total == 623_120_640 * 48 + 2 * 151936 * 2048 + 2_048 == 30_532_122_624
    assert p.active == (18_874_624 + 8 * 4_718_592 + 262_144 + 4_096) * 48 + 622_329_856 + 2_048
    # "29.9B non-embedding": the 48 layers plus the final norm
    assert p.non_embedding == 29_909_790_720 + 2_048


def test_deepseek_v3_exact():
    """README check 4: MLA 187,107,328 per layer; expert 44,040,192; dense layer 583,483,392 (×3);
    MoE layer 11,507,286,272 (×58, 256 routed + 1 shared + gate + bias + norms); the MTP layer is
    not counted."""
    m = get_model("deepseek-v3")
    p = m.params
    mla = (7168 * 1536 + 1536 + 1536 * 128 * (128 + 64) + 7168 * (512 + 64) + 512
           + 512 * 128 * (128 + 128) + 128 * 128 * 7168)
    assert mla == 187_107_328
    assert m.attention.params_per_layer(7168) == 187_107_328
    assert 3 * 7168 * 2048 == 44_040_192
    assert (m.n_dense_layers, m.n_moe_layers, m.extra_layers_not_counted) == (3, 58, 1)
    assert p.dense_ffn == 3 * 3 * 7168 * 18432
    assert p.routed_experts == 58 * 256 * 44_040_192
    assert p.shared_experts == 58 * 44_040_192
    assert p.router == 58 * (256 * 7168 + 256)
    assert 187_107_328 + 3 * 7168 * 18432 + 2 * 7168 == 583_483_392
    assert 187_107_328 + 257 * 44_040_192 + 256 * 7168 + 256 + 14_336 == 11_507_286_272
    assert p.total == 3 * 583_483_392 + 58 * 11_507_286_272 + 2 * 129280 * 7168 + 7168 == 671_026_419_200
    active = (187_107_328 + 9 * 44_040_192 + 1_835_264 + 14_336) * 58 + 3 * 583_483_392 + 1_853_358_080 + 7_168
    assert p.active == active == 37_552_297_472
    assert p.active_excluding_embedding == active - 129280 * 7168


def test_gpt_oss_120b_exact():
    """README check 5: attention with biases and sinks 26,550,144 per layer; expert with biases
    24,891,840; router 368,768; layer 3,213,080,192; active without the input embedding 5.13B."""
    m = get_model("gpt-oss-120b")
    p = m.params
    attn = (2880 * 4096 + 4096) + 2 * (2880 * 512 + 512) + (4096 * 2880 + 2880) + 64
    assert attn == 26_550_144 == m.attention.params_per_layer(2880)
    assert (2880 * 5760 + 5760) + (2880 * 2880 + 2880) == 24_891_840
    assert p.routed_experts == 36 * 128 * 24_891_840
    assert p.router == 36 * 368_768
    assert 26_550_144 + 128 * 24_891_840 + 368_768 + 5_760 == 3_213_080_192
    assert p.total == 3_213_080_192 * 36 + 2 * 201088 * 2880 + 2_880 == 116_829_156_672
    assert p.active_excluding_embedding == (26_550_144 + 4 * 24_891_840 + 368_768 + 5_760) * 36 \
        + 201088 * 2880 + 2_880 == 5_132_849_472


def test_gpt_oss_20b_same_formula():
    """README: 'Same formula for gpt-oss-20b: 20.91B / 3.61B' (24 layers, 32 experts)."""
    p = get_model("gpt-oss-20b").params
    assert p.total == (26_550_144 + 32 * 24_891_840 + (2880 * 32 + 32) + 5_760) * 24 + 2 * 201088 * 2880 + 2_880
    assert p.active_excluding_embedding == (26_550_144 + 4 * 24_891_840 + (2880 * 32 + 32) + 5_760) * 24 \
        + 201088 * 2880 + 2_880


def test_gemma_3_27b_tied_embedding():
    """README table: tied embedding 262208·5376 = 1.41B counted once; non-embedding 25.60B."""
    p = get_model("gemma-3-27b").params
    assert p.embedding == 262208 * 5376 == 1_409_630_208
    assert p.lm_head == 0
    assert p.head_matmul == 262208 * 5376  # the tied head is still a matmul every token
    assert p.total == p.non_embedding + 1_409_630_208


# ---- KV bytes per token ------------------------------------------------------------------------


def test_kv_bytes_deepseek_v3_mla_bf16():
    """SPEC B7: MLA n_layers·(d_latent + d_rope)·bytes = 61·(512 + 64)·2 = 70,272 B."""
    assert get_model("deepseek-v3").kv_bytes_per_token("bf16") == 61 * (512 + 64) * 2 == 70_272


def test_kv_bytes_llama_3_1_70b_gqa_bf16():
    """SPEC B7/B8: 2·80 layers·8 KV heads·128·2 bytes = 327,680 B (328 GB per 1M-token sequence)."""
    m = get_model("llama-3.1-70b")
    assert m.kv_bytes_per_token() == 2 * 80 * 8 * 128 * 2 == 327_680
    assert float(m.kv_bytes(1_000_000)) == pytest.approx(327.68e9, rel=1e-12)


def _gqa_config(*, layers: int, kv_heads: int, head_dim: int) -> dict:
    heads = 4 * kv_heads
    return {"architectures": ["LlamaForCausalLM"], "hidden_size": heads * head_dim, "num_hidden_layers": layers,
            "num_attention_heads": heads, "num_key_value_heads": kv_heads, "intermediate_size": 256,
            "vocab_size": 1000, "tie_word_embeddings": False, "torch_dtype": "bfloat16"}


KV_DTYPE_BY_BYTES = {1: "fp8", 2: "bf16"}


@pytest.mark.parametrize("case_name", ["gqa_kv_bytes_61_layers_bf16", "gqa_kv_bytes_shared_layer_fp8"])
def test_gqa_kv_bytes_lecture_cases(case_name):
    """lecture_cases.yaml: 2·layers·K·H·bytes through a synthetic config read by
    ``model_from_hf_config`` (61 layers bf16: 249,856 B; one shared fp8 layer: 2,048 B)."""
    case = CASES[case_name]
    i = case["inputs"]
    model = model_from_hf_config(_gqa_config(layers=i["unique_kv_layers"], kv_heads=i["kv_heads"],
                                             head_dim=i["head_dim"]), name=case_name)
    assert model.attention.head_dim == i["head_dim"]
    assert model.attention.kind == "gqa"
    got = model.kv_bytes_per_token(KV_DTYPE_BY_BYTES[i["bytes_per_elem"]])
    assert case["tolerance"] == {"rel": 0.0}
    assert got == case["expected"]["kv_bytes_per_token"]


def test_kv_bytes_hybrid_and_sparse_models():
    """Hand-derived: gpt-oss-120b holds 2·8·64·2 = 2,048 B per layer per token, 18 of 36 layers
    with a 128-token window; DeepSeek-V3.2 adds a 128-dim fp8 indexer key with its fp32 scale per
    layer (132 B, issue 18): 61·(576·2 + 132) = 78,324 B per token at a bf16 latent."""
    oss = get_model("gpt-oss-120b")
    assert oss.kv_bytes_per_token() == 36 * 2048
    assert float(oss.kv_bytes(100_000)) == 18 * 2048 * 100_000 + 18 * 2048 * 128
    v32 = get_model("deepseek-v3.2-exp")
    assert v32.kv_bytes_per_token() == 61 * (576 * 2 + 132) == 78_324
