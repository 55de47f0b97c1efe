"""Collectives on a torus (llmecon.step.torus via llmecon.step.collectives): hand-computed cases,
the formulas of "How to Scale Your Model" (Austin et al. 2025, https://jax-ml.github.io/scaling-book/,
part 3 "Sharded Matrices": AllGather along one bidirectional ring axis T = V/(2·W_link) up to
(g-1)/g, AllReduce = 2 x AllGather, multi-axis AllGather T = V/(2·W_link·n_axes), AllToAll on a
bidirectional ring = a quarter of an AllGather), and properties against the switch model.

The toy torus: 4x4x4, 600 GB/s per chip per direction over 6 links = W = 100 GB/s per link per
direction (TPU v5p / v7 ICI as catalogued), latency floor 0 unless stated.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from catalog_text import GOOD_ACCELERATOR

from llmecon.catalog import hardware as cat
from llmecon.errors import CatalogError, SpecError
from llmecon.spec.hardware import Link
from llmecon.step import torus
from llmecon.step.collectives import (all_gather_s, all_reduce_s, all_to_all_s, p2p_s, reduce_scatter_s,
                                      supported_all_reduce_algorithms, two_tier_all_reduce_s, two_tier_all_to_all_s)

W = 100e9                      # one link, one direction
CUBE = Link(name="ici", bandwidth_bytes_per_s=6 * W, latency_s=0.0, topology="torus", torus_dims=(4, 4, 4))
SWITCH = Link(name="switch", bandwidth_bytes_per_s=6 * W, latency_s=0.0)
S = 1e9                        # one GB


def test_per_link_bandwidth():
    assert CUBE.torus_link_bytes_per_s == W
    assert CUBE.torus_chips == 64


def test_all_reduce_of_64_on_a_cube_versus_a_64_chip_switch():
    """Dimension-ordered: RS over axis 1 (S), 2 (S/4), 3 (S/16), each (g-1)/g·V/(2W) on a ring of 4:
    3/4·(1 + 1/4 + 1/16)/2 = 63/128 of S/W; all-reduce twice that = 63/64·S/W = 9.84375 ms.
    A 64-chip switch at the same 600 GB/s per chip: ring 2·63/64·S/(6W) = 3.28125 ms, 3x less.
    The multi-axis schedule (all three axes busy) reaches the switch figure on a full cube."""
    ring = all_reduce_s(message_bytes=S, participants=64, link=CUBE, algorithm="ring")
    assert ring == pytest.approx(63 / 64 * S / W, rel=1e-12) == pytest.approx(9.84375e-3, rel=1e-12)
    switch = all_reduce_s(message_bytes=S, participants=64, link=SWITCH, algorithm="ring")
    assert switch == pytest.approx(3.28125e-3, rel=1e-12)
    assert ring / switch == pytest.approx(3.0, rel=1e-12)
    multi = all_reduce_s(message_bytes=S, participants=64, link=CUBE, algorithm="multi_axis")
    assert multi == pytest.approx(switch, rel=1e-12)
    assert all_reduce_s(message_bytes=S, participants=64, link=CUBE, algorithm="best") == pytest.approx(multi)
    assert all_reduce_s(message_bytes=S, participants=64, link=CUBE, algorithm="auto") == pytest.approx(ring)


def test_scaling_book_one_axis_all_gather():
    """Book: an AllGather of V bytes along one bidirectional ring axis takes V/(2·W_link) (its
    large-g limit; exactly (g-1)/g of it). A TP group of 4 fills one axis of the cube: 3.75 ms
    for 1 GB, against (4-1)/4·S/(6W) = 1.25 ms through a switch: the group uses 2 of 6 links."""
    t = all_gather_s(message_bytes=S, participants=4, link=CUBE)
    book = S / (2 * W)
    assert t == pytest.approx(3 / 4 * book, rel=1e-12) == pytest.approx(3.75e-3, rel=1e-12)
    assert reduce_scatter_s(message_bytes=S, participants=4, link=CUBE) == pytest.approx(t, rel=1e-12)
    assert all_reduce_s(message_bytes=S, participants=4, link=CUBE) == pytest.approx(2 * t, rel=1e-12)
    assert all_gather_s(message_bytes=S, participants=4, link=SWITCH) == pytest.approx(1.25e-3, rel=1e-12)


def test_scaling_book_multi_axis_all_gather():
    """Book: an AllGather over n axes at once takes V/(2·W_link·n): for the full cube
    1e9/(600e9) = 1.667 ms, times (p-1)/p = 63/64 -> 1.640625 ms; all-reduce = 2x."""
    t = all_reduce_s(message_bytes=S, participants=64, link=CUBE, algorithm="multi_axis")
    assert t / 2 == pytest.approx(63 / 64 * S / (2 * W * 3), rel=1e-12) == pytest.approx(1.640625e-3, rel=1e-12)


def test_scaling_book_all_to_all_is_a_quarter_of_all_gather_on_a_ring():
    """Book: on a bidirectional ring of N, AllToAll of an array of V bytes (V/N per chip) costs
    V/(4·W_bidir) = V/(8W), a quarter of the AllGather's V/(2W). Here V = 4·S per chip-row: the
    bisection (2 cuts x 1 link each way) carries (2 chips)(2 chips)(S/4) = S each way: S/(2W)."""
    t = all_to_all_s(message_bytes=S, participants=4, link=CUBE)
    v = 4 * S
    assert t == pytest.approx(v / (8 * W), rel=1e-12) == pytest.approx(5e-3, rel=1e-12)
    assert t == pytest.approx(all_gather_s(message_bytes=v, participants=4, link=CUBE) / (4 * 3 / 4), rel=1e-12)


def test_all_to_all_over_the_cube_is_bisection_bound():
    """64 chips, S per chip: each axis's cut carries 32·32·S/64 = 16 S each way over 2 planes of 16
    links: 16S/(32W) = S/(2W) = 5 ms; ingress only 63/64·S/(6W) = 1.64 ms; a switch: 1.64 ms."""
    assert all_to_all_s(message_bytes=S, participants=64, link=CUBE) == pytest.approx(5e-3, rel=1e-12)
    assert all_to_all_s(message_bytes=S, participants=64, link=SWITCH) == pytest.approx(63 / 64 * S / (6 * W))


def test_line_and_placement():
    """2 chips of a 4-ring are a line (no wraparound): one link each way, all-reduce 2·(1/2)·S/W
    = 10 ms. 8 chips: a full ring of 4 and a line of 2 (cheapest sub-block). 3 chips (no
    sub-block of a 4x4x4): a line of 3. 16: two full rings."""
    assert torus.torus_group(2, (4, 4, 4)) == ((2, 1),)
    assert all_reduce_s(message_bytes=S, participants=2, link=CUBE) == pytest.approx(10e-3, rel=1e-12)
    assert torus.torus_group(8, (4, 4, 4)) == ((4, 2), (2, 1))
    assert torus.torus_group(3, (4, 4, 4)) == ((3, 1),)
    assert torus.torus_group(16, (4, 4, 4)) == ((4, 2), (4, 2))
    assert torus.torus_group(8, (4, 8, 8)) == ((8, 2),)      # a whole 8-ring beats 4-ring x 2-line
    # 8 chips: RS = 3/4·S/(2W) + 1/2·(S/4)/W = 3.75 + 1.25 ms; all-reduce 10 ms
    assert all_reduce_s(message_bytes=S, participants=8, link=CUBE) == pytest.approx(10e-3, rel=1e-12)
    with pytest.raises(SpecError, match="do not fit"):
        torus.torus_group(65, (4, 4, 4))


def test_p2p_is_one_link_and_steps_cost_per_hop():
    assert p2p_s(message_bytes=S, link=CUBE) == pytest.approx(S / W, rel=1e-12)
    slow = Link(name="ici", bandwidth_bytes_per_s=6 * W, latency_s=2e-6, step_latency_s=1e-6, topology="torus",
                torus_dims=(4, 4, 4))
    # dimension-ordered all-reduce of 64: 2·(3+3+3) = 18 ring steps, one floor
    t = all_reduce_s(message_bytes=0.0, participants=64, link=slow, algorithm="ring")
    assert t == pytest.approx(2e-6 + 18e-6, rel=1e-12)
    # all-to-all: the diameter, 2+2+2 hops
    assert all_to_all_s(message_bytes=0.0, participants=64, link=slow) == pytest.approx(2e-6 + 6e-6, rel=1e-12)
    assert all_reduce_s(message_bytes=S, participants=1, link=slow) == 0.0


def test_switch_algorithms_are_refused_on_a_torus_and_multi_axis_on_a_switch():
    assert supported_all_reduce_algorithms(CUBE) == ("ring", "multi_axis")
    assert "multi_axis" not in supported_all_reduce_algorithms(SWITCH)
    for algorithm in ("tree", "one_shot"):
        with pytest.raises(SpecError, match="not modelled on the torus"):
            all_reduce_s(message_bytes=S, participants=8, link=CUBE, algorithm=algorithm)
    with pytest.raises(SpecError, match="in_switch_reduction"):
        all_reduce_s(message_bytes=S, participants=8, link=CUBE, algorithm="in_switch")
    with pytest.raises(SpecError, match="torus all-reduce"):
        all_reduce_s(message_bytes=S, participants=8, link=SWITCH, algorithm="multi_axis")


def test_two_tier_over_torus_domains():
    """128 chips = 2 cubes of 64 joined by a 50 GB/s scale-out: RS inside (63/128·S/W), the S/64
    shard all-reduced between the 2 cubes (ring: 2·1/2·(S/64)/50e9), AG inside (63/128·S/W)."""
    out = Link(name="dcn", bandwidth_bytes_per_s=50e9, latency_s=0.0)
    t = two_tier_all_reduce_s(message_bytes=S, participants=128, domain_chips=64, scale_up=CUBE, scale_out=out,
                              algorithm="ring")
    assert t == pytest.approx(2 * 63 / 128 * S / W + (S / 64) / 50e9, rel=1e-12)
    # all-to-all: half of S stays in the cube (bisection bound of the cube on S/2), half leaves at 50 GB/s
    a2a = two_tier_all_to_all_s(message_bytes=S, participants=128, domain_chips=64, scale_up=CUBE, scale_out=out)
    assert a2a == pytest.approx(max((S / 2) / (2 * W), (S / 2) / 50e9), rel=1e-12)


SIZES = st.floats(min_value=1.0, max_value=1e10, allow_nan=False)


@settings(max_examples=60, deadline=None)
@given(p=st.sampled_from([1, 2, 3, 4, 8, 16, 32, 64]), s=SIZES)
def test_a_torus_never_beats_a_switch_at_the_same_chip_bandwidth(p, s):
    """At equal per-chip bandwidth, every torus schedule moves at least the switch's bytes per
    port; the multi-axis bound is never above the dimension-ordered rings."""
    for f in (all_gather_s, reduce_scatter_s, all_to_all_s):
        assert (f(message_bytes=s, participants=p, link=CUBE)
                >= f(message_bytes=s, participants=p, link=SWITCH) * (1 - 1e-12))
    ring = all_reduce_s(message_bytes=s, participants=p, link=CUBE, algorithm="ring")
    multi = all_reduce_s(message_bytes=s, participants=p, link=CUBE, algorithm="multi_axis")
    switch = all_reduce_s(message_bytes=s, participants=p, link=SWITCH, algorithm="ring")
    assert switch * (1 - 1e-12) <= multi <= ring * (1 + 1e-12)


@settings(max_examples=40, deadline=None)
@given(dims=st.lists(st.integers(min_value=2, max_value=8), min_size=1, max_size=3), data=st.data())
def test_placement_is_a_sub_block(dims, data):
    dims = tuple(dims)
    total = int(np.prod(dims))
    p = data.draw(st.integers(min_value=1, max_value=total))
    axes = torus.torus_group(p, dims)
    assert int(np.prod([g for g, _ in axes])) == p
    assert all(c in (1, 2) and g >= 2 for g, c in axes)


# --- the spec and the loader are strict about the topology -------------------------------------

def test_link_topology_validation():
    with pytest.raises(SpecError, match="topology"):
        Link(name="x", bandwidth_bytes_per_s=1e9, latency_s=0.0, topology="mesh")
    with pytest.raises(SpecError, match="torus_dims"):
        Link(name="x", bandwidth_bytes_per_s=1e9, latency_s=0.0, topology="torus")
    with pytest.raises(SpecError, match="torus_dims"):
        Link(name="x", bandwidth_bytes_per_s=1e9, latency_s=0.0, torus_dims=(4, 4))
    with pytest.raises(SpecError, match="torus_dims"):
        Link(name="x", bandwidth_bytes_per_s=1e9, latency_s=0.0, topology="torus", torus_dims=(4, 1))
    with pytest.raises(SpecError, match="in_switch_reduction"):
        Link(name="x", bandwidth_bytes_per_s=1e9, latency_s=0.0, topology="torus", torus_dims=(4,),
             in_switch_reduction=True)




def _load(chips: int, up: str, out: str = ""):
    text = f"""
