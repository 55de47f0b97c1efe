"""Fit MLA attention terms (DeepSeek MLA: unabsorbed prefill, absorbed decode) to NVIDIA's
measured ``mla`` tables (``kernel_tables``: ``context_mla``, ``generation_mla``), with the
functions that price them (``step.kernels.mla_prefill_s``, ``mla_decode_s``), the same bounded
log least squares as ``kernel_fit`` (soft-L1, scale 0.1, parameters in log space):

* prefill per KV dtype: fraction, isl_half, hbm_fraction, item_s, floor_s (the tables hold one
  head dim, so no head-dim ramp);
* decode per KV dtype: fraction, hbm_fraction, items_half (sequences), item_s, floor_s.

Rows pool chips as ``kernel_fit`` does (each row priced with its own chip's datasheet).
"""

from __future__ import annotations

import numpy as np

from ..step.kernels import mla_decode_s, mla_prefill_s
from .kernel_fit import RowChips, fit_attention_terms

PREFILL_START = {"fraction": 0.5, "isl_half": 500.0, "hbm_fraction": 0.7, "item_s": 1e-8, "floor_s": 1e-5}
DECODE_START = {"fraction": 0.5, "hbm_fraction": 0.7, "items_half": 4.0, "item_s": 1e-8, "floor_s": 1e-5}


def predict_mla_prefill(profile, cols: dict) -> np.ndarray:
    """Seconds of each ``context_mla`` row (per row KV dtype)."""
    out = np.empty(len(cols["time_s"]))
    for dt in np.unique(cols["dtype"]):
        sel = cols["dtype"] == dt
        out[sel] = mla_prefill_s(profile, RowChips(cols["chip"][sel]), batch=cols["batch_size"][sel],
                                 isl=cols["isl"][sel], heads=cols["num_heads"][sel], kv_dtype=str(dt))
    return out


def predict_mla_decode(profile, cols: dict) -> np.ndarray:
    """Seconds of each ``generation_mla`` row (per row KV dtype)."""
    out = np.empty(len(cols["time_s"]))
    for dt in np.unique(cols["dtype"]):
        sel = cols["dtype"] == dt
        out[sel] = mla_decode_s(profile, RowChips(cols["chip"][sel]), batch=cols["batch_size"][sel],
                                kv_len=cols["kv_len"][sel], heads=cols["num_heads"][sel], kv_dtype=str(dt))
    return out


def _fit_phase(cols: dict, dtype: str, table: str, start: dict, predict):
    if not cols:
        return None
    return fit_attention_terms(cols, cols["dtype"] == dtype, dtype, table, start, predict)


def fit_mla_prefill(cols: dict, dtype: str):
    """MLA prefill ``AttentionTerms`` at KV ``dtype`` from pooled ``context_mla`` rows (None: < MIN_ROWS)."""
    return _fit_phase(cols, dtype, "mla_prefill", PREFILL_START, predict_mla_prefill)


def fit_mla_decode(cols: dict, dtype: str):
    """MLA decode ``AttentionTerms`` at KV ``dtype`` from pooled ``generation_mla`` rows (None: < MIN_ROWS)."""
    return _fit_phase(cols, dtype, "mla_decode", DECODE_START, predict_mla_decode)


def fit_mla(prefill: dict, decode: dict) -> dict:
    """Profile keyword arguments ``mla_prefill`` and ``mla_decode`` (per KV dtype) where fitted."""
    out: dict = {}
    for key, cols, fit in (("mla_prefill", prefill, fit_mla_prefill), ("mla_decode", decode, fit_mla_decode)):
        if cols:
            got = tuple((str(dt), t) for dt in sorted(np.unique(cols["dtype"]).astype(str))
                        if (t := fit(cols, str(dt))) is not None)
            if got:
                out[key] = got
    return out
