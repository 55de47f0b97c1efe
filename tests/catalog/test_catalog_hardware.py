"""The hardware catalogue: every entry loads and is sourced; hand-checked values; strict loading."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from catalog_text import GOOD_ACCELERATOR

from llmecon.catalog import hardware as cat
from llmecon.errors import CatalogError, SpecError
from llmecon.spec.hardware import Link

REQUIRED_ACCELERATORS = {"a100-80gb", "h100-sxm", "h200", "b200", "b300", "gb200", "gb300", "mi300x", "mi355x",
                         "tpu-v4", "tpu-v5e", "tpu-v5p", "tpu-v6e", "tpu-ironwood", "rubin"}
REQUIRED_SYSTEMS = {"a100-80gb", "hgx-a100", "h100-sxm", "h200", "b200", "gb200", "hgx-h100", "hgx-h200",
                    "hgx-b200", "gb200-nvl72", "gb300-nvl72", "tpu-v5p-64", "tpu-v6e-256", "tpu-v4-64"}



def _chips(text: str = GOOD_ACCELERATOR):
    return cat.load_accelerators(text, "test.toml")


def _system(extra: str = "", accelerator: str = "chip", chips: int = 1) -> str:
    return f"""
[box]
accelerator = "{accelerator}"
chips = {chips}
description = "test system"
source = "hand-written test entry"
as_of = "2024-01-01"
{extra}
"""


# --- every entry loads and is sourced -------------------------------------------------------

def test_every_accelerator_loads_with_source_and_date():
    chips = cat.accelerators()
    assert REQUIRED_ACCELERATORS <= set(chips)
    for name, chip in chips.items():
        assert chip.name == name and chip.source and chip.vendor
        datetime.date.fromisoformat(chip.as_of)
        assert chip.status in cat.STATUSES
        assert set(chip.peak_flops_per_s) <= set(cat.PEAK_DTYPES)


def test_every_system_loads_with_source_date_and_sourced_links():
    systems = cat.systems()
    assert REQUIRED_SYSTEMS <= set(systems)
    for name, system in systems.items():
        assert system.name == name and system.source and system.description
        datetime.date.fromisoformat(system.as_of)
        assert system.accelerator is cat.get_accelerator(system.accelerator.name)
        for link in (system.scale_up, system.scale_out):
            if link is not None:
                assert link.source and link.latency_s > 0
        if system.chips == 1:
            assert system.scale_up is None


def test_latencies_are_per_operation_floors_and_unmeasured_ones_say_so():
    """Every link's latency is its tier's per-operation floor (systems.toml header: 2 us on scale-up,
    13 us on scale-out, below every measured operation). Scale-up tiers measured: HGX H100/H200/B200,
    GB200/GB300 (aiconfigurator) and HGX A100 (vidur NCCL); scale-out: the H100 and A100 DGX
    clusters (vidur). Every other link must say its floor is assumed."""
    measured = {"scale_up": {"hgx-h100", "hgx-h200", "hgx-b200", "gb200-nvl72", "gb300-nvl72", "hgx-a100"},
                "scale_out": {"h100-sxm", "hgx-h100", "a100-80gb", "hgx-a100"}}
    for name, system in cat.systems().items():
        for tier, floor in (("scale_up", 2e-6), ("scale_out", 13e-6)):
            link = getattr(system, tier)
            if link is None:
                continue
            assert link.latency_s == pytest.approx(floor, rel=1e-12) and link.step_latency_s == 0.0, name
            assert "per-operation floor" in link.source, name
            assert ("assumed: no measurement on this tier" in link.source) == (name not in measured[tier]), name


def test_registry_returns_a_copy():
    cat.accelerators().clear()
    assert "h100-sxm" in cat.accelerators()


# --- hand-checked values ---------------------------------------------------------------------

def test_h100_ratio_and_drain_time():
    h100 = cat.get_accelerator("h100-sxm")
    assert h100.flops_per_byte("bf16") == pytest.approx(295.2, rel=0.005)  # 989e12 / 3.35e12
    assert h100.hbm_drain_s == pytest.approx(25.53e-3, rel=0.001)          # 81,559 MiB exposed / 3.35e12
    assert h100.hbm_datasheet_bytes == 80e9 and h100.hbm_basis == "device"
    assert h100.peak("fp8") == 1979e12                                      # dense, not the 2x sparse figure


def test_domain_memory_totals():
    assert cat.get_system("hgx-h100").hbm_bytes == 8 * 81_559 * 2**20         # 8 x 81,559 MiB exposed (not 640 GB)
    assert cat.get_system("gb200-nvl72").hbm_bytes == pytest.approx(13.39e12, rel=0.01)  # 72 x 186 GB
    assert cat.get_system("gb300-nvl72").hbm_bytes == pytest.approx(20.7e12, rel=0.01)   # 72 x 288 GB


def test_scale_out_ratios():
    """SPEC D15: DGX H100 450/50 = 9, GB200 NVL72 900/50 = 18, GB300 NVL72 900/100 = 9."""
    assert cat.get_system("hgx-h100").scale_out_ratio == 9
    assert cat.get_system("gb200-nvl72").scale_out_ratio == 18
    assert cat.get_system("gb300-nvl72").scale_out_ratio == 9


def test_link_unit_conversions_give_ratio_nine():
    nvlink = Link.from_bidirectional(name="nvlink4", bidirectional_bytes_per_s=900e9, latency_s=0.0)
    nic = Link.from_bits_per_s(name="cx7", bits_per_s=400e9, latency_s=0.0)
    assert nvlink.bandwidth_bytes_per_s / nic.bandwidth_bytes_per_s == 9


def test_rubin_has_no_bf16_peak():
    rubin = cat.get_accelerator("rubin")
    with pytest.raises(SpecError, match="bf16"):
        rubin.peak("bf16")
    assert rubin.peak("fp4") == 35e15


def test_a100_fp8_falls_back_to_bf16():
    a100 = cat.get_accelerator("a100-80gb")
    assert a100.compute_dtype("fp8") == "bf16"
    assert a100.peak("fp8") == 312e12


def test_gib_where_the_source_says_gib():
    assert cat.get_accelerator("tpu-v5p").hbm_bytes == 95 * 2**30


# --- strict loading of malformed text ----------------------------------------------------------

def test_unknown_key_suggests_the_right_one():
    with pytest.raises(CatalogError, match="did you mean 'hbm_capacity'"):
        _chips(GOOD_ACCELERATOR.replace("hbm_capacity", "hbm_capacty"))


def test_missing_key():
    with pytest.raises(CatalogError, match="missing required key 'as_of'"):
        _chips(GOOD_ACCELERATOR.replace('as_of = "2024-01-01"', ""))


def test_bad_unit_names_the_field():
    with pytest.raises(CatalogError, match=r"test.toml \[chip\] hbm_capacity"):
        _chips(GOOD_ACCELERATOR.replace('"80 GB"', '"80 GB/s"'))


def test_unknown_peak_dtype_and_bad_date_and_status():
    with pytest.raises(CatalogError, match="did you mean 'bf16'"):
        _chips(GOOD_ACCELERATOR.replace("{ bf16 =", "{ bf61 ="))
    with pytest.raises(CatalogError, match="as_of"):
        _chips(GOOD_ACCELERATOR.replace("2024-01-01", "2024-13-01"))
    with pytest.raises(CatalogError, match="status"):
        _chips(GOOD_ACCELERATOR.replace('"datasheet"', '"rumour"'))


def test_toml_syntax_error_gives_location():
    with pytest.raises(CatalogError, match="line"):
        _chips(GOOD_ACCELERATOR.replace('vendor = "acme"', 'vendor = "acme'))


def test_unknown_accelerator_in_system():
    with pytest.raises(CatalogError, match="did you mean 'chip'"):
        cat.load_systems(_system(accelerator="chipp"), _chips(), "test.toml")


def test_domain_without_scale_up_and_bad_link():
    with pytest.raises(CatalogError, match="scale_up"):
        cat.load_systems(_system(chips=8), _chips(), "test.toml")
    bad_link = '[box.scale_out]\nbandwidth = "50 GB"\nlatency = "10 us"\nsource = "x"\n'
    with pytest.raises(CatalogError, match=r"scale_out bandwidth"):
        cat.load_systems(_system(bad_link), _chips(), "test.toml")


def test_system_link_parses_bits_and_microseconds():
    link = '[box.scale_out]\nbandwidth = "400 Gb/s"\nlatency = "19.1 us"\nsource = "x"\n'
    box = cat.load_systems(_system(link), _chips(), "test.toml")["box"]
    assert box.scale_out.bandwidth_bytes_per_s == 50e9
    assert box.scale_out.latency_s == pytest.approx(19.1e-6, rel=1e-12)
    assert box.scale_out.name == "box scale_out"


def test_unknown_system_name_suggests():
    with pytest.raises(CatalogError, match="did you mean 'hgx-h100'"):
        cat.get_system("hgx-h10")


@given(gb=st.floats(min_value=0.001, max_value=1e6), tbps=st.floats(min_value=0.001, max_value=1e3))
def test_capacity_and_bandwidth_round_trip(gb, tbps):
    text = GOOD_ACCELERATOR.replace('"80 GB"', f'"{gb!r} GB"').replace('"1 TB/s"', f'"{tbps!r} TB/s"')
    chip = _chips(text)["chip"]
    assert chip.hbm_bytes == pytest.approx(gb * 1e9, rel=1e-12)
    assert chip.hbm_drain_s == pytest.approx(gb * 1e9 / (tbps * 1e12), rel=1e-12)


# --- cross-check against the gathered reference, when ../shared is present ---------------------

REFERENCE = Path(__file__).resolve().parents[3] / "shared" / "reference" / "hardware.yaml"


@pytest.mark.skipif(not REFERENCE.exists(), reason="../shared/reference/hardware.yaml absent (fresh clone)")
def test_catalogue_matches_reference_bf16_peaks_and_bandwidth():
    yaml = pytest.importorskip("yaml")
    ref = yaml.safe_load(REFERENCE.read_text())
    pairs = {"a100-80gb": ref["nvidia"]["a100_sxm_80gb"], "h100-sxm": ref["nvidia"]["h100_sxm"],
             "h200": ref["nvidia"]["h200_sxm"], "b200": ref["nvidia"]["b200_sxm"],
             "b300": ref["nvidia"]["b300_sxm"], "gb200": ref["nvidia"]["gb200"], "gb300": ref["nvidia"]["gb300"],
             "mi300x": ref["amd"]["mi300x"], "mi355x": ref["amd"]["mi355x"]}
    for name, row in pairs.items():
        chip = cat.get_accelerator(name)
        assert chip.peak("bf16") == pytest.approx(row["bf16_dense"] * 1e12, rel=1e-9), name
        assert chip.hbm_bandwidth_bytes_per_s == pytest.approx(row["hbm_tbps"] * 1e12, rel=1e-9), name
    for name, key in {"tpu-v5e": "v5e", "tpu-v5p": "v5p", "tpu-v6e": "v6e", "tpu-v4": "v4"}.items():
        chip, row = cat.get_accelerator(name), ref["google_tpu"][key]
        assert chip.peak("bf16") == pytest.approx(row["bf16"] * 1e12, rel=1e-9), name
        assert chip.hbm_bandwidth_bytes_per_s == pytest.approx(row["hbm_GBps"] * 1e9, rel=1e-9), name


def test_hbm_exposed_needs_its_source():
    """Issue 35: the capacity a device exposes (nvidia-smi memory.total, e.g. 81,559 MiB on an H100 SXM
    80GB) can replace the nominal figure, with its source; one without the other is an error."""
    base = """
[chip]
vendor = "acme"
peak_flops = { bf16 = "1 PFLOP/s" }
hbm_capacity = "80 GB"
{extra}
hbm_bandwidth = "1 TB/s"
status = "datasheet"
source = "test"
as_of = "2024-01-01"
"""
    chip = cat.load_accelerators(base.replace("{extra}", 'hbm_exposed = "81559 MiB"\nhbm_exposed_source = "smi"'))
    assert chip["chip"].hbm_bytes == 81559 * 2**20 and chip["chip"].hbm_nominal_bytes == 80e9
    assert chip["chip"].hbm_basis == "device"
    assert cat.load_accelerators(base.replace("{extra}", ""))["chip"].hbm_basis == "nominal"
    with pytest.raises(CatalogError, match="hbm_exposed_source"):
        cat.load_accelerators(base.replace("{extra}", 'hbm_exposed = "81559 MiB"'))
    with pytest.raises(CatalogError, match="did you mean 'hbm_exposed'"):
        cat.load_accelerators(base.replace("{extra}", 'hbm_exposd = "81559 MiB"'))
