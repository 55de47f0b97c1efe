"""Memory tiers below HBM and reference storage devices (SPEC C12): published drain times, the
catalogue's ordering property, strict loading of malformed tiers, and striped device tiers.

Drain time = capacity / bandwidth: a tier's break-even against itself; between two tiers Gray's
five-minute rule also needs their prices (tests/econ/test_gray.py). SPEC C12 (shared/SPEC.md):
"HBM ~20 ms, DDR ~1-3 s, NVMe flash ~10-150 min, HDD ~1 day";
SPEC G: flash drains in 10-150 min and HDD in ~1 day (not 1 min / 1 h). Device figures come from
shared/reference/memory_tiers.yaml, copied into src/llmecon/catalog/{systems,storage}.toml.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from catalog_text import GOOD_ACCELERATOR

from llmecon.catalog import hardware as cat
from llmecon.errors import CatalogError, SpecError
from llmecon.spec.hardware import TIER_KINDS, MemoryTier

CASES_FILE = Path(__file__).parents[1] / "published" / "lecture_cases.yaml"
CASES = {c["name"]: c for c in yaml.safe_load(CASES_FILE.read_text(encoding="utf-8"))["acceptance_cases"]}

MINUTE, HOUR, DAY = 60.0, 3600.0, 86400.0


SYSTEM = """
[box]
accelerator = "chip"
chips = 1
description = "test system"
source = "hand-written test entry"
as_of = "2024-01-01"
"""

DDR = """
[[box.tiers]]
name = "host DDR"
kind = "host_dram"
capacity = "1 TB"
bandwidth = "500 GB/s"
bandwidth_basis = "peak"
status = "derived"
source = "hand-written test entry"
"""

DISK = """
[[box.tiers]]
name = "disk"
kind = "hdd"
capacity = "20 TB"
bandwidth = "250 MB/s"
bandwidth_basis = "sustained"
status = "secondary"
source = "hand-written test entry"
"""

DRIVE = """
[drive]
name = "Acme SSD 10 TB"
kind = "flash"
capacity = "10 TB"
bandwidth = "5000 MB/s"
bandwidth_basis = "peak"
status = "secondary"
source = "hand-written test entry"
"""


def _load(tiers: str) -> dict:
    return cat.load_systems(SYSTEM + tiers, cat.load_accelerators(GOOD_ACCELERATOR, "chips.toml"), "test.toml")


# --- published drain times (SPEC C12) ---------------------------------------------------------

def test_hbm_drains_in_about_20_ms():
    """SPEC A4/C12: H100 80 GB / 3.35 TB/s = 23.9 ms on the datasheet; the 81,559 MiB (85.52e9 B) the
    device exposes drain in 25.53 ms; a domain of 8 drains in the same time."""
    assert cat.get_system("h100-sxm").hbm_tier.drain_s == pytest.approx(25.53e-3, rel=0.001)
    assert cat.get_system("hgx-h100").hbm_tier.drain_s == pytest.approx(25.53e-3, rel=0.001)
    assert cat.get_accelerator("h100-sxm").hbm_datasheet_bytes / 3.35e12 == pytest.approx(23.9e-3, rel=0.01)


def test_hgx_h100_hbm_tier_is_eight_chips():
    hbm = cat.get_system("hgx-h100").hbm_tier
    assert hbm.kind == "hbm"
    assert hbm.capacity_bytes == 8 * 81_559 * 2**20  # exposed, not 8 x 80 GB
    assert hbm.bandwidth_bytes_per_s == 8 * 3.35e12


def test_dgx_h100_ddr_reproduces_the_lecture_case():
    """lecture_cases drain_ddr_dgx_h100: 2 TB / 614.4 GB/s = 3.255 s, within the case's tolerance."""
    case = CASES["drain_ddr_dgx_h100"]
    ddr = next(t for t in cat.get_system("hgx-h100").tiers if t.kind == "host_dram")
    assert ddr.capacity_bytes == case["inputs"]["capacity"]
    assert ddr.bandwidth_bytes_per_s == case["inputs"]["bandwidth"]
    assert ddr.drain_s == pytest.approx(case["expected"]["seconds"], rel=case["tolerance"]["rel"])
    assert ddr.bandwidth_basis == "peak" and ddr.status == "derived"
    assert "563.2 GB/s" in ddr.notes and "PCIe Gen5 x16" in ddr.notes   # the 2-DPC alternative, the link