[box]
accelerator = "chip"
chips = {chips}
description = "test system"
source = "hand-written test entry"
as_of = "2024-01-01"

[box.scale_up]
bandwidth = "600 GB/s"
latency = "2 us"
source = "test"
{up}
{out}
"""
    return cat.load_systems(text, cat.load_accelerators(GOOD_ACCELERATOR, "chips.toml"), "test.toml")


def test_loader_reads_a_torus_and_rejects_bad_ones():
    box = _load(64, 'topology = "torus"\ntorus_dims = [4, 4, 4]')["box"]
    assert box.scale_up.topology == "torus" and box.scale_up.torus_dims == (4, 4, 4)
    assert _load(8, "")["box"].scale_up.topology == "switch"
    with pytest.raises(CatalogError, match="did you mean 'torus'"):
        _load(64, 'topology = "tours"\ntorus_dims = [4, 4, 4]')
    with pytest.raises(CatalogError, match="torus_dims: missing"):
        _load(64, 'topology = "torus"')
    with pytest.raises(CatalogError, match="only a link with topology"):
        _load(64, "torus_dims = [4, 4, 4]")
    with pytest.raises(CatalogError, match="torus_dims: expected a list"):
        _load(64, 'topology = "torus"\ntorus_dims = [4, 4, "4"]')
    with pytest.raises(CatalogError, match="has 32 chips, the system 64"):
        _load(64, 'topology = "torus"\ntorus_dims = [4, 4, 2]')
    with pytest.raises(CatalogError, match="only a scale_up link has a topology"):
        _load(8, "", '[box.scale_out]\nbandwidth = "50 GB/s"\nlatency = "13 us"\nsource = "t"\ntopology = "switch"')
    with pytest.raises(CatalogError, match="did you mean 'torus_dims'"):
        _load(64, 'topology = "torus"\ntorus_dim = [4, 4, 4]')


def test_catalogued_tpu_and_trainium_slices_are_tori_with_the_right_chip_count():
    for name, dims in {"tpu-v4-64": (4, 4, 4), "tpu-v5p-64": (4, 4, 4), "tpu-v5e-256": (16, 16),
                       "tpu-v6e-256": (16, 16), "tpu-v7-64": (4, 4, 4), "tpu-v7-256": (4, 8, 8),
                       "trn2-ultraserver": (4, 4, 4)}.items():
        system = cat.get_system(name)
        assert system.scale_up.topology == "torus" and system.scale_up.torus_dims == dims, name
    for name in ("hgx-h100", "gb200-nvl72", "cloudmatrix-384", "mi355x-8"):
        assert cat.get_system(name).scale_up.topology == "switch", name
