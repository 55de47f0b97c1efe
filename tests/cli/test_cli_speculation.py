"""Speculative decoding from the CLI: JSON fields, the table rows, bad input exits 2 naming the flag."""

from __future__ import annotations

import json

import pytest
from cli_run import invoke


def _json(*args):
    code, out = invoke([*args, "--json"])
    assert code == 0, out
    return json.loads(out)


def test_step_mtp_default_acceptance():
    d = _json("step", "-m", "deepseek-v3", "-s", "gb200-nvl72", "-b", "64", "--spec-tokens", "1")
    s = d["speculation"]
    assert s["spec_tokens"] == 1 and s["acceptance"] == [0.85] and s["draft"] == "mtp"
    assert s["tokens_per_step"] == pytest.approx(1.85)
    assert s["plain_tpot_s"] == d["step_s"]
    assert s["tpot_s"] == pytest.approx((s["verify_step_s"] + s["draft_s"]) / 1.85, rel=1e-12)
    assert s["speedup"] > 1


def test_step_without_speculation_is_null():
    assert _json("step", "-m", "llama-3.1-8b", "-s", "h100-sxm")["speculation"] is None


def test_step_draft_model_table():
    code, out = invoke(["step", "-m", "llama-3.1-70b", "-s", "gb200-nvl72", "--tp", "4", "--spec-tokens", "3",
                        "--acceptance", "0.8", "--draft", "llama-3.1-8b"])
    assert code == 0, out
    assert "2.95 tokens per verify step" in out and "TPOT" in out


@pytest.mark.parametrize("args, flag", [
    (["--spec-tokens", "2", "--acceptance", "0.9,0.8,0.7"], "--acceptance"),  # 3 values for 2 positions
    (["--spec-tokens", "-1"], "--spec-tokens"),
    (["--spec-tokens", "1", "--acceptance", "1.5"], "--acceptance"),
    (["--spec-tokens", "1", "--acceptance", "0"], "--acceptance"),
    (["-m", "llama-3.1-8b", "--spec-tokens", "1", "--draft", "llama-3.1-8b"], "--acceptance"),
    (["-m", "llama-3.1-8b", "--spec-tokens", "1", "--acceptance", "0.7"], "--draft"),
])
def test_bad_input_exits_2(args, flag):
    code, out = invoke(["step", *args])
    assert code == 2, out
    assert out.startswith(f"error: {flag}") and "Traceback" not in out


def test_batch_curve_has_spec_columns_and_breakeven():
    d = _json("batch", "-m", "deepseek-v3", "-s", "gb200-nvl72", "-L", "128", "--spec-tokens", "1")
    s = d["speculation"]
    assert s["tokens_per_step"] == pytest.approx(1.85) and s["breakeven_batch"] > 1
    rows = d["curve"]
    below = [r for r in rows if r["batch"] < s["breakeven_batch"]]
    above = [r for r in rows if r["batch"] >= s["breakeven_batch"]]
    assert below and above
    assert all(r["spec_tpot_s"] < r["step_s"] for r in below)
    assert all(r["spec_tpot_s"] >= r["step_s"] for r in above)
    assert _json("batch", "-m", "llama-3.1-8b", "-s", "h100-sxm")["speculation"] is None


def test_cost_output_price_falls_by_the_speedup():
    """$/Mtok out = iteration x chips / (batch x E) x $/chip-s: its ratio to plain decoding's is the
    TPOT speed-up of ``step`` at the same batch; input (prefill) is unchanged."""
    args = ["-m", "deepseek-v3", "-s", "gb200-nvl72", "-b", "64", "--price-per-chip-hour", "2"]
    plain, spec = _json("cost", "--mode", "ideal", *args), _json("cost", "--mode", "ideal", *args, "--spec-tokens", "1")
    step = _json("step", "-m", "deepseek-v3", "-s", "gb200-nvl72", "-b", "64", "--spec-tokens", "1")["speculation"]
    assert plain["output_usd_per_mtok"] / spec["output_usd_per_mtok"] == pytest.approx(step["speedup"], rel=1e-9)
    assert spec["input_usd_per_mtok"] == plain["input_usd_per_mtok"]
    assert spec["tpot_s"] == pytest.approx(step["tpot_s"], rel=1e-12)
    assert spec["speculation"]["spec_tokens"] == 1 and plain["speculation"] is None


def test_calibrated_step_json():
    d = _json("step", "-m", "deepseek-v3", "-s", "gb200-nvl72", "-b", "8", "--spec-tokens", "1", "--mode",
              "calibrated")
    assert d["mode"] == "calibrated" and d["speculation"]["speedup"] > 1


def test_plan_searches_k():
    d = _json("plan", "-m", "deepseek-v3", "--systems", "gb200-nvl72", "--tpot", "5ms", "--max-chips", "72",
              "--spec-tokens", "1", "--mode", "ideal")
    assert d["best"]["decode"]["spec_tokens"] == 1 and d["best"]["decode"]["tokens_per_step"] == pytest.approx(1.85)
    assert [s["spec_tokens"] for s in d["speculation_searched"]] == [1]
    assert "spec_tokens" in d["frontier"][0]
    code, out = invoke(["plan", "--systems", "gb200-nvl72", "--spec-tokens", "2", "--acceptance", "0.9,0.8,0.7"])
    assert code == 2 and out.startswith("error: --acceptance"), out


def test_simulate_with_speculation():
    base = ["simulate", "--requests", "60", "--rate", "20", "--prompt", "512", "--output", "48", "--drain"]
    plain = _json(*base)
    spec = _json(*base, "--spec-tokens", "1")
    assert plain["speculation"] is None
    assert spec["speculation"]["tokens_per_step"] == pytest.approx(1.85)  # DeepSeek-V3's published 0.85
    assert spec["tpot_p50_s"] < plain["tpot_p50_s"] and spec["completed"] == plain["completed"] == 60
    code, out = invoke([*base, "--spec-tokens", "1"])
    assert code == 0 and "1.85 tokens per verify iteration" in out


@pytest.mark.parametrize("args, flag", [
    (["--spec-tokens", "1", "--policy", "train"], "--spec-tokens"),
    (["--spec-tokens", "1", "--chunk-tokens", "1024"], "--spec-tokens"),
    (["--spec-tokens", "1", "--acceptance", "0.8", "--draft", "no-such-model"], "--draft"),
    (["--spec-tokens", "2", "--acceptance", "0.9,0.8,0.7"], "--acceptance"),
])
def test_simulate_bad_speculation_exits_2(args, flag):
    code, out = invoke(["simulate", "--requests", "10", *args])
    assert code == 2, out
    assert out.startswith(f"error: {flag}") and "Traceback" not in out


def test_deep_draft_on_the_default_model_needs_no_acceptance():
    """Issue 34: `--spec-tokens 3` on the default model used to ask for three acceptance values; the default
    now decays from DeepSeek-V3's published 0.85: (0.85, 0.595, 0.4165), E = 2.566394875 (by hand in
    tests/spec/test_speculation.py)."""
    d = _json("step", "--spec-tokens", "3")["speculation"]
    assert d["acceptance"] == pytest.approx([0.85, 0.595, 0.4165], rel=1e-12)
    assert d["tokens_per_step"] == pytest.approx(2.566394875, rel=1e-12) and "fitted" in d["acceptance_source"]
