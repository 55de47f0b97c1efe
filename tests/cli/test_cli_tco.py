"""``llmecon tco`` and ``--tco FILE`` on cost, plan, simulate, sweep and train (issue 22 item 3, issue 24
item 3), run as a user runs them: hand-computed parts, the TCO rate equal to the same rent given by hand,
tokens/s per MW, and bad input exiting 2 with one line naming the option."""

from __future__ import annotations

import pytest
from cli_run import invoke, invoke_fails as _fails, invoke_json as _json

from tco_placeholders import CAPITAL, HOSTING, POWER, SITE_TOML as SITE  # placeholders, not facts
TOTAL = CAPITAL + POWER + HOSTING


@pytest.fixture
def site(tmp_path):
    p = tmp_path / "site.toml"
    p.write_text(SITE)
    return str(p)


def test_tco_parts_hand_computed(site):
    d = _json("tco", "--system", "hgx-h100", "--tco", site)
    parts = d["parts_usd_per_chip_hour"]
    assert parts["capital"] == pytest.approx(CAPITAL, rel=1e-12)
    assert parts["power"] == pytest.approx(POWER, rel=1e-12)
    assert parts["hosting"] == pytest.approx(HOSTING, rel=1e-12)
    assert d["usd_per_chip_hour"] == pytest.approx(TOTAL, rel=1e-12)
    assert d["usd_per_system_hour"] == pytest.approx(8 * TOTAL, rel=1e-12)
    assert d["parts_usd_per_system_hour"]["power"] == pytest.approx(8 * POWER, rel=1e-12)
    assert d["inputs"]["watts_per_chip"] == 700 and "catalogue TDP" in d["inputs"]["watts_source"]
    assert d["inputs"]["as_of"] == "2026-11-26"


def test_flags_override_the_file(site):
    d = _json("tco", "--system", "hgx-h100", "--tco", site, "--pue", "1.5", "--watts-per-chip", "1000",
              "--power-utilization", "0.5")
    assert d["parts_usd_per_chip_hour"]["power"] == pytest.approx(1000 * 0.5 * 1.5 * 0.08 / 1000, rel=1e-12)
    d = _json("tco", "--system", "hgx-h100", "--chip-capex-usd", "1", "--system-capex-usd", "0",
              "--amortisation-years", "1", "--cost-of-capital", "0", "--pue", "1", "--usd-per-kwh", "0",
              "--hosting-usd-per-chip-month", "730.5")
    assert d["usd_per_chip_hour"] == pytest.approx(1 / 8766 + 1.0, rel=1e-12)


def test_tco_text_prints_each_part(site):
    code, out = invoke(["tco", "--system", "hgx-h100", "--tco", site])
    assert code == 0, out
    for word in ("capital", "power", "hosting", "total", "system-hour", f"${TOTAL:,.4f}"):
        assert word in out


def test_missing_inputs_name_the_field(tmp_path):
    line = _fails("tco", "--system", "hgx-h100", "--chip-capex-usd", "1")
    assert "--system-capex-usd" in line and "system_capex_usd" in line
    p = tmp_path / "partial.toml"
    p.write_text("chip_capex_usd = 1\nsystem_capex_usd = 1\namortisation_years = 1\ncost_of_capital = 0\n"
                 "usd_per_kwh = 0.1\nhosting_usd_per_chip_month = 1\n")
    line = _fails("cost", "--mode", "ideal", "-m", "llama-3.1-8b", "-s", "hgx-h100", "--tco", str(p))
    assert "pue" in line and str(p) in line


def test_chip_without_power_needs_watts(site):
    from llmecon.catalog.hardware import systems

    name = next(n for n, s in systems().items() if s.accelerator.power_w is None)
    line = _fails("tco", "--system", name, "--tco", site)
    assert "--watts-per-chip" in line
    d = _json("tco", "--system", name, "--tco", site, "--watts-per-chip", "500")
    assert d["parts_usd_per_chip_hour"]["power"] == pytest.approx(500 * 1.3 * 0.08 / 1000, rel=1e-12)


