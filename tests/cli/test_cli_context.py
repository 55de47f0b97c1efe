"""The context / cost / cache / prices / catalog-tiers commands end to end, run as ``python -m
llmecon`` like tests/test_cli.py: each ``--json`` output parses and has the documented keys,
values agree with hand arithmetic and with the catalogue (not with earlier outputs of the code),
the commands agree with one another, and bad input exits 2 with one ``error:`` line, no traceback
and no file written.

Each command runs once per module (module-scoped fixtures) to keep the file fast."""

from __future__ import annotations

import math

import pytest
from cli_run import run, run_json

from llmecon.catalog.hardware import get_accelerator
from llmecon.catalog.models import get_model

L70 = ("-m", "llama-3.1-70b", "-s", "hgx-h100")  # smallest plan that fits: tp4 on 4 of the 8 H100s
PRICE2 = ("--price-per-chip-hour", "2")
CACHE = ("cache", *PRICE2, *L70, "--tier-price", "host DDR5=1", "--device", "pm1743:8",
         "--tier-price", "8 x pm1743=0.25")
TIERS = ("prices", "tiers", *PRICE2, *L70)
GOOGLE_TIERS = (*TIERS, "--boundary", "65536", "--margin", "0.5", "--provider", "google",
                "--price-model", "gemini-3-pro-preview")
STEPS = (*TIERS, "--base-input", "0.1", "--base-output", "0.5")




# the hand cases below are on the roofline (--mode ideal); the default (auto) is tested on its own
@pytest.fixture(scope="module")
def ctx():
    return run_json("context", *L70, "--mode", "ideal")


@pytest.fixture(scope="module")
def ctx_p2():
    return run_json("context", *L70, *PRICE2, "--mode", "ideal")


@pytest.fixture(scope="module")
def ctx_p4():
    return run_json("context", *L70, "--price-per-chip-hour", "4", "--mode", "ideal")


def test_context_default_is_calibrated_priced_by_tco_defaults_with_the_ideal_floor(ctx_p2):
    """No mode and no price (issue 35): calibrated (hgx-h100 has a shipped profile), priced by the catalogue's
    TCO defaults, and the ideal floor at the same contexts and batches: --mode ideal's own curve."""
    d = run_json("context", *L70)
    assert d["mode"] == "calibrated" and d["price_source"] == "tco_defaults" and d["price_per_chip_hour"] > 0
    floor = d["ideal_floor"]
    assert floor["mode"] == "ideal" and [r["context"] for r in floor["curve"]] == [r["context"] for r in d["curve"]]
    ideal = {r["context"]: r for r in ctx_p2["curve"]}
    for f, r in zip(floor["curve"], d["curve"]):
        assert f["decode_step_s"] == pytest.approx(ideal[f["context"]]["decode_step_s"], rel=1e-12)
        assert f["calibrated_over_ideal"] == pytest.approx(r["decode_step_s"] / f["decode_step_s"], rel=1e-12)
        assert f["output_usd_per_mtok"] < r["output_usd_per_mtok"]
    assert ctx_p2["ideal_floor"] is None


@pytest.fixture(scope="module")
def catalog_hgx():
    return run_json("catalog", "tiers", "--system", "hgx-h100")


def gray_rule(hold_s: float, priced: dict[str, tuple[float, float, float]]) -> str | None:
    """Gray & Putzolu, by hand: ``priced`` maps a tier to (USD per hour, capacity B, bandwidth B/s). Holding
    costs h = usd/3600/capacity per byte-second, a read f = usd/3600/bandwidth per byte; rank by h, dearest
    first, and stay at the first tier whose break-even f_next / h is >= the hold."""
    rungs = sorted(((usd / 3600 / cap, usd / 3600 / bw, name) for name, (usd, cap, bw) in priced.items()),
                   key=lambda r: -r[0])
    if len(rungs) < 2:
        return None
    for (h, _, name), (_, f_next, _) in zip(rungs, rungs[1:]):
        if hold_s <= f_next / h:
            return name
    return rungs[-1][2]


def hgx_drains(catalog_hgx: dict, *devices: str) -> dict[str, float | None]:
    """Drain times of hgx-h100's tiers plus '8 x DEVICE' tiers; striping 8 drives multiplies
    capacity and bandwidth alike, so the drain is the single drive's."""
    drains = {r["name"]: r["drain_s"] for r in catalog_hgx["systems"]["hgx-h100"]}
    drains.update({f"8 x {d}": catalog_hgx["devices"][d]["drain_s"] for d in devices})
    return drains


# ---- context -----------------------------------------------------------------------------------


