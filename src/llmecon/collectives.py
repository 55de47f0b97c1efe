"""Alpha-beta costs of collectives on one network tier (Hockney 1994; ring algorithms as in
Thakur, Rabenseifner & Gropp 2005, "Optimization of Collective Communication Operations in MPICH").

``link.bandwidth_bytes_per_s`` is per chip per direction; ``link.latency_s`` is alpha per step.
Omitted: in-switch reduction (NVLS/SHARP), tree algorithms, congestion, and the torus topology of
TPU ICI (treated like a switch at the per-chip injection bandwidth). Sizes are per participant.
"""

from __future__ import annotations

import numpy as np

from .hardware import Link


def ring_all_reduce_s(*, message_bytes, participants: int, link: Link):
    """Ring all-reduce of ``message_bytes`` on each of ``participants`` chips:
    reduce-scatter + all-gather, 2(p-1) steps of message/p each -> 2(p-1)/p·S/BW + 2(p-1)·alpha."""
    p = participants
    if p <= 1:
        return np.zeros_like(np.asarray(message_bytes, dtype=float))
    return 2.0 * (p - 1) / p * np.asarray(message_bytes, dtype=float) / link.bandwidth_bytes_per_s \
        + 2.0 * (p - 1) * link.latency_s


def one_shot_all_reduce_s(*, message_bytes, participants: int, link: Link):
    """One-shot all-reduce through a switch: every chip sends its whole message to the p-1 others
    at once and reduces locally -> (p-1)·S/BW + alpha. Wins for small messages (the decode
    all-reduces); TensorRT-LLM and vLLM ship such kernels for NVSwitch domains."""
    p = participants
    if p <= 1:
        return np.zeros_like(np.asarray(message_bytes, dtype=float))
    return (p - 1) * np.asarray(message_bytes, dtype=float) / link.bandwidth_bytes_per_s + link.latency_s


def all_reduce_s(*, message_bytes, participants: int, link: Link):
    """The faster of ring and one-shot, per message size (what NCCL/engines choose by size)."""
    return np.minimum(ring_all_reduce_s(message_bytes=message_bytes, participants=participants, link=link),
                      one_shot_all_reduce_s(message_bytes=message_bytes, participants=participants, link=link))


def all_to_all_s(*, message_bytes, participants: int, link: Link):
    """All-to-all where each chip holds ``message_bytes`` spread evenly over all participants:
    (p-1)/p of it leaves the chip; through a switch all pairs run concurrently -> one alpha."""
    p = participants
    if p <= 1:
        return np.zeros_like(np.asarray(message_bytes, dtype=float))
    return (p - 1) / p * np.asarray(message_bytes, dtype=float) / link.bandwidth_bytes_per_s + link.latency_s


def p2p_s(*, message_bytes, link: Link):
    """Point-to-point send of ``message_bytes``: alpha + S/BW."""
    return link.latency_s + np.asarray(message_bytes, dtype=float) / link.bandwidth_bytes_per_s
