"""The validation-set loaders (llmecon.fidelity.validation_sets) against the raw files of shared/validation.

Tests that read shared/validation skip, saying why, when it is absent (a fresh clone); the error
paths and a synthetic vidur file run everywhere. Expected counts are recomputed here from the raw
files by other means (line counts, header scans, YAML row filters); spot checks quote one raw line
each and give the numbers derived from it by hand.
"""

from __future__ import annotations

import csv
import glob
import os
from collections import Counter

import pytest
import yaml

from llmecon.fidelity import validation_sets as vs
from llmecon.catalog.hardware import get_accelerator, get_system
from llmecon.catalog.models import get_model
from llmecon.errors import CatalogError
from llmecon.fidelity.measurements import COLLECTIVE_KINDS, OP_KINDS, default_split, parse_csv, write_csv
from llmecon.spec.plan import Plan

ROOT = vs.default_root()
REASON = (f"no validation folder (set {vs.ENV_VAR} or put shared/validation beside the repository); "
          "a fresh clone has none")


@pytest.fixture(scope="module")
def loaded():
    if ROOT is None:
        pytest.skip(REASON)
    return vs.read_all(ROOT)


def _find(rows, source, note):
    hits = [r for r in rows if r.source == source and r.note == note]
    assert len(hits) == 1, (source, note, len(hits))
    return hits[0]


# ---- counts recomputed from the raw files ------------------------------------------------------


NOT_ROWS = ("emb", "add")  # timed ops that become Skipped entries, not rows (vidur.SKIPPED_OPS)


def _vidur_ops_expected(gpu):
    """(rows, CSV lines, {skipped op: lines}) from the headers and line counts of the raw CSVs."""
    rows = lines_total = 0
    skipped = Counter()
    for path in glob.glob(str(ROOT / "vidur/profiling/compute" / gpu / "*/*/mlp.csv")):
        with open(path) as fh:
            header = fh.readline().strip().split(",")
            lines = sum(1 for line in fh if line.strip())
        ops = [c.split(".")[1] for c in header if c.endswith(".median")]
        rows += lines * sum(op not in NOT_ROWS for op in ops)   # every timed op but emb and add
        lines_total += lines
        for op in NOT_ROWS:
            skipped[op] += lines if op in ops else 0
    return rows, lines_total, skipped


@pytest.mark.parametrize("gpu", ["h100", "a100"])
def test_vidur_ops_counts(loaded, gpu):
    """One row per CSV line and timed op, emb and add excepted: H100 6 models (phi-2 times 9 ops
    incl. emb and add -> 7 rows per line, the Llama-style blocks 10 -> 8), A100 8 models incl.
    Llama-3 to 32768 tokens. emb and add each leave one Skipped entry per file covering its lines."""
    expected, lines, skipped = _vidur_ops_expected(gpu)
    got = loaded[f"vidur-ops-{gpu}"]
    assert len(got.rows) == expected == {"h100": 261 * 7 + 5 * 1044 * 8,
                                         "a100": 261 * 7 + (5 * 1044 + 2 * 1824) * 8}[gpu]
    assert skipped == {"emb": lines, "add": lines}     # every profiled file times both
    assert got.skipped_items == 2 * lines
    by_op = Counter()
    for s in got.skipped:
        op = s.reason.split("'")[1]                      # "op 'add': residual add timed on ..."
        by_op[op] += s.items
    assert by_op == skipped
    assert all("L2" in s.reason for s in got.skipped if s.reason.startswith("op 'add'"))
    kinds = Counter(r.kind for r in got.rows)
    assert kinds["gemm"] == 4 * lines
    # norms, rope and activation: 4 per line in Llama-style blocks, 3 in phi-2 (no second norm)
    assert kinds["elementwise"] == expected - 4 * lines == {"h100": 261 * 3 + 5 * 1044 * 4,
                                                            "a100": 261 * 3 + (5 * 1044 + 2 * 1824) * 4}[gpu]
    assert not [r for r in got.rows if r.note.startswith(("add ", "emb "))]
    assert {r.accelerator for r in got.rows} == {{"h100": "h100-sxm", "a100": "a100-80gb"}[gpu]}


