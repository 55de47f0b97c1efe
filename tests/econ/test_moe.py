"""``llmecon.econ.moe``: the MoE deployment summary (SPEC A1, D14-D18) on catalogue models."""

from __future__ import annotations

import math

import pytest

from llmecon.catalog.hardware import get_system
from llmecon.catalog.models import get_model
from llmecon.errors import SpecError
from llmecon.econ.moe import ep_sweep, moe_summary
from llmecon.econ.routed_scaling import PowerFit


@pytest.fixture(scope="module")
def ds():
    return get_model("deepseek-v3")


def test_ep_sweep_crosses_the_hgx_boundary(ds):
    """SPEC D15 on DGX H100 (scale-out 9x slower): EP groups above 8 GPUs run their all-to-all
    across nodes and it costs several times the in-node one at the same batch per chip."""
    rows = {r.ep: r for r in ep_sweep(ds, get_system("hgx-h100"), batch_per_chip=64, context=1024)}
    assert all(256 % ep == 0 for ep in rows)
    assert rows[8].tier == "scale_up" and rows[16].tier == "two_tier"
    assert rows[16].domains == 2 and rows[256].domains == 32
    assert rows[16].all_to_all_s > 3 * rows[8].all_to_all_s
    # more experts per group -> fewer expert weights per chip (non-expert part replicated)
    assert rows[256].weights_per_chip_bytes < rows[16].weights_per_chip_bytes < rows[8].weights_per_chip_bytes


def test_ep_on_nvl72_stays_on_nvlink_up_to_the_rack(ds):
    """Up to 64 chips the group fits one 72-chip rack; EP128/256 use 64 chips in each of 2/4 racks."""
    rows = {r.ep: r for r in ep_sweep(ds, get_system("gb200-nvl72"), batch_per_chip=64, context=1024)}
    assert {rows[e].tier for e in rows if 1 < e <= 64} == {"scale_up"}
    assert (rows[128].tier, rows[128].domains, rows[256].domains) == ("two_tier", 2, 4)
    assert rows[128].all_to_all_s > rows[64].all_to_all_s


def test_summary_pipeline_views(ds):
    """SPEC D17 on GB200 NVL72 (BW ratio 18, k = 8): 2kL/18 -> one layer per stage is not enough
    (16/18), two are (32/18). SPEC D18: weights per chip fall with pp, KV per chip does not."""
    s = moe_summary(ds, get_system("gb200-nvl72"), batch_per_chip=32, context=2048)
    assert s.scale_out_ratio == pytest.approx(18.0)
    assert s.stage_ratios[1] == pytest.approx(16 / 18) and s.stage_ratios[2] == pytest.approx(32 / 18)
    assert s.min_layers_per_stage == 2
    w = [r.weights_per_chip_bytes for r in s.pp_rows]
    assert w == sorted(w, reverse=True)
    kv = [r.kv_per_chip_bytes for r in s.pp_rows]
    for r in s.pp_rows:  # ceil(61/pp) of 61 layers on the largest stage, for pp x the micro-batch
        layers = math.ceil(ds.n_layers / r.pp)
        assert r.kv_per_chip_bytes == pytest.approx(kv[0] * layers * r.pp / ds.n_layers, rel=1e-9)
    assert s.pp_rows[0].hop_latency_s == 0.0 and s.pp_rows[1].hop_latency_s > 0.0


def test_summary_facts_and_scaling_view(ds):
    s = moe_summary(ds, get_system("gb200-nvl72"), law=PowerFit(gamma=0.5, label="test", source="test"))
    assert (s.experts, s.active_experts) == (256, 8)
    assert s.sparsity == pytest.approx(ds.params.total / ds.params.active)
    assert s.touched[1] == pytest.approx(8 / 256)
    assert s.effective_ratio == pytest.approx(16.0)  # 256 ** 0.5
    assert s.experts_for_10x == pytest.approx(100.0)  # 10 ** (1 / 0.5)
    assert s.law_label == "test"
    assert s.dispatch_dtype == "fp8"


