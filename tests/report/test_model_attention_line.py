"""``llmecon model``'s attention row: a stack without attention layers says so (it printed the placeholder
attention of the spec, "1 heads, head dim 768", for a pure Mamba model)."""

from __future__ import annotations

from llmecon.catalog.hf_config import model_from_hf_config
from llmecon.report.analyze import attention_line, model_dict

MAMBA = {"model_type": "mamba", "hidden_size": 4, "num_hidden_layers": 2, "vocab_size": 10, "intermediate_size": 8,
         "state_size": 2, "time_step_rank": 1, "conv_kernel": 3, "use_conv_bias": True, "use_bias": False,
         "expand": 2, "tie_word_embeddings": True}
LLAMA = {"model_type": "llama", "hidden_size": 8, "num_hidden_layers": 4, "num_attention_heads": 2,
         "num_key_value_heads": 1, "vocab_size": 10, "intermediate_size": 16, "tie_word_embeddings": False}


def test_pure_mamba_has_no_attention_line():
    line = attention_line(model_dict(model_from_hf_config(MAMBA, name="mamba")))
    assert line == "none (no attention layers: linear_mamba1)"
    assert "heads" not in line


def test_attention_line_gives_heads_and_the_attention_layer_count():
    line = attention_line(model_dict(model_from_hf_config(LLAMA, name="llama")))
    assert line == "mqa: 2 heads, 1 KV heads, head dim 4 (4 of 4 layers)"
