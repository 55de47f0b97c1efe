"""Issue 35, item 7 (UX), run as a user runs them: `--top` with `--frontier`, `simulate --requests N`
arrivals, `--spec-tokens 3` on the default model. Each failed before (ignored, N - 1 arrived, refused)."""

from __future__ import annotations

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


def test_spec_tokens_3_on_the_default_model_runs():
    proc = run("step", "--spec-tokens", "3", "--mode", "ideal")
    assert proc.returncode == 0, proc.stderr
    assert "assumed" in proc.stdout
