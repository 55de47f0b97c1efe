"""Speculation spec: expected tokens per verify step by hand (Leviathan et al. 2023, eq. 1), family
defaults with their source, and bad input naming the field."""

import pytest
from hypothesis import given, strategies as st

from llmecon.catalog.models import get_model
from llmecon.errors import SpecError
from llmecon.spec.speculation import MAX_SPEC_TOKENS, Speculation, expected_tokens_per_step, speculation_for


def test_expected_tokens_by_hand():
    # k = 1, a = 0.85: 1 + 0.85
    assert expected_tokens_per_step((0.85,)) == pytest.approx(1.85, rel=1e-12)
    # k = 3, a = (0.9, 0.8, 0.5): 1 + 0.9 + 0.72 + 0.36
    assert expected_tokens_per_step((0.9, 0.8, 0.5)) == pytest.approx(2.98, rel=1e-12)
    # i.i.d. a = 0.8, k = 3: (1 - 0.8^4)/(1 - 0.8) = 0.5904/0.2 = 2.952
    assert Speculation(k=3, acceptance=(0.8,) * 3).tokens_per_step == pytest.approx(2.952, rel=1e-12)
    assert expected_tokens_per_step(()) == 1.0


@given(a=st.floats(0.01, 0.99), k=st.integers(1, 8))
def test_iid_closed_form(a, k):
    assert expected_tokens_per_step((a,) * k) == pytest.approx((1 - a ** (k + 1)) / (1 - a), rel=1e-9)


def test_deepseek_default_and_sources():
    s = speculation_for(get_model("deepseek-v3"), k=1)
    assert s.acceptance == (0.85,) and "2412.19437" in s.acceptance_source
    assert s.tokens_per_step == pytest.approx(1.85)
    given_ = speculation_for(get_model("deepseek-v3"), k=2, acceptance="0.9,0.7")
    assert given_.acceptance == (0.9, 0.7) and given_.acceptance_source == "given"
    one = speculation_for(get_model("deepseek-v3"), k=3, acceptance="0.8")  # one value: every position
    assert one.acceptance == (0.8, 0.8, 0.8)
    assert speculation_for(get_model("deepseek-v3"), k=0) is None
    assert speculation_for(get_model("deepseek-v3"), k=None) is None
    assert speculation_for(get_model("deepseek-v3"), k=None, acceptance="0.9,0.8").k == 2


@pytest.mark.parametrize("kwargs, field", [
    (dict(k=2), "acceptance"),  # the published default covers position 1 only
    (dict(k=-1), "spec_tokens"),
    (dict(k=1, acceptance="1.2"), "acceptance"),
    (dict(k=1, acceptance="0"), "acceptance"),
    (dict(k=2, acceptance="0.9,0.8,0.7"), "acceptance"),
    (dict(k=1, acceptance="x"), "acceptance"),
])
def test_bad_input_names_field(kwargs, field):
    with pytest.raises(SpecError) as err:
        speculation_for(get_model("deepseek-v3"), **kwargs)
    assert err.value.field == field


def test_no_default_and_no_mtp():
    with pytest.raises(SpecError) as err:  # a family with no published acceptance
        speculation_for(get_model("llama-3.1-70b"), k=2, draft="llama-3.1-8b")
    assert err.value.field == "acceptance"
    with pytest.raises(SpecError) as err:  # no MTP modules in the config
        speculation_for(get_model("llama-3.1-70b"), k=2, acceptance="0.8")
    assert err.value.field == "draft"


def test_acceptance_or_draft_with_zero_draft_tokens_is_refused():
    m = get_model("deepseek-v3")
    with pytest.raises(SpecError, match="spec_tokens 0") as e:
        speculation_for(m, k=0, acceptance="0.8")
    assert e.value.field == "acceptance"
    with pytest.raises(SpecError, match="spec_tokens 0") as e:
        speculation_for(m, k=0, draft="mtp")
    assert e.value.field == "draft"
    assert speculation_for(m, k=0) is None


def test_draft_tokens_are_bounded():
    m = get_model("deepseek-v3")
    assert speculation_for(m, k=MAX_SPEC_TOKENS, acceptance="0.5").k == MAX_SPEC_TOKENS
    with pytest.raises(SpecError, match=f"at most {MAX_SPEC_TOKENS}") as e:
        speculation_for(m, k=MAX_SPEC_TOKENS + 1, acceptance="0.5")
    assert e.value.field == "spec_tokens"


def test_a_draft_without_draft_tokens_is_refused():
    with pytest.raises(SpecError, match="without spec_tokens") as e:
        speculation_for(get_model("deepseek-v3"), k=None, draft="llama-3.1-8b")
    assert e.value.field == "draft"


def test_the_planner_refuses_a_draft_without_draft_tokens_to_search():
    from llmecon.spec.speculation import speculation_candidates

    with pytest.raises(SpecError, match="without draft tokens") as e:
        speculation_candidates(get_model("deepseek-v3"), max_k=None, draft="mtp")
    assert e.value.field == "draft"
    assert speculation_candidates(get_model("deepseek-v3"), max_k=None) == ()