def test_context_json_keys(ctx):
    for key in ("model", "system", "plan", "attention", "kv_dtype", "kv_bytes_per_token", "kv_read_bytes_per_token",
                "crossover_context", "balance_batch", "max_context_at_batch_1", "free_hbm_bytes",
                "weights_per_chip_bytes", "curve"):
        assert key in ctx
    assert ctx["model"] == "llama-3.1-70b" and ctx["system"] == "hgx-h100"
    assert isinstance(ctx["curve"], list) and len(ctx["curve"]) >= 5
    for row in ctx["curve"]:
        for key in ("context", "kv_per_sequence_bytes", "max_sequences", "batch", "decode_step_s", "bound",
                    "decode_chip_s_per_token", "prefill_chip_s_per_token"):
            assert key in row
        # no price given: priced by the catalogue's sourced TCO defaults (issue 35), so dollar columns
        assert "output_usd_per_mtok" in row and "input_usd_per_mtok" in row
    assert ctx["price_source"] == "tco_defaults"


def test_context_kv_bytes_per_token_by_hand(ctx):
    # Llama-3.1-70B: K and V x 80 layers x 8 KV heads x head dim 128 x 2 B (bf16)
    assert ctx["kv_bytes_per_token"] == 2 * 80 * 8 * 128 * 2 == 327_680
    assert ctx["kv_dtype"] == "bf16" and ctx["attention"] == "gqa"


def test_context_crossover_closed_form(ctx):
    """SPEC B8 with attention FLOPs (issue 18): L_x = M·BW/(F·kv - a·BW), M the matmul FLOPs per
    token, a the attention FLOPs per cached token (GQA: 4·N·H per layer). crossover_context_of
    compares one sequence's KV-read time with its matmul + attention time on the deployment's own
    (sharded) step. Under tp the matmul FLOPs and the heads split tp ways and, with GQA and tp <= KV
    heads, so do the KV heads: every term shrinks by the same factor and the single-chip closed form
    holds."""
    tp = ctx["plan"]["tp"]
    assert ctx["plan"]["pp"] == 1 and 8 % tp == 0  # 8 KV heads split evenly over tp <= 8
    h100 = get_accelerator("h100-sxm")
    flops, bw = h100.peak_flops_per_s["bf16"], h100.hbm_bandwidth_bytes_per_s
    assert (flops, bw) == (989e12, 3.35e12)  # datasheet numbers the hand formula assumes
    matmul = get_model("llama-3.1-70b").matmul_flops_per_token().total
    attention = 80 * 4 * 64 * 128  # 80 layers x 4·heads·head_dim FLOPs per cached token
    expected = matmul * bw / (flops * 327_680 - attention * bw)  # ~1,477 tokens (1,437 without attention)
    assert ctx["crossover_context"] == pytest.approx(expected, rel=1e-9)


def test_context_memory_wall_by_hand(ctx):
    chips = ctx["plan"]["chips"]
    total = get_model("llama-3.1-70b").params.total
    # bf16 weights split evenly over the chips; the rest of the 81,559 MiB each exposes holds KV
    assert ctx["weights_per_chip_bytes"] == pytest.approx(total * 2 / chips, rel=1e-12)
    assert ctx["free_hbm_bytes"] == pytest.approx(chips * 81_559 * 2**20 - total * 2, rel=1e-12)
    kv, free = ctx["kv_bytes_per_token"], ctx["free_hbm_bytes"]
    assert ctx["kv_capacity_tokens"] == math.floor(free / kv)  # 613,329 tokens (545,936 on the nominal 80 GB)
    # the model's 131,072-token context caps a sequence (before issue 18 the memory limit)
    assert ctx["model_max_context"] == 131_072 == get_model("llama-3.1-70b").max_context
    assert ctx["max_context_at_batch_1"] == 131_072
    assert ctx["curve"][-1]["context"] == ctx["max_context_at_batch_1"]
    assert any("131,072-token context" in n and "613,329" in n for n in ctx["notes"])
    for row in ctx["curve"]:
        assert row["kv_per_sequence_bytes"] == pytest.approx(row["context"] * kv, rel=1e-12)
        assert row["max_sequences"] == math.floor(free / (row["context"] * kv))


def test_context_curve_monotone(ctx):
    curve = ctx["curve"]
    contexts = [r["context"] for r in curve]
    kv = [r["kv_per_sequence_bytes"] for r in curve]
    seqs = [r["max_sequences"] for r in curve]
    assert all(a < b for a, b in zip(contexts, contexts[1:]))
    assert all(a < b for a, b in zip(kv, kv[1:]))
    assert all(a >= b for a, b in zip(seqs, seqs[1:]))
    assert curve[-1]["max_sequences"] >= 1


