"""Price-sheet specs: what a provider charges for a model, as dated facts (SPEC C).

Dollar amounts are USD per million tokens and change often; DESIGN.md §4 treats them as dated
inputs and their *ratios* (cache multipliers, long-context uplift, fast-mode premium) as the
stable part. The catalogue (``catalog/prices.toml``) records where every row comes from.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import SpecError, require_choice, require_number, require_whole, unknown_name

PRICE_STATUSES = ("verified", "secondary", "recalled")


def _price(owner: str, name: str, value, *, optional: bool = False) -> None:
    """A price in USD per million tokens (None allowed when ``optional``)."""
    if value is not None or not optional:
        require_number(name, value, minimum=0, hint="give USD per million tokens", owner=owner)


@dataclass(frozen=True, kw_only=True)
class ContextTier:
    """Prices that apply when the prompt is longer than ``above_tokens`` (Gemini: > 200K)."""

    above_tokens: int
    input_usd_per_mtok: float
    output_usd_per_mtok: float


@dataclass(frozen=True, kw_only=True)
class CacheWrite:
    """Writing a prompt prefix to the provider's cache, kept for ``hold_s`` seconds."""

    hold_s: float
    usd_per_mtok: float


@dataclass(frozen=True, kw_only=True)
class Premium:
    """A faster or higher-priority service of the same model (Anthropic fast mode, OpenAI priority).

    ``speedup`` is the provider's stated output-speed ratio over standard, None where only a
    latency target is stated (then no batch ratio can be inferred from it).
    """

    name: str
    input_usd_per_mtok: float
    output_usd_per_mtok: float
    speedup: float | None = None
    note: str = ""


@dataclass(frozen=True, kw_only=True)
class PriceSheet:
    """One provider's list prices for one model (standard tier, short context)."""

    provider: str
    model: str
    input_usd_per_mtok: float
    output_usd_per_mtok: float
    cached_input_usd_per_mtok: float | None = None
    cache_writes: tuple[CacheWrite, ...] = ()
    cache_storage_usd_per_mtok_hour: float | None = None
    long_context: tuple[ContextTier, ...] = ()
    premiums: tuple[Premium, ...] = ()
    status: str = "verified"
    source: str = ""
    as_of: str = ""
    notes: str = ""

    def __post_init__(self) -> None:
        owner = f"price sheet {self.provider}/{self.model}"
        object.__setattr__(self, "cache_writes", tuple(self.cache_writes))
        object.__setattr__(self, "long_context", tuple(self.long_context))
        object.__setattr__(self, "premiums", tuple(self.premiums))
        require_choice("status", self.status, PRICE_STATUSES, owner=owner)
        _price(owner, "input_usd_per_mtok", self.input_usd_per_mtok)
        _price(owner, "output_usd_per_mtok", self.output_usd_per_mtok)
        _price(owner, "cached_input_usd_per_mtok", self.cached_input_usd_per_mtok, optional=True)
        _price(owner, "cache_storage_usd_per_mtok_hour", self.cache_storage_usd_per_mtok_hour, optional=True)
        for i, w in enumerate(self.cache_writes):
            _price(owner, f"cache_writes[{i}].usd_per_mtok", w.usd_per_mtok)
            require_number(f"cache_writes[{i}].hold_s", w.hold_s, minimum=0, exclusive=True, hint="seconds",
                           owner=owner)
        holds = [w.hold_s for w in self.cache_writes]
        if holds != sorted(set(holds)):
            raise SpecError(f"{owner}: cache_writes must be in increasing hold time without repeats, got {holds}; "
                            f"reorder them")
        for i, t in enumerate(self.long_context):
            _price(owner, f"long_context[{i}].input_usd_per_mtok", t.input_usd_per_mtok)
            _price(owner, f"long_context[{i}].output_usd_per_mtok", t.output_usd_per_mtok)
            require_whole(f"long_context[{i}].above_tokens", t.above_tokens, owner=owner)
        bounds = [t.above_tokens for t in self.long_context]
        if bounds != sorted(set(bounds)):
            raise SpecError(f"{owner}: long_context tiers must have increasing above_tokens, got {bounds}; "
                            f"reorder them")
        for p in self.premiums:
            _price(owner, f"premium {p.name} input_usd_per_mtok", p.input_usd_per_mtok)
            _price(owner, f"premium {p.name} output_usd_per_mtok", p.output_usd_per_mtok)
            if p.speedup is not None:
                require_number(f"premium {p.name} speedup", p.speedup, minimum=0, exclusive=True, owner=owner)

    @property
    def output_input_ratio(self) -> float:
        """Output over input price (Claude 5x, Gemini 3 Pro 6x, GPT-5 8x, DeepSeek V3.2 1.5x; SPEC C11)."""
        if self.input_usd_per_mtok == 0:
            raise SpecError(f"price sheet {self.provider}/{self.model}: input price is 0, no output/input ratio")
        return self.output_usd_per_mtok / self.input_usd_per_mtok

    def price_at(self, prompt_tokens: float) -> tuple[float, float]:
        """(input, output) USD per million tokens for a request whose prompt has ``prompt_tokens``."""
        price = (self.input_usd_per_mtok, self.output_usd_per_mtok)
        for t in self.long_context:
            if prompt_tokens > t.above_tokens:
                price = (t.input_usd_per_mtok, t.output_usd_per_mtok)
        return price

    def premium(self, name: str) -> Premium:
        for p in self.premiums:
            if p.name == name:
                return p
        raise unknown_name(f"premium of {self.provider}/{self.model}", name, [p.name for p in self.premiums])