@pytest.mark.parametrize("gpu, clusters, skipped", [("h100", ["h100_dgx"], []),
                                                     ("a100", ["a100_dgx"], ["a100_pairwise_nvlink"])])
def test_vidur_net_counts(loaded, gpu, clusters, skipped):
    def lines(cluster):
        return {op: sum(1 for _ in open(ROOT / "vidur/profiling/network" / cluster / f"{op}.csv")) - 1
                for op in ("all_reduce", "send_recv")}
    got = loaded[f"vidur-net-{gpu}"]
    kinds = Counter(r.kind for r in got.rows)
    for op in ("all_reduce", "send_recv"):
        assert kinds[op] == sum(lines(c)[op] for c in clusters)
    assert got.skipped_items == sum(sum(lines(c).values()) for c in skipped)


def test_yaml_set_counts(loaded):
    trt = yaml.safe_load((ROOT / "trtllm_v0.9.yaml").read_text())["versions"]
    skip = {"GPT-J 6B", "Falcon 180B"}
    for version, name in zip(trt, ("trtllm-static", "trtllm-ttft")):
        kept = [r for r in version["rows"] if r[0] not in skip]
        assert len(loaded[name].rows) == len(kept)
        assert loaded[name].skipped_items == len(version["rows"]) - len(kept)
    assert (len(loaded["trtllm-static"].rows), len(loaded["trtllm-ttft"].rows)) == (36, 16)
    qwen = yaml.safe_load((ROOT / "serving_qwen3_32b_h100.yaml").read_text())["groups"]
    assert len(loaded["qwen3-serving"].rows) == sum(g["n_rows"] for g in qwen) == 180
    assert len(loaded["pope2022"].rows) == 4
    assert loaded["megatron2021"].rows == () and loaded["megatron2021"].skipped_items == 10


# ---- spot checks: one raw line each, computed by hand ------------------------------------------


def test_vidur_phi2_h100_first_line(loaded):
    """compute/h100/microsoft/phi-2/mlp.csv line 2: medians attn_pre_proj 0.209, mlp_up_proj
    0.295, mlp_act 0.068, attn_rope 0.066, add 0.04 ms; n_head 32, n_kv_head 32, n_embd 2560,
    n_expanded_embd 10240, use_gated_mlp False, num_tokens 4096, TP 1 (head_dim 80). The add
    (0.04 ms) is a Skipped entry (vidur.SKIPPED_OPS), not a row."""
    rows, src = loaded["vidur-ops-h100"].rows, "vidur/profiling/compute/h100/microsoft/phi-2/mlp.csv"
    pre = _find(rows, src, "attn_pre_proj (line 2)")
    assert (pre.kind, pre.m, pre.n, pre.k, pre.dtype) == ("gemm", 4096, (32 + 64) * 80, 2560, "fp16")
    assert pre.measured_s == pytest.approx(0.209e-3, rel=1e-12)
    assert pre.group == "microsoft/phi-2" and pre.accelerator == "h100-sxm"
    up = _find(rows, src, "mlp_up_proj (line 2)")
    assert (up.m, up.n, up.k) == (4096, 10240, 2560)                 # not gated: one matrix
    assert up.measured_s == pytest.approx(0.295e-3, rel=1e-12)
    act = _find(rows, src, "mlp_act (line 2)")
    assert act.bytes == 2 * 4096 * 10240 * 2 == 167_772_160        # GELU: read + write m·ff
    assert not [r for r in rows if r.source == src and r.note.startswith("add ")]   # skipped op
    rope = _find(rows, src, "attn_rope (line 2)")
    assert rope.bytes == 4 * 4096 * 64 * 80 + 2 * 4096 * 80 + 8 * 4096 == 84_574_208
    assert rope.measured_s == pytest.approx(0.066e-3, rel=1e-12)
    assert not [r for r in rows if r.source == src and r.note.startswith("post_attention_layernorm")]


