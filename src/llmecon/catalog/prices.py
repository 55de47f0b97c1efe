"""The price catalogue: ``prices.toml`` -> ``PriceSheet`` specs keyed by (provider, model).

Strict at the edge (DESIGN.md §3, §4), like the hardware catalogue: every table is checked for
unknown and missing keys (with "did you mean"), and anything wrong is a ``CatalogError`` naming the
file, the entry (``provider/model``) and the key, with a fix.

Schema (one ``[[sheet]]`` per provider and model; the header of ``prices.toml`` documents it in full)::

    [[sheet]]
    provider = "anthropic"              # required, with model: (provider, model) is unique
    model = "claude-opus-4.6"
    input = 5.00                        # required, USD per 1M tokens (a plain number >= 0)
    output = 25.00                      # required, USD per 1M tokens
    cached_input = 0.50                 # optional, cache read / hit, USD per 1M tokens
    cache_storage_per_hour = 1.0        # optional, USD per 1M tokens per hour
    status = "verified"                 # required: verified | secondary | recalled
    source = "https://..."              # required, where the row comes from
    as_of = "undated (page era: ...)"   # required: ISO date 'YYYY-MM-DD', or text starting "undated"
    notes = "..."                       # optional
    [[sheet.cache_write]]               # optional, in increasing hold
    hold = "5 min"                      # a duration with its unit (llmecon.units, dimension "s")
    price = 6.25                        # USD per 1M tokens written
    [[sheet.long_context]]              # optional, in increasing above_tokens
    above_tokens = 200000               # the tier applies to prompts longer than this
    input = 10.0
    output = 37.5
    status = "recalled"                 # optional; with note, folded into the sheet's notes
    note = "..."
    [[sheet.premium]]                   # optional: fast mode, priority processing
    name = "fast"
    input = 30.0
    output = 150.0
    speedup = 2.5                       # optional: only where the provider states an output-speed ratio
    note = "..."                        # optional; status and source (optional) are folded into it
    status = "verified"
    source = "https://..."

Units: every price is USD per million tokens, written as a bare number (the unit is the key's
contract, not part of the value). Dollar amounts are dated inputs -- they change -- while their
ratios (cache read / write multipliers, the >200K uplift, fast-mode and priority premiums) are the
stable part that the cost model reproduces (DESIGN.md §4). ``as_of`` is an ISO date only where the
source gives one; undated snapshots say so ("undated (page era: ...)") rather than guess a date.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from importlib import resources
from pathlib import Path

from .. import units
from ..errors import CatalogError, LlmeconError, SpecError, did_you_mean, require_number, require_whole, unknown_name
from ..spec.prices import PRICE_STATUSES, CacheWrite, ContextTier, Premium, PriceSheet
from ._strict import check_keys, iso_date, read_toml as _read_toml, text as _text

PRICE_FILE = "prices.toml"
UNDATED_PREFIX = "undated"

_SHEET_KEYS = dict(
    required=("provider", "model", "input", "output", "status", "source", "as_of"),
    optional=("cached_input", "cache_storage_per_hour", "notes", "cache_write", "long_context", "premium"),
)
_CACHE_WRITE_KEYS = dict(required=("hold", "price"))
_TIER_KEYS = dict(required=("above_tokens", "input", "output"), optional=("status", "note"))
_PREMIUM_KEYS = dict(required=("name", "input", "output"), optional=("speedup", "note", "status", "source"))
_PROVIDER_ID = re.compile(r"[a-z0-9][a-z0-9._-]*")


def _price(entry: Mapping, key: str, where: str) -> float:
    value = entry[key]
    try:
        return require_number(key, value, minimum=0)
    except SpecError:
        raise CatalogError(f"{where} {key}: expected a price in USD per million tokens, a plain number >= 0 "
                           f"(e.g. {key} = 2.50), got {value!r}") from None


def _optional_price(entry: Mapping, key: str, where: str) -> float | None:
    return _price(entry, key, where) if key in entry else None


def _provider(entry: Mapping, where: str) -> str:
    provider = _text(entry, "provider", where)
    if not _PROVIDER_ID.fullmatch(provider):
        raise CatalogError(f"{where} provider: expected a lower-case id of letters, digits, '.', '-', '_' "
                           f"(e.g. 'anthropic'), got {provider!r}")
    return provider


def _status(entry: Mapping, where: str) -> str:
    status = _text(entry, "status", where)
    if status not in PRICE_STATUSES:
        raise CatalogError(f"{where} status: '{status}' is not one of {', '.join(PRICE_STATUSES)}"
                           f"{did_you_mean(status, PRICE_STATUSES)}")
    return status


def _as_of(entry: Mapping, where: str) -> str:
    value = entry["as_of"]
    if isinstance(value, str) and value.strip().startswith(UNDATED_PREFIX):
        return value.strip()
    date = iso_date(value)
    if date is None:
        raise CatalogError(f"{where} as_of: expected a date 'YYYY-MM-DD' given by the source, or text starting "
                           f"'{UNDATED_PREFIX}' (e.g. 'undated (page era: ...)'), got {value!r}")
    return date


def _tables(entry: Mapping, key: str, where: str) -> list:
    """The ``[[sheet.<key>]]`` array of tables of ``entry`` (empty when absent)."""
    value = entry.get(key, [])
    if not isinstance(value, list):
        raise CatalogError(f"{where} {key}: expected an array of tables written [[sheet.{key}]], "
                           f"got {type(value).__name__}")
    return value


def _cache_write(entry: object, where: str) -> CacheWrite:
    check_keys(entry, **_CACHE_WRITE_KEYS, where=where)
    try:
        hold_s = units.parse(entry["hold"], "s", field=f"{where} hold")
    except LlmeconError as exc:
        raise CatalogError(str(exc)) from exc
    return CacheWrite(hold_s=hold_s, usd_per_mtok=_price(entry, "price", where))


def _tier(entry: object, where: str) -> tuple[ContextTier, str]:
    """One long-context tier, and the text it adds to the sheet's notes (its status and note)."""
    check_keys(entry, **_TIER_KEYS, where=where)
    bound = entry["above_tokens"]
    try:
        require_whole("above_tokens", bound)
    except SpecError:
        raise CatalogError(f"{where} above_tokens: expected a whole number of tokens >= 1 (e.g. 200000), "
                           f"got {bound!r}") from None
    tier = ContextTier(above_tokens=bound, input_usd_per_mtok=_price(entry, "input", where),
                       output_usd_per_mtok=_price(entry, "output", where))
    remarks = []
    if "status" in entry:
        remarks.append(f"status {_status(entry, where)}")
    if "note" in entry:
        remarks.append(_text(entry, "note", where))
    return tier, (f"long context > {bound} tokens: " + "; ".join(remarks)) if remarks else ""


