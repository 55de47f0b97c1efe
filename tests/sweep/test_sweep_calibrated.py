"""Sweeps in calibrated mode: every analytic point priced with its system's profile; systems
without one are skipped with the reason; ideal specs keep their hash."""

from __future__ import annotations

import pytest

from llmecon.catalog.hardware import get_accelerator, get_system
from llmecon.catalog.models import get_model
from llmecon.catalog.efficiency import default_profile
from llmecon.errors import SpecError
from llmecon.spec.plan import Plan
from llmecon.step.inference import decode_step
from llmecon.sweep.grid import expand
from llmecon.sweep.spec import parse_spec

SPEC = """
name = "cal"
{mode}
[analytic]
models = ["llama-3.1-70b"]
systems = ["hgx-h100", "vera-rubin-nvl72"]
plans = [{{tp = 4}}]
phases = ["decode"]
batches = [1, 64]
contexts = [4096]
"""


def test_calibrated_groups_carry_the_systems_profile_and_skip_systems_without_one():
    work = expand(parse_spec(SPEC.format(mode='mode = "calibrated"')))
    assert [g.system.name for g in work.groups] == ["hgx-h100"]
    assert work.groups[0].profile == default_profile(get_accelerator("h100-sxm"))
    assert any("rubin" in s.reason and "no efficiency profile" in s.reason for s in work.skipped)


def test_calibrated_points_equal_the_calibrated_step():
    from llmecon.sweep.analytic import evaluate_block

    work = expand(parse_spec(SPEC.format(mode='mode = "calibrated"')))
    g = work.groups[0]
    rows = evaluate_block([0, 1], g)
    want = decode_step(get_model("llama-3.1-70b"), get_system("hgx-h100"), batch=[1.0, 64.0], context=4096,
                       plan=Plan(tp=4), profile=g.profile).step_s
    assert list(rows["step_s"]) == pytest.approx(list(want), rel=1e-12)
    ideal = expand(parse_spec(SPEC.format(mode="")))
    assert all(rows["step_s"] >= evaluate_block([0, 1], ideal.groups[0])["step_s"])


def test_ideal_spec_hash_is_unchanged_by_the_mode_key():
    plain = expand(parse_spec(SPEC.format(mode="")))
    explicit = expand(parse_spec(SPEC.format(mode='mode = "ideal"')))
    assert plain.spec_hash == explicit.spec_hash
    assert expand(parse_spec(SPEC.format(mode='mode = "calibrated"'))).spec_hash != plain.spec_hash


def test_unknown_mode_is_refused_with_did_you_mean():
    with pytest.raises(SpecError, match="did you mean 'calibrated'"):
        parse_spec(SPEC.format(mode='mode = "calibrate"'))


SIM = """
name = "cal-sim"
mode = "calibrated"
[simulation]
models = ["llama-3.1-8b"]
systems = ["h100-sxm", "rubin"]
plans = "smallest"
policies = ["continuous"]
seeds = [0]
[[simulation.workloads]]
name = "chat"
rate = 2
requests = 20
prompt = "256"
output = "16"
"""


def test_calibrated_simulations_run_on_the_systems_profile():
    from llmecon.sweep.simulation import run_scenario

    work = expand(parse_spec(SIM))
    assert [sc.system.name for sc in work.scenarios] == ["h100-sxm"]
    assert work.scenarios[0].profile == default_profile(get_accelerator("h100-sxm"))
    assert any("rubin" in s.reason for s in work.skipped)
    cal = run_scenario(work.scenarios[0])
    ideal = run_scenario(expand(parse_spec(SIM.replace('mode = "calibrated"', ""))).scenarios[0])
    assert cal["tpot_p50_s"] > ideal["tpot_p50_s"]
