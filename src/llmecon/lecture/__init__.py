"""The lecture, claim by claim, reproduced through llmecon (``llmecon lecture``).

``build_claims()`` recomputes every checkable number of SPEC sections A-F (items 1-24) through
the library and compares it with what the lecture said (``claims.check``); ``figures()`` draws
the report's figures; ``report.lecture_html`` puts both into one self-contained HTML page.
"""

from __future__ import annotations

from .claims import SECTIONS, SPEC_ITEMS, VERDICTS, Claim, Tolerance, check_unique, counts


def build_claims() -> list[Claim]:
    """Every claim of SPEC sections A-F, in SPEC order, with computed verdicts."""
    from . import section_a
    from . import section_bc
    from . import section_df

    claims = section_a.claims() + section_bc.claims() + section_df.claims()
    check_unique(claims)
    return claims


__all__ = ["SECTIONS", "SPEC_ITEMS", "VERDICTS", "Claim", "Tolerance", "build_claims", "counts"]
