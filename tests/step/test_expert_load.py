"""The busiest expert group's load (step.expert_load, issue 18): hand-computed and brute-force
enumerated tiny cases (exact), DeepSeek-V3's batch-1 EP64 figure, Monte Carlo for the pairs
approximation, and properties (max >= mean, = mean for one group, monotone in tokens)."""

from __future__ import annotations

import math
from fractions import Fraction
from itertools import combinations, product

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmecon.catalog.hardware import get_system
from llmecon.catalog.models import get_model
from llmecon.errors import SpecError
from llmecon.spec.plan import Plan
from llmecon.step import expert_load as X
from llmecon.step.expert_load import (PAIRS_TABLE_TOKENS, busiest_rank, busiest_rank_experts, busiest_rank_pairs,
                                      expected_max_normal, touched_expert_fraction)
from llmecon.step.inference import decode_step, weights_read_per_chip

EXACT = 1e-12


def brute_force(experts: int, k: int, ranks: int, tokens: int) -> tuple[Fraction, Fraction]:
    """(E[max distinct experts on a group], E[max token-expert pairs on a group]) over every one of
    the C(E, k)^tokens equally likely routings; groups are consecutive blocks of E/ranks experts."""
    g = experts // ranks
    subsets = list(combinations(range(experts), k))
    d_sum = s_sum = n = 0
    for routing in product(subsets, repeat=tokens):
        count = [0] * experts
        for chosen in routing:
            for e in chosen:
                count[e] += 1
        blocks = [count[r * g:(r + 1) * g] for r in range(ranks)]
        d_sum += max(sum(1 for c in b if c) for b in blocks)
        s_sum += max(sum(b) for b in blocks)
        n += 1
    return Fraction(d_sum, n), Fraction(s_sum, n)


def test_hand_two_groups_one_pick_each():
    """E = 4 experts in groups {0,1}, {2,3}; k = 1; 2 tokens. Both tokens in the same group
    (probability 1/2): that group holds 2 pairs, and 1 distinct expert if they picked the same one
    (1/2) else 2 -> 1.5 distinct. Different groups (1/2): 1 and 1. E[max distinct] = 1/2·1.5 + 1/2·1
    = 1.25 (the mean group: 2·(1 - (3/4)^2) = 0.875); E[max pairs] = 1/2·2 + 1/2·1 = 1.5 (mean 1)."""
    kw = dict(experts=4, active_experts=1, ranks=2, tokens=2)
    assert float(busiest_rank_experts(**kw)) == pytest.approx(1.25, rel=EXACT)
    assert float(busiest_rank_pairs(**kw)) == pytest.approx(1.5, rel=EXACT)
    assert brute_force(4, 1, 2, 2) == (Fraction(5, 4), Fraction(3, 2))


TINY = [(4, 1, 2, 1), (4, 1, 2, 2), (4, 2, 2, 1), (4, 2, 2, 2), (4, 2, 2, 4), (4, 2, 4, 2), (4, 2, 4, 4),
        (6, 2, 3, 2), (6, 3, 3, 3), (8, 2, 4, 3), (8, 3, 4, 2), (6, 2, 6, 3)]


@pytest.mark.parametrize("experts,k,ranks,tokens", TINY)
def test_tiny_cases_against_brute_force(experts, k, ranks, tokens):
    """Distinct experts: exact for every case. Pairs: exact for one token and for two groups;
    otherwise the approximation (independent groups with exact marginals, excess scaled by
    sqrt(n/(n-1))) is within 3.5% here (worst: E 6, k 2, 3 groups, 2 tokens: 2.171 vs 56/25 = 2.24)."""
    d, s = brute_force(experts, k, ranks, tokens)
    kw = dict(experts=experts, active_experts=k, ranks=ranks, tokens=tokens)
    assert float(busiest_rank_experts(**kw)) == pytest.approx(float(d), rel=EXACT)
    pairs = float(busiest_rank_pairs(**kw))
    if tokens <= 1 or ranks <= 2:
        assert pairs == pytest.approx(float(s), rel=EXACT)
    else:
        assert pairs == pytest.approx(float(s), rel=0.035)


def _one_token_max_exact(experts: int, k: int, ranks: int) -> Fraction:
    """E[max over groups of one token's picks], by counting k-subsets group by group (exact integers):
    P(max ≤ x) = #{k-subsets with ≤ x picks in every group} / C(E, k)."""
    g = experts // ranks
    total = math.comb(experts, k)
    expect = Fraction(0)
    for x in range(min(k, g)):
        ways = [1] + [0] * k          # ways[j]: choices of j picks in the groups so far, each ≤ x
        for _ in range(ranks):
            ways = [sum(ways[j - i] * math.comb(g, i) for i in range(min(x, j) + 1)) for j in range(k + 1)]
        expect += 1 - Fraction(ways[k], total)
    return expect


