"""transformers as the oracle (issue 33): a fast subset of benchmarks/model_oracle.py.

Each model type's default config (``AutoConfig.for_model``) is read by llmecon and built by
transformers on the meta device; parameters must agree within 1%, and the cache a forward on meta
returns (KV elements per token, recurrent + conv state per sequence) must agree within 1%. Needs the
``oracle`` extra (transformers 5.23.0 and torch); skipped without it.
"""

from __future__ import annotations

import functools
import json
import importlib.util
import sys
from pathlib import Path

import pytest

transformers = pytest.importorskip("transformers", reason="the oracle extra (pip install 'llmecon[oracle]') is absent")
pytest.importorskip("torch", reason="the oracle builds models with torch on the meta device")
if transformers.__version__ != "5.23.0":
    pytest.skip(f"the oracle subset is pinned to transformers 5.23.0 (found {transformers.__version__})",
                allow_module_level=True)

_PATH = Path(__file__).resolve().parents[2] / "benchmarks" / "model_oracle.py"
_spec = importlib.util.spec_from_file_location("model_oracle", _PATH)
oracle = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("model_oracle", oracle)  # its dataclasses look their module up
_spec.loader.exec_module(oracle)
_check = functools.cache(oracle.check_type)  # one build per model type in this module


# phi/nanochat: non-gated MLPs; gemma2: 4 norms + windows; qwen3_next: full_attention_interval hybrid; jamba:
# Mamba-1 + MoE by periods/offsets (state compared); mllama: cross-attention layers; opt: family field names and
# learned positions (issue 33)
@pytest.mark.parametrize("model_type", ["phi", "nanochat", "gemma2", "qwen3_next", "jamba", "mllama", "opt"])
def test_default_config_reads_within_one_percent_of_the_meta_device_count(model_type):
    row = _check(model_type)
    assert row.status == "match", (row.status, row.rel, row.note)
    assert abs(row.rel) <= 0.01
    assert row.kv_oracle is not None, row.cache_note
    assert row.kv_llmecon == pytest.approx(row.kv_oracle, rel=0.01)
    if row.state_oracle is not None:
        assert row.state_llmecon == pytest.approx(row.state_oracle, rel=0.01)


def test_qwen3_next_hybrid_cache_matches_transformers():
    """12 full-attention layers hold K and V; 36 Gated DeltaNet layers hold a state (the misread of
    issue 33 counted 48 KV layers and no state)."""
    row = _check("qwen3_next")
    assert row.kv_oracle == 12 * 2 * 2 * 256
    assert row.state_oracle and row.state_llmecon == pytest.approx(row.state_oracle, rel=1e-9)


def test_jamba_mamba1_state_matches_transformers():
    """4 attention layers hold K and V; 28 Mamba-1 layers hold an N-per-channel state and a conv state."""
    row = _check("jamba")
    assert row.kv_oracle == 4 * 2 * 8 * 128
    assert row.state_oracle and row.state_llmecon == pytest.approx(row.state_oracle, rel=1e-9)


def test_a_refusal_names_its_field():
    row = oracle.check_type("rwkv", cache=False)
    assert row.status == "refused" and "attention_hidden_size" in row.note


_HUB = json.loads((Path(__file__).parent / "hub_style_configs.json").read_text())


@pytest.mark.parametrize("name", sorted(k for k in _HUB if not k.startswith("_")))
def test_hub_style_configs_read_as_transformers_builds_them(name):
    """Configs in the form the Hub publishes them (legacy names beside the current ones, training-code keys,
    fields absent that the config class defaults): llmecon's count equals transformers' meta-device count of
    the same dict within 1% (issue 33: configs the reader was not built from)."""
    from llmecon.catalog.hf_config import model_from_hf_config

    raw = _HUB[name]
    cfg = transformers.AutoConfig.for_model(raw["model_type"], **{k: v for k, v in raw.items() if k != "model_type"})
    hf_total, _ = oracle.count_params(oracle.meta_model(cfg))
    ours = model_from_hf_config(raw, name=name).params.total
    assert ours == pytest.approx(hf_total, rel=0.01)


def test_family_tie_defaults_are_transformers_config_defaults():
    """A config that does not state tie_word_embeddings is read with the family's default, which must be what
    transformers' config class defaults to (Falcon's True read as False cost +4.3% on falcon-7b's config)."""
    from llmecon.catalog.hf_families import FAMILIES_BY_TYPE

    wrong = []
    for model_type, facts in sorted(FAMILIES_BY_TYPE.items()):
        try:
            cfg = transformers.AutoConfig.for_model(model_type)
        except Exception:  # a model type this transformers does not build: nothing to compare
            continue
        tie = getattr(cfg, "tie_word_embeddings", None)
        if isinstance(tie, bool) and tie != facts["tie"]:
            wrong.append((model_type, facts["tie"], tie))
    assert not wrong
