"""The price catalogue: published ratios reproduced exactly, every sheet sourced and dated, strict loading.

Dollar amounts are dated inputs; the ratios between them are the stable part (DESIGN.md §4), so the
checks here are ratios, each citing where it is published (shared/reference/prices.yaml transcribes
the providers' pages; the lecture's ratios come from tests/published/lecture_cases.yaml).
"""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest
import yaml

from llmecon.catalog import prices as cat
from llmecon.errors import CatalogError
from llmecon.spec.prices import PRICE_STATUSES

CASES_FILE = Path(__file__).parents[1] / "published" / "lecture_cases.yaml"
CASES = {c["name"]: c for c in yaml.safe_load(CASES_FILE.read_text(encoding="utf-8"))["acceptance_cases"]}

ANTHROPIC_MODELS = {"claude-opus-4.6", "claude-opus-4.5", "claude-opus-4.1", "claude-opus-4", "claude-sonnet-4.6",
                    "claude-sonnet-4.5", "claude-sonnet-4", "claude-sonnet-3.7", "claude-haiku-4.5",
                    "claude-haiku-3.5", "claude-opus-3", "claude-haiku-3"}
OPENAI_PRIORITY_MODELS = {"gpt-5.5", "gpt-5.4", "gpt-5.4-mini", "gpt-5.2", "gpt-5.1", "gpt-5", "gpt-5-mini",
                          "gpt-4.1"}
REQUIRED = ({("anthropic", m) for m in ANTHROPIC_MODELS}
            | {("openai", m) for m in ("gpt-5", "gpt-5.1", "gpt-4.1")}
            | {("openai-priority", m) for m in OPENAI_PRIORITY_MODELS}
            | {("google", m) for m in ("gemini-2.5-pro", "gemini-3-pro-preview", "gemini-3.1-pro-preview",
                                       "gemini-2.5-flash")}
            | {("deepseek", m) for m in ("deepseek-r1", "deepseek-v3.2")})
# lecture_cases.yaml observed_price_ratios key -> catalogue entry
OBSERVED = {"claude_opus_4_6": ("anthropic", "claude-opus-4.6"), "gemini_3_1_pro": ("google", "gemini-3.1-pro-preview"),
            "gpt_5": ("openai", "gpt-5"), "deepseek_v3_2": ("deepseek", "deepseek-v3.2")}
FIVE_MIN, ONE_HOUR = 300.0, 3600.0


# --- every sheet loads, is sourced and dated -------------------------------------------------

def test_catalogue_has_every_transcribed_row():
    sheets = cat.price_sheets()
    assert REQUIRED <= set(sheets)
    assert cat.providers() == ["anthropic", "deepseek", "google", "openai", "openai-priority"]
    assert set(cat.models("anthropic")) == ANTHROPIC_MODELS
    for (provider, model), sheet in sheets.items():
        assert (sheet.provider, sheet.model) == (provider, model)


def test_every_sheet_is_sourced_with_status_and_as_of():
    """DESIGN.md §4: every entry carries a source and an as_of (an ISO date only where the source gives one)."""
    sheets = cat.price_sheets()
    assert len(sheets) >= len(REQUIRED)
    for key, sheet in sheets.items():
        assert sheet.source.strip(), key
        assert sheet.status in PRICE_STATUSES, key
        if not sheet.as_of.startswith("undated"):
            datetime.date.fromisoformat(sheet.as_of)
        for premium in sheet.premiums:
            assert "source: " in premium.note, (key, premium.name)


def test_statuses_follow_prices_yaml():
    """prices.yaml: Anthropic verified; OpenAI standard secondary with gpt-4.1 recalled; OpenAI priority page
    verified; Gemini secondary; DeepSeek R1 verified (open-infra-index, 2025-03-01)."""
    get = cat.get_price_sheet
    assert {get("anthropic", m).status for m in ANTHROPIC_MODELS} == {"verified"}
    assert get("openai", "gpt-5").status == "secondary" and get("openai", "gpt-4.1").status == "recalled"
    assert {get("openai-priority", m).status for m in OPENAI_PRIORITY_MODELS} == {"verified"}
    assert {get("google", m).status for m in cat.models("google")} == {"secondary"}
    r1 = get("deepseek", "deepseek-r1")
    assert (r1.status, r1.as_of) == ("verified", "2025-03-01")
    assert "Roo-Code" in get("deepseek", "deepseek-v3.2").source
    # the Sonnet >200K tier is recalled in prices.yaml: the dataclass has no per-tier status, the notes keep it
    assert "status recalled" in get("anthropic", "claude-sonnet-4.6").notes


