"""``njit`` for ``fastloop``: numba's, with an on-disk cache of the compiled code where one can be
written (next to the source, else numba's user-wide cache directory, else ``NUMBA_CACHE_DIR``),
without it otherwise (the kernel then compiles in every process). Imported only by ``fastloop``,
which ``compiled`` imports only when a simulation runs the compiled loop."""

from __future__ import annotations

import numba


def njit(f):
    try:
        return numba.njit(cache=True)(f)
    except RuntimeError:  # numba: "cannot cache function ...: no locator available" (no writable cache dir)
        return numba.njit(f)
