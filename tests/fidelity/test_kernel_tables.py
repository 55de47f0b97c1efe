"""The kernel-table loader (fidelity.kernel_tables) on tiny synthetic parquet tables written here:
units, median over duplicate keys, skipped dtypes, and the FLOPs and bytes of each row computed by
hand from its shape."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from llmecon.errors import CatalogError
from llmecon.fidelity.kernel_tables import frame_from_table, read_frame, table_path


def _write(root, chip, folder, engine, version, name, columns):
    path = root / chip / folder / engine / version / name
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table(columns), path)
    return path


def test_gemm_median_units_work_and_skipped_dtypes(tmp_path):
    cols = {"gemm_dtype": ["fp8", "fp8", "fp8", "bfloat16", "int4_wo"], "kernel_source": ["k"] * 5,
            "m": [16, 16, 16, 2, 2], "n": [32, 32, 32, 4, 4], "k": [64, 64, 64, 8, 8],
            "latency": [0.010, 0.030, 0.020, 0.005, 0.001]}
    _write(tmp_path, "b200_sxm", "gemm", "trtllm", "1.0", "gemm_perf.parquet", {**cols, "latency": [9.0] * 5})
    _write(tmp_path, "b200_sxm", "gemm", "trtllm", "2.0", "gemm_perf.parquet", cols)
    assert table_path(tmp_path, "b200_sxm", "trtllm", "gemm").parent.name == "2.0"   # the newest version
    f = read_frame(tmp_path, "b200_sxm", "trtllm", "gemm")
    assert f.chip == "b200" and len(f) == 2 and f.skipped == 1          # int4_wo is not modelled
    fp8 = f.select(f["dtype"] == "fp8")
    assert fp8["time_s"][0] == pytest.approx(20e-6, rel=1e-12)          # median of 0.010, 0.030, 0.020 ms, in seconds
    assert fp8["flops"][0] == 2 * 16 * 32 * 64
    assert fp8["bytes"][0] == (16 * 64 + 64 * 32 + 16 * 32) * 1          # fp8: 1 byte
    bf = f.select(f["dtype"] == "bf16")
    assert bf["bytes"][0] == (2 * 8 + 8 * 4 + 2 * 4) * 2
    assert read_frame(tmp_path, "b200_sxm", "vllm", "gemm") is None


def test_attention_flops_and_bytes_by_hand():
    ctx = pa.table({"attn_dtype": ["bfloat16", "bfloat16"], "kv_cache_dtype": ["bfloat16", "bfloat16"],
                    "batch_size": [2, 1], "isl": [4, 4], "num_heads": [2, 1], "num_key_value_heads": [1, 1],
                    "head_dim": [8, 64], "window_size": [0, 2], "latency": [1.0, 2.0]})
    f = frame_from_table(ctx, chip="h100_sxm", engine="trtllm", family="context_attention")
    full = f.select(f["window_size"] == 0)
    # 4·b·h·d·(1+2+3+4) and b·isl·(2h + 2g)·d·2 bytes
    assert full["flops"][0] == 4 * 2 * 2 * 8 * 10
    assert full["bytes"][0] == 2 * 4 * (4 + 2) * 8 * 2
    win = f.select(f["window_size"] == 2)
    assert win["flops"][0] == 4 * 1 * 1 * 64 * (1 + 2 + 2 + 2)         # min(p, 2) summed over p = 1..4
    gen = pa.table({"attn_dtype": ["bfloat16"], "kv_cache_dtype": ["fp8"], "batch_size": [3], "step": [10],
                    "num_heads": [4], "num_key_value_heads": [2], "head_dim": [16], "window_size": [0],
                    "latency": [0.5]})
    g = frame_from_table(gen, chip="gb200", engine="sglang", family="generation_attention")
    assert g["flops"][0] == 4 * 3 * 4 * 16 * 10
    assert g["bytes"][0] == 2 * 3 * 2 * 16 * 11 * 1                    # K and V of 10 cached + 1 new, fp8
    assert g["time_s"][0] == pytest.approx(0.5e-3)


def test_moe_layer_work_by_hand():
    t = pa.table({"moe_dtype": ["bfloat16"], "distribution": ["balanced"], "kernel_source": ["x"], "num_tokens": [4],
                  "hidden_size": [8], "inter_size": [16], "topk": [2], "num_experts": [4], "moe_tp_size": [2],
                  "moe_ep_size": [2], "latency": [0.1]})
    f = frame_from_table(t, chip="h200_sxm", engine="vllm", family="moe")
    # 4 tokens x top-2 / ep 2 = 4 pairs, each 6·H·I/tp FLOPs; touched local experts 2·(1 - (1 - 2/4)^4)
    assert f["pairs"][0] == 4
    assert f["flops"][0] == 4 * 6 * 8 * 8
    assert f["touched"][0] == pytest.approx(2 * (1 - 0.5 ** 4), rel=1e-12)
    assert f["weight_bytes"][0] == pytest.approx(1.875 * 3 * 8 * 8 * 2, rel=1e-12)
    assert f["act_bytes"][0] == 4 * (4 * 8 + 3 * 8) * 2
    assert f["rows_per_expert"][0] == pytest.approx(4 / 1.875, rel=1e-12)


def _moe_rows(dtypes):
    n = len(dtypes)
    return pa.table({"moe_dtype": dtypes, "distribution": ["balanced"] * n, "kernel_source": ["x"] * n,
                     "num_tokens": [4] * n, "hidden_size": [8] * n, "inter_size": [16 + i for i in range(n)],
                     "topk": [2] * n, "num_experts": [4] * n, "moe_tp_size": [1] * n, "moe_ep_size": [1] * n,
                     "latency": [0.1] * n})


def test_hopper_w4a16_mxfp4_moe_rows_price_as_mxfp4_weights():
    # Hopper (no FP4 tensor cores): the W4A16 MXFP4 rows are kept as kernel dtype mxfp4, 4.25-bit weight bytes
    f = frame_from_table(_moe_rows(["w4a16_mxfp4", "int4_wo"]), chip="h100_sxm", engine="trtllm", family="moe")
    assert list(f["dtype"]) == ["mxfp4"] and f.skipped == 1          # int4_wo is still skipped
    touched = 4 * (1 - 0.5 ** 4)
    assert f["weight_bytes"][0] == pytest.approx(touched * 3 * 8 * 16 * 4.25 / 8, rel=1e-12)


def test_blackwell_mxfp4_moe_rows_stay_skipped():
    # which MXFP4 kernel (W4A16 or W4A8) an engine runs on Blackwell is not recorded: both formats are skipped
    f = frame_from_table(_moe_rows(["w4a16_mxfp4", "w4a8_mxfp4_mxfp8", "bfloat16"]), chip="b200_sxm",
                         engine="vllm", family="moe")
    assert list(f["dtype"]) == ["bf16"] and f.skipped == 2


def test_missing_column_is_a_catalog_error():
    with pytest.raises(CatalogError, match="missing column"):
        frame_from_table(pa.table({"gemm_dtype": ["fp8"], "latency": [1.0]}), chip="b200_sxm", engine="x",
                         family="gemm")
