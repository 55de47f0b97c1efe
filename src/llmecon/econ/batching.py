"""Batch economics (SPEC A2-A6): latency and cost per token against batch, the balance batch,
the latency floor and HBM drain time, the cost of not batching, fast/slow modes, memory fit.

Two layers: closed-form functions of plain numbers (the lecture's arithmetic, keyword-only), and
deployment-level analyses that evaluate ``inference.decode_step`` over a batch grid.
Cost here is device time: chip-seconds per token = step_s x chips / tokens per step; dollars
follow by multiplying with a price per chip-hour (pricing module).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from ..dtypes import get_dtype
from ..errors import InfeasibleError, SpecError
from ..spec.hardware import System
from ..spec.efficiency import IDEAL
from ..spec.deployment import Deployment, kv_per_chip, memory_per_chip
from ..step.inference import StepResult, decode_of, weights_read_per_chip
from ..spec.model import Model
from ..spec.plan import Plan, feasible_plans

# ---------------------------------------------------------------------------------------------
# Closed forms on plain numbers (the lecture's arithmetic)
# ---------------------------------------------------------------------------------------------


def balance_batch(*, flops_per_byte, bytes_per_param, sparsity=1.0):
    """Batch at which compute time equals weight-read time, KV ignored (SPEC A3):
    B* = (F/BW)·(bytes_per_param/2)·S. H100 bf16 dense: 295; DeepSeek-V3 (S = 18.1): 5,354."""
    return np.asarray(flops_per_byte, dtype=float) * np.asarray(bytes_per_param) / 2.0 * np.asarray(sparsity)


def crossover_context_lecture(*, active_params, flops_per_byte, kv_bytes_per_token):
    """The lecture's crossover (SPEC A3/B8): L_x = 2·N_active/(R·kv), R = F/BW in FLOP per byte,
    where one sequence's KV read time equals its matmul time, attention FLOPs left out (Llama-3-70B
    GQA on H100 ~1.4K, DeepSeek-V3 MLA ~3.6K). Kept for the lecture's claim; ``crossover_context``
    counts attention FLOPs as compute."""
    return 2.0 * np.asarray(active_params, dtype=float) / (np.asarray(flops_per_byte) * np.asarray(kv_bytes_per_token))


def crossover_context(*, active_params, flops_per_byte, kv_bytes_per_token, attention_flops_per_cached_token):
    """Context L_x at which one sequence's KV read time equals its compute time, attention included
    (weights amortised). Per generated token: compute (2·N_active + a·L)/F, KV reads kv·L/BW; equal at

        L_x = 2·N_active/(R·kv - a),   R = F/BW,

    infinite (KV reads never catch up) when a >= R·kv. ``a`` is the attention FLOPs one new token
    spends per cached token, summed over layers (``Model.attention_flops_per_token(1)``): 4·N·H per
    layer for MHA/GQA (scores + values, Kaplan et al. 2020), 2·N·(2·d_latent + d_rope) for absorbed
    MLA (DeepSeek-V3: 61·2·128·(576 + 512) = 16,990,208 FLOP against 70,272 B of bf16 latent,
    242 FLOP/B). Since a >= 0 this is never below ``crossover_context_lecture`` (a = 0). DeepSeek-V3,
    one H100 at bf16 (R = 295): 19.5K tokens, not 3.6K; one H200 (R = 206 < 242): never.
    One chip, matmul and attention at the same peak F; on a sharded plan use
    ``crossover_context_of``, which prices the deployment's own step (under tp, MLA's latent is read
    whole on every chip while its heads split tp ways, so its a falls tp-fold per chip). Omits
    windowed layers and DSA (both in ``crossover_context_of``) and softmax FLOPs."""
    n = np.asarray(active_params, dtype=float)
    net = np.asarray(flops_per_byte, dtype=float) * np.asarray(kv_bytes_per_token) - np.asarray(
        attention_flops_per_cached_token, dtype=float)
    with np.errstate(divide="ignore"):
        return np.where(net > 0, 2.0 * n / np.where(net > 0, net, 1.0), np.inf)


def balance_batch_with_kv(*, balance_batch, context, crossover_context):
    """B*(L) = B*_0/(1 - L/L_x); infinite (never compute-bound) once L >= L_x (SPEC A3). Holds with
    attention counted too, L_x from ``crossover_context``: compute B·(2N + a·L)/F equals weight +
    KV reads W/BW + B·kv·L/BW at B = (W/BW)/(2N/F - L·(kv/BW - a/F)). When a > R·kv (L_x infinite)
    B* falls below B*_0 as L grows, which this form does not show: ``balance_batch_at_context_of``
    measures it on a deployment."""
    ratio = np.asarray(context, dtype=float) / np.asarray(crossover_context, dtype=float)
    with np.errstate(divide="ignore"):
        return np.where(ratio < 1.0, np.asarray(balance_batch, dtype=float) / (1.0 - np.minimum(ratio, 1.0)), np.inf)


def latency_floor_s(*, weight_bytes, bandwidth_bytes_per_s):
    """Shortest possible decode step: the weights must be read once (SPEC A4): W/(n·BW)."""
    return np.asarray(weight_bytes, dtype=float) / np.asarray(bandwidth_bytes_per_s)


def drain_time_s(*, capacity_bytes, bandwidth_bytes_per_s):
    """Time to read a whole memory once, C/BW (a chip constant; H100 HBM 23.9 ms)."""
    return np.asarray(capacity_bytes, dtype=float) / np.asarray(bandwidth_bytes_per_s)


def throughput_tokens_per_s(*, batch, step_s):
    """Tokens per second of a deployment: one token per sequence per step (lecture: 2,000 x 64/s)."""
    return np.asarray(batch, dtype=float) / np.asarray(step_s)


def no_batching_cost_ratio(*, weight_bytes_at_batch_1, weight_bytes_total, balance_batch):
    """Cost per token at B=1 over the cost at or beyond the balance batch, pure roofline, KV
    ignored: (W_1/W)·B*. Dense: B* (~295 on H100); DeepSeek-V3 reading only touched experts at
    B=1 (37.4 GB of 671 GB): ~320 rather than B* ~ 5,700."""
    return np.asarray(weight_bytes_at_batch_1, dtype=float) / np.asarray(weight_bytes_total) * np.asarray(balance_batch)


def fast_mode_batch_ratio(*, price_ratio, speed_ratio):
    """Same hardware, cost ~ t/B and speed ~ 1/t, so price x speed = batch ratio
    (6x price for 2.5x speed: the regular batch is 15x the fast one; SPEC A5)."""
    return np.asarray(price_ratio, dtype=float) * np.asarray(speed_ratio)


def max_roofline_fast_mode(*, regular_batch_over_balance, fast_batch_over_balance):
    """Speed-up and price ratio of a fast tier under t = t_w·max(1, B/B*) (SPEC A5).
    Returns (speedup, cost_ratio); regular at 2.5·B*, fast at B*/6 -> (2.5, 6)."""
    t_reg = np.maximum(1.0, regular_batch_over_balance)
    t_fast = np.maximum(1.0, fast_batch_over_balance)
    return t_reg / t_fast, (t_fast / fast_batch_over_balance) / (t_reg / regular_batch_over_balance)


def additive_fast_mode_load(*, speedup, batch_ratio):
    """Under t = w + a·B, the load x = a·B_regular/w that makes a batch ``batch_ratio`` times smaller
    run ``speedup`` times faster: (1 + x) = s·(1 + x/r) -> x = (s - 1)/(1 - s/r) (2.5x, 15 -> 1.8)."""
    s, r = float(speedup), float(batch_ratio)
    if not (s > 1 and r > s):
        raise SpecError(f"speedup must be > 1 and below the batch ratio; got speedup {s}, batch ratio {r}")
    return (s - 1.0) / (1.0 - s / r)


def speculative_tokens_per_step(*, draft_tokens, acceptance):
    """Expected tokens per verification step with k drafted tokens each accepted with
    probability alpha (Leviathan et al. 2023): (1 - alpha^(k+1))/(1 - alpha). The lecture's helper;
    speculative decoding as a deployment option (per-position acceptance, verify and draft cost):
    ``spec.speculation`` and ``step.speculative``."""
    a = np.asarray(acceptance, dtype=float)
    k = np.asarray(draft_tokens, dtype=float)
    if np.any((a < 0) | (a > 1)) or np.any(k < 0):
        raise SpecError("acceptance must be in [0, 1] and draft_tokens >= 0")
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(a < 1.0, (1.0 - a ** (k + 1.0)) / (1.0 - a), k + 1.0)


# ---------------------------------------------------------------------------------------------
# Deployment-level analyses
# ---------------------------------------------------------------------------------------------


def max_batch(dep: Deployment, *, context) -> int:
    """Most sequences at ``context`` tokens whose KV fits beside the weights in every chip's HBM: a
    sequence lives whole on one of the adp attention groups (``spec.deployment.busiest_group_sequences``),
    so none unless one whole sequence fits a group's chips, then floor(adp x free / its bytes)."""
    free = dep.system.accelerator.hbm_bytes - dep.weights_per_chip_bytes
    if free < 0:
        return 0
    per_seq = float(dep.kv_per_sequence_on_group_bytes(context))
    if per_seq <= 0:
        raise SpecError("must be > 0 to bound the batch by memory", field="context", value=context,
                        show_value=False)
    return int(math.floor(dep.plan.adp * free / per_seq)) if free >= per_seq else 0


