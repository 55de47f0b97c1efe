"""Everything about a simulated run except the deployment and the workload: ``SimConfig`` (the
policy, replicas, service classes, prefix cache, SLOs, price, horizon, KV share, queue limit, seed)
and its parts ``ServiceClass``, ``PrefixCache`` and ``SLO``; frozen specs, validated on creation."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from ..errors import SpecError, require_number, require_whole
from .policies import POLICIES, Continuous, ServingPolicy, require_time


def _class_number(name: str, value, *, whole: bool) -> None:
    """A ServiceClass field: the rule names it (``class batch_cap: ...``) since a class has no flag
    of its own per field (the CLI packs them into ``--class NAME=CAP:REPLICAS:PRICE``)."""
    if whole:
        ok = isinstance(value, int) and not isinstance(value, bool) and value >= 1
        rule = f"class {name}: must be a whole number >= 1, got {value!r}"
    else:
        ok = isinstance(value, (int, float)) and math.isfinite(value) and value >= 0
        rule = f"class {name}: must be a finite number >= 0, got {value!r}"
    if not ok:
        raise SpecError(rule, value=value, show_value=False)


@dataclass(frozen=True, kw_only=True)
class ServiceClass:
    """A service tier (SPEC E20: "fast/slow service classes as trains of different size"): its
    requests run on their own pool of ``replicas`` with batch cap ``batch_cap``; ``price_usd_per_mtok``
    (optional, what the tier charges per million output tokens) is compared with its cost."""

    batch_cap: int
    replicas: int = 1
    price_usd_per_mtok: float | None = None

    def __post_init__(self) -> None:
        _class_number("batch_cap", self.batch_cap, whole=True)
        _class_number("replicas", self.replicas, whole=True)
        if self.price_usd_per_mtok is not None:
            _class_number("price_usd_per_mtok", self.price_usd_per_mtok, whole=False)


@dataclass(frozen=True, kw_only=True)
class PrefixCache:
    """Prefix caching: a hit skips prefilling the first ``prefix_tokens`` (at most prompt - 1).

    ``hit_rate`` given: each request hits independently with that probability (seeded). Else the
    trace's ``prefix_id``: a request hits when an earlier request had the same id (unbounded cache).
    The cached prefix is read once by the prefill (inference.prefill_step's ``cached_tokens``); its
    KV is counted in every sequence's memory (no sharing of blocks: conservative on capacity).
    """

    prefix_tokens: int
    hit_rate: float | None = None

    def __post_init__(self) -> None:
        require_whole("prefix_tokens", self.prefix_tokens)
        if self.hit_rate is not None and not (isinstance(self.hit_rate, (int, float)) and 0 <= self.hit_rate <= 1):
            raise SpecError(f"must be within [0, 1], got {self.hit_rate!r}", field="prefix_hit_rate",
                            value=self.hit_rate, show_value=False)


@dataclass(frozen=True, kw_only=True)
class SLO:
    """Service-level objectives for goodput: a completed request counts if its TTFT and TPOT are
    within these (None = no limit on that metric; DistServe's goodput definition)."""

    ttft_s: float | None = None
    tpot_s: float | None = None

    def __post_init__(self) -> None:
        require_time("slo_ttft", self.ttft_s)
        require_time("slo_tpot", self.tpot_s)


@dataclass(frozen=True, kw_only=True)
class SimConfig:
    """Everything about a run except the deployment and the workload.

    ``policy`` is one of ``POLICIES`` (a ``ServingPolicy``); ``replicas`` copies of the deployment
    share one FCFS queue (M/x/c when batch cap is 1); ``classes`` gives each request class its own
    pool (fast/slow tiers); ``horizon_s`` None means the workload's duration (or last arrival);
    ``hbm_fraction`` of each chip's HBM may hold weights and KV; ``max_queue`` rejects arrivals
    finding that many waiting.
    """

    policy: ServingPolicy = field(default_factory=Continuous)
    replicas: int = 1
    classes: Mapping[str, ServiceClass] | None = None
    prefix_cache: PrefixCache | None = None
    slo: SLO = field(default_factory=SLO)
    price_per_chip_hour: float | None = None
    horizon_s: float | None = None
    drain: bool = False
    hbm_fraction: float = 1.0
    max_queue: int | None = None
    seed: int = 0
    closed_form_runs: bool = True  # False: one decode step per event (a slow reference for tests)

    def __post_init__(self) -> None:
        if not isinstance(self.policy, ServingPolicy):
            raise SpecError(f"must be a policy object, got {self.policy!r}", field="policy", value=self.policy,
                            show_value=False, fix=f"use one of {', '.join(c.__name__ for c in POLICIES.values())} "
                                                  "(policy_from_name builds one from its name)")
        require_whole("replicas", self.replicas)
        require_whole("seed", self.seed, minimum=0)
        if self.price_per_chip_hour is not None:
            require_number("price_per_chip_hour", self.price_per_chip_hour, minimum=0)
        if self.horizon_s is not None and not (self.horizon_s > 0 and math.isfinite(self.horizon_s)):
            raise SpecError(f"must be a finite time > 0, got {self.horizon_s!r}", field="horizon_s",
                            value=self.horizon_s, show_value=False)
        if not (0 < self.hbm_fraction <= 1):
            raise SpecError(f"must be in (0, 1], got {self.hbm_fraction!r}", field="hbm_fraction",
                            value=self.hbm_fraction, show_value=False)
        if self.max_queue is not None:
            require_whole("max_queue", self.max_queue, minimum=0)
            if self.max_queue == 0:  # the check runs before an arrival joins the queue: 0 rejects every request
                raise SpecError("0 would reject every request, even on an idle server (an arrival is refused "
                                "when it finds max_queue requests waiting, before it can start)", field="max_queue",
                                value=0, fix="give a waiting room of 1 or more, or leave it out for an unbounded "
                                             "queue")
