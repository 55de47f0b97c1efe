"""``njit`` for the compiled serving loop (``fastloop``, ``faststeps``, ``fastparts``): numba's, with an
on-disk cache of the compiled code where one can be written (``NUMBA_CACHE_DIR`` if set, else next to
the source, else ``~/.cache/llmecon``; in a subdirectory named by the hash of every kernel file, so that
an edit to any of them recompiles), without it otherwise (the kernel then compiles in every process).
Imported only by those modules, which ``compiled`` imports only when a simulation runs the compiled loop.

The kernels run without numba's reference counting (``_nrt=False``): they pass ``fastlayout``'s
named tuples of arrays from call to call, and counted references cost an atomic increment and
decrement per array per call (measured: ~200 ns against ~9 ns per call of a 20-array tuple). They
allocate nothing (every array comes from the caller), which is what running without it requires;
``njit_alloc`` keeps it for the one function that allocates its result (``fastloop.expand_runs``).
``njit_inline`` marks the steps of the loop that numba inlines into it.
A numba that refuses the option compiles with reference counting (slower, the same results).
"""

from __future__ import annotations

import hashlib
import os
from contextlib import contextmanager
from pathlib import Path

import numba

# numba checks a cached function against its own file only; these kernels inline functions of the other
# files, so an edit there (or an upgrade that leaves an old ``__pycache__``) would load stale machine code.
# The cache lives in a directory named by the hash of every kernel file instead: any edit starts afresh.
KERNEL_FILES = ("fastlayout.py", "fastloop.py", "faststeps.py", "fastparts.py", "_jit.py")


def kernel_tag(sources: list[bytes]) -> str:
    """The cache directory's name for these kernel sources (their SHA-256, 16 hex digits)."""
    h = hashlib.sha256()
    for src in sources:
        h.update(hashlib.sha256(src).digest())
    return "kernels-" + h.hexdigest()[:16]


def _cache_dir() -> str | None:
    """Where the compiled kernels are cached: ``$NUMBA_CACHE_DIR`` if set, else this package's
    ``__pycache__``, else ``~/.cache/llmecon``, in a subdirectory named by ``kernel_tag``; None (numba's own
    locators) when none of them is writable."""
    here = Path(__file__).parent
    tag = kernel_tag([(here / name).read_bytes() for name in KERNEL_FILES])
    env = os.environ.get("NUMBA_CACHE_DIR")
    for base in ([Path(env)] if env else [here / "__pycache__", Path.home() / ".cache" / "llmecon"]):
        try:
            (base / tag).mkdir(parents=True, exist_ok=True)
            probe = base / tag / ".writable"
            probe.touch()
            return str(base / tag)
        except OSError:
            continue
    return None


_CACHE_DIR = _cache_dir()


@contextmanager
def _cache_in(path: str | None):
    """numba reads ``config.CACHE_DIR`` when a function is decorated (its cache locator keeps the path)."""
    config = getattr(numba, "config", None)
    if path is None or config is None:
        yield
        return
    old = config.CACHE_DIR
    config.CACHE_DIR = path
    try:
        yield
    finally:
        config.CACHE_DIR = old


def _compile(f, **opts):
    try:
        with _cache_in(_CACHE_DIR):
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
