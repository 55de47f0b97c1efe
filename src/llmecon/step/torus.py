"""Collectives on a torus (TPU ICI, Trainium NeuronLink): dimension-ordered rings, one axis at a time.

A torus link (``Link.topology == "torus"``, ``torus_dims`` = chips per axis) gives each chip 2
links per axis, one to each neighbour, wrapping around; ``Link.torus_link_bytes_per_s`` = W is one
link's per-direction bandwidth (the chip's per-direction total / (2·axes)). Unlike a switch, a
group that spans one axis uses only that axis's 2 links of the chip's 2·axes, and traffic between
far chips crosses the torus's bisection.

This module gives ``counts(kind, participants, link) -> (n_steps, f)``, the same pair as
``collectives.alpha_beta_counts``: ``t = alpha + n_steps·step + f·S/BW`` with ``BW =
link.bandwidth_bytes_per_s`` (the chip's total), so ``collectives`` prices a torus link with its
own formulas and nothing else changes. Derivations, with S the message per chip (the FULL size for
reduce-scatter / all-gather / all-reduce, as in ``collectives``):

Placement. A group of p chips occupies a sub-block g_1 x ... x g_n of the torus (g_i divides the
axis size k_i, product p), the one with the cheapest dimension-ordered all-reduce (ties: the
first found, axes in catalogue order). An axis the group fills (g_i = k_i) is a ring (wraps
around: c_i = 2 links into each chip); a part of an axis is a line (c_i = 1: its end chips have one
link on it). A p with no such sub-block (3 chips of a 4x4x4) is laid out as a line of p chips
(a path through a sub-block exists), which is achievable, not optimal.

- ``ring`` (all-reduce), ``reduce_scatter``, ``all_gather``: dimension-ordered rings (the XLA /
  "How to Scale Your Model" scheme: reduce-scatter along axis 1, then axis 2 on the 1/g_1 shard,
  ..., then all-gather back in reverse). Along one axis of g chips a bidirectional ring moves half
  of the data each way, so each chip receives (g-1)/g·V over c links: (g-1)/g·V/(c·W); a line's
  end chip receives it over its one link. Reduce-scatter = sum_i (g_i-1)/g_i·S_i/(c_i·W) with
  S_1 = S, S_{i+1} = S_i/g_i, over sum_i (g_i-1) steps; all-gather the same in reverse;
  all-reduce twice both. Austin et al., "How to Scale Your Model" (2025),
  https://jax-ml.github.io/scaling-book/ , part 3 "Sharded Matrices" (AllGather on a bidirectional
  ring: T = V/(2·W_link) per axis, V = the gathered bytes, independent of the axis length up to
  (g-1)/g; AllReduce = ReduceScatter + AllGather = 2x).
- ``multi_axis`` (all-reduce): the same book's multi-axis AllGather: the data split into one part
  per axis order, every axis busy at once, so a chip receives through all sum_i c_i of its links:
  2·(p-1)/p·S/(W·sum_i c_i). This is the ingress bound (no schedule can receive faster), reached
  exactly on a full torus of equal axes (there it equals the switch ring at the chip's total
  bandwidth); elsewhere it is a lower bound. Same step count as ``ring``.
- ``all_to_all``: each chip sends S/p to every other. Two bounds, the larger one: ingress
  (p-1)/p·S/(W·sum_i c_i), and the bisection of each axis: cutting axis i into halves of a and b
  planes, p·a·b·S/g_i² bytes cross each way through c_i·p/g_i links, a·b·S/(g_i·c_i·W). On a ring
  of g = k this is g·S/(8W) — the book's "AllToAll on a bidirectional ring is a quarter of an
  AllGather" (V/(4·W_bidir) with V = p·S). Steps: the diameter, sum_i floor(g_i/2) on rings and
  g_i - 1 on lines (hops a byte travels; forwarding is store-and-forward per hop).
- ``p2p``: to a neighbour over one link, S/W, one step (pipeline hops between adjacent groups).
- ``tree``, ``one_shot``, ``in_switch``: switch algorithms; not modelled on a torus (SpecError).

Omitted: contention between concurrent groups sharing links (a TP group along axis 1 and a DP group
along axis 2 use different links, so the common layouts do not contend); the optical circuit
switches between cubes (slices are taken as one torus); routing other than dimension order; the
twisted tori some TPU slices use; link-level latency per hop beyond the per-step latency of
calibrated mode; a line's bidirectional split being uneven for odd lengths.
"""

