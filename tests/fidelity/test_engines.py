"""The serving engine as an input (issue 34 item 1): chip x engine -> profile, each chip's default engine
with why, transferred profiles labelled with their expected error, and clear refusals."""

from __future__ import annotations

import pytest

from llmecon.catalog.efficiency import default_profiles
from llmecon.catalog.engines import engine_catalog, parse_engines
from llmecon.catalog.hardware import get_accelerator
from llmecon.errors import CatalogError, SpecError
from llmecon.fidelity.engines import engine_profile, measured_engines


def test_shipped_chip_engine_profiles_are_chosen_by_engine():
    for chip in ("h100-sxm", "h200", "b200", "b300", "gb200", "gb300"):
        for engine in ("trtllm", "sglang", "vllm"):
            prof = engine_profile(get_accelerator(chip), engine)
            assert (prof.name, prof.engine, prof.transferred) == (f"{chip}/{engine}", engine, False)


def test_no_engine_is_the_chip_default_and_every_default_says_why():
    cat = engine_catalog()
    measured = {a for p in default_profiles() if p.engine and not p.transferred for a in p.accelerators}
    assert measured <= set(cat.defaults)  # every chip with measured profiles documents its default
    for chip, d in cat.defaults.items():
        assert d.why and d.source, chip
        prof = engine_profile(get_accelerator(chip), None)
        if d.engine:
            assert prof.name == f"{chip}/{d.engine}"
        else:  # the legacy engine-less profile
            assert prof.name == chip and prof.engine == ""


def test_a_shipped_transferred_profile_serves_its_own_engine():
    prof = engine_profile(get_accelerator("tpu-v6e"), "vllm")
    assert prof.name == "tpu-v6e/transferred" and prof.engine == "vllm" and prof.transferred


def test_an_engine_without_data_on_a_chip_is_transferred_and_labelled():
    cat = engine_catalog()
    prof = engine_profile(get_accelerator("mi300x"), "sglang")  # AMD: no measured chip, pooled
    assert prof.name == "mi300x/sglang (transferred)" and prof.engine == "sglang" and prof.transferred
    assert prof.transfer["method"] == "pooled"
    assert prof.transfer["expected_error"] == cat.transfer_error[("pooled", "sglang")]
    assert "±" in prof.label and "sglang" in prof.label
    nv = engine_profile(get_accelerator("a100-80gb"), "sglang")  # NVIDIA without sglang data: nearest chip
    assert nv.transfer["method"] == "nearest" and nv.engine == "sglang"
    assert nv.transfer["expected_error"] == cat.transfer_error[("nearest", "sglang")]


def test_every_transfer_that_can_happen_has_a_measured_error():
    for method in ("nearest", "pooled"):
        for engine in measured_engines():
            err = engine_catalog().transfer_error[(method, engine)]
            assert 0 < err["tpot_median"] <= err["tpot_p90"] and 0 < err["ttft_median"] <= err["ttft_p90"]


@pytest.mark.parametrize("name, words", [("atom", "no chip has a measured profile"), ("vlm", "did you mean 'vllm'")])
def test_an_engine_no_profile_measures_is_refused(name, words):
    with pytest.raises(SpecError, match=words) as info:
        engine_profile(get_accelerator("h200"), name)
    assert info.value.field == "engine" and "sglang, trtllm, vllm" in info.value.fix


def test_the_engine_catalogue_is_read_strictly():
    with pytest.raises(CatalogError, match="did you mean 'why'"):
        parse_engines('[defaults.h200]\nengine = "trtllm"\nwhy_ = "x"\nsource = "y"\n')
    with pytest.raises(CatalogError, match="missing required key 'source'"):
        parse_engines('[defaults.h200]\nengine = "trtllm"\nwhy = "x"\n')
    bad = ('[defaults.h200]\nengine = "trtllm"\nwhy = "x"\nsource = "y"\n[transfer.pooled.vllm]\n'
           'tpot_median = -1\ntpot_p90 = 0.3\nttft_median = 0.2\nttft_p90 = 0.4\nsource = "z"\n')
    with pytest.raises(CatalogError, match="tpot_median"):
        parse_engines(bad)


def test_resolve_engine_implies_calibrated_and_excludes_a_profile():
    from llmecon.resolve import deployment, fidelity

    dep = deployment("llama-3.1-70b", "hgx-h100", tp=8, mode="ideal", engine="vllm")
    assert dep.profile.name == "h100-sxm/vllm"
    assert fidelity("ideal", None, None, "sglang") == ("calibrated", None)  # no system: checked, resolved per row
    with pytest.raises(SpecError, match="not both") as info:
        deployment("llama-3.1-70b", "hgx-h100", tp=8, profile="h100-sxm/vllm", engine="vllm")
    assert info.value.field == "engine"