def _premium(entry: object, where: str) -> Premium:
    check_keys(entry, **_PREMIUM_KEYS, where=where)
    speedup = entry.get("speedup")
    try:
        speedup = None if speedup is None else require_number("speedup", speedup, minimum=0, exclusive=True)
    except SpecError:
        raise CatalogError(f"{where} speedup: expected the provider's output-speed ratio, a number > 0 "
                           f"(omit it where only a latency target is stated), got {speedup!r}") from None
    note = [_text(entry, "note", where)] if "note" in entry else []
    if "status" in entry:
        note.append(f"status {_status(entry, where)}")
    if "source" in entry:
        note.append(f"source: {_text(entry, 'source', where)}")
    return Premium(name=_text(entry, "name", where), input_usd_per_mtok=_price(entry, "input", where),
                   output_usd_per_mtok=_price(entry, "output", where),
                   speedup=float(speedup) if speedup is not None else None, note=" | ".join(note))


def _label(entry: object, index: int, where: str) -> str:
    if isinstance(entry, Mapping):
        provider, model = entry.get("provider"), entry.get("model")
        if isinstance(provider, str) and isinstance(model, str):
            return f"{where} [{provider}/{model}]"
    return f"{where} [sheet #{index + 1}]"


def _sheet(entry: object, at: str) -> PriceSheet:
    check_keys(entry, **_SHEET_KEYS, where=at)
    writes = [_cache_write(w, f"{at} cache_write[{i}]") for i, w in enumerate(_tables(entry, "cache_write", at))]
    tiers = [_tier(t, f"{at} long_context[{i}]") for i, t in enumerate(_tables(entry, "long_context", at))]
    premiums = [_premium(p, f"{at} premium[{i}]") for i, p in enumerate(_tables(entry, "premium", at))]
    notes = [_text(entry, "notes", at)] if "notes" in entry else []
    notes += [remark for _, remark in tiers if remark]
    try:
        return PriceSheet(
            provider=_provider(entry, at),
            model=_text(entry, "model", at),
            input_usd_per_mtok=_price(entry, "input", at),
            output_usd_per_mtok=_price(entry, "output", at),
            cached_input_usd_per_mtok=_optional_price(entry, "cached_input", at),
            cache_writes=tuple(writes),
            cache_storage_usd_per_mtok_hour=_optional_price(entry, "cache_storage_per_hour", at),
            long_context=tuple(tier for tier, _ in tiers),
            premiums=tuple(premiums),
            status=_status(entry, at),
            source=_text(entry, "source", at),
            as_of=_as_of(entry, at),
            notes=" | ".join(notes),
        )
    except CatalogError:
        raise
    except LlmeconError as exc:  # SpecError from the dataclass checks (unordered tiers, repeated holds)
        raise CatalogError(f"{at}: {exc}") from exc


