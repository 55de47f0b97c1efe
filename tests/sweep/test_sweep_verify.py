"""Resume that verifies (issue 31, item 4): each part's SHA-256 is in the manifest; a truncated,
garbage or copied part is recomputed (no traceback, no duplicated or missing points); a damaged
manifest is refused with the way to start over, and ``force`` starts over."""

from __future__ import annotations

import json
import shutil

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from llmecon.errors import SpecError
from llmecon.sweep import expand, parse_spec, run_sweep
from llmecon.sweep.store import MANIFEST, parts_dir

SPEC = """
name = "verify"
chunk_points = 8
[analytic]
models = ["llama-3.1-8b"]
systems = ["hgx-h100"]
plans = [{tp = 1}, {tp = 2}]
phases = ["decode"]
batches = [1, 4, 16, 64]
contexts = [512, 2048, 8192, 32768]
"""


@pytest.fixture(scope="module")
def work():
    return expand(parse_spec(SPEC, where="verify.toml"))


@pytest.fixture(scope="module")
def reference(work, tmp_path_factory):
    out = tmp_path_factory.mktemp("ref") / "r.parquet"
    run_sweep(work, out)
    return pq.read_table(out).replace_schema_metadata(None)


def _interrupted(work, out, after: int = 3):
    """Run until ``after`` chunks are finished, then stop as a Ctrl-C would."""
    def stop(done, total):
        if done >= after * 8:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_sweep(work, out, progress=stop)
    parts = sorted(parts_dir(out).glob("chunk-*.parquet"))
    assert len(parts) >= 3
    return parts


def _same(out, reference):
    t = pq.read_table(out).replace_schema_metadata(None)
    ids = t.column("point_id")
    assert len(pc.unique(ids)) == t.num_rows == reference.num_rows  # no duplicated, no missing points
    assert t.sort_by("point_id").equals(reference.sort_by("point_id"))


def test_the_manifest_records_a_digest_per_part(work, tmp_path):
    out = tmp_path / "r.parquet"
    parts = _interrupted(work, out)
    recorded = json.loads((parts_dir(out) / MANIFEST).read_text())["parts"]
    assert {str(int(p.name[6:14])) for p in parts} == set(recorded)
    assert all(len(v) == 64 for v in recorded.values())


@pytest.mark.parametrize("damage", ["truncate", "garbage", "copy"])
def test_a_bad_part_is_recomputed(work, tmp_path, reference, damage):
    """Before: truncated/garbage -> ArrowInvalid traceback; copy -> exit 0 with duplicated points."""
    out = tmp_path / "r.parquet"
    parts = _interrupted(work, out)
    if damage == "truncate":
        parts[1].write_bytes(parts[1].read_bytes()[:100])
    elif damage == "garbage":
        parts[1].write_bytes(b"not parquet at all" * 10)
    else:
        shutil.copyfile(parts[0], parts[1])
    run = run_sweep(work, out)
    assert run.skipped_chunks == len(parts) - 1 and run.computed_chunks == len(work.chunks) - len(parts) + 1
    _same(out, reference)


def test_a_damaged_manifest_says_how_to_start_over_and_force_does(work, tmp_path, reference):
    """Before: refused even with force, and the message did not say what to do."""
    out = tmp_path / "r.parquet"
    _interrupted(work, out)
    (parts_dir(out) / MANIFEST).write_text("{not json")
    with pytest.raises(SpecError, match="cannot be read.*force.*start over"):
        run_sweep(work, out)
    run = run_sweep(work, out, force=True)
    assert run.skipped_chunks == 0
    _same(out, reference)


def test_a_stale_concatenation_temp_file_is_removed(work, tmp_path, reference):
    out = tmp_path / "r.parquet"
    _interrupted(work, out)
    stale = tmp_path / ".r.parquet.tmp"
    stale.write_bytes(b"half a file")
    run_sweep(work, out)
    assert not stale.exists()
    _same(out, reference)
