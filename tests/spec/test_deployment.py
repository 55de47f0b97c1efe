"""The Deployment: validated once at construction, carrying its efficiency profile (IDEAL by
default), from which its mode and the fidelity every report names are read."""

from __future__ import annotations

import dataclasses

import pytest

from llmecon.catalog.hardware import get_accelerator, get_system
from llmecon.catalog.models import get_model
from llmecon.catalog.efficiency import default_profile
from llmecon.errors import LlmeconError, SpecError
from llmecon.spec.deployment import Deployment
from llmecon.spec.efficiency import IDEAL
from llmecon.spec.plan import Plan
from llmecon.step.inference import decode_of, decode_step

H100 = default_profile(get_accelerator("h100-sxm"))


def _dep(**kw):
    base = dict(model=get_model("llama-3.1-70b"), system=get_system("hgx-h100"), plan=Plan(tp=4))
    return Deployment(**{**base, **kw})


def test_default_profile_is_ideal():
    dep = _dep()
    assert dep.profile is IDEAL and dep.mode == "ideal" and dep.fidelity == "ideal"
    assert _dep(profile=None).profile is IDEAL


def test_a_fitted_profile_makes_it_calibrated_and_is_named():
    dep = _dep(profile=H100)
    assert dep.mode == "calibrated"
    assert dep.fidelity == f"calibrated ({H100.name})"


def test_construction_validates_the_plan_and_names_the_field():
    """Llama-3.1-70B has 64 attention heads: tp 3 cannot split them."""
    with pytest.raises(SpecError) as info:
        _dep(plan=Plan(tp=3))
    assert info.value.field == "tp" or "tp 3" in str(info.value)


def test_construction_validates_formats_and_names_the_field():
    with pytest.raises(LlmeconError) as info:
        _dep(weight_dtype="fp9")
    assert info.value.field == "weight_dtype"
    assert "did you mean" in str(info.value)


def test_replace_revalidates():
    with pytest.raises(SpecError):
        dataclasses.replace(_dep(), plan=Plan(tp=3))


def test_a_profile_must_be_a_profile_object():
    with pytest.raises(SpecError, match="EfficiencyProfile"):
        _dep(profile="calibrated")


def test_weights_per_chip_by_hand():
    """Weights per chip: total weight bytes / tp for a dense model under pure TP (bf16, 2 B per
    parameter): 70.55e9 params x 2 B / 4 chips."""
    dep = _dep()
    params = dep.model.params.total
    assert dep.weights_per_chip_bytes == pytest.approx(params * 2 / 4, rel=1e-12)


def test_decode_of_prices_with_the_deployments_profile():
    """decode_of on a calibrated Deployment equals decode_step with the same profile, and calibrated
    time is at least the ideal roofline (every fraction <= 1: a sum of maxima >= the max of sums)."""
    cal = decode_of(_dep(profile=H100), batch=32, context=4096)
    ideal = decode_of(_dep(), batch=32, context=4096)
    direct = decode_step(get_model("llama-3.1-70b"), get_system("hgx-h100"), batch=32, context=4096,
                         plan=Plan(tp=4), profile=H100)
    assert float(cal.step_s) == float(direct.step_s)
    assert cal.mode == "calibrated" and cal.profile == H100.name
    assert float(cal.step_s) >= float(ideal.step_s)
