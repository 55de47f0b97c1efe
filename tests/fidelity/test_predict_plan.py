"""predict's attention-DP column and plan labels (issue 21, step 2a)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmecon.catalog.hardware import get_system
from llmecon.catalog.models import get_model
from llmecon.errors import CatalogError, SpecError
from llmecon.fidelity.predict import parse_cases, predict_cases
from llmecon.spec.plan import Plan, parse_label
from llmecon.step.inference import decode_step


@pytest.mark.parametrize("text, want", [
    ("tp1·ep32·pp1·adp32", dict(tp=1, ep=32, pp=1, adp=32)),
    ("tp1·ep32·adp32", dict(tp=1, ep=32, pp=1, adp=32)),          # pp1 omitted
    ("tp8,ep8,pp1,adp1", dict(tp=8, ep=8, pp=1, adp=1)),           # ',' for '·'
    ("TP4 · EP8 · PP2 · ADP2", dict(tp=4, ep=8, pp=2, adp=2)),     # case and spaces
    ("tp8·ep8", dict(tp=8, ep=8, pp=1, adp=8)),                    # adp omitted = ep, as Plan.label writes it
    ("tp1·ep48·pp1·adp48·r32", dict(tp=1, ep=48, pp=1, adp=48, r=32)),  # redundant expert copies
    ("tp1·ep8·r0", dict(tp=1, ep=8, pp=1, adp=8)),
])
def test_parse_label_good(text, want):
    p = parse_label(text)
    assert (p.tp, p.ep, p.pp, p.adp, p.redundant_experts) == (want["tp"], want["ep"], want["pp"], want["adp"],
                                                              want.get("r", 0))


@pytest.mark.parametrize("text, match", [
    ("", "empty plan label"),
    ("tp8", "plan tp8: the label lacks ep"),
    ("ep8·pp1", "the label lacks tp"),
    ("tp8·xp2", "cannot read 'xp2'"),
    ("tpp2·ep1", "did you mean 'tp'"),
    ("tp8·ep", "cannot read 'ep'"),
    ("tp8·ep8·ep2", "ep is given twice"),
    ("tp0·ep1", "tp must be >= 1"),
    ("tp2·ep4·adp1", "expert groups must tile"),
    ("tp8;ep8", "cannot read"),
    ("tp8·ep1·r8", "redundant expert copies need expert parallelism"),
])
def test_parse_label_bad_is_one_line_naming_the_field(text, match):
    with pytest.raises(SpecError, match=match) as info:
        parse_label(text, field="plan")
    assert info.value.field == "plan" and "\n" not in str(info.value) and str(info.value).startswith("plan ")


@settings(max_examples=60, deadline=None)
@given(tp=st.sampled_from([1, 2, 4, 8]), adp=st.sampled_from([1, 2, 4, 8]), pp=st.integers(1, 4),
       dp=st.integers(1, 3), ep_div=st.sampled_from([1, 2, 4, 8]), r=st.integers(0, 64))
def test_parse_label_reads_back_plan_label(tp, adp, pp, dp, ep_div, r):
    width = tp * adp
    ep = ep_div if width % ep_div == 0 else 1
    plan = Plan(tp=tp, ep=ep, pp=pp, dp=dp, adp=adp, redundant_experts=r if ep > 1 else 0)
    assert parse_label(plan.label()) == plan
    assert parse_label(plan.label().replace("·", ",")) == plan


HEAD = "model,system,phase,batch,context,tp,ep,pp,adp,plan\n"


def test_tp8_ep8_with_adp1_is_priced_on_8_chips():
    rows = predict_cases(parse_cases(HEAD + "qwen3-30b-a3b,hgx-h100,decode,16,1024,8,8,,1,\n"
                                            "qwen3-30b-a3b,hgx-h100,decode,16,1024,,,,,tp8·ep8·pp1·adp1\n"))
    want = decode_step(get_model("qwen3-30b-a3b"), get_system("hgx-h100"), batch=16, context=1024,
                       plan=Plan(tp=8, ep=8, adp=1))
    for r in rows:
        assert r["chips"] == 8
        assert r["step_s"] == pytest.approx(float(want.step_s))


def test_no_adp_keeps_attention_dp_equal_to_ep_and_says_so():
    # today's meaning of a row without adp (Plan's default): a stage of tp·ep chips; the chips column shows it
    rows = predict_cases(parse_cases(HEAD + "qwen3-30b-a3b,gb200-nvl72,decode,64,1024,1,8,,,\n"
                                            "qwen3-30b-a3b,gb200-nvl72,decode,64,1024,2,8,,,\n"))
    assert [r["chips"] for r in rows] == [8, 16]


@pytest.mark.parametrize("line, match", [
    ("qwen3-30b-a3b,hgx-h100,decode,16,1024,8,,,,tp8·ep8", "line 2 plan: give either the plan label or"),
    ("qwen3-30b-a3b,hgx-h100,decode,16,1024,,,,,tp8·zz8", "line 2 plan tp8·zz8: cannot read 'zz8'"),
    ("qwen3-30b-a3b,hgx-h100,decode,16,1024,2,4,,1,", "line 2 ep 4: expert groups must tile"),
    ("qwen3-30b-a3b,hgx-h100,decode,16,1024,8,8,,0,", "line 2 adp: expected a whole number >= 1"),
])
def test_predict_bad_plan_names_line_and_field(line, match):
    with pytest.raises((CatalogError, SpecError), match=match):
        predict_cases(parse_cases(HEAD + line + "\n"))


def test_ep_widths_that_do_not_divide_the_experts_are_written_with_copies():
    """DeepSeek-V3's 256 routed experts over EP 48 (issue 34 item 3): 256 % 48 = 16, so the plan needs copies;
    r32 fills 288 slots, 6 per rank (DeepSeek's EP144 decode holds 256 + 32 = 288 the same way). Without
    them the error names ep and says how many to add; the row with r32 is priced on 48 chips and holds
    288/48 = 6 expert slots per chip against 256/32 = 8 on EP 32."""
    ok = predict_cases(parse_cases(HEAD + "deepseek-v3,gb200-nvl72,decode,48,2048,,,,,tp1·ep48·adp48·r32\n"
                                          "deepseek-v3,gb200-nvl72,decode,48,2048,,,,,tp1·ep24·adp24·r8\n"))
    assert [r["chips"] for r in ok] == [48, 24]
    assert all(r["step_s"] > 0 for r in ok)
    with pytest.raises(SpecError, match="256 routed experts do not divide evenly over 48.*redundant_experts 32"):
        predict_cases(parse_cases(HEAD + "deepseek-v3,gb200-nvl72,decode,48,2048,,,,,tp1·ep48·adp48\n"))
