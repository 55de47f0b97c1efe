"""Price sheets against costs, and prices read backwards (SPEC C10-C13).

Forward: what a deployment costs per million input and output tokens, and the margin against a
provider's list price. Backward (the side channel): what a long-context price step implies about
KV bytes per token, what an output/input price ratio implies about the operating point, which
memory tiers a cache price schedule is consistent with, and what a fast-mode premium implies
about batch sizes. Every inference states its assumptions; none is a measurement.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..spec.deployment import Deployment
from .batching import (additive_fast_mode_load, balance_batch_of, fast_mode_batch_ratio, max_roofline_fast_mode,
    require_fit)
from .context import SECONDS_PER_HOUR, decode_batches, prefill_chip_s_per_token, usd_per_mtok
from ..errors import InfeasibleError, SpecError, require_number, without_field
from ..spec.hardware import MemoryTier
from .kvcache import BreakEven, gray_break_even_s, gray_ladder, tier_rungs
from ..spec.prices import PriceSheet
from ..step.inference import decode_of


# ---------------------------------------------------------------------------------------------
# Closed forms
# ---------------------------------------------------------------------------------------------


def kv_bytes_from_crossover(*, active_params, crossover_context, flops_per_byte):
    """KV bytes per token if a price step sits at the crossover context (SPEC C10):
    kv = 2·N_active/(R·L_x), R in FLOP per byte (the lecture's 300 *multiplies* per byte at fp8
    are 600 FLOP/B: 2·100e9/(600·200K) = 1,667 B; with H100 bf16 R = 295: 3,387 B). Inverts the
    lecture's ``batching.crossover_context_lecture``: attention FLOPs (unknown for a closed model)
    are left out; counting a per cached token would give kv = (2·N_active/L_x + a)/R, more."""
    n = np.asarray(active_params, dtype=float)
    lx = np.asarray(crossover_context, dtype=float)
    r = np.asarray(flops_per_byte, dtype=float)
    if np.any(n <= 0) or np.any(lx <= 0) or np.any(r <= 0):
        raise SpecError("active params, crossover context and FLOP/byte must all be > 0")
    return 2.0 * n / (r * lx)


def equivalent_kv_layers(kv_bytes_per_token, *, kv_heads: int = 8, head_dim: int = 128, bytes_per_value: float = 1.0):
    """How many distinct GQA KV layers of ``kv_heads`` x ``head_dim`` at ``bytes_per_value`` a KV
    size equals: kv / (2·K·H·b). One 8 x 128 fp8 layer is 2,048 B (SPEC C10, Character.AI)."""
    return np.asarray(kv_bytes_per_token, dtype=float) / (2.0 * kv_heads * head_dim * bytes_per_value)


def decode_prefill_cost_ratio(*, batch_over_balance, context_over_crossover):
    """Roofline cost of an output token over an input token (SPEC C11): prefill costs 2N/F per
    token; decode max(2N/F, (W/B + L·kv)/BW) per token, so r = max(1, B*/B + L/L_x)."""
    b = np.asarray(batch_over_balance, dtype=float)
    lx = np.asarray(context_over_crossover, dtype=float)
    if np.any(b <= 0) or np.any(lx < 0):
        raise SpecError("B/B* must be > 0 and L/L_x >= 0")
    return np.maximum(1.0, 1.0 / b + lx)


@dataclass(frozen=True, kw_only=True)
class OperatingPoint:
    """The (B/B*, L/L_x) pairs consistent with an output/input price ratio ``ratio`` if prices
    were proportional to roofline cost: B*/B + L/L_x = r (for r > 1)."""

    ratio: float

    @property
    def batch_over_balance_at_short_context(self) -> float:
        """B/B* if the ratio came from small batches alone (L << L_x): 1/r."""
        return 1.0 / self.ratio

    @property
    def context_over_crossover_at_balance(self) -> float:
        """L/L_x if the batch sat at balance (B = B*): r - 1."""
        return self.ratio - 1.0

    def context_over_crossover(self, batch_over_balance):
        """L/L_x on the curve at a given B/B*; NaN where B/B* < 1/r (the ratio is exceeded already)."""
        b = np.asarray(batch_over_balance, dtype=float)
        lx = self.ratio - 1.0 / b
        return np.where(lx >= 0, lx, np.nan)


def _sheet_number(name: str, value, **bounds) -> float:
    """``require_number`` for a figure read from a price sheet: no front-end input, so no field."""
    try:
        return require_number(name, value, **bounds)
    except SpecError as exc:
        raise without_field(exc) from None


def operating_point(price_ratio: float) -> OperatingPoint:
    """Invert ``decode_prefill_cost_ratio`` (SPEC C11). A ratio of 1 is consistent with any B >= B*
    at short context; below 1 the roofline has no explanation (output never costs less than
    input) and that is an error. Providers price with margins and demand too: not a law."""
    _sheet_number("price ratio", price_ratio, minimum=0, exclusive=True, hint="output price / input price")
    if price_ratio < 1:
        raise SpecError(f"price ratio {price_ratio:g} < 1: on the roofline an output token never costs less "
                        f"than an input token, so no operating point explains it; check the prices")
    return OperatingPoint(ratio=float(price_ratio))


def cache_hold_price_per_hour(*, base_input: float, write: float, hold_s: float) -> float:
    """USD per million tokens per hour a cache write charges for holding: the surcharge over the
    base input price, spread over the hold time (SPEC C12). Anthropic Opus 4.6: 5-minute write
    6.25 vs 5.00 -> 15 $/Mtok-hour; 1-hour write 10.00 -> 5 $/Mtok-hour: the short tier costs 3x
    more per byte-hour."""
    for name, v in (("base input", base_input), ("cache write", write)):
        _sheet_number(f"{name} price", v, minimum=0, hint="USD per million tokens")
    _sheet_number("hold time", hold_s, minimum=0, exclusive=True, hint="seconds")
    if write < base_input:
        raise SpecError(f"cache write price {write:g} is below the base input price {base_input:g}: "
                        f"no holding surcharge to read; check the sheet")
    return (write - base_input) / (hold_s / SECONDS_PER_HOUR)


def break_even_hold_s(faster: MemoryTier, slower: MemoryTier | None = None) -> float:
    """Gray's break-even interval between ``faster`` and ``slower`` (seconds): data re-read more
    often than this belongs in ``faster``. T* = (dollars per byte read from ``slower``) / (dollars
    per byte-second of holding in ``faster``) = slower's drain time x its price per byte / faster's
    (``kvcache.gray_break_even_s`` states the derivation, sources and omissions). Without
    ``slower`` the tier is compared with itself and T* = C/BW, its drain time, whatever its price
    (SPEC C12's special case). Needs both tiers' prices (``MemoryTier.holding_usd_per_byte_s``)
    and the slower one's bandwidth."""
    if slower is None:
        if faster.drain_s is None:
            raise SpecError(f"memory tier {faster.name}: bandwidth unknown, so no break-even hold time; "
                            f"give its bandwidth")
        return faster.drain_s
    if slower.drain_s is None:
        raise SpecError(f"memory tier {slower.name}: bandwidth unknown, so no break-even hold time against "
                        f"{faster.name}; give its bandwidth")
    for t in (faster, slower):
        if t.holding_usd_per_byte_s is None:
            raise SpecError(f"memory tier {t.name}: no price, so no break-even hold time (Gray's rule compares "
                            f"the tiers' prices); give its price per hour or per byte")
    return float(gray_break_even_s(fast_usd_per_byte_s=faster.holding_usd_per_byte_s,
                                   slow_usd_per_byte_read=slower.holding_usd_per_byte_s * slower.drain_s))


# ---------------------------------------------------------------------------------------------
# Side-channel inferences from a price sheet
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class KvFromPrice:
    """KV bytes per token implied by a long-context price step, over a grid of assumptions."""

    crossover_context: float
    input_uplift: float
    output_uplift: float
    active_params: tuple[float, ...]
    flops_per_byte: tuple[float, ...]
    flops_per_byte_labels: tuple[str, ...]
    kv_bytes_per_token: np.ndarray  # [active_params, flops_per_byte]
    assumptions: tuple[str, ...]

    @property
    def low(self) -> float:
        return float(np.min(self.kv_bytes_per_token))

    @property
    def high(self) -> float:
        return float(np.max(self.kv_bytes_per_token))


def infer_kv_from_price_step(sheet: PriceSheet, *, active_params: Sequence[float],
                             flops_per_byte: Sequence[tuple[str, float]]) -> KvFromPrice:
    """Read the first long-context tier of ``sheet`` as the crossover context L_x and return
    kv = 2·N_active/(R·L_x) for every assumed active-parameter count and FLOP/byte ratio."""
    if not sheet.long_context:
        raise SpecError(f"price sheet {sheet.provider}/{sheet.model} has no long-context tier to read; "
                        f"pick a model with one (llmecon prices list)")
    if not active_params or not flops_per_byte:
        raise SpecError("need at least one active-parameter count and one FLOP/byte ratio")
    for n in active_params:
        require_number("active_params", n, minimum=0, exclusive=True, hint="e.g. 100e9")
    tier = sheet.long_context[0]
    labels = tuple(str(label) for label, _ in flops_per_byte)
    ratios = tuple(float(r) for _, r in flops_per_byte)
    n = np.asarray(active_params, dtype=float)
    kv = kv_bytes_from_crossover(active_params=n[:, None], crossover_context=float(tier.above_tokens),
                                 flops_per_byte=np.asarray(ratios)[None, :])
    assumptions = (
        f"the price step at {tier.above_tokens:,} prompt tokens sits at the crossover context L_x, where KV "
        f"reads per token equal the matmul time of 2·N_active FLOPs (SPEC C10; the lecture's form: attention "
        f"FLOPs, unknown for a closed model, are left out, which makes the KV figure a lower bound)",
        "decode runs at a batch large enough that weight reads are amortised (B >= B*)",
        f"active parameters N_active in {{{', '.join(f'{x:.3g}' for x in n)}}} (unknown for closed models: a guess)",
        "FLOP/byte R of the serving chip at its weight format: " + ", ".join(
            f"{lab} {r:.0f}" for lab, r in zip(labels, ratios)),
        "the KV figure is bytes *read* per token per step; with cross-layer sharing the bytes held are less",
        "the provider prices long context to cover cost (it may instead price demand or risk)",
    )
    return KvFromPrice(crossover_context=float(tier.above_tokens),
                       input_uplift=tier.input_usd_per_mtok / sheet.input_usd_per_mtok,
                       output_uplift=tier.output_usd_per_mtok / sheet.output_usd_per_mtok,
                       active_params=tuple(float(x) for x in n), flops_per_byte=ratios, flops_per_byte_labels=labels,
                       kv_bytes_per_token=kv, assumptions=assumptions)


@dataclass(frozen=True, kw_only=True)
class CacheTierFit:
    """One cache-write option of a sheet against one memory tier."""

    hold_s: float
    tier: str
    drain_s: float | None
    hold_price_usd_per_mtok_hour: float
    price_usd_per_byte_hour: float | None
    tier_cost_usd_per_byte_hour: float | None
    consistent: bool | None
    """Gray's five-minute rule puts a cache re-read every ``hold_s`` in this tier (True) or in
    another priced tier (False); None if the tier is unpriced or its bandwidth unknown, or fewer
    than two tiers are priced."""

    @property
    def covers_cost(self) -> bool | None:
        """Whether the holding surcharge pays for the tier's capacity-time (None if unpriced)."""
        if self.tier_cost_usd_per_byte_hour is None or self.price_usd_per_byte_hour is None:
            return None
        return self.price_usd_per_byte_hour >= self.tier_cost_usd_per_byte_hour


def cache_tier_fit(sheet: PriceSheet, tiers: Sequence[MemoryTier], *,
                   kv_bytes_per_token: float | None = None) -> list[CacheTierFit]:
    """Map each cache-write hold time of ``sheet`` onto ``tiers`` (SPEC C12) by Gray's rule over the
    priced tiers (``tier_break_evens``). With a KV size, the holding surcharge becomes dollars per
    byte-hour and is compared with each tier's own cost per byte-hour where the tier has a price
    (``MemoryTier.holding_usd_per_byte_s``)."""
    if not sheet.cache_writes:
        raise SpecError(f"price sheet {sheet.provider}/{sheet.model} has no cache-write prices to read")
    if kv_bytes_per_token is not None:
        require_number("kv_bytes_per_token", kv_bytes_per_token, minimum=0, exclusive=True)
    ladder = gray_ladder(tier_rungs(tiers))
    fits = []
    for w in sheet.cache_writes:
        per_hour = cache_hold_price_per_hour(base_input=sheet.input_usd_per_mtok, write=w.usd_per_mtok,
                                             hold_s=w.hold_s)
        per_byte = None if kv_bytes_per_token is None else per_hour / (1e6 * kv_bytes_per_token)
        chosen = ladder.tier_for(w.hold_s)
        for t in tiers:
            h = t.holding_usd_per_byte_s
            fits.append(CacheTierFit(hold_s=w.hold_s, tier=t.name, drain_s=t.drain_s,
                                     hold_price_usd_per_mtok_hour=per_hour, price_usd_per_byte_hour=per_byte,
                                     tier_cost_usd_per_byte_hour=None if h is None else h * SECONDS_PER_HOUR,
                                     consistent=None if chosen is None or t.name not in ladder.tiers
                                     else t.name == chosen))
    return fits


def tier_break_evens(tiers: Sequence[MemoryTier]) -> tuple[BreakEven, ...]:
    """Gray's break-even intervals between adjacent priced tiers, dearest per byte first
    (``kvcache.gray_ladder``); tiers without a price or a bandwidth are left out."""
    return gray_ladder(tier_rungs(tiers)).break_evens


def five_minute_tiers(fits: Sequence[CacheTierFit]) -> dict[float, str | None]:
    """For each hold time, the tier Gray's five-minute rule puts a cache re-read that often in
    (None where fewer than two tiers are priced)."""
    out: dict[float, str | None] = {hold: None for hold in sorted({f.hold_s for f in fits})}
    for f in fits:
        if f.consistent:
            out[f.hold_s] = f.tier
    return out


@dataclass(frozen=True, kw_only=True)
class FastModeInference:
    """What a premium tier's price and speed-up imply about batches (SPEC A5, C13)."""

    price_ratio: float
    speedup: float
    batch_ratio: float
    regular_over_balance: float
    fast_over_balance: float
    max_model_cost_ratio: float
    additive_load: float


def infer_fast_mode(*, price_ratio: float, speedup: float) -> FastModeInference:
    """Same hardware, cost ∝ step time / batch and speed ∝ 1 / step time, so batch ratio =
    price ratio x speed-up (6x for 2.5x: 15x). Under the pure max-roofline t = t_w·max(1, B/B*),
    the regular batch sits at speedup·B* and the fast one at B*/price_ratio; under t = w + a·B,
    a·B_regular = x·w with the load x returned."""
    _sheet_number("premium price ratio", price_ratio, minimum=1, exclusive=True,
                  hint="a fast tier priced at or below standard implies no smaller batch")
    _sheet_number("premium speed-up", speedup, minimum=1, exclusive=True, hint="output speed over standard")
    ratio = float(fast_mode_batch_ratio(price_ratio=price_ratio, speed_ratio=speedup))
    regular, fast = float(speedup), 1.0 / float(price_ratio)
    _, cost_ratio = max_roofline_fast_mode(regular_batch_over_balance=regular, fast_batch_over_balance=fast)
    return FastModeInference(price_ratio=float(price_ratio), speedup=float(speedup), batch_ratio=ratio,
                             regular_over_balance=regular, fast_over_balance=fast,
                             max_model_cost_ratio=float(cost_ratio),
                             additive_load=float(additive_fast_mode_load(speedup=speedup, batch_ratio=ratio)))


# ---------------------------------------------------------------------------------------------
# Forward: cost of a deployment, margin against a sheet
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class ServingCost:
    """Dollars per million tokens for a deployment at one context (SPEC A2 with a price)."""

    context: float
    batch: float
    step_s: float
    price_per_chip_hour: float
    utilization: float
    chips: int
    input_usd_per_mtok: float
    output_usd_per_mtok: float
    tokens_per_step: float = 1.0  # speculative decoding: expected tokens per sequence per decode iteration (E)
    tpot_s: float | None = None   # time per output token: step_s / E (None = step_s)

    @property
    def output_tokens_per_s_per_chip(self) -> float:
        """Output tokens per second per chip while decoding at ``batch``: batch x E / (step x chips)."""
        return self.batch * self.tokens_per_step / (self.step_s * self.chips)

    def margin_against(self, sheet: PriceSheet) -> tuple[float, float]:
        """(input, output) margins (price - cost)/price at this context's list price."""
        price_in, price_out = sheet.price_at(self.context)
        return 1.0 - self.input_usd_per_mtok / price_in, 1.0 - self.output_usd_per_mtok / price_out


def serving_cost(dep: Deployment, *, context: float, price_per_chip_hour: float, utilization: float = 1.0,
                 batch: float | None = None) -> ServingCost:
    """Output tokens decoded at ``context`` with ``batch`` sequences (default: the largest that
    fits; with speculative decoding each iteration emits E tokens per sequence); input tokens
    prefilled as prompts of ``context`` tokens, batched to the balance batch.
    The chips are paid whether busy or not: cost is divided by ``utilization``."""
    require_number("context", context, minimum=1, hint="tokens")
    usd_per_mtok(0.0, price_per_chip_hour=price_per_chip_hour, utilization=utilization)  # validates both
    require_fit(dep, batch=1.0 if batch is None else batch, context=context)
    b = float(decode_batches(dep, np.asarray([float(context)]), batch, None)[0])
    if not math.isfinite(b):
        raise InfeasibleError(f"batch {batch:g} does not fit at context {context:,.0f}")
    step = decode_of(dep, batch=b, context=context)
    step_s, tokens = float(step.step_s), 1.0
    if dep.speculation is not None:  # an iteration (verify + draft) emits E tokens per sequence (step.speculative)
        from ..step.speculative import speculative_of

        spec = speculative_of(dep, batch=b, context=context)
        step_s, tokens = float(spec.step_s), spec.tokens_per_step
    out_chip_s = step_s * dep.plan.chips / (b * tokens)
    in_chip_s = float(prefill_chip_s_per_token(dep, [float(context)], balance_batch=balance_batch_of(dep))[0])
    kw = dict(price_per_chip_hour=price_per_chip_hour, utilization=utilization)
    return ServingCost(context=float(context), batch=b, step_s=step_s, tokens_per_step=tokens,
                       tpot_s=step_s / tokens,
                       price_per_chip_hour=float(price_per_chip_hour), utilization=float(utilization),
                       chips=dep.plan.chips, input_usd_per_mtok=float(usd_per_mtok(in_chip_s, **kw)),
                       output_usd_per_mtok=float(usd_per_mtok(out_chip_s, **kw)))
