"""Training economics, closed forms (SPEC F21-F23): training FLOPs, Chinchilla, over-training
from cost equalisation against lifetime inference, and pipeline bubbles.

Step time, MFU, memory per GPU and the ``train``/``overtrain`` commands build on these (issue 5,
in progress). Pure functions of plain numbers, numpy-broadcastable, SI units, FLOPs not MACs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import SpecError, require_array, unknown_name, without_field

CHINCHILLA_TOKENS_PER_PARAM = 20.0  # Hoffmann et al. 2022 (arXiv:2203.15556): ~20 tokens per parameter


def _positive(name: str, value, *, allow_zero: bool = False) -> np.ndarray:
    """``value`` as an array of finite numbers > 0 (>= 0 with ``allow_zero``). The closed forms take plain
    numbers, not a front-end's inputs: the error names the parameter in its text and has no field."""
    try:
        return require_array(name, value, minimum=0, exclusive=not allow_zero)
    except SpecError as exc:
        raise without_field(exc) from None


def training_flops(*, params, tokens, attention_flops_per_token=0.0):
    """C = 6·N·D (2 forward + 4 backward FLOPs per parameter per token; Kaplan et al. 2020) plus
    3x the forward attention FLOPs per token when given (~12·n_layers·L·d_model at long context).
    Omits recomputation (see HFU vs MFU) and element-wise work."""
    n, d = _positive("params", params), _positive("tokens", tokens)
    extra = _positive("attention_flops_per_token", attention_flops_per_token, allow_zero=True)
    return 6.0 * n * d + 3.0 * extra * d


def chinchilla_tokens(*, params, tokens_per_param=CHINCHILLA_TOKENS_PER_PARAM):
    """Compute-optimal training tokens by the rule of thumb D ≈ 20·N (100B -> 2T)."""
    return _positive("params", params) * _positive("tokens_per_param", tokens_per_param)


def overtrain_factor(*, tokens, params, tokens_per_param=CHINCHILLA_TOKENS_PER_PARAM):
    """Training tokens over the Chinchilla-optimal count (2.592e14 tokens at 100B: 129.6x)."""
    return _positive("tokens", tokens) / chinchilla_tokens(params=params, tokens_per_param=tokens_per_param)


def inference_tokens(*, tokens_per_s, seconds):
    """Lifetime inference tokens D_inf = rate x deployment time (50M tok/s x 60 days = 2.592e14)."""
    return _positive("tokens_per_s", tokens_per_s) * _positive("seconds", seconds)


def pretrain_tokens_matching_inference(*, inference_tokens, inference_efficiency):
    """Pretraining tokens whose cost equals lifetime inference (SPEC F22):
    6·N·D_pre = 2·N·D_inf/η_inf  =>  D_pre = D_inf/(3·η_inf). η_inf is inference hardware
    efficiency relative to training's (decode runs at lower utilisation: η < 1)."""
    d = _positive("inference_tokens", inference_tokens)
    eta = _positive("inference_efficiency", inference_efficiency)
    return d / (3.0 * eta)


def pretrain_tokens_matching_rl(*, rl_tokens, rl_flops_per_param_token, rl_efficiency):
    """Pretraining tokens whose cost equals RL (SPEC F22): 6·N·D_pre = r·N·D_RL/η_RL, so
    D_pre = r·D_RL/(6·η_RL); r in [2, 6] FLOPs per parameter per RL token (r = 3, η = 1/3: 1.5)."""
    d = _positive("rl_tokens", rl_tokens)
    r = _positive("rl_flops_per_param_token", rl_flops_per_param_token)
    eta = _positive("rl_efficiency", rl_efficiency)
    return r * d / (6.0 * eta)


@dataclass(frozen=True, kw_only=True)
class PowerLawSplit:
    """Minimum of a·x^p + b·x^-q: where it sits and how the two terms compare there."""

    x: float
    growing_term: float
    shrinking_term: float

    @property
    def ratio(self) -> float:
        """growing / shrinking term at the minimum: q/p (equal only when p = q)."""
        return self.growing_term / self.shrinking_term


def power_law_split(*, a: float, p: float, b: float, q: float) -> PowerLawSplit:
    """Minimise a·x^p + b·x^-q (a, b, p, q > 0): d/dx = 0 gives p·a·x^p = q·b·x^-q, so
    x* = (q·b/(p·a))^(1/(p+q)) and the terms stand in ratio q/p, not 1:1 (SPEC F22: an equal
    split is optimal only for equal exponents)."""
    a_, p_, b_, q_ = (float(_positive(n, v)) for n, v in (("a", a), ("p", p), ("b", b), ("q", q)))
    x = (q_ * b_ / (p_ * a_)) ** (1.0 / (p_ + q_))
    return PowerLawSplit(x=x, growing_term=a_ * x**p_, shrinking_term=b_ * x**-q_)


