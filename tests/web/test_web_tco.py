"""TCO on the web API (issue 22 item 3): /api/tco answers what ``llmecon tco --json`` prints, /api/plan and
/api/simulate take a ``tco`` object in place of ``price_per_chip_hour``, and a missing or bad input is a 422
located at the input."""

from __future__ import annotations

import pytest

pytest.importorskip("fastapi", reason="the web API needs the [web] extra: pip install -e '.[web]'")
pytest.importorskip("httpx", reason="FastAPI's TestClient needs httpx")

from fastapi.testclient import TestClient  # noqa: E402

from llmecon.web import create_app  # noqa: E402

from tco_placeholders import SITE as TCO, TOTAL  # noqa: E402  placeholders, not facts (docs/tco.md)


@pytest.fixture(scope="module")
def client():
    return TestClient(create_app(), raise_server_exceptions=False)


def test_tco_endpoint(client):
    r = client.post("/api/tco", json={"system": "hgx-h100", **TCO})
    assert r.status_code == 200, r.text
    d = r.json()
    assert d["usd_per_chip_hour"] == pytest.approx(TOTAL, rel=1e-12)
    assert d["usd_per_system_hour"] == pytest.approx(8 * TOTAL, rel=1e-12)


@pytest.mark.parametrize("missing", ["pue", "chips_per_rack"])
def test_tco_missing_input_is_422_at_the_field(client, missing):
    body = {k: v for k, v in TCO.items() if k != missing}
    r = client.post("/api/tco", json={"system": "hgx-h100", **body})
    assert r.status_code == 422
    assert r.json()["detail"][0]["loc"] == ["body", missing]
    r = client.post("/api/simulate", json={"model": "llama-3.1-8b", "system": "hgx-h100", "requests": 50,
                                           "tco": body})
    assert r.status_code == 422
    assert r.json()["detail"][0]["loc"] == ["body", "tco", missing]


def test_unknown_tco_key_gets_did_you_mean(client):
    r = client.post("/api/tco", json={"system": "hgx-h100", **TCO, "peu": 1.2})
    assert r.status_code == 422 and "did you mean 'pue'" in r.text


def test_simulate_and_plan_take_tco(client):
    sim = {"model": "llama-3.1-8b", "system": "hgx-h100", "requests": 50}
    t = client.post("/api/simulate", json={**sim, "tco": TCO}).json()
    r = client.post("/api/simulate", json={**sim, "price_per_chip_hour": TOTAL}).json()
    assert t["usd_per_mtok"] == pytest.approx(r["usd_per_mtok"], rel=1e-12)
    assert t["tokens_per_s_per_mw"] == pytest.approx(t["tokens_per_s_per_chip"] / 910 * 1e6, rel=1e-12)
    both = client.post("/api/simulate", json={**sim, "tco": TCO, "price_per_chip_hour": 2.0})
    assert both.status_code == 422 and both.json()["detail"][0]["loc"] == ["body", "tco"]
    p = client.post("/api/plan", json={"model": "llama-3.1-8b", "systems": ["hgx-h100"], "max_chips": 8,
                                       "tco": TCO})
    assert p.status_code == 200, p.text
    d = p.json()
    assert d["prices"]["hgx-h100"] == pytest.approx(TOTAL, rel=1e-12)
    best = d["best"]["decode"]
    assert best["tokens_per_s_per_mw"] == pytest.approx(best["tokens_per_s_per_chip"] / 910 * 1e6, rel=1e-12)


def test_cost_endpoint_takes_a_tco_object(client):
    base = {"model": "llama-3.1-8b", "system": "hgx-h100", "context": 2048}
    by_tco = client.post("/api/cost", json={**base, "tco": TCO})
    by_rent = client.post("/api/cost", json={**base, "price_per_chip_hour": TOTAL})
    assert by_tco.status_code == 200 and by_rent.status_code == 200, by_tco.text
    assert by_tco.json()["output_usd_per_mtok"] == pytest.approx(by_rent.json()["output_usd_per_mtok"], rel=1e-12)
    assert by_tco.json()["price_source"] == "tco"
    # no price: the catalogue's sourced TCO defaults for the H100 (issue 35), saying so
    r = client.post("/api/cost", json=base)
    assert r.status_code == 200 and r.json()["price_source"] == "tco_defaults", r.text
    r = client.post("/api/cost", json={**base, "system": "hgx-a100"})  # no sourced default for the A100
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "price_per_chip_hour"]
    both = client.post("/api/cost", json={**base, "tco": TCO, "price_per_chip_hour": 2.0})
    assert both.status_code == 422


