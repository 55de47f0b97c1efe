"""``llmecon plan`` end to end (``python -m llmecon``): the documented JSON keys, the best plan meets
the targets and is the best frontier point, the frontier is non-dominated, $ figures follow their
definitions from the JSON's own batch/step/chips, figures are written, and bad input exits 2 with
one ``error:`` line and no traceback."""

from __future__ import annotations

import json

import pytest
from cli_run import run, run_json

POINT_KEYS = {"system", "plan", "batch", "step_s", "latency_s", "tokens_per_s_per_chip", "tokens_per_s_per_user",
              "usd_per_mtok",
              "memory_per_chip_bytes", "compute_s", "memory_s", "comm_s", "overhead_s", "bound", "spec_tokens",
              "tokens_per_step",
              "tokens_per_s_per_mw"}


def _strict(text: str) -> dict:
    """Parse rejecting NaN/Infinity (the CLI promises strict JSON)."""
    def no_constants(name):
        raise AssertionError(f"non-strict JSON constant {name}")
    return json.loads(text, parse_constant=no_constants)


@pytest.fixture(scope="module")
def default():
    """The default search in ideal mode with the throughput objective (priced by the TCO defaults)."""
    proc = run("plan", "--json", "--mode", "ideal", "--objective", "throughput")
    assert proc.returncode == 0, proc.stderr
    return _strict(proc.stdout)


@pytest.fixture(scope="module")
def priced():
    return run_json("plan", "--max-chips", "64", "--price-per-chip-hour", "4,2.5", "--output-tokens", "1000")


def _dominated(points):
    """Pairs (p, q) of one system where q is at least as good as p on both throughputs and better on one."""
    bad = []
    for p in points:
        for q in points:
            if p is q or p["system"] != q["system"]:
                continue
            a, b = (q["tokens_per_s_per_chip"], q["tokens_per_s_per_user"]), (p["tokens_per_s_per_chip"],
                                                                                p["tokens_per_s_per_user"])
            if a[0] >= b[0] and a[1] >= b[1] and a != b:
                bad.append((p, q))
    return bad


def test_default_plan_meets_targets_and_frontier_is_non_dominated(default):
    assert default["model"] == "deepseek-v3" and default["systems"] == ["gb200-nvl72", "hgx-h100"]
    assert default["objective"] == "throughput" and default["targets"]["tpot_s"] == 0.05
    assert default["targets"]["ttft_s"] == 2.0 and default["price_source"] == "tco_defaults"
    # GB200 NVL72 by hand (docs/tco.md): $1.368 capital + $0.265 power + $0.556 hosting = $2.189 per chip-hour
    assert default["prices"]["gb200-nvl72"] == pytest.approx(2.189, abs=5e-4) and default["prices"]["hgx-h100"] > 0
    assert default["mode"] == "ideal" and default["ideal_floor"] is None
    decode, prefill = default["best"]["decode"], default["best"]["prefill"]
    assert POINT_KEYS | {"comm", "hbm_per_chip_bytes", "batch_limited_by"} <= set(decode)
    assert decode["step_s"] <= 0.05 and prefill["latency_s"] <= 2.0 and decode["latency_s"] == decode["step_s"]
    assert decode["memory_per_chip_bytes"] <= decode["hbm_per_chip_bytes"]
    assert decode["usd_per_mtok"] == pytest.approx(default["prices"][decode["system"]] / 3600 * decode["plan"]["chips"]
                                                   * decode["step_s"] / decode["batch"] * 1e6, rel=1e-9)
    # decode: one token per sequence per step
    assert decode["tokens_per_s_per_user"] == pytest.approx(1 / decode["step_s"], rel=1e-12)
    assert decode["tokens_per_s_per_chip"] == pytest.approx(
        decode["batch"] / decode["step_s"] / decode["plan"]["chips"], rel=1e-12)
    assert decode["plan"]["chips"] == decode["plan"]["tp"] * decode["plan"]["adp"] * decode["plan"]["pp"]
    assert decode["plan"]["expert_tp"] * decode["plan"]["ep"] == decode["plan"]["tp"] * decode["plan"]["adp"]
    assert decode["step_s"] == max(decode["compute_s"], decode["memory_s"], decode["comm_s"])
    assert set(decode["comm"]["tiers"]) == {"tp", "ep", "pp"}
    for key in ("frontier", "prefill_frontier"):
        pts = default[key]
        assert pts and all(set(p) == POINT_KEYS for p in pts)
        assert {p["system"] for p in pts} == set(default["systems"])
        assert _dominated(pts) == []
    # throughput objective: no frontier point meeting the TPOT has more tokens/s per chip than the best
    meeting = [p for p in default["frontier"] if p["step_s"] <= 0.05]
    assert max(p["tokens_per_s_per_chip"] for p in meeting) == pytest.approx(decode["tokens_per_s_per_chip"],
                                                                              rel=1e-12)
    ev = default["points_evaluated"]
    assert ev["decode"] + ev["prefill"] >= 100_000
    assert default["points_meeting_slo"]["decode"] <= default["points_fitting"]["decode"] <= ev["decode"]
    assert len(default["assumptions"]) >= 4


