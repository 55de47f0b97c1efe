"""Review fixes of the TCO closed forms (econ.tco): the CRF's series only where r x n is small, one set of
input bounds shared by every front-end, one tokens/s-per-MW formula, and notes carried to the JSON."""

from __future__ import annotations

import math
from decimal import Decimal, localcontext
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from llmecon.econ.tco import BOUNDS, capital_recovery_factor, per_megawatt, power_basis, tco_rate, \
    tokens_per_s_per_mw
from llmecon.errors import SpecError
from tco_placeholders import tco_inputs


def _crf_decimal(r: float, n: float) -> float:
    """r / (1 - (1 + r)^-n) in 120-digit decimal arithmetic from the exact binary values of r and n."""
    if r == 0:
        return 1.0 / n
    with localcontext() as ctx:
        ctx.prec = 120
        R, N = Decimal(r), Decimal(n)
        return float(R / (1 - (1 + R) ** (-N)))


@pytest.mark.parametrize("r,n", [(1e-8, 1e9), (1e-8, 1e7), (5e-8, 1e8), (9e-8, 1e12), (1e-9, 1e8), (1e-8, 10.0),
                                 (1e-10, 5.0), (0.08, 5.0), (1e-12, 1e12), (3e-8, 3.0), (1e-20, 1e15)])
def test_crf_large_periods_against_decimal(r, n):
    """The reviewer's case: r = 1e-8 over 1e9 years is r / (1 - e^-10) = 1.00005e-8, not the series' 1.43e-8."""
    got = float(capital_recovery_factor(cost_of_capital=r, years=n))
    assert got == pytest.approx(_crf_decimal(r, n), rel=1e-12)


def test_crf_reviewer_case():
    assert float(capital_recovery_factor(cost_of_capital=1e-8, years=1e9)) == pytest.approx(
        1e-8 / -math.expm1(-10.0), rel=1e-7)


@settings(max_examples=80, deadline=None)
@given(r=st.one_of(st.just(0.0), st.floats(min_value=1e-30, max_value=1.0)),
       n=st.floats(min_value=1e-2, max_value=1e12))
def test_crf_matches_decimal_everywhere(r, n):
    assert float(capital_recovery_factor(cost_of_capital=r, years=n)) == pytest.approx(_crf_decimal(r, n), rel=1e-12)


# ---- bounds ------------------------------------------------------------------------------------

_inputs = tco_inputs  # placeholders, not facts (tests/tco_placeholders.py)


@pytest.mark.parametrize("field,value", [("amortisation_years", 1e-300), ("amortisation_years", 0.08),
                                         ("amortisation_years", 101.0), ("pue", 0.99), ("pue", 11.0),
                                         ("usd_per_kwh", 101.0), ("watts_per_chip", 2e6), ("chip_capex_usd", 2e9),
                                         ("system_capex_usd", 2e9), ("hosting_usd_per_rack_month", 2e9),
                                         ("cost_of_capital", 11.0), ("chips_per_rack", 2_000_000)])
def test_out_of_bounds_names_field_and_range(field, value):
    with pytest.raises(SpecError) as e:
        _inputs(**{field: value})
    assert e.value.field == field
    low, _, high, _ = BOUNDS[field]
    assert f"{high:g}" in str(e.value)


def test_bounds_edges_are_accepted():
    assert tco_rate(_inputs(amortisation_years=1 / 12)).usd_per_chip_hour > 0
    assert tco_rate(_inputs(amortisation_years=100.0, pue=10.0, usd_per_kwh=100.0)).usd_per_chip_hour > 0
    r = tco_rate(_inputs(hosting_usd_per_rack_month=None, chips_per_rack=None, hosting_usd_per_chip_month=1e9))
    assert r.hosting_usd_per_chip_hour == pytest.approx(1e9 / 730.5, rel=1e-12)


def test_web_schema_bounds_agree_with_tco_inputs():
    pytest.importorskip("pydantic")
    from llmecon.web.schemas import TcoIn

    assert set(TcoIn.model_fields) == set(BOUNDS)
    for name, field in TcoIn.model_fields.items():
        low, exclusive, high, _ = BOUNDS[name]
        meta = {type(m).__name__: m for m in field.metadata}
        assert (meta["Gt"].gt if exclusive else meta["Ge"].ge) == low, name
        assert meta["Le"].le == high, name


def test_resolver_applies_the_bounds():
    from llmecon.resolve import tco

    site = dict(chip_capex_usd=1.0, system_capex_usd=0.0, amortisation_years=1e-300, cost_of_capital=0.0, pue=1.0,
                usd_per_kwh=0.0, hosting_usd_per_chip_month=1.0)
    with pytest.raises(SpecError) as e:
        tco("hgx-h100", values=site)
    assert e.value.field == "amortisation_years" and "1/12" in str(e.value)


# ---- one tokens/s-per-MW formula ----------------------------------------------------------------

def test_one_tokens_per_mw_formula():
    t = np.array([1000.0, 500.0, 0.0])
    assert per_megawatt(t, 910.0) == pytest.approx(t / 910.0 * 1e6, rel=1e-15)
    assert np.isnan(per_megawatt(t, math.nan)).all()  # the sweeps' "no catalogued power"
    assert float(tokens_per_s_per_mw(1000.0, watts_per_chip=700, pue=1.3)) == float(per_megawatt(1000.0, 910.0))
    assert power_basis(700.0, tco_rate(_inputs())).tokens_per_s_per_mw(1000.0) == float(per_megawatt(1000.0, 910.0))
    assert not hasattr(tco_rate(_inputs()), "tokens_per_s_per_mw")  # no second copy on TcoRate
    src = Path(__file__).resolve().parents[2] / "src" / "llmecon"
    for path in src.rglob("*.py"):
        if path.name == "tco.py" and path.parent.name == "econ":
            continue
        assert "WATTS_PER_MW" not in path.read_text(), f"{path}: use econ.tco.per_megawatt"
    for rel in ("sweep/analytic.py", "sweep/simulation.py"):
        assert "per_megawatt(" in (src / rel).read_text(), rel


# ---- notes ----------------------------------------------------------------------------------------

def test_notes_reach_the_json(tmp_path):
    from llmecon.report.tco import ASSUMPTIONS, tco_dict
    from llmecon.resolve import tco

    p = tmp_path / "site.toml"
    p.write_text('chip_capex_usd = 1\nsystem_capex_usd = 0\namortisation_years = 1\ncost_of_capital = 0\npue = 1\n'
                 'usd_per_kwh = 0\nhosting_usd_per_chip_month = 1\nnotes = "quote Q-17, excl. VAT"\n')
    rate = tco("hgx-h100", path=str(p))
    assert rate.inputs.notes == "quote Q-17, excl. VAT"
    assert tco_dict(rate, "hgx-h100")["inputs"]["notes"] == "quote Q-17, excl. VAT"
    assert tco_dict(tco_rate(_inputs()), "hgx-h100")["inputs"]["notes"] is None
    power = next(a for a in ASSUMPTIONS if a.startswith("power"))
    assert "/ 1000" in power
