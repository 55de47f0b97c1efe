"""KV economics against context length (SPEC B7-B9): KV bytes per token, the crossover context,
decode and prefill cost per token against L, the memory wall, block-sparse attention, and price
tiers over context that never lose money.

Costs are device time (chip-seconds per token); dollars follow from a price per chip-hour and a
utilisation (``usd_per_mtok``). Every curve is evaluated on ``inference`` step functions, so it
carries the same layout and omissions (docs/assumptions.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..spec.deployment import Deployment
from .batching import balance_batch_of, crossover_context_of, kv_capacity_tokens, max_context, require_fit
from ..errors import InfeasibleError, SpecError, require_number
from ..step.inference import ACTIVATION_DTYPE, StepResult, attention_work_per_chip, decode_of, prefill_step

SECONDS_PER_HOUR = 3600.0
TOKENS_PER_MTOK = 1e6


# ---------------------------------------------------------------------------------------------
# Closed forms
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class BlockSparse:
    """Block-sparse attention at its best block size (SPEC B7)."""

    block_size: float
    token_reads: float


def block_sparse_reads(*, context, selected_blocks) -> BlockSparse:
    """Reads of block-sparse attention with ``selected_blocks`` blocks of s tokens per query.

    Cost in token reads: L/s block summaries scored plus k_b·s tokens of the chosen blocks;
    d/ds = 0 at s = sqrt(L/k_b), where the cost is 2·sqrt(k_b·L) — the only true square-root law
    (DSA, by contrast, scans a per-token index and stays linear in L). L = 1M, k_b = 16: s = 250,
    8,000 reads. Omits the bytes per summary vs per token (taken equal).
    """
    context = np.asarray(context, dtype=float)
    k = np.asarray(selected_blocks, dtype=float)
    if np.any(context <= 0) or np.any(k <= 0):
        raise SpecError("block-sparse attention: context and selected blocks must be > 0")
    return BlockSparse(block_size=np.sqrt(context / k), token_reads=2.0 * np.sqrt(k * context))


def kv_per_sequence_bytes(*, kv_bytes_per_token, context):
    """KV bytes one sequence holds (SPEC B8: 2 KB/token x 1M = 2 GB; DeepSeek MLA 70 GB;
    Llama-3-70B 328 GB). Linear: windowed layers are handled by ``Model.kv_bytes``."""
    return np.asarray(kv_bytes_per_token, dtype=float) * np.asarray(context, dtype=float)


def max_sequences(*, capacity_bytes, weight_bytes, kv_bytes_per_token, context):
    """The memory wall (SPEC B8): sequences of ``context`` tokens that fit beside the weights,
    (n·C - W)/(L·kv), floored; 0 when the weights alone do not fit. No activation reserve."""
    free = np.asarray(capacity_bytes, dtype=float) - np.asarray(weight_bytes, dtype=float)
    per_seq = np.asarray(kv_bytes_per_token, dtype=float) * np.asarray(context, dtype=float)
    with np.errstate(divide="ignore"):
        return np.where(free > 0, np.floor(np.maximum(free, 0.0) / per_seq), 0.0)


def usd_per_mtok(chip_s_per_token, *, price_per_chip_hour: float, utilization: float = 1.0):
    """Dollars per million tokens from device time per token, a rental price and the fraction of
    paid time the chips do useful work (1.0 = always busy at the modelled batch)."""
    require_number("price_per_chip_hour", price_per_chip_hour, minimum=0, hint="dollars per chip-hour")
    require_number("utilization", utilization, minimum=0, exclusive=True, maximum=1, hint="e.g. 0.6 for 60% busy")
    return np.asarray(chip_s_per_token, dtype=float) * price_per_chip_hour / SECONDS_PER_HOUR \
        * TOKENS_PER_MTOK / utilization


# ---------------------------------------------------------------------------------------------
# Deployment curves
# ---------------------------------------------------------------------------------------------


def default_contexts(limit: float) -> np.ndarray:
    """Powers of two from 256 tokens up to ``limit`` (at least 256), plus ``limit`` itself."""
    limit = float(max(256.0, min(limit, 1e9)))
    grid = 2.0 ** np.arange(8, math.floor(math.log2(limit)) + 1)
    return np.unique(np.concatenate([grid, [math.floor(limit)]]))


@dataclass(frozen=True, kw_only=True)
class ContextCurve:
    """Decode and prefill economics at each context length (arrays over ``context``).

    ``batch`` is the decode batch run at each context: the fixed batch asked for, or the largest
    that fits in memory (capped at ``batch_cap``); NaN where not even one sequence fits.
    """

    context: np.ndarray
    batch: np.ndarray
    decode: StepResult
    chips: int
    kv_per_sequence_bytes: np.ndarray
    kv_read_per_sequence_bytes: np.ndarray
    max_sequences: np.ndarray
    prefill_chip_s_per_token: np.ndarray

    @property
    def decode_chip_s_per_token(self) -> np.ndarray:
        """Device time per generated token at each context: step_s x chips / batch."""
        with np.errstate(invalid="ignore"):
            return np.asarray(self.decode.step_s) * self.chips / self.batch

    @property
    def fits(self) -> np.ndarray:
        return np.isfinite(self.batch)


@dataclass(frozen=True, kw_only=True)
class ContextEconomics:
    """KV economics of a deployment (SPEC B7-B8)."""

    kv_bytes_per_token: float
    kv_read_bytes_per_token: float
    kv_sharing_factor: float
    crossover_context: float         # KV reads = matmul + attention compute, per chip (``crossover_context_of``)
    balance_batch: float
    max_context_at_batch_1: float    # memory limit capped at the model's context (``batching.max_context``)
    kv_capacity_tokens: float        # KV tokens memory holds across sequences, uncapped
    model_max_context: int           # the model's trained context; 0 = unknown (nothing capped)
    free_hbm_bytes: float
    weights_per_chip_bytes: float
    attention_flops_per_kv_byte: float
    attention_flops_per_kv_byte_per_chip: float
    attention_ridge_flops_per_byte: float
    curve: ContextCurve

    @property
    def attention_compute_bound(self) -> bool:
        """True when decode attention does more FLOPs per KV byte on each chip (under the plan) than
        the chip's ridge point: every cached token then adds more compute time than read time, so KV
        reads never outweigh compute (``crossover_context`` inf). Absorbed MLA, DeepSeek-V3:
        2·128·(576+512)/(576·2 B) = 242 FLOP/B per sequence, above the H200 bf16 ridge 206, below
        H100's 295; under tp each chip reads the whole latent but computes 1/tp of the heads
        (242/tp per chip). Attention runs at the bf16 peak (inference.ACTIVATION_DTYPE)."""
        return self.attention_flops_per_kv_byte_per_chip > self.attention_ridge_flops_per_byte


def sequences_that_fit(dep: Deployment, contexts) -> np.ndarray:
    """The memory wall per context on ``dep``: sequences whose KV fits beside the weights in every
    chip's HBM (the deployment form of ``max_sequences``), floored; 0 if the weights do not fit. A
    sequence lives whole on one of the adp attention groups: none unless one whole sequence fits
    (``batching.max_batch``)."""
    one_group = max_sequences(capacity_bytes=dep.system.accelerator.hbm_bytes, weight_bytes=dep.weights_per_chip_bytes,
                              kv_bytes_per_token=np.asarray(dep.kv_per_sequence_on_group_bytes(contexts), dtype=float),
                              context=1.0)
    spread = max_sequences(capacity_bytes=dep.system.accelerator.hbm_bytes, weight_bytes=dep.weights_per_chip_bytes,
                           kv_bytes_per_token=np.asarray(dep.kv_per_sequence_per_chip_bytes(contexts), dtype=float),
                           context=1.0)
    return np.where(one_group >= 1, spread, 0.0)


def decode_batches(dep: Deployment, contexts: np.ndarray, batch, batch_cap) -> np.ndarray:
    fit = sequences_that_fit(dep, contexts)
    if batch is not None:
        require_number("batch", batch, minimum=1, hint="sequences")
        chosen = np.full(contexts.shape, float(batch))
        return np.where(fit >= chosen, chosen, np.nan)
    if batch_cap is not None:
        require_number("max_batch", batch_cap, minimum=1, hint="sequences")  # the front-ends' name for batch_cap
        fit = np.minimum(fit, float(batch_cap))
    return np.where(fit >= 1, np.minimum(fit, float(1 << 20)), np.nan)


def prefill_chip_s_per_token(dep: Deployment, contexts, *, balance_batch: float) -> np.ndarray:
    """Device time per prompt token for prompts of each length, batched so each prefill pass has
    at least ``balance_batch`` tokens (weights amortised, as a server batching prefills would);
    NaN where one prompt does not fit in memory."""
    contexts = np.asarray(contexts, dtype=float)
    seqs = np.maximum(1.0, np.ceil(balance_batch / contexts))
    step = prefill_step(dep.model, dep.system, batch=seqs, prompt_tokens=contexts, plan=dep.plan,
                        weight_dtype=dep.weight_dtype, kv_dtype=dep.kv_dtype, mode=dep.mode, profile=dep.profile)
    cost = np.asarray(step.step_s) * dep.plan.chips / (seqs * contexts)
    return np.where(np.asarray(step.fits), cost, np.nan)


def context_economics(dep: Deployment, *, contexts=None, batch: float | None = None,
                      batch_cap: float | None = None) -> ContextEconomics:
    """KV bytes, crossover, memory wall and cost per token against context for ``dep``.

    ``contexts`` defaults to powers of two up to the longest context one sequence can hold: the
    memory limit capped at the model's trained context (``batching.max_context``; uncapped, at most
    16M tokens, when the model gives none). Given contexts beyond the model's context are an error.
    ``batch`` fixes the decode batch; by default each context runs the largest batch that fits (cost
    per token never rises with batch), at most ``batch_cap``.
    """
    require_fit(dep, batch=1.0, context=1.0)
    model = dep.model
    l_max = max_context(dep, batch=1.0)
    if contexts is None:
        contexts = default_contexts(min(l_max, 16 * 2.0**20))
    contexts = np.asarray(contexts, dtype=float)
    if contexts.ndim != 1 or contexts.size == 0 or not np.all(np.isfinite(contexts)) or np.any(contexts < 1):
        raise SpecError("need one or more finite context lengths >= 1 token", field="contexts")
    if model.max_context and float(contexts.max()) > model.max_context:
        raise SpecError(f"longer than {model.name}'s {model.max_context:,}-token context (max_position_embeddings)",
                        field="contexts", value=float(contexts.max()), fix=f"keep contexts <= {model.max_context:,}")
    batches = decode_batches(dep, contexts, batch, batch_cap)
    if not np.any(np.isfinite(batches)):
        raise InfeasibleError(f"no context in the grid fits "
                              f"{'batch ' + format(batch, 'g') if batch else 'one sequence'}"
                              f"; the longest context for one sequence is {l_max:,.0f} tokens")
    decode = decode_of(dep, batch=np.nan_to_num(batches, nan=1.0), context=contexts)
    b_star = balance_batch_of(dep)
    free = dep.system.accelerator.hbm_bytes - dep.weights_per_chip_bytes
    curve = ContextCurve(
        context=contexts, batch=batches, decode=decode, chips=dep.plan.chips,
        kv_per_sequence_bytes=np.asarray(model.kv_bytes(contexts, dep.kv_dtype), dtype=float),
        kv_read_per_sequence_bytes=np.asarray(model.kv_read_bytes(contexts, dep.kv_dtype), dtype=float),
        max_sequences=sequences_that_fit(dep, contexts),
        prefill_chip_s_per_token=prefill_chip_s_per_token(dep, contexts, balance_batch=b_star))
    long = min(l_max, 1e6) if math.isfinite(l_max) else 1e6
    chip = dep.system.accelerator
    flops, kv_read = model.attention_flops_per_token(long), model.kv_read_bytes(long, dep.kv_dtype)
    chip_flops, chip_bytes = attention_work_per_chip(model, dep.plan, flops_attn_per_seq=flops, kv_read_per_seq=kv_read,
                                                     kv_write_per_seq=0.0)
    return ContextEconomics(
        attention_flops_per_kv_byte=float(flops / kv_read),
        attention_flops_per_kv_byte_per_chip=float(chip_flops / chip_bytes),
        attention_ridge_flops_per_byte=chip.flops_per_byte(ACTIVATION_DTYPE),
        kv_bytes_per_token=model.kv_bytes_per_token(dep.kv_dtype),
        kv_read_bytes_per_token=float(model.kv_read_bytes(1.0, dep.kv_dtype)),
        kv_sharing_factor=model.kv_sharing_factor, crossover_context=crossover_context_of(dep),
        balance_batch=b_star, max_context_at_batch_1=l_max, kv_capacity_tokens=kv_capacity_tokens(dep),
        model_max_context=model.max_context, free_hbm_bytes=free * dep.plan.chips,
        weights_per_chip_bytes=dep.weights_per_chip_bytes, curve=curve)


# ---------------------------------------------------------------------------------------------
# Context-tier price schedules (SPEC B9)
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class TierSchedule:
    """Prices by prompt length: tier i applies to contexts in (upper[i-1], upper[i]] tokens.

    ``upper[-1]`` is the longest context covered; ``uncovered_from`` is the first context where
    no tier could be priced (cost unknown: it does not fit), else None.
    """

    upper_tokens: tuple[float, ...]
    input_usd_per_mtok: tuple[float, ...]
    output_usd_per_mtok: tuple[float, ...]
    margin: float
    uncovered_from: float | None = None

    @property
    def input_multipliers(self) -> tuple[float, ...]:
        return tuple(p / self.input_usd_per_mtok[0] for p in self.input_usd_per_mtok)

    @property
    def output_multipliers(self) -> tuple[float, ...]:
        return tuple(p / self.output_usd_per_mtok[0] for p in self.output_usd_per_mtok)


def _check_costs(contexts, input_cost, output_cost, margin):
    contexts = np.asarray(contexts, dtype=float)
    input_cost = np.asarray(input_cost, dtype=float)
    output_cost = np.asarray(output_cost, dtype=float)
    if contexts.ndim != 1 or contexts.size == 0 or np.any(np.diff(contexts) <= 0):
        raise SpecError("contexts: need increasing context lengths")
    if input_cost.shape != contexts.shape or output_cost.shape != contexts.shape:
        raise SpecError("costs: need one input and one output cost per context")
    if np.any(input_cost < 0) or np.any(output_cost < 0):
        raise SpecError("costs: must be >= 0 dollars per million tokens")
    require_number("margin", margin, minimum=-1, exclusive=True, hint="0.2 = price 20% above cost")
    return contexts, input_cost, output_cost


def _first_unpriced(input_cost, output_cost) -> int:
    bad = np.nonzero(~(np.isfinite(input_cost) & np.isfinite(output_cost)))[0]
    return int(bad[0]) if bad.size else input_cost.size


def tiers_for_boundaries(contexts, input_cost, output_cost, *, boundaries, margin: float,
                         context_limit: float = math.inf) -> TierSchedule:
    """The lowest prices per tier that keep price >= (1 + margin) x cost at every context on the
    grid, for fixed tier boundaries (e.g. Gemini's 200K). Cost is assumed non-decreasing in
    context only through the grid: each tier is priced at its grid maximum. ``context_limit`` is
    the model's context (``batching.context_limit``): a boundary at or beyond it is an error, since
    no prompt reaches it (a boundary beyond the memory limit alone just ends the schedule early)."""
    contexts, input_cost, output_cost = _check_costs(contexts, input_cost, output_cost, margin)
    # field "boundary": the front-ends' name for one of ``boundaries``
    bounds = [require_number("boundary", b, minimum=0, exclusive=True, hint="tokens") for b in boundaries]
    if bounds != sorted(set(bounds)):
        raise SpecError(f"tier boundaries must be increasing token counts > 0, got {bounds}", field="boundary")
    if bounds and bounds[-1] >= context_limit:
        raise SpecError(f"at or beyond the model's {context_limit:,.0f}-token context: no prompt reaches it",
                        field="boundary", value=bounds[-1], fix=f"use boundaries below {context_limit:,.0f} tokens")
    stop = _first_unpriced(input_cost, output_cost)
    last = float(contexts[stop - 1]) if stop else 0.0
    if stop == 0:
        raise InfeasibleError("no context on the grid has a cost (nothing fits)")
    uppers = [b for b in bounds if b < last] + [last]
    lower, ins, outs = 0.0, [], []
    for upper in uppers:
        sel = (contexts > lower) & (contexts <= upper)
        if not np.any(sel):
            raise SpecError(f"no grid context falls in the tier ({lower:g}, {upper:g}]", field="boundary",
                            fix="use a finer context grid or fewer boundaries")
        ins.append(float(np.max(input_cost[sel])) * (1 + margin))
        outs.append(float(np.max(output_cost[sel])) * (1 + margin))
        lower = upper
    return TierSchedule(upper_tokens=tuple(uppers), input_usd_per_mtok=tuple(ins), output_usd_per_mtok=tuple(outs),
                        margin=margin, uncovered_from=float(contexts[stop]) if stop < contexts.size else None)


def tiers_for_steps(contexts, input_cost, output_cost, *, base_input: float, base_output: float,
                    input_step: float = 2.0, output_step: float = 1.5, margin: float = 0.0,
                    max_tiers: int = 12) -> TierSchedule:
    """Boundaries for a schedule whose tier k charges base x step^k (defaults: Gemini's 2x input,
    1.5x output uplift): each tier ends at the last grid context where both prices still cover
    (1 + margin) x cost. Raises if the base price does not cover the shortest context."""
    contexts, input_cost, output_cost = _check_costs(contexts, input_cost, output_cost, margin)
    for name, v in (("base_input", base_input), ("base_output", base_output)):
        require_number(name, v, minimum=0, exclusive=True, hint="dollars per million tokens")
    for name, v in (("input_step", input_step), ("output_step", output_step)):
        require_number(name, v, minimum=1, hint="a tier's price multiplier over the previous tier")
    if input_step == 1 and output_step == 1:
        raise SpecError("{input_step}/{output_step}: at least one must exceed 1 or no tier can cover more")
    stop = _first_unpriced(input_cost, output_cost)
    need_in, need_out = input_cost[:stop] * (1 + margin), output_cost[:stop] * (1 + margin)
    if stop == 0 or need_in[0] > base_input or need_out[0] > base_output:
        raise InfeasibleError(f"the base price ({base_input:g} in / {base_output:g} out $/Mtok) is below "
                              f"(1 + margin) x cost already at {contexts[0]:,.0f} tokens "
                              f"({need_in[0] if stop else math.nan:.3g} / {need_out[0] if stop else math.nan:.3g})")
    uppers, ins, outs = [], [], []
    i = 0
    for k in range(max_tiers):
        p_in, p_out = base_input * input_step**k, base_output * output_step**k
        ok = (need_in <= p_in) & (need_out <= p_out)
        j = i
        while j < stop and ok[j]:
            j += 1
        if j > i:
            uppers.append(float(contexts[j - 1]))
            ins.append(float(p_in))
            outs.append(float(p_out))
            i = j
        if i >= stop:
            break
    uncovered = float(contexts[i]) if i < contexts.size else None
    return TierSchedule(upper_tokens=tuple(uppers), input_usd_per_mtok=tuple(ins), output_usd_per_mtok=tuple(outs),
                        margin=margin, uncovered_from=uncovered)


@dataclass(frozen=True, kw_only=True)
class PriceCheck:
    """A published price schedule against modelled cost at each context (arrays over context)."""

    context: np.ndarray
    input_price: np.ndarray
    output_price: np.ndarray
    input_cost: np.ndarray
    output_cost: np.ndarray

    @property
    def input_margin(self) -> np.ndarray:
        """(price - cost)/price; negative = sold below cost."""
        return 1.0 - self.input_cost / self.input_price

    @property
    def output_margin(self) -> np.ndarray:
        return 1.0 - self.output_cost / self.output_price

    def losing_contexts(self) -> dict[str, list[tuple[float, float]]]:
        """Contiguous context ranges (first, last grid point) where input or output loses money;
        contexts without a cost (do not fit) count as losing."""
        out = {}
        for name, margin in (("input", self.input_margin), ("output", self.output_margin)):
            lose = ~(np.nan_to_num(margin, nan=-1.0) >= 0)
            edges = np.diff(np.concatenate([[0], lose.astype(np.int8), [0]]))
            starts, stops = np.nonzero(edges == 1)[0], np.nonzero(edges == -1)[0] - 1
            out[name] = [(float(self.context[a]), float(self.context[b])) for a, b in zip(starts, stops)]
        return out


def check_prices(contexts, input_cost, output_cost, sheet) -> PriceCheck:
    """Compare a provider's ``PriceSheet`` (with its long-context tiers) with modelled costs."""
    contexts, input_cost, output_cost = _check_costs(contexts, input_cost, output_cost, 0.0)
    prices = np.array([sheet.price_at(c) for c in contexts], dtype=float)
    return PriceCheck(context=contexts, input_price=prices[:, 0], output_price=prices[:, 1],
                      input_cost=input_cost, output_cost=output_cost)