def test_dense_model_is_rejected():
    with pytest.raises(SpecError, match="dense"):
        moe_summary(get_model("llama-3.1-8b"), get_system("hgx-h100"))


@pytest.mark.parametrize("kwargs,match", [(dict(context=-1), "^context"), (dict(batch_per_chip=0), "^batch_per_chip"),
                                          (dict(expert_imbalance=0.5), "^expert_imbalance")])
def test_bad_input(ds, kwargs, match):
    with pytest.raises(SpecError, match=match):
        moe_summary(ds, get_system("hgx-h100"), **kwargs)


def test_calibrated_ep_sweep_names_its_profile_and_is_no_faster_than_ideal():
    """``moe --mode calibrated``: each EP row priced with the accelerator's profile; a calibrated
    step is never shorter than the ideal roofline (fractions <= 1)."""
    from llmecon.catalog.hardware import get_accelerator
    from llmecon.catalog.efficiency import default_profile

    m, s = get_model("deepseek-v3"), get_system("hgx-h200")
    prof = default_profile(get_accelerator("h200"))
    cal = moe_summary(m, s, batch_per_chip=16, max_ep=16, profile=prof)
    ideal = moe_summary(m, s, batch_per_chip=16, max_ep=16)
    assert cal.fidelity == f"calibrated ({prof.name})" and ideal.fidelity == "ideal"
    assert [r.ep for r in cal.ep_rows] == [r.ep for r in ideal.ep_rows]
    assert all(c.step_s >= i.step_s for c, i in zip(cal.ep_rows, ideal.ep_rows))
    assert any(c.step_s > 1.1 * i.step_s for c, i in zip(cal.ep_rows, ideal.ep_rows))


def test_domain_filling_ep_sizes_use_redundant_experts(ds):
    """On 72-chip NVL72 racks the sweep adds EP72, EP144 and EP288, which 256 experts do not divide,
    with the fewest copies filling them (32: 288 slots = 72 x 4, 144 x 2, 288 x 1; DeepSeek serves
    decode on EP144 with 32 redundant experts). EP72 holds as many expert slots per chip as EP64, so
    its weights per chip match; every row reads at least as many experts on its busiest group."""
    rows = {r.ep: r for r in ep_sweep(ds, get_system("gb200-nvl72"), batch_per_chip=1, context=1024)}
    assert {e: rows[e].redundant_experts for e in (64, 72, 144, 288)} == {64: 0, 72: 32, 144: 32, 288: 32}
    assert (rows[72].label, rows[72].chips, rows[72].tier) == ("ep72+32", 72, "scale_up")
    assert rows[72].weights_per_chip_bytes == pytest.approx(rows[64].weights_per_chip_bytes, rel=1e-12)
    assert all(r.busiest_experts >= r.mean_experts - 1e-9 and r.expert_load_factor >= 1.0 for r in rows.values())
    # one sequence per chip: EP64 decodes 64 tokens; its busiest 4-expert group reads all 4 (mean 3.49)
    assert rows[64].busiest_experts == pytest.approx(4.0, abs=1e-6)
    assert rows[64].mean_experts == pytest.approx(4 * (1 - (1 - 8 / 256) ** 64), rel=1e-12)
    assert rows[1].busiest_experts == pytest.approx(rows[1].mean_experts, rel=1e-12)


def test_summary_shows_the_busiest_group_at_low_batch(ds):
    """Issue 18: at one token the busiest of EP64's groups reads 1.297 experts per layer, the mean
    group 8/64 = 0.125 (10.4x); by 128 tokens both read (nearly) all 4."""
    s = moe_summary(ds, get_system("gb200-nvl72"), batch_per_chip=32, context=2048)
    assert s.pp_ep == 64
    assert s.busiest_experts[1] == pytest.approx(1.2970575560, rel=1e-9)
    assert s.mean_experts[1] == pytest.approx(0.125, rel=1e-12)
    assert s.busiest_experts[128] == pytest.approx(4.0, abs=1e-6) and s.mean_experts[128] > 3.9
