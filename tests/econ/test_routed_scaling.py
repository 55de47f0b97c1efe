"""Routed scaling law (SPEC D14; Clark et al. 2022, arXiv:2202.01169) with explicit coefficients.

The paper's coefficient table is not available (shared/reference/scaling_laws.yaml): every RoutedLaw
below is an illustrative hand law chosen so the answers can be checked on paper, never the paper's
values. The lecture cases (clark_*) live in tests/test_lecture_cases.py.
"""

from __future__ import annotations

import math
from importlib import resources

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from llmecon.errors import CatalogError, InfeasibleError, SpecError
from llmecon.econ.routed_scaling import (LECTURE_POWER_FIT, ExpertValue, PowerFit, RoutedLaw, default_routed_law,
                                    dense_log_loss, effective_params, effective_ratio, expert_transform, expert_value,
                                    experts_for_ratio, load_routed_law, log_loss, power_fit_from_point)

FAST = settings(max_examples=60, deadline=None)


def hand_law(**over) -> RoutedLaw:
    """Illustrative law (NOT the paper's): E_start = 2, E_max = 6 give (1/2 − 1/6)^−1 = 3, so
    Ê(E) = 1/(1/(E + 2) + 1/6): Ê(1) = 2, Ê(4) = 3, Ê(10) = 4. With N in billions and log10,
    N = 1e10 has log N = 1 and k = (b + c)/a = (−0.2 + 0.1)/(−0.1) = 1."""
    kw = dict(a=-0.1, b=-0.2, c=0.1, d=0.5, e_start=2.0, e_max=6.0, log_base="10", n_unit_params=1e9,
              label="hand law (illustrative)", source="tests/test_routed_scaling.py")
    kw.update(over)
    return RoutedLaw(**kw)


# ---- hand cases, exact ------------------------------------------------------------------------------------


def test_expert_transform_hand_values():
    """Ê(1) = 2, Ê(4) = 1/(1/6 + 1/6) = 3, Ê(10) = 1/(1/12 + 1/6) = 4 (E_start = 2, E_max = 6). The
    variant that drops the ^−1 gives Ê(1) = 1/(1/(1/3) + 1/6) = 0.3158, so Ê(1) = 2 guards against it."""
    got = expert_transform(np.array([1.0, 4.0, 10.0]), e_start=2.0, e_max=6.0)
    assert got == pytest.approx([2.0, 3.0, 4.0], rel=1e-12)
    assert expert_transform(1, e_start=1.0, e_max=100.0) == pytest.approx(1.0, rel=1e-12)


def test_log_loss_and_effective_params_hand():
    """N = 1e10 (log10(N/1e9) = 1), E = 10 (Ê = 4): log L = −0.1 + (−0.2 + 0.1·1)·log10 4 + 0.5
    = 0.4 − 0.1·0.60206 = 0.339794; N̄ = N·4^1 = 4e10."""
    law = hand_law()
    assert log_loss(1e10, 10, law) == pytest.approx(0.4 - 0.1 * math.log10(4.0), rel=1e-12)
    assert dense_log_loss(1e10, law) == pytest.approx(0.4, rel=1e-12)
    assert effective_params(1e10, 10, law) == pytest.approx(4e10, rel=1e-12)
    assert effective_params(1e10, [1, 4, 10], law) == pytest.approx([2e10, 3e10, 4e10], rel=1e-12)


def test_log_base_and_unit_matter():
    """Base e, N in raw params: N = e^2, Ê(E=4) = 3, k = (−0.25 + 0.125·2)/(−0.5) = 0 -> N̄ = N, and
    log L = −0.5·2 + 0·ln 3 + 1 = 0 (b + c·log N = 0 exactly). Base 2, N = 8e9 in billions: log N = 3."""
    law = hand_law(a=-0.5, b=-0.25, c=0.125, d=1.0, log_base="e", n_unit_params=1.0)
    n = math.e ** 2
    assert log_loss(n, 4, law) == pytest.approx(0.0, abs=1e-12)
    assert effective_params(n, 4, law) == pytest.approx(n, rel=1e-12)
    law2 = hand_law(log_base="2")  # k = (−0.2 + 0.1·3)/(−0.1) = −1 -> N̄ = N/Ê
    assert log_loss(8e9, 10, law2) == pytest.approx(-0.3 + 0.1 * 2.0 + 0.5, rel=1e-12)  # log2 4 = 2
    assert effective_params(8e9, 10, law2) == pytest.approx(2e9, rel=1e-12)


