"""NVIDIA's measured kernel tables (aiconfigurator, Apache-2.0) as tidy frames in SI units.

Data: ``shared/validation/aiconfigurator/kernels/<system>/<op>/<framework>/<version>/*.parquet``
(the folder's README). Each table becomes a ``KernelFrame``: one row per distinct key (every column
but ``latency``; a key measured twice gives its median), ``time_s`` in seconds (the tables hold
milliseconds per op per layer per GPU), and the work of the row computed from its shape:

* ``gemm``: C[m,n] = A[m,k]·B[k,n]: ``flops`` = 2mnk, ``bytes`` = (mk + kn + mn)·b, b the
  storage bytes of ``dtype`` (``dtypes``; the bf16 output of an fp8/fp4 GEMM is counted at b too,
  which keeps the byte term a lower bound).
* ``context_attention`` (prefill of ``isl`` tokens, causal, batch b, h query and g KV heads of
  dim d per GPU, window W or 0): ``flops`` = 4·b·h·d·S(isl), S(x) = sum_{p<=x} min(p, W) (the
  score and value products, ``spec.model.Model.prefill_attention_flops``), ``bytes`` = Q, K, V read
  and O written once: b·isl·(2h + 2g)·d·b_attn.
* ``generation_attention`` (one decode step over ``kv_len`` = the table's ``step`` cached tokens):
  ``flops`` = 4·b·h·d·L, L = min(kv_len, W or inf); ``bytes`` = the KV read, 2·b·g·d·L·b_kv, plus
  one token's K and V written.
* ``moe`` (one MoE FFN layer on one GPU shard: E/ep local experts of width I/tp, gated, top-k of E;
  communication excluded): with balanced routing ``pairs`` = T·k/ep token-expert pairs on the
  shard, ``flops`` = pairs·6·H·I/tp (gate, up, down), ``touched`` = expected distinct local
  experts hit by T tokens, (E/ep)·(1 - (1 - k/E)^T), ``weight_bytes`` = touched·3·H·(I/tp)·b_w,
  ``act_bytes`` = pairs·(4H + 3I/tp)·2 (bf16 activations: permute read + write, gated activation
  reads 2I/tp and writes I/tp, un-permute read + write), ``bytes`` their sum, ``rows_per_expert``
  = pairs / touched. Skewed rows
  (``distribution`` power_law_*) carry the same balanced work: their extra time is what a skew
  term fits.

Dtypes kept: bfloat16, fp8, fp8_block (fp8 with 128-block scales: fp8 bytes and peak), nvfp4, and on
the chips of ``MXFP4_MOE`` the MoE table format that runs MXFP4 experts there (kernel dtype ``mxfp4``:
4.25-bit weight bytes, the chip's ``mxfp4`` peak); the other weight-only and mixed formats (int4_wo, and
w4a16_mxfp4 / w4a8_mxfp4_mxfp8 elsewhere) are skipped and counted in ``KernelFrame.skipped``. Collectives
are read by ``collective_fit.load_aiconfigurator_comm``.
Needs only pyarrow and numpy (no pandas).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..dtypes import get_dtype
from ..errors import CatalogError
from ..step.kernels import GDN_KERNELS, gdn_work, mla_work

CHIPS = {"h100_sxm": "h100-sxm", "h200_sxm": "h200", "b200_sxm": "b200", "b300_sxm": "b300", "gb200": "gb200",
         "gb300": "gb300"}
"""aiconfigurator system folder -> catalogue accelerator name."""
ENGINES = ("trtllm", "sglang", "vllm")
FAMILIES = {"gemm": ("gemm", "gemm_perf.parquet"),
            "context_attention": ("attention", "context_attention_perf.parquet"),
            "generation_attention": ("attention", "generation_attention_perf.parquet"),
            "moe": ("moe", "moe_perf.parquet"),
            "context_mla": ("mla", "context_mla_perf.parquet"),
            "generation_mla": ("mla", "generation_mla_perf.parquet"),
            "gdn": ("linear_attention", "gdn_perf.parquet")}
"""family -> (op folder, file name)."""
DTYPES = {"bfloat16": "bf16", "fp8": "fp8", "fp8_block": "fp8_block", "nvfp4": "nvfp4", "mxfp4": "mxfp4"}
"""table dtype -> llmecon kernel dtype (fp8_block prices as fp8: ``storage_dtype``; ``mxfp4`` is the
label ``MXFP4_MOE`` gives a chip's MXFP4 MoE rows, no table uses it)."""
MXFP4_MOE = {"h100_sxm": "w4a16_mxfp4", "h200_sxm": "w4a16_mxfp4"}
"""aiconfigurator folder -> the MoE table format that prices MXFP4 experts (gpt-oss) on that chip. Hopper
has no FP4 tensor cores: TensorRT-LLM's only MXFP4 MoE table there is W4A16 (weights dequantised to
bf16 inside the grouped GEMM), and SGLang's and vLLM's hold the same format, so MXFP4 experts on Hopper
are priced with its terms (before 2026-11-26 they took the bf16 MoE terms at 4.25-bit bytes and came out
1.5-1.7x too fast). Blackwell is left out: its tables hold both W4A16 and W4A8 (MXFP8 activations) MXFP4
kernels and which one each engine runs for gpt-oss is not recorded, so MXFP4 experts there keep the
nvfp4/fp4 terms (``EfficiencyProfile.moe_terms`` fallbacks)."""


def storage_dtype(kernel_dtype: str) -> str:
    """The ``dtypes`` name whose bytes and peak a kernel dtype has (fp8_block -> fp8)."""
    return "fp8" if kernel_dtype == "fp8_block" else kernel_dtype


@dataclass(frozen=True, kw_only=True)
class KernelFrame:
    """One measured table, tidy: ``columns`` maps names to equal-length numpy arrays (numbers as
    float, labels as str); always ``time_s``, ``flops``, ``bytes``."""

    chip: str
    engine: str
    family: str
    path: str
    columns: dict = field(compare=False)
    skipped: int = 0

    def __len__(self) -> int:
        return len(self.columns["time_s"])

    def __getitem__(self, name: str) -> np.ndarray:
        return self.columns[name]

    def select(self, mask) -> "KernelFrame":
        """The rows where ``mask`` holds."""
        mask = np.asarray(mask, dtype=bool)
        return KernelFrame(chip=self.chip, engine=self.engine, family=self.family, path=self.path,
                           columns={k: v[mask] for k, v in self.columns.items()}, skipped=self.skipped)


def default_root() -> Path | None:
    """``shared/validation/aiconfigurator/kernels`` beside the repository, or None when absent."""
    here = Path(__file__).resolve()
    for parent in here.parents:
        cand = parent / "shared" / "validation" / "aiconfigurator" / "kernels"
        if cand.is_dir():
            return cand
        cand = parent.parent / "shared" / "validation" / "aiconfigurator" / "kernels"
        if cand.is_dir():
            return cand
    return None


def table_path(root: str | Path, chip: str, engine: str, family: str) -> Path | None:
    """The newest-version file of ``family`` for (chip folder, engine), or None."""
    folder, name = FAMILIES[family]
    files = sorted((Path(root) / chip / folder / engine).glob(f"*/{name}"))
    return files[-1] if files else None


def _median_by_key(keys: list[np.ndarray], t: np.ndarray) -> tuple[list[np.ndarray], np.ndarray]:
    """Collapse rows with equal keys to one, with the median of ``t``."""
    if not len(t):
        return keys, t
    stacked = np.rec.fromarrays(keys)
    uniq, inv = np.unique(stacked, return_inverse=True)
    inv = inv.ravel()
    order = np.lexsort((t, inv))
    inv_s, t_s = inv[order], t[order]
    starts = np.flatnonzero(np.r_[True, inv_s[1:] != inv_s[:-1]])
    counts = np.diff(np.r_[starts, len(t_s)])
    lo = t_s[starts + (counts - 1) // 2]
    hi = t_s[starts + counts // 2]
    return [np.asarray(uniq[name]) for name in uniq.dtype.names], 0.5 * (lo + hi)


def _causal_sum(x, window):
    """sum_{p=1}^{x} min(p, W) (W = 0: no window), as ``spec.model._causal_sum``."""
    x = np.asarray(x, dtype=float)
    w = np.asarray(window, dtype=float)
    full = x * (x + 1.0) / 2.0
    capped = w * (w + 1.0) / 2.0 + (x - w) * w
    return np.where((w <= 0) | (x <= w), full, capped)


_SPEC = {
    "gemm": (("gemm_dtype", "kernel_source"), ("m", "n", "k"), "gemm_dtype"),
    "context_attention": (("attn_dtype", "kv_cache_dtype", "kernel_source"),
                          ("batch_size", "isl", "num_heads", "num_key_value_heads", "head_dim", "window_size"),
                          "attn_dtype"),
    "generation_attention": (("attn_dtype", "kv_cache_dtype", "kernel_source"),
                             ("batch_size", "step", "num_heads", "num_key_value_heads", "head_dim", "window_size"),
                             "kv_cache_dtype"),
    "moe": (("moe_dtype", "distribution", "kernel_source"),
            ("num_tokens", "hidden_size", "inter_size", "topk", "num_experts", "moe_tp_size", "moe_ep_size"),
            "moe_dtype"),
    "context_mla": (("mla_dtype", "kv_cache_dtype", "kernel_source"), ("batch_size", "isl", "num_heads", "tp_size"),
                    "kv_cache_dtype"),
    "generation_mla": (("mla_dtype", "kv_cache_dtype", "kernel_source"), ("batch_size", "step", "num_heads", "tp_size"),
                       "kv_cache_dtype"),
    "gdn": (("kernel_source", "phase"), ("batch_size", "seq_len", "num_k_heads", "head_k_dim", "num_v_heads",
                                         "head_v_dim", "d_conv"), None),
}




def frame_from_table(table, *, chip: str, engine: str, family: str, path: str = "") -> KernelFrame:
    """A ``KernelFrame`` from a pyarrow Table of one family (``read_frame`` reads the file)."""
    labels, numbers, dtype_col = _SPEC[family]
    names = set(table.column_names)
    missing = [c for c in labels + numbers + ("latency",) if c not in names and c != "kernel_source"]
    if missing:
        raise CatalogError(f"{path or family}: missing column(s) {', '.join(missing)}")
    n = table.num_rows
    col = {c: (np.asarray(table.column(c).to_pylist(), dtype=object).astype(str) if c in names
               else np.full(n, "", dtype=object).astype(str)) for c in labels}
    num = {c: np.asarray(table.column(c).to_numpy(zero_copy_only=False), dtype=float) for c in numbers}
    t = np.asarray(table.column("latency").to_numpy(zero_copy_only=False), dtype=float) * 1e-3
    if family == "moe" and chip in MXFP4_MOE:
        col[dtype_col] = np.where(col[dtype_col] == MXFP4_MOE[chip], "mxfp4", col[dtype_col]).astype(str)
    known = np.isin(col[dtype_col], list(DTYPES)) if dtype_col else np.ones(n, dtype=bool)  # gdn: bf16, no column
    keep = known & np.isfinite(t) & (t > 0)
    skipped = int(n - keep.sum())
    keys = [col[c][keep] for c in labels] + [num[c][keep] for c in numbers]
    keys, t = _median_by_key(keys, t[keep])
    cols = dict(zip(labels + numbers, keys))
    cols["time_s"] = t
    _work(family, cols)
    return KernelFrame(chip=CHIPS.get(chip, chip), engine=engine, family=family, path=path, columns=cols,
                       skipped=skipped)


def _bytes_of(labels: np.ndarray) -> np.ndarray:
    """Storage bytes per element of each row's table dtype."""
    out = np.empty(len(labels))
    for name in np.unique(labels):
        out[labels == name] = get_dtype(storage_dtype(DTYPES.get(name, name))).bytes
    return out


def _work(family: str, c: dict) -> None:
    """Add ``dtype`` (llmecon name), ``flops`` and ``bytes`` (and MoE's ``pairs``, ``touched``,
    ``rows_per_expert``) to the columns ``c`` of one family (module docstring)."""
    if family == "gemm":
        m, n, k = c["m"], c["n"], c["k"]
        c["dtype"] = np.array([DTYPES[x] for x in c["gemm_dtype"]], dtype=object).astype(str)
        c["flops"] = 2.0 * m * n * k
        c["bytes"] = (m * k + k * n + m * n) * _bytes_of(c["gemm_dtype"])
    elif family in ("context_attention", "generation_attention"):
        b, h, g, d, w = c["batch_size"], c["num_heads"], c["num_key_value_heads"], c["head_dim"], c["window_size"]
        c["dtype"] = np.array([DTYPES.get(x, x) for x in c["kv_cache_dtype"]], dtype=object).astype(str)
        if family == "context_attention":
            s = c["isl"]
            c["flops"] = 4.0 * b * h * d * _causal_sum(s, w)
            c["bytes"] = b * s * (2 * h + 2 * g) * d * _bytes_of(c["attn_dtype"])
        else:
            held = np.where(w > 0, np.minimum(c["step"], w), c["step"])
            c["kv_len"] = c["step"]
            c["flops"] = 4.0 * b * h * d * held
            c["bytes"] = 2.0 * b * g * d * (held + 1.0) * _bytes_of(c["kv_cache_dtype"])
    elif family == "moe":
        T, H, I, k, E = c["num_tokens"], c["hidden_size"], c["inter_size"], c["topk"], c["num_experts"]
        tp, ep = c["moe_tp_size"], c["moe_ep_size"]
        c["dtype"] = np.array([DTYPES[x] for x in c["moe_dtype"]], dtype=object).astype(str)
        local = E / ep
        pairs = T * k / ep
        touched = local * (1.0 - (1.0 - np.minimum(k / E, 1.0)) ** T)
        c["pairs"] = pairs
        c["touched"] = touched
        c["rows_per_expert"] = pairs / np.maximum(touched, 1e-9)
        c["flops"] = pairs * 6.0 * H * I / tp
        c["weight_bytes"] = touched * 3.0 * H * (I / tp) * _bytes_of(c["moe_dtype"])
        c["act_bytes"] = pairs * (4.0 * H + 3.0 * I / tp) * 2.0
        c["bytes"] = c["weight_bytes"] + c["act_bytes"]
    elif family in ("context_mla", "generation_mla"):
        _mla_work(family, c)
    elif family == "gdn":
        c["dtype"] = np.full(len(c["kernel_source"]), "bf16", dtype=object).astype(str)
        c["kernel"] = np.array([GDN_KERNELS.get(x, "") for x in c["kernel_source"]], dtype=object).astype(str)
        c["flops"], c["bytes"], c["items"] = gdn_work(
            "chunk", batch=c["batch_size"], seq_len=c["seq_len"], key_heads=c["num_k_heads"], key_dim=c["head_k_dim"],
            value_heads=c["num_v_heads"], value_dim=c["head_v_dim"], conv_kernel=c["d_conv"])
        for kernel in ("recurrent", "conv", "conv_update"):
            sel = c["kernel"] == kernel
            got = gdn_work(kernel, batch=c["batch_size"][sel], seq_len=c["seq_len"][sel],
                           key_heads=c["num_k_heads"][sel], key_dim=c["head_k_dim"][sel],
                           value_heads=c["num_v_heads"][sel], value_dim=c["head_v_dim"][sel],
                           conv_kernel=c["d_conv"][sel])
            for name, v in zip(("flops", "bytes", "items"), got):
                c[name][sel] = v
    else:
        raise CatalogError(f"unknown kernel family {family!r}; known: {', '.join(FAMILIES)}")


def _mla_work(family: str, c: dict) -> None:
    c["dtype"] = np.array([DTYPES.get(x, x) for x in c["kv_cache_dtype"]], dtype=object).astype(str)
    if family == "context_mla":
        c["flops"], c["bytes"] = mla_work(family, batch=c["batch_size"], heads=c["num_heads"], isl=c["isl"])
    else:
        c["kv_len"] = c["step"]
        c["flops"], c["bytes"] = mla_work(family, batch=c["batch_size"], heads=c["num_heads"], kv_len=c["step"],
                                          kv_bytes=_bytes_of(c["kv_cache_dtype"]))


def read_frame(root: str | Path, chip: str, engine: str, family: str) -> KernelFrame | None:
    """The tidy frame of one (chip folder, engine, family), or None when that table is absent."""
    import pyarrow.parquet as pq

    if family not in FAMILIES:
        raise CatalogError(f"unknown kernel family {family!r}; known: {', '.join(FAMILIES)}")
    path = table_path(root, chip, engine, family)
    if path is None:
        return None
    labels, numbers, _ = _SPEC[family]
    want = [c for c in labels + numbers + ("latency",)]
    have = set(pq.read_schema(path).names)
    table = pq.read_table(path, columns=[c for c in want if c in have])
    frame = frame_from_table(table, chip=chip, engine=engine, family=family, path=str(path))
    return frame if len(frame) else None
