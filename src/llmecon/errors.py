"""One error hierarchy for the whole package, with errors as data.

Every error a user can cause is a ``LlmeconError`` (a ``ValueError``) that carries

* ``field``: the input it is about, by its library name (``"tp"``, ``"weight_dtype"``, ``"context"``),
  or None for a whole file or request;
* ``rule``: what must hold (``"must be a whole number >= 1"``);
* ``value``: what was given (absent when there is nothing to show);
* ``fix``: what to do about it.

The core never spells a command-line flag or a JSON key. Front-ends choose the spelling when they
render: ``exc.render(spell)`` names ``field`` and every ``{name}`` placeholder in the rule or the
fix through ``spell`` (the CLI spells ``tp`` as ``--tp``, the web API keeps ``tp``); ``str(exc)``
uses the library names. The CLI prints the rendered line and exits 2; the web answers 422 with
``field`` as the error's location. Free-text errors (a malformed catalogue file) have no field.

One set of validators for the whole package: ``require_whole``, ``require_number``, ``require_array``
(swept numpy inputs) and ``require_choice`` fill field, rule and value; with ``owner`` they check a key
of a catalogue entry or file instead, which has no field ("accelerator h100: hbm_bytes must be ...").
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

#: marks "no value given" (None is a value a user can give)
NO_VALUE = type("NoValue", (), {"__repr__": lambda self: "NO_VALUE"})()
_PLACEHOLDER = re.compile(r"\{([a-z][a-z0-9_]*)\}")


def library_name(field: str) -> str:
    """The spelling ``str(exc)`` uses: the library's own name."""
    return field


class LlmeconError(ValueError):
    """Base class of every error caused by bad input.

    ``LlmeconError(rule, field=..., value=..., fix=...)`` renders as ``"<field> <value>: <rule>; <fix>"``
    (``value`` only when ``show_value``; the require_* validators put "got <value>" in the rule
    instead). With no field, the rule is the whole message.
    """

    def __init__(self, rule: str, *, field: str | None = None, value=NO_VALUE, fix: str | None = None,
                 show_value: bool = True):
        self.rule, self.field, self.value, self.fix = rule, field, value, fix
        self.show_value = show_value and value is not NO_VALUE
        super().__init__(self.render())

    def render(self, spell: Callable[[str], str] = library_name) -> str:
        """One line, with the field and every ``{name}`` placeholder spelled by ``spell``."""
        def sub(text: str) -> str:
            return _PLACEHOLDER.sub(lambda m: spell(m.group(1)), text)

        body = sub(self.rule) + (f"; {sub(self.fix)}" if self.fix else "")
        if self.field is None:
            return body
        head = spell(self.field) + (f" {_show(self.value)}" if self.show_value else "")
        return f"{head}: {body}"

    def __str__(self) -> str:
        return self.render()


def _show(value) -> str:
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return f"{value:g}"
    return str(value)


class SpecError(LlmeconError):
    """A spec that cannot exist (negative size, heads not divisible, unknown dtype...)."""


class CatalogError(LlmeconError):
    """A catalogue entry or user file is malformed, or a name is not in the catalogue."""


class UnitError(LlmeconError):
    """A quantity string that cannot be parsed, or has the wrong dimension."""


class InfeasibleError(LlmeconError):
    """The request is well-formed but impossible (does not fit in memory, no plan meets the SLO)."""


def with_field(exc: LlmeconError, field: str) -> LlmeconError:
    """``exc`` re-attributed to ``field`` when it names none (a dtype lookup that the caller knows
    came from ``weight_dtype``): the same class, rule, value and fix."""
    if exc.field is not None:
        return exc
    return type(exc)(exc.rule, field=field, value=exc.value, fix=exc.fix, show_value=exc.show_value)


def template(exc: LlmeconError) -> str:
    """``exc`` as text whose field and inputs stay ``{name}`` placeholders: for the rule of an error that
    quotes it ("nothing to run: ... ({tp} 3: ...)"), so that front-ends still spell them."""
    return exc.render(lambda name: "{" + name + "}")


def without_field(exc: LlmeconError) -> LlmeconError:
    """``exc`` with its field folded into the text ("ratio: must be ..."), for a check on a number that is
    no input of a front-end (a closed form's parameter, a figure read from a price sheet)."""
    return type(exc)(str(exc), value=exc.value, show_value=False)


