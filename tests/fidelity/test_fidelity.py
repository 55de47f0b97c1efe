"""Calibrated mode, efficiency profiles, batch prediction and calibration (issue 7).

Hand-computed kernel times, calibrated >= ideal as a property, a fit that recovers the profile
that generated synthetic data, and the CLI's predict / calibrate / validate paths.
"""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cli_run import run
from llmecon.fidelity.calibrate import fit_profile, predict_rows
from llmecon.catalog.hardware import get_accelerator, get_system
from llmecon.catalog.models import get_model
from llmecon.spec.efficiency import IDEAL, EfficiencyProfile, LinkEfficiency
from llmecon.catalog.efficiency import default_profile, load_profile, parse_profile, resolve
from llmecon.step.kernels import gemm_s
from llmecon.errors import CatalogError, SpecError
from llmecon.step.inference import decode_step, prefill_step
from llmecon.fidelity.measurements import make, write_csv
from llmecon.spec.plan import Plan
from llmecon.fidelity.predict import parse_cases, predict_cases

H100 = get_accelerator("h100-sxm")
H100_PROFILE = default_profile(H100)
TOY = EfficiencyProfile(name="toy", accelerators=("h100-sxm",), hbm_fraction=0.8, matmul_fraction=0.7,
                        matmul_m_half=100.0, kernel_floor_s=5e-6, elementwise_fraction=0.6,
                        elementwise_floor_s=2e-6, step_overhead_s=1e-3,
                        scale_up=LinkEfficiency(op_overhead_s=10e-6, step_latency_s=1e-6, bandwidth_fraction=0.8))


def test_gemm_hand_computed():
    """m=n=k=4096 bf16 on H100 (989 TFLOP/s, 3.35 TB/s): 2·4096³ = 1.374e11 FLOP at
    0.7·4096/(4096+100) = 0.6833 of peak -> 203.3 us (bytes 3·4096²·2 = 100.7 MB at 0.8·3.35 TB/s
    = 37.6 us, not binding), + 5 us floor = 208.3 us. Ideal: 1.374e11/989e12 = 139.0 us."""
    assert float(gemm_s(TOY, H100, m=4096, n=4096, k=4096)) == pytest.approx(208.3e-6, rel=2e-3)
    assert float(gemm_s(IDEAL, H100, m=4096, n=4096, k=4096)) == pytest.approx(138.97e-6, rel=1e-3)
    # m = 1: weight-streaming bound: (4096 + 4096² + 4096)·2 B at 0.8·3.35e12 + 5 us = 12.53 + 5 us
    assert float(gemm_s(TOY, H100, m=1, n=4096, k=4096)) == pytest.approx(17.53e-6, rel=2e-3)


def test_profile_round_trip_and_strict_keys():
    again = parse_profile(TOY.as_toml())
    assert again == TOY
    with pytest.raises(CatalogError, match="did you mean 'hbm_fraction'"):
        parse_profile(TOY.as_toml().replace("hbm_fraction", "hbm_fractoin"))
    with pytest.raises(CatalogError, match="matmul_fraction must be in"):
        parse_profile(TOY.as_toml().replace("matmul_fraction = 0.7", "matmul_fraction = 1.7"))


def test_shipped_profiles_say_how_they_were_derived():
    for acc in ("h100-sxm", "h200", "a100-80gb"):
        prof = default_profile(get_accelerator(acc))
        assert "fit" in prof.derivation and "validation" in prof.derivation
        assert 0 < prof.matmul_fraction <= 1 and 0 < prof.hbm_fraction <= 1
    with pytest.raises(SpecError, match="no efficiency profile for accelerator 'rubin'.*bf16 peak is unpublished"):
        default_profile(get_accelerator("rubin"))
    with pytest.raises(SpecError, match="needs mode calibrated"):
        resolve("ideal", TOY, H100)


@settings(max_examples=40, deadline=None)
@given(model=st.sampled_from(["llama-3.1-8b", "qwen3-32b", "mixtral-8x7b", "llama-3.1-70b"]),
       tp=st.sampled_from([1, 2, 4, 8]), batch=st.integers(1, 512), context=st.integers(0, 32768),
       prompt=st.integers(1, 8192))