def test_power_fit_hand():
    """γ = ln(2/1)/ln 4 = 0.5; E = 16 -> 4×; 4× needs 16 experts; each doubling buys √2."""
    assert power_fit_from_point(experts=4, dense_equivalent_params=2.0, active_params=1.0) == pytest.approx(0.5,
                                                                                                           rel=1e-12)
    fit = PowerFit(gamma=0.5, label="half", source="hand")
    assert effective_ratio(1e9, 16, fit) == pytest.approx(4.0, rel=1e-12)
    assert effective_params(1e9, 16, fit) == pytest.approx(4e9, rel=1e-12)
    assert experts_for_ratio(4.0, fit) == pytest.approx(16.0, rel=1e-12)
    v = expert_value([1, 16], 1e9, fit)
    assert v.gain_per_doubling == pytest.approx([math.sqrt(2)] * 2, rel=1e-12)
    assert v.ratio == pytest.approx([1.0, 4.0], rel=1e-12) and v.gain_over_one_expert == pytest.approx([1.0, 4.0])


def test_lecture_power_fit_numbers():
    """SPEC D14: 64 experts ≈ 3.5×; 100 experts ≈ 4.0×, so "100× total for 10× active" is not supported;
    10× needs ≈ 2,040 experts at γ = 0.3022 (10^(1/0.30) = 2,154 at γ = 0.30)."""
    fit = LECTURE_POWER_FIT
    assert fit.gamma == 0.3022
    assert effective_ratio(370e6, 64, fit) == pytest.approx(1.3e9 / 370e6, rel=1e-3)
    assert effective_ratio(370e6, 100, fit) == pytest.approx(100 ** 0.3022, rel=1e-12)
    assert 4.0 < effective_ratio(370e6, 100, fit) < 4.05
    assert experts_for_ratio(10.0, fit) == pytest.approx(10 ** (1 / 0.3022), rel=1e-12)
    assert 2000 < experts_for_ratio(10.0, fit) < 2100
    assert experts_for_ratio(10.0, PowerFit(gamma=0.30, label="0.30", source="SPEC D14")) == pytest.approx(
        2154.43469, rel=1e-8)


def test_expert_value_routed_hand():
    """Hand law at N = 1e10 (k = 1): E = 1, 4 -> N̄ = 2e10, 3e10; doubling from E = 1 gives
    Ê(2)/Ê(1) = (1/(1/4 + 1/6))/2 = 2.4/2 = 1.2, from E = 4: Ê(8)/Ê(4) = 3.75/3 = 1.25."""
    v = expert_value([1.0, 4.0], 1e10, hand_law())
    assert isinstance(v, ExpertValue) and v.label == "hand law (illustrative)"
    assert v.effective_params == pytest.approx([2e10, 3e10], rel=1e-12)
    assert v.ratio == pytest.approx([2.0, 3.0], rel=1e-12)
    assert v.gain_per_doubling == pytest.approx([1.2, 1.25], rel=1e-12)
    assert v.gain_over_one_expert == pytest.approx([1.0, 1.5], rel=1e-12)
    assert v.active_params.shape == v.experts.shape == (2,)