def did_you_mean(name: str, choices: Iterable[str]) -> str:
    """Return ``" (did you mean 'x'?)"`` for the closest choice, or ``""`` when none is close."""
    import difflib  # only when a name is wrong (~2 ms at start-up otherwise)

    close = difflib.get_close_matches(name, list(choices), n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""


def unknown_name(kind: str, name: str, choices: Iterable[str], *, field: str | None = None) -> CatalogError:
    """The standard error for a name that is not in a registry (``field``: the input that named it)."""
    choices = sorted(choices)
    hint = did_you_mean(name, choices)
    listing = ", ".join(choices[:12]) + (", ..." if len(choices) > 12 else "")
    return CatalogError(f"unknown {kind} '{name}'{hint}", field=field, fix=f"known: {listing}")


def _broken(name: str, rule: str, value, hint: str, owner: str | None) -> SpecError:
    """The error of a require_* check: about input ``name``, or, with ``owner`` (a catalogue entry or
    file such as ``"accelerator h100"``), about a key of that entry, which is no input of a front-end
    and has no field: "<owner>: <name> <rule>"."""
    if owner is None:
        return SpecError(rule, field=name, value=value, fix=hint or None, show_value=False)
    return SpecError(f"{owner}: {name} {rule}", value=value, fix=hint or None, show_value=False)


def require_whole(name: str, value, minimum: int = 1, *, owner: str | None = None) -> int:
    """``value`` as an int >= ``minimum`` (Python or numpy integer, not bool, not 4.0), else
    SpecError with field ``name``, the rule and the value (``owner``: see ``_broken``)."""
    if type(value) is int and value >= minimum:  # the common case, without the numbers.Integral ABC check
        return value
    import numbers

    if not (isinstance(value, numbers.Integral) and not isinstance(value, bool) and value >= minimum):
        raise _broken(name, f"must be a whole number >= {minimum}, got {value!r}", value, "", owner)
    return int(value)


def _bound(minimum: float | None, exclusive: bool, maximum: float | None) -> str:
    """"in (0, 1]" with both bounds, else "> 0", ">= 1", "<= 2" or ""."""
    if minimum is not None and maximum is not None:
        return f"in {'(' if exclusive else '['}{minimum:g}, {maximum:g}]"
    if minimum is not None:
        return f"{'>' if exclusive else '>='} {minimum:g}"
    return "" if maximum is None else f"<= {maximum:g}"


def require_number(name: str, value, *, minimum: float | None = None, exclusive: bool = False,
                   maximum: float | None = None, hint: str = "", owner: str | None = None) -> float:
    """``value`` as a finite float within bounds, else SpecError with field ``name``, the rule and
    the value (``hint``: the fix; ``owner``: see ``_broken``). ``exclusive`` makes the minimum strict."""
    import math

    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if ok and minimum is not None:
        ok = value > minimum if exclusive else value >= minimum
    if ok and maximum is not None:
        ok = value <= maximum
    if not ok:
        bound = _bound(minimum, exclusive, maximum)
        rule = f"must be {bound}" if bound.startswith("in ") else f"must be a finite number {bound}".rstrip()
        raise _broken(name, f"{rule}, got {value!r}", value, hint, owner)
    return float(value)


def require_array(name: str, value, *, minimum: float | None = None, exclusive: bool = False,
                  maximum: float | None = None, hint: str = "", owner: str | None = None):
    """``value`` (a number or an array of them, for the swept inputs) as a float numpy array whose
    every element is finite and within bounds, else SpecError as ``require_number``."""
    import numpy as np

    if type(value) is float or type(value) is int:  # the one-point call: check in Python, skip the array reductions
        import math

        v = float(value)
        ok = math.isfinite(v) and (minimum is None or (v > minimum if exclusive else v >= minimum)) and (
            maximum is None or v <= maximum)
        if ok:
            return np.float64(v)  # a numpy scalar: broadcasts like a 0-d array, its arithmetic ~5x cheaper
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        arr = None
    ok = arr is not None and bool(np.all(np.isfinite(arr)))
    if ok and minimum is not None:
        ok = bool(np.all(arr > minimum if exclusive else arr >= minimum))
    if ok and maximum is not None:
        ok = bool(np.all(arr <= maximum))
    if not ok:
        bound = _bound(minimum, exclusive, maximum)
        raise _broken(name, f"must be finite{' and ' + bound if bound else ''}, got {value!r}", value, hint, owner)
    return arr


def as_floats(value):
    """``value`` as floats for the formulas: a numpy float64 scalar as it is (its arithmetic is several
    times cheaper than a 0-d array's, and it broadcasts alike), anything else as a float numpy array."""
    import numpy as np

    return value if type(value) is np.float64 else np.asarray(value, dtype=float)


def require_choice(name: str, value, choices: Iterable, *, owner: str | None = None):
    """``value`` if it is one of ``choices``, else SpecError with field ``name``, the choices and the
    closest one (``owner``: see ``_broken``)."""
    choices = tuple(choices)
    if value not in choices:
        hint = did_you_mean(value, choices) if isinstance(value, str) else ""
        rule = f"must be one of {', '.join(map(str, choices))}, got {value!r}{hint}"
        raise _broken(name, rule, value, "", owner)
    return value
