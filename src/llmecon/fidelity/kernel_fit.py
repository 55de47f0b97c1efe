"""Fit kernel-level efficiency terms to NVIDIA's measured kernel tables (``kernel_tables``).

Each family is fitted with the very function that prices it (``step.kernels``: ``gemm_s``,
``prefill_attention_s``, ``decode_attention_s``, ``moe_layer_s``, ``collective_s``), by bounded
least squares on log(predicted / measured) (scipy.optimize.least_squares, soft-L1 loss with
scale 0.1 so a few odd kernels do not dominate; every parameter is fitted in log space):

* GEMM, per dtype: fraction, m_half, n_half, k_half, hbm_fraction, floor_s (6 terms);
* prefill attention per KV dtype (bf16 attention rows): fraction, isl_half, head_dim_half,
  window_pad, item_s, floor_s; decode attention per KV dtype: fraction, hbm_fraction,
  items_half, item_s, floor_s (``AttentionTerms``);
* MoE, per dtype, on balanced rows: fraction, m_half (tokens per touched expert), n_half
  (expert width per shard), k_half (hidden size), hbm_fraction, floor_s; then per skewed
  distribution a compute factor and a weight factor (``moe_skew``) with those kept;
* the engine's own all-reduce (CUDA-graph variant where the table has one), one node: the
  scale-up tier's op_overhead_s, step_latency_s and bandwidth_fraction.

Rows may pool several chips (``Rows.chip`` per row): every row is priced with its own chip's
datasheet peak and bandwidth, so a pooled fit shares the *fractions, ramps and floors* and the
prediction for another chip scales through its datasheet (leave-one-chip-out in
``benchmarks/kernel_accuracy.py``). A fit uses at most ``MAX_FIT_ROWS`` rows (a fixed-seed
sample: the tables hold 10^4-10^5 rows per family and the terms are few). Where a table has
several kernel implementations for one dtype, the one with the most rows (the engine's default
path) is fitted; the others are not used.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from ..catalog.hardware import get_accelerator
from ..spec.efficiency import IDEAL, AttentionTerms, EfficiencyProfile, KernelTerms, LinkEfficiency
from ..step.kernels import collective_s, decode_attention_s, gemm_s, moe_layer_s, prefill_attention_s
from .kernel_tables import KernelFrame

MAX_FIT_ROWS = 4000
MIN_ROWS = 30


class RowChips:
    """Per-row datasheet figures standing in for an ``Accelerator`` (``peak`` and
    ``hbm_bandwidth_bytes_per_s`` as arrays), so the step.kernels functions price pooled rows."""

    def __init__(self, chips: np.ndarray):
        names = np.unique(chips)
        self._chips = chips
        self._acc = {c: get_accelerator(c) for c in names}
        self.hbm_bandwidth_bytes_per_s = self._col(lambda a: a.hbm_bandwidth_bytes_per_s)

    def _col(self, fn) -> np.ndarray:
        out = np.empty(len(self._chips))
        for c, a in self._acc.items():
            out[self._chips == c] = fn(a)
        return out

    def peak(self, dtype: str) -> np.ndarray:
        return self._col(lambda a: a.peak(dtype))


def primary_source(frame: KernelFrame, by: str = "dtype") -> KernelFrame:
    """The rows of the implementation with the most rows, per value of ``by`` (module docstring)."""
    if "kernel_source" not in frame.columns:
        return frame
    keep = np.zeros(len(frame), dtype=bool)
    for value in np.unique(frame[by]):
        sel = frame[by] == value
        names, counts = np.unique(frame["kernel_source"][sel], return_counts=True)
        keep |= sel & (frame["kernel_source"] == names[np.argmax(counts)])
    return frame.select(keep)


def pool(frames) -> dict:
    """Columns of several frames concatenated, with a ``chip`` column."""
    frames = [f for f in frames if f is not None and len(f)]
    if not frames:
        return {}
    keys = set.intersection(*(set(f.columns) for f in frames))
    out = {k: np.concatenate([f[k] for f in frames]) for k in keys}
    out["chip"] = np.concatenate([np.full(len(f), f.chip, dtype=object).astype(str) for f in frames])
    return out


def subsample(cols: dict, n: int = MAX_FIT_ROWS, seed: int = 0) -> dict:
    size = len(cols["time_s"])
    if size <= n:
        return cols
    idx = np.sort(np.random.default_rng(seed).choice(size, n, replace=False))
    return {k: v[idx] for k, v in cols.items()}


def _fit(residual, start: dict, bounds: dict) -> dict:
    """Bounded soft-L1 least squares in log space; returns 4-significant-digit values."""
    from scipy.optimize import least_squares

    names = list(start)
    lo = np.log([bounds[n][0] for n in names])
    hi = np.log([bounds[n][1] for n in names])
    x0 = np.clip(np.log([start[n] for n in names]), lo + 1e-9, hi - 1e-9)
    res = least_squares(lambda z: residual(dict(zip(names, np.exp(z)))), x0, bounds=(lo, hi), loss="soft_l1",
                        f_scale=0.1, x_scale=1.0, max_nfev=200)
    return {n: float(f"{v:.4g}") for n, v in zip(names, np.exp(res.x))}


def _logres(pred, meas):
    r = np.log(np.asarray(pred, dtype=float) / meas)
    return np.where(np.isfinite(r), r, 5.0)


_GEMM_START = {"fraction": 0.7, "m_half": 64.0, "n_half": 100.0, "k_half": 100.0, "hbm_fraction": 0.8,
               "floor_s": 5e-6}
_GEMM_BOUNDS = {"fraction": (0.02, 1.0), "m_half": (1e-3, 1e5), "n_half": (1e-3, 1e5), "k_half": (1e-3, 1e5),
                "hbm_fraction": (0.02, 1.0), "floor_s": (1e-8, 1e-3)}


def _with(**kw) -> EfficiencyProfile:
    return dataclasses.replace(IDEAL, name="fit", **kw)


def predict_gemm(profile: EfficiencyProfile, cols: dict) -> np.ndarray:
    """Seconds of each GEMM row under ``profile`` (per row dtype)."""
    out = np.empty(len(cols["time_s"]))
    for dt in np.unique(cols["dtype"]):
        sel = cols["dtype"] == dt
        out[sel] = gemm_s(profile, RowChips(cols["chip"][sel]), m=cols["m"][sel], n=cols["n"][sel],
                          k=cols["k"][sel], dtype=str(dt))
    return out


def fit_gemm(cols: dict, dtype: str) -> KernelTerms | None:
    """GEMM terms of ``dtype`` from pooled rows (None with fewer than ``MIN_ROWS``)."""
    sel = cols["dtype"] == dtype
    if sel.sum() < MIN_ROWS:
        return None
    c = subsample({k: v[sel] for k, v in cols.items()})
    chips, y = RowChips(c["chip"]), c["time_s"]

    def residual(p):
        prof = _with(gemm=((dtype, KernelTerms(**p)),))
        return _logres(gemm_s(prof, chips, m=c["m"], n=c["n"], k=c["k"], dtype=dtype), y)

    return KernelTerms(**_fit(residual, _GEMM_START, _GEMM_BOUNDS))


def _cols_kv(cols: dict) -> dict:
    return {"batch": cols["batch_size"], "heads": cols["num_heads"], "kv_heads": cols["num_key_value_heads"],
            "head_dim": cols["head_dim"], "window": cols["window_size"]}


def predict_prefill(profile: EfficiencyProfile, cols: dict) -> np.ndarray:
    """Seconds of each context-attention row (per row KV dtype)."""
    out = np.empty(len(cols["time_s"]))
    for dt in np.unique(cols["dtype"]):
        sel = cols["dtype"] == dt
        kw = {k: v[sel] for k, v in _cols_kv(cols).items()}
        out[sel] = prefill_attention_s(profile, RowChips(cols["chip"][sel]), isl=cols["isl"][sel], kv_dtype=str(dt),
                                       **kw)
    return out


def predict_decode(profile: EfficiencyProfile, cols: dict) -> np.ndarray:
    """Seconds of each generation-attention row (per row KV dtype)."""
    out = np.empty(len(cols["time_s"]))
    for dt in np.unique(cols["dtype"]):
        sel = cols["dtype"] == dt
        kw = {k: v[sel] for k, v in _cols_kv(cols).items()}
        out[sel] = decode_attention_s(profile, RowChips(cols["chip"][sel]), kv_len=cols["kv_len"][sel],
                                      kv_dtype=str(dt), **kw)
    return out


_ATT_BOUNDS = {"fraction": (0.02, 1.0), "isl_half": (1e-3, 1e5), "head_dim_half": (1e-3, 1e4),
               "window_pad": (1e-3, 1e5), "hbm_fraction": (0.02, 1.0), "items_half": (1e-3, 1e4),
               "item_s": (1e-13, 1e-5), "floor_s": (1e-8, 1e-3)}


def fit_attention_terms(cols: dict, sel, dtype: str, table: str, start: dict, predict,
                        min_rows: int = MIN_ROWS) -> AttentionTerms | None:
    """``AttentionTerms`` of profile table ``table`` under key ``dtype`` (a KV dtype, or a GDN kernel)
    fitted on the rows ``sel`` of ``cols`` (None under ``min_rows``), priced by ``predict(profile,
    cols)``, starting at ``start`` (the parameters fitted) within ``_ATT_BOUNDS``: every attention
    family's fit (GQA here, MLA in ``mla_fit``, Gated DeltaNet in ``gdn_fit``)."""
    if sel.sum() < min_rows:
        return None
    c = subsample({k: v[sel] for k, v in cols.items()})

    def residual(p):
        return _logres(predict(_with(**{table: ((dtype, AttentionTerms(**p)),)}), c), c["time_s"])

    return AttentionTerms(**_fit(residual, start, {k: _ATT_BOUNDS[k] for k in start}))