def context_limit(model: Model) -> float:
    """The model's trained context in tokens (``max_position_embeddings``, ``Model.max_context``): the
    most tokens one sequence may hold (prompt + output; a decode at context L holds L). inf when the
    model's config does not give it (0): nothing is capped then, and the front-ends say so."""
    return float(model.max_context) if model.max_context > 0 else math.inf


def _memory_context(dep: Deployment, batch: float, *, spread: bool = False) -> float:
    """Longest context at which ``batch`` sequences fit beside the weights: placed whole on the
    attention groups (``kv_per_chip``), or, ``spread``, at the average bytes per sequence over the
    groups (``kv_per_sequence_per_chip_bytes``: the capacity across many sequences)."""
    free = dep.system.accelerator.hbm_bytes - dep.weights_per_chip_bytes
    if free < 0:
        return 0.0

    def fits(length: float) -> bool:
        if spread:
            return float(dep.kv_per_sequence_per_chip_bytes(length)) * batch <= free
        return float(kv_per_chip(dep.model, dep.plan, batch=batch, context=length, kv_dtype=dep.kv_dtype)) <= free

    hi = 1.0
    while fits(hi):
        hi *= 2.0
        if hi > 1e13:
            return math.inf
    lo = hi / 2.0 if hi > 1 else 0.0
    while hi - lo > 1.0:
        mid = math.floor((lo + hi) / 2.0)
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return float(lo)