@pytest.mark.parametrize("plan, never", [(("--tp", "1", "--ep", "8"), True), (("--tp", "2", "--ep", "8"), False)])
def test_context_note_agrees_with_its_table(plan, never):
    """Issue 18: DeepSeek-V3 on hgx-h200. Attention data-parallel (tp1·ep8): 242 FLOP per KV byte per
    chip, above the bf16 ridge 206, so the crossover is never (null) and the note says what bounds
    the table's longest row — the row's own bound. Under tp2 each chip computes half the heads but
    reads the whole latent (121 FLOP/B per chip): the crossover is finite and the note says why. The
    old note said "long contexts are bound by attention compute" in both, over memory-bound rows."""
    d = run_json("context", "-m", "deepseek-v3", "-s", "hgx-h200", *plan)
    last = [r for r in d["curve"] if r["batch"] is not None][-1]
    assert last["context"] == 163_840 == d["max_context_at_batch_1"]
    if never:
        assert d["crossover_context"] is None and d["attention_compute_bound"]
        (note,) = [n for n in d["notes"] if n.startswith("KV reads never outweigh compute")]
        assert f"at 163,840 tokens (batch {last['batch']:,.0f}) the step is {last['bound']}-bound" in note
    else:
        assert d["crossover_context"] > 1_000 and not d["attention_compute_bound"]
        assert d["attention_flops_per_kv_byte_per_chip"] == pytest.approx(d["attention_flops_per_kv_byte"] / 2)
        assert any("each chip reads all of a sequence's KV" in n for n in d["notes"])
    assert not any("bound by attention compute" in n for n in d["notes"])
    text = run("context", "-m", "deepseek-v3", "-s", "hgx-h200", *plan).stdout
    assert ("never" in text) == never


def test_context_decode_cost_is_step_times_chips_over_batch(ctx):
    chips = ctx["plan"]["chips"]
    for row in ctx["curve"]:
        if row["batch"] is None:
            continue
        assert row["batch"] <= row["max_sequences"]
        assert row["decode_chip_s_per_token"] == pytest.approx(row["decode_step_s"] * chips / row["batch"], rel=1e-9)
    # output cost per token grows with context once KV reads dominate
    costs = [r["decode_chip_s_per_token"] for r in ctx["curve"] if r["batch"] is not None]
    assert costs[-1] > 10 * costs[0]


def test_context_priced_rows_and_doubling(ctx, ctx_p2, ctx_p4):
    assert ctx_p2["price_per_chip_hour"] == 2 and ctx_p4["price_per_chip_hour"] == 4
    assert len(ctx_p2["curve"]) == len(ctx_p4["curve"]) == len(ctx["curve"])
    for raw, r2, r4 in zip(ctx["curve"], ctx_p2["curve"], ctx_p4["curve"]):
        assert "output_usd_per_mtok" in r2 and "input_usd_per_mtok" in r2
        # chip-seconds per token x $2 per chip-hour / 3600 s x 1e6 tokens
        assert r2["input_usd_per_mtok"] == pytest.approx(raw["prefill_chip_s_per_token"] * 2 / 3600 * 1e6, rel=1e-9)
        assert r4["input_usd_per_mtok"] == pytest.approx(2 * r2["input_usd_per_mtok"], rel=1e-12)
        if raw["batch"] is None:
            assert r2["output_usd_per_mtok"] is None
            continue
        assert r2["output_usd_per_mtok"] == pytest.approx(raw["decode_chip_s_per_token"] * 2 / 3600 * 1e6, rel=1e-9)
        assert r4["output_usd_per_mtok"] == pytest.approx(2 * r2["output_usd_per_mtok"], rel=1e-12)


def test_context_plot_writes_png(tmp_path):
    pytest.importorskip("matplotlib", reason="matplotlib is needed for --plot")
    out = tmp_path / "c.png"
    proc = run("context", "-m", "llama-3.1-8b", "-s", "h100-sxm", "--plot", str(out))
    assert proc.returncode == 0, proc.stderr
    assert out.stat().st_size > 10_000
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# ---- cost --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cost_sheet():
    return run_json("cost", "--mode", "ideal", *PRICE2, *L70, "--provider", "anthropic", "--price-model",
                    "claude-sonnet-4.6")


def test_cost_list_price_and_margins(cost_sheet):
    for key in ("input_usd_per_mtok", "output_usd_per_mtok", "batch", "chips", "context", "utilization",
                "list_price"):
        assert key in cost_sheet
    lp = cost_sheet["list_price"]
    for key in ("provider", "model", "input_usd_per_mtok", "output_usd_per_mtok", "input_margin", "output_margin",
                "as_of", "status"):
        assert key in lp
    assert (lp["provider"], lp["model"]) == ("anthropic", "claude-sonnet-4.6")
    # Sonnet 4.6 at a 4,096-token prompt: the base $3 in / $15 out (its long-context step is far above)
    assert (lp["input_usd_per_mtok"], lp["output_usd_per_mtok"]) == (3.0, 15.0)
    # margin = share of the price left over after cost
    assert lp["input_margin"] == pytest.approx(1 - cost_sheet["input_usd_per_mtok"] / 3.0, rel=1e-9)
    assert lp["output_margin"] == pytest.approx(1 - cost_sheet["output_usd_per_mtok"] / 15.0, rel=1e-9)


