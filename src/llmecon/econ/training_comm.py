"""Where a training job's collectives run and what its expert all-to-alls cost (``econ.training_step``).

A cluster is ``gpus`` accelerators of a catalogue system: scale-up domains of ``system.chips`` joined by
``system.scale_out`` (one NIC per GPU, as in DGX/HGX and NVL72). Ranks are ordered tp, cp, dp (ep carved from
dp), pp; a process group of stride s and size g stays in one domain when s·g <= chips, else it reaches the
other domains through each GPU's scale-out link.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..errors import InfeasibleError
from ..spec.hardware import Link, System
from ..spec.model import Model
from ..step.collectives import all_to_all_s, two_tier_all_reduce_s, two_tier_all_to_all_s
from .training_memory import ACT_BYTES, FP8_BYTES

if TYPE_CHECKING:
    from .training_step import TrainPlan


def group_link(system: System, *, stride: int, size: int, what: str) -> tuple[Link | None, str]:
    """The tier a process group of ``size`` ranks ``stride`` apart runs on (scale-up when its ranks sit in
    one domain, else the per-GPU scale-out link that bottlenecks its ring)."""
    if size <= 1:
        return None, "none"
    if domain_split(system, np.arange(size) * stride)[1] == 1:
        return system.scale_up, "scale-up"
    if system.scale_out is None:
        raise InfeasibleError(f"{what} group of {size} spans several {system.name} domains but the system has no "
                              "scale-out link; pick a system with one (llmecon catalog systems) or shrink the group")
    return system.scale_out, "scale-out"


def domain_split(system: System, ranks) -> tuple[int, int]:
    """(m, k) of a process group whose members sit at the global ``ranks`` (placed in order, ``system.chips``
    per scale-up domain): k domains touched and m the fewest members in any of them. A hierarchical
    collective is as slow as its thinnest domain, whose NIC carries the largest shard (1/m of the message)."""
    counts = np.bincount(np.asarray(ranks, dtype=np.int64) // system.chips)
    counts = counts[counts > 0]
    return int(counts.min()), int(counts.size)


def members_per_domain(system: System, *, stride: int, size: int) -> int:
    """The fewest members of a group of ``size`` ranks ``stride`` apart in any scale-up domain it touches
    (all of them when it fits in one): ``domain_split`` of ranks 0, stride, 2·stride, ..."""
    return domain_split(system, np.arange(size) * stride)[0]


def hierarchical_all_reduce_s(system: System, ranks, *, message_bytes: float, scale_up: Link | None,
                              scale_out: Link) -> float:
    """A data-parallel all-reduce over a group spanning domains: ``two_tier_all_reduce_s`` (NVLink inside, a
    1/m shard per NIC across) with m the group's thinnest domain (``domain_split``); m = 1 is a ring of the
    whole message across the k domains; k = 1 the ring inside the domain."""
    m, k = domain_split(system, ranks)
    return float(two_tier_all_reduce_s(message_bytes=message_bytes, participants=m * k, domain_chips=m,
                                       scale_up=scale_up, scale_out=scale_out, algorithm="ring"))


def expert_exchange_s(model: Model, system: System, plan: TrainPlan, *, tokens: float, link: Link, tier: str,
                      dispatch: bool) -> float:
    """Seconds of one MoE layer's dispatch (``dispatch``) or combine all-to-all for ``tokens`` tokens per
    GPU. Each token's k routed copies of d_model values go to the experts' ranks (``all_to_all_s``):
    bf16, or FP8 + 1×128-tile scales for the dispatch with ``fp8_dispatch`` (DeepSeek-V3 §3.3.3: the
    dispatch and the backward's gradient dispatch in FP8, both combines in BF16). With
    ``ep_node_limit`` M and a group across N scale-up domains (DeepSeek-V3 §2.1.2 node-limited routing,
    §3.2.2: a token crosses InfiniBand once per target node, then NVLink forwards it to the experts
    there): a token reaches D = min(M, N·(1 − (1 − 1/N)^k)) nodes (at most M, and at most the expected
    number of distinct nodes its k experts span under uniform routing; min of the mean, not the mean of
    the min, an upper bound), and each GPU sends D·(N − 1)/N copies per token over its scale-out link
    (its own node is one of the D with chance D/N), at the link's floor plus bytes / bandwidth; the
    NVLink forwarding is omitted (DeepSeek-V3 sizes it to stay under the IB time). So a node limit
    never costs more than k copies. Without a limit, a group over several domains sends the share bound
    for its own domain on NVLink (``two_tier_all_to_all_s``)."""
    width = FP8_BYTES if dispatch and plan.fp8_dispatch else ACT_BYTES
    k, h = model.moe.top_k, float(model.d_model)
    if plan.ep_node_limit and tier == "scale-out":
        nodes = plan.ep * plan.tp * plan.cp / system.chips
        distinct = nodes * (1.0 - (1.0 - 1.0 / nodes) ** k)
        copies = min(float(plan.ep_node_limit), distinct) * (nodes - 1.0) / nodes
        return float(link.latency_s + tokens * copies * h * width / link.bandwidth_bytes_per_s)
    m = members_per_domain(system, stride=plan.tp * plan.cp, size=plan.ep)
    if tier == "scale-out" and m > 1 and plan.ep % m == 0:  # (m − 1)/ep of it on NVLink, the rest on the NIC
        return float(two_tier_all_to_all_s(message_bytes=width * tokens * k * h, participants=plan.ep,
                                           domain_chips=m, scale_up=system.scale_up, scale_out=link))
    return float(all_to_all_s(message_bytes=width * tokens * k * h, participants=plan.ep, link=link))
