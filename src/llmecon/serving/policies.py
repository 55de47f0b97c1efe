"""Scheduling policies of the serving simulator (SPEC E20): frozen specs, validated on creation.

* ``Train``        fixed cadence: an iteration departs every ``tau_s`` on a fixed clock, full or
                   not; waiting requests board the next departure if there is room (slots, KV);
                   every aboard sequence decodes one token per train (the lecture's "train
                   schedule"). A train that takes longer than tau makes the next departure slip to
                   the next clock tick.
* ``Adaptive``     request-level (static) batching with a dynamic batcher: a batch departs when
                   ``batch_cap`` requests wait or the oldest has waited ``deadline_s``, then runs
                   prefill and decode until its last member finishes; nobody joins mid-batch
                   (Triton's dynamic batcher: max batch size + max queue delay).
* ``Continuous``   iteration-level scheduling (Orca, Yu et al. OSDI 2022; vLLM, Kwon et al. SOSP
                   2023): each iteration either prefills newly admitted requests (prefill first,
                   decodes pause: vLLM v0 default) or, with ``chunk_tokens``, mixes every running
                   decode with prefill chunks under a token budget (chunked prefill: Sarathi-Serve,
                   Agrawal et al. OSDI 2024; vLLM v1).
* ``Disaggregated`` prefill and decode on separate replica pools (DistServe, Zhong et al. OSDI
                   2024; Splitwise, Patel et al. ISCA 2024); KV moves over the scale-out link.

Preemption when KV runs out (continuous/chunked/decode pool): the most recently admitted sequence
is evicted (vLLM's policy); ``recompute`` drops its KV and re-prefills prompt + generated tokens
later; ``swap`` copies it to the host memory tier and back (time = bytes / tier bandwidth, the
replica stalls meanwhile); ``auto`` swaps when the system has a host tier with a known bandwidth,
else recomputes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from ..errors import SpecError, did_you_mean
from ..spec.plan import Plan

POLICIES = ("train", "adaptive", "continuous", "disaggregated")
PREEMPTION = ("auto", "recompute", "swap")
DEFAULT_BATCH_CAP = 256  # vLLM's default max_num_seqs (vllm.config.SchedulerConfig, v0.x)


def _whole(name: str, value, minimum: int = 1) -> int:
    if not (isinstance(value, int) and not isinstance(value, bool) and value >= minimum):
        raise SpecError(f"{name}: must be a whole number >= {minimum}, got {value!r}")
    return value


def _time(name: str, value, *, allow_none: bool = True, allow_zero: bool = False):
    if value is None and allow_none:
        return None
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if not ok or value < 0 or (value == 0 and not allow_zero):
        raise SpecError(f"{name}: must be a finite time {'>=' if allow_zero else '>'} 0 seconds, got {value!r}")
    return value


@dataclass(frozen=True, kw_only=True)
class Train:
    """Fixed-cadence dispatch. ``tau_s`` None: the decode step time at ``batch_cap`` sequences of
    the workload's mean prompt + output/2 context (so a full train just keeps time)."""

    batch_cap: int = DEFAULT_BATCH_CAP
    tau_s: float | None = None
    name = "train"

    def __post_init__(self) -> None:
        _whole("--batch-cap", self.batch_cap)
        _time("--tau", self.tau_s)


@dataclass(frozen=True, kw_only=True)
class Adaptive:
    """Static batches dispatched when full or when the oldest request has waited ``deadline_s``."""

    batch_cap: int = DEFAULT_BATCH_CAP
    deadline_s: float = 0.05
    name = "adaptive"

    def __post_init__(self) -> None:
        _whole("--batch-cap", self.batch_cap)
        _time("--deadline", self.deadline_s, allow_none=False, allow_zero=True)


@dataclass(frozen=True, kw_only=True)
class Continuous:
    """Iteration-level batching. ``max_batched_tokens`` caps the prompt tokens of one prefill
    iteration (a longer prompt runs alone); ``chunk_tokens`` switches on chunked prefill with that
    per-iteration token budget (decodes first, then prefill chunks)."""

    batch_cap: int = DEFAULT_BATCH_CAP
    max_batched_tokens: int = 16384
    chunk_tokens: int | None = None
    preemption: str = "auto"
    name = "continuous"

    def __post_init__(self) -> None:
        _whole("--batch-cap", self.batch_cap)
        _whole("--max-batched-tokens", self.max_batched_tokens)
        if self.chunk_tokens is not None:
            _whole("--chunk-tokens", self.chunk_tokens)
            if self.chunk_tokens <= self.batch_cap:
                raise SpecError(f"--chunk-tokens {self.chunk_tokens}: must exceed --batch-cap {self.batch_cap} so "
                                "every running decode fits in an iteration with room for prefill (vLLM requires "
                                "max_num_batched_tokens >= max_num_seqs)")
        check_preemption(self.preemption)


