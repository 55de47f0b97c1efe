"""Transferred profiles (``fidelity.transfer``): a chip without measurements priced with measured
chips' dimensionless terms through its own datasheet, or refused naming the missing fact."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest

from llmecon.catalog.efficiency import ERROR_KEYS, default_profile, default_profiles, named_profile, parse_profile
from llmecon.catalog.hardware import accelerators, get_accelerator, get_system, systems
from llmecon.catalog.models import get_model
from llmecon.errors import SpecError
from llmecon.fidelity.transfer import (ENGINE_TERMS, KERNEL_SCALARS, KERNEL_TABLES, distance, method_for,
                                       rank_sources, transfer)
from llmecon.spec.deployment import Deployment
from llmecon.spec.efficiency import IDEAL, KernelTerms
from llmecon.spec.plan import Plan
from llmecon.step.inference import decode_of, prefill_of
from llmecon.step.kernels import decode_attention_s, gemm_s

MEASURED = [p for p in default_profiles() if p.engine and not p.transferred]
TRANSFERRED = [p for p in default_profiles() if p.transferred and p.transfer["source"] == "pooled NVIDIA vllm profiles"]
"""Profiles transferred from the pooled NVIDIA vllm profiles (``fidelity.transfer``)."""
NEAREST_MEASURED = [p for p in default_profiles() if p.transferred and p not in TRANSFERRED]
"""Profiles transferred from one measured profile of the same die (``fidelity.amd_profiles``: mi325x/vllm and
mi355x/vllm from mi300x/vllm): they carry the figures that were measured, not every ``ERROR_KEYS`` one."""


def _kernel_and_engine(p) -> dict:
    keys = KERNEL_SCALARS + KERNEL_TABLES + ("moe_skew", "scale_up", "all_to_all") + ENGINE_TERMS
    return {k: getattr(p, k) for k in keys}


def test_transfer_of_a_chip_to_itself_reproduces_its_terms():
    """Nearest: the chip itself is at distance 0, so every borrowed term is its own; pooled over
    one profile: the median of one value is that value."""
    own = named_profile("b200/trtllm")
    b200 = get_accelerator("b200")
    assert distance(b200, b200) == 0
    for method in ("nearest", "pooled"):
        moved = transfer(b200, [own], method=method, engine="trtllm")
        assert _kernel_and_engine(moved) == _kernel_and_engine(own), method
        assert moved.transferred and moved.accelerators == ("b200",) and moved.transfer["method"] == method
    assert own.mla_decode and own.gdn and own.all_to_all is not None   # the tables carried are not empty
    # hand check of one term: b200/trtllm's bf16 GEMM fraction 0.7982 and floor 2.444 us (the shipped file)
    assert moved.gemm_terms("bf16").fraction == own.gemm_terms("bf16").fraction == 0.7982


def test_pooled_terms_are_the_median_by_hand():
    """Two profiles with bf16 GEMM fractions 0.6 and 0.8 and floors 2 and 4 us pool to 0.7 and 3 us."""
    base = named_profile("h100-sxm/vllm")
    a = dataclasses.replace(base, name="x/vllm", gemm=(("bf16", KernelTerms(fraction=0.6, floor_s=2e-6)),))
    b = dataclasses.replace(base, name="y/vllm", accelerators=("h200",),
                            gemm=(("bf16", KernelTerms(fraction=0.8, floor_s=4e-6)),))
    moved = transfer(get_accelerator("mi300x"), [a, b], method="pooled", engine="vllm")
    t = moved.gemm_terms("bf16")
    assert t.fraction == pytest.approx(0.7) and t.floor_s == pytest.approx(3e-6)
    assert moved.transfer["source"] == "pooled NVIDIA vllm profiles"


def test_nearest_rule_by_hand():
    """H100 -> H200: same bf16 peak, HBM 4.8 / 3.35 TB/s: distance ln(4.8/3.35) = 0.3597; B200 is further."""
    h100, h200, b200 = (get_accelerator(c) for c in ("h100-sxm", "h200", "b200"))
    assert distance(h100, h200) == pytest.approx(math.log(4.8 / 3.35))
    assert distance(h100, b200) > distance(h100, h200)
    others = [p for p in MEASURED if p.engine == "trtllm" and p.accelerators[0] != "h100-sxm"]
    assert rank_sources(h100, others)[0].name == "h200/trtllm"
    assert method_for(h100, MEASURED) == "nearest" and method_for(get_accelerator("tpu-v6e"), MEASURED) == "pooled"
    # AMD has a measured chip since 2026-11-28 (mi300x/vllm, fidelity.amd_profiles): MI355X is "nearest" to it
    assert method_for(get_accelerator("mi355x"), MEASURED) == "nearest"
    with pytest.raises(SpecError, match="no measured google chip"):
        transfer(get_accelerator("tpu-v6e"), MEASURED, method="nearest", engine="vllm")


def test_a_transferred_profile_scales_with_the_datasheet():
    """Doubling HBM bandwidth halves a memory-bound kernel's (decode attention over a long KV cache)
    time above its fixed costs; doubling the peaks halves a compute-bound GEMM's. With t = fixed +
    X/rate: t(r) - t(2r) = X/(2r) = 2·(t(2r) - t(4r)), whatever the floors (the borrowed terms)."""
    prof = default_profile(get_accelerator("mi300x"))
    acc = get_accelerator("mi300x")

    def mem(scale):
        a = dataclasses.replace(acc, hbm_bandwidth_bytes_per_s=scale * acc.hbm_bandwidth_bytes_per_s)
        return float(decode_attention_s(prof, a, batch=64, kv_len=32768, heads=32, kv_heads=8, head_dim=128))

    def flop(scale):
        a = dataclasses.replace(acc, peak_flops_per_s={k: scale * v for k, v in acc.peak_flops_per_s.items()})
        return float(gemm_s(prof, a, m=16384, n=16384, k=16384))

    for t in (mem, flop):
        assert t(1) - t(2) == pytest.approx(2 * (t(2) - t(4)), rel=1e-9), t.__name__
        assert t(2) / t(1) == pytest.approx(0.5, abs=0.02)   # the scaled term dominates these kernels


def test_refusal_names_the_missing_fact():
    with pytest.raises(SpecError, match="rubin.*dense bf16 peak is unpublished.*Rubin platform blog"):
        transfer(get_accelerator("rubin"), MEASURED, method="nearest", engine="trtllm")
    with pytest.raises(SpecError, match="no efficiency profile for accelerator 'rubin'.*bf16 peak is unpublished"):
        default_profile(get_accelerator("rubin"))
    fp8_only = dataclasses.replace(get_accelerator("mi300x"), name="acme-x", peak_flops_per_s={"fp8": 1e15})
    with pytest.raises(SpecError, match="no dense bf16 peak"):
        transfer(fp8_only, MEASURED, method="pooled", engine="vllm")


def test_shipped_transferred_profiles_carry_provenance_and_expected_error():
    names = {p.accelerators[0] for p in TRANSFERRED}
    measured = {a for p in default_profiles() if not p.transferred or p in NEAREST_MEASURED for a in p.accelerators}
    assert names == {a for a, acc in accelerators().items() if a not in measured and "bf16" in acc.peak_flops_per_s}
    for p in NEAREST_MEASURED:
        t = p.transfer
        assert t["method"] == "nearest" and named_profile(t["source"]).transferred is False
        assert set(t["expected_error"]) <= set(ERROR_KEYS) and 0 < t["expected_error"]["tpot_median"] < 1
        assert parse_profile(p.as_toml()) == p and t["error_protocol"] in p.fidelity
    for p in TRANSFERRED:
        t = p.transfer
        assert p.name == f"{p.accelerators[0]}/transferred" and "fidelity.transfer" in p.derivation
        assert t["method"] == "pooled" and t["source"] == "pooled NVIDIA vllm profiles" and t["date"] == "2026-11-26"
        assert set(t["expected_error"]) == set(ERROR_KEYS) and all(0 < v < 5 for v in t["expected_error"].values())
        assert "cross-vendor error unmeasured" in t["error_scope"]
        again = parse_profile(p.as_toml())
        assert again == p and again.transfer == p.transfer
        pct = round(100 * t["expected_error"]["tpot_median"])
        assert p.fidelity == (f"calibrated ({p.accelerators[0]}, transferred from pooled NVIDIA vllm profiles, "
                              f"±{pct}% TPOT leave-one-chip-out)")


@pytest.mark.parametrize("profile", TRANSFERRED, ids=[p.name for p in TRANSFERRED])
def test_calibrated_is_at_or_above_ideal_on_transferred_profiles(profile):
    acc = get_accelerator(profile.accelerators[0])
    system = min((s for s in systems().values() if s.accelerator.name == acc.name), key=lambda s: s.chips)
    batch = np.array([1.0, 8.0, 64.0, 512.0])[:, None]
    context = np.array([128.0, 4096.0, 32768.0])[None, :]
    for model, plan in (("llama-3.1-8b", Plan(tp=1)), ("qwen3-30b-a3b", Plan(tp=1, ep=math.gcd(8, system.chips)))):
        kw = dict(model=get_model(model), system=system, plan=plan)
        cal, ideal = Deployment(**kw, profile=profile), Deployment(**kw, profile=IDEAL)
        for c, i in ((decode_of(cal, batch=batch, context=context), decode_of(ideal, batch=batch, context=context)),
                     (prefill_of(cal, batch=batch[:, 0], prompt_tokens=2048.0),
                      prefill_of(ideal, batch=batch[:, 0], prompt_tokens=2048.0))):
            assert np.all(np.asarray(c.step_s) >= np.asarray(i.step_s) * (1 - 1e-12)), model


def _smallest_system(acc: str) -> str:
    return min((s for s in systems().values() if s.accelerator.name == acc), key=lambda s: s.chips).name


@pytest.mark.parametrize("acc", sorted(accelerators()))
def test_every_accelerator_gets_a_calibrated_analyze_or_one_line_refusal(acc, capsys):
    from llmecon.cli import main

    with pytest.raises(SystemExit) as done:
        main(["analyze", "--mode", "calibrated", "--system", _smallest_system(acc), "--model", "llama-3.1-8b",
              "--json"])
    out, err = capsys.readouterr()
    if done.value.code in (0, None):
        d = json.loads(out)
        assert d["mode"] == "calibrated" and isinstance(d["transferred"], bool)
        if d["transferred"] and d["transfer_method"] == "pooled":
            assert "transferred from" in d["fidelity"] and set(d["expected_error"]) == set(ERROR_KEYS)
            assert d["transferred_from"]
        elif d["transferred"]:  # nearest, from a measured profile of the same die: the figures measured
            assert d["transfer_method"] == "nearest" and "transferred from" in d["fidelity"]
            assert set(d["expected_error"]) <= set(ERROR_KEYS) and "tpot_median" in d["expected_error"]
    else:
        lines = [line for line in err.splitlines() if line.strip()]
        assert done.value.code == 2 and len(lines) == 1 and out == ""
        assert f"no efficiency profile for accelerator '{acc}'" in lines[0] and "unpublished" in lines[0]


def test_plan_and_moe_json_carry_the_transfer_fields(capsys):
    from llmecon.cli import main

    with pytest.raises(SystemExit):
        main(["plan", "--model", "llama-3.1-8b", "--systems", "mi325x-8", "--max-chips", "8", "--mode", "calibrated",
              "--json"])
    d = json.loads(capsys.readouterr().out)
    assert d["transferred"] is True and d["transferred_profiles"]["mi325x-8"]["transfer_method"] == "nearest"
    assert "transferred from mi300x/vllm" in d["fidelity"]
    with pytest.raises(SystemExit):
        main(["moe", "--model", "qwen3-30b-a3b", "--system", "mi325x-8", "--mode", "calibrated", "--json"])
    d = json.loads(capsys.readouterr().out)
    assert d["fidelity_fields"]["transferred"] is True and "transferred from" in d["fidelity"]