def test_vidur_llama2_70b_a100_tp8(loaded):
    """compute/a100/meta-llama/Llama-2-70b-hf/mlp.csv line 979: num_tokens 512, TP 8, n_head 64,
    n_kv_head 8, n_embd 8192, n_expanded_embd 28672, gated; medians input_layernorm 0.018,
    attn_pre_proj 0.069, attn_rope 0.006, attn_post_proj 0.05, mlp_up_proj 0.3, mlp_act 0.011,
    mlp_down_proj 0.164, add 0.012 ms. Per rank: 8 q heads, 1 KV head, ff 3584, head_dim 128."""
    rows, src = loaded["vidur-ops-a100"].rows, "vidur/profiling/compute/a100/meta-llama/Llama-2-70b-hf/mlp.csv"
    expect = {"attn_pre_proj": ((512, 1280, 8192), 0.069e-3), "attn_post_proj": ((512, 8192, 1024), 0.05e-3),
              "mlp_up_proj": ((512, 7168, 8192), 0.3e-3), "mlp_down_proj": ((512, 8192, 3584), 0.164e-3)}
    for op, (mnk, seconds) in expect.items():
        r = _find(rows, src, f"{op} (line 979)")
        assert (r.m, r.n, r.k) == mnk and r.measured_s == pytest.approx(seconds, rel=1e-12)
    nbytes = {"input_layernorm": 16_777_216, "post_attention_layernorm": 16_777_216,
              "mlp_act": 11_010_048, "attn_rope": 2_494_464}
    for op, b in nbytes.items():
        assert _find(rows, src, f"{op} (line 979)").bytes == b, op
    assert not [r for r in rows if r.note == "add (line 979)"]   # 25 MB, L2-resident: skipped
    assert _find(rows, src, "attn_rope (line 979)").measured_s == pytest.approx(6e-6, rel=1e-12)


def test_vidur_network_lines(loaded):
    """h100_dgx/all_reduce.csv line 2: '0,0.015,0.038,0.03,0.037,...,0,8,2048,all_reduce,8,8';
    a100_dgx/all_reduce.csv line 2: median 0.043 ms, num_workers 2, size 2048, devices_per_node 1
    (crosses nodes)."""
    h = _find(loaded["vidur-net-h100"].rows, "vidur/profiling/network/h100_dgx/all_reduce.csv", "line 2")
    assert (h.kind, h.system, h.participants, h.chips_per_node, h.bytes) == ("all_reduce", "hgx-h100", 8, 8, 2048)
    assert h.measured_s == pytest.approx(0.037e-3, rel=1e-12)
    a = _find(loaded["vidur-net-a100"].rows, "vidur/profiling/network/a100_dgx/all_reduce.csv", "line 2")
    assert (a.system, a.participants, a.chips_per_node, a.bytes) == ("hgx-a100", 2, 1, 2048)
    assert a.measured_s == pytest.approx(0.043e-3, rel=1e-12)


