"""``llmecon plan --frontier`` end to end: the JSON fields, one system and several, ideal and calibrated,
the interactivity figures follow the frontier, the figure is written, a bad --plot path exits 2 before any
work, and the text prints every frontier point of every system."""

from __future__ import annotations

import re

import pytest
from cli_run import run, run_json

POINT = {"plan", "chips", "batch", "step_s", "tokens_per_s_per_chip", "tokens_per_s_per_user", "usd_per_mtok",
         "bound", "spec_tokens", "tokens_per_s_per_mw", "serving", "engine"}


@pytest.fixture(scope="module")
def several():
    return run_json("plan", "--frontier", "--systems", "gb200-nvl72,hgx-h100,hgx-h200", "--max-chips", "64",
                    "--price-per-chip-hour", "4,2.5,3", "--interactivity", "60", "--context", "2048", "--mode",
                    "ideal")


def test_json_fields_several_systems(several):
    d = several
    assert d["systems"] == ["gb200-nvl72", "hgx-h100", "hgx-h200"] and d["phase"] == "decode"
    assert d["workload"]["context"] == 2048 and d["mode"] == "ideal" and d["assumptions"]
    assert set(d["frontier"]) == set(d["systems"])
    at = d["at_interactivity"]
    assert at["tokens_per_s_per_user"] == 60 and at["source"] == "--interactivity"
    for name, price in zip(d["systems"], (4, 2.5, 3)):
        pts = d["frontier"][name]
        assert pts and all(set(p) == POINT for p in pts)
        u = [p["tokens_per_s_per_user"] for p in pts]
        c = [p["tokens_per_s_per_chip"] for p in pts]
        assert u == sorted(u, reverse=True) and c == sorted(c) and len(set(u)) == len(u)  # monotone
        for p in pts:
            assert p["usd_per_mtok"] == pytest.approx(price / 3600 / p["tokens_per_s_per_chip"] * 1e6)
        a = at["systems"][name]
        assert a["method"] in ("interpolated", "point", "unreachable")
        if a["method"] == "interpolated":
            lo, hi = a["interpolated"]["between"]
            assert lo["tokens_per_s_per_user"] >= 60 >= hi["tokens_per_s_per_user"]
            assert lo["tokens_per_s_per_chip"] <= a["tokens_per_s_per_chip"] <= hi["tokens_per_s_per_chip"]
            assert a["usd_per_mtok"] == pytest.approx(price / 3600 / a["tokens_per_s_per_chip"] * 1e6)
            assert a["best_point"] == lo or a["best_point"]["tokens_per_s_per_user"] >= 60


def test_views_and_layouts():
    """--view whole (default) pays for prefill: every point is aggregated or disaggregated and, at each of its
    speeds per user, no faster per chip than the decode-only view; --view decode labels its points so; with
    --mode calibrated each point names the profile's engine."""
    args = ("plan", "--frontier", "--model", "llama-3.1-8b", "--systems", "hgx-h100", "--max-chips", "8",
            "--prompt-tokens", "8192", "--output-tokens", "1024", "--context", "8704")
    whole, dec = run_json(*args), run_json(*args, "--view", "decode")
    assert whole["view"] == "whole" and whole["token_budget"] == 8192 and dec["view"] == "decode"
    assert {p["serving"] for p in whole["frontier"]["hgx-h100"]} <= {"aggregated", "disaggregated"}
    assert {p["serving"] for p in dec["frontier"]["hgx-h100"]} == {"decode"}
    for p in whole["frontier"]["hgx-h100"]:
        best = max(q["tokens_per_s_per_chip"] for q in dec["frontier"]["hgx-h100"]
                   if q["tokens_per_s_per_user"] >= p["tokens_per_s_per_user"])
        assert p["tokens_per_s_per_chip"] <= best * (1 + 1e-12)
    cal = run_json("plan", "--frontier", "--systems", "hgx-b200", "--max-chips", "8", "--mode", "calibrated")
    assert {p["engine"] for p in cal["frontier"]["hgx-b200"]} == {"trtllm"}
    for p in cal["frontier"]["hgx-b200"]:  # TensorRT-LLM: attention DP only with attention TP 1
        deg = dict(re.findall(r"(tp|ep|pp|adp)(\d+)", p["plan"]))
        tp, adp = int(deg["tp"]), int(deg.get("adp", deg["ep"]))  # the label leaves adp out when it equals ep
        assert tp == 1 or adp == 1, p["plan"]


def test_one_system_default_interactivity_is_one_over_tpot():
    d = run_json("plan", "--frontier", "--model", "llama-3.1-8b", "--systems", "hgx-h100", "--max-chips", "8",
                 "--tpot", "20ms")
    # no price given: the catalogue's TCO defaults price it (issue 35)
    assert list(d["frontier"]) == ["hgx-h100"] and d["price_source"] == "tco_defaults"
    price = d["prices"]["hgx-h100"]
    at = d["at_interactivity"]
    assert at["tokens_per_s_per_user"] == pytest.approx(50) and at["source"] == "1/tpot"
    for p in d["frontier"]["hgx-h100"]:
        assert p["usd_per_mtok"] == pytest.approx(price / 3600 / p["tokens_per_s_per_chip"] * 1e6, rel=1e-9)


def test_calibrated_mode():
    d = run_json("plan", "--frontier", "--systems", "hgx-h100", "--max-chips", "32", "--mode", "calibrated",
                 "--interactivity", "30")
    assert d["mode"] == "calibrated" and d["fidelity"].startswith("calibrated") and d["frontier"]["hgx-h100"]


def test_text_prints_every_point_and_the_plot(tmp_path):
    fig = tmp_path / "frontier.png"
    proc = run("plan", "--frontier", "--systems", "gb200-nvl72,hgx-h100", "--max-chips", "64", "--interactivity",
               "60", "--price-per-chip-hour", "4,2.5", "--plot", str(fig))
    assert proc.returncode == 0, proc.stderr
    assert fig.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and fig.stat().st_size > 10_000
    assert f"figure written to {fig}" in proc.stdout and "…" not in proc.stdout
    d = run_json("plan", "--frontier", "--systems", "gb200-nvl72,hgx-h100", "--max-chips", "64",
                 "--interactivity", "60")
    for name in ("gb200-nvl72", "hgx-h100"):
        n = len(d["frontier"][name])
        assert f"{name}: {n} frontier points" in proc.stdout
    rows = [ln for ln in proc.stdout.splitlines() if ln.startswith(" tp")]
    assert len(rows) == sum(len(v) for v in d["frontier"].values())
    assert "at 60 tokens/s per user" in proc.stdout


@pytest.mark.parametrize("args, field", [
    (("--plot", "missing-folder/f.png", "--max-chips", "1"), "plot"),  # an infeasible search: the path fails first
    (("--plot", "frontier.txt"), "--plot"),
    (("--interactivity", "0"), "--interactivity"),
    (("--view", "prefill"), "--view"),
    (("--layouts", "some"), "--layouts"),
    (("--max-chips-per-system", "gb200=4"), "--max-chips-per-system"),
])
def test_bad_input_exits_2_before_work(args, field, tmp_path):
    proc = run("plan", "--frontier", *args, cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:") and field in lines[0], proc.stderr
    assert list(tmp_path.iterdir()) == []