def test_deepseek_v3_batch_1_on_64_groups():
    """DeepSeek-V3, 256 routed experts, top-8, EP64 (4 experts per chip), one token: the busiest
    chip reads 1.2971 of the 8 touched experts (exact 1.29705756), the mean chip 8/64 = 0.125.
    Per MoE layer an expert is 3·7168·2048 = 44,040,192 fp8 bytes; 58 MoE layers -> busiest
    1.29706·44.04 MB·58 = 3.313 GB of expert reads per step, mean 0.125·44.04 MB·58 = 0.319 GB
    (10.4x). On a GB200 NVL72 under tp8·adp8·ep64 the memory term goes from (2.024 + 0.319)/8e12
    to (2.024 + 3.313)/8e12 s: 2.28x (the non-expert weights, 16.19 GB over tp 8 = 2.024 GB)."""
    exact = _one_token_max_exact(256, 8, 64)
    assert float(exact) == pytest.approx(1.2970575560, rel=1e-9)
    assert float(busiest_rank_experts(experts=256, active_experts=8, ranks=64, tokens=1)) == pytest.approx(
        float(exact), rel=1e-10)
    m, s = get_model("deepseek-v3"), get_system("gb200-nvl72")
    plan = Plan(tp=8, adp=8, ep=64)
    expert_bytes = 3 * 7168 * 2048 * 58
    non_expert = float(weights_read_per_chip(m, plan, touched_fraction=0.0))
    step = decode_step(m, s, batch=1, context=0, plan=plan)
    busiest = float(step.weight_bytes_per_chip) - non_expert
    mean = float(step.weight_bytes) / plan.chips - non_expert
    assert busiest == pytest.approx(float(exact) * expert_bytes, rel=1e-9)
    assert busiest == pytest.approx(3.313e9, rel=1e-3)
    assert mean == pytest.approx(0.125 * expert_bytes, rel=1e-9)
    assert mean == pytest.approx(0.3193e9, rel=1e-3)
    bw = s.accelerator.hbm_bandwidth_bytes_per_s
    kv = float(m.kv_bytes_per_token())  # the new token's KV write: the MLA latent, whole on its one attention group
    assert float(step.time.memory_s) == pytest.approx((non_expert + busiest + kv) / bw, rel=1e-9)
    assert (non_expert + busiest) / (non_expert + mean) == pytest.approx(2.28, abs=0.01)