def test_bad_file_is_one_line(tmp_path):
    p = tmp_path / "typo.toml"
    p.write_text(SITE.replace("pue =", "peu ="))
    line = _fails("tco", "--system", "hgx-h100", "--tco", str(p))
    assert "did you mean 'pue'" in line
    p.write_text(SITE.replace("pue = 1.3", 'pue = "1.3"'))
    assert "pue must be a number" in _fails("tco", "--system", "hgx-h100", "--tco", str(p))
    p.write_text(SITE.replace("pue = 1.3", "pue = 0.9"))
    assert "pue" in _fails("tco", "--system", "hgx-h100", "--tco", str(p))
    assert "--pue" in _fails("tco", "--system", "hgx-h100", "--tco", str(p), "--pue", "0.5")
    assert "no such file" in _fails("tco", "--system", "hgx-h100", "--tco", str(tmp_path / "absent.toml"))
    p.write_text(SITE + "hosting_usd_per_chip_month = 5\n")
    assert "not both" in _fails("tco", "--system", "hgx-h100", "--tco", str(p))


def test_cost_with_tco_equals_the_rent(site):
    """The TCO rate is a price per chip-hour like any other: the same $/Mtok as the rent typed by hand."""
    args = ("cost", "--mode", "ideal", "-m", "llama-3.1-70b", "-s", "hgx-h100", "-L", "4096")
    t = _json(*args, "--tco", site)
    r = _json(*args, "--price-per-chip-hour", repr(TOTAL))
    assert t["price_per_chip_hour"] == pytest.approx(TOTAL, rel=1e-12)
    assert t["output_usd_per_mtok"] == pytest.approx(r["output_usd_per_mtok"], rel=1e-12)
    assert t["input_usd_per_mtok"] == pytest.approx(r["input_usd_per_mtok"], rel=1e-12)
    assert t["price_source"] == "tco" and r["price_source"] == "price_per_chip_hour" and r["tco"] is None
    # tokens/s per MW: output tokens/s per chip over 910 facility W (TCO) or, with a rent, the catalogue's
    # facility power (issue 35: DGX H100 10.2 kW / 8 x PUE 1.54 = 1,963.5 W), or 700 W (TDP, PUE 1) on request
    per_chip = r["output_tokens_per_s_per_chip"]
    assert per_chip == pytest.approx(r["batch"] / (r["decode_step_s"] * r["chips"]), rel=1e-12)
    assert t["tokens_per_s_per_mw"] == pytest.approx(per_chip / 910 * 1e6, rel=1e-12)
    assert r["tokens_per_s_per_mw"] == pytest.approx(per_chip / (1275 * 1.54) * 1e6, rel=1e-12)
    assert r["power_basis"] == "facility" and "facility power" in r["power"]["basis"]
    tdp = _json(*args, "--price-per-chip-hour", repr(TOTAL), "--power-basis", "tdp")
    assert tdp["tokens_per_s_per_mw"] == pytest.approx(per_chip / 700 * 1e6, rel=1e-12)
    assert "IT power at TDP" in tdp["power"]["basis"]


def test_rent_and_tco_together_exit_2(site):
    line = _fails("cost", "--mode", "ideal", "-m", "llama-3.1-8b", "-s", "hgx-h100", "--tco", site,
                  "--price-per-chip-hour", "2")
    assert "--tco" in line and "--price-per-chip-hour" in line
    line = _fails("cost", "--mode", "ideal", "-m", "llama-3.1-8b", "-s",
                  "tpu-v5e-256")   # no sourced TCO default or rent for it
    assert "--tco" in line and "--price-per-chip-hour" in line
    line = _fails("train", "--tco", site, "--price-per-gpu-hour", "2")
    assert "--tco" in line and "--price-per-gpu-hour" in line
    line = _fails("simulate", "-m", "llama-3.1-8b", "-s", "hgx-h100", "--requests", "10", "--tco", site,
                  "--price-per-chip-hour", "2")
    assert "--tco" in line and "--price-per-chip-hour" in line
    line = _fails("plan", "-m", "llama-3.1-8b", "--systems", "hgx-h100", "--tco", site, "--price-per-chip-hour", "2")
    assert "--tco" in line and "--price-per-chip-hour" in line


