"""The ideal floor beside calibrated ``plan`` and ``context`` answers (issue 35, items 1-2): the same point on
the roofline, at the same price. Checked against the step itself (``decode_of`` on the IDEAL profile) and
the $/Mtok arithmetic by hand: $/Mtok = price x chips x step / tokens per step / 3600 x 1e6."""

from __future__ import annotations

import pytest

from llmecon.catalog.efficiency import default_profile
from llmecon.catalog.hardware import get_system
from llmecon.catalog.models import get_model
from llmecon.econ.context import context_economics
from llmecon.econ.floor import context_floor, plan_floors
from llmecon.econ.planner import PlanTargets, SearchOptions, plan_deployment
from llmecon.report.context import context_dict
from llmecon.report.plan import floor_dict
from llmecon.spec.deployment import Deployment
from llmecon.spec.efficiency import IDEAL
from llmecon.spec.plan import Plan
from llmecon.step.inference import decode_of, prefill_of

PRICE = 2.0  # $/chip-hour


@pytest.fixture(scope="module")
def searched():
    m, s = get_model("llama-3.1-8b"), get_system("hgx-h100")
    opts = SearchOptions(max_chips=8, batches=(1.0, 16.0, 64.0), prefill_batches=(1.0, 4.0),
                         profiles={s.name: default_profile(s.accelerator)})
    targets = PlanTargets(tpot_s=0.05, ttft_s=2.0, context=2048.0, prompt_tokens=2048.0)
    r = plan_deployment(m, [s], targets=targets, options=opts, prices={s.name: PRICE})
    return m, s, opts, targets, r, plan_floors(r, m, [s], opts)


def test_plan_floor_is_the_best_point_on_the_roofline(searched):
    m, s, _, targets, r, floors = searched
    best, floor = r.decode.best, floors["decode"]
    assert (floor.plan, floor.batch, floor.system) == (best.plan, best.batch, best.system)
    ideal = Deployment(model=m, system=s, plan=best.plan, profile=IDEAL)
    step = float(decode_of(ideal, batch=best.batch, context=targets.context).step_s)
    assert floor.step_s == pytest.approx(step, rel=1e-12)
    assert floor.usd_per_mtok == pytest.approx(PRICE * best.plan.chips * step / best.batch / 3600 * 1e6, rel=1e-9)
    assert floor.step_s < best.step_s                               # calibrated sits above its floor
    d = floor_dict(floor, best)
    assert d["mode"] == "ideal" and d["calibrated_over_ideal"] == pytest.approx(best.step_s / step, rel=1e-12)
    pbest, pfloor = r.prefill.best, floors["prefill"]
    ideal = Deployment(model=m, system=s, plan=pbest.plan, profile=IDEAL)
    pstep = float(prefill_of(ideal, batch=pbest.batch, prompt_tokens=targets.prompt_tokens).step_s)
    assert (pfloor.plan, pfloor.batch) == (pbest.plan, pbest.batch) and pfloor.step_s == pytest.approx(pstep, rel=1e-12)


def test_no_floor_for_an_ideal_search(searched):
    m, s, _, targets, _, _ = searched
    opts = SearchOptions(max_chips=8, batches=(1.0, 16.0), prefill_batches=(1.0,))
    r = plan_deployment(m, [s], targets=targets, options=opts)
    assert plan_floors(r, m, [s], opts) == {"decode": None, "prefill": None}


def test_context_floor_is_the_roofline_twin_at_the_same_contexts():
    s = get_system("h100-sxm")
    dep = Deployment(model=get_model("llama-3.1-8b"), system=s, plan=Plan(), profile=default_profile(s.accelerator))
    e = context_economics(dep, contexts=[1024.0, 8192.0])
    floor = context_floor(dep, e)
    assert list(floor.curve.context) == [1024.0, 8192.0] and list(floor.curve.batch) == list(e.curve.batch)
    d = context_dict(e, dep, price_per_chip_hour=PRICE, floor=floor)["ideal_floor"]
    ideal = Deployment(model=dep.model, system=s, plan=Plan(), profile=IDEAL)
    for row, b, L in zip(d["curve"], e.curve.batch, (1024.0, 8192.0)):
        step = float(decode_of(ideal, batch=float(b), context=L).step_s)
        assert row["decode_step_s"] == pytest.approx(step, rel=1e-12)
        assert row["output_usd_per_mtok"] == pytest.approx(PRICE * step / b / 3600 * 1e6, rel=1e-9)
        assert row["calibrated_over_ideal"] > 1
    assert context_floor(Deployment(model=dep.model, system=s, plan=Plan()), e) is None
    assert context_dict(e, dep)["ideal_floor"] is None
