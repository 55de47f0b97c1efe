"""``llmecon moe`` end to end (``python -m llmecon``): the JSON keys, the EP sweep's tiers at the
scale-up domain edge, pipeline stages (SPEC D17, D18) and the routed scaling-law view (SPEC D14)
checked against hand arithmetic, figures written, and bad input exits 2 with one ``error:`` line."""

from __future__ import annotations

import math

import pytest
from cli_run import run, run_json

from llmecon.catalog.models import get_model
from llmecon.econ.moe import MoeSummary
from llmecon.econ.routed_scaling import default_routed_law


@pytest.fixture(scope="module")
def nvl72():
    return run_json("moe")


@pytest.fixture(scope="module")
def hgx():
    return run_json("moe", "--system", "hgx-h100")


def test_json_has_every_summary_field(nvl72):
    for name in MoeSummary.__dataclass_fields__:
        assert name in nvl72, name
    assert nvl72["model"] == "deepseek-v3" and nvl72["system"] == "gb200-nvl72"
    assert (nvl72["experts"], nvl72["active_experts"], nvl72["shared_experts"]) == (256, 8, 1)
    assert nvl72["sparsity"] == pytest.approx(nvl72["total_params"] / nvl72["active_params"], rel=1e-12)
    assert nvl72["dispatch_dtype"] == "fp8" and nvl72["law_file"] is None
    # touched is keyed by batch as a string; one token touches exactly k/E of the experts
    assert set(nvl72["touched"]) == {"1", "8", "32", "128", "512", "2048"}
    assert nvl72["touched"]["1"] == pytest.approx(8 / 256, rel=1e-12)
    assert nvl72["touched"]["8"] == pytest.approx(1 - (1 - 8 / 256) ** 8, rel=1e-9)


def test_ep_rows_divide_experts_and_stay_in_the_rack(nvl72):
    rows = nvl72["ep_rows"]
    # ep divides the experts, or redundant copies fill its groups (EP72/144/288 + 32 on 72-chip racks)
    assert rows and all((256 + r["redundant_experts"]) % r["ep"] == 0 for r in rows)
    assert {r["ep"] for r in rows if r["redundant_experts"]} == {72, 144, 288}
    assert all(r["chips"] == r["ep"] for r in rows)  # tp = 1, attention data-parallel over the EP group
    for r in rows:
        assert r["batch"] == pytest.approx(nvl72["batch_per_chip"] * r["chips"], rel=1e-12)
        assert r["chip_s_per_token"] == pytest.approx(r["step_s"] * r["chips"] / r["batch"], rel=1e-12)
        if r["ep"] == 1:
            assert r["tier"] == "none" and r["all_to_all_s"] == 0  # one chip: no all-to-all at all
        elif r["ep"] <= 72:  # the NVL72 scale-up domain
            assert r["tier"] == "scale_up" and r["domains"] == 1
    best = [r for r in rows if r["ep"] == nvl72["ep_best"]]
    assert len(best) == 1 and best[0]["fits"]
    assert best[0]["chip_s_per_token"] == min(r["chip_s_per_token"] for r in rows if r["fits"])


def test_ep_across_the_hgx_boundary_is_two_tier_and_slower(hgx):
    rows = {r["ep"]: r for r in hgx["ep_rows"]}
    assert 8 in rows and any(ep > 8 for ep in rows)
    assert rows[8]["tier"] == "scale_up"
    for ep, r in rows.items():
        if ep > 8:
            assert r["tier"] == "two_tier" and r["domains"] == ep // 8
            assert r["all_to_all_s"] > rows[8]["all_to_all_s"]
    # the first scale-out step costs several times the in-domain all-to-all (450 vs 50 GB/s per chip)
    assert rows[16]["all_to_all_s"] > 3 * rows[8]["all_to_all_s"]


def test_pp_rows_split_weights_by_whole_layers(nvl72):
    """SPEC D18: weights per chip fall as 1/P (the fullest stage holds ceil(L/P) of L layers); KV per
    chip does not fall with P."""
    layers = get_model("deepseek-v3").n_layers
    rows = {r["pp"]: r for r in nvl72["pp_rows"]}
    assert rows[1]["chips"] == nvl72["pp_ep"] and rows[1]["hop_latency_s"] == 0
    w1 = rows[1]["weights_per_chip_bytes"]
    pps = sorted(rows)
    assert pps[:2] == [1, 2]
    for a, b in zip(pps, pps[1:]):
        assert rows[b]["weights_per_chip_bytes"] < rows[a]["weights_per_chip_bytes"]
        assert rows[b]["hop_latency_s"] > rows[a]["hop_latency_s"]
    for pp, r in rows.items():
        assert r["chips"] == pp * nvl72["pp_ep"]
        assert r["weights_per_chip_bytes"] == pytest.approx(w1 * math.ceil(layers / pp) / layers, rel=1e-9)
        # KV per chip holds P micro-batches of 1/P of the layers: unchanged up to the uneven split
        assert r["kv_per_chip_bytes"] == pytest.approx(
            rows[1]["kv_per_chip_bytes"] * math.ceil(layers / pp) * pp / layers, rel=1e-9)


