"""Request states, rejection reasons and how a waiting request resumes, as ``IntEnum``s.

The values are what the per-request arrays hold: ``SimResult.status`` is an int64 array of
``Status`` values, and the engine keeps ``Reason`` values per request (``SimResult.reject_reason``
holds their labels: ``""`` unless rejected) and ``Resume`` values (internal). The module-level
aliases are the members themselves, for the engine's hot loop (a global load instead of an
attribute look-up on the class).
"""

from __future__ import annotations

from enum import IntEnum


class Status(IntEnum):
    """Where a request is. ``label`` is its name in the per-request table and the counts."""

    WAITING = 0
    RUNNING = 1
    COMPLETED = 2
    REJECTED = 3
    NOT_ARRIVED = 4

    @property
    def label(self) -> str:
        return self.name.lower()


class Reason(IntEnum):
    """Why a request was rejected at arrival (``NONE`` unless it was)."""

    NONE = 0
    KV_CAPACITY = 1  # its full KV (prompt + output - 1 tokens) exceeds the KV capacity
    QUEUE_FULL = 2  # it found ``max_queue`` requests waiting

    @property
    def label(self) -> str:
        return "" if self is Reason.NONE else self.name.lower()


class Resume(IntEnum):
    """What a request needs before it can decode when a replica admits it."""

    PREFILL = 0  # a prefill of its prompt (and of the tokens generated before a recompute preemption)
    SWAP_IN = 1  # its KV copied back from the host tier (swap preemption)
    KV_READY = 2  # nothing: its KV arrived from the prefill pool (disaggregated)


WAITING, RUNNING, COMPLETED, REJECTED, NOT_ARRIVED = Status
PREFILL, SWAP_IN, KV_READY = Resume
STATUS_NAMES = tuple(s.label for s in Status)  # index = Status value
REASONS = tuple(r.label for r in Reason)  # index = Reason value
