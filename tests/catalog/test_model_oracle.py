"""transformers as the oracle (issue 33): a fast subset of benchmarks/model_oracle.py.

Each model type's default config (``AutoConfig.for_model``) is read by llmecon and built by
transformers on the meta device; parameters must agree within 1%, and the cache a forward on meta
returns (KV elements per token, recurrent + conv state per sequence) must agree within 1%. Needs the
``oracle`` extra (transformers 5.23.0 and torch); skipped without it.
"""

from __future__ import annotations

import functools
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
