"""The training planner on the web API: ``POST /api/train`` answers what ``llmecon train --json`` prints for the
same options (the same library calls and the same view, report.training.train_dict), a preset runs a published
training run beside its figure (report.training.published_dict), and bad input is a 422 naming the field.

The CLI runs in-process (tests/cli_run.invoke_json, the command ``python -m llmecon`` runs), so the file
stays well under 20 s on 2 cores."""

from __future__ import annotations

import pytest

pytest.importorskip("fastapi", reason="the web API needs the [web] extra: pip install -e '.[web]'")
pytest.importorskip("httpx", reason="FastAPI's TestClient needs httpx")

from fastapi.testclient import TestClient  # noqa: E402

from cli_run import invoke_fails, invoke_json  # noqa: E402
from llmecon.web import create_app  # noqa: E402
from llmecon.web.routes import TRAIN_WALK_MAX  # noqa: E402

from tco_placeholders import SITE as TCO  # noqa: E402  placeholders, not facts (docs/tco.md)


@pytest.fixture(scope="module")
def client():
    return TestClient(create_app(), raise_server_exceptions=False)


def _ok(client, body: dict) -> dict:
    r = client.post("/api/train", json=body)
    assert r.status_code == 200, r.text
    return r.json()


def _as_web(cli: dict) -> dict:
    """The CLI's JSON with the preset's changed options spelled as the web's fields (--seq-len -> seq_len)."""
    if "published" in cli:
        p = cli["published"]
        cli["published"] = {**p, "changed_options": [o.removeprefix("--").removeprefix("no-").replace("-", "_")
                                                     for o in p["changed_options"]]}
    return cli


def _error(client, body: dict) -> dict:
    r = client.post("/api/train", json=body)
    assert r.status_code == 422, r.text
    assert "Traceback" not in r.text
    detail = r.json()["detail"]
    assert len(detail) == 1 and detail[0]["msg"]
    return detail[0]


def test_default_request_equals_the_cli(client):
    assert _ok(client, {}) == invoke_json("train")


def test_options_equal_the_cli(client):
    """Options of every kind (job size, schedule, recompute, fp8, goodput, price, calibrated mode) as the CLI's."""
    body = dict(model="llama-3.1-8b", gpus=64, tp=2, pp=4, schedule="interleaved", chunks=2, seq_len=8192,
                global_batch_tokens=8192 * 256, zero=2, recompute="full", precision="fp8", tokens=1e12,
                price_per_gpu_hour=2.5, mode="calibrated", checkpoint_s=60.0, restart_s=600.0, reserve_gb=2.0)
    cli = invoke_json("train", "--model", "llama-3.1-8b", "--gpus", "64", "--tp", "2", "--pp", "4", "--schedule",
                      "interleaved", "--chunks", "2", "--seq-len", "8192", "--global-batch-tokens",
                      str(8192 * 256), "--zero", "2", "--recompute", "full", "--precision", "fp8", "--tokens",
                      "1e12", "--price-per-gpu-hour", "2.5", "--mode", "calibrated", "--checkpoint-s", "60",
                      "--restart-s", "600", "--reserve-gb", "2")
    d = _ok(client, body)
    assert d == cli
    assert d["plan"]["dp"] == 64 // (2 * 4)  # gpus / (tp·pp·cp)
    assert d["usd"] == pytest.approx(d["gpu_hours"] * 2.5, rel=1e-12)
    # by hand: $/Mtok = $/GPU-hour × GPUs / 3,600 s / tokens per s × 1e6
    assert d["usd_per_mtok"] == pytest.approx(2.5 * 64 / 3600 / d["tokens_per_s"] * 1e6, rel=1e-12)
    assert 0 < d["goodput"]["goodput"] < 1


def test_tco_object_prices_as_the_rent_of_its_rate(client):
    rate = client.post("/api/tco", json={"system": "hgx-h100", **TCO}).json()["usd_per_chip_hour"]
    by_tco = _ok(client, {"tokens": 1e12, "tco": TCO})
    by_rent = _ok(client, {"tokens": 1e12, "price_per_gpu_hour": rate})
    assert by_tco["usd"] == pytest.approx(by_rent["usd"], rel=1e-12)
    assert by_tco["price_source"] == "tco" and by_rent["price_source"] != "tco"
    d = _error(client, {"tco": {k: v for k, v in TCO.items() if k != "pue"}})
    assert d["loc"] == ["body", "tco", "pue"]
    assert _error(client, {"tco": TCO, "price_per_gpu_hour": 2.0})["loc"] == ["body", "tco"]


def test_preset_deepseek_v3_equals_the_cli_beside_its_published_figure(client):
    d = _ok(client, {"preset": "deepseek-v3"})
    assert d == invoke_json("train", "--preset", "deepseek-v3")
    p = d["published"]
    assert p["run"] == "deepseek-v3" and p["metric"] == "gpu_hours" and p["value"] == 2.664e6
    assert p["error"] == pytest.approx(0.091, abs=0.005)  # benchmarks/results/training_published_2026-11-27.md
    assert p["error"] == pytest.approx(p["predicted"] / p["value"] - 1, rel=1e-12)
    assert p["changed_options"] == []
    assert d["plan"]["schedule"] == "dualpipe" and d["plan"]["ep"] == 64 and d["gpus"] == 2048
    assert d["precision"] == "fp8_block" and d["fits"] is True
    assert "kernel_efficiency" in d  # calibrated: the preset's default mode


