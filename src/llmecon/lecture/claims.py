"""A checkable claim of the lecture, and how its verdict is computed.

A ``Claim`` pairs what the lecture said (``lecture_value``) with what llmecon computes through
its library (``computed_value``), compares them under a stated ``Tolerance`` and records the
verdict: "matches" when they agree, "corrected" when they do not — with the reason from SPEC
(``shared/SPEC.md``; section G lists the lecture's mistakes) — and "open" when llmecon's answer
hinges on an input no catalogued source gives (``undecided``: the reason names the threshold).
Nothing here computes physics: the section builders (``section_a``, ``section_bc``, ``section_df``)
call the library and hand the two values to :func:`check`, which only compares.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from ..errors import SpecError, require_choice, require_number

VERDICTS = ("matches", "corrected", "open")
SECTIONS = {"A": "Roofline, batching, latency, cost", "B": "KV cache and context length",
            "C": "Reading prices backwards", "D": "MoE, topology, parallelism",
            "E": "Serving: the train schedule", "F": "Training economics"}

# SPEC items 1-24: number -> (section, title)
SPEC_ITEMS = {
    1: ("A", "Step time"), 2: ("A", "Latency and cost vs batch"), 3: ("A", "Balance batch"),
    4: ("A", "Latency floor vs HBM drain time"), 5: ("A", "Fast mode / slow mode"), 6: ("A", "Memory fit"),
    7: ("B", "KV bytes per token"), 8: ("B", "Crossover context"), 9: ("B", "Tiered context pricing"),
    10: ("C", "KV bytes from a long-context price step"), 11: ("C", "Output/input price ratio"),
    12: ("C", "Cache tiers from cache prices"), 13: ("C", "Fast-mode inversion"),
    14: ("D", "Routed scaling law"), 15: ("D", "Expert parallelism and scale-out"),
    16: ("D", "Scale-up domain sizes"), 17: ("D", "Pipeline across racks"),
    18: ("D", "Pipeline parallelism for inference"), 19: ("D", "Tensor parallelism"),
    20: ("E", "The train schedule"), 21: ("F", "Training compute, Chinchilla"),
    22: ("F", "Over-training from cost equalisation"), 23: ("F", "Pipeline bubbles"),
    24: ("F", "Activation memory and RevNets"),
}

_ID = re.compile(r"^([A-F])(\d{1,2})\.[a-z0-9][a-z0-9.-]*$")
_KINDS = ("rel", "abs", "factor", "range", "exact", "at_most", "below")


@dataclass(frozen=True, kw_only=True)
class Tolerance:
    """How close the computed value must be to the lecture's for "matches".

    rel: |c - r| <= value·|r|; abs: |c - r| <= value; factor: max(c/r, r/c) <= value (positive
    numbers); range: r is (lo, hi) and lo·(1 - value) <= c <= hi·(1 + value); exact: c == r
    (numbers, strings); at_most: c <= r·(1 + value); below: c < r. ``why`` says why this tolerance
    (e.g. "the lecture said 'about'"), shown with the verdict.
    """

    kind: str
    value: float = 0.0
    why: str = ""

    def __post_init__(self) -> None:
        require_choice("kind", self.kind, _KINDS, owner="tolerance")
        require_number("value", self.value, minimum=0, owner="tolerance")
        if self.kind == "factor" and self.value < 1:
            raise SpecError(f"a factor tolerance must be >= 1, got {self.value!r}")

    def agrees(self, computed, reference) -> bool:
        if self.kind == "exact":
            return computed == reference
        if isinstance(computed, str):
            return False
        c = float(computed)
        if not math.isfinite(c):
            return False
        if self.kind == "range":
            lo, hi = (float(x) for x in reference)
            return lo * (1 - self.value) <= c <= hi * (1 + self.value)
        r = float(reference)
        if self.kind == "rel":
            return abs(c - r) <= self.value * abs(r)
        if self.kind == "abs":
            return abs(c - r) <= self.value
        if self.kind == "factor":
            return c > 0 and r > 0 and max(c / r, r / c) <= self.value
        if self.kind == "at_most":
            return c <= r * (1 + self.value)
        return c < r  # below

    def describe(self) -> str:
        """The tolerance in words, read after "agrees": "within ±1%", "exactly", ..."""
        v = self.value
        rel = f"±{v * 100:.3g}%" if v >= 1e-4 else f"±{v:.0e} (relative)"
        text = {"rel": f"within {rel}", "abs": f"within ±{v:.3g} (absolute)", "factor": f"within a factor {v:g}",
                "range": "inside the lecture's range" + (f" (±{v:.0%} at the ends)" if v else ""),
                "exact": "exactly", "at_most": "at or below the lecture's bound" + (f" (+{v:.0%})" if v else ""),
                "below": "strictly below the lecture's bound"}[self.kind]
        return f"{text} ({self.why})" if self.why else text


@dataclass(frozen=True, kw_only=True)
class Claim:
    """One checkable number of the lecture, its value in llmecon and the computed verdict."""

    id: str
    section: str
    statement: str
    lecture_value: str | float
    computed_value: str | float
    unit: str
    verdict: str
    reason: str
    tolerance: str
    source: str
    display: str  # computed_value formatted for people

    @property
    def item(self) -> int:
        """The SPEC item (1-24) this claim belongs to, read from its id ("A3.x" -> 3)."""
        return int(_ID.match(self.id).group(2))

    def as_dict(self) -> dict:
        """The JSON form (what ``llmecon lecture`` prints as JSON): exactly the eight documented keys."""
        return {"id": self.id, "section": self.section, "statement": self.statement,
                "lecture_value": self.lecture_value, "computed_value": self.computed_value, "unit": self.unit,
                "verdict": self.verdict, "reason": self.reason}


def _plain(value):
    """numpy scalars and bools -> JSON-ready Python values; strings unchanged."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return value
    f = float(value)
    if not math.isfinite(f):
        raise SpecError(f"computed value {value!r} is not finite; a claim needs a finite number")
    return int(f) if f.is_integer() and abs(f) < 2**53 else f


