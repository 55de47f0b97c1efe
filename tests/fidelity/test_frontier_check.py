"""``fidelity.frontier_check`` (issue 37 item 4): measured points by hand from silicon rows (aggregated and
disaggregated), the envelope by hand, Kendall's tau of a chip order by hand, and ``validate --frontier`` end to
end on a tiny silicon CSV (configs copied from the catalogue, no shared data needed)."""

from __future__ import annotations

import json
import shutil
from importlib import resources

import numpy as np
import pytest
from cli_run import run

from llmecon.fidelity.frontier_check import GroupScore, chip_order, envelope, measured_points

HEAD = ("id,silicon_data_source,backend,model_path,system,precision,mode,isl,osl,gemm_quant_mode,batch_size,tp_size,"
        "pp_size,attention_dp_size,moe_tp_size,moe_ep_size,prefill_num_workers,prefill_tp_size,prefill_pp_size,"
        "prefill_attention_dp_size,prefill_moe_tp_size,prefill_moe_ep_size,decode_num_workers,decode_tp_size,"
        "decode_pp_size,decode_attention_dp_size,decode_moe_tp_size,decode_moe_ep_size,silicon_ttft_ms,"
        "silicon_tpot_ms\n")
ROWS = [  # Qwen3-32B on H200 with TensorRT-LLM: tp2 at concurrency 8 and 64; one disaggregated run
    "a,,trtllm,Qwen/Qwen3-32B,h200_sxm,fp8,agg,1024,256,fp8,8,2,1,,1,1,,,,,,,,,,,,,100,10",
    "b,,trtllm,Qwen/Qwen3-32B,h200_sxm,fp8,agg,1024,256,fp8,64,2,1,,1,1,,,,,,,,,,,,,400,20",
    "c,silicon_concurrency=32,trtllm,Qwen/Qwen3-32B,h200_sxm,fp8,disagg,1024,256,fp8,32,,,,,,1,1,1,1,1,1,2,2,1,1,1,1,"
    "200,12.5",
]


@pytest.fixture()
def csv_path(tmp_path):
    cfg = tmp_path / "reference" / "hf_configs"
    cfg.mkdir(parents=True)
    with resources.as_file(resources.files("llmecon.catalog") / "models" / "qwen3-32b.json") as src:
        shutil.copy(src, cfg / "Qwen--Qwen3-32B_config.json")
    folder = tmp_path / "validation" / "aiconfigurator"
    folder.mkdir(parents=True)
    path = folder / "silicon_dev.csv"
    path.write_text(HEAD + "\n".join(ROWS) + "\n")
    return path


def test_measured_points_by_hand(csv_path):
    pts = {round(p.per_user, 6): p for p in measured_points(csv_path)}
    a, b, c = pts[100.0], pts[50.0], pts[80.0]
    # closed loop: C·O / (TTFT + (O - 1)·TPOT) / GPUs: 8·256 / (0.1 + 255·0.01) / 2
    assert a.per_gpu == pytest.approx(8 * 256 / (0.1 + 255 * 0.01) / 2, rel=1e-12) and a.gpus == 2 and a.mode == "agg"
    assert b.per_gpu == pytest.approx(64 * 256 / (0.4 + 255 * 0.02) / 2, rel=1e-12) and b.replica_concurrency == 64
    # disaggregated: 1 prefill worker of 1 GPU + 2 decode workers of 2 GPUs = 5 GPUs; 32 / 2 sequences per worker
    assert c.gpus == 5 and c.replica_gpus == 2 and c.replica_concurrency == 16 and c.mode == "disagg"
    assert c.per_gpu == pytest.approx(32 * 256 / (0.2 + 255 * 0.0125) / 5, rel=1e-12)


def test_envelope_by_hand():
    u, g = [100, 50, 80, 20], [10, 40, 30, 35]
    # at 90: only u=100 qualifies -> 10; at 50: u in {100, 80, 50} -> 40; at 20: all -> 40; at 200: none
    got = envelope(u, g, [90, 50, 20, 200, 80])
    assert list(got[:3]) == [10, 40, 40] and np.isnan(got[3]) and got[4] == 30


def _score(chip, measured, predicted):
    return GroupScore(chip=chip, model="m", weight_dtype="fp8", workload="1/1", points=1, median_ratio=1.0,
                      reachable=1.0, max_per_user_measured=1.0, max_per_user_predicted=1.0,
                      at_order={"measured": measured, "predicted": predicted}, engines=("e",))