def test_preset_override(client):
    """A field given overrides the preset and is listed when it changes the prediction; one equal to the
    preset's is not; output and price fields never are."""
    d = _ok(client, {"preset": "deepseek-v3", "kernel_share": 0.9, "pp": 16, "price_per_gpu_hour": 2.0})
    cli = invoke_json("train", "--preset", "deepseek-v3", "--kernel-share", "0.9", "--pp", "16",
                      "--price-per-gpu-hour", "2")
    assert d == _as_web(cli)
    assert d["published"]["changed_options"] == ["kernel_share"] and d["kernel_efficiency"]["sustained_share"] == 0.9
    ideal = _ok(client, {"preset": "llama3-405b-8k", "mode": "ideal"})  # mode given: not calibrated
    assert ideal == _as_web(invoke_json("train", "--preset", "llama3-405b-8k", "--mode", "ideal"))
    assert ideal["efficiency"] == 1.0 and ideal["published"]["changed_options"] == ["mode"]
    assert _ok(client, {"preset": "llama3-405b-8k", "dp": None}) == invoke_json("train", "--preset", "llama3-405b-8k")


def test_preset_answers_as_the_cli_and_a_changed_layout_that_does_not_fit_is_422(client):
    """Llama 3 at 8K GPUs needs 82.2 GB on rank 1 by this memory model: it fits the 81,559 MiB an H100 exposes
    (issue 35), as the CLI shows it; a changed layout that does not fit is a 422, as without a preset (an
    even DeepSeek-V3 split with the fp32 EMA on the GPU needs 87 GB)."""
    d = _ok(client, {"preset": "llama3-405b-8k"})
    assert d == invoke_json("train", "--preset", "llama3-405b-8k")
    assert d["fits"] is True and 80e9 < d["memory_per_gpu_bytes"] <= d["hbm_per_gpu_bytes"] == 81_559 * 2**20
    assert d["published"]["changed_options"] == []
    err = _error(client, {"preset": "deepseek-v3", "pp_trim": 0, "ema": "gpu"})
    assert err["type"] == "InfeasibleError" and "87 GB" in err["msg"]


def test_plan_that_does_not_fit_is_422_naming_the_fields_as_the_cli(client):
    d = _error(client, {"tp": 1})
    assert d["type"] == "InfeasibleError" and d["loc"] == ["body"]
    cli = invoke_fails("train", "--tp", "1")
    assert "480 GB per GPU" in d["msg"]
    assert "raise zero, tp or pp, use recompute full, or shrink micro_batch" in d["msg"]
    for flag, field in (("--zero", "zero"), ("--tp", "tp"), ("--pp", "pp"), ("--recompute", "recompute"),
                        ("--micro-batch", "micro_batch")):
        cli = cli.replace(flag, field)
    assert cli == "error: " + d["msg"]


@pytest.mark.parametrize("body, field, words", [
    ({"preset": "deepseek-v4"}, "preset", "did you mean 'deepseek-v3'"),
    ({"schedule": "1f2b"}, "schedule", "did you mean '1f1b'"),
    ({"efficiency": 0.5, "mode": "ideal"}, "efficiency", "without mode/profile"),
    ({"preset": "deepseek-v3", "efficiency": 0.5, "profile": "h100-sxm"}, "efficiency", "without mode/profile"),
    ({"gpus": 12}, "gpus", "multiple of tp·pp·cp = 8"),
    ({"gpus": 16, "dp": 4}, "gpus", "give one of gpus and dp"),
    ({"checkpoint_s": 60.0}, "restart_s", "needs both"),
    ({"kernel_share": 0.5}, "kernel_share", "with a profile"),
    ({"profile": "catalog/profiles/h100-sxm.toml"}, "profile", "unknown profile"),  # names only, never a file
    ({"tp": 3}, "tp", "attention heads"),
    ({"ep": 2}, "ep", "MoE"),
    ({"zero": 4}, "zero", "less than or equal to 3"),
    ({"tp": "8"}, "tp", "integer"),
    ({"tpp": 8}, "tpp", "did you mean 'tp'"),
    ({"preset": "deepseek-v3", "dp": 96}, "ep", "divide"),
])
def test_bad_input_is_422_naming_the_field(client, body, field, words):
    d = _error(client, body)
    assert d["loc"] == ["body", field], d
    assert words in d["msg"], d["msg"]


def test_interleaved_walk_is_bounded_for_a_web_request(client):
    """Over TRAIN_WALK_MAX micro-batch chunks to walk: a 422 naming global_batch_tokens, not a slow answer."""
    m = 40_000  # micro-batches, a multiple of pp: 16 × 40,000 × 7 = 4.48e6 > 4,194,304
    assert 16 * m * 7 > TRAIN_WALK_MAX
    body = dict(model="llama-3.1-405b", schedule="interleaved", pp=16, chunks=7, dp=1, seq_len=1024,
                global_batch_tokens=1024 * m, zero=3, recompute="full")
    d = _error(client, body)
    assert d["loc"] == ["body", "global_batch_tokens"] and "llmecon train" in d["msg"]


def test_catalog_lists_the_training_presets(client):
    runs = {r["name"]: r for r in client.get("/api/catalog").json()["training_runs"]}
    assert runs["deepseek-v3"]["metric"] == "gpu_hours" and runs["deepseek-v3"]["published"] == 2.664e6
    assert runs["llama3-405b-8k"] == {"name": "llama3-405b-8k", "metric": "tflops_per_gpu", "published": 430.0,
                                      "description": runs["llama3-405b-8k"]["description"]}
    assert set(runs) == set(invoke_json("catalog", "training-runs")["training_runs"][i]["name"]
                            for i in range(len(runs)))
