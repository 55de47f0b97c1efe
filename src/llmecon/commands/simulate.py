"""The ``simulate`` command: the serving simulator (SPEC E20) on a synthetic workload or a replayed trace.
Every input is checked, and the run's memory estimated against ``max_memory``, before it starts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from .args import DeploymentArgs, arg, price_arg, tco_arg

#: the synthetic workload's options that keep a default with a trace (a trace gives arrivals and lengths)
SYNTHETIC_DEFAULTS = {"rate": 10.0, "arrival": "poisson"}
#: requests x output tokens of one web simulation: keeps a request near a second in the worst case
#: (measured 2026-11-22: 2,000 requests x 1,000 output tokens at batch cap 1, i.e. 2e6 decode
#: iterations, simulated in 0.9 s on one core of the 2-core CI machine).
SIMULATED_TOKENS_MAX = 2_000_000


@dataclass(frozen=True)
class SimulateRequest(DeploymentArgs):
    rate: float = arg(10.0, "Mean arrival rate, requests per second.", bounds={"gt": 0, "le": 1e5},
                      web_help="Arrivals per second.")
    duration: Optional[float] = arg(None, "Seconds of arrivals (default 60); the run ends then (in-flight requests "
                                    "are reported).", web=False)
    requests: Optional[int] = arg(None, "Number of requests instead of --duration (the run ends at the last arrival "
                                  "unless --drain).", bounds={"ge": 1, "le": 20000}, web_default=1000,
                                  kind="count", web_help="Number of requests.")
    arrival: str = arg("poisson", "Arrival process: poisson, gamma (bursty, see --cv) or constant.", web=False)
    cv: Optional[float] = arg(None, "Coefficient of variation of gamma inter-arrival times (>1 bursty; default 1).",
                              web=False)
    prompt: Any = arg(None, "Prompt tokens: N, uniform:LO:HI or lognormal:MEDIAN:SIGMA[:LO:HI] (default 1024).",
                      kind="lengths", web_name="prompt_tokens", bounds={"ge": 1, "le": 1_000_000}, web_default=1024,
                      web_help="Prompt tokens of every request.")
    output: Any = arg(None, "Output tokens (first token included), same forms as --prompt (default 256).",
                      kind="lengths", web_name="output_tokens", bounds={"ge": 1, "le": 100_000}, web_default=256,
                      web_help="Output tokens of every request (first token included).")
    trace: Optional[str] = arg(None, "Replay a CSV/JSONL trace (arrival_s, prompt_tokens, output_tokens, [class], "
                               "[prefix_id]) instead of a synthetic workload.", web=False)
    time_scale: Optional[float] = arg(None, "Replay the trace this many times faster (default 1).", web=False)
    policy: str = arg("continuous", "train, adaptive, continuous or disaggregated.", kind="policy",
                      web_help="train, adaptive or continuous.")
    batch_cap: Optional[int] = arg(None, "Most sequences in a batch (default 256, vLLM's max_num_seqs).",
                                   bounds={"ge": 1, "le": 4096})
    tau: Optional[float] = arg(None, "train: seconds between departures (default: the decode step at a full "
                               "batch).", web=False)
    deadline: Optional[float] = arg(None, "adaptive: longest wait before a batch leaves not full, seconds.",
                                    web=False)
    chunk_tokens: Optional[int] = arg(None, "continuous: chunked prefill with this token budget per iteration.",
                                      web=False)
    max_batched_tokens: Optional[int] = arg(None, "Most prompt tokens in one prefill iteration.", web=False)
    preemption: Optional[str] = arg(None, "When KV runs out: auto, recompute or swap.", web=False)
    replicas: int = arg(1, "Replicas of the deployment sharing one queue.", web=False)
    prefill_replicas: Optional[int] = arg(None, "disaggregated: prefill replicas.", web=False)
    decode_replicas: Optional[int] = arg(None, "disaggregated: decode replicas.", web=False)
    service_class: Any = arg((), "NAME=BATCH_CAP[:REPLICAS[:USD_PER_MTOK]]: a service tier on its own pool "
                               "(repeatable).", flags=("--class",), kind="repeated", web=False)
    class_mix: Any = arg((), "NAME=SHARE of synthetic requests in a class (repeatable).", kind="repeated",
                           web=False)
    prefix_tokens: Optional[int] = arg(None, "Prefix caching: tokens a hit skips.", web=False)
    prefix_hit_rate: Optional[float] = arg(None, "Prefix caching: share of requests that hit (else the trace's "
                                           "prefix_id).", web=False)
    slo_ttft: Optional[float] = arg(None, "Goodput SLO on time to first token, seconds.", web=False)
    slo_tpot: Optional[float] = arg(None, "Goodput SLO on time per output token, seconds.", web=False)
    price_per_chip_hour: Optional[float] = price_arg("Rent of one accelerator, USD per hour (for $/Mtok).")
    tco: Any = tco_arg()
    hbm_fraction: float = arg(1.0, "Share of each chip's HBM for weights + KV.", web=False)
    max_queue: Optional[int] = arg(None, "Reject arrivals that find this many waiting.", web=False)
    drain: bool = arg(False, "Run until every admitted request finishes.", web=False)
    seed: int = arg(0, "Random seed (workload and prefix hits).", bounds={"ge": 0, "le": 2**31 - 1})
    max_memory: Any = arg("4GB", "Refuse a run estimated to need more memory than this (e.g. 16GB); the estimate is "
                          "in the error.", web=False, web_default=1e9)  # the web's: a server is shared


@dataclass(frozen=True)
class SimulateOutcome:
    deployment: Any
    workload: Any
    config: Any  # serving.SimConfig
    result: Any  # serving.SimResult
    rate: Any  # the TcoRate the price came from, or None

    def to_dict(self) -> dict:
        from ..report.serving import simulation_dict

        return simulation_dict(self.deployment, self.workload, self.result, self.rate)


def _classes(items) -> dict | None:
    """service_class NAME=CAP[:REPLICAS[:USD_PER_MTOK]] -> {name: ServiceClass}."""
    from ..errors import SpecError
    from ..serving import ServiceClass

    out = {}
    for name, value in _pairs(items, "--class", "fast=16:1:12"):
        parts = value.split(":")
        try:
            cap = int(parts[0])
            reps = int(parts[1]) if len(parts) > 1 and parts[1] else 1
            price = float(parts[2]) if len(parts) > 2 and parts[2] else None
        except ValueError:
            raise SpecError(f"--class {name}={value}: expected BATCH_CAP[:REPLICAS[:USD_PER_MTOK]], "
                            "e.g. fast=16:1:12") from None
        if len(parts) > 3:
            raise SpecError(f"--class {name}={value}: expected BATCH_CAP[:REPLICAS[:USD_PER_MTOK]]")
        if name in out:
            raise SpecError(f"--class {name}: given twice; give each class once")
        out[name] = ServiceClass(batch_cap=cap, replicas=reps, price_usd_per_mtok=price)
    return out or None


def _pairs(items, flag: str, example: str) -> list[tuple[str, str]]:
    from ..errors import SpecError

    out = []
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip() or not value.strip():
            raise SpecError(f"{flag} {item!r}: expected NAME=VALUE, e.g. {flag} {example}")
        out.append((name.strip(), value.strip()))
    return out


def _mix(items) -> dict[str, float] | None:
    from ..errors import SpecError

    if not items:
        return None
    out = {}
    for name, value in _pairs(items, "--class-mix", "fast=0.2"):
        try:
            out[name] = float(value)
        except ValueError:
            raise SpecError(f"--class-mix {name}={value}: the share must be a number, e.g. fast=0.2") from None
    return out


def _config(req: SimulateRequest):
    """(``SimConfig``: policy, price, replicas, classes, prefix cache, SLO, HBM share, queue; the TcoRate)."""
    from ..errors import SpecError, require_number
    from ..serving import SLO, PrefixCache, SimConfig
    from ..serving.policies import policy_from_name
    from .pricing import priced

    pol = policy_from_name(req.policy, batch_cap=req.batch_cap, tau_s=req.tau, deadline_s=req.deadline,
                           chunk_tokens=req.chunk_tokens, max_batched_tokens=req.max_batched_tokens,
                           preemption=req.preemption, prefill_replicas=req.prefill_replicas,
                           decode_replicas=req.decode_replicas)
    prices, rates = priced(req, [req.system])
    classes = _classes(req.service_class)
    prefix = None
    if req.prefix_tokens is not None or req.prefix_hit_rate is not None:
        if req.prefix_tokens is None:
            raise SpecError("--prefix-hit-rate needs --prefix-tokens (how many prompt tokens a hit skips)")
        prefix = PrefixCache(prefix_tokens=req.prefix_tokens, hit_rate=req.prefix_hit_rate)
    cfg = SimConfig(policy=pol, replicas=req.replicas, classes=classes, prefix_cache=prefix,
                    slo=SLO(ttft_s=req.slo_ttft, tpot_s=req.slo_tpot),
                    price_per_chip_hour=next(iter(prices.values()), None),
                    hbm_fraction=require_number("hbm_fraction", req.hbm_fraction, minimum=0, exclusive=True,
                                                maximum=1),
                    max_queue=req.max_queue, drain=req.drain, seed=req.seed)
    return cfg, next(iter(rates.values()), None)


def _synthetic_checks(req: SimulateRequest, limit: float, n_replicas: int, slots: int) -> float | None:
    """The synthetic workload's options checked, its memory estimated; the duration it runs for."""
    from ..errors import SpecError, require_number, require_whole
    from ..serving.budget import expected_requests, require_memory, simulation_bytes

    if req.time_scale is not None:
        raise SpecError("applies to a replayed trace only", field="time_scale", fix="drop it, or give {trace}")
    if req.requests is not None and req.duration is not None:
        raise SpecError("give one of {duration} (seconds of arrivals) or {requests} (a count), not both",
                        field="duration", value=req.duration, show_value=False, fix="drop one")
    if req.requests is not None:
        require_whole("requests", req.requests, minimum=1)
    if req.cv is not None and req.arrival != "gamma":
        raise SpecError(f"applies to --arrival gamma only, not {req.arrival}", field="cv",
                        fix="drop it, or use {arrival} gamma")
    duration = 60.0 if req.requests is None and req.duration is None else req.duration
    n = expected_requests(rate_per_s=require_number("rate", req.rate, minimum=0, exclusive=True),
                          duration_s=duration, requests=req.requests)
    require_memory(simulation_bytes(requests=n, replicas=n_replicas, batch_slots=slots), limit,
                   what=f"{n:,.0f} requests at ~3.2 kB each, {n_replicas:,} replicas, {slots:,} batch slots",
                   fix="lower {rate}, {duration} or {requests}, the replicas or the batch caps")
    return duration


