"""Fit Gated DeltaNet (linear attention: Qwen3.5, Qwen3-Next) kernel terms to NVIDIA's measured
``linear_attention/<engine>/gdn_perf.parquet`` tables (``kernel_tables`` family ``gdn``), with the
function that prices them (``step.kernels.gdn_kernel_s``), per kernel (chunk, recurrent, conv,
conv_update): fraction, hbm_fraction, items_half, item_s, floor_s, by ``kernel_fit``'s bounded log
least squares. Rows pool chips as ``kernel_fit`` does (each row priced with its own datasheet).
The tables' heads are whole models' (Qwen3.5 0.8B-397B: 16 key heads, 16-64 value heads of 128).
"""

from __future__ import annotations

import numpy as np

from ..spec.efficiency import AttentionTerms
from ..step.kernels import gdn_kernel_s
from .kernel_fit import RowChips, fit_attention_terms

KERNELS = ("chunk", "recurrent", "conv", "conv_update")
START = {"fraction": 0.3, "hbm_fraction": 0.6, "items_half": 50.0, "item_s": 1e-9, "floor_s": 5e-6}
MIN_KERNEL_ROWS = 20   # decode kernels: 43-405 rows per table


def _shape(cols: dict, sel) -> dict:
    return {"batch": cols["batch_size"][sel], "seq_len": cols["seq_len"][sel], "key_heads": cols["num_k_heads"][sel],
            "key_dim": cols["head_k_dim"][sel], "value_heads": cols["num_v_heads"][sel],
            "value_dim": cols["head_v_dim"][sel], "conv_kernel": cols["d_conv"][sel]}


def predict_gdn(profile, cols: dict) -> np.ndarray:
    """Seconds of each ``gdn`` row (per row kernel)."""
    out = np.full(len(cols["time_s"]), np.nan)
    for kernel in KERNELS:
        sel = cols["kernel"] == kernel
        if sel.any():
            out[sel] = gdn_kernel_s(profile, RowChips(cols["chip"][sel]), kernel, **_shape(cols, sel))
    return out


def fit_gdn_kernel(cols: dict, kernel: str) -> AttentionTerms | None:
    """The ``gdn`` terms of one kernel from pooled rows (None with too few)."""
    if not cols:
        return None
    return fit_attention_terms(cols, cols["kernel"] == kernel, kernel, "gdn", START, predict_gdn,
                               min_rows=MIN_KERNEL_ROWS)


def fit_gdn(cols: dict) -> dict:
    """Profile keyword argument ``gdn`` (per kernel) where fitted."""
    got = tuple((k, t) for k in KERNELS if (t := fit_gdn_kernel(cols, k)) is not None)
    return {"gdn": got} if got else {}