def test_cost_matches_context_curve(cost_sheet, ctx_p2):
    """cost at --context 4096 (largest batch that fits) is the context curve's 4,096-token row."""
    row = next(r for r in ctx_p2["curve"] if r["context"] == cost_sheet["context"] == 4096)
    assert cost_sheet["batch"] == row["batch"]
    assert cost_sheet["output_usd_per_mtok"] == pytest.approx(row["output_usd_per_mtok"], rel=1e-9)
    assert cost_sheet["input_usd_per_mtok"] == pytest.approx(row["input_usd_per_mtok"], rel=1e-9)


def test_cost_half_utilization_doubles_both(cost_sheet):
    half = run_json("cost", "--mode", "ideal", *PRICE2, *L70, "--utilization", "0.5")
    assert half["utilization"] == 0.5 and "list_price" not in half
    assert half["input_usd_per_mtok"] == pytest.approx(2 * cost_sheet["input_usd_per_mtok"], rel=1e-12)
    assert half["output_usd_per_mtok"] == pytest.approx(2 * cost_sheet["output_usd_per_mtok"], rel=1e-12)


# ---- cache -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cache_1h():
    return run_json(*CACHE, "--hold", "1 h")


@pytest.fixture(scope="module")
def cache_5min():
    return run_json(*CACHE, "--hold", "5 min")


def test_cache_json_options(cache_1h):
    for key in ("sequences", "context", "hold_s", "bytes_total", "bytes_per_sequence", "recompute_s",
                "recompute_usd", "cheapest", "five_minute_tier", "options"):
        assert key in cache_1h
    names = [o["tier"] for o in cache_1h["options"]]
    assert {"HBM", "host DDR5", "8 x pm1743"} <= set(names)
    assert cache_1h["hold_s"] == 3600
    for o in cache_1h["options"]:
        for key in ("free_capacity_bytes", "drain_s", "fits", "consistent", "retrieve_s", "hold_usd", "total_usd"):
            assert key in o
    # defaults: 100 sequences x 32,768 tokens x 327,680 B = 1.07 TB
    assert cache_1h["bytes_per_sequence"] == 32_768 * 327_680
    assert cache_1h["bytes_total"] == 100 * 32_768 * 327_680
    by = {o["tier"]: o for o in cache_1h["options"]}
    assert by["HBM"]["fits"] is False  # 179 GB free beside the weights
    assert by["host DDR5"]["fits"] is True and by["8 x pm1743"]["fits"] is True
    # host DDR5 rented at $1/h, held 1 h, prorated by the share of its 2 TB the cache takes
    assert by["host DDR5"]["hold_usd"] == pytest.approx(cache_1h["bytes_total"] / 2e12 * 1.0, rel=1e-9)
    assert cache_1h["cheapest"] in set(names) | {"recompute"}


def test_cache_five_minute_rule(cache_1h, cache_5min, catalog_hgx):
    """Gray's rule on the fitting, priced tiers: host DDR5 at $1/h (2 TB) and 8 x PM1743 at $0.25/h
    (8 x 14 GB/s). Break-even = the drives' $ per byte read / DDR5's $ per byte-second held =
    (0.25/112e9) / (1/2e12) = 4.464 s, so both a 5-minute and a 1-hour hold go to the drives (the old
    drain rule put the 5-minute hold in DDR5, as the drives drain in 18.3 min > 5 min)."""
    assert cache_1h["five_minute_tier"] == "8 x pm1743"
    assert cache_5min["five_minute_tier"] == "8 x pm1743"
    (even,) = cache_5min["break_even_holds"]
    assert (even["faster"], even["slower"]) == ("host DDR5", "8 x pm1743")
    assert even["hold_s"] == pytest.approx(0.25 * 2e12 / (8 * 14e9), rel=1e-9)
    assert {"tier": "local NVMe data cache", "why": "no price"} in cache_5min["unranked_tiers"]
    by = {o["tier"]: o for o in cache_1h["options"]}
    assert by["8 x pm1743"]["drain_s"] == pytest.approx(catalog_hgx["devices"]["pm1743"]["drain_s"], rel=1e-9)
    assert by["8 x pm1743"]["drain_s"] / 60 == pytest.approx(18.3, abs=0.05)
    assert by["host DDR5"]["drain_s"] == pytest.approx(2e12 / 614.4e9, rel=1e-9)
    assert (by["8 x pm1743"]["consistent"], by["host DDR5"]["consistent"]) == (True, False)
    priced = {"host DDR5": (1.0, 2e12, 614.4e9), "8 x pm1743": (0.25, 8 * 15.36e12, 8 * 14e9)}
    assert cache_1h["five_minute_tier"] == gray_rule(3600, priced)
    assert cache_5min["five_minute_tier"] == gray_rule(300, priced)
    assert cache_5min["hold_s"] == 300
    assert cache_5min["cheapest"] in {o["tier"] for o in cache_5min["options"]} | {"recompute"}


