"""``llmecon validate`` on NVIDIA's silicon CSV format and kernel-tables folders: held-out errors per
chip, model, engine and band in --json, inputs told apart by their form, bad input in one line (exit 2).
Small synthetic inputs: a few dozen rows, configs copied from the catalogue."""

from __future__ import annotations

import json
import shutil
from importlib import resources

import numpy as np
import pytest

from cli_run import invoke

HEAD = ("id,backend,model_path,system,precision,mode,isl,osl,gemm_quant_mode,batch_size,tp_size,pp_size,"
        "attention_dp_size,moe_tp_size,moe_ep_size,silicon_ttft_ms,silicon_tpot_ms\n")


def _silicon(tmp_path) -> tuple[str, str]:
    configs = tmp_path / "configs"
    configs.mkdir()
    models = resources.files("llmecon.catalog") / "models"
    for name, hf in (("qwen3-32b", "Qwen--Qwen3-32B"), ("qwen3-30b-a3b", "Qwen--Qwen3-30B-A3B")):
        with resources.as_file(models / f"{name}.json") as src:
            shutil.copy(src, configs / f"{hf}_config.json")
    lines, k = [], 0
    for system, speed in (("h200_sxm", 1.0), ("b200_sxm", 0.6)):
        for model, tp, ep in (("Qwen/Qwen3-32B", 2, 1), ("Qwen/Qwen3-30B-A3B", 2, 2)):
            for c in (1, 2, 4, 8, 16, 32, 64, 128):
                k += 1
                tpot = speed * (9.0 + 0.05 * c)
                ttft = speed * (60.0 + 3.0 * c)
                lines.append(f"r{k},trtllm,{model},{system},fp8,agg,1024,256,fp8,{c},{tp},1,1,{tp // ep},{ep},"
                             f"{ttft},{tpot}")
    lines.append("d1,trtllm,Qwen/Qwen3-32B,h200_sxm,fp8,disagg,1024,256,fp8,8,,,,,,80,9")
    path = tmp_path / "silicon.csv"
    path.write_text(HEAD + "\n".join(lines) + "\n")
    return str(path), str(configs)


@pytest.fixture(scope="module")
def silicon(tmp_path_factory):
    return _silicon(tmp_path_factory.mktemp("silicon"))


def _json(args):
    code, text = invoke([*args, "--json"])
    assert code == 0, text
    return json.loads(text)


@pytest.mark.parametrize("scheme", ["model", "chip"])
def test_silicon_holdout_json_has_every_grouping(silicon, scheme):
    path, configs = silicon
    got = _json(["validate", path, "--configs", configs, "--holdout", scheme])
    assert (got["source"], got["holdout"], got["rows"]) == ("silicon", scheme, 32)
    groups = {(c["quantity"], c["by"], c["group"]) for c in got["cells"]}
    assert {("TPOT", "chip", "h200"), ("TPOT", "chip", "b200"), ("TPOT", "model", "Qwen/Qwen3-32B"),
            ("TPOT", "engine", "trtllm"), ("TPOT", "concurrency", "1-8"), ("TPOT", "concurrency", "9-64"),
            ("TPOT", "concurrency", "65+"), ("TTFT c<=8", "concurrency", "1-8")} <= groups
    assert ("TTFT c<=8", "concurrency", "65+") not in groups  # TTFT is scored at concurrency <= 8 only
    everything = next(c for c in got["cells"] if c["quantity"] == "TPOT" and c["by"] == "all")
    assert everything["rows"] == 32 and 0 < everything["predicted"] <= 32
    assert everything["median"] >= 0 and 0.0 <= everything["ideal_below"] <= 1.0
    assert any("disagg" in n for n in got["notes"])
    # the disagg row (no worker counts) is read apart and reported, not fitted
    assert any(n.startswith("disaggregated rows: none priced; 1 disagg rows skipped") for n in got["notes"])


