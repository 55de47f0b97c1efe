"""Where a training job's collectives run and what its expert all-to-alls cost (``econ.training_step``).

A cluster is ``gpus`` accelerators of a catalogue system: scale-up domains of ``system.chips`` joined by
``system.scale_out`` (one NIC per GPU, as in DGX/HGX and NVL72). Ranks are ordered tp, cp, dp (ep carved from
dp), pp; a process group of stride s and size g stays in one domain when s·g <= chips, else it reaches the
other domains through each GPU's scale-out link.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..errors import InfeasibleError
from ..spec.hardware import Link, System
from ..spec.model import Model
from ..step.collectives import (all_reduce_s, all_to_all_s, p2p_s, ring_all_reduce_s, two_tier_all_reduce_s,
                                two_tier_all_to_all_s)
from .training_kernels import KernelEfficiency
from .training_memory import ACT_BYTES, FP8_BYTES, WEIGHT_BYTES, TrainMemory

if TYPE_CHECKING:
    from .training_step import TrainPlan


#: the tier names before 2026-11-28 (``train --json`` ``collective_tiers`` said "scale-up"/"scale-out"; ``plan``
#: and ``spec.plan.Placement`` say "scale_up"/"scale_out", the one spelling now): still accepted as input.
TIER_ALIASES = {"scale-up": "scale_up", "scale-out": "scale_out"}


def group_link(system: System, *, stride: int, size: int, what: str) -> tuple[Link | None, str]:
    """The tier a process group of ``size`` ranks ``stride`` apart runs on (scale-up when its ranks sit in
    one domain, else the per-GPU scale-out link that bottlenecks its ring)."""
    if size <= 1:
        return None, "none"
    if domain_split(system, np.arange(size) * stride)[1] == 1:
        return system.scale_up, "scale_up"
    if system.scale_out is None:
        raise InfeasibleError(f"{what} group of {size} spans several {system.name} domains but the system has no "
                              "scale-out link; pick a system with one (llmecon catalog systems) or shrink the group")
    return system.scale_out, "scale_out"


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
    tier = TIER_ALIASES.get(tier, tier)
    width = FP8_BYTES if dispatch and plan.fp8_dispatch else ACT_BYTES
    k, h = model.moe.top_k, float(model.d_model)
    if plan.ep_node_limit and tier == "scale_out":
        nodes = plan.ep * plan.tp * plan.cp / system.chips
        distinct = nodes * (1.0 - (1.0 - 1.0 / nodes) ** k)
        copies = min(float(plan.ep_node_limit), distinct) * (nodes - 1.0) / nodes
        return float(link.latency_s + tokens * copies * h * width / link.bandwidth_bytes_per_s)
    m = members_per_domain(system, stride=plan.tp * plan.cp, size=plan.ep)
    if tier == "scale_out" and m > 1 and plan.ep % m == 0:  # (m − 1)/ep of it on NVLink, the rest on the NIC
        return float(two_tier_all_to_all_s(message_bytes=width * tokens * k * h, participants=plan.ep,
                                           domain_chips=m, scale_up=system.scale_up, scale_out=link))
    return float(all_to_all_s(message_bytes=width * tokens * k * h, participants=plan.ep, link=link))


# ---- the step's collectives, per micro-batch (``training_step.train_step``'s communication phases) ----------


def measured_link(link: Link | None, tier: str, ke: KernelEfficiency) -> Link | None:
    """``link`` at the share NCCL reaches on it (calibrated mode; 1 in ideal mode)."""
    if link is None:
        return None
    share = ke.scale_up_share if tier == "scale_up" else ke.scale_out_share
    return dataclasses.replace(link, bandwidth_bytes_per_s=link.bandwidth_bytes_per_s * share)


@dataclass(frozen=True, kw_only=True)
class ModelParallelComm:
    """Seconds per micro-batch of the tensor-, context-, expert- and pipeline-parallel collectives (what the
    rank waits for) and the tier each group runs on."""

    tp_mb: float
    cp_mb: float
    ep_mb: float
    pp_mb: float
    tiers: dict


def model_parallel_comm(model: Model, system: System, plan: TrainPlan, ke: KernelEfficiency, *, ring: str,
                        seq_len: int, stage_layers: float, attn_core_mb: float,
                        compute_mb: float) -> ModelParallelComm:
    """The collectives inside one model replica for one micro-batch on the slowest rank (``stage_layers``
    layers); ``ring`` the all-reduce algorithm ("auto" ideal, "ring" calibrated: sequence parallelism's
    reduce-scatter + all-gather)."""
    s, b, h = float(seq_len), float(plan.microbatch), float(model.d_model)
    tiers = {}
    # Tensor parallel: 2 all-reduces (or reduce-scatter + all-gather) per layer forward, 2 backward,
    # 2 more in a recomputed forward (Shoeybi et al. 2019; Korthikanti et al. 2022).
    tp_link, tiers["tp"] = group_link(system, stride=1, size=plan.tp, what="tensor-parallel")
    tp_link = measured_link(tp_link, tiers["tp"], ke)
    tp_mb = 0.0
    comm_passes = 4 + (2 if plan.recompute in ("full", "reversible") else 0)
    if tp_link is not None:
        msg = ACT_BYTES * (s / plan.cp) * b * h
        ar = float(all_reduce_s(message_bytes=msg, participants=plan.tp, link=tp_link, algorithm=ring))
        tp_mb = stage_layers * comm_passes * ar
    # Context parallel: ring attention passes each rank's K and V chunk around cp−1 times forward,
    # twice that backward; overlapped with the attention core, only the excess is exposed.
    cp_link, tiers["cp"] = group_link(system, stride=plan.tp, size=plan.cp, what="context-parallel")
    cp_link = measured_link(cp_link, tiers["cp"], ke)
    cp_mb = 0.0
    if cp_link is not None:
        a = model.attention
        kv_width = model.d_model if a.kind == "mla" else a.n_kv_heads * (a.head_dim + a.v_head_dim)
        chunk = ACT_BYTES * (s / plan.cp) * b * kv_width / plan.tp
        passed = 3.0 * (plan.cp - 1) * float(p2p_s(message_bytes=chunk, link=cp_link)) * stage_layers
        cp_mb = max(0.0, passed - attn_core_mb)
    # Expert parallel: dispatch + combine all-to-all per MoE layer, forward and backward (+ recompute).
    ep_link, tiers["ep"] = group_link(system, stride=plan.tp * plan.cp, size=plan.ep, what="expert-parallel")
    if tiers["ep"] == "scale_out":  # NVLink all-to-alls keep the catalogue link (no NCCL share applies)
        ep_link = measured_link(ep_link, tiers["ep"], ke)
    ep_mb = 0.0
    if ep_link is not None:
        ep_mb = stage_layers / model.n_layers * model.n_moe_layers * comm_passes / 2.0 * sum(
            expert_exchange_s(model, system, plan, tokens=s * b / (plan.cp * plan.tp), link=ep_link,
                              tier=tiers["ep"], dispatch=d) for d in (True, False))
    # Pipeline: one activation forward and one gradient backward per micro-batch per chunk boundary,
    # scattered over tp ranks (Narayanan et al. 2021 §4.1).
    pp_link, tiers["pp"] = group_link(system, stride=plan.tp * plan.cp * plan.dp, size=plan.pp, what="pipeline")
    pp_link = measured_link(pp_link, tiers["pp"], ke)
    pp_mb = 0.0
    if pp_link is not None:
        hop = float(p2p_s(message_bytes=ACT_BYTES * (s / plan.cp) * b * h / plan.tp, link=pp_link))
        pp_mb = 2.0 * plan.chunks * hop
    if plan.schedule == "dualpipe":
        # DualPipe overlaps a chunk's all-to-alls and its pipeline sends with the paired chunk's compute
        # (DeepSeek-V3 §3.2.1: both "fully hidden"); only what exceeds that compute is exposed
        ep_mb, pp_mb = max(0.0, ep_mb - compute_mb), max(0.0, pp_mb - max(0.0, compute_mb - ep_mb))
    return ModelParallelComm(tp_mb=tp_mb, cp_mb=cp_mb, ep_mb=ep_mb, pp_mb=pp_mb, tiers=tiers)


@dataclass(frozen=True, kw_only=True)
class DataParallelComm:
    """The gradient (and ZeRO weight) synchronisation: seconds once per step (``dp_s``, ``dp_exposed`` the part
    not hidden behind the last backward), per micro-batch (``dp_mb``, ``zero3_mb``) and the group's tier."""

    dp_s: float
    dp_exposed: float
    dp_mb: float
    zero3_mb: float
    tier: str


