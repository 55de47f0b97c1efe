"""Issue 35, run as a user runs them: item 7 (`--top` with `--frontier`, `simulate --requests N` arrivals,
`predict --json` numbers, `prices list` at 80 columns; each failed before) and item 1 (the default mode)."""

from __future__ import annotations

import pytest
from cli_run import run, run_json


def test_simulate_counts_every_requested_arrival():
    """The last request arrives at the horizon itself; it used to be left out (999 of 1,000)."""
    d = run_json("simulate", "-m", "llama-3.1-8b", "-s", "hgx-h100", "--requests", "200", "--mode", "ideal")
    assert d["arrived"] == 200 and d["not_arrived"] == 0


def test_top_limits_the_frontier_tables():
    args = ("plan", "-m", "llama-3.1-8b", "--systems", "hgx-h100", "--frontier", "--max-chips", "8",
            "--mode", "ideal")
    every = run(*args)
    top = run(*args, "--top", "3")
    assert every.returncode == 0 and top.returncode == 0, top.stderr
    assert "shown (--top)" in top.stdout and "shown (--top)" not in every.stdout
    assert len(top.stdout.splitlines()) < len(every.stdout.splitlines())


def test_analyze_default_is_calibrated_with_the_ideal_floor():
    """Issue 35, item 1: `llmecon analyze` with no arguments prints calibrated figures (gb200's shipped
    profile) with the ideal floor beside them; --mode ideal gives the lecture's view alone."""
    d = run_json("analyze")
    assert (d["mode_requested"], d["mode"]) == ("auto", "calibrated") and "gb200" in d["fidelity"]
    floor = d["ideal_floor"]
    assert floor["mode"] == "ideal" and floor["calibrated_over_ideal"] >= 1
    assert floor["decode_step_s"] * floor["calibrated_over_ideal"] == pytest.approx(d["decode_at_batch"]["step_s"])
    ideal = run_json("analyze", "--mode", "ideal")
    assert ideal["mode"] == "ideal" and ideal["ideal_floor"] is None
    text = run("analyze")
    assert "calibrated (gb200/trtllm)" in text.stdout and "ideal floor" in text.stdout


def test_auto_on_a_chip_without_measurements_is_transferred_and_labelled():
    # mi325x: no measurement of its own (its vLLM profile is mi300x's, transferred); mi300x is measured now
    d = run_json("analyze", "-m", "llama-3.1-8b", "-s", "mi325x-8")
    assert d["mode"] == "calibrated" and d["transferred"] is True and d["expected_error"]
    assert run_json("analyze", "-m", "llama-3.1-8b", "-s", "mi300x-8")["transferred"] is False


def test_cost_default_prices_calibrated_from_sourced_defaults():
    """The issue's done-when: `cost --model deepseek-v3 --system gb200-nvl72` with no price flag prints $/Mtok
    from the sourced TCO defaults, calibrated, with the ideal floor; the title no longer says ideal."""
    d = run_json("cost", "--model", "deepseek-v3", "--system", "gb200-nvl72")
    assert (d["mode_requested"], d["mode"], d["price_source"]) == ("auto", "calibrated", "tco_defaults")
    assert 0 < d["ideal_floor"]["output_usd_per_mtok"] <= d["output_usd_per_mtok"]
    text = run("cost", "--model", "deepseek-v3", "--system", "gb200-nvl72")
    assert text.returncode == 0 and "ideal roofline" not in text.stdout and "with the ideal floor" in text.stdout


def test_predict_json_prints_numbers_as_numbers(tmp_path):
    """Issue 35: `predict --json` printed every cell as a string."""
    p = tmp_path / "c.csv"
    p.write_text("model,system,phase,batch,context\nllama-3.1-8b,hgx-h100,decode,4,1024\n")
    d = run_json("predict", str(p))
    (row,) = d["rows"]
    assert row["batch"] == 4 and isinstance(row["step_s"], float) and row["model"] == "llama-3.1-8b"


def test_prices_list_fits_80_columns():
    """Issue 35: `prices list` was unreadable at 80 columns (every cell folded to four characters)."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "COLUMNS": "80"}
    proc = subprocess.run([sys.executable, "-m", "llmecon", "prices", "list"], capture_output=True, text=True,
                          env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    table = [line for line in proc.stdout.splitlines() if "anthropic/" in line and "$" in line]
    assert table and all(len(line) <= 80 for line in table)
    assert "cache writes" in proc.stdout
