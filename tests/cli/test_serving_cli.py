"""``llmecon simulate`` end to end, run as ``python -m llmecon`` like tests/test_cli.py: --json has
the documented keys and agrees with the library, files are written (CSV; Parquet only with
pyarrow), bad input exits 2 with one ``error:`` line, no traceback and no file written."""

from __future__ import annotations

import csv

import pytest
from cli_run import run, run_json

SMALL = ("simulate", "-m", "llama-3.1-8b", "-s", "h100-sxm", "--rate", "5", "--duration", "20")
KEYS = {"completed", "rejected", "in_flight", "ttft_p50_s", "ttft_p99_s", "tpot_p50_s", "tpot_p99_s",
        "throughput_tokens_per_s", "goodput_requests_per_s", "usd_per_mtok"}




def fails(*args: str, match: str) -> None:
    proc = run(*args)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in proc.stderr, proc.stderr
    assert match in lines[0], lines[0]


@pytest.fixture(scope="module")
def default_run():
    return run_json("simulate")


def test_defaults_run_and_have_the_documented_keys(default_run):
    d = default_run
    assert KEYS <= set(d)
    assert d["model"] == "deepseek-v3" and d["system"] == "gb200-nvl72" and d["policy"] == "continuous"
    assert d["completed"] + d["rejected"] + d["in_flight"] == d["arrived"] > 0
    assert d["usd_per_mtok"] is None and "price-per-chip-hour" in d["usd_per_mtok_reason"]
    assert d["littles_law"]["rel_error"] < 1e-9


def test_json_matches_the_library():
    from llmecon.spec.deployment import Deployment
    from llmecon.econ.batching import smallest_plan
    from llmecon.catalog.hardware import get_system
    from llmecon.catalog.models import get_model
    from llmecon.serving import SimConfig, fixed, simulate, synthetic

    d = run_json(*SMALL, "--price-per-chip-hour", "2.5")
    m, s = get_model("llama-3.1-8b"), get_system("h100-sxm")
    dep = Deployment(model=m, system=s, plan=smallest_plan(m, s))
    res = simulate(dep, synthetic(rate_per_s=5, prompt=fixed(1024), output=fixed(256), duration_s=20, seed=0),
                   SimConfig(price_per_chip_hour=2.5))
    lib = res.summary()
    for k in KEYS:
        assert d[k] == pytest.approx(lib[k], rel=1e-12), k
    assert d["usd"] == pytest.approx(2.5 * 20 / 3600)


@pytest.mark.parametrize("policy", ["train", "adaptive", "disaggregated"])
def test_every_policy_runs(policy):
    d = run_json(*SMALL, "--policy", policy)
    assert d["policy"] == policy and d["completed"] > 0


def test_classes_and_chunked_prefill():
    d = run_json(*SMALL, "--class", "fast=8:1:10", "--class", "slow=128", "--class-mix", "fast=0.3",
                 "--class-mix", "slow=0.7", "--chunk-tokens", "1024", "--price-per-chip-hour", "2")
    names = [c["name"] for c in d["classes"]]
    assert names == ["fast", "slow"] and d["classes"][0]["price_usd_per_mtok"] == 10.0
    assert len(d["pools"]) == 2


def test_requests_csv_and_plot(tmp_path):
    out, fig = tmp_path / "r.csv", tmp_path / "f.png"
    d = run_json(*SMALL, "--requests-out", str(out), "--plot", str(fig))
    rows = list(csv.DictReader(out.open()))
    assert len(rows) == d["arrived"]
    assert sum(r["status"] == "completed" for r in rows) == d["completed"]
    assert fig.stat().st_size > 1000


def test_parquet_needs_pyarrow(tmp_path):
    out = tmp_path / "r.parquet"
    import importlib.util

    if importlib.util.find_spec("pyarrow") is None:
        fails(*SMALL, "--requests-out", str(out), match="pip install pyarrow")
        assert not out.exists()
        return
    run_json(*SMALL, "--requests-out", str(out))
    assert out.stat().st_size > 0


def test_trace_replay(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("arrival_s,prompt_tokens,output_tokens\n0,100,10\n0.5,200,20\n1.0,300,5\n")
    d = run_json("simulate", "-m", "llama-3.1-8b", "-s", "h100-sxm", "--trace", str(p), "--drain")
    assert d["completed"] == 3 and d["workload"] == "trace t.csv"


def test_human_output():
    proc = run(*SMALL)
    assert proc.returncode == 0 and "TTFT" in proc.stdout and "Little" in proc.stdout


@pytest.mark.parametrize("args, match", [
    (("--policy", "continous"), "did you mean 'continuous'"),
    (("--rate", "-1"), "--rate"),
    (("--prompt", "lognormal:x"), "--prompt"),
    (("--arrival", "poison"), "did you mean 'poisson'"),
    (("--class", "fast"), "NAME=VALUE"),
    (("--chunk-tokens", "100"), "--chunk-tokens 100"),
    (("--preemption", "swap"), "no host memory tier"),
    (("--requests-out", "/nonexistent/x.csv"), "does not exist"),
    (("--requests-out", "x.txt"), ".csv or .parquet"),
    (("--trace", "/nonexistent.csv"), "no such file"),
    (("--prefix-hit-rate", "0.5"), "--prefix-tokens"),
])
def test_bad_input_exits_2_with_one_line(args, match, tmp_path):
    fails(*SMALL, *args, match=match)
