"""AMD's tuned-kernel tables (ROCm aiter) as kernel-fit columns, and the AMD kernel terms fitted on them.

Data: ``shared/validation/non_nvidia/rocm_aiter/`` (ROCm/aiter ``aiter/configs`` @e4048607, MIT; the folder's
README, section 1). Each row is the fastest kernel aiter's tuner found for one shape on one GPU, timed alone
(warm caches, no communication, no launch gaps): a *ceiling* on kernel speed, which the engine terms fitted on
served rows (``amd_serving``) bring down to served speed.

Chips (the README's chip keys; never the marketing name alone): ``gfx942`` with 304 CUs is MI300X or MI325X
(one compute die) and is read as ``mi300x``; ``gfx950`` with 256 CUs is MI350X or MI355X and is read as
``mi355x``, the catalogue's only gfx950 part (an MI350X tuning machine, clocked lower, would make the fitted
fractions against MI355X peaks conservative: not recorded, a stated uncertainty). Fused-MoE files without a
``gfx`` column are keyed by ``cu_num`` only: 304 -> gfx942, 256 -> gfx950 (README). MI308X (gfx942, 80 CUs) and
gfx1250 rows are left out.

GEMM rows (``*tuned_gemm*.csv``; batched and chip-less files left out): C[M,N] = A[M,K]·B[K,N] with its dtype
read from the file name (``DTYPE_BY_NAME``): bf16, fp8 per-token (``a8w8``, ``a8w8_bpreshuffle``), fp8
block-scale 1x128/128x128 (``a8w8_blockscale``: llmecon's ``fp8_block``) and MXFP4 (``a4w4_blockscale``:
``mxfp4``). Rows with ``us`` 0, inf or an error ratio above ``MAX_ERR_RATIO`` are dropped (README caveats); a
shape tuned in several files keeps its fastest time (each file is a tuning run; the fastest is the ceiling) and
the first model tag in file order. Work as ``kernel_tables``: flops = 2MNK, bytes = (MK + KN + MN)·b.

Fused-MoE rows: the ``*tuned_fmoe*`` files (``us`` = stage 1 + stage 2 per call, µs) and the op_tests
per-stage results (``mi300_benchmark_best_kernels.csv`` = gfx942/304, ``mi350_best_kernels.csv`` = gfx950; a
configuration's time = min(asm one-stage kernel, best stage 1 + best stage 2); the activation-quantisation
time, reported apart, is left out as in the tuned files). A row is one MoE layer on one GPU: ``token`` tokens,
hidden ``model_dim``, per-GPU expert width ``inter_dim``, ``expert`` experts held, ``topk``; priced with
``kernel_tables``' balanced MoE work at tp = ep = 1 (the shard is the table's). A fused shared expert (257 /
385 / 513 experts with top-k one larger) is counted as one more routed expert: it is always hit, the balanced
formula hits it with probability k/E (a slight under-count of touched weights at small token counts, stated).
Dtype from ``q_dtype_w`` / ``q_type`` (``_moe_dtype``); int4 and mixed fp8-activation/fp4-weight rows are left
out.

The fit is ``kernel_fit.fit_gemm`` / ``fit_moe`` unchanged: the very functions that price a step
(``step.kernels.gemm_s``, ``moe_layer_s``) against each row's chip datasheet (``catalog/accelerators.toml``).
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from ..dtypes import get_dtype
from .kernel_tables import _work, storage_dtype

CHIP_KEYS = {("gfx942", "304"): "mi300x", ("gfx950", "256"): "mi355x"}
"""aiter chip key (gfx, cu_num) -> catalogue accelerator the rows are priced on (module docstring)."""
CU_ONLY = {"304": "mi300x", "256": "mi355x"}
"""MoE files keyed by cu_num only (no gfx column): README section 1."""
MAX_ERR_RATIO = 0.05
"""Rows whose output differs from the reference on more than this share of elements are dropped (README)."""
DTYPE_BY_NAME = (("a4w4_blockscale", "mxfp4"), ("a8w8_blockscale", "fp8_block"), ("a8w8", "fp8"), ("bf16", "bf16"))
"""File-name marker -> kernel dtype, first match wins (``a8w8_blockscale_bpreshuffle`` is fp8_block)."""
OP_TESTS = {"mi300_benchmark_best_kernels.csv": "mi300x", "mi350_best_kernels.csv": "mi355x"}
OP_TESTS_SHAPES = {"7168": "op_tests_deepseek_v3", "4096": "op_tests_qwen3_moe"}
"""op_tests configurations tagged by hidden size, the model whose shapes they are (README section 1: DeepSeek-V3
7168, Qwen3-MoE-like 4096; the rest, 2048 and a Mixtral-like grid, by their hidden size)."""


def default_root() -> Path | None:
    """``shared/validation/non_nvidia/rocm_aiter`` beside the repository, or None when absent."""
    here = Path(__file__).resolve()
    for parent in here.parents:
        for cand in (parent / "shared", parent.parent / "shared"):
            path = cand / "validation" / "non_nvidia" / "rocm_aiter"
            if path.is_dir():
                return path
    return None


def _float(raw) -> float:
    try:
        return float(raw)
    except (TypeError, ValueError):
        return float("nan")


def _chip(row: dict) -> str | None:
    gfx, cu = (row.get("gfx") or "").strip(), (row.get("cu_num") or "").strip()
    return CHIP_KEYS.get((gfx, cu)) if gfx else CU_ONLY.get(cu)


def gemm_dtype(name: str) -> str | None:
    """The kernel dtype of a GEMM file by its name, or None (batched / chip-less / unknown)."""
    if "batched" in name or not name.endswith(".csv") or "tuned_gemm" not in name:
        return None
    return next((dt for marker, dt in DTYPE_BY_NAME if marker in name), None)


def model_tag(name: str) -> str:
    """The model a tuning file belongs to (its name without the dtype and kernel words); 'generic' for the
    top-level files (shapes of many models)."""
    words = ("a8w8", "a4w4", "blockscale", "bpreshuffle", "tuned", "gemm", "bf16", "fmoe", "fp8fp4", "fp8", "fp4",
             "mxfp8", "ptpc", "i4", "a16w4", "a8w4")
    stem = name.removesuffix(".csv")
    parts = [p for p in stem.split("_") if p and p not in words]
    return "_".join(parts) or "generic"


def _frame(rows: list[tuple], names: tuple[str, ...]) -> dict:
    cols = {n: np.array([r[i] for r in rows]) for i, n in enumerate(names)}
    for n in names:
        if cols[n].dtype.kind in "fiu":
            cols[n] = cols[n].astype(float)
        else:
            cols[n] = cols[n].astype(str)
    return cols


def read_gemm(root: str | Path) -> dict:
    """Every usable aiter GEMM row of ``CHIP_KEYS`` chips as kernel-fit columns: chip, dtype, model, m, n, k,
    time_s, flops, bytes (module docstring)."""
    best: dict[tuple, tuple] = {}
    for path in sorted(Path(root).rglob("*.csv")):
        dtype = gemm_dtype(path.name)
        if dtype is None:
            continue
        tag = model_tag(path.name) if path.parent.name == "model_configs" else "generic"
        with path.open(newline="", encoding="utf-8") as fh:
            for row in csv.DictReader(fh):
                chip = _chip(row)
                us = _float(row.get("us"))
                err = _float(row.get("errRatio", row.get("err_ratio")))
                if chip is None or not (np.isfinite(us) and us > 0) or not (err <= MAX_ERR_RATIO):
                    continue
                m, n, k = (_float(row.get(c)) for c in ("M", "N", "K"))
                key = (chip, dtype, m, n, k)
                held = best.get(key)
                best[key] = (held[0] if held else tag, min(us, held[1]) if held else us)
    rows = [(c, dt, tag, m, n, k, us * 1e-6) for (c, dt, m, n, k), (tag, us) in best.items()]
    cols = _frame(rows, ("chip", "dtype", "model", "m", "n", "k", "time_s"))
    if not rows:
        return cols
    b = np.array([get_dtype(storage_dtype(dt)).bytes for dt in cols["dtype"]])
    cols["flops"] = 2.0 * cols["m"] * cols["n"] * cols["k"]
    cols["bytes"] = (cols["m"] * cols["k"] + cols["k"] * cols["n"] + cols["m"] * cols["n"]) * b
    return cols


def _moe_dtype(row: dict) -> str | None:
    """Kernel dtype of a fused-MoE row from its weight dtype and quantisation (None: left out)."""
    w, a, q = row.get("q_dtype_w", ""), row.get("q_dtype_a", ""), row.get("q_type", "")
    if "bfloat16" in w and "bfloat16" in a and q.endswith("No"):
        return "bfloat16"
    if "float8" in w and "float8" in a:
        return "fp8_block" if q.endswith("per_1x128") else "fp8" if q.endswith(("per_Token", "per_Tensor")) else None
    if "float4" in w and "float4" in a and q.endswith("per_1x32"):
        return "mxfp4"
    return None


def _moe_row(row: dict, chip: str, tag: str, us: float) -> tuple | None:
    dtype = _moe_dtype(row)
    nums = [_float(row.get(c)) for c in ("token", "model_dim", "inter_dim", "expert", "topk")]
    if dtype is None or not (np.isfinite(us) and us > 0) or not all(np.isfinite(nums)):
        return None
    return (chip, dtype, tag, *nums, us * 1e-6)


def _op_tests(path: Path, chip: str) -> list[tuple]:
    """One row per configuration of an op_tests per-stage file (module docstring)."""
    stages: dict[str, dict] = {}
    first: dict[str, dict] = {}
    with path.open(newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            t = _float(row.get("time_us"))
            if not (np.isfinite(t) and t > 0):
                continue
            cfg = row["config_idx"]
            first.setdefault(cfg, row)
            st = stages.setdefault(cfg, {})
            st[row["stage"]] = min(t, st.get(row["stage"], np.inf))
    out = []
    for cfg, st in stages.items():
        two = st.get("stage1", np.inf) + st.get("stage2", np.inf)
        us = min(two, st.get("asm_1stage", np.inf))
        row = first[cfg]
        got = _moe_row(row, chip, OP_TESTS_SHAPES.get(row.get("model_dim", ""), f"op_tests_h{row.get('model_dim')}"),
                       us) if np.isfinite(us) else None
        if got:
            out.append(got)
    return out


def read_moe(root: str | Path) -> dict:
    """Every usable aiter fused-MoE row of ``CHIP_KEYS`` chips as ``kernel_tables`` MoE columns (chip, dtype,
    moe_dtype, model, num_tokens, hidden_size, inter_size, topk, num_experts, moe_tp_size, moe_ep_size,
    distribution, time_s, flops, bytes, weight_bytes, act_bytes, pairs, touched, rows_per_expert)."""
    rows: list[tuple] = []
    for path in sorted(Path(root).rglob("*.csv")):
        if path.name in OP_TESTS:
            rows += _op_tests(path, OP_TESTS[path.name])
            continue
        if "tuned_fmoe" not in path.name or "grouped" in path.name or any(p.startswith("history_") for p in path.parts):
            continue
        tag = model_tag(path.name) if path.parent.name == "model_configs" else "generic"
        with path.open(newline="", encoding="utf-8") as fh:
            for row in csv.DictReader(fh):
                chip = _chip(row)
                got = _moe_row(row, chip, tag, _float(row.get("us"))) if chip else None
                if got:
                    rows.append(got)
    names = ("chip", "moe_dtype", "model", "num_tokens", "hidden_size", "inter_size", "num_experts", "topk", "time_s")
    cols = _frame(rows, names)
    if not rows:
        return cols
    n = len(rows)
    cols["moe_tp_size"], cols["moe_ep_size"] = np.ones(n), np.ones(n)
    cols["distribution"] = np.full(n, "balanced").astype(str)
    _work("moe", cols)
    return cols
