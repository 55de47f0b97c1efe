"""``predict --out`` as a stream (issue 31 item 3, issue 36 item 4): the same values as the in-memory
``predict_cases`` + ``write_cases`` (CSV rounded to 6 significant digits, Parquet at full precision),
in blocks (memory flat in rows), errors naming the same line, nothing written on failure, and a row
cap with a clear refusal where rows are printed."""

from __future__ import annotations

import csv
import io

import numpy as np
import pyarrow.parquet as pq
import pytest

from cli_run import invoke
from llmecon.errors import CatalogError
from llmecon.fidelity import predict_stream as ps
from llmecon.fidelity.predict import parse_cases, predict_cases, write_cases
from llmecon.fidelity.predict_stream import predict_file, round6

HEAD = ("id,model,system,phase,batch,context,prompt_tokens,output_tokens,tp,ep,pp,weight_dtype,kv_dtype,plan,"
        "spec_tokens,deployment,prefill_plan,prefill_workers,decode_plan,decode_workers\n")
LINES = [
    "a,llama-3.1-8b,hgx-h100,decode,32,2048,,,1,,,,,,,,,,,",
    "b,llama-3.1-8b,hgx-h100,prefill,2,,1024,,2,,,,,,,,,,,",
    "c,qwen3-32b,hgx-h100,serving,64,,2048,256,2,,,fp8,fp8,,,,,,,",
    "d, llama-3.1-8b ,hgx-h100,decode, 8 ,512,,,1,,,,,,,,,,,",
    "e,deepseek-v3,gb200-nvl72,decode,64,4096,,,,,,,,tp8·ep8·pp1·adp1,1,,,,,",
    'f,llama-3.1-70b,hgx-h100,serving,8,,1000,500,,,,,,,,disaggregated,"tp8,ep1",2,tp8·ep1·pp1,4',
    "g,llama-3.1-8b,hgx-h200,decode,1,100,,,1,,,,,,,,,,,",
]


def _text(n_repeats: int = 1) -> str:
    rng = np.random.default_rng(0)
    body = []
    for k in range(n_repeats):
        for line in LINES:
            cells = line.split(",")
            if cells[3] == "decode":
                cells[5] = str(int(rng.integers(1, 8192)))
            body.append(",".join(cells))
    return HEAD + "\n".join(body) + "\n"


def _old(text: str) -> list[dict]:
    return list(csv.DictReader(io.StringIO(write_cases(predict_cases(parse_cases(text))))))


def _same(a: list[dict], b: list[dict]) -> None:
    assert len(a) == len(b) and list(a[0]) == list(b[0])
    for x, y in zip(a, b):
        for k in x:
            if x[k] != y[k]:
                assert float(x[k]) == float(y[k]), (k, x[k], y[k])


@pytest.mark.parametrize("block", [1 << 23, 512])
def test_csv_out_equals_the_in_memory_path(tmp_path, monkeypatch, block):
    monkeypatch.setattr(ps, "BLOCK_BYTES", block)
    text = _text(30)
    (tmp_path / "c.csv").write_text(text)
    assert predict_file(tmp_path / "c.csv", tmp_path / "o.csv", mode="ideal") == 30 * len(LINES)
    _same(_old(text), list(csv.DictReader(open(tmp_path / "o.csv"))))


def test_parquet_out_holds_full_precision(tmp_path):
    text = _text(3)
    (tmp_path / "c.csv").write_text(text)
    predict_file(tmp_path / "c.csv", tmp_path / "o.parquet", mode="calibrated")
    t = pq.read_table(tmp_path / "o.parquet").to_pylist()
    ref = predict_cases(parse_cases(text), mode="calibrated")
    for got, want in zip(t, ref):
        for k in ("step_s", "tpot_s", "ttft_s", "tokens_per_s", "kv_transfer_s"):
            w = want.get(k, "")
            assert (got[k] is None) if w == "" else got[k] == pytest.approx(w, rel=1e-12), k
        assert got["chips"] == want["chips"] and got["bound"] == want["bound"] and got["id"] == want["id"]


def test_rows_are_predicted_in_blocks(tmp_path, monkeypatch):
    """Memory flat in rows: no library call sees more rows than a block holds (before: all of them)."""
    seen = []
    real = ps.group_columns

    def spy(key, col, **kw):
        seen.append(len(col["batch"]))
        return real(key, col, **kw)

    monkeypatch.setattr(ps, "group_columns", spy)
    monkeypatch.setattr(ps, "BLOCK_BYTES", 2048)
    rows = ["llama-3.1-8b,hgx-h100,decode,%d,%d" % (1 + i % 64, 100 + i) for i in range(3000)]
    (tmp_path / "c.csv").write_text("model,system,phase,batch,context\n" + "\n".join(rows) + "\n")
    assert predict_file(tmp_path / "c.csv", tmp_path / "o.csv", mode="ideal") == 3000
    assert len(seen) > 10 and max(seen) < 100