def _lengths(value, default: str, field: str):
    from ..serving.workload import parse_lengths

    return parse_lengths(default if value is None else str(value), field=field)


def _workload(req: SimulateRequest, limit: float, n_replicas: int, slots: int):
    """The workload: the trace replayed (a synthetic option beside it refused) or a synthetic one."""
    from ..errors import SpecError
    from ..serving.budget import require_memory, simulation_bytes
    from ..serving.workload import load_trace, synthetic

    if req.trace:
        require_memory(simulation_bytes(requests=0, replicas=n_replicas, batch_slots=slots), limit,
                       what=f"{n_replicas:,} replicas, {slots:,} batch slots", fix="lower the replicas or batch caps")
        wl = load_trace(req.trace, time_scale=1.0 if req.time_scale is None else req.time_scale,
                        max_memory_bytes=limit)
        for name in ("rate", "duration", "requests", "arrival", "cv", "prompt", "output", "class_mix"):
            value = getattr(req, name)
            value = (value or None) if name == "class_mix" else value
            if value is not None and not (name in SYNTHETIC_DEFAULTS and value == SYNTHETIC_DEFAULTS[name]):
                raise SpecError("describes a synthetic workload; the trace gives arrivals and lengths",
                                field=name, fix="drop it, or drop {trace}")
        return wl
    duration = _synthetic_checks(req, limit, n_replicas, slots)
    return synthetic(rate_per_s=req.rate, prompt=_lengths(req.prompt, "1024", "prompt"),
                     output=_lengths(req.output, "256", "output"), seed=req.seed, n=req.requests,
                     duration_s=None if req.requests is not None else duration, arrival=req.arrival,
                     cv=1.0 if req.cv is None else req.cv, classes=_mix(req.class_mix))