def kv_capacity_tokens(dep: Deployment) -> float:
    """KV tokens that fit beside the weights in every chip's HBM, across sequences (not capped by
    the model's context): every attention-DP group full, at ``Deployment.kv_per_sequence_per_chip_bytes``
    per sequence. With adp > 1 one sequence alone holds at most 1/adp of this (it lives on one group:
    ``max_context``). inf when every layer is windowed (KV stops growing) and the window fits; 0 when
    the weights alone do not fit."""
    return _memory_context(dep, 1.0, spread=True)


def max_context(dep: Deployment, *, batch: float = 1.0) -> float:
    """Longest context (tokens per sequence) at which ``batch`` sequences fit in memory, capped at
    the model's trained context (``context_limit``; uncapped when that is unknown). inf when every
    layer is windowed, the window fits and the model gives no limit."""
    return min(_memory_context(dep, batch), context_limit(dep.model))


def require_fit(dep: Deployment, *, batch, context) -> None:
    """Raise InfeasibleError naming bytes needed and available, with a fix, if it does not fit."""
    need = float(np.max(memory_per_chip(dep.model, dep.plan, batch=batch, context=context,
                                        weight_dtype=dep.weight_dtype, kv_dtype=dep.kv_dtype)))
    have = dep.system.accelerator.hbm_bytes
    if need <= have:
        return
    from ..units import fmt_bytes  # local: formatting only for the message

    weights = dep.weights_per_chip_bytes
    if weights > have:
        raise InfeasibleError(f"{dep.model.name} does not fit: {fmt_bytes(weights)} of weights per chip under "
                              f"{dep.plan.label()} but each {dep.system.accelerator.name} has {fmt_bytes(have)}",
                              fix=suggest_fix(dep))
    longest = float(np.max(context))
    raise InfeasibleError(f"at context {longest:g} needs {fmt_bytes(need)} per chip (weights {fmt_bytes(weights)} "
                          f"+ KV) but {dep.system.accelerator.name} has {fmt_bytes(have)}", field="batch",
                          value=float(np.max(batch)),
                          fix=f"lower {{batch}} (max {max_batch(dep, context=longest)}) or {{context}}, or use "
                              "{kv_dtype} fp8")


