"""``llmecon sweep`` end to end (``python -m llmecon``): --json carries the documented keys and
matches the written file; --dry-run computes nothing; bad specs and bad modes exit 2 with one
``error:`` line, no traceback, and nothing written; --scheduler local runs on Dask."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest
from cli_run import run

SPEC = """
name = "cli"
[analytic]
models = ["llama-3.1-8b"]
systems = ["hgx-h100"]
plans = [{tp = 1}, {tp = 2}, {tp = 8}]
phases = ["decode", "prefill"]
batches = [1, 32, 1024]
contexts = [2048, 16384]
prices = [2.0]
"""

KEYS = {"spec", "spec_hash", "points", "analytic_points", "groups", "simulations", "chunks", "skipped_points",
        "skipped", "out", "mode", "workers", "rows_written", "skipped_chunks", "computed_chunks", "elapsed_s",
        "points_per_s", "objective", "points_fitting", "best", "frontier_size", "frontier_ends", "simulation_best"}


@pytest.fixture()
def spec(tmp_path):
    p = tmp_path / "s.toml"
    p.write_text(SPEC)
    return p


def _strict(text: str) -> dict:
    def no_constants(name):
        raise AssertionError(f"non-strict JSON constant {name}")
    return json.loads(text, parse_constant=no_constants)


def test_json_summary_matches_the_file(spec, tmp_path):
    out = tmp_path / "r.parquet"
    proc = run("sweep", str(spec), "--out", str(out), "--json")
    assert proc.returncode == 0, proc.stderr
    d = _strict(proc.stdout)
    assert set(d) == KEYS
    assert d["points"] == d["rows_written"] == 3 * 2 * 3 * 2 == pq.read_metadata(out).num_rows
    assert d["mode"] == "in-process" and d["skipped_chunks"] == 0 and d["objective"] == "usd_per_mtok"
    assert {(b["phase"], b["context"]) for b in d["best"]} == {(p, c) for p in ("decode", "prefill")
                                                               for c in (2048.0, 16384.0)}
    assert "frontier" not in d  # every frontier point only with --frontier-points (issue 36 item 5)
    assert {(e["phase"], e["context"]) for e in d["frontier_ends"]} == {(p, c) for p in ("decode", "prefill")
                                                                         for c in (2048.0, 16384.0)}
    assert "sweeping points" not in proc.stderr  # --json is quiet
    every = _strict(run("sweep", str(spec), "--out", str(out), "--json", "--frontier-points").stdout)
    assert set(every) == KEYS | {"frontier"} and len(every["frontier"]) == d["frontier_size"]
    assert all(f["model"] == "llama-3.1-8b" for f in every["frontier"])
    for e in d["frontier_ends"]:  # the ends are frontier points: the fastest per user, the most per chip
        mine = [f for f in every["frontier"] if (f["phase"], f["context"]) == (e["phase"], e["context"])]
        assert e["points"] == len(mine)
        assert e["fastest_per_user"] == max(mine, key=lambda f: f["tokens_per_s_per_user"])
        assert e["most_per_chip"] == max(mine, key=lambda f: f["tokens_per_s_per_chip"])


def test_text_output_and_resume(spec, tmp_path):
    out = tmp_path / "r.parquet"
    first = run("sweep", str(spec), "--out", str(out))
    assert first.returncode == 0, first.stderr
    assert "best point per model, system, phase and context" in first.stdout and "frontier" in first.stdout
    again = run("sweep", str(spec), "--out", str(out), "--json")
    assert _strict(again.stdout)["computed_chunks"] == 0


def test_dry_run_computes_nothing(spec, tmp_path):
    out = tmp_path / "r.parquet"
    proc = run("sweep", str(spec), "--out", str(out), "--dry-run", "--json")
    assert proc.returncode == 0, proc.stderr
    d = _strict(proc.stdout)
    assert d["points"] == 36 and d["chunks"] == 1 and not out.exists()


@pytest.mark.parametrize("old, new, words", [
    ("systems = ", "sytems = ", ["unknown key 'sytems'", "did you mean 'systems'"]),
    ('["llama-3.1-8b"]', '["llama-3.1-9b"]', ["unknown model 'llama-3.1-9b'"]),
    ("batches = [1, 32, 1024]", "batches = []", ["batches", "empty axis"]),
    ('plans = [{tp = 1}, {tp = 2}, {tp = 8}]', 'plans = [{tp = 3}]', ["nothing to run", "--tp 3"]),
])
def test_bad_specs_exit_2_before_any_work(spec, tmp_path, old, new, words):
    spec.write_text(SPEC.replace(old, new))
    out = tmp_path / "r.parquet"
    proc = run("sweep", str(spec), "--out", str(out))
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ")
    for w in words:
        assert w in lines[0]
    assert not out.exists() and not (tmp_path / "r.parquet.parts").exists()


@pytest.mark.parametrize("args, words", [
    (["--workers", "2"], "--workers needs --scheduler local"),
    (["--scheduler", "somewhere"], "scheduler address"),
])
def test_bad_modes_exit_2(spec, tmp_path, args, words):
    proc = run("sweep", str(spec), "--out", str(tmp_path / "r.parquet"), *args)
    assert proc.returncode == 2 and words in proc.stderr and "Traceback" not in proc.stderr


def test_missing_spec_file_exits_2(tmp_path):
    proc = run("sweep", str(tmp_path / "none.toml"), "--out", str(tmp_path / "r.parquet"))
    assert proc.returncode == 2 and "no such file" in proc.stderr


def test_scheduler_local_from_the_command_line(spec, tmp_path):
    pytest.importorskip("distributed")
    ref, out = tmp_path / "ref.parquet", tmp_path / "dask.parquet"
    assert run("sweep", str(spec), "--out", str(ref), "--json").returncode == 0
    proc = run("sweep", str(spec), "--out", str(out), "--scheduler", "local", "--workers", "2", "--json")
    assert proc.returncode == 0, proc.stderr
    d = _strict(proc.stdout)
    assert d["mode"] == "local cluster" and d["workers"] == 2
    assert pq.read_table(out).equals(pq.read_table(ref))