def test_context_and_analyze_take_tco_at_the_rent_of_the_same_rate(client):
    """TCO on /api/context and /api/analyze prices every curve row as a rent of the same $/chip-hour does."""
    base = {"model": "llama-3.1-8b", "system": "hgx-h100"}
    for path in ("/api/context", "/api/analyze"):
        by_tco = client.post(path, json={**base, "tco": TCO})
        by_rent = client.post(path, json={**base, "price_per_chip_hour": TOTAL})
        assert by_tco.status_code == 200 and by_rent.status_code == 200, by_tco.text
        t, r = by_tco.json(), by_rent.json()
        assert t["price_source"] == "tco" and r["price_source"] == "price_per_chip_hour"
        assert t["tco"]["usd_per_chip_hour"] == pytest.approx(TOTAL, rel=1e-12) and r["tco"] is None
        assert len(t["curve"]) == len(r["curve"]) > 3
        keys = ("output_usd_per_mtok", "input_usd_per_mtok") if path == "/api/context" else ("usd_per_mtok",)
        for a, b in zip(t["curve"], r["curve"]):
            for k in keys:
                assert (a[k] is None and b[k] is None) or a[k] == pytest.approx(b[k], rel=1e-12), (path, k)
    ctx = client.post("/api/context", json={**base, "tco": TCO}).json()
    assert ctx["price_per_chip_hour"] == pytest.approx(TOTAL, rel=1e-12)
    # by hand: $/Mtok = chip-s per token x $/chip-hour / 3,600 x 1e6 (utilisation 1)
    row = ctx["curve"][0]
    assert row["output_usd_per_mtok"] == pytest.approx(row["decode_chip_s_per_token"] * TOTAL / 3600 * 1e6, rel=1e-12)
    plain = client.post("/api/context", json={**base, "system": "hgx-a100"}).json()  # no sourced TCO default
    assert plain["price_source"] is None and plain["tco"] is None
    by_default = client.post("/api/context", json=base).json()  # issue 35: the H100's sourced defaults
    assert by_default["price_source"] == "tco_defaults" and by_default["tco"]["system"] == "hgx-h100"


@pytest.mark.parametrize("path, extra", [("/api/context", {}), ("/api/analyze", {}), ("/api/cost", {"context": 2048}),
                                         ("/api/plan", None), ("/api/simulate", {"requests": 50})])
def test_tco_errors_are_located_under_tco(client, path, extra):
    body = ({"model": "llama-3.1-8b", "systems": ["hgx-h100"], "max_chips": 8} if extra is None
            else {"model": "llama-3.1-8b", "system": "hgx-h100", **extra})
    for drop in ("chip_capex_usd", "pue", "usd_per_kwh"):  # a missing input: located at it
        r = client.post(path, json={**body, "tco": {k: v for k, v in TCO.items() if k != drop}})
        assert r.status_code == 422, r.text
        d = r.json()["detail"][0]
        assert d["loc"] == ["body", "tco", drop] and "missing" in d["msg"], (path, d)
    r = client.post(path, json={**body, "tco": {**TCO, "pue": 0.5}})  # out of range: pydantic's location
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "tco", "pue"]
    r = client.post(path, json={**body, "tco": {**TCO, "peu": 1.2}})  # unknown key: did-you-mean
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "tco", "peu"]
    assert "did you mean 'pue'" in r.json()["detail"][0]["msg"]
    r = client.post(path, json={**body, "tco": {**TCO, "chips_per_rack": "32"}})  # strict types
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "tco", "chips_per_rack"]
    r = client.post(path, json={**body, "tco": TCO, "price_per_chip_hour": 2.0})  # both: named at tco
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "tco"]
    no_hosting = {k: v for k, v in TCO.items() if not k.startswith(("hosting", "chips"))}
    r = client.post(path, json={**body, "tco": no_hosting})
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "tco", "hosting_usd_per_rack_month"]


# ---- review fixes --------------------------------------------------------------------------------


def test_amortisation_floor_on_the_web(client):
    r = client.post("/api/tco", json={"system": "hgx-h100", **TCO, "amortisation_years": 0.01})
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "amortisation_years"]
    r = client.post("/api/tco", json={"system": "hgx-h100", **TCO, "amortisation_years": 1 / 12})
    assert r.status_code == 200, r.text


def test_plan_frontier_carries_the_tco(client):
    p = client.post("/api/plan", json={"model": "llama-3.1-8b", "systems": ["hgx-h100"], "max_chips": 8,
                                       "frontier": True, "tco": TCO})
    assert p.status_code == 200, p.text
    d = p.json()
    assert d["price_source"] == "tco"
    assert d["tco"]["hgx-h100"]["usd_per_chip_hour"] == pytest.approx(TOTAL, rel=1e-12)


def test_tco_defaults_of_a_system_are_the_cli_defaults(client):
    """``defaults: true`` is ``llmecon tco --defaults``: the system's sourced inputs (the page's per-system TCO
    form shows them), each named in ``defaults_used``; GB200 NVL72: $3.0M per rack / 72 GPUs = $41,667 per chip
    (economics.yaml gb200_nvl72_rack_price). A system with no sourced default is a 422 naming the first input."""
    from cli_run import run_json

    r = client.post("/api/tco", json={"system": "gb200-nvl72", "defaults": True})
    assert r.status_code == 200, r.text
    web = r.json()
    assert web == run_json("tco", "--system", "gb200-nvl72", "--defaults")
    assert web["inputs"]["chip_capex_usd"] == pytest.approx(3.0e6 / 72, rel=1e-12)
    assert {"chip_capex_usd", "watts_per_chip", "pue", "usd_per_kwh"} <= set(web["defaults_used"])
    assert "gb200_nvl72_rack_price" in web["inputs"]["source"]
    # an input given wins over its default, and is no longer listed as a default
    pue = client.post("/api/tco", json={"system": "gb200-nvl72", "defaults": True, "pue": 1.1}).json()
    assert pue["inputs"]["pue"] == 1.1 and "pue" not in pue["defaults_used"]
    # no defaults flag: the web still asks for every input
    assert client.post("/api/tco", json={"system": "gb200-nvl72"}).status_code == 422
    assert client.post("/api/tco", json={"system": "hgx-a100", "defaults": True}).status_code == 422