def test_cache_five_minute_rule_needs_two_priced_tiers():
    """Only host DDR5 priced among the tiers that fit: Gray's rule has nothing to compare it with."""
    one = run_json("cache", *PRICE2, *L70, "--tier-price", "host DDR5=1", "--device", "pm1743:8")
    assert one["five_minute_tier"] is None and one["break_even_holds"] == []


# ---- prices list -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sheets():
    return run_json("prices", "list")["sheets"]


def test_prices_list(sheets):
    for row in sheets:
        for key in ("provider", "model", "input_usd_per_mtok", "output_usd_per_mtok", "output_input_ratio",
                    "cache_writes", "long_context", "premiums", "status", "source", "as_of"):
            assert key in row
    opus = [r for r in sheets if (r["provider"], r["model"]) == ("anthropic", "claude-opus-4.6")]
    assert len(opus) == 1
    assert opus[0]["output_input_ratio"] == 5
    assert opus[0]["output_usd_per_mtok"] == pytest.approx(5 * opus[0]["input_usd_per_mtok"])


def test_prices_list_provider_filter(sheets):
    google = run_json("prices", "list", "--provider", "google")["sheets"]
    assert google and all(r["provider"] == "google" for r in google)
    assert google == [r for r in sheets if r["provider"] == "google"]


# ---- prices infer ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def infer_google():
    return run_json("prices", "infer", "--provider", "google", "--model", "gemini-3-pro-preview",
                    "--active-params", "100e9", "--chip", "h100-sxm", "--dtype", "fp8")


@pytest.fixture(scope="module")
def infer_opus():
    return run_json("prices", "infer", "--provider", "anthropic", "--model", "claude-opus-4.6")


def test_prices_infer_kv_from_price_step(infer_google):
    """At the 200K price step L_x, KV read per token = 2·N_active FLOPs of matmul time:
    kv = 2·N_active / (R·L_x) with R the chip's FLOP per HBM byte."""
    k = infer_google["kv_from_price_step"]
    r = get_accelerator("h100-sxm").flops_per_byte("fp8")
    assert r == pytest.approx(1979e12 / 3.35e12, rel=1e-9)
    expected = 2 * 100e9 / (r * 200_000)  # ~1.69 KB per token
    assert k["crossover_context"] == 200_000
    assert (k["input_uplift"], k["output_uplift"]) == (2.0, 1.5)
    assert len(k["kv_bytes_per_token"]) == 1 and len(k["kv_bytes_per_token"][0]) == 1
    assert k["kv_bytes_per_token"][0][0] == pytest.approx(expected, rel=1e-9)
    assert k["low"] == pytest.approx(expected, rel=1e-9) and k["high"] == pytest.approx(expected, rel=1e-9)
    assert k["assumptions"]


def test_prices_infer_operating_point(infer_google):
    op = infer_google["operating_point"]
    assert op["price_ratio"] == 6  # $12 out / $2 in
    # B*/B + L/L_x = 6: at B = B*, L = 5 L_x; at L = 0, B = B*/6
    assert op["context_over_crossover_at_balance"] == pytest.approx(5)
    assert op["batch_over_balance_at_short_context"] == pytest.approx(1 / 6)
    assert op["context_at_balance_tokens"] == pytest.approx(5 * 200_000)
    assert infer_google["premiums"] == []


def test_prices_infer_fast_premium_and_cache_tiers(infer_opus, catalog_hgx):
    fast = [p for p in infer_opus["premiums"] if p["premium"] == "fast"]
    assert len(fast) == 1
    # 6x price for 2.5x speed: the regular batch is 6 x 2.5 = 15x the fast one
    assert fast[0]["price_ratio"] == pytest.approx(6) and fast[0]["speedup"] == pytest.approx(2.5)
    assert fast[0]["batch_ratio"] == pytest.approx(15)
    ct = infer_opus["cache_tiers"]
    assert ct["system"] == "hgx-h100" and ct["kv_bytes_per_token"] > 0
    rows = ct["five_minute_tier"]
    assert [r["hold_s"] for r in rows] == [300, 3600]  # Anthropic's 5-minute and 1-hour cache writes
    # default devices pm1743:8 and exos-x24:8 beside hgx-h100's own tiers; nothing priced: no Gray tier
    drains = hgx_drains(catalog_hgx, "pm1743", "exos-x24")
    assert [r["tier"] for r in rows] == [None, None] and ct["break_even_holds"] == []
    assert {f["tier"] for f in ct["fits"]} <= set(drains)


