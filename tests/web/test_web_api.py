"""The web API (issue 8): FastAPI's TestClient against ``llmecon.web.create_app``.

Each endpoint must answer what the CLI command of the same name prints with ``--json`` (same
library call), bad input must be a 422 naming the field, and the server must keep serving.
Hand-computed values: the GB200 roofline ridge (catalogue: 5,000 TFLOP/s fp8 / 8 TB/s = 625
FLOP/B) and the $/Mtok conversion (chip-s per token x $/chip-hour / 3,600 s x 1e6 tokens).
"""

from __future__ import annotations

import pytest

pytest.importorskip("fastapi", reason="the web API needs the [web] extra: pip install -e '.[web]'")
pytest.importorskip("httpx", reason="FastAPI's TestClient needs httpx")

from fastapi.testclient import TestClient  # noqa: E402

from cli_run import run_json  # noqa: E402
from llmecon.web import create_app  # noqa: E402


@pytest.fixture(scope="module")
def client():
    return TestClient(create_app(), raise_server_exceptions=False)


@pytest.fixture(scope="module")
def analyzed(client):
    r = client.post("/api/analyze", json={})
    assert r.status_code == 200, r.text
    return r.json()


def _detail(r) -> list[dict]:
    assert r.status_code == 422, r.text
    detail = r.json()["detail"]
    assert isinstance(detail, list) and detail
    assert "Traceback" not in r.text
    return detail


def test_catalog_lists_the_default_deployment(client):
    d = client.get("/api/catalog").json()
    assert "deepseek-v3" in d["models"] and "gb200-nvl72" in d["systems"] and "h100-sxm" in d["accelerators"]
    assert "fp8" in d["dtypes"] and "fp4" in d["dtypes"]
    assert {"provider": "google", "model": "gemini-2.5-pro", "long_context": True, "cache_prices": False} in \
        [{k: s[k] for k in ("provider", "model", "long_context", "cache_prices")} for s in d["price_sheets"]]


def test_analyze_equals_the_cli(analyzed):
    """No options on either front-end: the same defaults (auto mode, issue 35), the same numbers."""
    cli = run_json("analyze")
    for key in ("balance_batch", "crossover_context", "latency_floor_s", "max_batch", "kv_bytes_per_token", "plan",
                "mode", "fidelity", "mode_requested", "ideal_floor"):
        assert analyzed[key] == cli[key], key
    assert analyzed["decode_at_batch"] == cli["decode_at_batch"]
    # gb200 has a measured profile: auto is calibrated, with the ideal floor below it
    assert analyzed["mode_requested"] == "auto" and analyzed["mode"] == "calibrated"
    assert analyzed["ideal_floor"]["decode_step_s"] < analyzed["decode_at_batch"]["step_s"]
    # no price given: priced by the catalogue's TCO defaults, and it says so
    assert analyzed["price_source"] == "tco_defaults" and analyzed["tco"]["usd_per_chip_hour"] > 0


def test_roofline_ridge_by_hand_and_points_under_the_roof(analyzed):
    roof = analyzed["roofline"]
    assert roof["compute_dtype"] == "fp8"
    assert roof["ridge_flops_per_byte"] == pytest.approx(5000e12 / 8e12, rel=1e-12)  # 625
    pts = roof["points"]
    assert len(pts) == len(analyzed["curve"])
    intensity = [p["intensity_flops_per_byte"] for p in pts]
    assert intensity == sorted(intensity), "more batch reuses each weight byte more"
    for p in pts:  # step time >= max(compute, memory): no point above the roof
        roof_at = min(roof["peak_flops_per_s"], p["intensity_flops_per_byte"] * roof["hbm_bandwidth_bytes_per_s"])
        assert p["achieved_flops_per_s"] <= roof_at * (1 + 1e-9)


def test_analyze_prices_the_curve_by_hand(client):
    r = client.post("/api/analyze", json={"model": "llama-3.1-8b", "system": "hgx-h100", "tp": 1,
                                          "price_per_chip_hour": 3.6}).json()
    row = r["curve"][0]
    assert row["usd_per_mtok"] == pytest.approx(row["chip_s_per_token"] * 3.6 / 3600 * 1e6, rel=1e-12)
    assert r["headline"][0]["label"] == "model" and "llama-3.1-8b" in r["headline"][0]["value"]