def fit_prefill(cols: dict, dtype: str) -> AttentionTerms | None:
    """Prefill attention terms at KV ``dtype`` from pooled bf16 context-attention rows."""
    if not cols:
        return None
    start = {"fraction": 0.6, "isl_half": 1000.0, "head_dim_half": 30.0, "window_pad": 128.0, "item_s": 1e-8,
             "floor_s": 1e-5}
    return fit_attention_terms(cols, (cols["attn_dtype"] == "bfloat16") & (cols["dtype"] == dtype), dtype,
                               "prefill_attention", start, predict_prefill)


def fit_decode(cols: dict, dtype: str) -> AttentionTerms | None:
    """Decode attention terms at KV ``dtype`` from pooled generation-attention rows."""
    if not cols:
        return None
    start = {"fraction": 0.5, "hbm_fraction": 0.7, "items_half": 4.0, "item_s": 5e-9, "floor_s": 5e-6}
    return fit_attention_terms(cols, cols["dtype"] == dtype, dtype, "decode_attention", start, predict_decode)


def fit_attention(prefill: dict, decode: dict) -> dict:
    """Profile keyword arguments: prefill and decode terms per KV dtype, and the scalars a step
    uses (attention_fraction, hbm_fraction, attention_floor_s) from the bf16 ones."""
    out: dict = {}
    pre = tuple((str(dt), t) for dt in sorted(np.unique(prefill["dtype"]).astype(str)) if prefill
                and (t := fit_prefill(prefill, dt)) is not None) if prefill else ()
    dec = tuple((str(dt), t) for dt in sorted(np.unique(decode["dtype"]).astype(str))
                if (t := fit_decode(decode, dt)) is not None) if decode else ()
    if pre:
        out["prefill_attention"] = pre
        out["attention_fraction"] = dict(pre).get("bf16", pre[0][1]).fraction
    if dec:
        out["decode_attention"] = dec
        d = dict(dec).get("bf16", dec[0][1])
        out["hbm_fraction"] = d.hbm_fraction
        out["attention_floor_s"] = d.floor_s
    return out