from __future__ import annotations

import functools
import itertools
import math

from ..errors import SpecError, require_whole
from ..spec.hardware import Link

TORUS_KINDS = ("ring", "multi_axis", "reduce_scatter", "all_gather", "all_to_all", "p2p")


def _divisors(k: int) -> list[int]:
    return [d for d in range(1, k + 1) if k % d == 0]


def _dimension_ordered(axes) -> float:
    """sum_i (g_i-1)/g_i · (S_i/S) / c_i: one reduce-scatter's seconds x W per byte of S."""
    total, share = 0.0, 1.0
    for g, c in axes:
        total += (g - 1) / g * share / c
        share /= g
    return total


@functools.cache
def torus_group(participants: int, dims: tuple[int, ...]) -> tuple[tuple[int, int], ...]:
    """The axes a group of ``participants`` chips occupies on a torus of ``dims``: ((g, c), ...)
    with g chips on the axis and c = 2 links per chip on it if the group fills the axis (a ring),
    1 if not (a line); axes with g = 1 left out (module docstring, Placement)."""
    p = require_whole("participants", participants)
    if p > math.prod(dims):
        raise SpecError(f"participants: {p} chips do not fit in a {'x'.join(map(str, dims))} torus",
                        field="participants", fix=f"use at most {math.prod(dims)} chips")
    if p == 1:
        return ()
    best = None
    for split in itertools.product(*(_divisors(k) for k in dims)):
        if math.prod(split) != p:
            continue
        axes = tuple((g, 2 if g == k else 1) for g, k in zip(split, dims) if g > 1)
        cost = _dimension_ordered(axes)
        if best is None or cost < best[0] - 1e-15:
            best = (cost, axes)
    if best is None:  # no sub-block: a line of p chips through one
        return ((p, 1),)
    return best[1]


def counts(kind: str, participants: int, link: Link) -> tuple[float, float]:
    """(n_steps, f) of ``t = alpha + n_steps·step + f·S/BW`` for ``kind`` on torus ``link``, with
    BW the chip's per-direction total (``link.bandwidth_bytes_per_s``); (0, 0) for one chip except
    ``p2p``. Formulas in the module docstring."""
    if link.topology != "torus":
        raise SpecError(f"link {link.name} is a {link.topology}, not a torus")
    if kind not in TORUS_KINDS:
        raise SpecError(f"kind: '{kind}' is a switch algorithm, not modelled on the torus of link '{link.name}'",
                        field="algorithm", value=kind,
                        fix=f"use one of {', '.join(TORUS_KINDS)} (or 'best' / 'auto') on a torus")
    per_link = 1.0 / (2 * len(link.torus_dims))      # W / BW
    if kind == "p2p":
        return 1.0, 1.0 / per_link
    axes = torus_group(participants, link.torus_dims)
    if not axes:
        return 0.0, 0.0
    p = math.prod(g for g, _ in axes)
    ring_steps = float(sum(g - 1 for g, _ in axes))
    links_in = sum(c for _, c in axes)
    if kind in ("reduce_scatter", "all_gather"):
        return ring_steps, _dimension_ordered(axes) / per_link
    if kind == "ring":
        return 2.0 * ring_steps, 2.0 * _dimension_ordered(axes) / per_link
    if kind == "multi_axis":
        return 2.0 * ring_steps, 2.0 * (p - 1) / p / links_in / per_link
    # all_to_all: the larger of the ingress and every axis's bisection bound
    ingress = (p - 1) / p / links_in
    bisection = max((g // 2) * (g - g // 2) / (g * c) for g, c in axes)
    diameter = float(sum(g // 2 if c == 2 else g - 1 for g, c in axes))
    return diameter, max(ingress, bisection) / per_link
