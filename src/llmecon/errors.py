"""One error hierarchy for the whole package.

Every error a user can cause is a ``LlmeconError`` (a ``ValueError``) whose message is one line
naming the field, the problem and a fix. Front-ends turn it into exit code 2 (CLI) or 422 (web).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class LlmeconError(ValueError):
    """Base class of every error caused by bad input."""


class SpecError(LlmeconError):
    """A spec that cannot exist (negative size, heads not divisible, unknown dtype...)."""


class CatalogError(LlmeconError):
    """A catalogue entry or user file is malformed, or a name is not in the catalogue."""


class UnitError(LlmeconError):
    """A quantity string that cannot be parsed, or has the wrong dimension."""


class InfeasibleError(LlmeconError):
    """The request is well-formed but impossible (does not fit in memory, no plan meets the SLO)."""


def did_you_mean(name: str, choices: Iterable[str]) -> str:
    """Return ``" (did you mean 'x'?)"`` for the closest choice, or ``""`` when none is close."""
    close = difflib.get_close_matches(name, list(choices), n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""


def unknown_name(kind: str, name: str, choices: Iterable[str]) -> CatalogError:
    """The standard error for a name that is not in a registry."""
    choices = sorted(choices)
    hint = did_you_mean(name, choices)
    listing = ", ".join(choices[:12]) + (", ..." if len(choices) > 12 else "")
    return CatalogError(f"unknown {kind} '{name}'{hint}; known: {listing}")


def require_whole(name: str, value, minimum: int = 1) -> int:
    """``value`` as an int >= ``minimum`` (Python or numpy integer, not bool, not 4.0), else
    SpecError naming ``name`` (a CLI flag or field), the rule and the value."""
    import numbers

    if not (isinstance(value, numbers.Integral) and not isinstance(value, bool) and value >= minimum):
        raise SpecError(f"{name}: must be a whole number >= {minimum}, got {value!r}")
    return int(value)


def require_number(name: str, value, *, minimum: float | None = None, exclusive: bool = False,
                   maximum: float | None = None, hint: str = "") -> float:
    """``value`` as a finite float within bounds, else SpecError naming ``name`` (a CLI flag or
    field), the rule and the value. ``exclusive`` makes the minimum strict."""
    import math

    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if ok and minimum is not None:
        ok = value > minimum if exclusive else value >= minimum
    if ok and maximum is not None:
        ok = value <= maximum
    if not ok:
        rule = "a finite number"
        if minimum is not None:
            rule += f" {'>' if exclusive else '>='} {minimum:g}"
        if maximum is not None:
            rule += f" and <= {maximum:g}"
        raise SpecError(f"{name}: must be {rule}, got {value!r}" + (f"; {hint}" if hint else ""))
    return float(value)