def test_experts_for_ratio_routed_inverse_and_ceiling():
    """Hand law at N = 1e10: ratio 3 -> Ê = 3 -> E = 4; ratio 4 -> E = 10. The ratio stays in
    [E_start^k, E_max^k) = [2, 6): 6 is never reached, 1.5 would need E < 1."""
    law = hand_law()
    assert experts_for_ratio([3.0, 4.0], law, active_params=1e10) == pytest.approx([4.0, 10.0], rel=1e-12)
    with pytest.raises(InfeasibleError, match="up to, not including, 6"):
        experts_for_ratio(6.0, law, active_params=1e10)
    with pytest.raises(InfeasibleError):
        experts_for_ratio(1.5, law, active_params=1e10)
    with pytest.raises(InfeasibleError, match="b \\+ c"):  # N = 1e11: b + c·log N = −0.2 + 0.2 = 0
        experts_for_ratio(3.0, law, active_params=1e11)
    with pytest.raises(SpecError, match="active_params"):
        experts_for_ratio(3.0, law)


def test_dense_reference_is_the_limb_not_one_expert():
    """The documented choice: N̄ matches the dense limb (log Ê = 0). With E_start = 2 a one-expert
    model is worth N·2^k (here 2×); with E_start = 1 it is worth exactly N."""
    assert effective_params(1e10, 1, hand_law()) == pytest.approx(2e10, rel=1e-12)
    assert effective_params(1e10, 1, hand_law(e_start=1.0)) == pytest.approx(1e10, rel=1e-12)


def _solve_dense(law: RoutedLaw, target: float) -> float:
    """Bisection on log10 x in [0, 30] for a·log(x/unit) + d = target, written from the coefficients
    (not through the package): the dense size with the given log loss."""
    log = {"e": math.log, "10": math.log10, "2": math.log2}[law.log_base]
    lo, hi = 0.0, 30.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        f = law.a * log(10 ** mid / law.n_unit_params) + law.d - target
        lo, hi = (mid, hi) if f > 0 else (lo, mid)  # a < 0: f falls as x grows
    return 10 ** (0.5 * (lo + hi))


@FAST
@given(a=st.floats(-0.5, -0.01), b=st.floats(-0.5, 0.5), c=st.floats(-0.05, 0.05), d=st.floats(-2, 2),
       e_start=st.floats(1.0, 20.0), span=st.floats(1.5, 500.0), base=st.sampled_from(["e", "10", "2"]),
       unit=st.sampled_from([1.0, 1e6, 1e9]), log_n=st.floats(7.0, 12.0), experts=st.floats(1.0, 1e4))
def test_effective_params_solves_equal_loss_numerically(a, b, c, d, e_start, span, base, unit, log_n, experts):
    """N̄ is the dense-limb size with the routed model's loss: solved by bisection, equal to the closed form."""
    law = RoutedLaw(a=a, b=b, c=c, d=d, e_start=e_start, e_max=e_start * span, log_base=base, n_unit_params=unit,
                    label="random", source="hypothesis")
    n = 10.0 ** log_n
    n_bar = float(effective_params(n, experts, law))
    assume(1e1 < n_bar < 1e29)
    assert _solve_dense(law, float(log_loss(n, experts, law))) == pytest.approx(n_bar, rel=1e-9)


# ---- properties -----------------------------------------------------------------------------------------


@FAST
@given(e_start=st.floats(1.0, 50.0), span=st.floats(1.01, 1e3), e1=st.floats(1.0, 1e6), e2=st.floats(1.0, 1e6))
def test_ehat_monotone_and_bounded(e_start, span, e1, e2):
    """Ê is non-decreasing in E and stays in [E_start, E_max] for E >= 1."""
    e_max = e_start * span
    lo, hi = sorted((e1, e2))
    h_lo, h_hi = expert_transform([lo, hi], e_start=e_start, e_max=e_max)
    assert h_lo <= h_hi
    assert e_start * (1 - 1e-12) <= h_lo and h_hi <= e_max * (1 + 1e-12)


def test_ehat_saturates_at_e_max():
    assert expert_transform(1e15, e_start=1.85, e_max=314.0) == pytest.approx(314.0, rel=1e-9)


@FAST
@given(a=st.floats(-0.5, -0.01), b=st.floats(-0.5, 0.5), c=st.floats(-0.05, 0.05), log_n=st.floats(6.0, 13.0),
       e1=st.floats(1.0, 1e3), factor=st.floats(1.5, 100.0))