def test_price_sheets_returns_a_fresh_dict():
    sheets = cat.price_sheets()
    sheets.clear()
    assert cat.price_sheets()


# --- published ratios ------------------------------------------------------------------------

def test_anthropic_cache_multipliers_exact():
    """Anthropic pricing page (prices.yaml `multipliers`): 5-min write 1.25x, 1-hour write 2x, read 0.1x of
    base input, exact for every row except Haiku 3."""
    checked = 0
    for model in ANTHROPIC_MODELS - {"claude-haiku-3"}:
        s = cat.get_price_sheet("anthropic", model)
        assert [w.hold_s for w in s.cache_writes] == [FIVE_MIN, ONE_HOUR], model
        five, hour = (w.usd_per_mtok for w in s.cache_writes)
        assert five == pytest.approx(1.25 * s.input_usd_per_mtok, rel=1e-12), model
        assert hour == pytest.approx(2.0 * s.input_usd_per_mtok, rel=1e-12), model
        assert s.cached_input_usd_per_mtok == pytest.approx(0.1 * s.input_usd_per_mtok, rel=1e-12), model
        checked += 1
    assert checked == 11


def test_anthropic_haiku_3_multipliers_rounded():
    """Haiku 3 on the Anthropic pricing page: $0.25 input, $0.30 / $0.50 writes, $0.03 read -- the published
    multipliers up to the page's rounding (within 0.05 of each multiplier), and not exact."""
    s = cat.get_price_sheet("anthropic", "claude-haiku-3")
    base = s.input_usd_per_mtok
    ratios = [s.cache_writes[0].usd_per_mtok / base, s.cache_writes[1].usd_per_mtok / base,
              s.cached_input_usd_per_mtok / base]
    for ratio, multiplier in zip(ratios, (1.25, 2.0, 0.1), strict=True):
        assert abs(ratio - multiplier) <= 0.05 + 1e-12
    assert ratios[0] != pytest.approx(1.25, rel=1e-6)  # the rounding exception is real


@pytest.mark.parametrize("name", sorted(OBSERVED))
def test_output_input_ratio_observed(name):
    """Lecture case `observed_price_ratios` (Anthropic pricing page; Gemini pricing; DeepSeek prices per
    Roo-Code provider table): Opus 4.6 5x, Gemini 3.1 Pro 6x, GPT-5 8x, DeepSeek V3.2 1.5x."""
    case = CASES["observed_price_ratios"]
    sheet = cat.get_price_sheet(*OBSERVED[name])
    assert [sheet.input_usd_per_mtok, sheet.output_usd_per_mtok] == case["inputs"][name]
    assert sheet.output_input_ratio == pytest.approx(case["expected"][name], rel=case["tolerance"]["rel"])


def test_gemini_3_pro_preview_has_the_3_1_schedule():
    """prices.yaml: gemini-3-pro-preview 2/12 (>200K 4/18), 'same schedule reported for gemini-3.1-pro-preview'."""
    a = cat.get_price_sheet("google", "gemini-3-pro-preview")
    b = cat.get_price_sheet("google", "gemini-3.1-pro-preview")
    assert a.output_input_ratio == 6.0
    assert (a.price_at(1), a.long_context) == (b.price_at(1), b.long_context)