def test_dgx_nvme_has_no_bandwidth_and_says_why():
    nvme = next(t for t in cat.get_system("hgx-h100").tiers if t.kind == "local_nvme")
    assert nvme.capacity_bytes == pytest.approx(8 * 3.84e12, rel=1e-12)
    assert nvme.bandwidth_bytes_per_s is None and nvme.drain_s is None
    assert "drive model" in nvme.notes


def test_cpu_memory_drains_in_about_a_second():
    """SPEC C12 "DDR ~1-3 s": GB200 NVL72 17 TB / 18.4 TB/s = 0.92 s, GB300 17 / 14 = 1.21 s,
    Vera Rubin 54 TB / 43.2 TB/s = 1.25 s (memory_tiers.yaml)."""
    expected = {"gb200-nvl72": 17 / 18.4, "gb300-nvl72": 17 / 14, "vera-rubin-nvl72": 54 / 43.2,
                "gb200": 480 / 512, "hgx-h100": 2000 / 614.4, "hgx-h200": 2000 / 614.4}
    for name, seconds in expected.items():
        (tier,) = [t for t in cat.get_system(name).tiers if t.kind in ("host_dram", "cpu_lpddr")]
        assert tier.drain_s == pytest.approx(seconds, rel=1e-9), name
        assert 0.5 <= tier.drain_s <= 5.0, name


def test_rubin_rack_is_36_vera_cpus():
    """memory_tiers.yaml vera_cpu_lpddr5x: 1.5 TB and 1.2 TB/s per Vera, 36 per rack."""
    (vera,) = cat.get_system("vera-rubin-nvl72").tiers
    assert vera.capacity_bytes == pytest.approx(36 * 1.5e12, rel=1e-12)
    assert vera.bandwidth_bytes_per_s == pytest.approx(36 * 1.2e12, rel=1e-12)


def test_flash_drains_in_minutes_to_hours():
    """SPEC C12/G "NVMe flash ~10-150 min": PM1743 15.36 TB / 14 GB/s = 18.3 min; D5-P5336 61.44 TB
    / 7 GB/s = 146 min. (The 122.88 TB D5-P5336 takes 4.6 h: capacity outgrew its PCIe 4.0 link.)"""
    pm1743 = cat.get_storage_device("pm1743")
    assert pm1743.drain_s == pytest.approx(15.36e12 / 14e9, rel=1e-12)
    assert pm1743.drain_s / MINUTE == pytest.approx(18.3, rel=0.005)
    p5336 = cat.get_storage_device("d5-p5336-61tb")
    assert p5336.drain_s / MINUTE == pytest.approx(146.3, rel=0.005)
    for tier in (pm1743, p5336):
        assert 10 * MINUTE <= tier.drain_s <= 150 * MINUTE
    assert cat.get_storage_device("d5-p5336-122tb").drain_s / HOUR == pytest.approx(4.61, rel=0.005)


def test_hdd_drains_in_about_a_day():
    """SPEC C12/G "HDD ~1 day": Exos X24 24 TB / 285 MB/s = 23.4 h; Exos M 30 TB / 275 MB/s = 30.3 h."""
    x24 = cat.get_storage_device("exos-x24")
    assert x24.drain_s / HOUR == pytest.approx(23.39, rel=0.005)
    exos_m = cat.get_storage_device("exos-m-30tb")
    assert exos_m.bandwidth_bytes_per_s == 275e6 and "292 MB/s" in exos_m.notes   # spec kept, review noted
    for tier in (x24, exos_m):
        assert tier.kind == "hdd" and tier.bandwidth_basis == "sustained"
        assert 0.5 * DAY <= tier.drain_s <= 2 * DAY


# --- catalogue-wide properties ----------------------------------------------------------------

def test_every_system_lists_tiers_fastest_draining_first():
    for name, system in cat.systems().items():
        tiers = system.memory_tiers
        assert tiers[0].kind == "hbm" and all(t.kind != "hbm" for t in tiers[1:]), name
        known = [t.drain_s for t in tiers if t.drain_s is not None]
        assert known == sorted(known), name


