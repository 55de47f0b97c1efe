"""Issue 19, one test per class: bounded runs (memory estimated before work), no silent reinterpretation,
outputs checked first and never clobbered, and the conventions a user expects (--version, -h, no-argument
runs, tables never cut, deterministic SVG, the web's warning). In-process (``cli_run.invoke``) except
where a real process is the point."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from cli_run import invoke, run
from llmecon.serving.budget import (BASE_BYTES, BYTES_PER_BATCH_SLOT, BYTES_PER_REPLICA, BYTES_PER_REQUEST,
                                    BYTES_PER_TOKEN, expected_requests, simulation_bytes)

SIM = ["simulate", "-m", "llama-3.1-8b", "-s", "hgx-h100"]


def fails(args, *needles):
    code, text = invoke(args)
    assert code == 2 and text.startswith("error: ") and text.count("\n") == 1 and "Traceback" not in text, text
    for needle in needles:
        assert needle in text, text
    return text


# ---- resource bounds ---------------------------------------------------------------------------------------

def test_memory_estimate_is_the_sum_of_its_measured_parts():
    """1e6 requests, longest 2,000 tokens, 3 replicas, 512 slots: 64 MB + 3.2 GB + 1.024 MB + 3,072 + 81,920 B."""
    got = simulation_bytes(requests=1e6, longest_tokens=2000, replicas=3, batch_slots=512)
    assert got == pytest.approx(64e6 + 3.2e9 + 1.024e6 + 3072 + 81920, rel=1e-12)
    assert got == pytest.approx(BASE_BYTES + 1e6 * BYTES_PER_REQUEST + 2000 * BYTES_PER_TOKEN
                                + 3 * BYTES_PER_REPLICA + 512 * BYTES_PER_BATCH_SLOT, rel=1e-12)
    assert expected_requests(rate_per_s=1e9, duration_s=1.0, requests=None) == pytest.approx(1.1e9 + 16)
    assert expected_requests(rate_per_s=1e9, duration_s=None, requests=7) == 7


@pytest.mark.parametrize("extra, needles", [
    (["--rate", "1e9", "--duration", "1"], ["--max-memory", "1,100,000,016 requests", "3.52 TB", "lower --rate"]),
    (["--duration", "1e12"], ["--max-memory", "PB"]),
    (["--requests", "20", "--replicas", "999999999"], ["999,999,999 replicas"]),
    (["--requests", "20", "--batch-cap", "99999999"], ["99,999,999 batch slots"]),
    (["--requests", "2000000"], ["raise --max-memory to 6.5GB"]),
    (["--requests", "5", "--max-memory", "1MB"], ["more than the 1 MB allowed"]),
])
def test_simulate_refuses_a_run_above_the_memory_limit_with_the_estimate(extra, needles):
    fails([*SIM, *extra], *needles)


def test_max_memory_lets_a_user_raise_the_limit_and_is_parsed_with_units():
    fails([*SIM, "--requests", "5", "--max-memory", "lots"], "--max-memory", "cannot read 'lots'")
    assert invoke([*SIM, "--requests", "5", "--max-memory", "64GB", "--json"])[0] == 0


def test_a_trace_is_sized_by_its_lines_before_it_is_parsed(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("arrival_s,prompt_tokens,output_tokens\n" + "0,10,10\n" * 2000)
    fails([*SIM, "--trace", str(p), "--max-memory", "70MB"], "a trace of 2,002 lines", "replay a shorter trace")


def test_lengths_are_checked_against_the_models_context_before_work():
    fails([*SIM, "--requests", "3", "--prompt", "100000000"], "--prompt", "131,072-token context")


def test_sweep_past_a_million_points_needs_yes_and_says_its_size(tmp_path):
    spec = tmp_path / "big.toml"
    spec.write_text('[analytic]\nmodels = ["llama-3.1-8b"]\nsystems = ["hgx-h100"]\nplans = "smallest"\n'
                    'phases = ["decode"]\nbatches = {start = 1, stop = 1000000, num = 2000}\n'
                    'contexts = {start = 1, stop = 100000, num = 1000}\n')
    text = fails(["sweep", str(spec), "--out", str(tmp_path / "o.parquet")], "--yes", "--dry-run")
    points = int(re.search(r"expands to ([\d,]+) points", text).group(1).replace(",", ""))
    assert points == 2_000_000 and "about 900 MB of memory and 100 MB on disk" in text  # 900 B x 1e6, 50 B x 2e6
    code, out = invoke(["sweep", str(spec), "--out", str(tmp_path / "o.parquet"), "--dry-run"])
    assert code == 0 and f"{points:,} points, about" in out
    assert not (tmp_path / "o.parquet").exists()


def test_sweep_ranges_and_chunks_are_bounded(tmp_path):
    spec = tmp_path / "s.toml"
    spec.write_text('[analytic]\nmodels = ["llama-3.1-8b"]\nsystems = ["hgx-h100"]\nphases = ["decode"]\n'
                    'batches = {start = 1, stop = 10, num = 1000000000000}\ncontexts = [1024]\n')
    fails(["sweep", str(spec), "--out", str(tmp_path / "o.parquet")], "num 1,000,000,000,000 is more than")


def test_predict_refuses_more_cases_than_it_takes(tmp_path, monkeypatch):
    import llmecon.commands.fidelity as fid  # MAX_CASES lives in the command layer

    monkeypatch.setattr(fid, "MAX_CASES", 2)
    p = tmp_path / "c.csv"
    p.write_text("model,system,phase,batch,context\n" + "llama-3.1-8b,hgx-h100,decode,1,1024\n" * 3)
    fails(["predict", str(p)], "3 cases, more than the 2")


# ---- no silent reinterpretation ------------------------------------------------------------------------------

@pytest.mark.parametrize("flag", ["--tp", "--ep", "--pp"])
def test_a_zero_degree_is_an_error_not_one(flag):
    fails(["step", "-m", "llama-3.1-8b", "-s", "hgx-h100", flag, "0"], f"{flag}: must be a whole number >= 1, got 0")


@pytest.mark.parametrize("extra, needles", [
    (["--tau", "0.1"], ["--tau: does not apply to the continuous policy (only to train)", "--policy train"]),
    (["--deadline", "0.1", "--policy", "train"], ["--deadline", "only to adaptive"]),
    (["--chunk-tokens", "512", "--policy", "adaptive"], ["--chunk-tokens", "continuous"]),
    (["--duration", "5"], ["--duration", "not both"]),
    (["--cv", "2"], ["--cv: applies to --arrival gamma only"]),
    (["--time-scale", "2"], ["--time-scale: applies to a replayed trace only"]),
])
def test_options_a_run_would_ignore_are_refused(extra, needles):
    fails([*SIM, "--requests", "5", *extra], *needles)


def test_synthetic_options_with_a_trace_are_refused(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("arrival_s,prompt_tokens,output_tokens\n0,10,10\n")
    fails([*SIM, "--trace", str(p), "--prompt", "100"], "--prompt: describes a synthetic workload")
    assert invoke([*SIM, "--trace", str(p), "--json"])[0] == 0


def test_train_that_does_not_fit_exits_2_naming_the_flags():
    fails(["train", "--model", "llama-3.1-70b", "--tp", "1", "--gpus", "8"], "needs", "per GPU", "--zero", "--tp")


def test_validate_with_nothing_predicted_exits_2(tmp_path):
    p = tmp_path / "m.csv"
    p.write_text("kind,model,system,batch,context,tp,measured_s\ndecode,llama-3.1-8b,hgx-h100,1,4096,3,0.05\n")
    fails(["validate", str(p), "--mode", "ideal"], "nothing in", "could be predicted", "not divisible by 3")


@pytest.mark.parametrize("field, value", [("hidden_size", 10 ** 30), ("num_hidden_layers", 10 ** 9),
                                          ("vocab_size", 2 ** 40), ("max_position_embeddings", 2 ** 40)])
def test_implausible_config_sizes_are_refused(tmp_path, field, value):
    config = {"architectures": ["LlamaForCausalLM"], "hidden_size": 4096, "num_hidden_layers": 32,
              "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256, "intermediate_size": 14336,
              "max_position_embeddings": 131072, field: value}
    p = tmp_path / "config.json"
    p.write_text(json.dumps(config))
    fails(["model", str(p)], f"field '{field}' = {value:,} is implausibly large")


def test_analyze_refuses_context_zero():
    fails(["analyze", "--mode", "ideal", "--context", "0"], "--context", ">= 1")


@pytest.mark.parametrize("args", [["batch", "--context", "nan"], ["step", "--batch", "inf"],
                                  ["overtrain", "--active-params", "-inf"], ["cost", "--price-per-chip-hour", "nan"]])
def test_non_finite_numbers_are_refused_at_parsing_in_one_line(args):
    fails(args, args[1], "must be a finite number")


def test_overtrain_names_its_flags_not_internal_variables():
    text = fails(["overtrain", "--deployment-days", "0"], "--deployment-days")
    assert "seconds" not in text


# ---- outputs: checked first, written atomically --------------------------------------------------------------

@pytest.mark.parametrize("args, needle", [
    ([*SIM, "--requests", "5", "--plot", "{d}/missing/p.png"], "does not exist"),
    ([*SIM, "--requests", "5", "--requests-out", "{d}"], "ending in .csv or .parquet"),
    (["analyze", "--mode", "ideal", "--report", "{d}/sub.html"], "is a folder"),
    (["train", "--plot", "{d}/keep.txt/x.png"], "is not a folder"),
    (["calibrate", "{d}/missing.csv", "--out", "{d}/nope/p.toml"], "--out"),
    (["predict", "{d}/missing.csv", "--out", "{d}/sub.html"], "ending in .csv"),
])
def test_output_paths_are_checked_before_any_work(tmp_path, args, needle):
    (tmp_path / "sub.html").mkdir()
    (tmp_path / "keep.txt").write_text("keep")
    fails([a.replace("{d}", str(tmp_path)) for a in args], needle)
    assert (tmp_path / "keep.txt").read_text() == "keep"


def test_calibrate_checks_out_before_the_fit(tmp_path, monkeypatch):
    """An unwritable --out fails before the (slow) fit, not after it."""
    import os

    import llmecon.fidelity.calibrate as cal

    monkeypatch.setattr(cal, "fit_profile", lambda *a, **k: pytest.fail("fit ran before --out was checked"))
    monkeypatch.setattr(os, "access", lambda path, mode: False)
    m = tmp_path / "m.csv"
    m.write_text("kind,accelerator,bytes,measured_s\ncopy,h100-sxm,1e9,0.001\n")
    fails(["calibrate", str(m), "--out", str(tmp_path / "p.toml")], "permission denied")


def test_a_failing_run_leaves_an_existing_output_untouched(tmp_path):
    out = tmp_path / "r.csv"
    out.write_text("yesterday's results\n")
    fails([*SIM, "--requests", "5", "--seed", "-1", "--requests-out", str(out)], "--seed")
    fails([*SIM, "--requests", "5", "--prompt", "999999999", "--requests-out", str(out)], "--prompt")
    assert out.read_text() == "yesterday's results\n" and sorted(p.name for p in tmp_path.iterdir()) == ["r.csv"]
    assert invoke([*SIM, "--requests", "5", "--requests-out", str(out)])[0] == 0
    assert out.read_text().startswith("request_id,arrival_s,")  # a run that succeeds replaces it


def test_svg_output_is_deterministic(tmp_path):
    a, b = tmp_path / "a.svg", tmp_path / "b.svg"
    for p in (a, b):
        assert invoke(["overtrain", "--plot", str(p)])[0] == 0
    assert a.read_bytes() == b.read_bytes() and b"<dc:date>" not in a.read_bytes()


# ---- conventions -------------------------------------------------------------------------------------------

def test_version_and_short_help():
    from llmecon import __version__

    assert invoke(["--version"]) == (0, f"llmecon {__version__}\n")
    for args in (["-h"], ["simulate", "-h"], ["prices", "infer", "-h"]):
        code, text = invoke(args)
        assert code == 0 and text.startswith("Usage: llmecon"), text


@pytest.mark.parametrize("command", ["analyze", "step", "batch", "context", "moe", "overtrain",
                                     "catalog models",
                                     "prices list"])
def test_commands_run_with_no_arguments_on_the_default_deployment(command):
    code, text = invoke(command.split())
    assert code == 0, text


@pytest.mark.parametrize("command", ["step", "batch"])
def test_step_and_batch_pick_a_plan_and_say_which(command):
    code, text = invoke([command])
    assert code == 0 and "the smallest that holds the weights in half of HBM" in text, text
    assert "chosen for you" in text
    code, text = invoke([command, "--tp", "4", "--ep", "4"])
    assert code == 0 and "chosen for you" not in text


@pytest.mark.parametrize("command", ["catalog models", "catalog systems", "catalog accelerators", "catalog tiers",
                                     "prices list", "plan", "step", "simulate -m llama-3.1-8b -s hgx-h100 "
                                     "--requests 5"])
@pytest.mark.parametrize("columns", ["80", None])
def test_tables_are_never_cut_when_piped_or_at_80_columns(command, columns):
    """A real process with stdout a pipe: rich cuts cells with "…" unless told to fold or widen."""
    import os

    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"} | ({"COLUMNS": columns} if columns else {})
    proc = subprocess.run([sys.executable, "-m", "llmecon", *command.split()], capture_output=True, text=True,
                          env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "…" not in proc.stdout


def test_web_warns_that_a_public_host_has_no_authentication():
    from llmecon.cli.web import _local

    assert _local("127.0.0.1") and _local("localhost") and _local("::1")
    assert not _local("0.0.0.0") and not _local("192.0.2.1")


def test_web_on_a_public_host_prints_the_warning():
    pytest.importorskip("uvicorn")
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "llmecon", "web", "--host", "0.0.0.0", "--port", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stderr.readline()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert line.startswith("warning: --host 0.0.0.0") and "no authentication" in line


def test_run_helper_matches_a_real_process():
    """``invoke`` (in-process) and ``python -m llmecon`` agree on exit code and message."""
    proc = run("step", "--tp", "0")
    code, text = invoke(["step", "--tp", "0"])
    assert (proc.returncode, proc.stderr) == (code, text)


@pytest.mark.parametrize("args, needles", [
    (["batch", "--plot", ""], ["--plot: is empty"]),
    ([*SIM, "--requests", "5", "--output", " "], ["--output: is empty"]),
    (["overtrain", "--active-params", "1e300"], ["--active-params", "at most 1e+24"]),
    (["step", "--adp", str(2 ** 70)], ["--adp", "at most 2^62"]),
    (["plan", "--tpot", "5GB"], ["--tpot", "'5 min'"]),  # a time is suggested time units
])
def test_empty_and_absurd_values_are_refused_not_reinterpreted(args, needles):
    fails(args, *needles)
