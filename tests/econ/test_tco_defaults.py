"""Costs out of the box and power at the facility (issue 35, items 2 and 3): TCO inputs per system from
the catalogue's sourced defaults (copied from shared/reference/economics.yaml), a rent from the published
index, and tokens/s per MW over the system's power per chip x PUE. Hand cases; each failed before (no
defaults: `cost` refused without a price; tokens/s per MW divided by the TDP at PUE 1)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli_run import run, run_json
from llmecon.catalog.hardware import get_system
from llmecon.catalog.tco_defaults import default_tco_values, parse_defaults
from llmecon.econ.tco import power_for
from llmecon.errors import CatalogError
from llmecon.resolve import chip_hour_price, tco

ECONOMICS = Path(__file__).resolve().parents[2] / ".." / "shared" / "reference" / "economics.yaml"


def crf(r, n):
    return r / (1 - (1 + r) ** -n)


def test_gb200_nvl72_default_rate_by_hand():
    """$3.0M per rack / 72 GPUs at 13.5% over 5 years; 150 kW per rack / 72 x PUE 1.54 at $0.0826/kWh;
    colocation $194.95 per kW-month x 2.0833 kW over 730.5 h."""
    rate = tco("gb200-nvl72", values={}, defaults=True)
    watts = 1.2e6 / 8 / 72
    capital = 41_666.67 * crf(0.135, 5) / 8766
    power = watts * 1.54 * 0.0826 / 1000
    hosting = 194.95 * watts / 1000 / 730.5
    assert rate.capital_usd_per_chip_hour == pytest.approx(capital, rel=1e-6)
    assert rate.power_usd_per_chip_hour == pytest.approx(power, rel=1e-5)
    assert rate.hosting_usd_per_chip_hour == pytest.approx(hosting, rel=1e-5)
    assert rate.usd_per_chip_hour == pytest.approx(2.1889, abs=1e-4)
    assert "gb200_nvl72_rack_price" in rate.inputs.source and "catalogue system power" in rate.inputs.watts_source


def test_given_inputs_override_the_defaults():
    rate = tco("hgx-h100", values={"pue": 1.1, "usd_per_kwh": 0.05}, defaults=True)
    assert (rate.inputs.pue, rate.inputs.usd_per_kwh, rate.inputs.chip_capex_usd) == (1.1, 0.05, 270_000 / 8)
    assert "pue" not in rate.inputs.defaults_used and "chip_capex_usd" in rate.inputs.defaults_used


def test_rent_and_missing_defaults():
    price, rent = chip_hour_price("hgx-h100", default="rent")
    assert price == 2.95 and rent.accelerator == "h100-sxm"
    assert chip_hour_price("gb200-nvl72", default="rent") == (None, None)      # no published GB200 rent
    assert chip_hour_price("tpu-v5e-256", default="tco") == (None, None)       # no capex or power figure


def test_facility_power_is_system_power_times_pue():
    """hgx-h100: DGX H100 10.2 kW / 8 = 1,275 W per GPU (hosts, NICs, switches) x PUE 1.54 = 1,963.5 W,
    2.805x the 700 W TDP the old figure divided by."""
    s = get_system("hgx-h100")
    facility, tdp = power_for(s), power_for(s, basis="tdp")
    assert (facility.kind, facility.watts_per_chip) == ("facility", pytest.approx(1275 * 1.54, rel=1e-12))
    assert (tdp.kind, tdp.watts_per_chip) == ("tdp", 700.0)
    assert tdp.tokens_per_s_per_mw(1000.0) / facility.tokens_per_s_per_mw(1000.0) == pytest.approx(2.805, rel=1e-12)
    mi = power_for(get_system("mi300x-8"))           # no system power catalogued: TDP x PUE, said so
    assert mi.watts_per_chip == pytest.approx(mi.watts_per_chip and get_system("mi300x-8").accelerator.power_w * 1.54)
    assert "hosts and network left out" in mi.label


def test_loader_is_strict():
    base = ('[common.pue]\nvalue = 1.5\nid = "x"\nsource = "s"\nas_of = "2025"\nprimary = false\n')
    with pytest.raises(CatalogError, match="missing required key 'amortisation_years'"):
        parse_defaults(base)
    full = "".join(base.replace("pue", k) for k in ("amortisation_years", "cost_of_capital", "pue", "usd_per_kwh",
                                                      "hosting_usd_per_kw_month"))
    with pytest.raises(CatalogError, match="did you mean 'source'"):
        parse_defaults(full + '[rent.h100-sxm]\nvalue = 1\nid = "x"\nsorce = "s"\nas_of = "x"\nprimary = true\n')
    with pytest.raises(CatalogError, match="unknown accelerator 'h100'"):
        parse_defaults(full + '[rent.h100]\nvalue = 1\nid = "x"\nsource = "s"\nas_of = "x"\nprimary = true\n',
                       accelerators=("h100-sxm",))


@pytest.mark.skipif(not ECONOMICS.exists(), reason="../shared/reference/economics.yaml absent (fresh clone)")
def test_defaults_match_economics_yaml():
    """Each default names the economics.yaml entry it is copied from; the copied figures match it."""
    yaml = pytest.importorskip("yaml")
    ref = {e["id"]: e for section in yaml.safe_load(ECONOMICS.read_text()).values() if isinstance(section, list)
           for e in section if isinstance(e, dict)}
    v = default_tco_values(get_system("gb200-nvl72"))
    assert v["chip_capex_usd"] == pytest.approx(ref["gb200_nvl72_rack_price"]["value"] / 72, rel=1e-6)
    assert v["watts_per_chip"] == pytest.approx(ref["gb200_superpod_su_power"]["value"] * 1e6 / 8 / 72, rel=1e-6)
    assert v["pue"] == ref["pue_uptime_2025"]["value"]
    assert v["usd_per_kwh"] == ref["electricity_us_industrial_epoch"]["value"][2025]
    assert v["amortisation_years"] == ref["server_lifetime_epoch"]["value"]
    assert v["cost_of_capital"] == pytest.approx(sum(ref["cost_of_capital_gpu_financing"]["value"]) / 2)
    h100 = default_tco_values(get_system("hgx-h100"))
    assert h100["chip_capex_usd"] == ref["dgx_h100_system_price"]["value"] / 8
    assert h100["watts_per_chip"] == ref["dgx_h100_system_power"]["value"] * 1000 / 8
    assert ref["h100_on_demand_index_aimultiple"]["value"] == chip_hour_price("hgx-h100", default="rent")[0]


def test_cost_prices_by_the_defaults_with_no_price_flag():
    """The issue's done-when: `cost --model deepseek-v3 --system gb200-nvl72` prices with no price flag."""
    d = run_json("cost", "--model", "deepseek-v3", "--system", "gb200-nvl72", "--mode", "ideal")
    assert d["price_source"] == "tco_defaults"
    rate = tco("gb200-nvl72", values={}, defaults=True)
    assert d["price_per_chip_hour"] == pytest.approx(rate.usd_per_chip_hour, rel=1e-12)
    assert d["power_basis"] == "facility" and d["power"]["watts_per_chip"] == pytest.approx(1.2e6 / 8 / 72 * 1.54)
    tdp = run_json("cost", "--model", "deepseek-v3", "--system", "gb200-nvl72", "--mode", "ideal",
                   "--power-basis", "tdp")
    assert tdp["power_basis"] == "tdp" and tdp["tokens_per_s_per_mw"] == pytest.approx(
        d["tokens_per_s_per_mw"] * 1.2e6 / 8 / 72 * 1.54 / 1200, rel=1e-9)
    rent = run_json("cost", "--system", "hgx-h100", "-m", "llama-3.1-70b", "--mode", "ideal", "--price-basis", "rent")
    assert (rent["price_source"], rent["price_per_chip_hour"]) == ("rent_index", 2.95)
    proc = run("cost", "--system", "gb200-nvl72", "--price-basis", "rent")
    assert proc.returncode == 2 and "price_per_chip_hour" in proc.stderr.replace("-", "_")
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