def test_every_tier_and_device_is_sourced_with_a_status():
    tiers = [t for s in cat.systems().values() for t in s.tiers] + list(cat.storage_devices().values())
    assert len(tiers) >= 12          # 7 system tiers + 5 devices
    for tier in tiers:
        assert tier.source and tier.status in cat.TIER_STATUSES, tier.name
        assert tier.kind in TIER_KINDS and tier.kind != "hbm"
        assert tier.bandwidth_bytes_per_s is not None or tier.notes.startswith("Bandwidth unknown:")


def test_tiers_only_where_the_reference_has_figures():
    with_tiers = {name for name, s in cat.systems().items() if s.tiers}
    assert with_tiers == {"hgx-h100", "hgx-h200", "gb200", "gb200-nvl72", "gb300-nvl72", "vera-rubin-nvl72"}


def test_storage_devices_is_a_copy():
    cat.storage_devices().clear()
    assert "pm1743" in cat.storage_devices()


# --- device_tier ------------------------------------------------------------------------------

def test_device_tier_scales_capacity_and_bandwidth_by_count():
    tier = cat.device_tier("pm1743", 8)
    assert tier.name == "8 x pm1743" and tier.kind == "flash"
    assert tier.capacity_bytes == 122.88e12          # 8 x 15.36 TB
    assert tier.bandwidth_bytes_per_s == 112e9       # 8 x 14,000 MB/s
    assert tier.drain_s == pytest.approx(15.36e12 / 14e9, rel=1e-12)   # one drive's drain time
    assert tier.status == "derived" and "linear" in tier.notes and "upper bound" in tier.notes
    one = cat.device_tier("exos-x24", 1)
    assert one.capacity_bytes == 24e12 and one.bandwidth_bytes_per_s == 285e6 and one.status == "secondary"


def test_device_tier_rejects_bad_count_and_name():
    for count in (0, -1, 2.0, True):
        with pytest.raises(SpecError, match="count"):
            cat.device_tier("pm1743", count)
    with pytest.raises(CatalogError, match="did you mean 'pm1743'"):
        cat.device_tier("pm1734", 2)
    with pytest.raises(CatalogError, match="did you mean 'exos-x24'"):
        cat.get_storage_device("exos-x42")


# --- strict loading: systems.toml tiers --------------------------------------------------------

def test_good_tiers_load_in_order():
    box = _load(DDR + DISK)["box"]
    assert [t.name for t in box.memory_tiers] == ["HBM", "host DDR", "disk"]
    assert box.tiers[0].drain_s == 2.0 and box.tiers[1].drain_s == 80_000.0


def test_unknown_tier_key_suggests():
    with pytest.raises(CatalogError, match=r"test.toml \[box\] tiers\[0\] 'host DDR'.*did you mean 'capacity'"):
        _load(DDR.replace("capacity =", "capacty ="))


def test_missing_capacity():
    with pytest.raises(CatalogError, match=r"tiers\[0\] 'host DDR': missing required key 'capacity'"):
        _load(DDR.replace('capacity = "1 TB"\n', ""))


def test_bandwidth_missing_needs_a_reason():
    no_bw = DISK.replace('bandwidth = "250 MB/s"\n', "").replace('bandwidth_basis = "sustained"\n', "")
    with pytest.raises(CatalogError, match=r"tiers\[1\] 'disk' bandwidth: missing.*bandwidth_unknown"):
        _load(DDR + no_bw)
    box = _load(DDR + no_bw.replace("[[box.tiers]]", '[[box.tiers]]\nbandwidth_unknown = "drive not named"'))["box"]
    assert box.tiers[1].drain_s is None and box.tiers[1].notes == "Bandwidth unknown: drive not named"


def test_bandwidth_and_reason_together_or_basis_missing():
    with pytest.raises(CatalogError, match="bandwidth_unknown"):
        _load(DDR.replace("[[box.tiers]]", '[[box.tiers]]\nbandwidth_unknown = "x"'))
    with pytest.raises(CatalogError, match="bandwidth_basis"):
        _load(DDR.replace('bandwidth_basis = "peak"\n', ""))
    with pytest.raises(CatalogError, match="bandwidth_basis.*did you mean 'peak'"):
        _load(DDR.replace('bandwidth_basis = "peak"', 'bandwidth_basis = "peek"'))