def test_step_context_simulate_prices_equal_the_cli(client):
    body = {"model": "llama-3.1-70b", "system": "hgx-h100", "tp": 4}
    assert client.post("/api/step", json={**body, "batch": 64, "context": 8192}).json() == run_json(
        "step", "--model", "llama-3.1-70b", "--system", "hgx-h100", "--tp", "4", "--batch", "64", "--context", "8192")
    ctx = client.post("/api/context", json=body).json()
    # both default to auto mode and price by the catalogue's TCO defaults when no price is given (issue 35)
    cli = run_json("context", "--model", "llama-3.1-70b", "--system", "hgx-h100", "--tp", "4")
    assert ctx == cli
    assert ctx["mode"] == "calibrated" and ctx["price_source"] == "tco_defaults"
    assert all(row["output_usd_per_mtok"] > 0 for row in ctx["curve"] if row["output_usd_per_mtok"] is not None)
    sim = client.post("/api/simulate", json={**body, "rate": 5, "requests": 200, "prompt_tokens": 512,
                                             "output_tokens": 64, "seed": 3}).json()
    cli = run_json("simulate", "--model", "llama-3.1-70b", "--system", "hgx-h100", "--tp", "4", "--rate", "5",
                   "--requests", "200", "--prompt", "512", "--output", "64", "--seed", "3")
    assert sim == cli
    web = client.post("/api/prices/infer", json={"provider": "google", "model": "gemini-2.5-pro"}).json()
    assert web == run_json("prices", "infer", "--provider", "google", "--model", "gemini-2.5-pro")


def test_calibrated_simulate_and_plan_equal_the_cli_and_name_the_profile(client):
    """Calibrated mode reaches the simulator and the planner through the web as through the CLI."""
    body = {"model": "llama-3.1-8b", "system": "h100-sxm", "mode": "calibrated"}
    sim = client.post("/api/simulate", json={**body, "rate": 4, "requests": 50, "prompt_tokens": 256,
                                             "output_tokens": 32, "seed": 1}).json()
    cli = run_json("simulate", "--model", "llama-3.1-8b", "--system", "h100-sxm", "--mode", "calibrated",
                   "--rate", "4", "--requests", "50", "--prompt", "256", "--output", "32", "--seed", "1")
    assert sim == cli and sim["fidelity"] == "calibrated (h100-sxm)"
    plan = client.post("/api/plan", json={"model": "llama-3.1-8b", "systems": ["hgx-h100"], "max_chips": 8,
                                          "mode": "calibrated"}).json()
    assert plan["fidelity"] == "calibrated (h100-sxm)" and plan["mode"] == "calibrated"
    refused = client.post("/api/simulate", json={**body, "system": "rubin"})
    assert refused.status_code == 422 and "no efficiency profile" in refused.text


def test_plan_equals_the_cli(client):
    # ideal and priced on both
    web = client.post("/api/plan", json={"model": "llama-3.1-70b", "systems": ["hgx-h100"], "max_chips": 8,
                                         "price_per_chip_hour": 2.0, "mode": "ideal"}).json()
    cli = run_json("plan", "--model", "llama-3.1-70b", "--systems", "hgx-h100", "--max-chips", "8",
                   "--price-per-chip-hour", "2", "--mode", "ideal")
    assert web["best"] == cli["best"] and web["frontier"] == cli["frontier"]


def test_plan_default_equals_the_cli_default(client):
    """No mode and no price on either front-end: auto mode, priced by the catalogue's TCO defaults (issue 35)."""
    web = client.post("/api/plan", json={"model": "llama-3.1-70b", "systems": ["hgx-h100"], "max_chips": 8}).json()
    cli = run_json("plan", "--model", "llama-3.1-70b", "--systems", "hgx-h100", "--max-chips", "8")
    assert web["best"] == cli["best"] and web["frontier"] == cli["frontier"]
    assert web["mode"] == cli["mode"] == "calibrated"
    assert web["price_source"] == cli["price_source"] == "tco_defaults"


