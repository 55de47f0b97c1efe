"""Training closed forms (SPEC F21-F23): hand-computed cases, published Chinchilla figures,
properties and bad input. The lecture's own cases are in test_lecture_cases.py."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmecon.econ import training
from llmecon.errors import CatalogError, SpecError


def test_training_flops_hand():
    """6·N·D: 70e9 params x 1.4e12 tokens = 5.88e23 FLOPs; attention adds 3 x forward per token."""
    assert training.training_flops(params=70e9, tokens=1.4e12) == pytest.approx(5.88e23, rel=1e-12)
    assert training.training_flops(params=1.0, tokens=10.0, attention_flops_per_token=2.0) == pytest.approx(120.0)


def test_chinchilla_frontier_exponents_hand():
    """Approach 3 (alpha 0.34, beta 0.28; Hoffmann et al. 2022 Appendix D.2): N_opt ∝ C^(β/(α+β))
    = C^0.4516 and D_opt ∝ C^0.5484, and every frontier point spends its budget: 6·N·D = C.
    At Gopher/Chinchilla's budget 5.88e23 (70B x 1.4T) these printed coefficients give N ≈ 32B,
    D ≈ 3.0T (by hand: G = (0.34·406.4/(0.28·410.7))^(1/0.62) = 1.345, (C/6)^0.4516 = 2.41e10,
    N = 3.25e10): approach 3 favours fewer parameters than approaches 1-2 (the 70B/1.4T choice)."""
    law = training.CHINCHILLA
    n1, d1 = law.compute_optimal(flops=1e22)
    n2, d2 = law.compute_optimal(flops=1e24)
    assert n2 / n1 == pytest.approx(100 ** (0.28 / 0.62), rel=1e-9)
    assert d2 / d1 == pytest.approx(100 ** (0.34 / 0.62), rel=1e-9)
    n, d = law.compute_optimal(flops=5.88e23)
    assert 6.0 * n * d == pytest.approx(5.88e23, rel=1e-9)
    assert 25e9 < n < 45e9 and 2e12 < d < 4e12


@settings(max_examples=60, deadline=None)
@given(st.floats(1e18, 1e27))
def test_compute_optimal_minimises_loss_on_budget(flops):
    """The frontier point has lower loss than shifting the same budget 10% either way."""
    law = training.CHINCHILLA
    n, d = law.compute_optimal(flops=flops)
    best = law.loss(params=n, tokens=d)
    for f in (0.9, 1.1):
        assert best <= law.loss(params=n * f, tokens=d / f) + 1e-12


@settings(max_examples=60, deadline=None)
@given(st.floats(0.1, 10), st.floats(0.1, 3), st.floats(0.1, 10), st.floats(0.1, 3))
def test_power_law_split_is_minimum_and_ratio_q_over_p(a, p, b, q):
    s = training.power_law_split(a=a, p=p, b=b, q=q)
    assert s.ratio == pytest.approx(q / p, rel=1e-9)
    f = lambda x: a * x**p + b * x**-q  # noqa: E731
    assert f(s.x) <= min(f(s.x * 1.01), f(s.x / 1.01))


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 64), st.integers(1, 512))
def test_bubbles_shrink_with_microbatches(p, m):
    """Bubble -> 0 as micro-batches grow; interleaving never adds bubble; zero-bubble is 0."""
    g = training.bubble_fraction("1f1b", stages=p, microbatches=m)
    g2 = training.bubble_fraction("1f1b", stages=p, microbatches=2 * m)
    assert 0 <= g2 <= g < 1
    assert training.bubble_fraction("interleaved", stages=p, microbatches=m, chunks=2) <= g + 1e-12
    assert training.bubble_fraction("zero-bubble", stages=p, microbatches=m) == 0


def test_interleaved_v1_equals_gpipe():
    """(P−1)/(v·M) over ideal with v = 1 is (P−1)/(M+P−1) of the step: the same bubble."""
    assert training.bubble_fraction("interleaved", stages=4, microbatches=8) == pytest.approx(3 / 11, rel=1e-12)


@pytest.mark.parametrize("call, match", [
    (lambda: training.training_flops(params=-1, tokens=1), "params"),
    (lambda: training.chinchilla_tokens(params=float("inf")), "params"),
    (lambda: training.pretrain_tokens_matching_inference(inference_tokens=1e12, inference_efficiency=0), "efficiency"),
    (lambda: training.gpipe_bubble_fraction(stages=2.5, microbatches=8), "whole numbers"),
    (lambda: training.bubble_fraction("1f1b", stages=4, microbatches=8, chunks=2), "interleaved"),
    (lambda: training.power_law_split(a=1, p=0, b=1, q=1), "p"),
])
def test_bad_input(call, match):
    with pytest.raises(SpecError, match=match):
        call()


def test_unknown_schedule_did_you_mean():
    with pytest.raises(CatalogError, match="did you mean '1f1b'"):
        training.bubble_fraction("1f1c", stages=4, microbatches=8)


# ---- lifetime cost at a fixed loss ---------------------------------------------------------------


@pytest.mark.parametrize("flops", [1e21, 1e24])
def test_lifetime_optimum_without_inference_is_chinchilla_optimal(flops):
    """With no RL and no inference the cheapest model reaching a loss is the compute-optimal one of
    Hoffmann et al. Appendix D.2 (closed form), found here by the numerical search."""
    law = training.CHINCHILLA
    n0, d0 = law.compute_optimal(flops=flops)
    target = float(law.loss(params=n0, tokens=d0))
    best, _ = training.lifetime_optimum(target_loss=target, inference_tokens=0.0, inference_efficiency=1.0)
    assert best.params == pytest.approx(n0, rel=2e-3)
    assert best.pretrain_tokens == pytest.approx(d0, rel=5e-3)
    assert best.total_flops == pytest.approx(flops, rel=1e-5)  # the minimum is flat: cost error is 2nd order


def test_tokens_for_loss_inverts_the_law():
    law = training.CHINCHILLA
    d = training.tokens_for_loss(law, params=7e10, loss=float(law.loss(params=7e10, tokens=1.4e12)))
    assert d == pytest.approx(1.4e12, rel=1e-9)
    assert training.tokens_for_loss(law, params=1e6, loss=1.8) == float("inf")  # too small to ever get there


@settings(max_examples=25, deadline=None)
@given(d_inf=st.floats(1e11, 1e16), more=st.floats(1.5, 100.0))
def test_more_inference_favours_smaller_longer_trained_models(d_inf, more):
    """SPEC F22's point: the more tokens a model will serve, the smaller (and more over-trained)
    the lifetime-optimal model for the same loss."""
    kw = dict(target_loss=2.0, inference_efficiency=1 / 3)
    a, _ = training.lifetime_optimum(inference_tokens=d_inf, **kw)
    b, _ = training.lifetime_optimum(inference_tokens=d_inf * more, **kw)
    assert b.params <= a.params * (1 + 1e-3)
    assert b.pretrain_tokens / b.params >= a.pretrain_tokens / a.params * (1 - 1e-3)


def test_equal_split_is_the_lecture_design_and_shares_sum_to_one():
    d_inf = training.inference_tokens(tokens_per_s=50e6, seconds=60 * 86400)
    d_pre = training.pretrain_tokens_matching_inference(inference_tokens=d_inf, inference_efficiency=1 / 3)
    c = training.lifetime_cost(params=1e11, pretrain_tokens=d_pre, inference_tokens=d_inf, inference_efficiency=1 / 3,
                               rl_tokens=d_pre * 6 * (1 / 3) / 3)  # D_pre = 1.5·D_RL at r = 3, η = 1/3
    assert [float(x) for x in c.shares] == pytest.approx([1 / 3] * 3, rel=1e-12)
    assert c.total_flops == pytest.approx(3 * 6 * 1e11 * d_pre, rel=1e-12)


def test_lifetime_bad_input():
    with pytest.raises(SpecError, match="irreducible"):
        training.lifetime_optimum(target_loss=1.5, inference_tokens=1e12, inference_efficiency=0.5)
    with pytest.raises(SpecError, match="rl_efficiency"):
        training.lifetime_cost(params=1e9, pretrain_tokens=1e10, inference_tokens=0, inference_efficiency=1,
                               rl_efficiency=0)
