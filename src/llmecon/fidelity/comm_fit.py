"""The expert-parallel all-to-all's link terms, fitted on NCCL's measured one-node all-to-all
(aiconfigurator's ``comm/nccl/<version>/nccl_perf.parquet``, read by
``collective_fit.load_aiconfigurator_comm``; bf16 ("half") rows, the dtype of the step's
dispatch/combine; 2-8 GPUs of one node).

Each row is priced as the step prices an EP dispatch or combine inside a scale-up domain
(``step.collectives.all_to_all_s`` on the profile's link: one step through the switch, (p-1)/p of
the per-rank buffer S leaves each chip) plus the per-call overhead: t = op_overhead_s + link
floor + step_latency_s + (p-1)/p·S/(bandwidth_fraction·BW). The three terms are fitted with
``kernel_fit``'s log least squares and written as the profile's ``[all_to_all]`` table; the
``scale_up`` terms stay the engine's all-reduce's. ``message_size`` is taken as the per-rank
buffer (nccl-tests' convention).

Omitted (in the errors): NCCL's protocol switch (LL / LL128 / Simple: a plateau near 64 KiB), the
DeepEP kernels (their tables, ``wideep_deepep_{ll,normal}_perf``, are not in the shared data), and
every multi-node all-to-all (no measurement: the scale-out tier keeps its catalogue link).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..errors import CatalogError
from ..spec.efficiency import IDEAL, LinkEfficiency
from ..spec.hardware import System
from ..step.collectives import all_to_all_s
from .kernel_fit import MIN_ROWS, CollectiveRows, _fit, _logres

DTYPE = "half"


def load_all_to_all(root, chip_folder: str) -> tuple[CollectiveRows | None, str]:
    """(bf16 NCCL all-to-all rows of one chip folder, their source), or (None, "") where absent."""
    from .collective_fit import load_aiconfigurator_comm

    try:
        groups = load_aiconfigurator_comm(root, chip_folder)
    except CatalogError:
        return None, ""
    mine = [g for g in groups if g.op == "all_to_all" and g.cluster.endswith(f" {DTYPE}")]
    if not mine:
        return None, ""
    rows = CollectiveRows(message_bytes=np.concatenate([g.size_bytes for g in mine]),
                          participants=np.concatenate([g.participants for g in mine]).astype(float),
                          time_s=np.concatenate([g.time_s for g in mine]))
    return rows, "; ".join(sorted({g.path.split("/kernels/")[-1] for g in mine}))


def predict_all_to_all(link: LinkEfficiency, system: System, rows: CollectiveRows) -> np.ndarray:
    """Seconds of each all-to-all row on ``system``'s scale-up link seen through ``link``."""
    up = dataclasses.replace(IDEAL, name="a2a", all_to_all=link).system(system, "all_to_all").scale_up
    out = np.empty(len(rows.time_s))
    for p in np.unique(rows.participants):
        sel = rows.participants == p
        out[sel] = all_to_all_s(message_bytes=rows.message_bytes[sel], participants=int(p), link=up)
    return out + link.op_overhead_s


def fit_all_to_all(system: System, rows: CollectiveRows) -> LinkEfficiency | None:
    """The all-to-all's per-call overhead, per-step latency and bandwidth share (None: too few rows)."""
    if rows is None or len(rows.time_s) < MIN_ROWS // 3:
        return None

    def residual(p):
        link = LinkEfficiency(op_overhead_s=p["op"], step_latency_s=p["step"], bandwidth_fraction=p["bw"])
        return _logres(predict_all_to_all(link, system, rows), rows.time_s)

    p = _fit(residual, {"op": 5e-6, "step": 1e-6, "bw": 0.6},
             {"op": (1e-9, 1e-3), "step": (1e-10, 1e-3), "bw": (0.01, 1.0)})
    return LinkEfficiency(op_overhead_s=p["op"], step_latency_s=p["step"], bandwidth_fraction=p["bw"])


RING_OPS = ("reduce_scatter", "all_gather")
RING_MIN_BYTES = 16 * 2**20   # bandwidth-bound: the 2-10 µs floors are < 5% of these operations


def ring_bandwidth_share(root, chip_folder: str, system: System, *, participants: int = 8) -> tuple[float, str]:
    """The share of ``system``'s scale-up bandwidth NCCL's bf16 reduce-scatter and all-gather reach on one
    node (aiconfigurator ``comm/nccl``: ``participants`` GPUs, messages >= 16 MiB): the median over rows
    and both ops of ((p−1)/p·S/BW) / (t − link floor), with S the full buffer. Training's sequence-parallel
    and data-parallel collectives are these two ops. (nan, "") where the table is absent."""
    from .collective_fit import load_aiconfigurator_comm

    try:
        groups = load_aiconfigurator_comm(root, chip_folder)
    except CatalogError:
        return float("nan"), ""
    link, shares, paths = system.scale_up, [], set()
    for g in groups:
        if g.op not in RING_OPS or not g.cluster.endswith(f"nccl/NCCL {DTYPE}"):
            continue
        sel = (g.participants == participants) & (g.size_bytes >= RING_MIN_BYTES)
        s, t = g.size_bytes[sel], g.time_s[sel]
        shares.extend((participants - 1) / participants * s / link.bandwidth_bytes_per_s / (t - link.latency_s))
        paths.add(g.path.split("/kernels/")[-1])
    if not shares:
        return float("nan"), ""
    return float(np.median(shares)), "; ".join(sorted(paths))