def test_a_bad_row_in_a_later_block_names_its_line_and_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(ps, "BLOCK_BYTES", 1024)
    rows = ["llama-3.1-8b,hgx-h100,decode,4,%d" % (100 + i) for i in range(500)]
    rows[400] = "llama-3.1-8b,hgx-h100,decode,4,lots"
    (tmp_path / "c.csv").write_text("model,system,phase,batch,context\n" + "\n".join(rows) + "\n")
    out = tmp_path / "o.csv"
    out.write_text("keep me\n")
    with pytest.raises(CatalogError, match="line 402 context: expected a number, got 'lots'"):
        predict_file(tmp_path / "c.csv", out, mode="ideal")
    assert out.read_text() == "keep me\n"
    assert [p.name for p in tmp_path.iterdir()] == ["c.csv", "o.csv"] or sorted(p.name for p in tmp_path.iterdir()) \
        == ["c.csv", "o.csv"]


def test_a_ragged_file_takes_the_python_reader_with_the_same_result(tmp_path):
    text = "model,system,phase,batch,context\nllama-3.1-8b,hgx-h100,decode,4,100,extra\n" \
           "llama-3.1-8b,hgx-h100,decode,8\nllama-3.1-8b,hgx-h100,decode,8,300\n"
    (tmp_path / "c.csv").write_text(text)
    with pytest.raises(CatalogError, match="line 3: phase 'decode' needs column 'context'"):
        predict_file(tmp_path / "c.csv", tmp_path / "o.csv", mode="ideal")
    text = text.replace("decode,8\n", "decode,8,200\n")
    (tmp_path / "c.csv").write_text(text)
    predict_file(tmp_path / "c.csv", tmp_path / "o.csv", mode="ideal")
    _same(_old(text), list(csv.DictReader(open(tmp_path / "o.csv"))))


def test_round6_is_percent_6g():
    rng = np.random.default_rng(1)
    v = np.concatenate([10 ** rng.uniform(-12, 12, 20000), [0.0, 1.0, 9.999995, 999999.5, 123456789.0, -3.5e-7]])
    assert np.array_equal(round6(v), np.array([float(f"{x:.6g}") for x in v]))


def test_cli_parquet_out_and_json_summary(tmp_path):
    (tmp_path / "c.csv").write_text(_text(1))
    code, text = invoke(["predict", str(tmp_path / "c.csv"), "--out", str(tmp_path / "o.parquet"), "--json"])
    assert code == 0, text
    assert '"rows": null' in text and pq.read_table(tmp_path / "o.parquet").num_rows == len(LINES)


def test_printing_more_rows_than_the_cap_is_refused_with_the_fix(tmp_path, monkeypatch):
    import llmecon.commands.fidelity as fid  # MAX_CASES lives in the command layer

    monkeypatch.setattr(fid, "MAX_CASES", 5)
    (tmp_path / "c.csv").write_text("model,system,phase,batch,context\n" + "llama-3.1-8b,hgx-h100,decode,1,9\n" * 7)
    for extra in ([], ["--json"]):
        code, text = invoke(["predict", str(tmp_path / "c.csv"), *extra])
        assert code == 2 and "7 cases, more than the 5" in text and "--out FILE.csv" in text, text


def test_absent_and_junk_unused_columns_read_as_before(tmp_path):
    """No context column (prefill: 0 cached tokens); junk in a column a row's phase does not read."""
    text = ("model,system,phase,batch,prompt_tokens,output_tokens\n"
            "llama-3.1-8b,hgx-h100,prefill,2,1024,n/a\nllama-3.1-8b,hgx-h100,prefill,4,512,\n")
    (tmp_path / "c.csv").write_text(text)
    predict_file(tmp_path / "c.csv", tmp_path / "o.csv", mode="ideal")
    _same(_old(text), list(csv.DictReader(open(tmp_path / "o.csv"))))