def test_the_default_is_calibrated_priced_by_tco_defaults_with_the_ideal_floor():
    """No flags (issue 35): calibrated where the chip has a profile, priced by the catalogue's TCO defaults,
    and each best point's ideal floor (the same plan and batch on the roofline) beside it."""
    d = run_json("plan", "--max-chips", "64")
    assert d["mode"] == "calibrated" and d["price_source"] == "tco_defaults"
    assert all(p is not None for p in d["prices"].values()) and d["usd_per_mtok_blended"] is not None
    for phase in ("decode", "prefill"):
        best, floor = d["best"][phase], d["ideal_floor"][phase]
        assert floor["mode"] == "ideal" and floor["batch"] == best["batch"]
        assert floor["plan"] == best["plan"]["label"] and floor["step_s"] < best["step_s"]
        assert floor["calibrated_over_ideal"] == pytest.approx(best["step_s"] / floor["step_s"], rel=1e-12)
        assert floor["usd_per_mtok"] < best["usd_per_mtok"]


def test_prices_follow_the_definition(priced):
    assert priced["objective"] == "cost" and priced["prices"] == {"gb200-nvl72": 4.0, "hgx-h100": 2.5}
    d, p = priced["best"]["decode"], priced["best"]["prefill"]
    price = priced["prices"]
    # $/Mtok = price/3600 · chips · step_s / tokens per step · 1e6
    assert d["usd_per_mtok"] == pytest.approx(
        price[d["system"]] / 3600 * d["plan"]["chips"] * d["step_s"] / d["batch"] * 1e6, rel=1e-9)
    prompt = priced["targets"]["prompt_tokens"]
    assert p["usd_per_mtok"] == pytest.approx(
        price[p["system"]] / 3600 * p["plan"]["chips"] * p["step_s"] / (p["batch"] * prompt) * 1e6, rel=1e-9)
    n_in, n_out = prompt, priced["targets"]["output_tokens"]
    assert n_out == 1000
    assert priced["usd_per_mtok_blended"] == pytest.approx(
        (n_in * p["usd_per_mtok"] + n_out * d["usd_per_mtok"]) / (n_in + n_out), rel=1e-12)
    for f in priced["frontier"]:
        assert f["usd_per_mtok"] == pytest.approx(
            price[f["system"]] / 3600 * f["plan"]["chips"] * f["step_s"] / f["batch"] * 1e6, rel=1e-9)
    # cost objective: nothing on the frontier that meets the TPOT is cheaper than the best
    meeting = [f["usd_per_mtok"] for f in priced["frontier"] if f["step_s"] <= 0.05]
    assert min(meeting) == pytest.approx(d["usd_per_mtok"], rel=1e-12)
    assert all(f["plan"]["chips"] <= 64 for f in priced["frontier"] + priced["prefill_frontier"])


def test_text_output_has_both_phases_and_why():
    proc = run("plan", "--max-chips", "64", "--price-per-chip-hour", "3", "--top", "3")
    assert proc.returncode == 0, proc.stderr
    out = " ".join(proc.stdout.split())  # the width of a pipe may wrap lines
    for text in ("how to serve deepseek-v3", "decode: best plan", "prefill: best plan", "why", "frontier: 3 of",
                 "blended", "$/Mtok", "meet the TPOT"):
        assert text in out, text


def test_impossible_tpot_names_best_achievable():
    proc = run("plan", "--tpot", "0.1ms", "--max-chips", "64")
    assert proc.returncode == 2
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), proc.stderr
    assert "no plan meets tpot" in lines[0] and "best achievable" in lines[0]