def test_silicon_filters_score_only_the_named_rows(silicon):
    path, configs = silicon
    got = _json(["validate", path, "--configs", configs, "--holdout", "chip", "--chips", "b200", "--models",
                 "Qwen/Qwen3-32B"])
    assert got["rows"] == 8
    assert {c["group"] for c in got["cells"] if c["by"] == "chip"} == {"b200"}


def test_silicon_tables_print_whole_names(silicon):
    path, configs = silicon
    code, text = invoke(["validate", path, "--configs", configs, "--holdout", "none"])
    assert code == 0, text
    assert "in-sample (not an accuracy claim)" in text and "Qwen/Qwen3-30B-A3B" in text and "…" not in text


def _kernels(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from llmecon.catalog.hardware import get_accelerator
    from llmecon.spec.efficiency import IDEAL, KernelTerms
    from llmecon.step.kernels import gemm_s
    import dataclasses

    terms = KernelTerms(fraction=0.7, m_half=60.0, n_half=300.0, k_half=150.0, hbm_fraction=0.8, floor_s=4e-6)
    prof = dataclasses.replace(IDEAL, name="truth", gemm=(("fp8", terms),))
    m, n, k = (a.ravel() for a in np.meshgrid([1.0, 8, 64, 256, 1024, 4096], [256.0, 1024, 4096, 16384],
                                              [512.0, 2048, 8192], indexing="ij"))
    for folder, chip in (("h100_sxm", "h100-sxm"), ("b200_sxm", "b200")):
        t = gemm_s(prof, get_accelerator(chip), m=m, n=n, k=k, dtype="fp8")
        out = tmp_path / folder / "gemm" / "trtllm" / "1.0"
        out.mkdir(parents=True)
        pq.write_table(pa.table({"gemm_dtype": ["fp8"] * m.size, "kernel_source": ["x"] * m.size, "m": m, "n": n,
                                 "k": k, "latency": t * 1e3}), out / "gemm_perf.parquet")
    return tmp_path


@pytest.mark.parametrize("scheme", ["model", "chip"])
def test_kernel_folder_holdout_json(tmp_path, scheme):
    root = _kernels(tmp_path)
    got = _json(["validate", str(root), "--holdout", scheme])
    assert (got["source"], got["holdout"]) == ("kernels", scheme)
    cell = {(c["by"], c["group"]): c for c in got["cells"] if c["quantity"] == "gemm fp8"}
    assert cell[("all", "all")]["predicted"] == 144 and cell[("all", "all")]["median"] < 0.02
    assert cell[("chip", "b200")]["ideal_below"] == 1.0 and ("engine", "trtllm") in cell


def test_kernel_folder_families_scores_only_those(tmp_path):
    root = _kernels(tmp_path)
    assert {c["quantity"] for c in _json(["validate", str(root), "--families", "gemm"])["cells"]} == {"gemm fp8"}
    assert _json(["validate", str(root), "--families", "context_mla,all_to_all"])["cells"] == []


def fails(args, *needles):
    code, text = invoke(args)
    assert code == 2 and text.startswith("error: ") and text.count("\n") == 1 and "Traceback" not in text, text
    for needle in needles:
        assert needle in text, text


def test_bad_input_exits_2_naming_the_problem(tmp_path, silicon):
    path, configs = silicon
    fails(["validate", str(tmp_path / "missing.csv")], "missing.csv")
    empty = tmp_path / "empty"
    empty.mkdir()
    fails(["validate", str(empty)], "measurements", "h100_sxm", "kernels folder")
    fails(["validate", path, "--configs", configs, "--chips", "b201"], "--chips", "b201", "did you mean 'b200'")
    fails(["validate", path, "--configs", configs, "--models", "Qwen/Qwen3-33B"], "--models", "Qwen/Qwen3-32B")
    fails(["validate", path, "--configs", configs, "--profile", "b200/trtllm"], "--profile")
    fails(["validate", path, "--configs", str(tmp_path)], "measurements", "no aggregated row")
    fails(["validate", str(_kernels(tmp_path / "k")), "--models", "x"], "--models", "no model column")
    fails(["validate", str(tmp_path / "k"), "--families", "mla"], "--families", "mla", "context_mla")
    fails(["validate", path, "--configs", configs, "--families", "gemm"], "--families", "kernel-tables folder")
    meas = tmp_path / "m.csv"
    meas.write_text("kind,accelerator,m,n,k,dtype,measured_s\ngemm,h100-sxm,1,1,1,bf16,1e-6\n")
    fails(["validate", str(meas), "--holdout", "chip"], "--holdout", "measurement CSV")


@pytest.mark.parametrize("scheme, key", [("model", "model"), ("chip", "chip")])
def test_no_fit_sees_its_held_out_group(silicon, monkeypatch, scheme, key):
    """Spy on the fitter's and the predictor's inputs: every fit's rows and the rows it then predicts
    share no model (leave one model out) or no chip (leave one chip out)."""
    from llmecon.fidelity import holdout_silicon as hs
    from llmecon.fidelity.silicon import read_silicon

    path, configs = silicon
    rows, _ = read_silicon(path, configs)
    calls = []
    real_fit, real_predict = hs.fit_fold, hs._predict
    monkeypatch.setattr(hs, "fit_fold", lambda train, r, lin, hold=None: calls.append(["fit", list(train)]) or
                        real_fit(train, r, lin, hold))
    monkeypatch.setattr(hs, "_predict", lambda r, held, terms: calls.append(["predict", list(held)]) or
                        real_predict(r, held, terms))
    got = hs.silicon_holdout(rows, scheme)
    assert calls and calls[-1][0] == "predict"
    fits = []  # every fit since the last prediction (the engine-pooled fit of the shared terms included)
    for kind, idx in calls:
        if kind == "fit":
            fits.append(idx)
            continue
        assert fits, "a prediction without a fit"
        for train in fits:
            assert {getattr(rows[i], key) for i in train}.isdisjoint({getattr(rows[i], key) for i in idx})
        fits = []
    assert np.isfinite(got.held_tpot_s).all()  # every row predicted from a fit that never saw it


def test_silicon_rows_of_other_vendors_are_scored_apart(tmp_path):
    """Rows of a catalogue system of another vendor (mi300x-8) in the same CSV format are read, priced with the
    chip's profile for their engine (a transferred one here) and reported per vendor and per vendor/engine."""
    path, configs = _silicon(tmp_path)
    text = open(path).read().replace(",trtllm,", ",vllm,")
    amd = [line.replace("h200_sxm", "mi300x-8").replace("r", "a", 1) for line in text.splitlines()
           if ",h200_sxm," in line and ",agg," in line]
    with open(path, "w") as f:
        f.write(text + "\n".join(amd) + "\n")
    got = _json(["validate", path, "--configs", configs, "--holdout", "chip"])
    cells = {(c["quantity"], c["by"], c["group"]): c for c in got["cells"]}
    assert {("TPOT", "vendor", "NVIDIA"), ("TPOT", "vendor", "AMD"), ("TPOT", "vendor/engine", "AMD/vllm"),
            ("TTFT c<=8", "vendor", "AMD"), ("TPOT", "chip", "mi300x")} <= set(cells)
    assert cells[("TPOT", "vendor", "AMD")]["rows"] == 16 and cells[("TPOT", "vendor", "AMD")]["predicted"] > 0
    code, out = invoke(["validate", path, "--configs", configs, "--holdout", "none", "--chips", "mi300x,h200"])
    assert code == 0 and "per vendor and engine" in out and "coverage" in out and "AMD/vllm" in out


def test_a_file_without_amd_rows_says_so(silicon):
    path, configs = silicon
    code, out = invoke(["validate", path, "--configs", configs, "--holdout", "none", "--chips", "b200"])
    assert code == 0 and "no AMD rows" in out
