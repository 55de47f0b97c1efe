"""``fidelity.frontier_amd``: MI300X batch-latency rows as frontier points, by hand from a two-row table."""

from __future__ import annotations

import pytest

from llmecon.fidelity.frontier_amd import amd_points

HEAD = ("source_id,source_file,source_version,date,chip,n_chips,system,engine,engine_version,image,workload,model,"
        "precision,tp,dp,ep,batch_or_concurrency,num_prompts,request_rate,input_len,output_len,metric,value,unit,"
        "is_repeat,confidence,notes\n")
ROW = ("s,f,v,2025-01-27,MI300X,8,sys,vllm,0.6.6,img,{workload},amd/Llama-3.1-70B-Instruct-FP8-KV,fp8,8,1,,{b},,,128,"
       "2048,{metric},{value},{unit},{rep},high,\n")


def test_points_by_hand(tmp_path):
    """batch 4, 2048 output tokens in 20 s: 102.4 tok/s/user, 4 x 2048 / 20 / 8 = 51.2 tok/s/GPU; repeats,
    throughput rows and other metrics are not points."""
    p = tmp_path / "t.csv"
    p.write_text(HEAD + ROW.format(workload="batch_latency", b=4, metric="e2e_batch_latency", value=20, unit="s",
                                   rep="no")
                 + ROW.format(workload="batch_latency", b=8, metric="e2e_batch_latency", value=21, unit="s", rep="yes")
                 + ROW.format(workload="offline_throughput", b=256, metric="throughput_tok_s", value=9000,
                              unit="tok/s", rep="no"))
    (pt,) = amd_points(p)
    assert pt.per_user == pytest.approx(102.4, rel=1e-12)
    assert pt.per_gpu == pytest.approx(51.2, rel=1e-12)
    assert (pt.chip, pt.system, pt.engine, pt.config, pt.layout, pt.gpus) == (
        "mi300x", "mi300x-8", "vllm", "llama-3.1-70b", (8, 1, 1, 1), 8)
    assert (pt.prompt_tokens, pt.output_tokens, pt.replica_concurrency) == (128, 2048, 4.0)