def test_prices_infer_cache_tiers_by_gray_rule():
    """Priced (HBM 8 x $2/h over 8 x 81,559 MiB = 684.17 GB; DDR5 $1/h; 8 x PM1743 $0.25/h; 8 x Exos X24
    $0.05/h), Gray's break-evens are HBM -> DDR5 (1/614.4e9)/(16/684.17e9) = 69.6 ms, DDR5 -> drives 4.46 s,
    drives -> disks
    (0.05/(8 x 285e6))/(0.25/(8 x 15.36e12)) = 10,779 s = 3.0 h: both Anthropic holds land on the drives."""
    out = run_json("prices", "infer", "--provider", "anthropic", "--model", "claude-opus-4.6", *PRICE2,
                   "--tier-price", "host DDR5=1", "--tier-price", "8 x pm1743=0.25",
                   "--tier-price", "8 x exos-x24=0.05")
    ct = out["cache_tiers"]
    hbm = 8 * 81_559 * 2**20
    priced = {"HBM": (16.0, hbm, 8 * 3.35e12), "host DDR5": (1.0, 2e12, 614.4e9),
              "8 x pm1743": (0.25, 8 * 15.36e12, 8 * 14e9), "8 x exos-x24": (0.05, 8 * 24e12, 8 * 285e6)}
    assert [(r["hold_s"], r["tier"]) for r in ct["five_minute_tier"]] == [(300, "8 x pm1743"), (3600, "8 x pm1743")]
    for r in ct["five_minute_tier"]:
        assert r["tier"] == gray_rule(r["hold_s"], priced)
    evens = [(e["faster"], e["slower"], e["hold_s"]) for e in ct["break_even_holds"]]
    assert evens == [("HBM", "host DDR5", pytest.approx(hbm / (614.4e9 * 16), rel=1e-9)),
                     ("host DDR5", "8 x pm1743", pytest.approx(0.25 * 2e12 / 112e9, rel=1e-9)),
                     ("8 x pm1743", "8 x exos-x24", pytest.approx(0.05 * 122.88e12 / (0.25 * 2.28e9), rel=1e-9))]


# ---- prices tiers ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tiers_google():
    return run_json(*GOOGLE_TIERS)


@pytest.fixture(scope="module")
def tiers_steps():
    return run_json(*STEPS)


def test_prices_tiers_fixed_boundary(tiers_google, ctx_p2):
    assert tiers_google["price_per_chip_hour"] == 2 and tiers_google["schedule"]["margin"] == 0.5
    tiers = tiers_google["schedule"]["tiers"]
    uppers = [t["up_to_tokens"] for t in tiers]
    assert uppers[0] == 65_536
    assert all(a < b for a, b in zip(uppers, uppers[1:]))
    assert uppers[-1] == ctx_p2["max_context_at_batch_1"] == 131_072  # the model's context, not memory
    assert tiers[0]["input_multiplier"] == 1 and tiers[0]["output_multiplier"] == 1
    lower = 0
    for t in tiers:
        assert t["input_multiplier"] == pytest.approx(t["input_usd_per_mtok"] / tiers[0]["input_usd_per_mtok"])
        assert t["output_multiplier"] == pytest.approx(t["output_usd_per_mtok"] / tiers[0]["output_usd_per_mtok"])
        # each tier is priced at 1.5 x the highest cost on the context curve inside it
        rows = [r for r in ctx_p2["curve"] if lower < r["context"] <= t["up_to_tokens"]]
        assert rows
        assert t["input_usd_per_mtok"] == pytest.approx(1.5 * max(r["input_usd_per_mtok"] for r in rows), rel=1e-9)
        assert t["output_usd_per_mtok"] == pytest.approx(1.5 * max(r["output_usd_per_mtok"] for r in rows), rel=1e-9)
        lower = t["up_to_tokens"]


def test_prices_tiers_check_against_gemini(tiers_google):
    check = tiers_google["check"]
    assert (check["provider"], check["model"]) == ("google", "gemini-3-pro-preview")
    losing = check["losing"]
    assert isinstance(losing["input"], list) and isinstance(losing["output"], list)
    for kind in ("input", "output"):
        for span in losing[kind]:
            assert span["from_tokens"] <= span["to_tokens"]
        # a context is in a losing span exactly when the price is below cost there
        for row in check["rows"]:
            below = row[f"{kind}_price"] < row[f"{kind}_cost"]
            inside = any(s["from_tokens"] <= row["context"] <= s["to_tokens"] for s in losing[kind])
            assert below == inside, (kind, row)
    # Gemini 3 Pro's published sheet: $2/$12 up to 200K, $4/$18 above; the stand-in model's prompts
    # stop at its 131,072-token context, inside the first tier
    assert check["rows"][-1]["context"] == 131_072
    for row in check["rows"]:
        assert row["input_price"] == 2 and row["output_price"] == 12


