"""The aiconfigurator silicon-row loader (issue 21 step 2b): mapping of model, system, engine,
precision and parallelism into predict cases; hand-written rows, configs copied from the catalogue."""

from __future__ import annotations

import shutil
from importlib import resources

import numpy as np
import pytest

from llmecon.errors import CatalogError
from llmecon.fidelity.silicon import parse_silicon, predict_silicon

HEAD = ("id,backend,model_path,system,precision,mode,isl,osl,gemm_quant_mode,batch_size,tp_size,pp_size,"
        "attention_dp_size,moe_tp_size,moe_ep_size,silicon_ttft_ms,silicon_tpot_ms\n")
ROWS = [
    "a,trtllm,Qwen/Qwen3-32B,h200_sxm,fp8,agg,1024,256,fp8,8,2,1,,1,1,80.5,9.25",
    "b,sglang,Qwen/Qwen3-30B-A3B,b200_sxm,fp4,agg,4096,512,nvfp4,64,1,1,8,1,8,300,12",
    "c,vllm,Qwen/Qwen3-30B-A3B,gb200,bf16,agg,1024,1024,,4,8,1,1,1,8,50,5",
    "d,trtllm,Qwen/Qwen3-32B,b300_sxm,fp8,disagg,1024,256,fp8,8,,,,,,80,9",
    "e,vllm,nvidia/Qwen3-32B-NVFP4,h100_sxm,fp4,agg,1024,256,nvfp4,8,1,1,1,1,1,80,9",
    "f,vllm,Qwen/Qwen3-30B-A3B,h100_sxm,fp8,agg,1024,256,fp8,8,4,1,1,1,2,80,9",
    "g,sglang,Qwen/Qwen3-32B,gb300,,agg,1024,256,,8,2,1,0,0,0,80,9",
]


@pytest.fixture()
def configs(tmp_path):
    models = resources.files("llmecon.catalog") / "models"
    for name, hf in (("qwen3-32b", "Qwen--Qwen3-32B"), ("qwen3-30b-a3b", "Qwen--Qwen3-30B-A3B")):
        with resources.as_file(models / f"{name}.json") as src:
            shutil.copy(src, tmp_path / f"{hf}_config.json")
    return tmp_path


def test_rows_map_to_predict_cases(configs):
    rows, skipped = parse_silicon(HEAD + "\n".join(ROWS) + "\n", configs)
    by = {r.id: r for r in rows}
    assert sorted(by) == ["a", "b", "c", "g"]
    a = by["a"]
    assert (a.chip, a.engine, a.profile, a.concurrency) == ("h200", "trtllm", "h200/trtllm", 8)
    assert a.ttft_s == pytest.approx(0.0805) and a.tpot_s == pytest.approx(0.00925)
    assert {k: a.case[k] for k in ("system", "phase", "batch", "prompt_tokens", "output_tokens", "tp", "ep", "adp",
                                   "weight_dtype")} == {
        "system": "hgx-h200", "phase": "serving", "batch": "8", "prompt_tokens": "1024", "output_tokens": "256",
        "tp": "2", "ep": "1", "adp": "1", "weight_dtype": "fp8"}
    b = by["b"]  # MoE, attention DP 8 over tp 1, experts ep 8: 8 chips, not 64
    assert (b.case["system"], b.case["tp"], b.case["adp"], b.case["ep"], b.case["weight_dtype"]) == (
        "hgx-b200", "1", "8", "8", "nvfp4")
    c = by["c"]  # TP8 EP8 with attention DP 1 (moe_tp 1 x moe_ep 8 = tp 8)
    assert (c.case["system"], c.case["tp"], c.case["adp"], c.case["ep"], c.case["weight_dtype"]) == (
        "gb200-nvl72", "8", "1", "8", "bf16")
    g = by["g"]  # zeros mean 'not used'; no precision: the model's own weights; dense: ep 1
    assert (g.case["tp"], g.case["adp"], g.case["ep"], g.case["weight_dtype"], g.chip) == ("2", "1", "1", "", "gb300")
    reasons = {s.id: s.reason for s in skipped}
    assert "not yet supported" in reasons["d"]
    assert "no config nvidia--Qwen3-32B-NVFP4_config.json" in reasons["e"]
    assert "does not tile tp·adp = 4·1" in reasons["f"]


def test_predict_silicon_prices_each_row_on_its_plan(configs):
    rows, _ = parse_silicon(HEAD + "\n".join(ROWS[:3]) + "\n", configs)
    tpot, ttft, problems = predict_silicon(rows, mode="ideal")
    assert problems == {} and np.all(np.isfinite(tpot)) and np.all(tpot > 0) and np.all(ttft > 0)
    cal_tpot, _, problems = predict_silicon(rows)
    assert problems == {} and np.all(cal_tpot >= tpot * 0.999)  # calibrated never beats ideal here


def test_missing_column_is_named(configs):
    with pytest.raises(CatalogError, match="missing column"):
        parse_silicon(HEAD.replace("silicon_tpot_ms", "tpot") + ROWS[0] + "\n", configs)
