"""The load of one MoE layer on its busiest expert-parallel rank (SPEC A1, D15; issue 18).

Each MoE layer waits for its all-to-all, so a step costs, layer by layer, the *most loaded* expert
group's weight reads and FLOPs, not the mean's. Setting: a layer has S expert slots (the E routed
experts plus any redundant copies, ``spec.plan``), spread over ``ranks`` expert groups of
g = S/ranks; each of T tokens picks k distinct slots uniformly at random (uniform routing without
replacement per token; tokens independent). Two expectations of the busiest group:

* ``busiest_rank_experts``: E[max over groups of the distinct slots the T tokens touch there] (what
  the group reads). EXACT for whole T, any size. The set U of touched slots has a
  permutation-invariant law, so given |U| = u it is a uniform u-subset of the S slots, and the groups'
  counts are a multivariate hypergeometric occupancy:

      P(max ≤ x | u) = [z^u] (sum_{j≤x} C(g, j) z^j)^ranks / C(S, u)
      E[max | u]     = sum_{x=0}^{g-1} (1 - P(max ≤ x | u))
      E[max](T)      = sum_u P(|U| = u after T tokens) · E[max | u]

  P(|U| = u) after T tokens comes from the exact Markov chain of the union size (a token adds n new
  slots with probability C(S-u, n)·C(u, k-n)/C(S, k)). The polynomial powers are computed in
  probability form (each slot touched with probability p, "tilted" so nothing overflows; the
  ratio does not depend on p, and p is chosen near u/S for every u), so any S works. Tabulated for
  T = 0, 1, ... until within 1e-12·g of g (saturation); fractional T (batch/pp averages) is
  interpolated linearly between whole token counts.
* ``busiest_rank_pairs``: E[max over groups of the token-expert pairs routed there] (its expert
  FLOPs and the all-to-all volume it receives). Exact for T ≤ 1 (pairs = distinct experts), for one
  group (T·k) and for two groups (S_2 = T·k - S_1, so E[max] = T·k/2 + E|S_1 - T·k/2| from the exact
  law of S_1, a sum of T hypergeometric picks). Otherwise an APPROXIMATION: the exact marginal
  law of one group's pairs, the groups treated as independent (E_ind = sum_x 1 - F(x)^ranks), and the
  excess over the mean scaled by sqrt(ranks/(ranks-1)) for the groups' fixed sum (exact for
  exchangeable Gaussians whose sum is fixed); never below the distinct-expert maximum (every pair is
  on a touched expert). Against Monte Carlo (DeepSeek-V3, E = 256, k = 8, ranks 2/8/64, T 1..512,
  tests/step/test_expert_load.py) it is within 3% (T = 2 at 64 groups) and mostly within 1%.
  Tabulated to ``PAIRS_TABLE_TOKENS`` tokens; beyond, the excess grows as the Gaussian's,
  sqrt(ranks/(ranks-1))·σ_1·e_ranks·sqrt(T) (σ_1² the per-token variance of a group's picks,
  e_n = E[max of n standard normals]), continuous at the table's end.

Both are expectations per layer; the step sums them over layers (layers are routed independently),
and the busiest group for reads and for FLOPs is taken separately (max of a sum ≤ sum of maxima:
a slight overestimate when both matter at once). Omitted: real routers' skew (``expert_imbalance``
is an input, see ``busiest_rank``), token dropping and capacity factors, correlation between layers,
and the load balancer's choice of which experts to copy.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from ..errors import require_array, require_whole

PAIRS_TABLE_TOKENS = 256   # whole token counts tabulated for the pairs (the extrapolation is Gaussian beyond)
SATURATION_REL = 1e-12     # the distinct-expert table ends within this fraction of g below g
_TILT_SLOTS = 400          # slots per probability tilt in the conditional occupancy (keeps every term > 1e-150)


def touched_expert_fraction(*, experts: int, active_experts: int, tokens):
    """Expected fraction of E experts that at least one of ``tokens`` routes to, each token picking
    k distinct experts uniformly: 1 - (1-k/E)^tokens (SPEC A1; DeepSeek-V3: 3.1% at 1 token,
    63.8% at 32, 98.3% at 128). Real routers are not uniform: this is the expected value."""
    return 1.0 - np.power(1.0 - active_experts / experts, np.asarray(tokens, dtype=float))


# --- exact pieces ------------------------------------------------------------------------------

@functools.lru_cache(maxsize=8)
def _log_factorials(n: int) -> np.ndarray:
    return np.concatenate(([0.0], np.cumsum(np.log(np.arange(1, n + 1, dtype=float)))))


def _log_binom(n: int, j) -> np.ndarray:
    """log C(n, j) elementwise, -inf outside 0 ≤ j ≤ n."""
    lf = _log_factorials(max(n, 1))
    j = np.asarray(j)
    inside = (j >= 0) & (j <= n)
    jj = np.clip(j, 0, n)
    return np.where(inside, lf[n] - lf[jj] - lf[n - jj], -np.inf)


def _hypergeom(population: int, marked: int, draws: int) -> np.ndarray:
    """P(n of ``draws`` distinct picks from ``population`` fall among ``marked``), n = 0..min."""
    n = np.arange(min(marked, draws) + 1)
    return np.exp(_log_binom(marked, n) + _log_binom(population - marked, draws - n)
                  - _log_binom(population, draws))


def _power(poly: np.ndarray, n: int) -> np.ndarray:
    """poly^n by repeated squaring (coefficients are probabilities: no overflow)."""
    out = np.ones(1)
    while n:
        if n & 1:
            out = np.convolve(out, poly)
        n >>= 1
        if n:
            poly = np.convolve(poly, poly)
    return out


@functools.lru_cache(maxsize=256)
def _max_given_union(slots: int, ranks: int) -> np.ndarray:
    """E[max over groups of touched slots | u slots touched], u = 0..slots (module docstring).

    With every slot touched independently with probability p, groups hold iid Binomial(g, p)
    counts, the total is Binomial(S, p), and given the total the touched set is uniform, so
    P(max ≤ x | u) = [z^u] (sum_{j≤x} b_g(j) z^j)^ranks / b_S(u) for any p; p is taken near u/S."""
    g = slots // ranks
    u = np.arange(slots + 1)
    if ranks == 1:
        return u.astype(float)
    tilts = max(1, math.ceil(slots / _TILT_SLOTS))
    which = np.minimum((u * tilts) // max(slots, 1), tilts - 1)
    out = np.zeros(slots + 1)
    j = np.arange(g + 1)
    for t in range(tilts):
        us = u[which == t]
        p = (t + 0.5) / tilts
        lp, lq = math.log(p), math.log1p(-p)
        rank_pmf = np.exp(_log_binom(g, j) + j * lp + (g - j) * lq)
        total = np.exp(_log_binom(slots, us) + us * lp + (slots - us) * lq)
        for x in range(g):
            joint = _power(rank_pmf[:x + 1], ranks)
            num = np.where(us < joint.size, joint[np.minimum(us, joint.size - 1)], 0.0)
            out[us] += 1.0 - np.clip(num / total, 0.0, 1.0)
    return out


def _union_stepper(probs: np.ndarray):
    """The step "one more token: the union grows by n with probability probs[n][u]" as a function of
    the union's distribution ``dist``.

    nxt[u] = sum over n of dist[u-n]·probs[n][u-n]: row n of dist·probs is written at offset n of a
    zeroed row of width size + k + 1 (one strided write into a buffer made once; rows cannot overlap,
    the zeros between them stay zero) and the rows are summed in order of n, the additions of a loop
    over n (the same bits), in two array calls per token."""
    rows, size = probs.shape
    width = size + rows
    buf = np.zeros(rows * width)
    shifted = np.lib.stride_tricks.as_strided(buf, shape=(rows, size), strides=((width + 1) * buf.itemsize,
                                                                               buf.itemsize))
    kept = buf.reshape(rows, width)[:, :size]

    def step(dist: np.ndarray) -> np.ndarray:
        np.multiply(dist, probs, out=shifted)
        return kept.sum(axis=0)

    return step


@functools.lru_cache(maxsize=256)
def _distinct_table(slots: int, k: int, ranks: int) -> np.ndarray:
    """E[max distinct slots on a group] for T = 0, 1, ..., up to saturation (module docstring)."""
    g = slots // ranks
    given = _max_given_union(slots, ranks)
    u = np.arange(slots + 1)
    lk = _log_binom(slots, k)
    probs = np.exp([_log_binom_vec(slots - u, n) + _log_binom_vec(u, k - n) - lk for n in range(k + 1)])
    probs /= probs.sum(axis=0)                 # each column a distribution to the last bit (no leak)
    union_step = _union_stepper(probs)
    dist = np.zeros(slots + 1)
    dist[0] = 1.0
    out = [0.0]
    while g - out[-1] > SATURATION_REL * g:
        dist = union_step(dist)
        dist /= dist.sum()
        out.append(float(dist @ given))
    return np.asarray(out)


def _log_binom_vec(n, j) -> np.ndarray:
    """log C(n, j) for arrays of n (and scalar or array j), -inf outside 0 ≤ j ≤ n."""
    n = np.asarray(n)
    j = np.asarray(j) + 0 * n
    lf = _log_factorials(int(np.max(n)) if n.size else 1)
    inside = (j >= 0) & (j <= n)
    jj = np.clip(j, 0, n)
    return np.where(inside, lf[n] - lf[jj] - lf[n - jj], -np.inf)


@functools.lru_cache(maxsize=64)
def expected_max_normal(n: int) -> float:
    """E[max of n independent standard normals] (quadrature of x·n·φ(x)·Φ(x)^(n-1)); 0 for n = 1,
    1/sqrt(pi) for n = 2."""
    x = np.linspace(-10.0, 10.0, 2001)  # trapezoid rule: spectrally accurate on a smooth, fast-decaying integrand
    cdf = 0.5 * (1.0 + np.array([math.erf(v / math.sqrt(2.0)) for v in x]))
    pdf = np.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)
    y = x * n * pdf * cdf ** (n - 1)
    return float(np.sum(y[1:] + y[:-1]) * 0.5 * (x[1] - x[0]))


@functools.lru_cache(maxsize=256)
def _pairs_table(slots: int, k: int, ranks: int) -> tuple[np.ndarray, float]:
    """(E[max pairs on a group] for T = 0..PAIRS_TABLE_TOKENS, the excess's slope in sqrt(T) beyond)."""
    g = slots // ranks
    pick = _hypergeom(slots, g, k)            # one token's picks on one group
    mean1 = k / ranks
    var1 = float(np.sum((np.arange(pick.size) - mean1) ** 2 * pick))
    scale = math.sqrt(ranks / (ranks - 1.0))
    slope = scale * math.sqrt(var1) * expected_max_normal(ranks)
    distinct = _distinct_table(slots, k, ranks)
    out = np.zeros(PAIRS_TABLE_TOKENS + 1)
    law = np.ones(1)
    for t in range(1, PAIRS_TABLE_TOKENS + 1):
        law = np.convolve(law, pick)
        mu = t * mean1
        x = np.arange(law.size)
        if ranks == 2:
            value = mu + float(np.sum(np.abs(x - mu) * law))   # exact: the other group holds T·k - S_1
        else:
            cdf = np.minimum(np.cumsum(law)[:-1], 1.0)
            value = mu + scale * (float(np.sum(1.0 - cdf ** ranks)) - mu)
        floor = distinct[min(t, distinct.size - 1)]
        out[t] = min(max(value, floor), t * min(k, g))
    out[1] = distinct[1]                       # one token: pairs = distinct experts, exact
    return out, slope


# --- public: expectations over a token axis ------------------------------------------------------

def _check(experts, active_experts, ranks, tokens):
    experts = require_whole("experts", experts)
    k = require_whole("active_experts", active_experts)
    ranks = require_whole("ranks", ranks)
    if k > experts or experts % ranks:
        from ..errors import SpecError

        raise SpecError(f"{experts} expert slots, top-{k}, {ranks} groups: need k ≤ slots and groups dividing "
                        "the slots", field="ranks", value=ranks)
    return experts, k, ranks, require_array("tokens", tokens, minimum=0)


def busiest_rank_experts(*, experts: int, active_experts: int, ranks: int, tokens):
    """Expected distinct expert slots touched on the busiest of ``ranks`` groups of experts/ranks
    slots by ``tokens`` tokens (module docstring: exact for whole token counts, linear between)."""
    return _experts(*_check(experts, active_experts, ranks, tokens))


def busiest_rank_pairs(*, experts: int, active_experts: int, ranks: int, tokens):
    """Expected token-expert pairs routed to the busiest of ``ranks`` groups (module docstring:
    exact for ≤ 1 token, one or two groups; otherwise the documented approximation)."""
    return _pairs(*_check(experts, active_experts, ranks, tokens))


def _experts(s: int, k: int, ranks: int, t: np.ndarray):
    if ranks == 1:
        return s * touched_expert_fraction(experts=s, active_experts=k, tokens=t)
    table = _distinct_table(s, k, ranks)
    return np.interp(t, np.arange(table.size, dtype=float), table, right=float(s // ranks))


def _pairs(s: int, k: int, ranks: int, t: np.ndarray):
    if ranks == 1:
        return t * k
    table, slope = _pairs_table(s, k, ranks)
    last = PAIRS_TABLE_TOKENS
    out = np.interp(t, np.arange(last + 1, dtype=float), table)
    if np.any(t > last):
        excess = table[last] - last * k / ranks + slope * (np.sqrt(np.maximum(t, last)) - math.sqrt(last))
        out = np.where(t <= last, out, t * k / ranks + excess)
    return np.minimum(out, t * min(k, s // ranks))


@dataclass(frozen=True, kw_only=True)
class BusiestRank:
    """One MoE layer's expected load on the busiest expert group (per micro-batch of ``tokens``)."""

    experts: object        # distinct slots it reads (≤ slots_per_rank)
    pairs: object          # token-expert pairs it computes and receives
    mean_pairs: object     # tokens·k/ep: every group's mean
    slots_per_rank: int

    @functools.cached_property
    def touched_share(self):
        """Share of the group's slots read: experts / slots_per_rank."""
        return np.asarray(self.experts, dtype=float) / self.slots_per_rank

    @functools.cached_property
    def load_factor(self):
        """pairs / mean_pairs (1 with no tokens): what the all-to-all's busiest receiver gets over the mean."""
        mean = np.asarray(self.mean_pairs, dtype=float)
        return np.divide(self.pairs, mean, out=np.ones(np.broadcast(self.pairs, mean).shape), where=mean > 0)

    @functools.cached_property
    def rows_per_expert(self):
        """Tokens per touched expert on the busiest group (the expert GEMMs' m): pairs / experts."""
        e = np.asarray(self.experts, dtype=float)
        return np.divide(self.pairs, e, out=np.zeros(np.broadcast(self.pairs, e).shape), where=e > 0)


def busiest_rank(*, slots: int, active_experts: int, ranks: int, tokens, expert_imbalance: float = 1.0) -> BusiestRank:
    """The busiest group of a layer with ``slots`` expert slots over ``ranks`` groups, ``tokens``
    tokens, and routing skew ``expert_imbalance`` ρ ≥ 1.

    ρ is the busiest group's pairs over what uniform routing gives it (1 = uniform routing, whose
    busiest group is already above the mean by chance — that part is modelled here). Skew scales
    the busiest group's pairs (FLOPs and all-to-all volume) to min(ρ·pairs, tokens·min(k, g)), and its
    reads to the distinct slots of ρ_eff·tokens uniformly routed tokens, ρ_eff = the pairs' actual
    scale after that cap (so one group, ep = 1, is never skewed: it holds everything), and never
    fewer than pairs/tokens (an expert takes at most one pair per token). An approximation: a
    skewed router concentrates tokens on *hot* experts, which would touch fewer distinct ones."""
    t = np.asarray(tokens, dtype=float)
    k = active_experts
    g = slots // ranks
    pairs = uniform = _pairs(slots, k, ranks, t)
    if expert_imbalance == 1.0:
        experts = _experts(slots, k, ranks, t)
    else:
        pairs = np.minimum(expert_imbalance * uniform, t * min(k, g))
        scale = np.divide(pairs, uniform, out=np.ones(np.shape(pairs)), where=uniform > 0)
        experts = _experts(slots, k, ranks, scale * t)
    per_token = np.divide(pairs, t, out=np.zeros(np.shape(pairs)), where=t > 0)
    experts = np.minimum(np.maximum(experts, per_token), g)   # an expert takes at most one pair per token
    return BusiestRank(experts=experts, pairs=pairs, mean_pairs=t * k / ranks, slots_per_rank=g)