def suggest_fix(dep: Deployment) -> str:
    """A concrete way out: a plan on this system, a smaller weight format, or a larger system (a fix
    text whose inputs are ``{name}`` placeholders: "try {weight_dtype} fp8 {tp} 2")."""
    current = get_dtype(dep.weight_dtype or dep.model.weight_dtype).bits
    for dtype in (dep.weight_dtype, "fp8", "fp4"):
        if dtype is not None and get_dtype(dtype).bits >= current:
            continue
        plan = smallest_plan(dep.model, dep.system, weight_dtype=dtype, kv_dtype=dep.kv_dtype)
        if plan is not None:
            flags = [f"{{{k}}} {getattr(plan, k)}" for k in ("tp", "ep", "pp") if getattr(plan, k) > 1]
            flags = ([f"{{weight_dtype}} {dtype}"] if dtype else []) + flags
            return f"try {' '.join(flags)} (the smallest change that fits)"
    return "it does not fit this system under any plan: pick a larger one (llmecon catalog systems)"


def _divisors(n: int, limit: int) -> list[int]:
    return [d for d in range(1, min(n, limit) + 1) if n % d == 0]


def smallest_plan(model: Model, system: System, *, weight_dtype=None, kv_dtype=None,
                  kv_headroom: float = 0.5) -> Plan | None:
    """The plan with the fewest chips whose weights take at most (1 - kv_headroom) of each chip's
    HBM (leaving room for KV); ties prefer EP over TP for MoE (less communication), then TP.
    Falls back to plans that merely fit the weights. A convenience, not the planner."""
    hbm = system.accelerator.hbm_bytes
    candidates = []
    eps = _divisors(model.moe.n_routed, system.chips) if model.is_moe else [1]
    grid = (Plan(tp=tp, ep=ep, pp=pp) for tp in _divisors(model.attention.n_heads, system.chips) for ep in eps
            for pp in (1, 2, 4, 8))
    for plan, _ in feasible_plans(model, system, grid):
        w = float(memory_per_chip(model, plan, batch=0.0, context=0.0, weight_dtype=weight_dtype, kv_dtype=kv_dtype))
        candidates.append((plan.chips, plan.pp, plan.tp, -plan.ep, w, plan))
    for limit in ((1.0 - kv_headroom) * hbm, hbm):
        ok = sorted(c for c in candidates if c[4] <= limit)
        if ok:
            return ok[0][-1]
    return None


@dataclass(frozen=True, kw_only=True)
class BatchCurve:
    """Decode latency and cost against batch at one context (arrays over ``batch``)."""

    context: float
    batch: np.ndarray
    step: StepResult
    chips: int

    @property
    def step_s(self) -> np.ndarray:
        return np.asarray(self.step.step_s)

    @property
    def chip_s_per_token(self) -> np.ndarray:
        """Device time per generated token: step_s x chips / batch."""
        return self.step_s * self.chips / self.batch

    @property
    def tokens_per_s(self) -> np.ndarray:
        return np.asarray(self.step.tokens_per_s)


