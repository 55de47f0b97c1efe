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


def save_figure(fig, path: str | Path) -> None:
    """Lay out ``fig``, write it to ``path`` (PNG/SVG/PDF by its suffix) at 120 dpi and close it."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
