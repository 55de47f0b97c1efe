"""``--cache-hit`` on ``cost``, ``prices list`` and ``prices infer`` (issue 22 item 4), run as a user
runs them: the JSON fields, agreement with hand arithmetic and with the run without --cache-hit, and
bad input exiting 2 with one line naming the option."""

from __future__ import annotations

import pytest
from cli_run import run, run_json

L70 = ("-m", "llama-3.1-70b", "-s", "hgx-h100", "--price-per-chip-hour", "2", "-L", "8192")


@pytest.fixture(scope="module")
def base():
    return run_json("cost", "--mode", "ideal", *L70)


@pytest.fixture(scope="module")
def hit():
    # --cache-hold 0: these assertions are about the compute-only blend (holding: tests/econ/test_cache_hold.py)
    return run_json("cost", "--mode", "ideal", *L70, "--cache-hit", "0.5", "--cached-prefix", "6144",
                    "--provider", "anthropic",
                    "--price-model", "claude-sonnet-4.5", "--cache-hold", "0")


def test_cost_cache_hit_fields(base, hit):
    ch = hit["cache_hit"]
    assert ch["cache_hit_rate"] == 0.5 and ch["cached_prefix_tokens"] == 6144 and ch["prompt_tokens"] == 8192
    assert ch["usd_per_mtok_input"] == base["input_usd_per_mtok"] == hit["input_usd_per_mtok"]
    assert ch["usd_per_mtok_input_blended"] == pytest.approx(
        0.5 * ch["usd_per_mtok_input"] + 0.5 * ch["usd_per_mtok_input_hit"], rel=1e-12)
    assert ch["usd_per_mtok_input_hit"] < ch["usd_per_mtok_input"]
    assert "cache_hit" not in base
    lp = hit["list_price"]
    # Sonnet 4.5: $3 in, $0.30 cached; half the prompts hit 6144/8192 of their tokens: 3·(1 - 0.375) + 0.3·0.375
    assert lp["cached_input_multiplier"] == pytest.approx(0.1)
    assert lp["usd_per_mtok_input_blended"] == pytest.approx(3 * 0.625 + 0.3 * 0.375, rel=1e-12)
    assert lp["input_margin_blended"] == pytest.approx(1 - ch["usd_per_mtok_input_blended"]
                                                       / lp["usd_per_mtok_input_blended"], rel=1e-12)


def test_cost_cache_hit_zero_is_todays_number(base):
    d = run_json("cost", "--mode", "ideal", *L70, "--cache-hit", "0", "--cache-hold", "0")
    assert d["cache_hit"]["usd_per_mtok_input_blended"] == base["input_usd_per_mtok"]


def test_cost_cache_hit_prices_the_hold_by_default(base):
    """Issue 35: with the default 300 s hold, the blend adds holding every prefix (and fetching on a hit),
    so at hit rate 0 it is above today's number, and a break-even hit rate is reported."""
    d = run_json("cost", "--mode", "ideal", *L70, "--cache-hit", "0")["cache_hit"]
    assert d["hold_s"] == 300 and d["cache_tier"] == "host DDR5"
    assert d["usd_per_mtok_input_blended"] == pytest.approx(base["input_usd_per_mtok"] + d["usd_per_mtok_hold"],
                                                            rel=1e-12)
    assert 0 < d["break_even_hit_rate"] < 1


def test_cost_cache_hit_table():
    proc = run("cost", "--mode", "ideal", *L70, "--cache-hit", "0.9", "--provider", "deepseek", "--price-model",
               "deepseek-r1")
    assert proc.returncode == 0, proc.stderr
    assert "input, cache hits" in proc.stdout and "list, cache hits" in proc.stdout


@pytest.mark.parametrize("args, flag", [
    (("--cache-hit", "1.5"), "--cache-hit"),
    (("--cache-hit", "-0.2"), "--cache-hit"),
    (("--cache-hit", "0.5", "--cached-prefix", "8192"), "--cached-prefix"),
    (("--cache-hit", "0.5", "--cached-prefix", "200000", "-L", "300000"), "--cached-prefix"),
    (("--cached-prefix", "100"), "--cached-prefix"),
])
def test_cost_cache_hit_bad_input(args, flag):
    proc = run("cost", "--mode", "ideal", *L70, *args)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    line = proc.stderr.strip()
    assert line.startswith("error:") and "\n" not in line and flag in line