def _moe_kw(cols: dict, sel=slice(None)) -> dict:
    return {"flops": cols["flops"][sel], "weight_bytes": cols["weight_bytes"][sel], "act_bytes": cols["act_bytes"][sel],
            "rows_per_expert": cols["rows_per_expert"][sel],
            "inter": cols["inter_size"][sel] / cols["moe_tp_size"][sel], "hidden": cols["hidden_size"][sel]}


def predict_moe(profile: EfficiencyProfile, cols: dict) -> np.ndarray:
    out = np.empty(len(cols["time_s"]))
    for dt in np.unique(cols["dtype"]):
        for dist in np.unique(cols["distribution"]):
            sel = (cols["dtype"] == dt) & (cols["distribution"] == dist)
            if sel.any():
                out[sel] = moe_layer_s(profile, RowChips(cols["chip"][sel]), dtype=str(dt), distribution=str(dist),
                                       **_moe_kw(cols, sel))
    return out


def fit_moe(cols: dict, dtype: str) -> tuple[KernelTerms, dict] | None:
    """(MoE terms of ``dtype`` from balanced rows, {distribution: (compute factor, weight factor)}
    from the skewed ones, with the balanced terms kept)."""
    sel = (cols["dtype"] == dtype) & (cols["distribution"] == "balanced")
    if sel.sum() < MIN_ROWS:
        return None
    c = subsample({k: v[sel] for k, v in cols.items()})
    chips = RowChips(c["chip"])

    def residual(p):
        prof = _with(moe=((dtype, KernelTerms(**p)),))
        return _logres(moe_layer_s(prof, chips, dtype=dtype, **_moe_kw(c)), c["time_s"])

    start = {"fraction": 0.5, "m_half": 30.0, "n_half": 300.0, "k_half": 100.0, "hbm_fraction": 0.7, "floor_s": 3e-5}
    bounds = {k: _GEMM_BOUNDS[k] for k in start}
    terms = KernelTerms(**_fit(residual, start, bounds))
    skew = {}
    for dist in np.unique(cols["distribution"]):
        if dist == "balanced":
            continue
        s = (cols["dtype"] == dtype) & (cols["distribution"] == dist)
        if s.sum() < MIN_ROWS:
            continue
        d = subsample({k: v[s] for k, v in cols.items()})
        ch = RowChips(d["chip"])

        def res_s(p, d=d, ch=ch, dist=str(dist)):
            prof = _with(moe=((dtype, terms),), moe_skew=((dist, p["compute"], p["weights"]),))
            return _logres(moe_layer_s(prof, ch, dtype=dtype, distribution=dist, **_moe_kw(d)), d["time_s"])

        got = _fit(res_s, {"compute": 1.2, "weights": 0.8}, {"compute": (0.1, 50.0), "weights": (0.01, 1.0)})
        skew[str(dist)] = (got["compute"], got["weights"])
    return terms, skew