def test_more_experts_help_iff_b_plus_c_log_n_negative(a, b, c, log_n, e1, factor):
    """With a < 0, d log L/d log Ê = b + c·log N and N̄/N = Ê^((b + c·log N)/a): more experts lower the
    loss and raise N̄ exactly when b + c·log N < 0, and the reverse when it is > 0."""
    law = RoutedLaw(a=a, b=b, c=c, d=0.3, e_start=1.5, e_max=400.0, log_base="e", n_unit_params=1e9,
                    label="random", source="hypothesis")
    n = 10.0 ** log_n
    slope = b + c * math.log(n / 1e9)
    assume(abs(slope) > 1e-3)
    e2 = e1 * factor
    d_loss = float(log_loss(n, e2, law) - log_loss(n, e1, law))
    d_eff = float(effective_params(n, e2, law) - effective_params(n, e1, law))
    assert np.sign(d_loss) == np.sign(slope)
    assert np.sign(d_eff) == -np.sign(slope)


@FAST
@given(gamma=st.floats(0.05, 1.0), experts=st.floats(1.0, 1e5))
def test_power_fit_round_trip(gamma, experts):
    fit = PowerFit(gamma=gamma, label="g", source="hypothesis")
    assert experts_for_ratio(effective_ratio(1e9, experts, fit), fit) == pytest.approx(experts, rel=1e-9)


@FAST
@given(log_n=st.floats(8.0, 10.9), experts=st.floats(1.0, 1e3))
def test_routed_round_trip(log_n, experts):
    """experts_for_ratio inverts effective_ratio for a RoutedLaw (hand law, k > 0 below N = 1e11)."""
    law = hand_law()
    n = 10.0 ** log_n
    r = float(effective_ratio(n, experts, law))
    assert experts_for_ratio(r, law, active_params=n) == pytest.approx(experts, rel=1e-6, abs=1e-6)


def test_broadcasting():
    law = hand_law()
    got = effective_params(np.array([[1e10], [1e9]]), np.array([1.0, 4.0, 10.0]), law)
    assert got.shape == (2, 3)
    assert effective_ratio(np.array([1e9, 1e10]), 64, LECTURE_POWER_FIT).shape == (2,)


# ---- validation -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("over,field", [
    (dict(e_start=0.5), "e_start"), (dict(e_start=6.0), "e_start"), (dict(e_start=7.0), "e_start"),
    (dict(a=0.1), "a"), (dict(a=0.0), "a"), (dict(b=math.nan), "b"), (dict(log_base="ln"), "log_base"),
    (dict(log_base=10), "log_base"), (dict(n_unit_params=0.0), "n_unit_params"), (dict(label=" "), "label"),
    (dict(source=""), "source"),
])
def test_routed_law_rejects_bad_fields(over, field):
    with pytest.raises(SpecError, match=f"^{field}:"):
        hand_law(**over)


def test_routed_law_requires_every_field():
    with pytest.raises(TypeError):  # no defaults: log_base and the unit of N must be stated
        RoutedLaw(a=-0.1, b=-0.2, c=0.1, d=0.5, e_start=2.0, e_max=6.0, label="x", source="y")


@pytest.mark.parametrize("call,match", [
    (lambda: expert_transform(0.5, e_start=2.0, e_max=6.0), "^experts:.*not parameters"),
    (lambda: expert_transform(2.0, e_start=2.0, e_max=2.0), "^e_start: must be < e_max"),
    (lambda: log_loss(-1.0, 4, hand_law()), "^params:"),
    (lambda: log_loss(1e9, 4, LECTURE_POWER_FIT), "^law:.*has no loss"),
    (lambda: effective_params(1e9, 4, "s-base"), "^law:"),
    (lambda: PowerFit(gamma=0.0, label="x", source="y"), "^gamma:"),
    (lambda: power_fit_from_point(experts=1, dense_equivalent_params=2.0, active_params=1.0), "^experts:"),
    (lambda: experts_for_ratio(0.5, LECTURE_POWER_FIT), "^ratio:"),
])
def test_function_inputs_rejected(call, match):
    with pytest.raises(SpecError, match=match):
        call()


