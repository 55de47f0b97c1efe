"""Fuzz (issue 19): hypothesis drives the command line's argument parser and the file loaders with hostile
values. Whatever a user types: exit 0 or 2, never a traceback, no file clobbered by a failing run, no
temporary file left behind, and memory bounded. Seeded (``derandomize``) and bounded so that it runs
in well under a minute on two cores; ``tests/web/test_web_schemathesis.py`` covers the web API.

The commands and their options are read from the live command tree (``llmecon.cli.command``), so a new
option is fuzzed without touching this file. Excluded: ``web`` (a valid value would start a server;
its bad --port is covered in tests/cli/test_cli_web.py) and ``measure`` (needs a GPU)."""

from __future__ import annotations

import hashlib
import json
import re
import resource
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from cli_run import CMD, invoke
from llmecon.errors import LlmeconError

SKIP_COMMANDS = {"web", "measure"}
SKIP_OPTIONS = {"--help", "-h", "--version", "--scheduler", "--workers", "--force", "--yes"}
# keep runs small whatever else is drawn: a fuzz example must not start a long simulation or search
BASE = {"simulate": ["-m", "llama-3.1-8b", "-s", "hgx-h100", "--requests", "5"],
        "plan": ["--systems", "hgx-h100", "--max-chips", "8"],
        "train": ["--gpus", "8", "--tp", "8"]}
# flags whose valid values can make a run large: only drawn with values that are never valid for them
SIZE_FLAGS = {"--requests", "--duration", "--rate", "--max-chips", "--replicas", "--batch-cap", "--max-memory",
              "--prefill-replicas", "--decode-replicas", "--gpus", "--top", "--max-batch", "--max-ep", "--sequences"}
INVALID = ["nan", "inf", "-inf", "-1", "-0.5", "x", "", " ", "1,5", "é", "\u202e", "1e400", "--json", "-", "0x1p3",
           "a" * 300]
HOSTILE = INVALID + ["0", "-0.0", "1e30", "1e-300", "99999999999999999999", "0.5", "3"]
MAX_RSS_GROWTH_BYTES = 2 << 30


def _leaves(cmd, path=()):
    subs = getattr(cmd, "commands", None)
    if subs:
        for name, sub in sorted(subs.items()):
            if not path and name in SKIP_COMMANDS:
                continue
            yield from _leaves(sub, path + (name,))
    else:
        options = [max(p.opts, key=len) for p in cmd.params if getattr(p, "opts", None)
                   and max(p.opts, key=len).startswith("--") and max(p.opts, key=len) not in SKIP_OPTIONS]
        takes_file = any(type(p).__name__ == "TyperArgument" for p in cmd.params)
        yield path, options, takes_file


LEAVES = list(_leaves(CMD))
assert len(LEAVES) > 20  # the tree was read


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    """Hostile input files and an existing output that no failing run may touch."""
    d = tmp_path_factory.mktemp("fuzz")
    made = {"not_utf8.csv": b"a,b\n\xff\xfe,1\n", "deep.json": b"[" * 50_000 + b"]" * 50_000,
            "deep.toml": b"a = " + b"[" * 50_000 + b"]" * 50_000, "empty.csv": b"", "nul.csv": b"a,b\n1,\x002\n",
            "huge.json": json.dumps({"hidden_size": 10 ** 30, "num_hidden_layers": 2, "num_attention_heads": 2,
                                     "vocab_size": 10, "intermediate_size": 4}).encode(),
            "nan.json": b'{"hidden_size": NaN, "num_hidden_layers": 2}', "list.json": b"[1, 2]",
            "existing.csv": b"keep me\n", "existing.png": b"keep me\n", "existing.html": b"keep me\n",
            "existing.toml": b"keep me\n", "existing.parquet": b"keep me\n"}
    for name, data in made.items():
        (d / name).write_bytes(data)
    (d / "folder.csv").mkdir()
    return {name: d / name for name in [*made, "folder.csv"]} | {"dir": d}


def _paths(files) -> list[str]:
    d = files["dir"]
    return [str(files[n]) for n in files if n != "dir"] + [str(d / "missing" / "x.csv"), str(d / "new.svg"),
                                                           str(d / "existing.csv" / "x.csv"), str(d)]


def _snapshot(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
            for p in sorted(folder.rglob("*"))}


def _check(args, code, text, before, after):
    assert code in (0, 2), f"llmecon {' '.join(args)} -> {code}\n{text[-3000:]}"
    assert "Traceback" not in text, f"llmecon {' '.join(args)}\n{text[-3000:]}"
    assert not [n for n in after if ".tmp" in n], f"llmecon {' '.join(args)} left temporary files"
    if code == 2:  # a failing run leaves every existing file as it was
        changed = [n for n in before if after.get(n) != before[n]]
        assert not changed, f"llmecon {' '.join(args)} failed but changed {changed}"


@st.composite
def command_lines(draw, files):
    path, options, takes_file = draw(st.sampled_from(LEAVES))
    args = list(path) + BASE.get(path[0], [])
    paths = _paths(files)
    if takes_file:  # the spec, cases, measurement or config file the command reads
        args.append(draw(st.sampled_from(paths + ["llama-3.1-8b"])))
    for opt in draw(st.lists(st.sampled_from(options), max_size=3, unique=True)) if options else []:
        pool = INVALID if opt in SIZE_FLAGS else HOSTILE + paths
        args += [opt, draw(st.sampled_from(pool))]
    return args


