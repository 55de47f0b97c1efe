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
    assert "read apart" in reasons["d"]
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


HEAD2 = HEAD.replace("id,", "id,silicon_data_source,").replace("gemm_quant_mode,", "gemm_quant_mode,moe_quant_mode,")


def _row2(rid, source, backend, model, quant, moe_quant, batch, tp, adp, ep):
    return (f"{rid},{source},{backend},{model},b200_sxm,fp8,agg,1024,256,{quant},{moe_quant},{batch},{tp},1,{adp},"
            f"{tp * adp // ep},{ep},80,9")


def test_concurrency_is_the_clients_not_the_per_rank_batch(configs):
    """batch_size is per attention-DP rank: silicon_concurrency = batch_size·adp on every attention-DP
    dev row that has both; without silicon_concurrency the product is taken."""
    text = HEAD2 + "\n".join([
        _row2("a", "x; silicon_concurrency=256; y", "vllm", "Qwen/Qwen3-30B-A3B", "fp8", "fp8", 32, 1, 8, 8),
        _row2("b", "", "vllm", "Qwen/Qwen3-30B-A3B", "fp8", "fp8", 32, 1, 8, 8),
        _row2("c", "silicon_concurrency=16", "trtllm", "Qwen/Qwen3-32B", "fp8", "fp8", 16, 2, 1, 1),
    ]) + "\n"
    rows, skipped = parse_silicon(text, configs)
    assert not skipped
    by = {r.id: r for r in rows}
    assert (by["a"].concurrency, by["a"].case["batch"]) == (256, "256")
    assert (by["b"].concurrency, by["b"].case["batch"]) == (256, "256")   # 32 per rank x 8 ranks
    assert by["c"].concurrency == 16


def test_block_scaled_checkpoints_run_fp8_block_and_trtllm_modelopt_rows_fp8_kv(configs):
    """fp8 weights price with the block-scaled kernels where the CSV says fp8_block or the checkpoint
    config has weight_block_size; TensorRT-LLM rows with nvfp4 / per-tensor fp8 weights take fp8 KV."""
    import json

    cfg = json.loads((configs / "Qwen--Qwen3-30B-A3B_config.json").read_text())
    cfg["quantization_config"] = {"quant_method": "fp8", "weight_block_size": [128, 128]}
    (configs / "Qwen--Qwen3-30B-A3B-FP8_config.json").write_text(json.dumps(cfg))
    text = HEAD2 + "\n".join([
        _row2("blockcfg", "", "vllm", "Qwen/Qwen3-30B-A3B-FP8", "fp8", "fp8", 8, 1, 1, 1),
        _row2("blockcsv", "", "sglang", "Qwen/Qwen3-30B-A3B", "fp8", "fp8_block", 8, 1, 1, 1),
        _row2("tensor", "", "trtllm", "Qwen/Qwen3-30B-A3B", "fp8", "fp8", 8, 1, 1, 1),
        _row2("fp4", "", "trtllm", "Qwen/Qwen3-30B-A3B", "nvfp4", "nvfp4", 8, 1, 1, 1),
        _row2("blocktrt", "", "trtllm", "Qwen/Qwen3-30B-A3B-FP8", "fp8", "fp8", 8, 1, 1, 1),
    ]) + "\n"
    rows, skipped = parse_silicon(text, configs)
    assert not skipped
    got = {r.id: (r.case["weight_dtype"], r.case["kv_dtype"]) for r in rows}
    assert got == {"blockcfg": ("fp8_block", ""), "blockcsv": ("fp8_block", ""), "tensor": ("fp8", "fp8"),
                   "fp4": ("nvfp4", "fp8"), "blocktrt": ("fp8_block", "")}
    tpot, _, problems = predict_silicon(rows, mode="ideal")
    assert problems == {} and np.all(np.isfinite(tpot))


def test_fp8_block_has_fp8_bytes_and_peak():
    from llmecon.catalog.hardware import get_accelerator
    from llmecon.dtypes import get_dtype

    assert get_dtype("fp8_block").bytes == get_dtype("fp8").bytes == 1.0
    h100 = get_accelerator("h100-sxm")
    assert h100.peak("fp8_block") == h100.peak("fp8")