def test_train_dollars_from_tco(site):
    """Issue 24 item 3: --tokens with --tco gives dollars = GPU-hours x the TCO rate."""
    args = ("train", "--model", "llama-3.1-8b", "--system", "hgx-h100", "--tp", "1", "--dp", "8", "--tokens", "1e12")
    d = _json(*args, "--tco", site)
    assert d["price_per_gpu_hour"] == pytest.approx(TOTAL, rel=1e-12)
    assert d["usd"] == pytest.approx(d["gpu_hours"] * TOTAL, rel=1e-12)
    assert d["tokens_per_s_per_mw"] == pytest.approx(d["tokens_per_s"] / d["gpus"] / 910 * 1e6, rel=1e-12)
    assert d["tco"]["usd_per_chip_hour"] == pytest.approx(TOTAL, rel=1e-12)


def test_plan_with_tco(site, tmp_path):
    args = ("plan", "-m", "llama-3.1-8b", "--systems", "hgx-h100,gb200-nvl72", "--max-chips", "8")
    d = _json(*args, "--tco", site)
    assert d["prices"]["hgx-h100"] == pytest.approx(TOTAL, rel=1e-12)
    assert d["price_source"] == "tco" and set(d["tco"]) == {"hgx-h100", "gb200-nvl72"}
    for p in d["frontier"]:
        w = d["power"][p["system"]]["watts_per_chip"]
        assert p["tokens_per_s_per_mw"] == pytest.approx(p["tokens_per_s_per_chip"] / w * 1e6, rel=1e-12)
    assert d["power"]["gb200-nvl72"]["watts_per_chip"] == pytest.approx(1200 * 1.3, rel=1e-12)
    line = _fails(*args, "--tco", f"{site},{site},{site}")
    assert "--tco" in line and "3 values for 2 systems" in line
    u = _json(*args)   # facility power by default (issue 35): 10.2 kW / 8 x PUE 1.54
    assert u["power"]["hgx-h100"]["watts_per_chip"] == pytest.approx(1275 * 1.54, rel=1e-12)


def test_simulate_with_tco(site):
    args = ("simulate", "-m", "llama-3.1-8b", "-s", "hgx-h100", "--requests", "50")
    t = _json(*args, "--tco", site)
    r = _json(*args, "--price-per-chip-hour", repr(TOTAL))
    assert t["usd_per_mtok"] == pytest.approx(r["usd_per_mtok"], rel=1e-12)
    assert t["tokens_per_s_per_mw"] == pytest.approx(t["tokens_per_s_per_chip"] / 910 * 1e6, rel=1e-12)
    assert r["tokens_per_s_per_mw"] == pytest.approx(t["tokens_per_s_per_chip"] / (1275 * 1.54) * 1e6, rel=1e-12)


SWEEP = """name = "tco"
[analytic]
models = ["llama-3.1-8b"]
systems = ["hgx-h100"]
plans = [{tp = 1}]
batches = [1, 64]
contexts = [1024]
"""


def test_sweep_with_tco(site, tmp_path):
    spec = tmp_path / "s.toml"
    spec.write_text(SWEEP)
    out = tmp_path / "o.parquet"
    code, text = invoke(["sweep", str(spec), "--out", str(out), "--tco", site, "--json"])
    assert code == 0, text
    import pyarrow.parquet as pq

    rows = pq.read_table(out).to_pylist()
    assert len(rows) == 2
    for r in rows:
        assert r["price_per_chip_hour"] == pytest.approx(TOTAL, rel=1e-12)
        assert r["tokens_per_s_per_mw"] == pytest.approx(r["tokens_per_s_per_chip"] / 910 * 1e6, rel=1e-12)
        assert r["usd_per_mtok"] == pytest.approx(TOTAL / 3600 / r["tokens_per_s_per_chip"] * 1e6, rel=1e-9)
    spec.write_text(SWEEP + "prices = [2.0]\n")
    line = _fails("sweep", str(spec), "--out", str(tmp_path / "p.parquet"), "--tco", site)
    assert "--tco" in line and "prices" in line
