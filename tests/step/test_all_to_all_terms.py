"""The profile's ``all_to_all`` link terms price the expert-parallel dispatch/combine inside a
scale-up domain (the ``scale_up`` terms stay the TP all-reduce's); strict loading; the NCCL fit
(fidelity.comm_fit) recovers the terms it was generated with."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from llmecon.catalog.efficiency import load_profile, parse_profile
from llmecon.catalog.hardware import get_system
from llmecon.catalog.models import get_model
from llmecon.errors import CatalogError
from llmecon.fidelity.comm_fit import fit_all_to_all, predict_all_to_all
from llmecon.fidelity.kernel_fit import CollectiveRows
from llmecon.spec.efficiency import IDEAL, LinkEfficiency
from llmecon.spec.plan import Plan
from llmecon.step.collectives import all_to_all_s
from llmecon.step.inference import decode_step

H200 = get_system("hgx-h200")
X = LinkEfficiency(op_overhead_s=6e-6, step_latency_s=1.5e-6, bandwidth_fraction=0.6)
Y = LinkEfficiency(op_overhead_s=2e-6, step_latency_s=0.5e-6, bandwidth_fraction=0.9)


def test_all_to_all_link_by_hand():
    prof = dataclasses.replace(IDEAL, name="t", scale_up=Y, all_to_all=X)
    link = prof.system(H200, "all_to_all").scale_up
    assert link.bandwidth_bytes_per_s == pytest.approx(0.6 * H200.scale_up.bandwidth_bytes_per_s)
    assert link.step_latency_s == 1.5e-6 and link.latency_s == H200.scale_up.latency_s
    assert prof.system(H200).scale_up.bandwidth_bytes_per_s == pytest.approx(0.9 * H200.scale_up.bandwidth_bytes_per_s)
    # one 8-way all-to-all of 1 MiB: floor + one step + 7/8 of it at 0.6 of the link, + the call overhead
    s = 2.0 ** 20
    want = H200.scale_up.latency_s + 1.5e-6 + 7 / 8 * s / (0.6 * H200.scale_up.bandwidth_bytes_per_s) + 6e-6
    rows = CollectiveRows(message_bytes=np.array([s]), participants=np.array([8.0]), time_s=np.array([1.0]))
    assert float(predict_all_to_all(X, H200, rows)[0]) == pytest.approx(want, rel=1e-12)
    assert float(all_to_all_s(message_bytes=s, participants=8, link=link)) + 6e-6 == pytest.approx(want, rel=1e-12)
    # without all_to_all terms the scale_up ones price it, as before
    assert dataclasses.replace(prof, all_to_all=None).system(H200, "all_to_all") == prof.system(H200)


def test_ep_step_uses_the_all_to_all_terms():
    model, plan = get_model("qwen3-30b-a3b"), Plan(tp=1, ep=8)      # tp=1: the EP all-to-all is the only collective
    kw = dict(batch=np.array([8.0, 512.0]), context=2048.0, plan=plan)
    old = decode_step(model, H200, profile=dataclasses.replace(IDEAL, name="a", scale_up=X), **kw)
    new = decode_step(model, H200, profile=dataclasses.replace(IDEAL, name="b", scale_up=Y, all_to_all=X), **kw)
    other = decode_step(model, H200, profile=dataclasses.replace(IDEAL, name="c", scale_up=Y), **kw)
    np.testing.assert_allclose(new.time.comm_s, old.time.comm_s, rtol=1e-12)
    assert np.all(other.time.comm_s < new.time.comm_s)
    assert np.all(new.step_s >= decode_step(model, H200, profile=IDEAL, **kw).step_s)


def test_fit_all_to_all_recovers_the_terms():
    sizes = np.repeat(2.0 ** np.arange(10, 30), 3)
    parts = np.tile([2.0, 4.0, 8.0], sizes.size // 3)
    rows = CollectiveRows(message_bytes=sizes, participants=parts, time_s=np.zeros(sizes.size))
    rows = dataclasses.replace(rows, time_s=predict_all_to_all(X, H200, rows))
    got = fit_all_to_all(H200, rows)
    assert np.max(np.abs(predict_all_to_all(got, H200, rows) / rows.time_s - 1)) < 0.01
    assert got.bandwidth_fraction == pytest.approx(0.6, rel=0.02)
    assert got.op_overhead_s + got.step_latency_s == pytest.approx(7.5e-6, rel=0.05)   # only their sum is seen


def test_shipped_profiles_carry_all_to_all_and_load_strictly():
    p = load_profile("h200/trtllm")
    assert p.all_to_all is not None and 0 < p.all_to_all.bandwidth_fraction <= 1
    assert "fidelity.comm_fit" in p.derivation and p.fit["all_to_all_rows"] > 30
    assert load_profile("b300/trtllm").all_to_all is None                     # no catalogued B300 system
    text = p.as_toml()
    assert parse_profile(text) == p
    a2a = text.index("\n[all_to_all]\n")
    with pytest.raises(CatalogError, match="did you mean 'bandwidth_fraction'"):
        parse_profile(text[:a2a] + text[a2a:].replace("bandwidth_fraction", "bandwith_fraction", 1))
    with pytest.raises(CatalogError, match="did you mean 'all_to_all'"):
        parse_profile(text.replace("\n[all_to_all]\n", "\n[all_to_al]\n", 1))
    with pytest.raises(CatalogError, match="bandwidth_fraction"):
        parse_profile(text[:a2a] + text[a2a:].replace("bandwidth_fraction = ", "bandwidth_fraction = 1", 1))
