"""predict columns spec_tokens, acceptance (empty = the model family's default) and draft: E by hand,
the same numbers as ``step --spec-tokens``, plain rows unchanged, bad rows naming line and column."""

from __future__ import annotations

import pytest

from llmecon.errors import LlmeconError
from llmecon.fidelity.predict import parse_cases, predict_cases

HEAD = "id,model,system,phase,batch,context,tp,ep,adp,spec_tokens,acceptance,draft\n"
ROWS = ("a,deepseek-v3,gb200-nvl72,decode,64,4096,2,4,4,,,\n"
        "b,deepseek-v3,gb200-nvl72,decode,64,4096,2,4,4,1,,\n"
        "c,deepseek-v3,gb200-nvl72,decode,64,4096,2,4,4,2,0.9;0.8,\n")


@pytest.mark.parametrize("mode", ["ideal", "calibrated"])
def test_spec_columns(mode):
    a, b, c = predict_cases(parse_cases(HEAD + ROWS), mode=mode)
    assert a["tokens_per_step"] == "" and a["tpot_s"] == ""
    assert b["tokens_per_step"] == pytest.approx(1.85)            # DeepSeek-V3's published 0.85, k = 1
    assert c["tokens_per_step"] == pytest.approx(1 + 0.9 + 0.72)  # 2.62
    for r in (b, c):
        assert r["tpot_s"] == pytest.approx(r["step_s"] / r["tokens_per_step"], rel=1e-12)
        assert r["tokens_per_s"] == pytest.approx(64 * r["tokens_per_step"] / r["step_s"], rel=1e-12)
        assert r["tpot_s"] < a["step_s"]


def test_deep_draft_takes_the_decaying_default():
    """k = 3 with no acceptance (refused before issue 34): 0.85, 0.85·0.7, 0.85·0.7² per position,
    E = 2.566394875 by hand (tests/spec/test_speculation.py)."""
    (r,) = predict_cases(parse_cases(HEAD + "x,deepseek-v3,gb200-nvl72,decode,64,4096,2,4,4,3,,\n"))
    assert r["tokens_per_step"] == pytest.approx(2.566394875, rel=1e-12)


@pytest.mark.parametrize("row, words", [
    ("x,deepseek-v3,gb200-nvl72,decode,64,4096,2,4,4,3,0.9;0.8,\n", "acceptance"),  # 2 values for k 3
    ("x,deepseek-v3,gb200-nvl72,decode,64,4096,2,4,4,1,1.5,\n", "acceptance"),
    ("x,deepseek-v3,gb200-nvl72,decode,64,4096,2,4,4,,0.8,\n", "acceptance"),
    ("x,deepseek-v3,gb200-nvl72,decode,64,4096,2,4,4,1.5,,\n", "spec_tokens"),
])
def test_bad_rows(row, words):
    with pytest.raises(LlmeconError) as err:
        predict_cases(parse_cases(HEAD + row))
    assert "line 2" in str(err.value) and words in str(err.value)