def data_parallel_comm(system: System, plan: TrainPlan, ke: KernelEfficiency, *, memory: TrainMemory,
                       overlap: float, compute_mb: float, backward_mb: float) -> DataParallelComm:
    """Data parallel: gradients of this GPU's parameters once per step, as a ring all-reduce (ZeRO 0) or a
    reduce-scatter of the gradients + an all-gather of the bf16 weights (ZeRO >= 1; the same ring volume
    with bf16 gradients, 1.5x with fp32 ones: Megatron reduces in the gradient's dtype). A group with
    several ranks per scale-up domain reduces hierarchically (``two_tier_all_reduce_s``: each NIC carries
    a 1/m shard); ZeRO-3 also all-gathers weights forward and backward per micro-batch. Every rank syncs its
    own parameters (its layers; the embedding, head and MTP modules where they sit: ``memory``'s layout),
    concurrently; the step waits for the largest. ``backward_mb``: the backward window of a micro-batch
    (everything but the first forward; recomputed forwards run inside it)."""
    dp_link, tier = group_link(system, stride=plan.tp, size=plan.dp * plan.cp, what="data-parallel")
    dp_link = measured_link(dp_link, tier, ke)
    largest = max(memory.ranks, key=lambda r: r.dense_params + r.expert_params)
    dense_params, expert_params = largest.dense_params, largest.expert_params
    dp_s = zero3_mb = 0.0
    grad_bytes = 4.0 if plan.grad_fp32 else 2.0
    # all-reduce-equivalent bytes per parameter (a reduce-scatter or an all-gather is half a ring all-reduce):
    # ZeRO 0 all-reduces the gradients once per step; ZeRO 1 (a full gradient buffer) reduce-scatters them once
    # and all-gathers the updated bf16 weights; from ZeRO 2 the gradients are sharded, so each micro-batch's are
    # reduce-scattered as its backward makes them (DeepSpeed stage 2/3, FSDP), hidden behind that backward by
    # dp_overlap, and ZeRO 2 all-gathers the weights once per step (ZeRO 3 gathers them per micro-batch, below)
    per_step = {0: grad_bytes, 1: (grad_bytes + WEIGHT_BYTES) / 2.0, 2: WEIGHT_BYTES / 2.0}.get(plan.zero, 0.0)
    per_mb_param = grad_bytes / 2.0 if plan.zero >= 2 else 0.0
    tp, cp, ep = plan.tp, plan.cp, plan.ep
    dense_group = np.arange(plan.dp * cp) * tp  # ranks are ordered tp, cp, dp: the group of tp-rank 0
    # the expert-data-parallel group: every cp rank, and the dp ranks holding the same experts (ep of them
    # consecutive in dp)
    expert_group = (np.arange(cp)[:, None] * tp + np.arange(0, plan.dp, ep)[None, :] * tp * cp).ravel()
    has_experts = expert_group.size > 1 and expert_params > 0

    def dp_all_reduce(per_param: float, params: float, ranks) -> float:
        if per_param * params <= 0:
            return 0.0
        if tier == "scale_out":
            return hierarchical_all_reduce_s(system, ranks, message_bytes=per_param * params,
                                             scale_up=measured_link(system.scale_up, "scale_up", ke),
                                             scale_out=dp_link)
        return float(ring_all_reduce_s(message_bytes=per_param * params, participants=len(ranks), link=dp_link))

    def synced(per_param: float) -> float:  # the dense and the expert parameters, each over its group
        return dp_all_reduce(per_param, dense_params, dense_group) + (
            dp_all_reduce(per_param, expert_params, expert_group) if has_experts else 0.0)

    dp_mb = 0.0
    if dp_link is not None:
        dp_s = synced(per_step)
        dp_mb = max(0.0, synced(per_mb_param) - overlap * backward_mb)
        if plan.zero == 3:  # 2 all-gathers of the weights (forward, backward) = 1 ring all-reduce's volume
            zero3_mb = max(0.0, synced(WEIGHT_BYTES) - overlap * compute_mb)
    return DataParallelComm(dp_s=dp_s, dp_exposed=max(0.0, dp_s - overlap * backward_mb), dp_mb=dp_mb,
                            zero3_mb=zero3_mb, tier=tier)