@settings(max_examples=300, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_no_command_line_ends_in_a_traceback_or_clobbers_a_file(files, data):
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    args = data.draw(command_lines(files))
    before = _snapshot(files["dir"])
    code, text = invoke(args)
    event(f"{args[0]}: exit {code}")  # --hypothesis-show-statistics shows the spread
    after = _snapshot(files["dir"])
    for name in set(after) - set(before):  # what a successful run wrote: removed so examples stay independent
        p = files["dir"] / name
        if p.is_file():
            p.unlink()
    _check(args, code, text, before, after)
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - rss0 < MAX_RSS_GROWTH_BYTES


@pytest.mark.parametrize("args", [
    ["analyze", "--mode", "ideal", "--model", "{not_utf8.csv}"], ["analyze", "--mode", "ideal", "--model",
                                                                  "{deep.json}"], ["model", "{huge.json}"],
    ["model", "{nan.json}"], ["model", "{list.json}"], ["analyze", "--mode", "ideal", "--profile", "{deep.toml}"],
    ["sweep", "{deep.toml}", "--out", "{dir}/o.parquet"], ["predict", "{nul.csv}"], ["calibrate", "{not_utf8.csv}"],
    ["validate", "{empty.csv}"], ["simulate", "--trace", "{not_utf8.csv}"], ["simulate", "--trace", "{folder.csv}"],
    ["simulate", "--requests", "5", "-m", "llama-3.1-8b", "-s", "hgx-h100", "--plot", "{existing.csv}"],
    ["calibrate", "{not_utf8.csv}", "--out", "{existing.toml}"],
    ["analyze", "--mode", "ideal", "--report", "{folder.csv}"],
    ["batch", "--context", "nan"], ["simulate", "--requests", "0"], ["simulate", "--seed", "-1"],
    ["simulate", "--rate", "1e9", "--duration", "1"], ["simulate", "--duration", "1e12"],
    ["analyze", "--mode", "ideal", "--tp", "0"], ["analyze", "--mode", "ideal", "--context", "0"],
    ["simulate", "--tau", "1", "--requests", "5"],
])
def test_the_cases_issue_19_names_exit_2_with_one_line(files, args):
    args = [re.sub(r"\{([^}]+)\}", lambda m: str(files[m.group(1)]), a) for a in args]
    before = _snapshot(files["dir"])
    code, text = invoke(args)
    _check(args, code, text, before, _snapshot(files["dir"]))
    assert code == 2 and text.startswith("error: ") and text.count("\n") == 1, text


# ---- the file loaders ------------------------------------------------------------------------------------

JSON_LEAVES = st.one_of(st.none(), st.booleans(), st.integers(min_value=-(10 ** 40), max_value=10 ** 40),
                        st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=20))
JSON_VALUES = st.recursive(JSON_LEAVES, lambda inner: st.lists(inner, max_size=4)
                           | st.dictionaries(st.text(max_size=12), inner, max_size=4), max_leaves=20)
CONFIG_KEYS = ["hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "vocab_size",
               "intermediate_size", "head_dim", "max_position_embeddings", "num_local_experts",
               "num_experts_per_tok", "architectures", "model_type", "torch_dtype", "sliding_window", "text_config"]


def _loaders():
    from llmecon.catalog.efficiency import load_profile
    from llmecon.catalog.models import get_model
    from llmecon.catalog.prices import load_price_file
    from llmecon.econ.routed_scaling import load_routed_law
    from llmecon.fidelity.measurements import read_csv
    from llmecon.fidelity.predict import read_cases
    from llmecon.serving.workload import load_trace
    from llmecon.sweep.spec import load_spec

    return {".json": [get_model], ".toml": [load_profile, load_spec, load_price_file, load_routed_law],
            ".csv": [read_cases, read_csv, load_trace], ".jsonl": [load_trace]}


LOADERS = _loaders()


def _load_all(path: Path) -> None:
    for load in LOADERS[path.suffix]:
        try:
            load(path)
        except LlmeconError:
            pass  # refused with a message: what bad input should get


@settings(max_examples=60, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(config=st.dictionaries(st.sampled_from(CONFIG_KEYS), JSON_VALUES, max_size=10))
def test_any_config_json_is_read_or_refused(tmp_path, config):
    p = tmp_path / "config.json"
    p.write_text(json.dumps(config), encoding="utf-8")
    _load_all(p)


@settings(max_examples=60, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(max_size=400) | st.text(max_size=400).map(lambda t: t.encode("utf-8", "surrogatepass")),
       suffix=st.sampled_from(sorted(LOADERS)))
def test_any_bytes_are_read_or_refused_by_every_loader(tmp_path, data, suffix):
    p = tmp_path / f"f{suffix}"
    p.write_bytes(data)
    _load_all(p)


@settings(max_examples=60, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(st.lists(st.sampled_from(["0", "1", "-1", "nan", "inf", "1e400", "1e30", "", "x", "2.5",
                                               "llama-3.1-8b", "hgx-h100", "decode", "serving", "99999999999999"]),
                              min_size=1, max_size=14), max_size=6),
       header=st.sampled_from(["arrival_s,prompt_tokens,output_tokens,class,prefix_id",
                               "model,system,phase,batch,context,prompt_tokens,output_tokens,tp,ep,pp",
                               "kind,accelerator,seconds,bytes,flops"]))
def test_any_csv_rows_are_read_or_refused(tmp_path, rows, header):
    p = tmp_path / "f.csv"
    p.write_text(header + "\n" + "\n".join(",".join(r) for r in rows) + "\n", encoding="utf-8")
    _load_all(p)