def test_unknown_kind_and_hbm_kind():
    with pytest.raises(CatalogError, match=r"tiers\[0\] 'host DDR' kind: .*did you mean 'host_dram'"):
        _load(DDR.replace('"host_dram"', '"host_drm"'))
    with pytest.raises(CatalogError, match=r"tiers\[0\] 'host DDR' kind: 'hbm'"):
        _load(DDR.replace('"host_dram"', '"hbm"'))


def test_unknown_status():
    with pytest.raises(CatalogError, match="status.*did you mean 'derived'"):
        _load(DDR.replace('"derived"', '"derivd"'))


def test_unordered_tiers():
    with pytest.raises(CatalogError, match=r"test.toml \[box\] tiers: tiers must be listed fastest-draining first"):
        _load(DISK + DDR)
    slower_than_hbm = DDR.replace('"500 GB/s"', '"500 TB/s"')   # drains in 2 ms, HBM in 80 ms
    with pytest.raises(CatalogError, match="fastest-draining first.*'host DDR'.*'HBM'"):
        _load(slower_than_hbm)


def test_tier_without_bandwidth_may_sit_anywhere_after_hbm():
    unknown = DISK.replace('name = "disk"', 'name = "nvme"').replace('kind = "hdd"', 'kind = "local_nvme"')
    unknown = unknown.replace('bandwidth = "250 MB/s"\nbandwidth_basis = "sustained"', 'bandwidth_unknown = "x"')
    box = _load(unknown + DDR + DISK)["box"]
    assert [t.name for t in box.tiers] == ["nvme", "host DDR", "disk"]


def test_negative_or_bad_capacity_and_bandwidth():
    with pytest.raises(CatalogError, match=r"'host DDR' capacity: must be positive"):
        _load(DDR.replace('"1 TB"', '"-1 TB"'))
    with pytest.raises(CatalogError, match=r"'host DDR' bandwidth: must be positive"):
        _load(DDR.replace('"500 GB/s"', '"0 GB/s"'))
    with pytest.raises(CatalogError, match=r"'host DDR' capacity"):
        _load(DDR.replace('"1 TB"', '"1 TB/s"'))


def test_tiers_must_be_an_array_of_tables_and_names_unique():
    with pytest.raises(CatalogError, match="array of tables"):
        _load('[box.tiers]\nname = "x"\n')
    with pytest.raises(CatalogError, match="appears twice"):
        _load(DDR + DDR)


# --- strict loading: storage.toml --------------------------------------------------------------

def test_storage_loads_and_is_strict():
    drive = cat.load_storage(DRIVE, "s.toml")["drive"]
    assert drive.name == "Acme SSD 10 TB" and drive.drain_s == 2000.0
    with pytest.raises(CatalogError, match=r"s.toml \[drive\].*did you mean 'bandwidth'"):
        cat.load_storage(DRIVE.replace("bandwidth =", "bandwith ="), "s.toml")
    with pytest.raises(CatalogError, match=r"s.toml \[drive\]: missing required key 'capacity'"):
        cat.load_storage(DRIVE.replace('capacity = "10 TB"\n', ""), "s.toml")
    with pytest.raises(CatalogError, match=r"s.toml \[drive\] kind: .*did you mean 'hdd'"):
        cat.load_storage(DRIVE.replace('"flash"', '"hhd"'), "s.toml")
    with pytest.raises(CatalogError, match=r"s.toml \[drive\] kind: 'hbm'"):
        cat.load_storage(DRIVE.replace('"flash"', '"hbm"'), "s.toml")
    with pytest.raises(CatalogError, match=r"s.toml \[drive\] kind: 'host_dram'"):   # memory, not a device
        cat.load_storage(DRIVE.replace('"flash"', '"host_dram"'), "s.toml")
    with pytest.raises(CatalogError, match=r"s.toml \[drive\] capacity: must be positive"):
        cat.load_storage(DRIVE.replace('"10 TB"', '"-10 TB"'), "s.toml")
    with pytest.raises(CatalogError, match=r"s.toml \[drive\] bandwidth: must be positive"):
        cat.load_storage(DRIVE.replace('"5000 MB/s"', '"0 MB/s"'), "s.toml")
    with pytest.raises(CatalogError, match="line"):
        cat.load_storage(DRIVE.replace('kind = "flash"', 'kind = "flash'), "s.toml")


