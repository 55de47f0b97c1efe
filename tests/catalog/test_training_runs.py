"""The published training runs of ``catalog/training_runs.toml`` (``llmecon train --preset``): strict keys
with "did you mean", typed values, one published figure each."""

from __future__ import annotations

import pytest

from llmecon.catalog.training_runs import get_training_run, parse_training_run, training_runs
from llmecon.errors import CatalogError

BASE = dict(description="d", source="s", status="recalled", model="llama-3.1-8b", system="hgx-h100", seq_len=4096,
            global_batch_tokens=4096 * 8, published_tflops_per_gpu=400)


def test_shipped_runs():
    runs = training_runs()
    assert set(runs) == {"llama3-405b-8k", "llama3-405b-16k", "llama3-405b-16k-cp16", "deepseek-v3"}
    assert [runs[n].value for n in ("llama3-405b-8k", "llama3-405b-16k", "llama3-405b-16k-cp16")] == [430, 400, 380]
    ds = runs["deepseek-v3"]
    assert ds.metric == "gpu_hours" and ds.value == 2.664e6 and ds.options["tokens"] == 14.8e12
    assert ds.options["global_batch_tokens"] == 15360 * 4096 and ds.options["precision"] == "fp8_block"
    for r in runs.values():  # every layout multiplies out to its GPUs (Table 4: 8,192 / 16,384; DeepSeek 2,048)
        o = r.options
        assert o["tp"] * o.get("cp", 1) * o["pp"] * o["dp"] in (2048, 8192, 16384)


@pytest.mark.parametrize("change,message", [
    (dict(tp_size=8), "unknown key 'tp_size'"),
    (dict(scheduel="1f1b"), "did you mean 'schedule'"),
    (dict(tp=8.0), "tp: expected a whole number"),
    (dict(tp=True), "tp: expected a whole number"),
    (dict(mtp=1), "mtp: expected true or false"),
    (dict(comm_sm_share=-0.1), "comm_sm_share: expected a number above 0"),
    (dict(status="guessed"), "status: expected one of"),
    (dict(published_gpu_hours=1e6), "exactly one of"),
    (dict(published_tflops_per_gpu=None), "exactly one of"),
])
def test_bad_entries_are_refused(change, message):
    entry = {**BASE, **change}
    entry = {k: v for k, v in entry.items() if v is not None}
    with pytest.raises(CatalogError, match=message):
        parse_training_run("x", entry, "test.toml")


def test_missing_key_and_gpu_hours_without_tokens():
    with pytest.raises(CatalogError, match="missing required key 'model'"):
        parse_training_run("x", {k: v for k, v in BASE.items() if k != "model"}, "test.toml")
    entry = {k: v for k, v in BASE.items() if k != "published_tflops_per_gpu"}
    with pytest.raises(CatalogError, match="needs the run's tokens"):
        parse_training_run("x", {**entry, "published_gpu_hours": 1e6}, "test.toml")


def test_unknown_run_names_the_known_ones():
    with pytest.raises(CatalogError, match="did you mean 'deepseek-v3'") as exc:
        get_training_run("deepseek-v4")
    assert exc.value.field == "preset"


def test_preset_options_lay_given_over_the_run_over_defaults():
    """The rules both front-ends share: given options win, the run's fill the rest, the defaults the others;
    --gpus without --dp derives dp; mode calibrated unless chosen; changed lists what alters the prediction
    (not output or price), and whether the layout changed."""
    from llmecon.catalog.training_runs import preset_options

    run = get_training_run("llama3-405b-16k")
    defaults = dict(tp=8, pp=1, dp=None, cp=1, gpus=None, mode=None, profile=None, efficiency=None, seq_len=4096,
                    kernel_share=None, price_per_gpu_hour=None, micro_batch=1)
    plain = preset_options(run, {}, defaults)
    assert plain.options["pp"] == 16 and plain.options["dp"] == 128 and plain.options["mode"] == "calibrated"
    assert plain.changed == () and not plain.layout_changed
    same = preset_options(run, {"pp": 16, "gpus": 16384, "price_per_gpu_hour": 2.0}, defaults)
    assert same.changed == () and same.options["dp"] is None  # dp derived from the GPUs given
    ks = preset_options(run, {"kernel_share": 0.9, "mode": "ideal"}, defaults)
    assert set(ks.changed) == {"kernel_share", "mode"} and not ks.layout_changed and ks.options["mode"] == "ideal"
    mb = preset_options(run, {"micro_batch": 2}, defaults)
    assert mb.changed == ("micro_batch",) and mb.layout_changed