def _monte_carlo(experts, k, ranks, tokens, samples, seed=0):
    rng = np.random.default_rng(seed)
    picks = np.argpartition(rng.random((samples, tokens, experts)), k, axis=2)[..., :k]
    counts = np.zeros((samples, experts), dtype=np.int64)
    np.add.at(counts, (np.arange(samples)[:, None, None], picks), 1)
    per = counts.reshape(samples, ranks, experts // ranks)
    d = (per > 0).sum(axis=2).max(axis=1)
    p = per.sum(axis=2).max(axis=1)
    return (d.mean(), d.std() / math.sqrt(samples)), (p.mean(), p.std() / math.sqrt(samples))


@pytest.mark.parametrize("ranks,tokens,samples", [(64, 2, 6000), (64, 8, 3000), (8, 32, 800), (64, 400, 150)])
def test_deepseek_sizes_against_monte_carlo(ranks, tokens, samples):
    """E = 256, k = 8. Distinct experts (exact) within 4 standard errors of the simulation; pairs (the
    approximation; 400 tokens is beyond the table, on the Gaussian extrapolation) within 3.5% + 4 s.e.
    (a 100k-sample run gave 1.873 vs 1.931 at 64 groups, 2 tokens: -3.0%, the worst; 3.855 vs 3.873 at 8
    tokens; 40.10 vs 40.18 at 8 groups, 32 tokens)."""
    (d, d_se), (p, p_se) = _monte_carlo(256, 8, ranks, tokens, samples)
    kw = dict(experts=256, active_experts=8, ranks=ranks, tokens=tokens)
    assert abs(float(busiest_rank_experts(**kw)) - d) <= 4 * d_se + 1e-9
    assert abs(float(busiest_rank_pairs(**kw)) - p) <= 0.035 * p + 4 * p_se


def test_tilted_occupancy_matches_the_closed_form():
    """402 slots in 201 groups of 2 (two probability tilts): E[max | u] = [u ≥ 1] + P(some group
    has both | u) with P(no group has both | u) = C(201, u)·2^u / C(402, u) (exact integers)."""
    got = X._max_given_union(402, 201)
    for u in (0, 1, 2, 3, 10, 50, 150, 200, 201, 202, 300, 402):
        none = Fraction(math.comb(201, u) * 2 ** u, math.comb(402, u)) if u <= 201 else Fraction(0)
        want = (1 if u else 0) + (1 - none if u else 0)
        assert got[u] == pytest.approx(float(want), rel=1e-10, abs=1e-12), u


def test_expected_max_of_normals():
    assert expected_max_normal(1) == pytest.approx(0.0, abs=1e-9)
    assert expected_max_normal(2) == pytest.approx(1 / math.sqrt(math.pi), rel=1e-9)
    assert expected_max_normal(3) == pytest.approx(1.5 / math.sqrt(math.pi), rel=1e-9)


# --- skew ----------------------------------------------------------------------------------------

def test_skew_scales_pairs_and_reads_until_the_cap():
    """expert_imbalance ρ: pairs x ρ, reads as for ρ·tokens uniformly routed tokens; capped at
    tokens·min(k, g) pairs; one group (ep 1) is never skewed."""
    even = busiest_rank(slots=256, active_experts=8, ranks=64, tokens=16.0)
    hot = busiest_rank(slots=256, active_experts=8, ranks=64, tokens=16.0, expert_imbalance=1.5)
    assert float(hot.pairs) == pytest.approx(1.5 * float(even.pairs), rel=EXACT)
    assert float(hot.experts) == pytest.approx(float(busiest_rank_experts(experts=256, active_experts=8, ranks=64,
                                                                          tokens=24.0)), rel=EXACT)
    assert float(hot.load_factor) == pytest.approx(1.5 * float(even.load_factor), rel=EXACT)
    capped = busiest_rank(slots=256, active_experts=8, ranks=64, tokens=1.0, expert_imbalance=100.0)
    assert float(capped.pairs) == 4.0  # one token puts at most min(k, g) = 4 pairs on a 4-expert group
    assert float(capped.experts) == pytest.approx(4.0, rel=1e-9)
    one = busiest_rank(slots=256, active_experts=8, ranks=1, tokens=16.0, expert_imbalance=3.0)
    assert float(one.pairs) == 128.0 and float(one.load_factor) == 1.0
    assert float(one.experts) == pytest.approx(256 * float(touched_expert_fraction(experts=256, active_experts=8,
                                                                                    tokens=16.0)), rel=EXACT)


def test_bad_sizes_are_spec_errors():
    with pytest.raises(SpecError, match="^ranks 3"):
        busiest_rank_experts(experts=256, active_experts=8, ranks=3, tokens=1)
    with pytest.raises(SpecError, match="^tokens"):
        busiest_rank_pairs(experts=256, active_experts=8, ranks=8, tokens=-1)


# --- properties ------------------------------------------------------------------------------------

FAST = settings(max_examples=40, deadline=None)


@st.composite
def layouts(draw):
    g = draw(st.integers(1, 12))
    ranks = draw(st.sampled_from([1, 2, 3, 4, 8, 16, 32]))
    k = draw(st.integers(1, min(8, g * ranks)))
    return g * ranks, k, ranks


@FAST
@given(layout=layouts(), tokens=st.lists(st.floats(0, 3 * PAIRS_TABLE_TOKENS) | st.integers(0, 3 * PAIRS_TABLE_TOKENS),
                                         min_size=2, max_size=8))
def test_busiest_at_least_mean_equal_for_one_group_and_monotone(layout, tokens):
    slots, k, ranks = layout
    g = slots // ranks
    t = np.sort(np.asarray(tokens + [0.0, 1.0, 2.0, 7.5, float(PAIRS_TABLE_TOKENS)]))
    kw = dict(experts=slots, active_experts=k, ranks=ranks, tokens=t)
    d, p = busiest_rank_experts(**kw), busiest_rank_pairs(**kw)
    mean_d = g * touched_expert_fraction(experts=slots, active_experts=k, tokens=t)
    mean_p = t * k / ranks
    # fractional tokens (batch/pp averages) interpolate linearly between whole counts, while the mean's
    # closed form 1 - (1 - k/E)^T is concave in T: compare the two at whole token counts
    whole = t == np.round(t)
    assert np.all(d[whole] >= mean_d[whole] - 1e-9) and np.all(p >= mean_p - 1e-9)
    assert np.all(d <= g + 1e-9) and np.all(p <= t * min(k, g) + 1e-9)
    assert np.all(p[whole] >= d[whole] - 1e-9)         # every pair is on a touched expert
    assert np.all(np.diff(d) >= -1e-9) and np.all(np.diff(p) >= -1e-9)
    if ranks == 1:
        assert np.allclose(d, mean_d, rtol=1e-12) and np.allclose(p, mean_p, rtol=1e-12)
