"""Costs of collectives on one network tier and across two: a latency floor per operation, a
latency per algorithm step, and a bandwidth term (Hockney 1994, "The communication challenge for
MPP: Intel Paragon and Meiko CS-2", Parallel Computing 20(3)).

Every algorithm here costs ``t = alpha + n_steps * step + f * S / BW`` where S is ``message_bytes``
(per participant), ``BW = link.bandwidth_bytes_per_s`` (per chip per direction), ``alpha =
link.latency_s`` the tier's per-operation latency floor (charged once per collective, whatever
its step count), ``step = link.step_latency_s`` a latency per algorithm step (per ring hop), and
(n_steps, f) are the algorithm's step count and bytes on the busiest chip's link per byte of
message, ``alpha_beta_counts(kind, p)``.

Ideal mode (catalogue links: step = 0) is ``alpha + f*S/BW``, a lower bound: the busiest port must
move f*S bytes, the last of which leaves no earlier than f*S/BW after the first and arrives alpha
later, and the catalogue's alpha is below every measured operation on its tier (the fastest
measured, rounded down: docs/assumptions.md, "Collectives"; tests/step/test_collectives_lower_bound.py
checks every row). The per-step latency is software (launch, synchronisation, protocol handshakes
per hop) that a good implementation pipelines or fuses away, so it belongs to calibrated mode
only: an efficiency profile sets ``step_latency_s`` (``LinkEfficiency.apply``) and adds a per-call
overhead (``step.kernels.collective_s``), both fitted to measured NCCL calls. (Charging alpha per
ring step, as llmecon did before, priced an 8-GPU 16 MiB all-reduce on HGX H100 at 172 us against
122 us measured by NCCL, and a 2-GPU one-shot all-reduce at 7.6 us against 2.6 us measured.)

  kind            steps (n_steps)    bytes per link / S   source
  ring            2(p-1)             2(p-1)/p             Patarasuk & Yuan 2009 (JPDC 69(2)); Thakur,
                                                          Rabenseifner & Gropp 2005 (IJHPCA 19(1))
  tree            2*ceil(log2 p)     2                    Sanders, Speck & Traff 2009 (Parallel
                                                          Computing 35(12)); NCCL 2.4 blog (Jeaugey 2019)
  one_shot        1                  p-1                  TensorRT-LLM / vLLM custom all-reduce
  in_switch       2                  1                    NVLink SHARP (NVLS; H100 whitepaper 2022,
                                                          NCCL 2.17+); InfiniBand SHARP (Graham et al. 2016)
  reduce_scatter  p-1                (p-1)/p              ring; S = the full (unscattered) size
  all_gather      p-1                (p-1)/p              ring; S = the full (gathered) size
  all_to_all      1                  (p-1)/p              all pairs at once through a switch
  p2p             1                  1                    one send

With one floor for all, ring is never slower than tree or one-shot in ideal mode (its bytes per
link are the fewest without in-switch reduction); they win only where per-step latencies count
(calibrated mode). ``participants`` <= 1 costs nothing. Omitted throughout: congestion and
oversubscription, the topology-aware trees NCCL builds (chains inside a node, trees across
nodes), NCCL's protocol switching by size (LL / LL128 / Simple change both the latency and the
achieved bandwidth), SM contention with concurrent compute and the reduction arithmetic itself.

Torus links (``Link.topology == "torus"``: TPU ICI, NeuronLink) take their (n_steps, f) from
``step.torus`` instead: dimension-ordered rings ("ring", "reduce_scatter", "all_gather"), the
multi-axis ingress bound ("multi_axis", all-reduce only), bisection-bound all-to-all, one-link
sends; the switch algorithms tree, one-shot and in-switch are refused there.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np

from ..errors import SpecError, as_floats, did_you_mean, require_whole
from ..spec.hardware import Link
from . import torus

_COUNTS: dict[str, Callable[[int], tuple[float, float]]] = {
    "ring": lambda p: (2.0 * (p - 1), 2.0 * (p - 1) / p),
    "tree": lambda p: (2.0 * (p - 1).bit_length(), 2.0),      # (p-1).bit_length() = ceil(log2 p)
    "one_shot": lambda p: (1.0, p - 1),
    "in_switch": lambda p: (2.0, 1.0),
    "reduce_scatter": lambda p: (float(p - 1), (p - 1) / p),
    "all_gather": lambda p: (float(p - 1), (p - 1) / p),
    "all_to_all": lambda p: (1.0, (p - 1) / p),
    "p2p": lambda p: (1.0, 1.0),
}
COLLECTIVE_KINDS = tuple(_COUNTS)


def alpha_beta_counts(kind: str, participants: int, link: Link | None = None) -> tuple[float, float]:
    """(n_steps, f) of ``t = alpha + n_steps * step + f * S / BW`` for collective ``kind`` over
    ``participants`` chips (table in the module docstring); (0, 0) for one participant (which
    costs nothing, not even alpha), except ``p2p``, which is one send whatever ``participants`` is.
    On a torus ``link`` the counts are ``step.torus.counts`` (f still per byte at the chip's total BW)."""
    if link is not None and link.topology == "torus":
        return torus.counts(kind, require_whole("participants", participants), link)
    if kind == "multi_axis":
        raise SpecError("algorithm: 'multi_axis' is a torus all-reduce; this link is a switch", field="algorithm",
                        value=kind, fix="use 'ring', 'tree', 'one_shot', 'in_switch', 'auto' or 'best'")
    if kind not in _COUNTS:
        raise SpecError(f"kind: unknown collective '{kind}'{did_you_mean(kind, _COUNTS)}; "
                        f"choose one of {', '.join(_COUNTS)}")
    p = require_whole("participants", participants)
    if p == 1 and kind != "p2p":
        return 0.0, 0.0
    return _COUNTS[kind](p)


def _link_cost(link: Link, n_steps: float, per_byte: float, s):
    """alpha + n_steps·step + per_byte·S/BW on ``link`` (one operation)."""
    return link.latency_s + n_steps * link.step_latency_s + per_byte * s / link.bandwidth_bytes_per_s


def _cost(kind: str, message_bytes, participants: int, link: Link | None, what: str):
    s = as_floats(message_bytes)
    if link is None and alpha_beta_counts(kind, participants) == (0.0, 0.0):
        return np.zeros_like(s)
    if link is None:
        raise SpecError(f"{what}: no link to run a {kind} over {participants} chips on; give the system "
                        f"a scale-up (or scale-out) link")
    n_steps, per_byte = alpha_beta_counts(kind, participants, link)
    if n_steps == 0.0 and per_byte == 0.0:
        return np.zeros_like(s)
    return _link_cost(link, n_steps, per_byte, s)


def ring_all_reduce_s(*, message_bytes, participants: int, link: Link):
    """Ring all-reduce of ``message_bytes`` on each of ``participants`` chips: reduce-scatter +
    all-gather, 2(p-1) steps of S/p each -> alpha + 2(p-1)·step + 2(p-1)/p·S/BW. Bandwidth-optimal
    without in-network reduction."""
    return _cost("ring", message_bytes, participants, link, "ring all-reduce")


def tree_all_reduce_s(*, message_bytes, participants: int, link: Link):
    """NCCL's double binary tree (Sanders, Speck & Träff 2009; NCCL 2.4): two trees each reduce
    then broadcast half of S, every chip is interior in one tree and a leaf in the other, so it
    sends (and receives) S/2·(1 + 2 + 1) = 2S; pipelined, the depth costs 2·ceil(log2 p) steps
    -> alpha + 2·ceil(log2 p)·step + 2·S/BW. Beats the ring's 2(p-1) steps for small S at large p
    when steps cost something (calibrated mode); never in ideal mode (step = 0)."""
    return _cost("tree", message_bytes, participants, link, "tree all-reduce")


def one_shot_all_reduce_s(*, message_bytes, participants: int, link: Link):
    """One-shot all-reduce through a switch: every chip sends its whole message to the p-1 others
    at once and reduces locally, one step -> alpha + step + (p-1)·S/BW. Wins for small messages
    (the decode all-reduces) when steps cost something; TensorRT-LLM and vLLM ship such kernels
    for NVSwitch domains."""
    return _cost("one_shot", message_bytes, participants, link, "one-shot all-reduce")


def in_switch_all_reduce_s(*, message_bytes, participants: int, link: Link):
    """Reduction in the switch (NVLink SHARP "NVLS" on NVSwitch gen3+, InfiniBand SHARP): each chip
    sends S once (the switch adds) and receives the sum once (multicast), the two directions
    pipelined, in two steps -> alpha + 2·step + S/BW. Every chip must receive the S-byte result,
    so S/BW is the least any all-reduce can move. Only on a link with ``in_switch_reduction``;
    SpecError otherwise."""
    if link is not None and not link.in_switch_reduction:
        raise SpecError(f"algorithm: link '{link.name}' has in_switch_reduction = False, so 'in_switch' "
                        "(NVLink SHARP / InfiniBand SHARP) is not available on it; use 'ring', 'tree', "
                        "'one_shot', 'auto' or 'best', or a link with in_switch_reduction = True")
    return _cost("in_switch", message_bytes, participants, link, "in-switch all-reduce")


def multi_axis_all_reduce_s(*, message_bytes, participants: int, link: Link):
    """All-reduce on a torus with every axis of the group busy at once (the data split per axis
    order; "How to Scale Your Model", part 3): the ingress bound 2(p-1)/p·S over all the chip's
    links of the group (``step.torus``). Only on a torus link; SpecError on a switch."""
    return _cost("multi_axis", message_bytes, participants, link, "multi-axis all-reduce")


ALL_REDUCE_ALGORITHMS: dict[str, Callable] = {
    "ring": ring_all_reduce_s, "tree": tree_all_reduce_s, "one_shot": one_shot_all_reduce_s,
    "in_switch": in_switch_all_reduce_s, "multi_axis": multi_axis_all_reduce_s,
}
ALL_REDUCE_CHOICES = ("auto", "best", *ALL_REDUCE_ALGORITHMS)


def supported_all_reduce_algorithms(link: Link | None) -> tuple[str, ...]:
    """The all-reduce algorithms ``link`` can run: on a torus the dimension-ordered ring and the
    multi-axis schedule; on a switch all the others, ``in_switch`` only with in-switch reduction."""
    if link is not None and link.topology == "torus":
        return ("ring", "multi_axis")
    in_switch = link is not None and link.in_switch_reduction
    return tuple(a for a in ALL_REDUCE_ALGORITHMS if a != "multi_axis" and (a != "in_switch" or in_switch))


def all_reduce_s(*, message_bytes, participants: int, link: Link, algorithm: str = "auto"):
    """All-reduce of ``message_bytes`` per chip with ``algorithm``:

    - ``"auto"`` (default): the faster of ring and one-shot per message size (what calibrated mode
      prices: the algorithms the shipped profiles were fitted on); on a torus the dimension-ordered
      ring;
    - ``"best"``: the fastest of every algorithm the link supports (ring, tree, one-shot, and
      in-switch where ``link.in_switch_reduction``), elementwise over message sizes, i.e. what an
      ideal NCCL tuner would pick, and what ideal mode prices (``EfficiencyProfile.all_reduce_algorithm``);
    - ``"ring"``, ``"tree"``, ``"one_shot"``, ``"in_switch"``, ``"multi_axis"`` (torus only): that
      algorithm alone.
    """
    if algorithm in ALL_REDUCE_ALGORITHMS:
        return ALL_REDUCE_ALGORITHMS[algorithm](message_bytes=message_bytes, participants=participants, link=link)
    if algorithm not in ("auto", "best"):
        raise SpecError(f"algorithm: unknown all-reduce algorithm {algorithm!r}"
                        f"{did_you_mean(str(algorithm), ALL_REDUCE_CHOICES)}; choose one of "
                        f"{', '.join(ALL_REDUCE_CHOICES)}")
    counts = _choice_counts(algorithm, participants, link)
    if counts is not None:  # the common case: the same (n_steps, per_byte) per algorithm as ``_cost`` takes
        s = as_floats(message_bytes)
        return functools.reduce(np.minimum, (_link_cost(link, n_steps, per_byte, s) for n_steps, per_byte in counts))
    if algorithm == "auto":
        names = ("ring",) if link is not None and link.topology == "torus" else ("ring", "one_shot")
    else:
        names = supported_all_reduce_algorithms(link)
    return functools.reduce(np.minimum, (ALL_REDUCE_ALGORITHMS[a](message_bytes=message_bytes,
                                                                  participants=participants, link=link)
                                         for a in names))


_CHOICES: dict = {}  # (algorithm, participants, id(link)) -> (link, ((n_steps, per_byte), ...))


def _choice_counts(algorithm: str, participants, link: Link | None):
    """(n_steps, per_byte) of each algorithm ``all_reduce_s`` takes the minimum of, in its order, for a whole
    ``participants`` > 1 on a switch ``link`` (None otherwise: the general path, with its checks and errors).
    Remembered per (algorithm, participants, link identity): links are frozen, and the entry holds the link."""
    if link is None or type(participants) is not int or participants < 2 or link.topology == "torus":
        return None
    key = (algorithm, participants, id(link))
    hit = _CHOICES.get(key)
    if hit is not None and hit[0] is link:
        return hit[1]
    names = ("ring", "one_shot") if algorithm == "auto" else supported_all_reduce_algorithms(link)
    counts = tuple(_COUNTS[a](participants) for a in names)
    if len(_CHOICES) >= 256:
        _CHOICES.clear()
    _CHOICES[key] = (link, counts)
    return counts


def reduce_scatter_s(*, message_bytes, participants: int, link: Link):
    """Ring reduce-scatter of a ``message_bytes`` buffer (the FULL size on each chip; each ends with
    the reduced 1/p of it): p-1 steps of S/p -> alpha + (p-1)·step + (p-1)/p·S/BW (Thakur et al.
    2005). Each chip must send out the (p-1)/p of S it does not keep, in-switch reduction or not."""
    return _cost("reduce_scatter", message_bytes, participants, link, "reduce-scatter")


def all_gather_s(*, message_bytes, participants: int, link: Link):
    """Ring all-gather to a ``message_bytes`` result on each chip (the FULL gathered size; each
    contributes S/p): p-1 steps of S/p -> alpha + (p-1)·step + (p-1)/p·S/BW (Thakur et al. 2005).
    Each chip must receive the (p-1)/p of S it lacks, multicast or not."""
    return _cost("all_gather", message_bytes, participants, link, "all-gather")


def all_to_all_s(*, message_bytes, participants: int, link: Link):
    """All-to-all where each chip holds ``message_bytes`` spread evenly over all participants:
    (p-1)/p of it leaves the chip; through a switch all pairs run concurrently, one step ->
    alpha + step + (p-1)/p·S/BW."""
    return _cost("all_to_all", message_bytes, participants, link, "all-to-all")


def p2p_s(*, message_bytes, link: Link):
    """Point-to-point send of ``message_bytes``: alpha + step + S/BW."""
    return _cost("p2p", message_bytes, 2, link, "point-to-point send")


def _domains(participants, domain_chips) -> tuple[int, int]:
    """(p, m): participants and how many of them share one domain; p must fit in one domain or
    fill whole domains (SpecError naming ``participants`` otherwise)."""
    p, d = require_whole("participants", participants), require_whole("domain_chips", domain_chips)
    if p > d and p % d:
        raise SpecError(f"participants: {p} chips straddle scale-up domains of domain_chips={d}; "
                        f"use at most {d} or a multiple of {d}")
    return p, min(p, d)


def two_tier_all_to_all_s(*, message_bytes, participants: int, domain_chips: int, scale_up: Link | None,
                          scale_out: Link | None):
    """All-to-all over ``participants`` chips packed into domains of ``domain_chips`` (SPEC D15: EP
    across racks runs at scale-out bandwidth). With m = min(p, domain_chips) chips per domain each
    chip sends (m-1)/p·S inside its domain on ``scale_up`` and (p-m)/p·S out of it on ``scale_out``,
    concurrently (different ports), each one step -> max(alpha_up + step_up + (m-1)/p·S/BW_up,
    alpha_out + step_out + (p-m)/p·S/BW_out), each term only where it has traffic. Equals
    ``all_to_all_s`` on ``scale_up`` when p <= domain.
    Omitted: NIC sharing between chips, rail-optimised vs. spine routing, and the two-hop
    (NVLink-forwarded) dispatch of DeepEP-style kernels."""
    p, m = _domains(participants, domain_chips)
    s = np.asarray(message_bytes, dtype=float)
    inside = np.zeros_like(s)
    if m > 1:
        if scale_up is None:
            raise SpecError(f"scale_up: no scale-up link for an all-to-all among {m} chips of one domain")
        n_steps, per_byte = alpha_beta_counts("all_to_all", m, scale_up)   # S·m/p of it stays in the domain
        inside = _link_cost(scale_up, n_steps, per_byte * m / p, s)
    if p == m:
        return inside
    if scale_out is None:
        raise SpecError(f"scale_out: no scale-out link, but {p} participants span {p // m} domains of "
                        f"{m}; give the system a scale_out link or keep the group inside one domain")
    return np.maximum(inside, _link_cost(scale_out, 1.0, (p - m) / p, s))


def two_tier_all_reduce_s(*, message_bytes, participants: int, domain_chips: int, scale_up: Link | None,
                          scale_out: Link | None, algorithm: str = "auto"):
    """Hierarchical all-reduce (the standard NCCL/Horovod two-level scheme; e.g. Jia et al. 2018,
    arXiv:1807.11205): ring reduce-scatter inside each domain of m chips, an all-reduce of the
    S/m shard among the p/m domains on ``scale_out`` (with ``algorithm``, see ``all_reduce_s``),
    then ring all-gather inside:
    alpha_up + 2·[(m-1)·step_up + (m-1)/m·S/BW_up] + all_reduce(S/m, p/m) (the last with alpha_out).
    One floor per tier crossed (alpha_up, alpha_out; none on scale-up when m = 1): a chip's
    contribution reaches a chip of another domain and rail only through both tiers, one after the
    other, while the second inside phase can start as shards arrive. Every chip drives its own
    scale-out port (one NIC per GPU, rail-optimised). Equals ``all_reduce_s(algorithm=...)`` on
    ``scale_up`` when p <= domain_chips. Omitted: pipelining of the three phases' bandwidth terms
    (NCCL overlaps them, so the sum over-states the scheme by at most the inner phases), in-switch
    reduction inside the domain, and a flat ring over all p (worse: its domain-crossing hops carry
    2(p-1)/p·S each, against the S/m shard here)."""
    p, m = _domains(participants, domain_chips)
    if p == m:
        if p > 1 and scale_up is None:
            raise SpecError(f"scale_up: no scale-up link for an all-reduce among {p} chips of one domain")
        return all_reduce_s(message_bytes=message_bytes, participants=p, link=scale_up, algorithm=algorithm)
    if scale_out is None:
        raise SpecError(f"scale_out: no scale-out link, but {p} participants span {p // m} domains of "
                        f"{m}; give the system a scale_out link or keep the group inside one domain")
    s = np.asarray(message_bytes, dtype=float)
    across = all_reduce_s(message_bytes=s / m, participants=p // m, link=scale_out, algorithm=algorithm)
    if m == 1:
        return across
    if scale_up is None:
        raise SpecError(f"scale_up: no scale-up link for the reduce-scatter among {m} chips of one domain")
    n_steps, per_byte = alpha_beta_counts("reduce_scatter", m, scale_up)
    inside = n_steps * scale_up.step_latency_s + per_byte * s / scale_up.bandwidth_bytes_per_s
    return scale_up.latency_s + 2.0 * inside + across
