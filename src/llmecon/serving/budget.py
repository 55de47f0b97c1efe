"""Memory a simulation needs, estimated before it starts, and the refusal above a limit (issue 19:
``--rate 1e9 --duration 1`` used to try to allocate 8 GB of arrival times and get killed).

The figures are measured, not derived: peak ``tracemalloc`` of ``llmecon simulate --json`` on
llama-3.1-8b / hgx-h100 tp1 (numpy 2, CPython 3.11, this package at issue 19):

* per request: 1,000 -> 40,000 requests took 23.9 -> 135.8 MB, 2.9 kB per request (the engine's
  per-request Python lists, the result arrays, the per-request rows of the report); we use 3.2 kB;
* per token of the longest request: prompt 1,000 -> 100,000 (100 requests, drained) took 22.3 ->
  45.8 MB, 235 B per token, and prompt 120,000 + output 10,000 took 74.2 MB, 400 B per token (the
  step model's prefill and decode tables over 0..longest); we use 512 B;
* per trace row while the file is parsed: 560 B (100,000-row CSV, ``load_trace``); we use 640 B;
* per replica: 1 -> 100,000 replicas (20 requests) took 22.4 -> 114.3 MB, 920 B each; we use 1 kB;
* per batch slot: --batch-cap 1e6 -> 4e6 took 166 -> 598 MB, 144 B per slot (the step tables over
  0..batch cap, one set per pool); we use 160 B;
* a fixed 64 MB for the step-model tables at short lengths and the report.

Omitted: the interpreter and numpy themselves (~60 MB resident before any work), and the
``--requests-out`` / ``--json`` text, which stays within the per-request figure at 1e5 requests.
"""

from __future__ import annotations

import math

from ..errors import InfeasibleError
from ..units import fmt_bytes

BYTES_PER_REQUEST = 3_200
BYTES_PER_TOKEN = 512
BYTES_PER_TRACE_ROW = 640
BYTES_PER_REPLICA = 1_024
BYTES_PER_BATCH_SLOT = 160
BASE_BYTES = 64e6
DEFAULT_MAX_MEMORY_BYTES = 4e9  # 4 GB: a laptop's comfortable share; raise it with --max-memory


def expected_requests(*, rate_per_s: float, duration_s: float | None, requests: int | None) -> float:
    """Requests a synthetic workload will hold: ``requests``, or the arrivals expected in ``duration_s``
    (rate x duration, plus 10% and 16 for the Poisson scatter the generator itself allows for)."""
    if requests is not None:
        return float(requests)
    return 1.1 * rate_per_s * (duration_s or 0.0) + 16


def simulation_bytes(*, requests: float, longest_tokens: float = 0.0, trace_rows: float = 0.0,
                     replicas: float = 1, batch_slots: float = 0.0) -> float:
    """Estimated peak bytes of a simulation of ``requests`` whose longest request is ``longest_tokens``
    (prompt + output) on ``replicas`` replicas in all with step tables over ``batch_slots`` sequences
    (all pools' batch caps), and of parsing a trace of ``trace_rows`` rows (module docstring)."""
    return (BASE_BYTES + BYTES_PER_REQUEST * requests + BYTES_PER_TOKEN * longest_tokens
            + BYTES_PER_TRACE_ROW * trace_rows + BYTES_PER_REPLICA * replicas + BYTES_PER_BATCH_SLOT * batch_slots)


def pool_sizes(cfg) -> tuple[int, int]:
    """(replicas in all pools, batch slots of all pools' step tables) of a SimConfig."""
    pol, classes = cfg.policy, list((cfg.classes or {}).values())
    extra = sum(getattr(pol, k, None) or 0 for k in ("prefill_replicas", "decode_replicas"))
    replicas = cfg.replicas + extra + sum(c.replicas for c in classes)
    slots = (1 + len(classes)) * max([pol.batch_cap] + [c.batch_cap for c in classes])
    return replicas, slots


def require_memory(need_bytes: float, limit_bytes: float, *, what: str, fix: str) -> None:
    """InfeasibleError on ``max_memory`` when ``need_bytes`` exceeds ``limit_bytes``, with the estimate,
    what drives it (``what``) and ``fix``."""
    if need_bytes > limit_bytes:
        raise InfeasibleError(f"this run needs about {fmt_bytes(need_bytes)} of memory ({what}), more than the "
                              f"{fmt_bytes(limit_bytes)} allowed", field="max_memory", show_value=False,
                              fix=f"{fix}, or raise {{max_memory}} to {_round_up(need_bytes)} if the machine has it")


def _round_up(n: float) -> str:
    """A limit just above ``n`` in GB, as a user would type it."""
    gb = n / 1e9
    return f"{math.ceil(gb * 10) / 10:g}GB" if gb < 10 else f"{math.ceil(gb):g}GB"
