"""Issue 20 hardware: every chip people serve on has a system; published figures reproduce;
unpublished peaks are refused naming the fact; block-scaled weight formats run at the right
tensor-core format on every chip; ``analyze`` works on each new system (or refuses, naming the
missing figure, where a peak is unpublished)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli_run import run, run_json
from llmecon.catalog import hardware as cat
from llmecon.errors import CatalogError, SpecError

# chip -> (single-chip system, platform systems)
CHIP_SYSTEMS = {
    "h100-sxm": ("h100-sxm", ("hgx-h100",)),
    "h200": ("h200", ("hgx-h200",)),
    "b200": ("b200", ("hgx-b200",)),
    "b300": ("b300", ("hgx-b300",)),
    "gb200": ("gb200", ("gb200-nvl72",)),
    "gb300": ("gb300", ("gb300-nvl72",)),
    "mi300x": ("mi300x", ("mi300x-8",)),
    "mi325x": ("mi325x", ("mi325x-8",)),
    "mi355x": ("mi355x", ("mi355x-8",)),
    "tpu-ironwood": ("tpu-v7", ("tpu-v7-64", "tpu-v7-256")),
    "trn2": ("trn2", ("trn2-ultraserver",)),
    "rubin": ("rubin", ("vera-rubin-nvl72",)),
    "ascend-910c": ("ascend-910c", ("cloudmatrix-384",)),
}
NEW_SYSTEMS = ("b300", "hgx-b300", "gb300", "rubin", "mi300x", "mi325x", "mi325x-8", "mi355x", "mi355x-8",
               "tpu-v7", "tpu-v7-64", "tpu-v7-256", "trn2", "trn2-ultraserver", "ascend-910c", "cloudmatrix-384")


@pytest.mark.parametrize("chip", sorted(CHIP_SYSTEMS))
def test_every_chip_has_a_single_chip_system_and_a_platform(chip):
    single, platforms = CHIP_SYSTEMS[chip]
    s = cat.get_system(single)
    assert s.accelerator.name == chip and s.chips == 1 and s.scale_up is None
    for name in platforms:
        p = cat.get_system(name)
        assert p.accelerator.name == chip and p.chips > 1 and p.scale_up is not None
        assert p.source and p.as_of and p.scale_up.source


def test_every_new_chip_is_sourced_dated_and_says_what_is_recalled():
    for name in ("mi325x", "trn2", "ascend-910c"):
        chip = cat.get_accelerator(name)
        assert chip.source and chip.as_of and chip.status == "mixed"
        assert "recalled" in chip.source.lower() or "recalled" in chip.notes.lower(), name


# --- published numbers ------------------------------------------------------------------------

def test_gb200_nvl72_nvlink_aggregate_130_tbps():
    """NVIDIA GB200 NVL72 page (https://www.nvidia.com/en-us/data-center/gb200-nvl72/): 72 GPUs,
    'NVLink bandwidth 130 TB/s' = 72 x 1.8 TB/s bidirectional = 129.6 TB/s; tolerance 1% (rounding)."""
    s = cat.get_system("gb200-nvl72")
    assert s.chips == 72
    assert s.chips * 2 * s.scale_up.bandwidth_bytes_per_s == pytest.approx(130e12, rel=0.01)


def test_vera_rubin_nvl72_nvlink6_260_tbps_and_hbm_20_7_tb():
    """NVIDIA Rubin platform blog (2026-01-06), Figure 10: NVLink6 260 TB/s per NVL72 rack (verified in
    shared/reference/hardware.yaml); rack HBM4 20.7 TB (secondary, = 72 x 288 GB). Tolerance 1%."""
    s = cat.get_system("vera-rubin-nvl72")
    assert s.chips * 2 * s.scale_up.bandwidth_bytes_per_s == pytest.approx(260e12, rel=0.01)
    assert s.hbm_bytes == pytest.approx(20.7e12, rel=0.01)


def test_ironwood_pod_fp8_42_5_exaflops():
    """Google: an Ironwood pod of 9,216 chips delivers 42.5 EF FP8 (shared/reference/hardware.yaml
    ironwood_update.pod_fp8_exaflops, secondary; = 9216 x 4614 TF). Tolerance 0.1%."""
    assert 9216 * cat.get_accelerator("tpu-ironwood").peak("fp8") == pytest.approx(42.5e18, rel=1e-3)


def test_ironwood_slice_ici_is_the_reference_bidirectional_figure_halved():
    """ICI 1.2 TB/s bidirectional per chip (reference ironwood_update) = 600 GB/s per direction,
    spread over 6 links: 100 GB/s per link per direction."""
    for name in ("tpu-v7-64", "tpu-v7-256"):
        up = cat.get_system(name).scale_up
        assert up.bandwidth_bytes_per_s == 600e9 and up.torus_link_bytes_per_s == 100e9


def test_platform_hbm_totals():
    """HGX B300 2.3 TB (8 x 288 GB), MI355X platform 2.3 TB (8 x 288 GB), MI325X platform 2 TB
    (8 x 256 GB; vendor platform totals as recalled), CloudMatrix 384 49 TB (384 x 128 GB)."""
    assert cat.get_system("hgx-b300").hbm_bytes == pytest.approx(2.304e12, rel=1e-9)
    assert cat.get_system("mi355x-8").hbm_bytes == pytest.approx(2.304e12, rel=1e-9)
    assert cat.get_system("mi325x-8").hbm_bytes == pytest.approx(2.048e12, rel=1e-9)
    assert cat.get_system("cloudmatrix-384").hbm_bytes == pytest.approx(49.152e12, rel=1e-9)


def test_trn2_instance_and_ultraserver_totals():
    """Amazon EC2 Trn2 page (recalled): trn2.48xlarge 16 chips, 20.8 PF dense FP8, 1.5 TB HBM,
    46 TB/s; Trn2 UltraServer 64 chips, 6 TB HBM, 12.8 Tb/s EFA. Tolerance 5% (rounded figures)."""
    chip = cat.get_accelerator("trn2")
    assert 16 * chip.peak("fp8") == pytest.approx(20.8e15, rel=0.05)
    assert 16 * chip.hbm_bytes == pytest.approx(1.5e12, rel=0.05)
    assert 16 * chip.hbm_bandwidth_bytes_per_s == pytest.approx(46e12, rel=0.05)
    u = cat.get_system("trn2-ultraserver")
    assert u.hbm_bytes == pytest.approx(6e12, rel=0.05)
    assert u.chips * u.scale_out.bandwidth_bytes_per_s * 8 == pytest.approx(12.8e12, rel=1e-9)


def test_cloudmatrix_384_bf16_within_5_percent_of_huaweis_300_pflops():
    """Huawei's CloudMatrix 384 claim, ~300 PFLOP/s dense BF16 (secondary), against 384 x 752 TF from
    the per-die figure of the CloudMatrix384 paper (recalled): 288.8 PF, 3.7% below."""
    assert cat.get_system("cloudmatrix-384").peak("bf16") == pytest.approx(300e15, rel=0.05)


REFERENCE = Path(__file__).resolve().parents[3] / "shared" / "reference" / "hardware.yaml"


@pytest.mark.skipif(not REFERENCE.exists(), reason="../shared/reference/hardware.yaml absent (fresh clone)")
def test_new_entries_match_the_reference():
    yaml = pytest.importorskip("yaml")
    ref = yaml.safe_load(REFERENCE.read_text())
    mi325x, row = cat.get_accelerator("mi325x"), ref["amd"]["mi325x"]
    assert mi325x.peak("bf16") == pytest.approx(row["bf16_dense"] * 1e12, rel=1e-3)
    assert mi325x.hbm_bytes == row["hbm_gb"] * 1e9
    assert mi325x.hbm_bandwidth_bytes_per_s == row["hbm_tbps"] * 1e12
    rubin = ref["rubin"]["rubin_gpu"]
    assert rubin["bf16_pflops"] is None and rubin["fp8_pflops"] is None
    assert set(cat.get_accelerator("rubin").unpublished_peaks) == {"bf16"}
    # fp8 is derived from the NVL144 rack figure, labelled derived (issue 35)
    rack = ref["rubin"]["gtc2025_vera_rubin_nvl144"]
    assert cat.get_accelerator("rubin").peak("fp8") == pytest.approx(rack["fp8_training_eflops"] * 1e18 / 72, rel=1e-5)
    ici = ref["ironwood_update"]["ici_bidir_TBps_per_chip"]
    assert cat.get_system("tpu-v7-64").scale_up.bandwidth_bytes_per_s == ici * 1e12 / 2


# --- refusals of unpublished peaks -----------------------------------------------------------

def test_rubin_bf16_is_refused_naming_the_fact_not_fallen_back():
    rubin = cat.get_accelerator("rubin")
    for dtype in ("bf16", "fp16", "fp32"):
        with pytest.raises(SpecError, match="no published dense bf16 peak") as err:
            rubin.peak(dtype)
        assert err.value.field == "system"
    for dtype in ("fp4", "nvfp4", "mxfp4"):
        assert rubin.compute_dtype(dtype) == "fp4" and rubin.peak(dtype) == 35e15


def test_rubin_fp8_is_derived_from_the_nvl144_rack_figure_and_labelled():
    """Issue 35: NVIDIA's GTC 2025 Vera Rubin NVL144 figure, 1.2 EF FP8 training over 72 packages =
    16.667 PF per package (refused before). The catalogue says it is derived, and from what."""
    rubin = cat.get_accelerator("rubin")
    assert rubin.peak("fp8") == pytest.approx(1.2e18 / 72, rel=1e-5)
    assert rubin.compute_dtype("fp8") == "fp8"
    assert set(rubin.derived_peaks) == {"fp8"} and "1.2 EF" in rubin.derived_peaks["fp8"]


def test_unpublished_peak_loader_is_strict():
    base = """
[chip]
vendor = "acme"
peak_flops = { fp4 = "10 PFLOP/s" }
{extra}
hbm_capacity = "80 GB"
hbm_bandwidth = "1 TB/s"
status = "announced"
source = "test"
as_of = "2024-01-01"
"""
    chip = cat.load_accelerators(base.replace("{extra}", 'peak_unpublished = { bf16 = "not stated" }'))["chip"]
    with pytest.raises(SpecError, match="not stated"):
        chip.peak("bf16")
    with pytest.raises(CatalogError, match="did you mean 'bf16'"):
        cat.load_accelerators(base.replace("{extra}", 'peak_unpublished = { bf61 = "x" }'))
    with pytest.raises(CatalogError, match="non-empty reason"):
        cat.load_accelerators(base.replace("{extra}", 'peak_unpublished = { bf16 = "" }'))
    with pytest.raises(CatalogError, match="also has a peak"):
        cat.load_accelerators(base.replace("{extra}", 'peak_unpublished = { fp4 = "x" }'))


# --- block-scaled formats: the tensor-core format they run at ---------------------------------

@pytest.mark.parametrize("chip, expected", [
    ("b200", "fp4"), ("gb300", "fp4"), ("mi355x", "fp4"),          # fp4 units
    ("h100-sxm", "fp8"), ("mi325x", "fp8"), ("trn2", "fp8"), ("tpu-ironwood", "fp8"),  # no fp4: fp8
    ("a100-80gb", "bf16"), ("ascend-910c", "bf16"), ("tpu-v6e", "bf16"),               # neither: bf16
])
def test_nvfp4_and_mxfp4_fall_back_by_chip(chip, expected):
    a = cat.get_accelerator(chip)
    for dtype in ("nvfp4", "mxfp4", "fp4"):
        assert a.compute_dtype(dtype) == expected, (chip, dtype)


def test_cli_accepts_nvfp4_and_mxfp4_and_reports_the_compute_format():
    """Llama-3.1-8B: 8.03e9 params x 4.5 bits (nvfp4) = 4.52 GB of weights; on H100 the matmuls run at fp8."""
    out = run_json("analyze", "--mode", "ideal", "-m", "llama-3.1-8b", "--system", "hgx-h100", "--weight-dtype",
                   "nvfp4",
                   "--kv-dtype", "mxfp4")
    d = out["decode_at_batch"]
    assert (d["weight_dtype"], d["kv_dtype"], d["compute_dtype"]) == ("nvfp4", "mxfp4", "fp8")
    out = run_json("analyze", "--mode", "ideal", "-m", "llama-3.1-8b", "--system", "hgx-b300", "--weight-dtype",
                   "mxfp4")
    assert out["decode_at_batch"]["compute_dtype"] == "fp4"


def test_web_accepts_nvfp4_on_a_new_system():
    pytest.importorskip("fastapi")
    pytest.importorskip("httpx")
    from fastapi.testclient import TestClient

    from llmecon.web import create_app

    client = TestClient(create_app(), raise_server_exceptions=False)
    r = client.post("/api/analyze", json={"model": "llama-3.1-8b", "system": "mi355x-8", "weight_dtype": "nvfp4",
                                          "kv_dtype": "mxfp4"})
    assert r.status_code == 200, r.text
    assert r.json()["decode_at_batch"]["compute_dtype"] == "fp4"


# --- analyze on every new system ---------------------------------------------------------------

@pytest.mark.parametrize("system", NEW_SYSTEMS)
def test_analyze_runs_on_every_new_system(system):
    """Llama-3.1-8B fits every chip; on Rubin systems analyze is refused (exit 2, one line) naming
    the unpublished bf16/fp8 peak: attention runs at bf16 and Llama's weights are bf16."""
    if cat.get_system(system).accelerator.name == "rubin":
        proc = run("analyze", "--mode", "ideal", "-m", "llama-3.1-8b", "--system", system)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr
        assert "no published dense bf16 peak" in proc.stderr
        return
    out = run_json("analyze", "--mode", "ideal", "-m", "llama-3.1-8b", "--system", system)
    assert out["system"] == system
    assert out["latency_floor_s"] > 0