def load_price_sheets(text: str, where: str = PRICE_FILE) -> dict[tuple[str, str], PriceSheet]:
    """Parse ``[[sheet]]`` tables from TOML ``text`` into PriceSheets keyed by (provider, model).

    ``where`` names the file in errors.
    """
    document = _read_toml(text, where)
    check_keys(document, required=("sheet",), where=where)
    entries = document["sheet"]
    if not isinstance(entries, list):
        raise CatalogError(f"{where} sheet: expected an array of tables written [[sheet]], "
                           f"got {type(entries).__name__}")
    result: dict[tuple[str, str], PriceSheet] = {}
    for index, entry in enumerate(entries):
        at = _label(entry, index, where)
        sheet = _sheet(entry, at)
        key = (sheet.provider, sheet.model)
        if key in result:
            raise CatalogError(f"{at}: duplicate entry, provider '{sheet.provider}' and model '{sheet.model}' "
                               f"are already priced by an earlier [[sheet]]; remove or rename one of them")
        result[key] = sheet
    return result


def load_price_file(path: str | Path) -> dict[tuple[str, str], PriceSheet]:
    """Read a user price file (same schema as the packaged ``prices.toml``)."""
    path = Path(path)
    from ..files import read_text

    text = read_text(path, what="price file", fix="give the path of a UTF-8 TOML file of [[sheet]] tables "
                                                   "(schema: llmecon.catalog.prices)")
    return load_price_sheets(text, str(path))


@functools.cache
def _sheets() -> dict[tuple[str, str], PriceSheet]:
    text = resources.files(__package__).joinpath(PRICE_FILE).read_text(encoding="utf-8")
    return load_price_sheets(text, PRICE_FILE)


def price_sheets() -> dict[tuple[str, str], PriceSheet]:
    """All catalogued price sheets by (provider, model) (a fresh dict over cached, frozen specs)."""
    return dict(_sheets())


def providers() -> list[str]:
    """The catalogued providers, sorted."""
    return sorted({provider for provider, _ in _sheets()})


def models(provider: str) -> list[str]:
    """The models catalogued for ``provider``, sorted; an unknown provider raises CatalogError."""
    known = providers()
    if provider not in known:
        raise unknown_name("price provider", provider, known)
    return sorted(model for p, model in _sheets() if p == provider)


def get_price_sheet(provider: str, model: str) -> PriceSheet:
    """One price sheet; an unknown provider or model raises CatalogError with "did you mean"."""
    table = _sheets()
    if (provider, model) not in table:
        raise unknown_name(f"{provider} model", model, models(provider))
    return table[(provider, model)]
