"""In-process sweeps: one row per point equal to ``inference`` at that point, $/Mtok from its
definition, non-fitting points kept, simulations as rows, resumption after an interruption skips
finished chunks and gives the same file, another spec's output is refused, and the summary's best
points and frontier agree with a brute-force pass over the whole file."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from llmecon.catalog.hardware import get_system
from llmecon.catalog.models import get_model
from llmecon.errors import SpecError
from llmecon.step.inference import decode_step, prefill_step
from llmecon.spec.plan import Plan
from llmecon.sweep import expand, parse_spec, run_sweep, summarise
from llmecon.sweep.store import parts_dir

SPEC = """
name = "run"
chunk_points = 7
[analytic]
models = ["llama-3.1-8b", "qwen3-30b-a3b"]
systems = ["h100-sxm", "hgx-h100"]
plans = [{tp = 1}, {tp = 2}, "tp4·ep4·pp1"]
phases = ["decode", "prefill"]
batches = [1, 16, 256, 4096]
contexts = [512, 32768]
prices = [2.0, 3.0]

[simulation]
models = ["llama-3.1-8b"]
systems = ["h100-sxm"]
policies = ["continuous", "train"]
prices = [2.0]
slo_tpot = 0.05

[[simulation.workloads]]
name = "tiny"
rate = 4
duration = 3
prompt = "256"
output = "32"
"""


@pytest.fixture(scope="module")
def work():
    return expand(parse_spec(SPEC, where="run.toml"))


@pytest.fixture(scope="module")
def full(work, tmp_path_factory):
    out = tmp_path_factory.mktemp("full") / "r.parquet"
    run = run_sweep(work, out)
    return run, pq.read_table(out)


def test_one_row_per_point_sorted_by_id(work, full):
    run, t = full
    assert run.rows_written == t.num_rows == work.points
    assert t["point_id"].to_pylist() == list(range(work.points))
    assert run.mode == "in-process" and run.skipped_chunks == 0 and run.computed_chunks == len(work.chunks)
    assert not parts_dir(Path(run.out)).exists()


def test_rows_equal_inference_at_each_point(work, full):
    """Spot-check rows against direct calls (bitwise: the same functions on the same numbers)."""
    _, t = full
    a = t.filter(pc.equal(t["kind"], "analytic")).to_pylist()
    rng = np.random.default_rng(0)
    for r in [a[i] for i in rng.choice(len(a), 40, replace=False)]:
        model, system = get_model(r["model"]), get_system(r["system"])
        plan = Plan(tp=r["tp"], ep=r["ep"], pp=r["pp"], adp=r["adp"])
        if r["phase"] == "decode":
            s = decode_step(model, system, batch=r["batch"], context=r["context"], plan=plan)
            per_user = 1.0 / float(s.step_s)
        else:
            s = prefill_step(model, system, batch=r["batch"], prompt_tokens=r["context"], plan=plan)
            per_user = r["context"] / float(s.step_s)
        assert r["step_s"] == float(s.step_s)
        assert r["compute_s"] == float(s.time.compute_s) and r["comm_s"] == float(s.time.comm_s)
        assert r["bound"] == str(s.bound) and r["fits"] == bool(s.fits)
        assert r["memory_per_chip_bytes"] == float(s.memory_per_chip_bytes)
        assert r["tokens_per_s_per_chip"] == pytest.approx(float(s.tokens_per_s) / plan.chips, rel=1e-12)
        assert r["tokens_per_s_per_user"] == pytest.approx(per_user, rel=1e-12)
        # $/Mtok = chips x price/3600 / tokens_per_s x 1e6
        usd = plan.chips * r["price_per_chip_hour"] / 3600 / float(s.tokens_per_s) * 1e6
        assert r["usd_per_mtok"] == pytest.approx(usd, rel=1e-12)
        assert r["weight_dtype"] == model.weight_dtype and r["chips"] == plan.chips


def test_points_that_do_not_fit_are_rows(full):
    _, t = full
    a = t.filter(pc.equal(t["kind"], "analytic"))
    fits = a["fits"].to_numpy(zero_copy_only=False)
    assert fits.any() and (~fits).any()  # 4096 sequences at 32k context do not fit one H100


def test_skipped_combinations_are_reported(work):
    # tp4·ep4 on the dense llama is invalid: its groups are skipped with the reason
    assert any("ep 4" in s.reason and "llama-3.1-8b" in s.what for s in work.skipped)
    assert work.points == sum(g.n_points for g in work.groups) + len(work.scenarios)


def test_simulation_rows(work, full):
    _, t = full
    s = t.filter(pc.equal(t["kind"], "simulation")).to_pylist()
    assert len(s) == len(work.scenarios) == 2
    assert {r["policy"] for r in s} == {"continuous", "train"}
    for r in s:
        assert r["note"] is None and r["completed"] > 0 and r["ttft_p50_s"] > 0 and r["usd_per_mtok"] > 0
        assert r["phase"] is None and r["step_s"] is None


def test_simulation_row_matches_the_simulator(work, full):
    from llmecon.spec.deployment import Deployment
    from llmecon.serving import SLO, SimConfig, simulate
    from llmecon.serving.policies import policy_from_name
    from llmecon.serving.workload import fixed, synthetic

    _, t = full
    row = t.filter(pc.equal(t["policy"], "train")).to_pylist()[0]
    sc = next(s for s in work.scenarios if s.policy == "train")
    wl = synthetic(rate_per_s=4, prompt=fixed(256), output=fixed(32), seed=0, duration_s=3)
    d = simulate(Deployment(model=sc.model, system=sc.system, plan=sc.plan), wl,
                 SimConfig(policy=policy_from_name("train"), slo=SLO(tpot_s=0.05), price_per_chip_hour=2.0)).summary()
    assert row["ttft_p99_s"] == d["ttft_p99_s"] and row["goodput_requests_per_s"] == d["goodput_requests_per_s"]
    assert row["tokens_per_s"] == d["throughput_tokens_per_s"] and row["usd_per_mtok"] == d["usd_per_mtok"]


def test_resume_after_interruption_skips_finished_chunks(work, full, tmp_path):
    out = tmp_path / "r.parquet"
    seen = []

    def stop_after_three(done, total):
        seen.append(done)
        if len(seen) == 4:  # the first call reports the start; three chunks written
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_sweep(work, out, progress=stop_after_three)
    assert not out.exists()
    assert len(list(parts_dir(out).glob("chunk-*.parquet"))) == 3
    run = run_sweep(work, out)
    assert run.skipped_chunks == 3 and run.computed_chunks == len(work.chunks) - 3
    assert pq.read_table(out).equals(full[1])
    again = run_sweep(work, out)  # complete: nothing recomputed
    assert again.computed_chunks == 0 and again.rows_written == work.points


def test_a_dataset_folder_holds_the_same_rows_and_resumes(work, full, tmp_path):
    import pyarrow.dataset as ds

    out = tmp_path / "rows"            # no .parquet suffix: a dataset folder, no concatenation
    with pytest.raises(KeyboardInterrupt):
        run_sweep(work, out, progress=lambda d, t: (_ for _ in ()).throw(KeyboardInterrupt) if d else None)
    run = run_sweep(work, out)
    assert run.skipped_chunks == 1 and run.rows_written == work.points
    t = ds.dataset(out, format="parquet").to_table()
    assert t.sort_by("point_id").equals(full[1].replace_schema_metadata(None))
    assert summarise(work, out).best == summarise(work, full[0].out).best
    assert run_sweep(work, out).computed_chunks == 0
    other = expand(parse_spec(SPEC.replace("[1, 16, 256, 4096]", "[1, 16]"), where="b.toml"))
    with pytest.raises(SpecError, match="different spec"):
        run_sweep(other, out)
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("x")
    with pytest.raises(SpecError, match="holds no sweep"):
        run_sweep(work, tmp_path / "mine", force=True)
    assert (tmp_path / "mine" / "notes.txt").exists()


def test_a_different_spec_is_refused_unless_forced(work, tmp_path):
    out = tmp_path / "r.parquet"
    small = expand(parse_spec(SPEC.replace("[1, 16, 256, 4096]", "[1, 16]"), where="b.toml"))
    with pytest.raises(KeyboardInterrupt):
        run_sweep(work, out, progress=lambda d, t: (_ for _ in ()).throw(KeyboardInterrupt) if d else None)
    with pytest.raises(SpecError, match="different spec"):
        run_sweep(small, out)
    run_sweep(small, out, force=True)
    with pytest.raises(SpecError, match="different sweep spec"):
        run_sweep(work, out)
    assert run_sweep(work, out, force=True).rows_written == work.points


def test_bad_modes_are_refused_before_work(work, tmp_path):
    out = tmp_path / "r.parquet"
    with pytest.raises(SpecError, match="workers needs scheduler local"):
        run_sweep(work, out, workers=2)
    with pytest.raises(SpecError, match="scheduler address"):
        run_sweep(work, out, scheduler="localhost")
    with pytest.raises(SpecError, match="does not exist"):
        run_sweep(work, tmp_path / "no" / "r.parquet")
    assert not out.exists() and not parts_dir(out).exists()


def test_summary_agrees_with_a_brute_force_pass(work, full):
    run, t = full
    s = summarise(work, run.out)
    assert s.objective == "usd_per_mtok"
    a = t.filter(pc.and_(pc.equal(t["kind"], "analytic"), t["fits"])).to_pylist()
    assert s.points_fitting == len(a)
    keys = {(r["model"], r["system"], r["phase"], r["context"]) for r in a}
    assert len(s.best) == len(keys)
    for b in s.best:
        rows = [r for r in a if (r["model"], r["system"], r["phase"], r["context"]) ==
                (b["model"], b["system"], b["phase"], b["context"])]
        lowest = min(r["usd_per_mtok"] for r in rows)
        assert b["usd_per_mtok"] == lowest
        assert b["point_id"] == min(r["point_id"] for r in rows if r["usd_per_mtok"] == lowest)
    for key in keys:
        rows = [r for r in a if (r["model"], r["system"], r["phase"], r["context"]) == key]
        front = [f for f in s.frontier_points() if (f["model"], f["system"], f["phase"], f["context"]) == key]
        assert front
        for f in front:  # nothing strictly better on both axes
            assert not any(r["tokens_per_s_per_chip"] >= f["tokens_per_s_per_chip"] and r["tokens_per_s_per_user"]
                           >= f["tokens_per_s_per_user"] and (r["tokens_per_s_per_chip"], r["tokens_per_s_per_user"])
                           != (f["tokens_per_s_per_chip"], f["tokens_per_s_per_user"]) for r in rows)
        for r in rows:   # every point is matched or beaten by a frontier point
            assert any(f["tokens_per_s_per_chip"] >= r["tokens_per_s_per_chip"] and f["tokens_per_s_per_user"]
                       >= r["tokens_per_s_per_user"] for f in front)
    (sim,) = s.simulation_best
    assert sim["usd_per_mtok"] == min(r["usd_per_mtok"] for r in t.filter(pc.equal(t["kind"], "simulation"))
                                      .to_pylist())


def test_summary_in_many_small_batches_equals_one_pass(work, full, monkeypatch):
    """Candidates merged after every batch (MERGE_ROWS 1: the most merges) keep the same best points and
    frontier as reading the whole file in one batch."""
    import llmecon.sweep.summary as summary

    run, t = full
    monkeypatch.setattr(summary, "BATCH_ROWS", t.num_rows + 1)
    whole = summarise(work, run.out)
    monkeypatch.setattr(summary, "BATCH_ROWS", 7)
    monkeypatch.setattr(summary, "MERGE_ROWS", 1)
    assert t.num_rows > 7 * 4                 # several batches and compactions per key
    assert summarise(work, run.out) == whole


def test_outputs_select_columns_but_keep_the_summarys(tmp_path):
    text = SPEC.replace('name = "run"', 'name = "run"\noutputs = ["bound"]')
    w = expand(parse_spec(text, where="o.toml"))
    run = run_sweep(w, tmp_path / "o.parquet")
    names = pq.read_schema(run.out).names
    assert "bound" in names and "usd_per_mtok" in names and "fits" in names
    assert "compute_s" not in names and "ttft_p50_s" not in names
    assert summarise(w, run.out).best


def test_one_sort_frontier_equals_pareto_front_per_key():
    """``summary._fronts`` (every key in one sort) keeps exactly ``pareto_front``'s rows of each key's rows
    in point-id order, ties included (equal throughputs: the lowest point id), over random keys of coarse
    (tie-rich) values, and the best row per key is the lowest objective, ties to the lowest point id."""
    from llmecon.econ.pareto import pareto_front
    from llmecon.sweep.summary import _best, _fronts

    rng = np.random.default_rng(7)
    for _ in range(50):
        n = int(rng.integers(1, 300))
        code = rng.integers(0, 5, n)
        pid = rng.permutation(10 * n)[:n]
        chip, user = rng.integers(0, 6, n).astype(float), rng.integers(0, 6, n).astype(float)
        obj = np.where(rng.random(n) < 0.1, np.nan, rng.integers(0, 4, n).astype(float))
        got = set(_fronts(code, pid, chip, user).tolist())
        want = set()
        for k in np.unique(code):
            rows = np.flatnonzero(code == k)
            rows = rows[np.argsort(pid[rows])]
            want |= set(rows[pareto_front(chip[rows], user[rows])].tolist())
        assert got == want
        best = {int(code[i]): int(i) for i in _best(code, pid, obj, lowest=True)}
        for k in np.unique(code[~np.isnan(obj)]):
            rows = [i for i in range(n) if code[i] == k and not np.isnan(obj[i])]
            assert best[int(k)] == min(rows, key=lambda i: (obj[i], pid[i]))


def test_frontier_ends_are_each_keys_fastest_and_densest(work, full):
    run, _ = full
    s = summarise(work, run.out)
    points = s.frontier_points()
    ends = s.frontier_ends()
    assert sum(e["points"] for e in ends) == len(points)
    for e in ends:
        key = tuple(e[k] for k in ("model", "system", "phase", "context"))
        mine = [p for p in points if (p["model"], p["system"], p["phase"], p["context"]) == key]
        assert e["points"] == len(mine)
        assert e["fastest_per_user"] == max(mine, key=lambda p: p["tokens_per_s_per_user"])
        assert e["most_per_chip"] == max(mine, key=lambda p: p["tokens_per_s_per_chip"])


def test_summary_streamed_from_the_parts_equals_the_file_read_back(work, full, tmp_path, monkeypatch):
    """``run_sweep``'s summary, reduced from each part as it is concatenated (in small batches here: many
    merges), equals ``summarise`` reading the finished file; a dataset folder or a finished file has none."""
    import llmecon.sweep.summary as summary

    run, _ = full
    monkeypatch.setattr(summary, "MERGE_ROWS", 1)
    fresh = run_sweep(work, tmp_path / "again.parquet")
    assert fresh.summary is not None and fresh.summary == summarise(work, run.out)
    assert fresh.summary.frontier.num_rows > 0
    assert run_sweep(work, tmp_path / "again.parquet").summary is None  # finished earlier: nothing streamed
    assert run_sweep(work, tmp_path / "folder").summary is None
