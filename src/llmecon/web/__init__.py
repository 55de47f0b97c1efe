"""``llmecon web``: FastAPI JSON API + one page with plotly charts (extra ``[web]``)."""

from __future__ import annotations


def create_app(**options):
    """The FastAPI app (imports FastAPI lazily so the core never needs it); ``options``:
    ``app.create_app``'s (``allowed_hosts``)."""
    from .app import create_app as make

    return make(**options)