@dataclass(frozen=True, kw_only=True)
class ScalingLaw:
    """L(N, D) = E + A/N^alpha + B/D^beta (Hoffmann et al. 2022, approach 3)."""

    E: float
    A: float
    B: float
    alpha: float
    beta: float
    source: str = ""

    def loss(self, *, params, tokens):
        n, d = _positive("params", params), _positive("tokens", tokens)
        return self.E + self.A / n**self.alpha + self.B / d**self.beta

    def compute_optimal(self, *, flops):
        """(N_opt, D_opt) for a budget C = 6·N·D: N = G·(C/6)^(β/(α+β)), D = (C/6)^(α/(α+β))/G,
        G = (α·A/(β·B))^(1/(α+β)) (Hoffmann et al. 2022, Appendix D.2)."""
        c = _positive("flops", flops) / 6.0
        s = self.alpha + self.beta
        g = (self.alpha * self.A / (self.beta * self.B)) ** (1.0 / s)
        return g * c ** (self.beta / s), c ** (self.alpha / s) / g


# Printed (rounded) approach-3 fit, Appendix D.2; N includes embeddings, D tokens, L nats/token
# on MassiveText (shared/reference/scaling_laws.yaml, status verified).
CHINCHILLA = ScalingLaw(E=1.69, A=406.4, B=410.7, alpha=0.34, beta=0.28,
                        source="Hoffmann et al. 2022, arXiv:2203.15556, Appendix D.2 (approach 3, printed values)")


# ---- pipeline bubbles (SPEC F23) --------------------------------------------------------------


def _stages(stages, microbatches, chunks=1):
    p = _positive("stages", stages)
    m = _positive("microbatches", microbatches)
    v = _positive("virtual chunks", chunks)
    if np.any(p != np.round(p)) or np.any(m != np.round(m)) or np.any(v != np.round(v)):
        raise SpecError("stages, micro-batches and virtual chunks must be whole numbers")
    return p, m, v


def gpipe_bubble_fraction(*, stages, microbatches):
    """Idle share of a GPipe (and 1F1B) step: (P−1)/(M+P−1) (Huang et al. 2019, arXiv:1811.06965;
    1F1B keeps the bubble, bounds activations to P micro-batches). P=4, M=8: 0.2727."""
    p, m, _ = _stages(stages, microbatches)
    return (p - 1.0) / (m + p - 1.0)


def interleaved_bubble_over_ideal(*, stages, microbatches, chunks=1):
    """Bubble time over ideal compute time for interleaved 1F1B with v chunks per device:
    (P−1)/(v·M) (Narayanan et al. 2021, arXiv:2104.04473 §2.2). P=4, M=8: 0.375 (v=1), 0.1875 (v=2)."""
    p, m, v = _stages(stages, microbatches, chunks)
    return (p - 1.0) / (v * m)


def bubble_fraction(schedule: str, *, stages, microbatches, chunks=1):
    """Idle share of step time for a pipeline schedule: gpipe, 1f1b, interleaved (v chunks),
    zero-bubble (taken as 0: Qi et al. 2023 schedules fill the bubble with split backward passes) or
    dualpipe (:func:`dualpipe_bubble_over_ideal`)."""
    if schedule in ("gpipe", "1f1b"):
        if chunks != 1:
            raise SpecError("virtual chunks need {schedule} interleaved", field="schedule", value=schedule)
        return gpipe_bubble_fraction(stages=stages, microbatches=microbatches)
    if schedule == "interleaved":
        r = interleaved_bubble_over_ideal(stages=stages, microbatches=microbatches, chunks=chunks)
        return r / (1.0 + r)
    if schedule == "zero-bubble":
        _stages(stages, microbatches, chunks)
        return np.zeros(np.broadcast(np.asarray(stages), np.asarray(microbatches)).shape)
    if schedule == "dualpipe":
        r = dualpipe_bubble_over_ideal(stages=stages, microbatches=microbatches)
        return r / (1.0 + r)
    raise unknown_name("pipeline schedule", schedule, SCHEDULES)


def dualpipe_bubble_over_ideal(*, stages, microbatches):
    """DualPipe's bubble over ideal compute: (P/2 − 1)·(F&B + B − 3W) (DeepSeek-AI 2024,
    arXiv:2412.19437 Table 2) over M·(F + B), taking B = 2F, the weight-gradient part W = B/2 = F
    and the overlapped forward-and-backward chunk F&B = F + B (no credit for the overlap): (P − 2)/(3M).
    P = 16, M = 32: 0.1458. Omits the all-to-all the overlap hides (counted by the caller)."""
    p, m, _ = _stages(stages, microbatches)
    return (p - 2.0) / (3.0 * m)