def test_cost_default_equals_the_cli_default(client):
    """``/api/cost`` with no body is ``llmecon cost`` with no flags: auto mode, the ideal floor beside it, and
    $/Mtok from the catalogue's TCO defaults, saying so."""
    web = client.post("/api/cost", json={}).json()
    assert web == run_json("cost")
    assert web["mode_requested"] == "auto" and web["fidelity"] == "calibrated (gb200/trtllm)"
    assert web["price_source"] == "tco_defaults" and web["price_per_chip_hour"] == web["tco"]["usd_per_chip_hour"]
    # the floor is the roofline: cheaper than the calibrated cost
    assert web["ideal_floor"]["output_usd_per_mtok"] < web["output_usd_per_mtok"]


def test_bad_plan_names_the_field_and_the_server_keeps_serving(client):
    (d,) = _detail(client.post("/api/analyze", json={"tp": 3}))
    assert d["loc"] == ["body", "tp"] and d["msg"].startswith("tp 3:") and "128" in d["msg"]
    assert client.post("/api/step", json={}).status_code == 200


@pytest.mark.parametrize("body, field, words", [
    ({"model": "deepseek-v4"}, "model", "did you mean 'deepseek-v3'"),
    ({"model": "/etc/passwd"}, "model", "unknown model"),  # the web never reads a path
    ({"system": "gb200-nvl27"}, "system", "did you mean"),
    ({"batchh": 8}, "batchh", "did you mean 'batch'"),
    ({"batch": -3}, "batch", "greater than or equal to 1"),
    ({"context": "long"}, "context", "number"),
    ({"mode": "fast"}, "mode", "ideal"),
    ({"weight_dtype": "fp7"}, "weight_dtype", "fp7"),
])
def test_bad_input_is_422_naming_the_field(client, body, field, words):
    detail = _detail(client.post("/api/analyze", json=body))
    assert any(d["loc"][-1] == field and words in d["msg"] for d in detail), detail


def test_calibrated_without_a_profile_is_422(client):
    detail = _detail(client.post("/api/analyze", json={"model": "llama-3.1-8b", "system": "rubin",
                                                       "mode": "calibrated"}))
    assert "profile" in detail[0]["msg"] and "bf16 peak is unpublished" in detail[0]["msg"]


def test_calibrated_on_a_transferred_profile_says_so(client):
    """A chip without measurements prices with its transferred profile; the JSON carries the fields."""
    got = client.post("/api/analyze", json={"model": "llama-3.1-8b", "system": "tpu-v5e-256", "mode": "calibrated"})
    assert got.status_code == 200, got.text
    d = got.json()
    assert d["transferred"] is True and d["transfer_method"] == "pooled"
    assert "transferred from" in d["fidelity"] and "leave-one-chip-out" in d["fidelity"]
    assert 0 < d["expected_error"]["tpot_median"] < 1


def test_simulation_size_is_bounded(client):
    (d,) = _detail(client.post("/api/simulate", json={"requests": 20000, "output_tokens": 1000}))
    assert d["loc"] == ["body", "requests"] and d["msg"].startswith("requests: requests x output_tokens")


def test_infeasible_deployment_is_422(client):
    (d,) = _detail(client.post("/api/analyze", json={"model": "llama-3.1-405b", "system": "h100-sxm", "tp": 1}))
    assert "does not fit" in d["msg"]
    (d,) = _detail(client.post("/api/step", json={"model": "llama-3.1-8b", "system": "h100-sxm", "batch": 1e6}))
    assert d["loc"] == ["body", "batch"] and "lower batch" in d["msg"], d


def test_openapi_lists_every_endpoint(client):
    paths = client.get("/openapi.json").json()["paths"]
    assert set(paths) == {"/api/catalog", "/api/lecture", "/api/analyze", "/api/step", "/api/context", "/api/plan",
                          "/api/simulate", "/api/cost",
                          "/api/prices/infer", "/api/tco", "/api/train"}