@pytest.mark.parametrize("model", ["gemini-2.5-pro", "gemini-3-pro-preview", "gemini-3.1-pro-preview"])
def test_gemini_long_context_uplift(model):
    """Lecture case `gemini_tier_ratios` (ai.google.dev/gemini-api/docs/pricing): prompts > 200K tokens pay 2x
    input and 1.5x output, computed from the sheet with PriceSheet.price_at."""
    case = CASES["gemini_tier_ratios"]
    sheet = cat.get_price_sheet("google", model)
    short, long = sheet.price_at(200_000), sheet.price_at(200_001)
    assert short == (sheet.input_usd_per_mtok, sheet.output_usd_per_mtok)
    assert long[0] / short[0] == pytest.approx(case["expected"]["input_increase"], rel=case["tolerance"]["rel"])
    assert long[1] / short[1] == pytest.approx(case["expected"]["output_increase"], rel=case["tolerance"]["rel"])
    if model == "gemini-3.1-pro-preview":  # the case's inputs are this model's rows
        i = case["inputs"]
        assert (short, long) == ((i["input_le_200k"], i["output_le_200k"]), (i["input_gt_200k"], i["output_gt_200k"]))


def test_gemini_flash_has_no_long_context_tier():
    """prices.yaml: gemini-2.5-flash 0.30 / 2.50 on both sides of 200K (no long-context tier)."""
    s = cat.get_price_sheet("google", "gemini-2.5-flash")
    assert s.long_context == () and s.price_at(1_000_000) == (0.30, 2.50)


@pytest.mark.parametrize("model", ["claude-sonnet-4.6", "claude-sonnet-4.5", "claude-sonnet-4", "claude-opus-4.6"])
def test_anthropic_long_context_uplift(model):
    """prices.yaml long_context_sonnet_gt_200k (recalled): 2x input, 1.5x output above 200K; Opus 4.6's $10/$37.50
    from the es/zh fast-mode page variant ('12x standard' = 6x the long-context rates)."""
    s = cat.get_price_sheet("anthropic", model)
    (i0, o0), (i1, o1) = s.price_at(200_000), s.price_at(200_001)
    assert (i1 / i0, o1 / o0) == (2.0, 1.5)


@pytest.mark.parametrize(("model", "multiplier"), [("gpt-5", 2.0), ("gpt-5.1", 2.0), ("gpt-4.1", 1.75)])
def test_openai_priority_multiplier(model, multiplier):
    """openai.com/api-priority-processing (prices.yaml note): priority = 2x standard for GPT-5/5.1, 1.75x for
    GPT-4.1; only a latency target is stated, so no speedup. The openai-priority sheet agrees."""
    s = cat.get_price_sheet("openai", model)
    p = s.premium("priority")
    assert p.input_usd_per_mtok / s.input_usd_per_mtok == pytest.approx(multiplier, rel=1e-12)
    assert p.output_usd_per_mtok / s.output_usd_per_mtok == pytest.approx(multiplier, rel=1e-12)
    assert p.speedup is None and "tok/s" in p.note
    twin = cat.get_price_sheet("openai-priority", model)
    assert (twin.input_usd_per_mtok, twin.output_usd_per_mtok) == (p.input_usd_per_mtok, p.output_usd_per_mtok)
    assert twin.cached_input_usd_per_mtok == pytest.approx(multiplier * s.cached_input_usd_per_mtok, rel=1e-12)


def test_openai_cached_input_multipliers():
    """prices.yaml cached_input_multiplier: GPT-5 family 0.1x, GPT-4.1 0.25x; the priority page keeps 0.1x for
    GPT-5.x and 0.25x for GPT-4.1."""
    for provider, model, multiplier in [("openai", "gpt-5", 0.1), ("openai", "gpt-5.1", 0.1),
                                        ("openai", "gpt-4.1", 0.25), ("openai-priority", "gpt-4.1", 0.25)]:
        s = cat.get_price_sheet(provider, model)
        assert s.cached_input_usd_per_mtok / s.input_usd_per_mtok == pytest.approx(multiplier, rel=1e-12), model
    for model in OPENAI_PRIORITY_MODELS - {"gpt-4.1"}:
        s = cat.get_price_sheet("openai-priority", model)
        assert s.cached_input_usd_per_mtok / s.input_usd_per_mtok == pytest.approx(0.1, rel=1e-12), model