def default_batches(limit: int) -> np.ndarray:
    """1, 2, 3, ... then ~24 points per decade up to ``limit`` (integers, unique)."""
    limit = max(1, int(limit))
    grid = np.round(np.logspace(0, math.log10(limit), 24 * max(1, math.ceil(math.log10(limit + 1)))))
    grid = np.sort(np.concatenate([grid, [float(limit)]]))
    # sorted, duplicates dropped: np.unique's result without its import of numpy.ma (~7 ms at start-up)
    return grid[np.concatenate(([True], grid[1:] != grid[:-1]))]


def batch_curve(dep: Deployment, *, context: float, batches=None) -> BatchCurve:
    """Decode step against batch at ``context``; by default up to the memory limit."""
    if batches is None:
        limit = max_batch(dep, context=context) if context > 0 else 1 << 16
        if limit < 1:
            require_fit(dep, batch=1.0, context=context)
        batches = default_batches(min(limit, 1 << 20))
    batches = np.asarray(batches, dtype=float)
    return BatchCurve(context=float(context), batch=batches, step=decode_of(dep, batch=batches, context=context),
                      chips=dep.plan.chips)


@dataclass(frozen=True, kw_only=True)
class BatchEconomics:
    """Headline batch economics of a deployment at one context (SPEC A2-A6)."""

    context: float
    balance_batch: float
    balance_batch_at_context: float
    crossover_context: float
    latency_floor_s: float
    full_weight_read_s: float
    hbm_drain_s: float
    no_batching_cost_ratio: float
    best_batch: float
    max_batch: int
    max_context_at_batch_1: float    # memory limit capped at the model's context (``max_context``)
    kv_capacity_tokens: float        # the memory side alone, across sequences (``kv_capacity_tokens``)
    model_max_context: int           # the model's trained context; 0 = unknown (nothing capped)
    weights_per_chip_bytes: float
    kv_bytes_per_token: float
    curve: BatchCurve
    speculative: object = None       # ``step.speculative.SpeculativeStep`` over the curve's batches, or None
    spec_breakeven_batch: float | None = None  # where speculation stops paying (``breakeven_batch``); None: never


def roofline_twin(dep: Deployment) -> Deployment:
    """``dep`` priced on the roofline (profile IDEAL). The balance batch and the crossover context
    are definitions on the roofline (where compute catches up with reads), so they are computed on
    this twin in every mode: in calibrated mode kernel floors and overheads at batch 1 would make
    them meaningless (DeepSeek-V3 tp1·ep16 on H100 would give B* ~ 5, L_x ~ 9M)."""
    return dep if dep.profile.is_ideal else replace(dep, profile=IDEAL)


def _kv_minus_compute_s(dep: Deployment, contexts, *, attention: bool = True) -> np.ndarray:
    """One sequence (batch 1) on the critical chip: its KV-read time at each context minus its
    compute time there (matmul + attention; matmul only with ``attention=False``, the lecture's
    form). Priced on the deployment's own step on the roofline, so per chip under its plan."""
    dep = roofline_twin(dep)
    # balanced: one sequence's share of a large batch (additive), not a lone sequence on its attention group
    base = decode_of(dep, batch=1.0, context=0.0, balanced=True)
    step = decode_of(dep, batch=1.0, context=contexts, balanced=True)
    kv_s = np.asarray(step.time.memory_s, dtype=float) - float(base.time.memory_s)
    # the routed experts at the mean expert group's load (what one sequence adds to a large batch,
    # whose busiest group is near the mean), not batch 1's busiest group
    mean_s = float(base.mean_compute_s)
    compute_s = (np.asarray(step.time.compute_s, dtype=float) - float(base.time.compute_s) + mean_s
                 if attention else mean_s)
    return kv_s - compute_s


