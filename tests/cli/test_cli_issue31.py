"""Issue 31 items 5 and 6: all-or-nothing outputs (a failed run leaves every existing file
byte-identical, stale temp files of ours are removed, OS errors name the path and the flag),
``--max-queue 0`` refused, duplicated CSV columns refused, no message asks a user to edit the library."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pytest

from cli_run import invoke
from llmecon import files
from llmecon.errors import CatalogError, SpecError

SIM = ["simulate", "-m", "llama-3.1-8b", "-s", "hgx-h100", "--requests", "40"]


def _fails(args, *needles):
    code, text = invoke(args)
    assert code == 2 and text.startswith("error: ") and text.count("\n") == 1 and "Traceback" not in text, text
    for needle in needles:
        assert needle in text, text
    return text


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc (a folder no file can be made in)")
def test_a_failed_run_leaves_every_output_as_it_was(tmp_path):
    """Before: --requests-out keep.csv was rewritten, then --plot failed naming a temp file."""
    keep = tmp_path / "keep.csv"
    keep.write_bytes(b"precious\n")
    text = _fails(SIM + ["--requests-out", str(keep), "--plot", "/proc/x.png"], "--plot /proc/x.png",
                  "cannot be written")
    assert ".tmp" not in text
    assert keep.read_bytes() == b"precious\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.csv"]


def test_a_successful_run_writes_all_its_outputs(tmp_path):
    keep = tmp_path / "keep.csv"
    keep.write_bytes(b"precious\n")
    code, text = invoke(SIM + ["--requests-out", str(keep), "--plot", str(tmp_path / "p.svg")])
    assert code == 0, text
    assert keep.read_text().startswith("id,") or "," in keep.read_text().splitlines()[0]
    assert (tmp_path / "p.svg").stat().st_size > 0
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_stale_temp_files_of_dead_runs_are_removed(tmp_path):
    target = tmp_path / "out.csv"
    dead = tmp_path / ".out.csv.999999999.abcd.tmp.csv"  # no such process
    live = tmp_path / f".out.csv.{os.getpid()}.efgh.tmp.csv"  # a write in progress: kept
    other = tmp_path / ".notes.txt.999999999.x.tmp.txt"  # another file's: not ours to judge here
    for p in (dead, live, other):
        p.write_text("x")
    files.write_text(target, "a,b\n")
    assert target.read_text() == "a,b\n"
    assert not dead.exists() and live.exists() and other.exists()


def test_a_disk_full_error_names_the_path_and_the_flag(tmp_path, monkeypatch):
    out = tmp_path / "o.csv"
    files.check_output(out, field="requests_out", suffixes=(".csv",))

    def full(self, *a, **k):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Path, "write_text", full)
    with pytest.raises(SpecError) as exc:
        files.write_text(out, "x")
    assert exc.value.field == "requests_out" and "No space left" in str(exc.value) and str(out) in exc.value.render()
    monkeypatch.undo()
    assert not out.exists() and not list(tmp_path.iterdir())


def test_staged_writes_are_renamed_only_when_the_block_succeeds(tmp_path):
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("old a")
    with pytest.raises(RuntimeError), files.all_or_nothing():
        files.write_text(a, "new a")
        files.write_text(b, "new b")
        raise RuntimeError("the run failed after writing")
    assert a.read_text() == "old a" and not b.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["a.txt"]
    with files.all_or_nothing():
        files.write_text(a, "new a")
        files.write_text(b, "new b")
        assert a.read_text() == "old a"  # not yet
    assert a.read_text() == "new a" and b.read_text() == "new b"


def test_max_queue_zero_is_refused_with_what_it_would_do():
    """Before: accepted, then every request was rejected even on an idle server."""
    _fails(SIM + ["--max-queue", "0"], "--max-queue", "reject every request", "leave it out")
    code, text = invoke(SIM + ["--max-queue", "1", "--json"])
    assert code == 0, text


def test_a_duplicated_csv_column_is_refused(tmp_path):
    """Before: csv.DictReader silently kept the last of the two cells."""
    with pytest.raises(CatalogError, match="column 'batch' appears twice.*columns 4 and 5"):
        files.csv_rows("model,system,phase,batch,batch\nx,y,decode,1,2\n", "c.csv")
    p = tmp_path / "c.csv"
    p.write_text("model,system,phase,batch,context,batch\nllama-3.1-8b,hgx-h100,decode,1,9,2\n")
    _fails(["predict", str(p)], "'batch' appears twice")
    _fails(["predict", str(p), "--out", str(tmp_path / "o.csv")], "'batch' appears twice")


def test_an_unknown_config_key_does_not_ask_to_edit_the_library(tmp_path):
    hf = Path(__file__).resolve().parents[2] / "src" / "llmecon" / "catalog" / "models"
    config = json.loads((hf / "llama-3.1-8b.json").read_text())
    config["frobnication_depth"] = 3
    p = tmp_path / "config.json"
    p.write_text(json.dumps(config))
    from llmecon.catalog.hf_config import load_config_file

    with pytest.raises(CatalogError) as exc:
        load_config_file(p)
    text = str(exc.value)
    assert "frobnication_depth" in text and "hf_layers" not in text and "add it to" not in text