def test_durations_accept_units_and_bare_seconds():
    a = run_json("plan", "--tpot", "30 ms", "--ttft", "1.5", "--max-chips", "64")
    assert a["targets"]["tpot_s"] == pytest.approx(0.03) and a["targets"]["ttft_s"] == 1.5
    assert a["best"]["decode"]["step_s"] <= 0.03 and a["best"]["prefill"]["step_s"] <= 1.5


@pytest.mark.parametrize("args,field", [
    (("--systems", "gb200-nvl7"), "did you mean 'gb200-nvl72'"),
    (("--price-per-chip-hour", "1,2,3"), "--price-per-chip-hour"),
    (("--tpot", "abc"), "--tpot"),
    (("--ttft", "5 GB"), "--ttft"),
    (("--expert-imbalance", "0.5"), "--expert-imbalance"),
    (("--max-chips", "0"), "--max-chips"),
    (("--systems", "gb200-nvl72,hgx-h200", "--objective", "cost"), "--price-per-chip-hour"),  # H200: no TCO default
    (("--plot", "frontier.txt"), "--plot"),
    (("--dispatch-dtype", "fp5"), "dtype 'fp5'"),
])
def test_bad_input_exits_2_with_one_line(args, field, tmp_path):
    proc = run("plan", "--max-chips", "64", *args, cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), proc.stderr
    assert field in lines[0], lines[0]
    assert list(tmp_path.iterdir()) == []


def test_plot_writes_png(tmp_path):
    fig = tmp_path / "frontier.png"
    proc = run("plan", "--max-chips", "64", "--plot", str(fig))
    assert proc.returncode == 0, proc.stderr
    assert fig.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and fig.stat().st_size > 10_000
    assert f"figure written to {fig}" in proc.stdout


def test_small_dense_model():
    d = run_json("plan", "--model", "llama-3.1-8b", "--systems", "h100-sxm,hgx-h100", "--max-chips", "64",
                 "--price-per-chip-hour", "2")
    best = d["best"]["decode"]
    assert best["plan"]["ep"] == 1 and best["step_s"] <= 0.05
    assert best["memory_per_chip_bytes"] <= best["hbm_per_chip_bytes"]
    assert _dominated(d["frontier"]) == [] and d["usd_per_mtok_blended"] > 0


def test_workers_ratio_in_json_and_text(priced):
    """The prefill:decode ratio: every worker's chips billed, the pools' rates from the best points, TTFT with the
    KV transfer (issue 22 item 2)."""
    w, best, t = priced["workers"], priced["best"], priced["targets"]
    p, d = best["prefill"], best["decode"]
    assert w["ratio"] == f"{w['prefill_workers']}:{w['decode_workers']}"
    assert 1 <= w["prefill_workers"] <= 16 and 1 <= w["decode_workers"] <= 16
    assert w["chips"] == w["prefill_workers"] * w["prefill_chips_per_worker"] + w["decode_workers"] * w[
        "decode_chips_per_worker"]
    assert w["prefill_requests_per_s_per_worker"] == pytest.approx(p["batch"] / p["step_s"])
    # a sequence holds its decode slot for O - 1 steps (the prefill emits the first token)
    assert w["decode_requests_per_s_per_worker"] == pytest.approx(d["batch"] / ((t["output_tokens"] - 1)
                                                                                * d["latency_s"]))
    assert w["requests_per_s"] == pytest.approx(min(w["prefill_workers"] * w["prefill_requests_per_s_per_worker"],
                                                    w["decode_workers"] * w["decode_requests_per_s_per_worker"]))
    assert w["ttft_s"] == pytest.approx(p["latency_s"] + w["kv_transfer_s"]) and w["kv_transfer_s"] > 0
    assert w["usd_per_mtok"] > 0
    proc = run("plan", "--max-chips", "16", "-s", "hgx-h100", "-m", "llama-3.1-70b", "--max-workers", "4")
    assert proc.returncode == 0, proc.stderr
    assert "prefill:decode workers (searched 1..4 each" in proc.stdout and "KV transfer" in proc.stdout
    bad = run("plan", "--max-workers", "0")
    assert bad.returncode == 2 and "max-workers" in bad.stderr
    huge = run("plan", "--max-workers", "100000")  # the search is bounded: a one-line error, no hang
    assert huge.returncode == 2 and "--max-workers" in huge.stderr and "1024" in huge.stderr