def test_speculative_runs_are_skipped_with_their_reason(configs):
    """DeepSeek-R1 on TensorRT-LLM 1.2.0rc6.post3 decoded with MTP (fidelity.silicon.SPECULATIVE_RUNS): such rows
    are skipped, named; the same model at another version, or another model at that version, is kept."""
    head = HEAD.replace("id,backend,", "id,backend,backend_version,")
    lines = ["s1,trtllm,1.2.0rc6.post3,deepseek-ai/DeepSeek-R1,b200_sxm,fp8,agg,1024,1024,fp8,4,8,1,1,1,8,195,5.38",
             "s2,trtllm,1.2.0rc6.post2,Qwen/Qwen3-32B,b200_sxm,fp8,agg,1024,1024,fp8,4,8,1,1,1,1,188,10.3",
             "s3,trtllm,1.2.0rc6.post3,Qwen/Qwen3-32B,b200_sxm,fp8,agg,1024,1024,fp8,4,8,1,1,1,1,188,10.3"]
    rows, skipped = parse_silicon(head + "\n".join(lines) + "\n", configs)
    assert sorted(r.id for r in rows) == ["s2", "s3"]
    (s,) = skipped
    assert s.id == "s1" and "speculative decoding (MTP)" in s.reason and "1.2.0rc6.post3" in s.reason


def test_speculative_read_prices_the_mtp_rows_alone(configs):
    """read_silicon(..., speculative=True) (issue 34): only the SPECULATIVE_RUNS rows, each a case with k = 3
    (SPECULATIVE_DRAFT_TOKENS, assumed) and the family's default acceptance (DeepSeek-R1: V3's, transferred);
    priced with a speculative iteration, so its TPOT is below the same row's plain prediction."""
    with resources.as_file(resources.files("llmecon.catalog") / "models" / "deepseek-v3.json") as src:
        shutil.copy(src, configs / "deepseek-ai--DeepSeek-R1_config.json")
    head = HEAD.replace("id,backend,", "id,backend,backend_version,")
    lines = ["s1,trtllm,1.2.0rc6.post3,deepseek-ai/DeepSeek-R1,b200_sxm,fp8,agg,1024,1024,fp8,4,8,1,1,1,8,195,5.38",
             "s3,trtllm,1.2.0rc6.post3,Qwen/Qwen3-32B,b200_sxm,fp8,agg,1024,1024,fp8,4,8,1,1,1,1,188,10.3"]
    rows, skipped = parse_silicon(head + "\n".join(lines) + "\n", configs, speculative=True)
    assert [r.id for r in rows] == ["s1"] and not skipped
    assert rows[0].case["spec_tokens"] == "3" and "acceptance" not in rows[0].case
    spec, _, problems = predict_silicon(rows, mode="ideal")
    plain, _, _ = predict_silicon([type(rows[0])(**{**rows[0].__dict__, "case": {
        k: v for k, v in rows[0].case.items() if k != "spec_tokens"}})], mode="ideal")
    assert not problems and 0 < spec[0] < plain[0]


def test_ep_that_does_not_divide_the_experts_gets_the_fewest_copies(configs):
    """EP 48 over DeepSeek's 256 routed experts: 256 % 48 = 16, so 32 copies (288 slots, 6 per rank), written as
    the plan label; EP 32 divides 256 and keeps the degree columns."""
    with resources.as_file(resources.files("llmecon.catalog") / "models" / "deepseek-v3.json") as src:
        shutil.copy(src, configs / "deepseek-ai--DeepSeek-V3_config.json")
    lines = ["e48,sglang,deepseek-ai/DeepSeek-V3,gb200,fp8,agg,1024,1024,fp8,4,1,1,48,1,48,195,20",
             "e32,sglang,deepseek-ai/DeepSeek-V3,gb200,fp8,agg,1024,1024,fp8,4,1,1,32,1,32,195,20"]
    rows, _ = parse_silicon(HEAD + "\n".join(lines) + "\n", configs)
    by = {r.id: r.case for r in rows}
    assert by["e48"]["plan"] == "tp1·ep48·pp1·adp48·r32" and "tp" not in by["e48"]
    assert by["e32"]["ep"] == "32" and "plan" not in by["e32"]
    tpot, _, problems = predict_silicon(rows, mode="ideal")
    assert not problems and np.all(np.isfinite(tpot))