def test_opus_4_6_fast_mode_premium():
    """platform.claude.com fast-mode page (prices.yaml fast_mode): $30/$150 = 6x standard Opus 4.6 rates, for
    'up to 2.5x' output tokens per second."""
    s = cat.get_price_sheet("anthropic", "claude-opus-4.6")
    fast = s.premium("fast")
    assert fast.input_usd_per_mtok / s.input_usd_per_mtok == 6.0
    assert fast.output_usd_per_mtok / s.output_usd_per_mtok == 6.0
    assert fast.speedup == 2.5
    assert "$60/$225" in fast.note  # the >200K variant of the page is recorded
    with pytest.raises(CatalogError, match="did you mean 'fast'"):
        s.premium("fats")


def test_deepseek_r1_cache_hit_multiplier():
    """DeepSeek open-infra-index Day 6 (2025-03-01), prices.yaml: hit 0.14, miss 0.55 -> 0.2545x."""
    s = cat.get_price_sheet("deepseek", "deepseek-r1")
    assert s.cached_input_usd_per_mtok / s.input_usd_per_mtok == pytest.approx(0.2545, abs=1e-4)


# --- lookups ---------------------------------------------------------------------------------

def test_misspelt_model_gives_did_you_mean():
    with pytest.raises(CatalogError,
                       match=r"unknown anthropic model 'claude-opus-46' \(did you mean 'claude-opus-4\.6'"):
        cat.get_price_sheet("anthropic", "claude-opus-46")


def test_misspelt_provider_gives_did_you_mean():
    with pytest.raises(CatalogError, match=r"unknown price provider 'antropic' \(did you mean 'anthropic'"):
        cat.get_price_sheet("antropic", "claude-opus-4.6")


# --- strict loading ---------------------------------------------------------------------------

GOOD = """
[[sheet]]
provider = "acme"
model = "m1"
input = 1.0
output = 4.0
cached_input = 0.1
status = "verified"
source = "hand-written test entry"
as_of = "2026-01-01"
[[sheet.cache_write]]
hold = "5 min"
price = 1.25
[[sheet.cache_write]]
hold = "1 h"
price = 2.0
[[sheet.long_context]]
above_tokens = 200000
input = 2.0
output = 6.0
status = "recalled"
note = "beta"
[[sheet.premium]]
name = "fast"
input = 6.0
output = 24.0
speedup = 2.5
"""


def _load(text: str):
    return cat.load_price_sheets(text, "test.toml")


def test_good_text_loads():
    sheet = _load(GOOD)[("acme", "m1")]
    assert [w.hold_s for w in sheet.cache_writes] == [300.0, 3600.0]
    assert sheet.price_at(300_000) == (2.0, 6.0)
    assert sheet.premium("fast").speedup == 2.5
    assert sheet.as_of == "2026-01-01" and "status recalled; beta" in sheet.notes


def test_toml_date_and_undated_as_of_accepted():
    assert _load(GOOD.replace('"2026-01-01"', "2026-01-01"))[("acme", "m1")].as_of == "2026-01-01"
    text = GOOD.replace('"2026-01-01"', '"undated (page era: m1 current)"')
    assert _load(text)[("acme", "m1")].as_of == "undated (page era: m1 current)"