def test_trtllm_rows(loaded):
    """Static: 'LLaMA 70B, H100, fp8, batch 1024, tp 2, isl 128, osl 128, 3214 tok/s/GPU' ->
    1024·128 / (3214·2) s; 'Mixtral 8x7B, A100, fp16, 512, 2, 128, 128, 2842'. TTFT: 'LLaMA 70B,
    H100, fp8, 1, tp 8, isl 2048, 85.1 ms'."""
    static = loaded["trtllm-static"].rows
    r = next(r for r in static if (r.model, r.system, r.batch, r.prompt_tokens, r.output_tokens)
             == ("llama-2-70b", "hgx-h100", 1024, 128, 128))
    assert r.measured_s == pytest.approx(1024 * 128 / (3214 * 2), rel=1e-12) and r.tp == 2
    assert (r.weight_dtype, r.kv_dtype, r.group) == ("fp8", "fp8", "llama-2-70b")
    m = next(r for r in static if r.model == "mixtral-8x7b" and r.batch == 512)
    assert (m.system, m.tp, m.weight_dtype, m.kv_dtype) == ("hgx-a100", 2, "fp16", "fp16")
    assert m.measured_s == pytest.approx(512 * 128 / (2842 * 2), rel=1e-12)
    t = next(r for r in loaded["trtllm-ttft"].rows if (r.model, r.system, r.prompt_tokens)
             == ("llama-2-70b", "hgx-h100", 2048))
    assert (t.kind, t.batch, t.tp, t.output_tokens) == ("prefill", 1, 8, None)
    assert t.measured_s == pytest.approx(0.0851, rel=1e-12)
    assert {r.model for r in static} == {"llama-2-7b", "llama-2-70b", "mistral-7b-v0.1", "mixtral-8x7b"}


def test_qwen3_first_row(loaded):
    """First row: isl 1024, osl 128, batch_size 8, tp 1, pp 1, fp8, TTFT 271.983 ms, TPOT 18.652 ms.
    The YAML gives no KV format; the loader assumes fp8 (published.KV_ASSUMED) on every row."""
    r = loaded["qwen3-serving"].rows[0]
    assert (r.kind, r.model, r.system, r.batch, r.prompt_tokens, r.output_tokens, r.tp, r.pp) == (
        "serving", "qwen3-32b", "hgx-h100", 8, 1024, 128, 1, 1)
    assert (r.weight_dtype, r.kv_dtype, r.measured_s, r.group) == ("fp8", "fp8", None, "isl1024-osl128")
    assert {r.kv_dtype for r in loaded["qwen3-serving"].rows} == {"fp8"}
    assert r.measured_ttft_s == pytest.approx(0.271983, rel=1e-12)
    assert r.measured_tpot_s == pytest.approx(0.018652, rel=1e-12)


def test_pope_rows(loaded):
    """Table 2: low-latency decode, batch 64, int8, 64 tokens, 1.82 s; high-throughput prefill,
    batch 512, bf16, 2048 tokens, 85.2 s."""
    rows = loaded["pope2022"].rows
    d = next(r for r in rows if r.kind == "decode" and r.batch == 64)
    assert (d.model, d.system, d.tp, d.context, d.output_tokens, d.weight_dtype, d.measured_s) == (
        "palm-540b-padded", "tpu-v4-64", 64, 2048, 64, "int8", 1.82)
    p = next(r for r in rows if r.kind == "prefill" and r.batch == 512)
    assert (p.prompt_tokens, p.weight_dtype, p.measured_s, p.group) == (2048, "bf16", 85.2, "high_throughput")


# ---- every row is a valid, resolvable measurement -----------------------------------------------


@pytest.mark.parametrize("name", vs.SETS)
def test_rows_round_trip_and_split(loaded, name):
    rows = list(loaded[name].rows)
    if not rows:
        assert loaded[name].skipped, "a set without rows must say why"
        return
    assert parse_csv(write_csv(rows), where=name) == rows
    splits = Counter(default_split(r) for r in rows)
    assert splits["fit"] and splits["holdout"], splits


@pytest.mark.parametrize("name", vs.SETS)
def test_names_resolve_in_the_catalogue(loaded, name):
    """Accelerators, systems and models exist, and each step row's plan is valid for its model
    (this is what rules out PaLM's 48 unpadded heads at tp 64)."""
    rows = loaded[name].rows
    for accelerator in {r.accelerator for r in rows if r.kind in OP_KINDS}:
        get_accelerator(accelerator)
    for system in {r.system for r in rows if r.kind in COLLECTIVE_KINDS}:
        get_system(system)
    for model, system, tp, ep, pp in {(r.model, r.system, r.tp, r.ep, r.pp) for r in rows
                                      if r.kind not in OP_KINDS + COLLECTIVE_KINDS}:
        Plan(tp=tp, ep=ep, pp=pp).validate(get_model(model), get_system(system))