def test_chip_order_tau_by_hand():
    # three chips: measured order a < b < c; predicted a < c < b: 2 concordant pairs of 3, 1 discordant: tau 1/3
    got = chip_order([_score("a", 1, 1), _score("b", 2, 3), _score("c", 3, 2)])
    assert len(got) == 1 and got[0]["tau"] == pytest.approx(1 / 3) and got[0]["chips"] == ["a", "b", "c"]
    assert chip_order([_score("a", 1, 1), _score("b", 2, 3)]) == []       # fewer than three chips: no tau
    assert chip_order([_score("a", 1, None), _score("b", 2, 3), _score("c", 3, 2)]) == []


def test_validate_frontier_end_to_end(csv_path):
    proc = run("validate", str(csv_path), "--frontier", "--terms", "kernel", "--json")
    assert proc.returncode == 0, proc.stderr
    d = json.loads(proc.stdout)
    assert d["source"] == "silicon" and d["terms"] == "kernel" and d["view"] == "whole" and d["points"] == 3
    (g,) = d["groups"]
    assert g["chip"] == "h200" and g["workload"] == "1024/256" and g["points"] == 3 and g["engines"] == ["trtllm"]
    assert 0 <= g["reachable_share"] <= 1 and g["max_tokens_per_s_per_user_measured"] == pytest.approx(100)
    assert d["per_chip"]["h200"]["points"] == 3 and d["chip_order"] == []
    text = run("validate", str(csv_path), "--frontier", "--terms", "kernel")
    assert text.returncode == 0 and "median pred/meas" in text.stdout


def test_validate_frontier_measured_view_and_floor_terms(csv_path):
    """``--view measured --terms floor`` end to end: the tiny CSV has one low-concurrency row, too few to fit a
    floor on, so the group is priced with kernel terms (``floor_for`` None) and still scored."""
    proc = run("validate", str(csv_path), "--frontier", "--terms", "floor", "--view", "measured", "--json")
    assert proc.returncode == 0, proc.stderr
    d = json.loads(proc.stdout)
    assert d["terms"] == "floor" and d["view"] == "measured" and d["points"] == 3
    assert d["groups"][0]["max_tokens_per_s_per_user_predicted"] > 0


@pytest.mark.parametrize("args, field", [(("--terms", "fitted"), "terms"), (("--view", "prefill"), "view"),
                                         (("--chips", "h300"), "chips")])
def test_validate_frontier_bad_input(csv_path, args, field):
    proc = run("validate", str(csv_path), "--frontier", *args)
    assert proc.returncode == 2 and field in proc.stderr and "Traceback" not in proc.stderr


def test_measured_view_follows_the_serving_each_engine_ran():
    """``view='measured'``: aggregated where an engine's rows all ran aggregated, disaggregated where all ran
    disaggregated, whole where both; other views pass through."""
    from llmecon.fidelity.frontier_check import _view_of

    class P:
        def __init__(self, engine, mode):
            self.engine, self.mode = engine, mode

    pts = [P("vllm", "agg"), P("trtllm", "agg"), P("trtllm", "disagg"), P("sglang", "disagg")]
    assert _view_of("measured", pts, "vllm") == "aggregated"
    assert _view_of("measured", pts, "trtllm") == "whole"
    assert _view_of("measured", pts, "sglang") == "disaggregated"
    assert _view_of("whole", pts, "vllm") == "whole" and _view_of("decode", pts, "sglang") == "decode"


def test_only_layouts_keeps_the_search_to_the_layouts_named():
    """``SearchOptions.only_layouts`` (the measured-layouts diagnostic): every searched plan is one named."""
    from llmecon.catalog.hardware import get_system
    from llmecon.catalog.models import get_model
    from llmecon.econ.planner import SearchOptions, searched_plans

    system = get_system("hgx-h100")
    every = searched_plans(get_model("llama-3.1-8b"), [system], SearchOptions(max_chips=8))[system.name]
    kept = searched_plans(get_model("llama-3.1-8b"), [system],
                          SearchOptions(max_chips=8, only_layouts=((2, 1, 1, 1), (4, 1, 1, 1))))[system.name]
    assert len(every) > len(kept) > 0
    assert {(int(t), int(p), int(a)) for t, p, a in zip(kept.tp, kept.pp, kept.adp)} == {(2, 1, 1), (4, 1, 1)}