@pytest.mark.parametrize(("old", "new", "match"), [
    ("output = 4.0", "output = -4.0", r"test\.toml \[acme/m1\] output: expected a price .* >= 0"),
    ("output = 4.0", 'output = "4 USD"', r"\[acme/m1\] output: expected a price in USD per million tokens"),
    ("output = 4.0", "output = true", r"\[acme/m1\] output: expected a price"),
    ("output = 4.0", "outptu = 4.0", r"\[acme/m1\]: unknown key 'outptu' \(did you mean 'output'\?\)"),
    ("output = 4.0", "", r"\[acme/m1\]: missing required key 'output'"),
    ('status = "verified"', 'status = "verifed"', r"status: 'verifed' is not one of .* \(did you mean 'verified'"),
    ('as_of = "2026-01-01"', 'as_of = "2026-13-01"', r"as_of: expected a date 'YYYY-MM-DD'"),
    ('as_of = "2026-01-01"', 'as_of = "early 2026"', r"as_of: expected a date .* or text starting 'undated'"),
    ('source = "hand-written test entry"', 'source = "  "', r"source: expected a non-empty string"),
    ('provider = "acme"', 'provider = "Acme Corp"', r"provider: expected a lower-case id"),
    ('hold = "1 h"', 'hold = "1 GB"', r"cache_write\[1\] hold: .* not a quantity in s"),
    ("price = 2.0", "price = -2.0", r"cache_write\[1\] price: expected a price"),
    ("price = 2.0", "prize = 2.0", r"cache_write\[1\]: unknown key 'prize' \(did you mean 'price'\?\)"),
    ("above_tokens = 200000", "above_tokens = 2.5e5", r"long_context\[0\] above_tokens: expected a whole number"),
    ("above_tokens = 200000", "above_token = 200000", r"long_context\[0\]: unknown key 'above_token' "
                                                      r"\(did you mean 'above_tokens'\?\)"),
    ('status = "recalled"', 'status = "remembered"', r"long_context\[0\] status: 'remembered' is not one of"),
    ("speedup = 2.5", "speedup = 0", r"premium\[0\] speedup: expected the provider's output-speed ratio"),
    ("speedup = 2.5", "speed_up = 2.5", r"premium\[0\]: unknown key 'speed_up' \(did you mean 'speedup'\?\)"),
    ('name = "fast"', "", r"premium\[0\]: missing required key 'name'"),
])
def test_bad_entry_names_file_entry_and_key(old, new, match):
    assert old in GOOD
    with pytest.raises(CatalogError, match=match):
        _load(GOOD.replace(old, new, 1))


def test_unordered_long_context_tiers():
    """Tiers must have increasing above_tokens (PriceSheet check, re-raised naming the entry)."""
    text = GOOD + "[[sheet.long_context]]\nabove_tokens = 100000\ninput = 1.5\noutput = 5.0\n"
    with pytest.raises(CatalogError, match=r"test\.toml \[acme/m1\]: .*long_context tiers must have increasing "
                                           r"above_tokens, got \[200000, 100000\]"):
        _load(text)


def test_unordered_cache_writes():
    """Cache writes must be in increasing hold (PriceSheet check, re-raised naming the entry)."""
    text = GOOD.replace('hold = "5 min"', 'hold = "2 h"', 1)
    with pytest.raises(CatalogError, match=r"test\.toml \[acme/m1\]: .*cache_writes must be in increasing hold"):
        _load(text)


def test_duplicate_entry():
    with pytest.raises(CatalogError, match=r"test\.toml \[acme/m1\]: duplicate entry"):
        _load(GOOD + GOOD)


def test_sheet_without_provider_is_named_by_position():
    with pytest.raises(CatalogError, match=r"test\.toml \[sheet #1\]: missing required key 'provider'"):
        _load(GOOD.replace('provider = "acme"', ""))


def test_bad_document_shapes():
    with pytest.raises(CatalogError, match=r"test\.toml: invalid TOML"):
        _load("[[sheet]\n")
    with pytest.raises(CatalogError, match=r"test\.toml: unknown key 'sheets' \(did you mean 'sheet'\?\)"):
        _load("[[sheets]]\n")
    with pytest.raises(CatalogError, match=r"cache_write: expected an array of tables written \[\[sheet\.cache_write"):
        _load(GOOD.replace("[[sheet.cache_write]]\nhold = \"5 min\"\nprice = 1.25\n[[sheet.cache_write]]",
                           "[sheet.cache_write]", 1))


def test_load_price_file(tmp_path):
    path = tmp_path / "mine.toml"
    path.write_text(GOOD, encoding="utf-8")
    assert set(cat.load_price_file(path)) == {("acme", "m1")}
    with pytest.raises(CatalogError, match=r"no\.toml: no such file \(price file\)"):
        cat.load_price_file(tmp_path / "no.toml")
    path.write_text(GOOD.replace("input = 1.0", "input = -1.0"), encoding="utf-8")
    with pytest.raises(CatalogError, match=r"mine\.toml \[acme/m1\] input: expected a price"):
        cat.load_price_file(path)
