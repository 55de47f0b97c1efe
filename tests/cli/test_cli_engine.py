"""--engine on every command that chooses a profile, the engine column of ``predict``, ``engine`` in the web
schemas (issue 34 item 1): the chip x engine profile is used and named; bad input is one line (exit 2) / 422."""

from __future__ import annotations

import pytest

from cli_run import invoke, invoke_fails, invoke_json

DEP = ("--model", "llama-3.1-70b", "--system", "hgx-h100", "--tp", "8")


@pytest.mark.parametrize("command", [("step", "--batch", "8"), ("analyze",), ("cost", "--price-per-chip-hour", "2"),
                                     ("context",), ("batch",), ("simulate", "--requests", "20")])
def test_engine_picks_the_chip_engine_profile(command):
    got = invoke_json(*command, *DEP, "--engine", "vllm")
    text = str(got)
    assert "h100-sxm/vllm" in text and "calibrated" in text


def test_cache_and_moe_take_the_engine():
    invoke_json("cache", *DEP, "--engine", "vllm", "--price-per-chip-hour", "2")
    got = invoke_json("moe", "--model", "deepseek-v3", "--system", "gb200-nvl72", "--engine", "sglang")
    assert "gb200/sglang" in str(got)


def test_engine_changes_the_answer_and_the_default_engine_is_the_chip_default():
    vllm = invoke_json("step", *DEP, "--batch", "8", "--engine", "vllm")
    trt = invoke_json("step", *DEP, "--batch", "8", "--engine", "trtllm")
    default = invoke_json("step", *DEP, "--batch", "8", "--mode", "calibrated")
    assert (vllm["profile"], trt["profile"], default["profile"]) == ("h100-sxm/vllm", "h100-sxm/trtllm", "h100-sxm")
    assert vllm["step_s"] != trt["step_s"]


def test_an_engine_without_data_on_the_chip_is_transferred_and_says_so():
    got = invoke_json("step", "--model", "llama-3.1-70b", "--system", "mi300x-8", "--tp", "8", "--engine", "sglang")
    assert got["transferred"] is True and got["profile"] == "mi300x/sglang (transferred)"
    assert got["transfer_method"] == "pooled" and got["expected_error"]["tpot_median"] > 0


def test_plan_takes_the_engine_per_system():
    code, text = invoke(["plan", "--model", "llama-3.1-8b", "--systems", "hgx-h100", "--engine", "sglang",
                         "--tpot", "50ms", "--ttft", "2s"])
    assert code == 0, text
    assert "h100-sxm/sglang" in text


@pytest.mark.parametrize("args, words", [
    (("--engine", "atom"), "--engine atom: no chip has a measured profile for this engine"),
    (("--engine", "vlm"), "did you mean 'vllm'"),
    (("--engine", "vllm", "--profile", "h100-sxm/vllm"), "give --engine or --profile, not both"),
])
def test_bad_engine_is_one_line(args, words):
    assert words in invoke_fails("step", *DEP, *args)


def test_predict_engine_column_and_flag(tmp_path):
    cases = tmp_path / "cases.csv"
    cases.write_text("model,system,phase,batch,prompt_tokens,output_tokens,tp,engine\n"
                     "llama-3.1-70b,hgx-h100,serving,4,1024,256,8,vllm\n"
                     "llama-3.1-70b,hgx-h100,serving,4,1024,256,8,\n"
                     "llama-3.1-70b,mi300x-8,serving,4,1024,256,8,sglang\n")
    rows = invoke_json("predict", str(cases))["rows"]
    assert [(r["engine"], r["mode"], r["profile"]) for r in rows] == [
        ("vllm", "calibrated", "h100-sxm/vllm"), (None, "ideal", "ideal"),  # an empty cell is null in --json
        ("sglang", "calibrated", "mi300x/sglang (transferred)")]
    assert rows[2]["transferred"] is True and float(rows[2]["expected_tpot_error"]) > 0
    flagged = invoke_json("predict", str(cases), "--engine", "trtllm")["rows"]
    assert [r["profile"] for r in flagged] == ["h100-sxm/vllm", "h100-sxm/trtllm", "mi300x/sglang (transferred)"]
    cases.write_text("model,system,phase,batch,prompt_tokens,output_tokens,tp,engine\n"
                     "llama-3.1-70b,hgx-h100,serving,4,1024,256,8,atom\n")
    line = invoke_fails("predict", str(cases))
    assert "line 2 engine atom" in line and "sglang, trtllm, vllm" in line


def test_web_engine_field():
    pytest.importorskip("fastapi")
    pytest.importorskip("httpx")
    from fastapi.testclient import TestClient

    from llmecon.web.app import create_app

    client = TestClient(create_app())
    body = {"model": "llama-3.1-70b", "system": "hgx-h100", "tp": 8, "batch": 8}
    ok = client.post("/api/step", json={**body, "engine": "sglang"})
    assert ok.status_code == 200, ok.text
    assert ok.json()["profile"] == "h100-sxm/sglang"
    bad = client.post("/api/step", json={**body, "engine": "atom"})
    assert bad.status_code == 422 and bad.json()["detail"][0]["loc"][-1] == "engine"