def crossover_context_of(dep: Deployment, *, attention: bool = True) -> float:
    """Context L_x at which one sequence's KV read time equals its compute time, attention FLOPs
    included (weights amortised; SPEC B8 with issue 18's correction), per chip under the plan:
    evaluated on the deployment's own step function (its layout, formats, mode, windows, DSA reads).
    Under tp MLA's latent cache is read whole by every chip while its heads (and their attention
    FLOPs) split tp ways, so tp lowers L_x; attention data-parallel groups split both alike.
    Ideal mode, dense layers: L_x = t_matmul/(t_kv - t_attn) per cached token, the closed form
    ``crossover_context`` on one chip. inf ("never") when KV reads never catch up: attention does
    at least the chip's ridge in FLOPs per KV byte on each chip (DeepSeek-V3 on H200 with
    attention data-parallel), or KV stops growing first (every layer windowed).
    ``attention=False`` leaves attention out of the compute side (the lecture's L_x on this step)."""
    grid = np.logspace(0, 9, 1801)
    gap = _kv_minus_compute_s(dep, grid, attention=attention)
    above = np.nonzero(gap >= 0)[0]
    if above.size == 0:
        return math.inf
    i = int(above[0])
    if i == 0:
        return float(grid[0])
    lo, hi = float(grid[i - 1]), float(grid[i])
    for _ in range(2):  # narrow the bracket 64x twice, for gaps that are not linear in L (windows, DSA)
        sub = np.linspace(lo, hi, 65)
        g = _kv_minus_compute_s(dep, sub, attention=attention)
        j = max(1, int(np.nonzero(g >= 0)[0][0]))
        lo, hi = float(sub[j - 1]), float(sub[j])
    g0, g1 = _kv_minus_compute_s(dep, np.array([lo, hi]), attention=attention)
    return lo + (hi - lo) * (-g0) / (g1 - g0)  # exact for a gap linear in L (ideal mode, dense layers)


def full_weight_read_s(dep: Deployment) -> float:
    """Time to read every weight the replica holds once (all experts touched), over all stages."""
    return dep.plan.pp * weights_read_per_chip(dep.model, dep.plan, weight_dtype=dep.weight_dtype) \
        / dep.system.accelerator.hbm_bandwidth_bytes_per_s


def balance_batch_of(dep: Deployment) -> float:
    """The deployment's balance batch B*: full weight-read time over one sequence's compute time
    at zero context (SPEC A3, measured on the step function rather than the closed form), the routed
    experts at the mean expert group's load (``StepResult.mean_compute_s``: what a sequence adds to a
    large batch, whose busiest group is near the mean; attention-DP groups balanced, ``inference._assemble``)."""
    one = decode_of(roofline_twin(dep), batch=1.0, context=0.0, balanced=True)  # a share of a large batch
    return full_weight_read_s(dep) / float(one.mean_compute_s)


def balance_batch_at_context_of(dep: Deployment, context) -> float:
    """The deployment's balance batch at ``context`` (SPEC A3 with KV): the full weight-read time
    over what one sequence adds to compute beyond its KV reads, t_W/(t_compute(L) - t_kv(L)), both
    per chip at batch 1 with attention counted. Equals B*_0/(1 - L/L_x) for a finite crossover;
    inf at and beyond it (never compute-bound); below B*_0 when attention outgrows KV reads."""
    net = -float(_kv_minus_compute_s(dep, np.array([float(context)]))[0])
    return full_weight_read_s(dep) / net if net > 0 else math.inf