def test_prices_list_blended():
    d = run_json("prices", "list", "--provider", "deepseek", "--cache-hit", "0.5")
    by = {s["model"]: s for s in d["sheets"]}
    assert by["deepseek-r1"]["usd_per_mtok_input_blended"] == pytest.approx(0.345, rel=1e-12)
    assert by["deepseek-v3.2"]["usd_per_mtok_input_blended"] is None  # no cached price on that sheet
    proc = run("prices", "list", "--cache-hit", "2")
    assert proc.returncode == 2 and "--cache-hit" in proc.stderr


def test_prices_infer_cached_input():
    d = run_json("prices", "infer", "--provider", "openai", "--model", "gpt-5", "--cache-hit", "0.8")
    ci = d["cached_input"]
    assert ci["cached_input_multiplier"] == pytest.approx(0.1)
    assert ci["usd_per_mtok_input_blended"] == pytest.approx(1.25 * 0.2 + 0.125 * 0.8, rel=1e-12)
    assert {r["uncached_margin"]: r["cost_ratio"] for r in ci["max_cached_cost_ratio"]}[0.5] == pytest.approx(0.2)
    proc = run("prices", "infer", "--provider", "deepseek", "--model", "deepseek-v3.2", "--cache-hit", "0.5")
    assert proc.returncode == 2 and "--cache-hit" in proc.stderr
    proc = run("prices", "infer", "--provider", "deepseek", "--model", "deepseek-r1")
    assert proc.returncode == 0 and "Cached input" in proc.stdout


PLAN = ("plan", "-m", "llama-3.1-70b", "-s", "hgx-h100", "--price-per-chip-hour", "2", "--mode", "ideal")


def test_plan_cache_hit():
    """h = 0 gives the plan's own prefill $/Mtok and request blend bit for bit; at h = 0.5 the input is
    the mean of miss and hit, the hit priced by hand from the best prefill plan's pass."""
    from llmecon.catalog.hardware import get_system
    from llmecon.catalog.models import get_model
    from llmecon.econ.context import SECONDS_PER_HOUR
    from llmecon.spec.plan import Plan
    from llmecon.step.inference import prefill_step

    zero = run_json(*PLAN, "--cache-hit", "0")
    assert zero["cache_hit"]["usd_per_mtok_input_blended"] == zero["best"]["prefill"]["usd_per_mtok"]
    assert zero["cache_hit"]["usd_per_mtok_request_blended"] == zero["usd_per_mtok_blended"]
    half = run_json(*PLAN, "--cache-hit", "0.5", "--cached-prefix", "3000")
    ch, best = half["cache_hit"], half["best"]["prefill"]
    assert ch["cached_prefix_tokens"] == 3000 and ch["prompt_tokens"] == 4096
    plan = Plan(**{k: best["plan"][k] for k in ("tp", "ep", "pp", "adp")})
    step = prefill_step(get_model("llama-3.1-70b"), get_system("hgx-h100"), batch=best["batch"], prompt_tokens=1096,
                        cached_tokens=3000, plan=plan)
    hit = float(step.step_s) * plan.chips / (best["batch"] * 4096) * 2 / SECONDS_PER_HOUR * 1e6
    assert ch["usd_per_mtok_input_hit"] == pytest.approx(hit, rel=1e-9)
    assert ch["usd_per_mtok_input_blended"] == pytest.approx(0.5 * (best["usd_per_mtok"] + hit), rel=1e-9)
    assert ch["usd_per_mtok_request_blended"] == pytest.approx(
        (4096 * ch["usd_per_mtok_input_blended"] + 512 * half["best"]["decode"]["usd_per_mtok"]) / 4608, rel=1e-12)
    for args, flag in ((("--cache-hit", "1.1"), "--cache-hit"), (("--cached-prefix", "10"), "--cached-prefix"),
                       (("--cache-hit", "0.5", "--cached-prefix", "4096"), "--cached-prefix")):
        proc = run(*PLAN, *args)
        assert proc.returncode == 2 and flag in proc.stderr and "Traceback" not in proc.stderr