def test_plotly_is_served_locally(client):
    r = client.get("/static/plotly.min.js")
    assert r.status_code == 200 and "javascript" in r.headers["content-type"] and len(r.content) > 1_000_000
    assert client.get("/static/nope.js").status_code == 404


def test_free_chips_plan_without_warnings(client):
    """$0 per chip-hour makes every plan's cost 0: all tie on cost (no 0/0 in the tie-break)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = client.post("/api/plan", json={"model": "llama-3.1-8b", "systems": ["hgx-h100"], "max_chips": 8,
                                           "price_per_chip_hour": 0, "objective": "cost"})
    assert r.status_code == 200 and r.json()["best"]["decode"] is not None


def test_lecture_json_and_page(client):
    """/api/lecture is ``llmecon lecture --json``; /lecture is its self-contained HTML report."""
    web = client.get("/api/lecture").json()
    assert web["claims"] == run_json("lecture")["claims"]
    assert any(c["id"] == "A3.deepseek-balance-batch" and c["verdict"] == "corrected" for c in web["claims"])
    page = client.get("/lecture")
    assert page.status_code == 200 and "A3.deepseek-balance-batch" in page.text and "<svg" in page.text


def test_roofline_operating_point_is_the_chosen_batch(client):
    """A batch off the curve's grid gets its own point: FLOPs / bytes and FLOPs / step / chips of
    the decode step the API reports for it."""
    r = client.post("/api/analyze", json={"model": "llama-3.1-70b", "system": "hgx-h100", "tp": 4,
                                          "batch": 77}).json()
    step, op = r["decode_at_batch"], r["roofline"]["operating_point"]
    assert op["batch"] == 77
    assert op["intensity_flops_per_byte"] == pytest.approx(step["flops"] / (step["weight_bytes"] + step["kv_bytes"]))
    assert op["achieved_flops_per_s"] == pytest.approx(step["flops"] / step["step_s"] / 4)


@pytest.mark.parametrize("lengths, field", [({"prompt_tokens": 170_000, "output_tokens": 10}, "prompt_tokens"),
                                            ({"prompt_tokens": 163_000, "output_tokens": 1_000}, "output_tokens")])
def test_simulate_longer_than_the_context_is_422(client, lengths, field):
    """Issue 18: DeepSeek-V3 (163,840 tokens) — prompt + output beyond it is a 422 on the field whose
    value breaks it (the schema's own bounds, 1M and 100K, allow both)."""
    (d,) = _detail(client.post("/api/simulate", json={"model": "deepseek-v3", "system": "gb200-nvl72",
                                                      "requests": 5, **lengths}))
    assert d["loc"] == ["body", field] and "163,840-token context" in d["msg"]
    assert "prompt_tokens + output_tokens <= 163,840" in d["msg"]


def test_context_reports_the_cap_and_the_memory_side(client):
    c = client.post("/api/context", json={"model": "deepseek-v3", "system": "gb200-nvl72"}).json()
    assert c["model_max_context"] == c["max_context_at_batch_1"] == 163_840 == c["curve"][-1]["context"]
    assert c["kv_capacity_tokens"] > 163_840 and any("163,840-token context" in n for n in c["notes"])


def test_cost_rent_basis_equals_the_cli(client):
    """``price_basis`` rent prices by the catalogue's published rent, as ``--price-basis rent``; the H200 has a
    rent but no sourced TCO default, and the default basis says so, naming the alternative."""
    body = {"model": "llama-3.1-70b", "system": "hgx-h200", "tp": 4}
    web = client.post("/api/cost", json={**body, "price_basis": "rent"}).json()
    cli = run_json("cost", "--model", "llama-3.1-70b", "--system", "hgx-h200", "--tp", "4", "--price-basis", "rent")
    assert web == cli and web["price_source"] == "rent_index"
    assert web["price_per_chip_hour"] == web["rent"]["usd_per_chip_hour"]
    (d,) = _detail(client.post("/api/cost", json=body))
    assert d["loc"] == ["body", "price_per_chip_hour"] and "price_basis" in d["msg"] and "rent" in d["msg"]