SCHEDULES = ("gpipe", "1f1b", "interleaved", "zero-bubble", "dualpipe")


# ---- lifetime cost: pretraining + RL + inference at a fixed quality (SPEC F22) -------------------


@dataclass(frozen=True, kw_only=True)
class LifetimeCost:
    """Lifetime compute of a model in training-FLOP equivalents (FLOPs / relative efficiency).

    Arrays broadcast over ``params`` (a curve) or are scalars (one design)."""

    params: object
    pretrain_tokens: object
    loss: object
    pretrain_flops: object
    rl_flops: object
    inference_flops: object

    @property
    def total_flops(self):
        return np.add(np.add(self.pretrain_flops, self.rl_flops), self.inference_flops)

    @property
    def shares(self) -> tuple:
        """(pretraining, RL, inference) shares of the total."""
        t = self.total_flops
        return (np.divide(self.pretrain_flops, t), np.divide(self.rl_flops, t), np.divide(self.inference_flops, t))


def lifetime_cost(*, params, pretrain_tokens, inference_tokens, inference_efficiency, rl_tokens=0.0,
                  rl_flops_per_param_token=3.0, rl_efficiency=1.0 / 3.0, law: ScalingLaw = CHINCHILLA) -> LifetimeCost:
    """6·N·D_pre + r·N·D_RL/η_RL + 2·N·D_inf/η_inf (SPEC F22), with the loss ``law`` predicts."""
    n, d = _positive("params", params), _positive("pretrain_tokens", pretrain_tokens)
    d_inf = _positive("inference_tokens", inference_tokens, allow_zero=True)
    eta_inf = _positive("inference_efficiency", inference_efficiency)
    d_rl = _positive("rl_tokens", rl_tokens, allow_zero=True)
    r = _positive("rl_flops_per_param_token", rl_flops_per_param_token)
    eta_rl = _positive("rl_efficiency", rl_efficiency)
    return LifetimeCost(params=n, pretrain_tokens=d, loss=law.loss(params=n, tokens=d), pretrain_flops=6.0 * n * d,
                        rl_flops=r * n * d_rl / eta_rl, inference_flops=2.0 * n * d_inf / eta_inf)


def tokens_for_loss(law: ScalingLaw, *, params, loss):
    """Pretraining tokens at which ``law`` reaches ``loss`` with ``params``: D = (B/(L − E − A/N^α))^(1/β);
    inf where the model is too small to ever reach it."""
    n = _positive("params", params)
    gap = float(loss) - law.E - law.A / n**law.alpha
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(gap > 0, (law.B / np.where(gap > 0, gap, 1.0)) ** (1.0 / law.beta), np.inf)


def lifetime_optimum(*, target_loss: float, inference_tokens, inference_efficiency, rl_tokens=0.0,
                     rl_flops_per_param_token=3.0, rl_efficiency=1.0 / 3.0, law: ScalingLaw = CHINCHILLA,
                     points: int = 4001) -> tuple[LifetimeCost, LifetimeCost]:
    """The model size that reaches ``target_loss`` at the least lifetime compute (Sardana et al. 2023,
    arXiv:2401.00448, with RL added): minimise over N of 6·N·D(N) + (r·D_RL/η_RL + 2·D_inf/η_inf)·N,
    D(N) from :func:`tokens_for_loss`. Returns (optimum, the curve it was read from). A log grid of
    ``points`` over N in (N_min, 10^4·N_min], refined once around the minimum (relative error < 1e-4).
    """
    if not (np.isfinite(target_loss) and target_loss > law.E):
        raise SpecError(f"target loss: must exceed the law's irreducible loss E = {law.E}, got {target_loss!r}")
    n_min = (law.A / (target_loss - law.E)) ** (1.0 / law.alpha)
    kw = dict(inference_tokens=inference_tokens, inference_efficiency=inference_efficiency, rl_tokens=rl_tokens,
              rl_flops_per_param_token=rl_flops_per_param_token, rl_efficiency=rl_efficiency, law=law)

    def curve(lo: float, hi: float) -> LifetimeCost:
        n = np.geomspace(lo, hi, points)
        return lifetime_cost(params=n, pretrain_tokens=tokens_for_loss(law, params=n, loss=target_loss), **kw)

    coarse = curve(n_min * (1.0 + 1e-9), n_min * 1e4)
    i = int(np.argmin(coarse.total_flops))
    p = np.asarray(coarse.params)
    fine = curve(p[max(i - 1, 0)], p[min(i + 1, len(p) - 1)])
    j = int(np.argmin(fine.total_flops))
    n_star = float(np.asarray(fine.params)[j])
    best = lifetime_cost(params=n_star, pretrain_tokens=float(tokens_for_loss(law, params=n_star, loss=target_loss)),
                         **kw)
    return best, coarse