# ---- coefficient files --------------------------------------------------------------------------------------

# Placeholder numbers for a syntactically complete clark2022 file: illustrative, NOT the paper's table.
CLARK_TEXT = """
form = "clark2022"
a = -0.1
b = -0.2
c = 0.1
d = 0.5
e_start = 2
e_max = 6.0
log_base = "10"
n_unit_params = 1e9
label = "hand law (illustrative)"
source = "tests/test_routed_scaling.py"
"""


def test_load_clark2022_text_and_path(tmp_path):
    assert load_routed_law(CLARK_TEXT) == hand_law()
    path = tmp_path / "law.toml"
    path.write_text(CLARK_TEXT, encoding="utf-8")
    assert load_routed_law(path) == hand_law() == load_routed_law(str(path))
    assert load_routed_law(CLARK_TEXT.replace('"10"', "10")) == hand_law()  # integer base read as "10"


def test_load_power_text():
    fit = load_routed_law('form = "power"\ngamma = 0.25\nlabel = "quarter"\nsource = "hand"\n')
    assert fit == PowerFit(gamma=0.25, label="quarter", source="hand")


@pytest.mark.parametrize("text,match", [
    (CLARK_TEXT.replace("e_max =", "e_maxx ="), "unknown key 'e_maxx'.*did you mean 'e_max'"),
    ('form = "power"\ngama = 0.3\nlabel = "x"\nsource = "y"\n', "unknown key 'gama'.*did you mean 'gamma'"),
    ('form = "power"\nlabel = "x"\n', "missing required key.*gamma, source"),
    (CLARK_TEXT.replace("e_max = 6.0\n", "").replace('log_base = "10"\n', ""), "missing.*e_max, log_base"),
    ('form = "clark"\n', "unknown form 'clark'.*did you mean 'clark2022'"),
    ('gamma = 0.3\nlabel = "x"\nsource = "y"\n', "missing key 'form'"),
    ('form = "power"\ngamma = "0.3"\nlabel = "x"\nsource = "y"\n', "gamma: expected a plain number"),
    ('form = "power"\ngamma = -0.3\nlabel = "x"\nsource = "y"\n', "gamma: must be"),
    ('form = "power"\ngamma = true\nlabel = "x"\nsource = "y"\n', "gamma: expected a plain number"),
    ('form = "power"\ngamma = 0.3\nlabel = ""\nsource = "y"\n', "label"),
    (CLARK_TEXT.replace("e_start = 2", "e_start = 8"), "e_start: must be < e_max"),
    (CLARK_TEXT.replace('"10"', '"ln"'), "log_base: must be one of"),
    (CLARK_TEXT.replace("a = -0.1", "a = 0.1"), "a: must be < 0"),
    ('form = "power"\ngamma = 0.3\ngamma = 0.4\n', "invalid TOML"),
])
def test_loader_errors(text, match):
    with pytest.raises(CatalogError, match=match):
        load_routed_law(text)


def test_loader_missing_file(tmp_path):
    with pytest.raises(CatalogError, match="no such file"):
        load_routed_law(tmp_path / "nope.toml")
    with pytest.raises(CatalogError, match="expected a path or TOML text"):
        load_routed_law(3.0)


def test_shipped_default_round_trip():
    """The shipped file is the lecture power fit: γ = ln(1.3e9/370e6)/ln 64 = 0.302152 to 4 digits."""
    text = resources.files("llmecon.catalog").joinpath("routed_law_power_fit.toml").read_text(encoding="utf-8")
    law = load_routed_law(text)
    assert law == default_routed_law() == LECTURE_POWER_FIT
    assert isinstance(law, PowerFit)
    assert law.gamma == round(math.log(1.3e9 / 370e6) / math.log(64), 4) == 0.3022
    assert "not the paper's coefficients" in law.label