def test_calibrated_is_never_faster_than_ideal(model, tp, batch, context, prompt):
    """Every fraction <= 1 and every overhead >= 0, and a sum of per-class maxima >= the max of
    the sums: calibrated time >= the ideal roofline (which is why ideal is a lower bound)."""
    m, s = get_model(model), get_system("hgx-h100")
    plan = Plan(tp=tp)
    for fn, kw in ((decode_step, dict(batch=batch, context=context)),
                   (prefill_step, dict(batch=max(1, batch // 64), prompt_tokens=prompt))):
        ideal = fn(m, s, plan=plan, weight_dtype="fp8", **kw)
        cal = fn(m, s, plan=plan, weight_dtype="fp8", mode="calibrated", profile=default_profile(s.accelerator), **kw)
        assert float(cal.step_s) >= float(ideal.step_s) * (1 - 1e-12)
        assert cal.profile == "h100-sxm" and ideal.profile == "ideal"


def test_calibrated_with_identity_profile_matches_ideal_sum_structure():
    """With IDEAL fractions and no floors, calibrated = sum over kernel classes of max(c, m) +
    elementwise traffic; it equals the ideal roofline when one bound dominates every class
    (decode at batch 1: memory everywhere) up to the element-wise traffic it adds."""
    m, s = get_model("llama-3.1-8b"), get_system("hgx-h100")
    ident = dataclasses.replace(IDEAL, name="identity")
    ideal = decode_step(m, s, batch=1, context=1024)
    cal = decode_step(m, s, batch=1, context=1024, mode="calibrated", profile=ident)
    # element-wise traffic at batch 1: 32 layers · (2·2+6)·4096·2 B + 3·14336·2 B per token: tiny
    extra = 32 * 2 * ((2 * 2 + 6) * 4096 + 3 * 14336) / s.accelerator.hbm_bandwidth_bytes_per_s
    assert float(cal.step_s) == pytest.approx(float(ideal.step_s) + extra, rel=1e-6)


def test_fit_recovers_the_profile_that_generated_the_data():
    rng = np.random.default_rng(1)
    rows = []
    for m in (1, 4, 16, 64, 128, 256, 512, 1024, 2048, 4096, 8192):
        for n, k in ((4096, 4096), (12288, 4096), (4096, 14336), (28672, 8192)):
            t = float(gemm_s(TOY, H100, m=m, n=n, k=k)) * (1 + 0.01 * rng.standard_normal())
            rows.append(make(dict(kind="gemm", accelerator="h100-sxm", m=m, n=n, k=k, dtype="bf16", measured_s=t)))
    for b in (1e5, 1e6, 1e7, 1e8, 1e9):
        t = float(b / (0.6 * H100.hbm_bandwidth_bytes_per_s) + 2e-6)
        rows.append(make(dict(kind="elementwise", accelerator="h100-sxm", bytes=b, measured_s=t)))
        rows.append(make(dict(kind="elementwise", accelerator="h100-sxm", bytes=b * 3, measured_s=t * 3 - 4e-6)))
    prof, report = fit_profile(rows, name="fitted", accelerators=("h100-sxm",), use_split=False)
    assert prof.matmul_fraction == pytest.approx(0.7, rel=0.03)
    assert prof.matmul_m_half == pytest.approx(100, rel=0.15)
    assert prof.kernel_floor_s == pytest.approx(5e-6, rel=0.15)
    assert prof.elementwise_fraction == pytest.approx(0.6, rel=0.03)
    assert report["engine"]["skipped"]
    err = np.abs(predict_rows(rows, prof).value_s / np.array([r.measured_s for r in rows]) - 1)
    assert np.median(err) < 0.02


def test_fit_refuses_too_few_points():
    rows = [make(dict(kind="gemm", accelerator="h100-sxm", m=1, n=4096, k=4096, dtype="bf16", measured_s=2e-5))]
    with pytest.raises(SpecError, match="too few measurements"):
        fit_profile(rows, name="x", accelerators=("h100-sxm",), use_split=False)


CASES = """model,system,phase,batch,context,prompt_tokens,output_tokens,tp,ep,pp,weight_dtype,kv_dtype
llama-3.1-8b,hgx-h100,decode,32,2048,,,1,,,,
llama-3.1-8b,hgx-h100,prefill,2,,1024,,2,,,,
qwen3-32b,hgx-h100,serving,64,,2048,256,2,,,fp8,fp8
llama-3.1-8b,hgx-h100,decode,8,512,,,1,,,,
"""


def test_predict_matches_single_calls():
    out = predict_cases(parse_cases(CASES))
    m, s = get_model("llama-3.1-8b"), get_system("hgx-h100")
    assert out[0]["step_s"] == pytest.approx(float(decode_step(m, s, batch=32, context=2048).step_s))
    assert out[3]["step_s"] == pytest.approx(float(decode_step(m, s, batch=8, context=512).step_s))
    pf = prefill_step(m, s, batch=2, prompt_tokens=1024, plan=Plan(tp=2))
    assert out[1]["step_s"] == pytest.approx(float(pf.step_s)) and out[1]["bound"] == pf.bound
    assert out[2]["tpot_s"] > out[2]["step_s"] > 0 and out[2]["effective_batch"] == 64
    assert out[0]["tpot_s"] == ""


@pytest.mark.parametrize("text, match", [
    (CASES.replace("kv_dtype\n", "kv_dtpye\n"), "did you mean 'kv_dtype'"),
    (CASES.replace("decode,32", "decod,32"), "line 2 phase: unknown phase 'decod'"),
    (CASES.replace("decode,32,2048", "decode,32,"), "line 2: phase 'decode' needs column 'context'"),
    (CASES.replace("decode,8,512,,,1", "decode,8,512,,,3"), "line 5"),
])
def test_predict_bad_cases_name_the_line(text, match):
    with pytest.raises((CatalogError, SpecError), match=match):
        predict_cases(parse_cases(text))


def test_cli_predict_calibrate_validate(tmp_path):
    cases = tmp_path / "cases.csv"
    cases.write_text(CASES)
    out = tmp_path / "pred.csv"
    proc = run("predict", str(cases), "--out", str(out), "--mode", "calibrated")
    assert proc.returncode == 0, proc.stderr
    text = out.read_text()
    assert "tpot_s" in text.splitlines()[0] and text.count("calibrated") == 4
    bad = run("predict", str(tmp_path / "missing.csv"))
    assert bad.returncode == 2 and bad.stderr.startswith("error: ") and "Traceback" not in bad.stderr
    # calibrate on synthetic kernel rows, then validate with the written profile
    rows = [make(dict(kind="gemm", accelerator="h100-sxm", m=m, n=n, k=4096, dtype="bf16",
                      measured_s=float(gemm_s(TOY, H100, m=m, n=n, k=4096))))
            for m in (1, 8, 64, 256, 1024, 4096) for n in (4096, 8192, 14336)]
    meas = tmp_path / "m.csv"
    write_csv(rows, meas)
    prof_path = tmp_path / "p.toml"
    proc = run("calibrate", str(meas), "--out", str(prof_path), "--all-rows", "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["stages"]["kernels"]["rows"] == len(rows)
    assert load_profile(prof_path).matmul_fraction == pytest.approx(0.7, rel=0.05)
    proc = run("validate", str(meas), "--profile", str(prof_path), "--json")
    assert proc.returncode == 0, proc.stderr
    v = json.loads(proc.stdout)
    assert v["metrics"]["value"]["calibrated"]["all"]["median"] < 0.05
    assert v["metrics"]["value"]["ideal"]["all"]["below_share"] == 1.0
    few = tmp_path / "few.csv"
    write_csv(rows[:2], few)
    proc = run("calibrate", str(few), "--out", str(tmp_path / "x.toml"), "--all-rows")
    assert proc.returncode == 2 and "too few measurements" in proc.stderr
    assert not (tmp_path / "x.toml").exists()


def test_cli_step_says_which_mode(tmp_path):
    proc = run("step", "--model", "llama-3.1-8b", "--system", "hgx-h100", "--mode", "calibrated", "--json")
    assert proc.returncode == 0, proc.stderr
    d = json.loads(proc.stdout)
    assert d["mode"] == "calibrated" and d["profile"] == "h100-sxm" and d["overhead_s"] > 0
    path = tmp_path / "toy.toml"
    path.write_text(TOY.as_toml())
    d = json.loads(run("step", "--model", "llama-3.1-8b", "--system", "hgx-h100", "--profile", str(path),
                       "--json").stdout)
    assert d["profile"] == "toy"
    proc = run("step", "--model", "llama-3.1-8b", "--system", "hgx-h100", "--profile", str(tmp_path / "nope.toml"))
    assert proc.returncode == 2 and "--profile: no such file" in proc.stderr


@pytest.mark.parametrize("row, column", [
    ("deepseek-v3,hgx-h200,decode,1,163841,,", "context"),
    ("deepseek-v3,hgx-h200,prefill,1,1000,163000,", "prompt_tokens"),
    ("deepseek-v3,hgx-h200,serving,4,,163000,841", "output_tokens"),
])
def test_predict_rejects_sequences_longer_than_the_context(row, column):
    """Issue 18: a case whose sequence (decode: context; prefill: context + prompt; serving: prompt +
    output) exceeds DeepSeek-V3's 163,840 tokens is an error naming its line and column, with a fix;
    at the limit it is predicted."""
    head = "model,system,phase,batch,context,prompt_tokens,output_tokens\n"
    with pytest.raises(CatalogError, match=f"^cases line 2 {column}: .* is longer than deepseek-v3's 163,840-token "
                                           "context") as exc:
        predict_cases(parse_cases(head + row + "\n"))
    assert "<= 163,840" in exc.value.fix
    ok = predict_cases(parse_cases(head + "deepseek-v3,hgx-h200,decode,1,163840,,\n"
                                   "deepseek-v3,hgx-h200,prefill,1,840,163000,\n"))
    assert all(r["step_s"] > 0 for r in ok)
