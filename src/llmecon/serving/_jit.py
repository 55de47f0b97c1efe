"""``njit`` for the compiled serving loop (``fastloop``, ``faststeps``, ``fastparts``): numba's, with an
on-disk cache of the compiled code where one can be written (next to the source, else numba's
user-wide cache directory, else ``NUMBA_CACHE_DIR``), without it otherwise (the kernel then
compiles in every process). Imported only by those modules, which ``compiled`` imports only when a
simulation runs the compiled loop.

The kernels run without numba's reference counting (``_nrt=False``): they pass ``fastlayout``'s
named tuples of arrays from call to call, and counted references cost an atomic increment and
decrement per array per call (measured: ~200 ns against ~9 ns per call of a 20-array tuple). They
allocate nothing (every array comes from the caller), which is what running without it requires;
``njit_alloc`` keeps it for the one function that allocates its result (``fastloop.expand_runs``).
``njit_inline`` marks the steps of the loop that numba inlines into it.
A numba that refuses the option compiles with reference counting (slower, the same results).
"""

from __future__ import annotations

import numba


def _compile(f, **opts):
    try:
        return numba.njit(cache=True, **opts)(f)
    except RuntimeError:  # numba: "cannot cache function ...: no locator available" (no writable cache dir)
        return numba.njit(**opts)(f)


def njit(f, **opts):
    try:
        return _compile(f, _nrt=False, **opts)
    except (KeyError, TypeError, ValueError):  # an option this numba does not know
        return _compile(f, **opts)


def njit_inline(f):
    """``njit``, inlined into every caller by numba (``inline="always"``): the loop's steps pass whole named
    tuples, which a call flattens into hundreds of scalar arguments; inlined, the compiled loop is one
    function again, as fast as the single-function kernel it was split from."""
    return njit(f, inline="always")


def njit_alloc(f):
    return _compile(f)
