"""Sweeps on Dask give the same rows as in-process, bit for bit: on a local cluster of 2 worker
processes started here (reached by its scheduler address, as an existing cluster would be), with
``scheduler="local"``, and with a worker killed mid-sweep (the scheduler reruns its tasks; parts are
keyed by chunk, so no row is lost or duplicated). Skipped without ``distributed`` installed."""

from __future__ import annotations

import os
import signal

import numpy as np
import pyarrow.parquet as pq
import pytest

pytest.importorskip("distributed")

from distributed import Client, LocalCluster  # noqa: E402

from llmecon.sweep import expand, parse_spec, run_sweep  # noqa: E402

SPEC = """
name = "dask"
chunk_points = 400
[analytic]
models = ["llama-3.1-8b", "qwen3-30b-a3b"]
systems = ["hgx-h100", "gb200-nvl72"]
plans = "auto"
max_chips = 8
phases = ["decode", "prefill"]
batches = {start = 1, stop = 4096, num = 13, scale = "log"}
contexts = [1024, 8192, 32768]
prices = [2.5]

[simulation]
models = ["llama-3.1-8b"]
systems = ["h100-sxm"]
policies = ["continuous", "adaptive"]
seeds = [0, 1]

[[simulation.workloads]]
rate = 5
duration = 2
prompt = "256"
output = "16"
"""


@pytest.fixture(scope="module")
def work():
    return expand(parse_spec(SPEC, where="dask.toml"))


@pytest.fixture(scope="module")
def reference(work, tmp_path_factory):
    out = tmp_path_factory.mktemp("ref") / "ref.parquet"
    run_sweep(work, out)
    return pq.read_table(out)


@pytest.fixture(scope="module")
def cluster():
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as c:
        yield c


def _same_bits(a, b) -> None:
    """Equal tables, and every float column equal bit for bit (NaN-free: nulls are nulls)."""
    assert a.schema.equals(b.schema) and a.num_rows == b.num_rows
    assert a.equals(b)
    for name in a.column_names:
        x = a[name].to_numpy(zero_copy_only=False)
        if x.dtype.kind == "f":
            y = b[name].to_numpy(zero_copy_only=False)
            assert np.array_equal(x.view(np.int64), y.view(np.int64)), name


def test_scheduler_address_gives_the_in_process_rows(work, reference, cluster, tmp_path):
    assert len(work.chunks) > 10
    out = tmp_path / "addr.parquet"
    seen = []
    run = run_sweep(work, out, scheduler=cluster.scheduler_address, progress=lambda d, t: seen.append((d, t)))
    assert run.mode == cluster.scheduler_address and run.workers == 2
    assert seen[0][0] == 0 and seen[-1] == (work.points, work.points) and len(seen) == len(work.chunks) + 1
    _same_bits(pq.read_table(out), reference)


def test_local_cluster_mode_gives_the_in_process_rows(work, reference, tmp_path):
    out = tmp_path / "local.parquet"
    run = run_sweep(work, out, scheduler="local", workers=2)
    assert run.mode == "local cluster" and run.workers == 2
    _same_bits(pq.read_table(out), reference)


def test_resume_on_a_cluster_after_an_in_process_interruption(work, reference, cluster, tmp_path):
    out = tmp_path / "mixed.parquet"
    with pytest.raises(KeyboardInterrupt):
        run_sweep(work, out, progress=lambda d, t: (_ for _ in ()).throw(KeyboardInterrupt) if d > 2000 else None)
    run = run_sweep(work, out, scheduler=cluster.scheduler_address)
    assert run.skipped_chunks >= 1 and run.skipped_chunks + run.computed_chunks == len(work.chunks)
    _same_bits(pq.read_table(out), reference)


def test_a_worker_killed_mid_sweep_loses_and_duplicates_nothing(work, reference, tmp_path):
    out = tmp_path / "killed.parquet"
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as cl, \
            Client(cl) as watcher:
        killed = {}

        def kill_one(done, total):
            if killed or done == 0:
                return
            busy = {w: len(tasks) for w, tasks in watcher.processing().items()}
            victim = max(busy, key=busy.get)
            pid = watcher.run(os.getpid, workers=[victim])[victim]
            killed.update(address=victim, done=done, total=total, busy=busy[victim])
            os.kill(pid, signal.SIGKILL)  # a crash: no goodbye to the scheduler

        run = run_sweep(work, out, client=watcher, progress=kill_one)
        assert killed and killed["done"] < killed["total"] and killed["busy"] >= 1  # it died mid-sweep, busy
        assert killed["address"] not in watcher.scheduler_info()["workers"]
    t = pq.read_table(out)
    ids = t["point_id"].to_numpy()
    assert len(np.unique(ids)) == len(ids) == work.points
    assert run.rows_written == work.points
    _same_bits(t, reference)


def test_workers_write_their_own_parts(work, reference, cluster, tmp_path, monkeypatch):
    """With ``workers_write`` the analytic parts are written by the workers: this process writes
    only the simulation parts (whose bytes still come back), and the rows are the same."""
    from llmecon.sweep import runner

    written_here = []
    real = runner.write_part
    monkeypatch.setattr(runner, "write_part", lambda out, cid, data: (written_here.append(cid), real(out, cid, data)))
    out = tmp_path / "own.parquet"
    run_sweep(work, out, scheduler=cluster.scheduler_address, workers_write=True)
    _same_bits(pq.read_table(out), reference)
    assert set(written_here) == {c.id for c in work.chunks if c.scenario >= 0}