DHEAD = ("id,silicon_data_source,backend,model_path,system,precision,mode,isl,osl,gemm_quant_mode,batch_size,tp_size,"
         "pp_size,attention_dp_size,moe_tp_size,moe_ep_size,prefill_num_workers,prefill_tp_size,prefill_pp_size,"
         "prefill_attention_dp_size,prefill_moe_tp_size,prefill_moe_ep_size,decode_num_workers,decode_tp_size,"
         "decode_pp_size,decode_attention_dp_size,decode_moe_tp_size,decode_moe_ep_size,silicon_ttft_ms,"
         "silicon_tpot_ms\n")
DROWS = [
    "p,silicon_concurrency=8,"
    "trtllm,Qwen/Qwen3-30B-A3B,gb200,fp8,disagg,1024,256,fp8,,,,,,,1,1,1,4,1,4,2,4,1,1,1,4,90,5",
    "q,silicon_concurrency=8,"
    "sglang,Qwen/Qwen3-30B-A3B,gb200,fp8,disagg,1024,256,fp8,,,,,,,,1,1,4,1,4,,4,1,1,1,4,90,5",
    "r,,sglang,Qwen/Qwen3-30B-A3B,gb200,fp8,disagg,1024,256,fp8,,,,,,,1,1,1,4,1,4,1,4,1,1,1,4,90,5",
    "s,silicon_concurrency=8,"
    "sglang,Qwen/Qwen3-30B-A3B,gb200,fp8,disagg,1024,256,fp8,,,,,,,1,1,1,4,1,2,1,4,1,1,1,4,90,5",
    "a,silicon_concurrency=8,trtllm,Qwen/Qwen3-32B,h200_sxm,fp8,agg,1024,256,fp8,8,2,1,,1,1,,,,,,,,,,,,,80.5,9.25",
]


def test_disaggregated_rows_are_read_apart(configs):
    """disagg rows map to predict's disaggregated columns only when asked; the default read (every engine-term
    fit) skips them, so the profiles stay fitted on aggregated rows."""
    text = DHEAD + "\n".join(DROWS) + "\n"
    agg, skipped = parse_silicon(text, configs)
    assert [r.id for r in agg] == ["a"] and {s.id for s in skipped} == {"p", "q", "r", "s"}
    rows, skipped = parse_silicon(text, configs, disaggregated=True)
    assert [r.id for r in rows] == ["p"]
    p = rows[0]
    assert {k: p.case[k] for k in ("deployment", "prefill_plan", "prefill_workers", "decode_plan", "decode_workers",
                                   "batch", "phase")} == {
        "deployment": "disaggregated", "prefill_plan": "tp1·ep4·pp1·adp4", "prefill_workers": "1",
        "decode_plan": "tp4·ep4·pp1·adp1", "decode_workers": "2", "batch": "8", "phase": "serving"}
    assert "tp" not in p.case and p.case["kv_dtype"] == "fp8"
    reasons = {s.id: s.reason for s in skipped}
    assert "worker counts" in reasons["q"] and "silicon_concurrency" in reasons["r"]
    assert "prefill_moe_tp_size·prefill_moe_ep_size = 1·2 does not tile tp·adp = 1·4" in reasons["s"]
    bad = [DROWS[0].replace("p,", f"w{i},", 1).replace(",1,1,1,4,1,4,2,", f",{n},1,1,4,1,4,2,", 1)
           for i, n in enumerate(("inf", "1.5", "2e6"))]
    rows2, skipped2 = parse_silicon(DHEAD + "\n".join(bad) + "\n", configs, disaggregated=True)
    assert rows2 == [] and [s.reason.split(":")[0] for s in skipped2] == ["prefill_num_workers 'inf'",
                                                                          "prefill_num_workers '1.5'",
                                                                          "prefill_num_workers '2e6'"]
    tpot, ttft, problems = predict_silicon(rows, mode="ideal")
    assert problems == {} and np.isfinite(tpot[0]) and ttft[0] > 0
