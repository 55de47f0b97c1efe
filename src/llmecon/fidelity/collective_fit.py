"""Fit alpha-beta link models to measured NCCL collectives, and check the catalogue against them.

Data: vidur's NCCL profiling, ``<root>/<cluster>/{all_reduce,send_recv}.csv`` (root is
``shared/validation/vidur/profiling/network``; clusters ``h100_dgx``, ``a100_dgx``,
``a100_pairwise_nvlink``). Columns used: ``time_stats.<op>.median`` (ms), ``size`` (bytes, the
per-rank buffer), ``num_workers`` and ``devices_per_node``; a row with devices_per_node <
num_workers crosses nodes (scale-out), else it stays on the node's NVLink (scale-up). And
aiconfigurator's collective tables (``load_aiconfigurator_comm``: NCCL all-reduce, all-gather,
reduce-scatter, all-to-all and the TensorRT-LLM / SGLang / vLLM custom all-reduces, one node of
2-8 GPUs, ``shared/validation/aiconfigurator/kernels/<chip>/comm``).

Fit: every algorithm of ``collectives`` costs t = alpha + n_steps·step + f·S/BW with (n_steps, f)
from ``collectives.alpha_beta_counts``. Within one group the floor alpha is a constant like the
steps, so the fit regresses t = n_steps·alpha' + f·S/BW, linear in alpha' and 1/BW: alpha' is the
whole fixed cost spread over the steps (NCCL's launch and synchronisation included), what the
catalogue charged per step before its latencies became per-operation floors (docs/assumptions.md,
"Collectives"). Times span ~5 us to ~30 ms, so plain
least squares is decided by the largest messages; rows are weighted by 1/t (relative error), so
each decade of size counts alike, and both coefficients are kept non-negative. Within one
(participants, devices_per_node) group (n_alpha, f) are constants, so every algorithm fits the
same straight line c0 + c1·S with the same errors and differs only in the alpha and BW it implies;
``algorithm_by_size`` tells algorithms apart by fitting one alpha and BW jointly across all
participant counts of a node, per size band, where the p-scaling of each formula matters; a fit
whose BW exceeds the link's peak is not what ran, however well it fits.

Check: ``check_catalogue`` predicts every row of a cluster with a catalogued twin (h100_dgx ->
hgx-h100, a100_dgx -> hgx-a100) from its links alone: send_recv with ``p2p_s`` on the tier the row
uses, all_reduce with ``all_reduce_s`` inside a node and ``two_tier_all_reduce_s`` across nodes
(domain = devices_per_node), all_gather / reduce_scatter / all_to_all with their ``collectives``
functions. The catalogue's links are peak bandwidths and per-operation latency floors, so with
``algorithm="best"`` (ideal mode's) every row should be predicted at or below its measurement
(tests/step/test_collectives_lower_bound.py).
Omitted by the model (and so in the errors): NCCL's protocol switching by size, congestion, SM
contention, launch jitter (the vidur medians are of few repeats and are noisy below ~1 MiB).
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..step.collectives import (all_gather_s, all_reduce_s, all_to_all_s, alpha_beta_counts, p2p_s,
    reduce_scatter_s, supported_all_reduce_algorithms, two_tier_all_reduce_s)
from ..errors import CatalogError
from ..spec.hardware import Link, System

CLUSTERS = ("h100_dgx", "a100_dgx", "a100_pairwise_nvlink")
OPS = ("all_reduce", "send_recv")
# Catalogued twins of the profiled clusters; a100_pairwise_nvlink (A100s bridged in NVLink pairs)
# has none.
CLUSTER_SYSTEMS = {"h100_dgx": "hgx-h100", "a100_dgx": "hgx-a100"}
FIT_ALGORITHMS = {"all_reduce": ("ring", "tree", "one_shot", "in_switch"), "send_recv": ("p2p",)}
KIB, MIB = 1024.0, 1024.0 ** 2
SIZE_BANDS_BYTES = ((0.0, 64 * KIB), (64 * KIB, 1 * MIB), (1 * MIB, 16 * MIB), (16 * MIB, np.inf))


@dataclass(frozen=True, kw_only=True)
class Measurements:
    """One profiling CSV: medians per row, with the group columns."""

    cluster: str
    op: str
    path: str
    size_bytes: np.ndarray
    time_s: np.ndarray
    participants: np.ndarray
    devices_per_node: np.ndarray

    @property
    def crosses_nodes(self) -> np.ndarray:
        return self.devices_per_node < self.participants

    def groups(self) -> tuple[tuple[int, int], ...]:
        """The (participants, devices_per_node) configurations measured, sorted."""
        return tuple(sorted({(int(p), int(d)) for p, d in zip(self.participants, self.devices_per_node)}))

    def select(self, participants: int, devices_per_node: int) -> np.ndarray:
        return (self.participants == participants) & (self.devices_per_node == devices_per_node)


@dataclass(frozen=True, kw_only=True)
class AlphaBetaFit:
    """alpha and per-direction bandwidth of ``algorithm`` fitted to one group's rows, with the
    absolute relative errors of the fit. ``bandwidth_bytes_per_s`` is inf only if the rows show no
    growth with size (never in the vidur sets)."""

    cluster: str
    op: str
    participants: int
    devices_per_node: int
    tier: str                   # "scale_up" (one node) or "scale_out" (crosses nodes)
    algorithm: str
    alpha_s: float
    bandwidth_bytes_per_s: float
    rows: int
    median_rel_error: float
    p90_rel_error: float


@dataclass(frozen=True, kw_only=True)
class BandFit:
    """Joint fit (one alpha and bandwidth across every participant count of a node) of each
    all-reduce algorithm to the rows of one size band; ``best`` has the smallest median error,
    ``best_feasible`` the smallest among algorithms the catalogued scale-up link supports whose
    fitted bandwidth does not exceed its peak ``peak_bytes_per_s`` (a fit above the peak cannot be
    what ran). Both are None when no link is given or no fit is feasible."""

    cluster: str
    low_bytes: float
    high_bytes: float
    participants: tuple[int, ...]
    rows: int
    median_rel_error: Mapping[str, float]
    alpha_s: Mapping[str, float]
    bandwidth_bytes_per_s: Mapping[str, float]
    best: str
    peak_bytes_per_s: float | None = None
    best_feasible: str | None = None


@dataclass(frozen=True, kw_only=True)
class CheckRow:
    """Catalogue prediction against one measured group (or, with participants None, all of a
    cluster's rows for ``op``): errors |pred - meas| / meas and the share predicted below."""

    cluster: str
    op: str
    system: str
    algorithm: str
    participants: int | None
    devices_per_node: int | None
    tier: str                   # "scale_up", "scale_out" or "all"
    rows: int
    median_rel_error: float
    p90_rel_error: float
    fraction_below: float


def load_measurements(root: str | Path, cluster: str, op: str) -> Measurements:
    """Read ``<root>/<cluster>/<op>.csv``; CatalogError naming the file and the column or row when
    the file is missing or malformed."""
    path = Path(root) / cluster / f"{op}.csv"
    if not path.is_file():
        raise CatalogError(f"{path}: no such file; vidur's network profiling lives in "
                           "../shared/validation/vidur/profiling/network (absent on a fresh clone)")
    time_col = f"time_stats.{op}.median"
    needed = (time_col, "size", "num_workers", "devices_per_node")
    with path.open(newline="") as handle:
        reader = csv.DictReader(handle)
        missing = [c for c in needed if c not in (reader.fieldnames or ())]
        if missing:
            raise CatalogError(f"{path}: missing column '{missing[0]}'; expected {', '.join(needed)}")
        rows = list(reader)
    if not rows:
        raise CatalogError(f"{path}: no data rows")
    values = {}
    for col in needed:
        try:
            values[col] = np.array([float(r[col]) for r in rows])
        except (TypeError, ValueError) as exc:
            raise CatalogError(f"{path} column {col}: not a number ({exc})") from exc
        bad = np.flatnonzero(~(np.isfinite(values[col]) & (values[col] > 0)))
        if bad.size:
            raise CatalogError(f"{path} column {col}: row {bad[0] + 2} is {rows[bad[0]][col]!r}, must be > 0")
    return Measurements(cluster=cluster, op=op, path=str(path), size_bytes=values["size"],
                        time_s=values[time_col] * 1e-3, participants=values["num_workers"].astype(int),
                        devices_per_node=values["devices_per_node"].astype(int))


# aiconfigurator chip folders and the catalogue systems they were measured on (one node of 2-8 GPUs);
# b300_sxm has no catalogue system.
AIC_SYSTEMS = {"h100_sxm": "hgx-h100", "h200_sxm": "hgx-h200", "b200_sxm": "hgx-b200", "gb200": "gb200-nvl72",
               "gb300": "gb300-nvl72"}
_AIC_BYTES = {"half": 2.0, "bfloat16": 2.0, "float16": 2.0, "int8": 1.0}
_AIC_OPS = {"all_reduce": "all_reduce", "all_gather": "all_gather", "reduce_scatter": "reduce_scatter",
            "alltoall": "all_to_all"}


def load_aiconfigurator_comm(root: str | Path, chip: str) -> tuple[Measurements, ...]:
    """aiconfigurator's collective tables of ``chip`` (``<root>/<chip>/comm/<framework>/<version>/``,
    root = ``shared/validation/aiconfigurator/kernels``): ``nccl_perf.parquet`` and every
    framework's ``custom_allreduce_perf.parquet``, one ``Measurements`` per (table, op, dtype,
    implementation), cluster ``"<chip> <framework>/<implementation> <dtype>"``, all inside one node.
    ``message_size`` is in elements (bytes = elements x 2 for half / bfloat16, x 1 for int8; the
    folder's README), ``latency`` in ms; a key held twice gives its median. CatalogError naming the
    file on a missing folder, column, op or dtype."""
    import pyarrow.parquet as pq

    base = Path(root) / chip / "comm"
    files = sorted(base.glob("*/*/nccl_perf.parquet")) + sorted(base.glob("*/*/custom_allreduce_perf.parquet"))
    if not files:
        raise CatalogError(f"{base}: no nccl_perf or custom_allreduce_perf tables; aiconfigurator's data live in "
                           "../shared/validation/aiconfigurator/kernels (absent on a fresh clone)")
    out = []
    for path in files:
        rows = pq.read_table(path).to_pylist()
        dtype_col = "nccl_dtype" if path.name == "nccl_perf.parquet" else "allreduce_dtype"
        groups: dict[tuple, dict[tuple[int, float], list[float]]] = {}
        for i, r in enumerate(rows):
            try:
                op, dtype, p, n, t = (r["op_name"], r[dtype_col], int(r["num_gpus"]), float(r["message_size"]),
                                      float(r["latency"]))
            except (KeyError, TypeError, ValueError) as exc:
                raise CatalogError(f"{path} row {i}: {exc!r} (needs op_name, {dtype_col}, num_gpus, message_size, "
                                   "latency)") from exc
            if op not in _AIC_OPS or dtype not in _AIC_BYTES:
                raise CatalogError(f"{path} row {i}: op {op!r} / dtype {dtype!r} not understood; known ops "
                                   f"{', '.join(_AIC_OPS)}, dtypes {', '.join(_AIC_BYTES)}")
            if not (p >= 1 and n > 0 and t > 0):
                raise CatalogError(f"{path} row {i}: num_gpus {p}, message_size {n}, latency {t} must be positive")
            impl = r.get("implementation") or r.get("backend") or r.get("kernel_source") or "nccl"
            groups.setdefault((op, dtype, str(impl)), {}).setdefault((p, n * _AIC_BYTES[dtype]), []).append(t)
        framework = path.parts[-3]
        for (op, dtype, impl), cells in sorted(groups.items()):
            keys = sorted(cells)
            parts = np.array([k[0] for k in keys], dtype=int)
            out.append(Measurements(cluster=f"{chip} {framework}/{impl} {dtype}", op=_AIC_OPS[op], path=str(path),
                                    size_bytes=np.array([k[1] for k in keys]),
                                    time_s=np.array([np.median(cells[k]) for k in keys]) * 1e-3,
                                    participants=parts, devices_per_node=parts.copy()))
    return tuple(out)


def load_all(root: str | Path, clusters: Iterable[str] = CLUSTERS,
             ops: Iterable[str] = OPS) -> tuple[Measurements, ...]:
    """Every (cluster, op) CSV under ``root``; a missing one is an error (see load_measurements)."""
    return tuple(load_measurements(root, c, op) for c in clusters for op in ops)


def fit_alpha_beta(*, size_bytes, time_s, n_alpha, per_byte) -> tuple[float, float]:
    """(alpha_s, bandwidth_bytes_per_s) minimising sum(((n_alpha·alpha + per_byte·S/BW - t) / t)^2)
    with alpha >= 0 and 1/BW >= 0 (``n_alpha``, ``per_byte`` scalars or per-row arrays)."""
    t = np.asarray(time_s, dtype=float)
    s = np.asarray(size_bytes, dtype=float)
    design = np.column_stack([np.broadcast_to(n_alpha, t.shape), np.broadcast_to(per_byte, t.shape) * s]) / t[:, None]
    y = np.ones_like(t)
    coef, *_ = np.linalg.lstsq(design, y, rcond=None)
    if np.any(coef < 0):   # constrained optimum lies on an axis: the better single-coefficient fit
        best = None
        for k in (0, 1):
            col = design[:, k]
            c = np.zeros(2)
            c[k] = max(0.0, float(col @ y) / float(col @ col)) if col @ col > 0 else 0.0
            sse = float(np.sum((design @ c - y) ** 2))
            if best is None or sse < best[0]:
                best = (sse, c)
        coef = best[1]
    alpha, inverse_bw = float(coef[0]), float(coef[1])
    return alpha, (1.0 / inverse_bw if inverse_bw > 0 else np.inf)


def _rel_errors(predicted, measured) -> np.ndarray:
    return np.abs(np.asarray(predicted, dtype=float) - measured) / measured


def _counts(algorithm: str, participants) -> tuple[np.ndarray, np.ndarray]:
    pairs = [alpha_beta_counts(algorithm, int(p)) for p in np.atleast_1d(participants)]
    return np.array([a for a, _ in pairs]), np.array([f for _, f in pairs])


def _predict(n_alpha, per_byte, size, alpha, bw) -> np.ndarray:
    return n_alpha * alpha + per_byte * size / bw


def fit_groups(measurements: Iterable[Measurements]) -> tuple[AlphaBetaFit, ...]:
    """For every (cluster, op, participants, devices_per_node) group, the fit of each algorithm in
    ``FIT_ALGORITHMS[op]`` (for a crossing all-reduce group, the single-tier formula over all
    participants: an effective link, not the scale-out one)."""
    out = []
    for m in measurements:
        for p, d in m.groups():
            sel = m.select(p, d)
            size, time = m.size_bytes[sel], m.time_s[sel]
            for algorithm in FIT_ALGORITHMS[m.op]:
                n_alpha, per_byte = alpha_beta_counts(algorithm, p)
                alpha, bw = fit_alpha_beta(size_bytes=size, time_s=time, n_alpha=n_alpha, per_byte=per_byte)
                err = _rel_errors(_predict(n_alpha, per_byte, size, alpha, bw), time)
                out.append(AlphaBetaFit(cluster=m.cluster, op=m.op, participants=p, devices_per_node=d,
                                        tier="scale_out" if d < p else "scale_up", algorithm=algorithm,
                                        alpha_s=alpha, bandwidth_bytes_per_s=bw, rows=int(sel.sum()),
                                        median_rel_error=float(np.median(err)),
                                        p90_rel_error=float(np.percentile(err, 90))))
    return tuple(out)


def algorithm_by_size(measurements: Iterable[Measurements], bands=SIZE_BANDS_BYTES, *,
                      links: Mapping[str, Link] | None = None) -> tuple[BandFit, ...]:
    """Per cluster with all-reduce rows inside one node at two or more participant counts, and per
    size band [low, high): the joint fit of each algorithm and which one fits best (overall, and
    among those feasible on ``links[cluster]``, the cluster's catalogued scale-up link, if given)."""
    out = []
    for m in measurements:
        inside = ~m.crosses_nodes
        counts = sorted({int(p) for p in m.participants[inside]})
        if m.op != "all_reduce" or len(counts) < 2:
            continue
        for low, high in bands:
            sel = inside & (m.size_bytes >= low) & (m.size_bytes < high)
            if not sel.any():
                continue
            size, time, parts = m.size_bytes[sel], m.time_s[sel], m.participants[sel]
            errors, alphas, bws = {}, {}, {}
            for algorithm in FIT_ALGORITHMS["all_reduce"]:
                n_alpha, per_byte = _counts(algorithm, parts)
                alpha, bw = fit_alpha_beta(size_bytes=size, time_s=time, n_alpha=n_alpha, per_byte=per_byte)
                errors[algorithm] = float(np.median(_rel_errors(_predict(n_alpha, per_byte, size, alpha, bw), time)))
                alphas[algorithm], bws[algorithm] = alpha, bw
            link = (links or {}).get(m.cluster)
            peak = None if link is None else link.bandwidth_bytes_per_s
            physical = [] if link is None else [a for a in supported_all_reduce_algorithms(link) if bws[a] <= peak]
            out.append(BandFit(cluster=m.cluster, low_bytes=low, high_bytes=high, participants=tuple(counts),
                               rows=int(sel.sum()), median_rel_error=errors, alpha_s=alphas,
                               bandwidth_bytes_per_s=bws, best=min(errors, key=errors.get), peak_bytes_per_s=peak,
                               best_feasible=min(physical, key=errors.get) if physical else None))
    return tuple(out)


_ONE_NODE = {"all_gather": all_gather_s, "reduce_scatter": reduce_scatter_s, "all_to_all": all_to_all_s}


def predict_rows(m: Measurements, system: System, *, algorithm: str = "auto") -> np.ndarray:
    """Catalogue prediction (s) of every row of ``m`` from ``system``'s links (see module doc)."""
    predicted = np.empty_like(m.time_s)
    for p, d in m.groups():
        sel = m.select(p, d)
        size = m.size_bytes[sel]
        if m.op == "send_recv":
            predicted[sel] = p2p_s(message_bytes=size, link=system.scale_out if d < p else system.scale_up)
        elif m.op in _ONE_NODE:
            if d < p:
                raise CatalogError(f"{m.path}: {m.op} across nodes is not modelled (p={p}, {d} per node)")
            predicted[sel] = _ONE_NODE[m.op](message_bytes=size, participants=p, link=system.scale_up)
        elif d < p:
            predicted[sel] = two_tier_all_reduce_s(message_bytes=size, participants=p, domain_chips=d,
                                                   scale_up=system.scale_up, scale_out=system.scale_out,
                                                   algorithm=algorithm)
        else:
            predicted[sel] = all_reduce_s(message_bytes=size, participants=p, link=system.scale_up,
                                          algorithm=algorithm)
    return predicted


def _check_row(m, system, algorithm, predicted, sel, participants, per_node, tier) -> CheckRow:
    err = _rel_errors(predicted[sel], m.time_s[sel])
    return CheckRow(cluster=m.cluster, op=m.op, system=system.name, algorithm=algorithm, participants=participants,
                    devices_per_node=per_node, tier=tier, rows=int(sel.sum()),
                    median_rel_error=float(np.median(err)), p90_rel_error=float(np.percentile(err, 90)),
                    fraction_below=float(np.mean(predicted[sel] < m.time_s[sel])))


def check_catalogue(measurements: Iterable[Measurements], systems: Mapping[str, System], *,
                    algorithm: str = "auto") -> tuple[CheckRow, ...]:
    """Per measured group, then per (cluster, op) over all rows (participants None, tier "all"):
    the catalogue's prediction errors. ``systems`` maps cluster names to System specs (e.g.
    ``{c: get_system(n) for c, n in CLUSTER_SYSTEMS.items()}``); clusters not in it are skipped."""
    out = []
    for m in measurements:
        if m.cluster not in systems:
            continue
        system = systems[m.cluster]
        predicted = predict_rows(m, system, algorithm=algorithm)
        for p, d in m.groups():
            out.append(_check_row(m, system, algorithm, predicted, m.select(p, d), p, d,
                                  "scale_out" if d < p else "scale_up"))
        out.append(_check_row(m, system, algorithm, predicted, np.ones_like(m.time_s, dtype=bool), None, None, "all"))
    return tuple(out)
