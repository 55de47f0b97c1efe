"""TCO: $/chip-hour = capital + power + hosting (econ.tco), hand-computed, and its properties."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings, strategies as st

from llmecon.econ.tco import (HOURS_PER_MONTH, HOURS_PER_YEAR, capital_recovery_factor,
    capital_usd_per_chip_hour, hosting_usd_per_chip_hour, power_basis, power_usd_per_chip_hour, tco_rate,
    tokens_per_s_per_mw)
from llmecon.errors import SpecError
from tco_placeholders import SITE, tco_inputs


_inputs = tco_inputs  # placeholders, not facts (tests/tco_placeholders.py)


def test_hours():
    assert HOURS_PER_YEAR == 365.25 * 24
    assert HOURS_PER_MONTH == pytest.approx(730.5, rel=1e-12)


def test_crf_interest_table():
    """(A/P, 8%, 5) = 0.25046 and (A/P, 10%, 10) = 0.16275 in standard interest tables (e.g. Newnan,
    Engineering Economic Analysis, appendix): r / (1 - (1 + r)^-n)."""
    assert float(capital_recovery_factor(cost_of_capital=0.08, years=5)) == pytest.approx(0.08 / (1 - 1.08 ** -5),
                                                                                         rel=1e-12)
    assert float(capital_recovery_factor(cost_of_capital=0.08, years=5)) == pytest.approx(0.25046, abs=5e-6)
    assert float(capital_recovery_factor(cost_of_capital=0.10, years=10)) == pytest.approx(0.16275, abs=5e-6)


def test_crf_zero_rate_is_straight_line():
    assert float(capital_recovery_factor(cost_of_capital=0.0, years=4)) == 0.25


def test_capital_hand_computed():
    # r = 0: (30,000 + 100,000 / 8) / 5 years / 8,766 h = 42,500 / 43,830 $/h
    c = capital_usd_per_chip_hour(chip_capex_usd=30_000, system_capex_usd=100_000, chips_per_system=8,
                                  amortisation_years=5, cost_of_capital=0.0)
    assert float(c) == pytest.approx(42_500 / 43_830, rel=1e-12)
    # 8%: 42,500 x 0.250456... / 8,766
    c8 = capital_usd_per_chip_hour(chip_capex_usd=30_000, system_capex_usd=100_000, chips_per_system=8,
                                   amortisation_years=5, cost_of_capital=0.08)
    assert float(c8) == pytest.approx(42_500 * (0.08 / (1 - 1.08 ** -5)) / 8766, rel=1e-12)


def test_power_hand_computed():
    # 700 W x 1.0 x PUE 1.3 = 910 W = 0.91 kW, x $0.08/kWh = $0.0728 per hour
    assert float(power_usd_per_chip_hour(watts_per_chip=700, power_utilization=1.0, pue=1.3,
                                         usd_per_kwh=0.08)) == pytest.approx(0.0728, rel=1e-12)
    assert float(power_usd_per_chip_hour(watts_per_chip=1000, power_utilization=0.5, pue=1.2,
                                         usd_per_kwh=0.10)) == pytest.approx(0.06, rel=1e-12)


def test_hosting_hand_computed():
    # $15,000 per rack-month over 32 chips = $468.75 per chip-month, / 730.5 h
    assert float(hosting_usd_per_chip_hour(hosting_usd_per_rack_month=15_000, chips_per_rack=32)) == \
        pytest.approx(468.75 / 730.5, rel=1e-12)
    assert float(hosting_usd_per_chip_hour(hosting_usd_per_chip_month=730.5)) == pytest.approx(1.0, rel=1e-12)


def test_hosting_forms_are_exclusive():
    with pytest.raises(SpecError, match="not both"):
        hosting_usd_per_chip_hour(hosting_usd_per_rack_month=1.0, chips_per_rack=8, hosting_usd_per_chip_month=1.0)
    with pytest.raises(SpecError, match="not both and not neither"):
        hosting_usd_per_chip_hour()
    with pytest.raises(SpecError) as e:
        hosting_usd_per_chip_hour(hosting_usd_per_rack_month=1.0)
    assert e.value.field == "chips_per_rack"
    with pytest.raises(SpecError) as e:
        hosting_usd_per_chip_hour(hosting_usd_per_chip_month=1.0, chips_per_rack=8)
    assert e.value.field == "chips_per_rack"


def test_sum_hand_computed():
    r = tco_rate(_inputs())
    capital = 42_500 * (0.08 / (1 - 1.08 ** -5)) / 8766
    assert r.capital_usd_per_chip_hour == pytest.approx(capital, rel=1e-12)
    assert r.power_usd_per_chip_hour == pytest.approx(0.0728, rel=1e-12)
    assert r.hosting_usd_per_chip_hour == pytest.approx(468.75 / 730.5, rel=1e-12)
    total = capital + 0.0728 + 468.75 / 730.5
    assert r.usd_per_chip_hour == pytest.approx(total, rel=1e-12)
    assert r.usd_per_system_hour == pytest.approx(8 * total, rel=1e-12)
    assert r.facility_watts_per_chip == pytest.approx(910.0, rel=1e-12)


def test_tokens_per_mw_hand_computed():
    # 1,000 tokens/s per chip at 910 facility W: 1e6 / 910 chips per MW -> 1,098,901 tokens/s per MW
    assert float(tokens_per_s_per_mw(1000.0, watts_per_chip=700, pue=1.3)) == pytest.approx(1e9 / 910, rel=1e-12)
    assert power_basis(700.0, tco_rate(_inputs())).tokens_per_s_per_mw(1000.0) == pytest.approx(1e9 / 910, rel=1e-12)
    b = power_basis(1000.0)
    assert b.tokens_per_s_per_mw(500.0) == pytest.approx(500_000.0, rel=1e-12)
    assert "IT power at TDP" in b.label
    assert power_basis(None).tokens_per_s_per_mw(500.0) is None
    assert power_basis(700.0, tco_rate(_inputs())).watts_per_chip == pytest.approx(910.0, rel=1e-12)


@pytest.mark.parametrize("field,value", [("pue", 0.9), ("usd_per_kwh", -1.0), ("amortisation_years", 0.0),
                                         ("cost_of_capital", -0.01), ("power_utilization", 1.5),
                                         ("chip_capex_usd", math.nan), ("watts_per_chip", 0.0)])
def test_bad_inputs_name_the_field(field, value):
    with pytest.raises(SpecError) as e:
        _inputs(**{field: value})
    assert e.value.field == field


_pos = st.floats(min_value=1.0, max_value=1e6, allow_nan=False)
_rate = st.floats(min_value=0.0, max_value=0.5, allow_nan=False)
_years = st.floats(min_value=0.5, max_value=20.0, allow_nan=False)


@settings(max_examples=60, deadline=None)
@given(chip=_pos, system=_pos, r=_rate, n=_years, kwh=st.floats(0.0, 1.0), pue=st.floats(1.0, 3.0),
       host=_pos, bump=st.floats(1.01, 3.0))
def test_monotone_in_every_input(chip, system, r, n, kwh, pue, host, bump):
    """More capex, a dearer kWh, a higher PUE, more watts, dearer hosting or a higher cost of capital
    never lower the rate; a longer amortisation never raises it."""
    base = dict(chip_capex_usd=chip, system_capex_usd=system, amortisation_years=n, cost_of_capital=r,
                usd_per_kwh=kwh, pue=pue, hosting_usd_per_rack_month=host, watts_per_chip=700.0)
    r0 = tco_rate(_inputs(**base)).usd_per_chip_hour
    for key in ("chip_capex_usd", "system_capex_usd", "usd_per_kwh", "pue", "hosting_usd_per_rack_month",
                "watts_per_chip"):
        assert tco_rate(_inputs(**{**base, key: base[key] * bump})).usd_per_chip_hour >= r0 * (1 - 1e-12)
    assert tco_rate(_inputs(**{**base, "cost_of_capital": r + 0.01})).usd_per_chip_hour >= r0 * (1 - 1e-12)
    assert tco_rate(_inputs(**{**base, "amortisation_years": n * bump})).usd_per_chip_hour <= r0 * (1 + 1e-12)


@settings(max_examples=60, deadline=None)
@given(n=_years, r=st.floats(min_value=1e-12, max_value=1e-7))
def test_crf_small_rate_tends_to_straight_line(n, r):
    """CRF(r, n) -> 1/n as r -> 0 (and n x CRF >= 1: interest only adds)."""
    crf = float(capital_recovery_factor(cost_of_capital=r, years=n))
    assert crf == pytest.approx(1.0 / n, rel=1e-5)
    assert crf * n >= 1.0 - 1e-12


# ---- the resolver (resolve.tco, resolve.chip_hour_price) -------------------------------------



def test_resolver_fills_tdp_and_names_missing_fields():
    from llmecon.resolve import tco

    r = tco("hgx-h100", values=SITE)
    assert r.inputs.watts_per_chip == 700.0 and r.inputs.chips_per_system == 8
    assert r.usd_per_chip_hour == pytest.approx(tco_rate(_inputs()).usd_per_chip_hour, rel=1e-12)
    for key in ("chip_capex_usd", "system_capex_usd", "amortisation_years", "cost_of_capital", "pue", "usd_per_kwh"):
        with pytest.raises(SpecError) as e:
            tco("hgx-h100", values={k: v for k, v in SITE.items() if k != key})
        assert e.value.field == key
    with pytest.raises(SpecError) as e:
        tco("hgx-h100", values={k: v for k, v in SITE.items() if not k.startswith("hosting")})
    assert e.value.field == "hosting_usd_per_rack_month"


def test_resolver_file_errors_name_the_file(tmp_path):
    from llmecon.errors import CatalogError, LlmeconError
    from llmecon.resolve import tco

    p = tmp_path / "site.toml"
    p.write_text("\n".join(f"{k} = {v}" for k, v in SITE.items() if k != "pue"))
    with pytest.raises(CatalogError, match="missing 'pue'") as e:
        tco("hgx-h100", path=str(p))
    assert str(p) in str(e.value)
    assert tco("hgx-h100", path=str(p), values={"pue": 1.3}).usd_per_chip_hour == pytest.approx(
        tco_rate(_inputs()).usd_per_chip_hour, rel=1e-12)
    p.write_text("\n".join(f"{k} = {v}" for k, v in {**SITE, "pue": 0.5}.items()))
    with pytest.raises(LlmeconError) as e:
        tco("hgx-h100", path=str(p))
    assert e.value.field is None and str(p) in str(e.value) and "pue" in str(e.value)


def test_chip_hour_price_one_or_the_other(tmp_path):
    from llmecon.resolve import chip_hour_price

    assert chip_hour_price("hgx-h100", price_per_chip_hour=2.0) == (2.0, None)
    assert chip_hour_price("hgx-h100") == (None, None)
    with pytest.raises(SpecError) as e:
        chip_hour_price("hgx-h100", price_per_chip_hour=2.0, tco_values=SITE)
    assert e.value.field == "tco" and "{price_per_chip_hour}" in e.value.rule
    with pytest.raises(SpecError) as e:
        chip_hour_price("hgx-h100", required=True)
    assert e.value.field == "price_per_chip_hour"
    price, rate = chip_hour_price("hgx-h100", tco_values=SITE)
    assert price == rate.usd_per_chip_hour


@pytest.mark.parametrize("n", [0.5, 1.25, 5.0, 20.0, 100.0])
@pytest.mark.parametrize("r", [5e-324, 1e-300, 1e-12, 9.99e-8, 1e-7, 1e-6, 1e-3])
def test_crf_precise_for_tiny_rates(r, n):
    """Subnormal rates must not lose the CRF (a hypothesis find: r = 5e-324 gave 0.8/n): against mpmath."""
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 60
    R, N = mpmath.mpf(r), mpmath.mpf(n)
    exact = float(R / -mpmath.expm1(-N * mpmath.log1p(R)))
    assert float(capital_recovery_factor(cost_of_capital=r, years=n)) == pytest.approx(exact, rel=1e-13)


def test_overflowing_capital_is_refused():
    """A near-zero amortisation period overflows the annuity: an error naming it, not inf dollars."""
    with pytest.raises(SpecError) as e:
        tco_rate(_inputs(amortisation_years=1e-310, chip_capex_usd=1e9))
    assert e.value.field == "amortisation_years"


def test_a_hosting_flag_replaces_the_files_form(tmp_path):
    from llmecon.resolve import tco

    p = tmp_path / "site.toml"
    p.write_text("\n".join(f"{k} = {v}" for k, v in SITE.items()))
    r = tco("hgx-h100", path=str(p), values={"hosting_usd_per_chip_month": 730.5})
    assert r.hosting_usd_per_chip_hour == pytest.approx(1.0, rel=1e-12) and r.inputs.chips_per_rack is None


def test_an_empty_tco_object_is_not_unpriced():
    from llmecon.resolve import chip_hour_price

    with pytest.raises(SpecError) as e:
        chip_hour_price("hgx-h100", tco_values={})
    assert e.value.field == "chip_capex_usd"