def test_stage_ratios_reproduce_spec_d17(nvl72, hgx):
    """2·k·L_stage >= BW_up/BW_out: k = 8, one layer per stage: 16 < 18 on GB200 (900 vs 50 GB/s)
    -> two layers; 16 >= 9 on DGX H100 (450 vs 50 GB/s) -> one layer."""
    assert nvl72["scale_out_ratio"] == pytest.approx(18.0, rel=1e-9)
    k = nvl72["active_experts"]
    for layers, value in nvl72["stage_ratios"].items():
        assert value == pytest.approx(2 * k * int(layers) / nvl72["scale_out_ratio"], rel=1e-12)
    assert nvl72["stage_ratios"]["1"] == pytest.approx(16 / 18) and nvl72["stage_ratios"]["1"] < 1
    assert nvl72["stage_ratios"]["2"] == pytest.approx(32 / 18) and nvl72["stage_ratios"]["2"] >= 1
    assert nvl72["min_layers_per_stage"] == 2
    assert hgx["scale_out_ratio"] == pytest.approx(9.0, rel=1e-9) and hgx["min_layers_per_stage"] == 1


def test_scaling_law_view_uses_the_shipped_power_fit(nvl72):
    gamma = default_routed_law().gamma
    assert nvl72["effective_ratio"] == pytest.approx(256 ** gamma, rel=1e-12)
    assert nvl72["effective_params"] == pytest.approx(nvl72["active_params"] * 256 ** gamma, rel=1e-12)
    assert nvl72["experts_for_10x"] == pytest.approx(10 ** (1 / gamma), rel=1e-12)
    assert nvl72["hundred_expert_ratio"] == pytest.approx(100 ** gamma, rel=1e-12)
    assert nvl72["hundred_expert_ratio"] < 5  # SPEC D14: 100 experts ~ 4x, not 10x
    assert "not the paper's coefficients" in nvl72["law_label"]


def test_text_output_has_every_section():
    proc = run("moe")
    assert proc.returncode == 0, proc.stderr
    out = " ".join(proc.stdout.split())  # rich wraps long cells at the terminal width
    for needle in ("S = total/active", "Expert parallelism at B = ", "Pipeline across domains", "not viable",
                   "Pipeline for inference at ep = ", "not the paper's coefficients", "100 experts give 4.02x"):
        assert needle in out, needle


def test_law_file_changes_the_ratio(tmp_path):
    law = tmp_path / "half.toml"
    law.write_text('form = "power"\ngamma = 0.5\nlabel = "square-root test law"\nsource = "a test"\n')
    d = run_json("moe", "--law", str(law))
    assert d["effective_ratio"] == pytest.approx(16.0, rel=1e-12)
    assert d["experts_for_10x"] == pytest.approx(100.0, rel=1e-12)
    assert d["law_label"] == "square-root test law" and d["law_file"] == str(law)
    proc = run("moe", "--law", str(law))
    assert proc.returncode == 0 and "square-root test law" in proc.stdout


def test_plot_writes_png(tmp_path):
    fig = tmp_path / "moe.png"
    proc = run("moe", "--system", "hgx-h100", "--plot", str(fig))
    assert proc.returncode == 0, proc.stderr
    assert fig.read_bytes().startswith(b"\x89PNG") and fig.stat().st_size > 10_000


@pytest.mark.parametrize("args,needle", [
    (("--model", "llama-3.1-8b"), "is dense"),
    (("--expert-imbalance", "0.5"), "--expert-imbalance"),
    (("--context", "-1"), "--context"),
    (("--system", "gb200-nvl7"), "did you mean"),
    (("--dispatch-dtype", "fp9"), "--dispatch-dtype"),
    (("--max-ep", "0"), "--max-ep"),
    (("--batch-per-chip", "0"), "--batch-per-chip"),
    (("--law", "LAW"), "did you mean"),
    (("--law", "missing.toml"), "--law"),
    (("--plot", "x.txt"), "--plot"),
])
def test_bad_input_exits_2_with_one_line(args, needle, tmp_path):
    if "LAW" in args:
        law = tmp_path / "bad.toml"
        law.write_text('form = "power"\ngama = 0.5\nlabel = "x"\nsource = "y"\n')
        args = tuple(str(law) if a == "LAW" else a for a in args)
    before = set(tmp_path.iterdir())
    proc = run("moe", *args, cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), proc.stderr
    assert needle in proc.stderr
    assert set(tmp_path.iterdir()) == before