@dataclass(frozen=True, kw_only=True)
class Disaggregated:
    """Separate prefill and decode pools. Plans default to the deployment's; replicas to 1 each."""

    prefill_replicas: int = 1
    decode_replicas: int = 1
    prefill_plan: Plan | None = None
    decode_plan: Plan | None = None
    prefill_batch_cap: int = DEFAULT_BATCH_CAP
    max_batched_tokens: int = 16384
    batch_cap: int = DEFAULT_BATCH_CAP
    preemption: str = "auto"
    name = "disaggregated"

    def __post_init__(self) -> None:
        for n in ("prefill_replicas", "decode_replicas", "prefill_batch_cap", "max_batched_tokens", "batch_cap"):
            _whole(f"--{n.replace('_', '-')}", getattr(self, n))
        check_preemption(self.preemption)


def check_preemption(mode: str) -> None:
    if mode not in PREEMPTION:
        raise SpecError(f"--preemption: unknown mode '{mode}'{did_you_mean(mode, PREEMPTION)}; use one of "
                        f"{', '.join(PREEMPTION)}")


@dataclass(frozen=True, kw_only=True)
class ServiceClass:
    """A service tier (SPEC E20: "fast/slow service classes as trains of different size"): its
    requests run on their own pool of ``replicas`` with batch cap ``batch_cap``; ``price_usd_per_mtok``
    (optional, what the tier charges per million output tokens) is compared with its cost."""

    batch_cap: int
    replicas: int = 1
    price_usd_per_mtok: float | None = None

    def __post_init__(self) -> None:
        _whole("class batch_cap", self.batch_cap)
        _whole("class replicas", self.replicas)
        if self.price_usd_per_mtok is not None and not (isinstance(self.price_usd_per_mtok, (int, float))
                                                        and math.isfinite(self.price_usd_per_mtok)
                                                        and self.price_usd_per_mtok >= 0):
            raise SpecError(f"class price_usd_per_mtok: must be a finite number >= 0, got {self.price_usd_per_mtok!r}")


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
        _whole("--prefix-tokens", self.prefix_tokens)
        if self.hit_rate is not None and not (isinstance(self.hit_rate, (int, float)) and 0 <= self.hit_rate <= 1):
            raise SpecError(f"--prefix-hit-rate: must be within [0, 1], got {self.hit_rate!r}")


@dataclass(frozen=True, kw_only=True)
class SLO:
    """Service-level objectives for goodput: a completed request counts if its TTFT and TPOT are
    within these (None = no limit on that metric; DistServe's goodput definition)."""

    ttft_s: float | None = None
    tpot_s: float | None = None

    def __post_init__(self) -> None:
        _time("--slo-ttft", self.ttft_s)
        _time("--slo-tpot", self.tpot_s)


def policy_from_name(name: str, **kw):
    """Build a policy spec from its CLI name and the options that apply to it."""
    table = {"train": Train, "adaptive": Adaptive, "continuous": Continuous, "disaggregated": Disaggregated}
    if name not in table:
        raise SpecError(f"--policy: unknown policy '{name}'{did_you_mean(name, POLICIES)}; use one of "
                        f"{', '.join(POLICIES)}")
    cls = table[name]
    fields = set(cls.__dataclass_fields__)
    return cls(**{k: v for k, v in kw.items() if k in fields and v is not None})


@dataclass(frozen=True, kw_only=True)
class SimConfig:
    """Everything about a run except the deployment and the workload.

    ``replicas`` copies of the deployment share one FCFS queue (M/x/c when batch cap is 1);
    ``classes`` gives each request class its own pool (fast/slow tiers); ``horizon_s`` None means
    the workload's duration (or last arrival); ``hbm_fraction`` of each chip's HBM may hold weights
    and KV; ``max_queue`` rejects arrivals finding that many waiting.
    """

    policy: Train | Adaptive | Continuous | Disaggregated = field(default_factory=Continuous)
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
        if not (isinstance(self.replicas, int) and self.replicas >= 1):
            raise SpecError(f"--replicas: must be a whole number >= 1, got {self.replicas!r}")
        if self.price_per_chip_hour is not None and not (isinstance(self.price_per_chip_hour, (int, float))
                                                         and math.isfinite(self.price_per_chip_hour)
                                                         and self.price_per_chip_hour >= 0):
            raise SpecError(f"--price-per-chip-hour: must be a finite number >= 0, got {self.price_per_chip_hour!r}")
        if self.horizon_s is not None and not (self.horizon_s > 0 and math.isfinite(self.horizon_s)):
            raise SpecError(f"horizon_s: must be a finite time > 0, got {self.horizon_s!r}")
        if not (0 < self.hbm_fraction <= 1):
            raise SpecError(f"--hbm-fraction: must be in (0, 1], got {self.hbm_fraction!r}")
        if self.max_queue is not None and not (isinstance(self.max_queue, int) and self.max_queue >= 0):
            raise SpecError(f"--max-queue: must be a whole number >= 0, got {self.max_queue!r}")
