"""Issue 22 on the web API: speculative decoding in /api/simulate, cache hits in /api/cost and
/api/plan, the frontier in /api/plan (frontier: true). Each answers the same JSON as the CLI
command with the same inputs; bad input is a 422 naming the field."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("fastapi", reason="the web API needs the [web] extra: pip install -e '.[web]'")
pytest.importorskip("httpx", reason="FastAPI's TestClient needs httpx")

from cli_run import invoke  # noqa: E402
from fastapi.testclient import TestClient  # noqa: E402

from llmecon.web import create_app  # noqa: E402


@pytest.fixture(scope="module")
def client():
    return TestClient(create_app(), raise_server_exceptions=False)


def _cli(*args):
    code, out = invoke([*args, "--json"])
    assert code == 0, out
    return json.loads(out)


def _ok(client, path, body):
    r = client.post(path, json=body)
    assert r.status_code == 200, r.text
    return r.json()


@pytest.mark.parametrize("mode", ["ideal", "calibrated"])
def test_cost_with_speculation_and_cache_hits_is_the_cli_answer(client, mode):
    web = _ok(client, "/api/cost", {"price_per_chip_hour": 3.0, "context": 8192, "spec_tokens": 1,
                                    "cache_hit": 0.6, "cached_prefix": 6000, "mode": mode})
    cli = _cli("cost", "--mode", "ideal", "--cache-hold", "0", "--price-per-chip-hour", "3", "-L", "8192",
               "--spec-tokens", "1",
               "--cache-hit", "0.6",
               "--cached-prefix", "6000", "--mode", mode)
    assert web == cli
    h = web["cache_hit"]
    # blended input price by hand: (1 - h)·miss + h·hit
    assert h["usd_per_mtok_input_blended"] == pytest.approx(0.4 * h["usd_per_mtok_input"]
                                                            + 0.6 * h["usd_per_mtok_input_hit"], rel=1e-12)
    assert web["speculation"]["tokens_per_step"] == pytest.approx(1.85)


def test_cost_without_cache_hit_has_none(client):
    assert _ok(client, "/api/cost", {"price_per_chip_hour": 2.0}).get("cache_hit") is None


def test_plan_cache_hit_is_the_cli_answer(client):
    body = {"systems": ["gb200-nvl72"], "max_chips": 72, "price_per_chip_hour": 3.0, "cache_hit": 0.5,
            "cached_prefix": 3000}
    web = _ok(client, "/api/plan", body)
    cli = _cli("plan", "-s", "gb200-nvl72", "--max-chips", "72", "--price-per-chip-hour", "3", "--cache-hit", "0.5",
               "--cached-prefix", "3000")  # both default to auto mode (issue 35)
    assert web["cache_hit"] == cli["cache_hit"]
    assert web["cache_hit"]["usd_per_mtok_input_blended"] < web["cache_hit"]["usd_per_mtok_input"]


def test_plan_frontier_is_the_cli_answer(client):
    web = _ok(client, "/api/plan", {"systems": ["gb200-nvl72", "hgx-h100"], "frontier": True, "interactivity": 50,
                                    "price_per_chip_hour": 3.0, "max_chips": 72})
    cli = _cli("plan", "--frontier", "-s", "gb200-nvl72,hgx-h100", "--interactivity", "50",
               "--price-per-chip-hour", "3", "--max-chips", "72")  # both default to auto mode (issue 35)
    assert web["frontier"] == cli["frontier"]
    assert web["at_interactivity"]["systems"] == cli["at_interactivity"]["systems"]
    assert web["at_interactivity"]["tokens_per_s_per_user"] == 50
    # default interactivity: 1 / tpot_s
    d = _ok(client, "/api/plan", {"systems": ["gb200-nvl72"], "frontier": True, "tpot_s": 0.04, "max_chips": 72})
    assert d["at_interactivity"]["tokens_per_s_per_user"] == pytest.approx(25.0)
    assert d["at_interactivity"]["source"] == "1/tpot_s"


def test_plan_frontier_searches_speculation(client):
    d = _ok(client, "/api/plan", {"systems": ["gb200-nvl72"], "frontier": True, "max_chips": 72, "spec_tokens": 1})
    assert [s["spec_tokens"] for s in d["speculation_searched"]] == [1]


@pytest.mark.parametrize("mode", ["ideal", "calibrated"])
def test_simulate_with_speculation_is_the_cli_answer(client, mode):
    body = {"requests": 200, "rate": 20.0, "prompt_tokens": 512, "output_tokens": 64, "spec_tokens": 2,
            "acceptance": [0.8], "mode": mode}
    web = _ok(client, "/api/simulate", body)
    cli = _cli("simulate", "--requests", "200", "--rate", "20", "--prompt", "512", "--output", "64",
               "--spec-tokens", "2", "--acceptance", "0.8", "--mode", mode)
    assert web == cli
    assert web["speculation"]["tokens_per_step"] == pytest.approx(1 + 0.8 + 0.64)
    plain = _ok(client, "/api/simulate", {k: v for k, v in body.items() if k not in ("spec_tokens", "acceptance")})
    assert plain["speculation"] is None
    assert web["tpot_p50_s"] < plain["tpot_p50_s"]


@pytest.mark.parametrize("path, body, field", [
    # no price and no sourced TCO default for the A100 (issue 35: priced by the defaults where they exist)
    ("/api/cost", {"model": "llama-3.1-8b", "system": "hgx-a100", "mode": "ideal"}, "price_per_chip_hour"),
    ("/api/cost", {"price_per_chip_hour": 2.0, "cache_hit": 1.5}, "cache_hit"),
    ("/api/cost", {"price_per_chip_hour": 2.0, "cached_prefix": 100}, "cached_prefix"),
    ("/api/cost", {"price_per_chip_hour": 2.0, "cache_hit": 0.5, "cached_prefix": 5000}, "cached_prefix"),
    ("/api/cost", {"price_per_chip_hour": 2.0, "spec_tokens": 2, "acceptance": [0.9, 0.8, 0.7]}, "acceptance"),
    ("/api/plan", {"interactivity": 50}, "interactivity"),
    ("/api/plan", {"frontier": True, "cache_hit": 0.5}, "cache_hit"),
    ("/api/plan", {"frontier": True, "interactivity": 0}, "interactivity"),
    ("/api/plan", {"cache_hit": 0.5, "cached_prefix": 4096}, "cached_prefix"),
    ("/api/simulate", {"spec_tokens": 1, "policy": "train"}, "spec_tokens"),
    ("/api/simulate", {"spec_tokens": 1, "acceptance": [0.8], "draft": "no-such-model"}, "draft"),
    ("/api/simulate", {"spec_tokens": 1, "acceptance": "0.8"}, "acceptance"),
])
def test_bad_input_is_422_naming_the_field(client, path, body, field):
    r = client.post(path, json=body)
    assert r.status_code == 422, r.text
    assert any(d["loc"][-1] == field for d in r.json()["detail"]), r.text


def test_cost_at_price_zero_keeps_the_hit_ratio(client):
    """Found by schemathesis: a hit's cost over a miss's was a ratio of $ (0/0 at a zero price); it is
    a ratio of device time, the same at every price."""
    free = _ok(client, "/api/cost", {"price_per_chip_hour": 0.0, "cache_hit": 0.5})["cache_hit"]
    paid = _ok(client, "/api/cost", {"price_per_chip_hour": 3.0, "cache_hit": 0.5})["cache_hit"]
    assert free["usd_per_mtok_input_blended"] == 0.0
    assert free["hit_cost_ratio"] == paid["hit_cost_ratio"]
    assert paid["hit_cost_ratio"] == pytest.approx(paid["usd_per_mtok_input_hit"] / paid["usd_per_mtok_input"],
                                                   rel=1e-12)
