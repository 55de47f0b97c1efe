"""The pyplot figures of the report views (``--plot`` files): matplotlib with the Agg backend
(no display needed), drawn, laid out and written the same way by every command."""

from __future__ import annotations

from pathlib import Path


def pyplot():
    """``matplotlib.pyplot`` on the Agg backend. Needs matplotlib."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


#: metadata that would make two runs' files differ (matplotlib stamps SVG and PDF with the date)
_NO_DATE = {".svg": {"Date": None}, ".pdf": {"CreationDate": None, "ModDate": None}}


def write_figure(fig, path: str | Path) -> None:
    """Write ``fig`` to ``path`` (PNG/SVG/PDF by its suffix) at 120 dpi, atomically (``files.atomic_path``:
    a failed write leaves an existing file as it was) and deterministically: no date in the metadata and a
    fixed ``svg.hashsalt`` (the ids of SVG clip paths are hashes salted at random otherwise)."""
    import matplotlib

    from ..files import atomic_path

    suffix = Path(path).suffix.lower()
    with matplotlib.rc_context({"svg.hashsalt": "llmecon"}), atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=120, format=suffix[1:] or None, metadata=_NO_DATE.get(suffix))


def save_figure(fig, path: str | Path) -> None:
    """Lay out ``fig``, write it (:func:`write_figure`) and close it."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    try:
        write_figure(fig, path)
    finally:
        plt.close(fig)