def test_storage_devices_are_single_drives_below_memory():
    for name, drive in cat.storage_devices().items():
        assert isinstance(drive, MemoryTier)
        assert drive.kind in cat.STORAGE_KINDS and drive.bandwidth_bytes_per_s is not None, name


# --- prices (Gray's rule needs them; none is filled from memory) ----------------------------------

PRICED = DRIVE + """price_usd_per_gb = 0.08
amortisation_years = 5
price_source = "hand-written test price"
price_as_of = "2026-01-15"
"""


def test_price_keys_load_as_capex_per_byte():
    """$0.08 per decimal GB over 5 Julian years: usd_per_byte = 8e-11, amortisation 5 x 365.25 x 86400 s,
    holding price 8e-11 / 157,788,000 = 5.0701e-19 $/B-s."""
    drive = cat.load_storage(PRICED, "s.toml")["drive"]
    assert drive.usd_per_byte == pytest.approx(8e-11, rel=1e-12)
    assert drive.amortisation_s == 5 * 365.25 * 86400
    assert drive.holding_usd_per_byte_s == pytest.approx(8e-11 / 157_788_000, rel=1e-12)
    assert (drive.price_source, drive.price_as_of) == ("hand-written test price", "2026-01-15")
    assert drive.usd_per_hour is None


def test_price_keys_are_all_or_nothing_and_strict():
    with pytest.raises(CatalogError, match="missing price_as_of"):
        cat.load_storage(PRICED.replace('price_as_of = "2026-01-15"\n', ""), "s.toml")
    with pytest.raises(CatalogError, match="price_usd_per_gb: expected a positive number"):
        cat.load_storage(PRICED.replace("= 0.08", "= -1"), "s.toml")
    with pytest.raises(CatalogError, match="price_as_of: expected a date"):
        cat.load_storage(PRICED.replace('"2026-01-15"', '"soon"'), "s.toml")
    with pytest.raises(CatalogError, match="not both"):
        cat.load_storage(PRICED + 'price_unknown = "x"\n', "s.toml")
    unknown = cat.load_storage(DRIVE + 'price_unknown = "no source"\n', "s.toml")["drive"]
    assert unknown.holding_usd_per_byte_s is None and unknown.notes.endswith("Price unknown: no source")


def test_every_catalogued_tier_states_its_price_or_why_not():
    """DESIGN §4: a price no source gives is said to be unknown, never guessed. shared/reference/ has no
    $/GB for DRAM, LPDDR, NVMe or HDD, so every catalogued tier carries price_unknown today."""
    tiers = [t for s in cat.systems().values() for t in s.tiers] + list(cat.storage_devices().values())
    assert tiers
    for t in tiers:
        assert (t.usd_per_byte is not None and t.price_source and t.price_as_of) or "Price unknown:" in t.notes, t.name


def test_memory_tier_price_forms():
    """Capex per byte over an amortisation period, which it needs; rent per hour wins when both are given."""
    one = MemoryTier(name="d", kind="flash", capacity_bytes=1e12, bandwidth_bytes_per_s=1e9, usd_per_byte=1e-10,
                     amortisation_s=1e8)
    assert one.holding_usd_per_byte_s == pytest.approx(1e-18, rel=1e-12)
    with pytest.raises(SpecError, match="amortisation_s"):
        MemoryTier(name="d", kind="flash", capacity_bytes=1e12, bandwidth_bytes_per_s=1e9, usd_per_byte=1e-10)
    rent = MemoryTier(name="r", kind="flash", capacity_bytes=2e12, bandwidth_bytes_per_s=1e9, usd_per_hour=7.2,
                      usd_per_byte=1e-10, amortisation_s=1e8)
    assert rent.holding_usd_per_byte_s == pytest.approx(7.2 / 3600 / 2e12, rel=1e-12)  # rent wins