def batch_economics(dep: Deployment, *, context: float, batches=None) -> BatchEconomics:
    """Balance batch, latency floor, drain time, no-batching ratio, memory limits, and the curve."""
    require_fit(dep, batch=1.0, context=max(context, 1.0))
    curve = batch_curve(dep, context=context, batches=batches)
    one = decode_of(dep, batch=1.0, context=0.0)
    full_read_s = full_weight_read_s(dep)
    b_star = balance_batch_of(dep)
    l_x = crossover_context_of(dep)
    cost = curve.chip_s_per_token
    at_one = decode_of(dep, batch=1.0, context=context)
    cost_one = float(at_one.step_s) * dep.plan.chips
    best = int(np.argmin(cost))
    spec = brk = None
    if dep.speculation is not None:
        from ..step.speculative import breakeven_batch, speculative_of

        spec = speculative_of(dep, batch=curve.batch, context=context)
        brk = breakeven_batch(dep, context=context)
    return BatchEconomics(
        context=float(context), balance_batch=b_star,
        balance_batch_at_context=balance_batch_at_context_of(dep, context),
        crossover_context=l_x, latency_floor_s=float(one.step_s), full_weight_read_s=full_read_s,
        hbm_drain_s=dep.system.accelerator.hbm_drain_s, no_batching_cost_ratio=cost_one / float(cost[best]),
        best_batch=float(curve.batch[best]),
        max_batch=max_batch(dep, context=context) if context > 0 else 0,
        max_context_at_batch_1=max_context(dep, batch=1.0), kv_capacity_tokens=kv_capacity_tokens(dep),
        model_max_context=dep.model.max_context, weights_per_chip_bytes=dep.weights_per_chip_bytes,
        kv_bytes_per_token=dep.model.kv_bytes_per_token(dep.kv_dtype), curve=curve, speculative=spec,
        spec_breakeven_batch=brk)


@dataclass(frozen=True, kw_only=True)
class FastMode:
    """A faster tier on the same deployment: the batch it needs and the price it implies."""

    regular_batch: float
    fast_batch: float
    speedup: float
    price_ratio: float
    batch_ratio: float


def fast_mode(curve: BatchCurve, *, regular_batch: float, speedup: float) -> FastMode:
    """Invert the latency-vs-batch curve: the batch that runs ``speedup`` times faster than
    ``regular_batch``, and the cost ratio it implies (SPEC A5/C13). Raises if unreachable."""
    t = curve.step_s
    t_reg = float(np.interp(regular_batch, curve.batch, t))
    target = t_reg / speedup
    if target < float(t.min()) * (1 - 1e-12):
        raise InfeasibleError(f"a {speedup:g}x speed-up over batch {regular_batch:g} is impossible: even batch 1 "
                              f"is only {t_reg / float(t.min()):.3g}x faster (latency floor)")
    fast_b = float(np.interp(target, t, curve.batch)) if np.all(np.diff(t) >= 0) else float(
        curve.batch[np.argmin(np.abs(t - target))])
    price = (target / fast_b) / (t_reg / regular_batch)
    return FastMode(regular_batch=regular_batch, fast_batch=fast_b, speedup=speedup, price_ratio=price,
                    batch_ratio=regular_batch / fast_b)


@dataclass(frozen=True, kw_only=True)
class Analysis:
    """``llmecon analyze``: a deployment's batch economics at one context and its decode step at
    the batch shown."""

    deployment: Deployment
    economics: BatchEconomics
    batch: float                 # the batch shown: given, or ``shown_batch``
    step: StepResult             # the decode step at that batch and context


def shown_batch(e: BatchEconomics) -> float:
    """The batch an analysis shows when none is asked for: the balance batch (where compute
    catches up with weight reads), capped by what fits in memory, at least 1."""
    return float(max(1, min(round(e.balance_batch), e.max_batch or 1)))


def analyze(dep: Deployment, *, context: float, batch: float | None = None) -> Analysis:
    """The main job's numbers (``llmecon analyze`` and the web page): economics, the batch shown
    (``shown_batch`` unless given), checked to fit, and its decode step. ``context`` >= 1: the
    analysis is of sequences that hold KV (at 0 the memory limit and the KV terms it reports vanish)."""
    from ..errors import require_number

    require_number("context", context, minimum=1, hint="tokens of KV per sequence, e.g. 4096")
    e = batch_economics(dep, context=context)
    show = batch if batch is not None else shown_batch(e)
    require_fit(dep, batch=show, context=context)
    return Analysis(deployment=dep, economics=e, batch=show, step=decode_of(dep, batch=show, context=context))