@dataclass(frozen=True, kw_only=True)
class CollectiveRows:
    """All-reduce rows of one chip's node: bytes, participants, seconds."""

    message_bytes: np.ndarray
    participants: np.ndarray
    time_s: np.ndarray


def predict_all_reduce(profile: EfficiencyProfile, system, rows: CollectiveRows) -> np.ndarray:
    out = np.empty(len(rows.time_s))
    for p in np.unique(rows.participants):
        sel = rows.participants == p
        out[sel] = collective_s(profile, system, kind="all_reduce", message_bytes=rows.message_bytes[sel],
                                participants=int(p), chips_per_node=int(p))
    return out


def fit_all_reduce(system, rows: CollectiveRows) -> LinkEfficiency | None:
    """The scale-up tier's overhead, per-step latency and bandwidth share from one node's rows."""
    if len(rows.time_s) < MIN_ROWS // 3:
        return None

    def residual(p):
        link = LinkEfficiency(op_overhead_s=p["op"], step_latency_s=p["step"], bandwidth_fraction=p["bw"])
        return _logres(predict_all_reduce(_with(scale_up=link), system, rows), rows.time_s)

    p = _fit(residual, {"op": 5e-6, "step": 1e-6, "bw": 0.6},
             {"op": (1e-9, 1e-3), "step": (1e-10, 1e-3), "bw": (0.01, 1.0)})
    return LinkEfficiency(op_overhead_s=p["op"], step_latency_s=p["step"], bandwidth_fraction=p["bw"])