def _format(value, fmt: str) -> str:
    return value if isinstance(value, str) else format(value, fmt)


def check(claim_id: str, *, statement: str, lecture, computed, unit: str, tol: Tolerance, reference=None,
          fmt: str = ",.4g", agree: str = "", correct: str = "", source: str = "") -> Claim:
    """Compare ``computed`` with the lecture's value and build the Claim.

    ``lecture`` is what the lecture said (number or short text); ``reference`` is the number (or
    (lo, hi) range, or text) the comparison uses when ``lecture`` is text (default: ``lecture``).
    ``agree`` adds context to a "matches" reason; ``correct`` is SPEC's correction, used when the
    values disagree (a disagreement with no correction text still comes out "corrected", with a
    reason that names both values, so a regression is visible rather than hidden).
    """
    m = _ID.match(claim_id)
    if m is None:
        raise SpecError(f"claim id {claim_id!r}: must look like 'A3.short-name' (section letter, SPEC item, name)")
    section, item = m.group(1), int(m.group(2))
    if SPEC_ITEMS.get(item, ("",))[0] != section:
        raise SpecError(f"claim id {claim_id!r}: SPEC item {item} is not in section {section}")
    ref = lecture if reference is None else reference
    computed = _plain(computed)
    shown = _format(computed, fmt)
    if tol.agrees(computed, ref):
        verdict = "matches"
        reason = f"agrees {tol.describe()}" + (f"; {agree}" if agree else "")
    else:
        verdict = "corrected"
        reason = correct or (f"llmecon computes {shown} {unit}, the lecture said {lecture}: they differ by more "
                             f"than {tol.describe()}")
    return Claim(id=claim_id, section=section, statement=statement, lecture_value=_plain(lecture), unit=unit,
                 computed_value=computed, verdict=verdict, reason=reason, tolerance=tol.describe(), source=source,
                 display=shown)


def undecided(claim_id: str, *, statement: str, lecture, computed, unit: str, reason: str, fmt: str = ",.4g",
              source: str = "") -> Claim:
    """A claim whose verdict hinges on an input no catalogued source gives (a price, say): verdict
    "open", ``computed`` is the threshold that would decide it and ``reason`` says which way each
    side of it goes. Never used to hide a disagreement the library can decide."""
    m = _ID.match(claim_id)
    if m is None:
        raise SpecError(f"claim id {claim_id!r}: must look like 'A3.short-name' (section letter, SPEC item, name)")
    if SPEC_ITEMS.get(int(m.group(2)), ("",))[0] != m.group(1):
        raise SpecError(f"claim id {claim_id!r}: SPEC item {m.group(2)} is not in section {m.group(1)}")
    if not reason:
        raise SpecError(f"claim {claim_id}: an open claim needs the reason (what would decide it)")
    computed = _plain(computed)
    return Claim(id=claim_id, section=m.group(1), statement=statement, lecture_value=_plain(lecture), unit=unit,
                 computed_value=computed, verdict="open", reason=reason, tolerance="undecided", source=source,
                 display=_format(computed, fmt))


def counts(claims) -> dict[str, int]:
    """{"matches": n, "corrected": m, "open": k} over ``claims``."""
    out = dict.fromkeys(VERDICTS, 0)
    for c in claims:
        out[c.verdict] += 1
    return out


def check_unique(claims) -> None:
    """Raise SpecError if two claims share an id (ids are the report's anchors)."""
    seen: set[str] = set()
    for c in claims:
        if c.id in seen:
            raise SpecError(f"claim id {c.id!r} appears twice")
        seen.add(c.id)
