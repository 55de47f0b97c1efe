"""Review fixes of the TCO front-ends, run as a user runs them: bounds on the flags, a value missing
everywhere named by its flag and key, ``context --tco`` and ``plan --frontier --tco`` carrying the rate,
the power row's W -> kW, ``notes`` echoed, and an empty entry in a ``--tco`` list."""

from __future__ import annotations

import pytest
from cli_run import invoke, invoke_fails as _fails, invoke_json as _json

from tco_placeholders import SITE_TOML, TOTAL  # placeholders, not facts (docs/tco.md)

SITE = SITE_TOML.replace("as_of = 2026-11-26\n", "as_of = 2026-11-26\nnotes = \"placeholder figures, excl. VAT\"\n")
FLAGS = ("--chip-capex-usd", "1", "--system-capex-usd", "0", "--amortisation-years", "5", "--cost-of-capital", "0",
         "--pue", "1", "--usd-per-kwh", "0")


@pytest.fixture
def site(tmp_path):
    p = tmp_path / "site.toml"
    p.write_text(SITE)
    return str(p)


@pytest.mark.parametrize("flag,value", [("--amortisation-years", "1e-300"), ("--amortisation-years", "1000"),
                                        ("--pue", "0.5"), ("--pue", "50"), ("--usd-per-kwh", "1e4"),
                                        ("--watts-per-chip", "1e9")])
def test_flags_are_bounded(site, flag, value):
    line = _fails("tco", "--system", "hgx-h100", "--tco", site, flag, value)
    assert line.startswith(f"error: {flag}:") and "must be in" in line


def test_missing_everywhere_names_the_flag_and_key(site, tmp_path):
    line = _fails("tco", "--system", "hgx-h100", *FLAGS, "--hosting-usd-per-rack-month", "1000")
    assert line.startswith("error: --chips-per-rack") and "chips_per_rack" in line and "TCO file" not in line
    # the file has a per-chip price; a per-rack flag replaces it and still needs its chips per rack
    p = tmp_path / "per_chip.toml"
    p.write_text(SITE.replace("hosting_usd_per_rack_month = 15000\nchips_per_rack = 32\n",
                              "hosting_usd_per_chip_month = 300\n"))
    line = _fails("tco", "--system", "hgx-h100", "--tco", str(p), "--hosting-usd-per-rack-month", "1000")
    assert line.startswith("error: --chips-per-rack") and "chips_per_rack" in line and "TCO file" not in line
    # a bad value that came from the file is the file's error
    p.write_text(SITE.replace("chips_per_rack = 32", "chips_per_rack = 0"))
    line = _fails("tco", "--system", "hgx-h100", "--tco", str(p))
    assert str(p) in line and "chips_per_rack" in line


def test_resolver_locates_a_missing_value(tmp_path):
    from llmecon.errors import CatalogError, SpecError
    from llmecon.resolve import tco

    values = dict(chip_capex_usd=1.0, system_capex_usd=0.0, amortisation_years=5.0, cost_of_capital=0.0, pue=1.0,
                  usd_per_kwh=0.0, hosting_usd_per_rack_month=1000.0)
    with pytest.raises(SpecError) as e:
        tco("hgx-h100", values=values)
    assert e.value.field == "chips_per_rack"
    assert "{chips_per_rack}" in e.value.fix and "key chips_per_rack" in e.value.fix
    # with only a file (sweep --tco), the file's error names the key and no flag
    p = tmp_path / "site.toml"
    p.write_text("\n".join(f"{k} = {v}" for k, v in values.items()))
    with pytest.raises(CatalogError) as e:
        tco("hgx-h100", path=str(p))
    assert e.value.field is None and str(p) in str(e.value) and "add chips_per_rack = <value> (72" in str(e.value)
    assert "{" not in e.value.render(lambda n: "{" + n + "}")


def test_context_carries_the_tco(site):
    args = ("context", "-m", "llama-3.1-8b", "-s", "hgx-h100")
    d = _json(*args, "--tco", site)
    assert d["price_per_chip_hour"] == pytest.approx(TOTAL, rel=1e-12)
    assert d["price_source"] == "tco" and d["tco"]["usd_per_chip_hour"] == pytest.approx(TOTAL, rel=1e-12)
    r = _json(*args, "--price-per-chip-hour", "2")
    assert r["price_source"] == "price_per_chip_hour" and r["tco"] is None
    u = _json(*args)   # no price given: the catalogue's sourced TCO defaults (issue 35)
    assert u["price_source"] == "tco_defaults" and u["tco"]["defaults_used"]
    code, out = invoke([*args, "--tco", site])
    assert code == 0, out
    assert "from TCO (capital" in out


def test_plan_frontier_carries_the_tco(site):
    args = ("plan", "-m", "llama-3.1-8b", "--systems", "hgx-h100", "--max-chips", "8", "--frontier")
    d = _json(*args, "--tco", site)
    assert d["price_source"] == "tco" and d["tco"]["hgx-h100"]["usd_per_chip_hour"] == pytest.approx(TOTAL, rel=1e-12)
    r = _json(*args, "--price-per-chip-hour", "2")
    assert r["price_source"] == "price_per_chip_hour" and r["tco"] is None
    code, out = invoke([*args, "--tco", site])
    assert code == 0, out
    assert "hgx-h100 TCO: $" in out


def test_tco_text_power_row_and_notes(site):
    code, out = invoke(["tco", "--system", "hgx-h100", "--tco", site])
    assert code == 0, out
    assert "PUE 1.3 / 1000" in out and "x PUE / 1000" in out
    assert "placeholder figures, excl. VAT" in out
    d = _json("tco", "--system", "hgx-h100", "--tco", site)
    assert d["inputs"]["notes"] == "placeholder figures, excl. VAT"


def test_empty_entry_in_a_tco_list(site):
    for text in (f"{site},", f",{site}", f"{site}, ,{site}"):
        line = _fails("plan", "-m", "llama-3.1-8b", "--systems", "hgx-h100,gb200-nvl72", "--tco", text)
        assert line.startswith("error: --tco") and "empty" in line and "folder" not in line