# ---- without the shared folder ------------------------------------------------------------------


def test_unknown_set_and_missing_folder(tmp_path, monkeypatch):
    with pytest.raises(CatalogError, match="did you mean 'pope2022'"):
        vs.load_set("pope2021", root=tmp_path)
    monkeypatch.setenv(vs.ENV_VAR, str(tmp_path / "absent"))
    assert vs.default_root() is None
    with pytest.raises(CatalogError, match=f"looked in {vs.ENV_VAR}=.*absent.*set {vs.ENV_VAR}"):
        vs.load_set("pope2022")
    monkeypatch.setenv(vs.ENV_VAR, str(tmp_path))
    assert vs.default_root() == tmp_path
    with pytest.raises(CatalogError, match="pope2022.yaml: no such file"):
        vs.load_set("pope2022")
    with pytest.raises(CatalogError, match="no such folder"):
        vs.load_set("trtllm-static", root=tmp_path / "nowhere")


def test_synthetic_vidur_file(tmp_path):
    """One made-up line of Llama-2-7B shapes at TP 2 and 16 tokens: every op's shape by hand
    (head_dim 128, 16 heads and 16 KV heads per rank, ff/TP 5504); emb and add skipped."""
    ops = ["emb", "input_layernorm", "attn_pre_proj", "attn_rope", "attn_post_proj", "post_attention_layernorm",
           "mlp_up_proj", "mlp_act", "mlp_down_proj", "add"]
    header = [f"time_stats.{op}.{s}" for op in ops for s in ("min", "max", "mean", "median", "std")] + [
        "n_head", "n_kv_head", "n_embd", "n_expanded_embd", "vocab_size", "use_gated_mlp", "num_tokens",
        "num_tensor_parallel_workers"]
    medians = {op: 0.01 * (i + 1) for i, op in enumerate(ops)}
    line = [v for op in ops for v in (0, 0, 0, medians[op], 0)] + [32, 32, 4096, 11008, 32000, True, 16, 2]
    folder = tmp_path / "vidur/profiling/compute/h100/meta-llama/Llama-2-7b-hf"
    folder.mkdir(parents=True)
    with open(folder / "mlp.csv", "w", newline="") as fh:
        csv.writer(fh).writerows([header, line])
    loaded = vs.read_set("vidur-ops-h100", root=tmp_path)
    got = {r.note.split(" ")[0]: r for r in loaded.rows}
    assert set(got) == set(ops) - {"emb", "add"}
    assert sorted((s.reason.split("'")[1], s.items) for s in loaded.skipped) == [("add", 1), ("emb", 1)]
    assert {s.source for s in loaded.skipped} == {"vidur/profiling/compute/h100/meta-llama/Llama-2-7b-hf/mlp.csv"}
    assert (got["attn_pre_proj"].m, got["attn_pre_proj"].n, got["attn_pre_proj"].k) == (16, 6144, 4096)
    assert (got["attn_post_proj"].n, got["attn_post_proj"].k) == (4096, 2048)
    assert (got["mlp_up_proj"].n, got["mlp_up_proj"].k) == (11008, 4096)
    assert (got["mlp_down_proj"].n, got["mlp_down_proj"].k) == (4096, 5504)
    assert got["input_layernorm"].bytes == got["post_attention_layernorm"].bytes == 4 * 16 * 4096
    assert got["mlp_act"].bytes == 6 * 16 * 5504
    assert got["attn_rope"].bytes == 4 * 16 * 32 * 128 + 2 * 16 * 128 + 8 * 16
    assert got["mlp_down_proj"].measured_s == pytest.approx(medians["mlp_down_proj"] * 1e-3, rel=1e-12)
    assert os.path.basename(got["mlp_act"].source) == "mlp.csv" and got["mlp_act"].group == "meta-llama/Llama-2-7b-hf"