def test_prices_tiers_from_base_prices(tiers_steps, ctx_p2):
    sched = tiers_steps["schedule"]
    tiers = sched["tiers"]
    assert len(tiers) >= 2
    assert tiers[0]["input_multiplier"] == 1 and tiers[0]["output_multiplier"] == 1
    uppers = [t["up_to_tokens"] for t in tiers]
    assert all(a < b for a, b in zip(uppers, uppers[1:]))
    steps = []
    for t in tiers:
        k = round(math.log2(t["input_multiplier"]))
        assert t["input_multiplier"] == pytest.approx(2.0**k, rel=1e-12)  # default --input-step 2
        assert t["output_multiplier"] == pytest.approx(1.5**k, rel=1e-12)  # default --output-step 1.5, same k
        assert t["input_usd_per_mtok"] == pytest.approx(0.1 * 2.0**k, rel=1e-12)
        assert t["output_usd_per_mtok"] == pytest.approx(0.5 * 1.5**k, rel=1e-12)
        steps.append(k)
    assert steps[0] == 0 and all(a < b for a, b in zip(steps, steps[1:]))
    # every covered context pays at least its cost (margin 0)
    lower = 0
    for t in tiers:
        for r in ctx_p2["curve"]:
            if lower < r["context"] <= t["up_to_tokens"]:
                assert t["input_usd_per_mtok"] >= r["input_usd_per_mtok"] * (1 - 1e-12)
                assert t["output_usd_per_mtok"] >= r["output_usd_per_mtok"] * (1 - 1e-12)
        lower = t["up_to_tokens"]
    if sched["uncovered_from"] is not None:
        assert sched["uncovered_from"] > uppers[-1]


# ---- catalog tiers -----------------------------------------------------------------------------


def _check_tier_rows(rows):
    assert rows[0]["name"] == "HBM" and rows[0]["kind"] == "hbm"
    drains = [r["drain_s"] for r in rows if r["drain_s"] is not None]
    assert all(a <= b for a, b in zip(drains, drains[1:]))
    for r in rows:
        if r["bandwidth_bytes_per_s"] is None:
            assert r["drain_s"] is None
        else:
            assert r["drain_s"] == pytest.approx(r["capacity_bytes"] / r["bandwidth_bytes_per_s"], rel=1e-9)


def test_catalog_tiers_one_system(catalog_hgx):
    assert list(catalog_hgx["systems"]) == ["hgx-h100"]
    rows = catalog_hgx["systems"]["hgx-h100"]
    _check_tier_rows(rows)
    assert [r["name"] for r in rows][:2] == ["HBM", "host DDR5"]
    assert rows[0]["drain_s"] == pytest.approx(81_559 * 2**20 / 3.35e12, rel=1e-9)  # 8 x 81,559 MiB / 8 x 3.35 TB/s
    assert rows[1]["drain_s"] == pytest.approx(3.255, abs=5e-4)  # 2 TB over 614.4 GB/s
    assert "pm1743" in catalog_hgx["devices"]
    for dev in catalog_hgx["devices"].values():
        assert dev["drain_s"] == pytest.approx(dev["capacity_bytes"] / dev["bandwidth_bytes_per_s"], rel=1e-9)


def test_catalog_tiers_all_systems():
    d = run_json("catalog", "tiers")
    assert {"hgx-h100", "gb200-nvl72"} <= set(d["systems"])
    for rows in d["systems"].values():
        _check_tier_rows(rows)


# ---- bad input ---------------------------------------------------------------------------------


def _case_id(args) -> str:
    """Short test id: the command and the options that make it bad, without the shared deployment."""
    text = " ".join(args)
    for noise in (L70, PRICE2):
        text = text.replace(" " + " ".join(noise), "")
    return text