def simulate(req: SimulateRequest, *, run=None) -> SimulateOutcome:
    """Check everything, estimate the run's memory, then simulate (``serving.simulate``; ``run(dep, wl, cfg)``
    in its place: the CLI's, with a progress bar)."""
    from ..errors import require_number
    from ..serving import simulate as simulate_serving
    from ..serving.budget import pool_sizes, require_memory, simulation_bytes
    from ..units import parse

    limit = req.max_memory if not isinstance(req.max_memory, str) else parse(req.max_memory, "bytes",
                                                                             field="--max-memory")
    limit = require_number("max_memory", limit, minimum=0, exclusive=True, hint="e.g. --max-memory 16GB")
    cfg, rate = _config(req)
    n_replicas, slots = pool_sizes(cfg)
    wl = _workload(req, limit, n_replicas, slots)
    dep = req.deployment()
    wl.require_within_context(dep.model.max_context, model_name=dep.model.name)  # before sizing tables by it
    longest = int((wl.prompt_tokens + wl.output_tokens).max()) if wl.n else 0
    require_memory(simulation_bytes(requests=wl.n, longest_tokens=longest, replicas=n_replicas, batch_slots=slots),
                   limit, what=f"{wl.n:,} requests at ~3.2 kB each, tables over the longest request of {longest:,} "
                   "tokens at ~0.5 kB per token", fix="shorten the run or the requests")
    res = (run or simulate_serving)(dep, wl, cfg)
    return SimulateOutcome(dep, wl, cfg, res, rate)