def _random_cases(n: int, seed: int) -> str:
    """``n`` random rows over models, systems, phases, plans (degrees or labels), formats, speculation
    (a draft model, a quoted acceptance list), engines (column, some empty) and ids, with repeats and
    padded cells."""
    rng = np.random.default_rng(seed)
    models = {"llama-3.1-8b": ("1", "2", ""), "qwen3-32b": ("2", "4"), "mixtral-8x7b": ("1", "2", "4")}
    systems = ("hgx-h100", "mi300x-8")
    lines = ["id,model,system,phase,batch,context,prompt_tokens,output_tokens,tp,plan,weight_dtype,kv_dtype,"
             "spec_tokens,acceptance,draft,engine"]
    for i in range(n):
        model = str(rng.choice(list(models)))
        phase = str(rng.choice(["decode", "prefill", "serving"]))
        tp = str(rng.choice(models[model]))
        plan = ""
        if tp and rng.random() < 0.2:
            tp, plan = "", f"tp{tp}·ep1·pp1·adp1"
        batch = str(int(2 ** rng.integers(0, 7)))
        ctx = str(int(rng.integers(1, 4096))) if phase == "decode" else str(rng.choice(["", "0", "128"]))
        prompt = str(int(2 ** rng.integers(6, 11))) if phase != "decode" else ""
        out = str(int(2 ** rng.integers(2, 8))) if phase == "serving" else ""
        spec = ["2", '"0.8,0.6"', "qwen3-8b"] if phase != "prefill" and rng.random() < 0.2 else ["", "", ""]
        row = [f"r{i}", model, str(rng.choice(systems)), phase, batch, ctx, prompt, out, tp, plan,
               str(rng.choice(["", "fp8", "bf16"])), str(rng.choice(["", "fp8"])), *spec,
               str(rng.choice(["", "vllm", "sglang", "trtllm", " vllm "]))]
        if rng.random() < 0.05:
            row[4] = f" {row[4]} "
        lines.append(",".join(row))
        if rng.random() < 0.3:  # a repeated case (another id): the stored outputs are reused
            lines.append(",".join([f"r{i}b"] + row[1:]))
    return "\n".join(lines) + "\n"


def test_random_rows_with_engines_equal_the_exact_path(tmp_path, monkeypatch):
    """Issue 36 item 4: the fast path (distinct rows, outputs stored per (group, shape) across blocks,
    engine groups vectorised) writes byte for byte what the exact row-by-row path (``predict_cases`` per
    block) writes, in small blocks (many cross-block reuses), with and without ``--engine`` for rows whose
    engine cell is empty; and the values of ``predict_cases`` + ``write_cases`` (which print NaN, a
    serving case whose KV does not fit, as 'nan' where the stream leaves the cell empty)."""
    monkeypatch.setattr(ps, "BLOCK_BYTES", 4096)
    text = _random_cases(80, 0)
    (tmp_path / "c.csv").write_text(text)
    exact = None
    real_cases, real_fast = ps.predict_cases, ps._fast_tables
    calls = []
    monkeypatch.setattr(ps, "predict_cases", lambda *a, **k: calls.append(1) or real_cases(*a, **k))
    for engine in (None, "trtllm"):
        n = predict_file(tmp_path / "c.csv", tmp_path / "fast.csv", mode="calibrated", engine=engine)
        assert not calls  # no block fell back to the row-by-row path
        monkeypatch.setattr(ps, "_fast_tables", lambda *a: (_ for _ in ()).throw(ps._Fallback()))
        predict_file(tmp_path / "c.csv", tmp_path / "exact.csv", mode="calibrated", engine=engine)
        monkeypatch.setattr(ps, "_fast_tables", real_fast)
        calls.clear()
        assert (tmp_path / "fast.csv").read_bytes() == (tmp_path / "exact.csv").read_bytes()
        rows = real_cases(parse_cases(text), mode="calibrated", engine=engine)
        exact = exact if engine else rows
        want = list(csv.DictReader(io.StringIO(write_cases(rows))))
        assert n == len(want)
        _same([{k: "" if v == "nan" else v for k, v in r.items()} for r in want],
              list(csv.DictReader(open(tmp_path / "fast.csv"))))
        assert {r["engine"] for r in want} == {"vllm", "sglang", "trtllm"} | ({""} if engine is None else set())
        assert any(r["transferred"] == "True" for r in want) and any(r["tokens_per_step"] for r in want)
    predict_file(tmp_path / "c.csv", tmp_path / "o.parquet", mode="calibrated")
    got = pq.read_table(tmp_path / "o.parquet").to_pylist()
    for g, w in zip(got, exact):
        for k, v in w.items():
            assert (g[k] in (None, "") if v == "" or v != v else g[k] == v), (k, g[k], v)