BAD_INPUT = [
    (("cost", "--mode", "ideal", "--price-per-chip-hour", "-1", *L70), "--price-per-chip-hour"),
    (("context", "--price-per-chip-hour", "-1", *L70), "--price-per-chip-hour"),
    (("prices", "tiers", "--price-per-chip-hour", "-1", *L70), "--price-per-chip-hour"),
    (("cache", "--price-per-chip-hour", "-1", *L70), "--price-per-chip-hour"),
    (("prices", "infer", "--provider", "anthropic", "--model", "claude-opus-4.6", "--price-per-chip-hour", "-3"),
     "--price-per-chip-hour"),
    (("cache", "--price-per-chip-hour", "inf", *L70), "finite"),
    (("prices", "infer", "--provider", "google", "--model", "gemini-3-pro-preview", "--active-params", "inf"),
     "--active-params"),
    (("prices", "infer", "--provider", "google", "--model", "gemini-3-pro-preview", "--active-params", "-1"),
     "--active-params"),
    (("prices", "tiers", *PRICE2, *L70, "--margin", "inf"), "--margin"),
    (("prices", "tiers", *PRICE2, *L70, "--boundary", "inf"), "--boundary"),
    (("cache", *PRICE2, *L70, "--tier-price", "host DDR5=1", "--tier-price", "host DDR5=2"), "given twice"),
    (("cache", *PRICE2, *L70, "--tier-price", "host DDR5=inf"), "finite"),
    (("cache", *PRICE2, *L70, "--device", "pm1743:8", "--device", "pm1743:8"), "given twice"),
    (("cost", "--mode", "ideal", *PRICE2, *L70, "--utilization", "0"), "--utilization"),
    (("cost", "--mode", "ideal", *PRICE2, *L70, "--utilization", "1.5"), "--utilization"),
    (("context", *PRICE2, *L70, "--utilization", "0"), "--utilization"),
    (("cost", "--mode", "ideal", *PRICE2, *L70, "--provider", "gogle", "--price-model", "gemini-3-pro-preview"),
     "did you mean 'google'"),
    (("prices", "list", "--provider", "gogle"), "did you mean 'google'"),
    (("prices", "infer", "--provider", "gogle", "--model", "gemini-3-pro-preview"), "did you mean 'google'"),
    (("cost", "--mode", "ideal", *PRICE2, *L70, "--provider", "google", "--price-model", "gemini-9"),
     "unknown google model"),
    (("prices", "infer", "--provider", "anthropic", "--model", "claude-opus-9"), "unknown anthropic model"),
    (("cost", "--mode", "ideal", *PRICE2, *L70, "--provider", "google"), "--price-model"),
    (("prices", "tiers", *PRICE2, *L70, "--price-model", "gemini-3-pro-preview"), "--provider"),
    (("cache", *PRICE2, *L70, "--tier-price", "host DDR5"), "NAME=USD_PER_HOUR"),
    (("cache", *PRICE2, *L70, "--tier-price", "host DDR4=1"), "did you mean 'host DDR5'"),
    (("cache", *PRICE2, *L70, "--device", "nosuch"), "unknown storage device 'nosuch'"),
    (("cache", *PRICE2, *L70, "--device", "pm1734"), "did you mean 'pm1743'"),
    (("cache", *PRICE2, *L70, "--device", "pm1743:x"), "NAME:COUNT"),
    (("cache", *PRICE2, *L70, "--hold", "soon"), "'5 min'"),
    (("cache", *PRICE2, *L70, "--hold", "5 kg"), "--hold"),
    (("prices", "tiers", *PRICE2, *L70, "--boundary", "300000", "--boundary", "200000"), "increasing"),
    (("prices", "tiers", *PRICE2, *L70, "--base-input", "1"), "--base-output"),
    (("prices", "tiers", *PRICE2, *L70, "--boundary", "200000", "--base-input", "1", "--base-output", "2"),
     "not both"),
    (("context", *L70, "--kv-share", "0"), "kv sharing"),
    (("catalog", "tiers", "--system", "hgx-h10"), "did you mean 'hgx-h100'"),
]


@pytest.mark.parametrize("args, needle", BAD_INPUT, ids=[_case_id(a) for a, _ in BAD_INPUT])
def test_bad_input_exits_2_with_one_line(args, needle):
    proc = run(*args)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("error:") and needle in lines[0]
    assert "Traceback" not in proc.stderr and proc.stdout == ""


@pytest.mark.parametrize("extra, name", [
    (("--plot",), "c.txt"),  # wrong suffix: refused before any work
    (("--kv-share", "0", "--plot"), "c.png"),  # a valid plot path, but the command fails: no figure
    (("--price-per-chip-hour", "-1", "--plot"), "c.png"),
], ids=["txt-suffix", "kv-share-0", "negative-price"])
def test_failed_context_writes_no_plot(tmp_path, extra, name):
    target = tmp_path / name
    proc = run("context", "-m", "llama-3.1-8b", "-s", "h100-sxm", *extra, str(target))
    assert proc.returncode == 2, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:") and "Traceback" not in proc.stderr
    assert not target.exists() and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("args", [
    ("cost", "--mode", "ideal", "--price-per-chip-hour", "inf", *L70, "--json"),
    ("cost", "--mode", "ideal", *PRICE2, *L70, "--context", "inf", "--json"),
], ids=["price-inf", "context-inf"])
def test_non_finite_input_exits_2(args):
    proc = run(*args)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr


def test_context_unpriced_rejects_bad_utilization():
    proc = run("context", *L70, "--utilization", "1.5", "--json")
    assert proc.returncode == 2, proc.stdout[:200]
