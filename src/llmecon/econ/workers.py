"""The prefill:decode worker ratio of a disaggregated deployment (issue 22 item 2).

The planner (``econ.planner``) picks the best prefill point (plan, prefill batch) and the best decode point
(plan, batch) on their own. Serving a workload of ``P`` prompt and ``O`` output tokens per request with
``n_p`` prefill and ``n_d`` decode workers:

* a prefill worker serves ``r_p = prefill batch / prefill step`` requests/s (one batch per step, back to
  back); a decode worker ``r_d = decode batch / ((O - 1) · TPOT)`` (the prefill emits the first token, each
  sequence holds its slot for the other O - 1; ``step.disaggregated.prefill_rate`` / ``decode_rate``);
* the decode point may speculate: its latency is then TPOT = iteration / E (``planner``), the slot a
  sequence holds is still (O - 1)·TPOT, as on a disaggregated decode worker that drafts
  (``step.disaggregated``); ``WorkerRatio.decode_point`` says so;
* the system serves ``min(n_p·r_p, n_d·r_d)`` requests/s and pays for every chip of every worker,
  ``n_p·chips_p·price_p + n_d·chips_d·price_d`` per hour, idle or not;
* ``choose_workers`` takes the integer counts up to ``max_workers`` each (at most ``MAX_WORKERS_LIMIT``)
  that minimise the cost per request, hence $/Mtok over the request's ``P + O`` tokens (without prices: chips
  per request/s, i.e. the most requests/s per chip). For a given ``n_p`` the cost per request falls in
  ``n_d`` up to the balance ``n_p·r_p/r_d`` and rises after it, so only its floor and ceiling are tried (a
  search linear in ``max_workers``). Ties (equal within 1e-9) go to the lower cost per unit time (chips x
  price, or chips unpriced), then fewer workers;
* TTFT = the prefill's latency (step + pipeline fill) + the KV transfer of its batch to a decode worker over
  the scale-out network (``step.disaggregated.kv_transfer_s``); TPOT = the decode point's. Neither depends
  on the counts here (no queueing), so the counts only trade idle capacity against cost; ``meets_ttft`` says
  whether the TTFT with the transfer still meets the target the prefill search met without it. A system
  without a scale-out link (in the catalogue: mi300x, mi300x-8, tpu-v4-64, tpu-v6e-256, the tpu-v7 systems,
  ascend-910c and cloudmatrix-384; ``llmecon catalog systems``) leaves the transfer unpriced and says why.

Omitted: queueing and burstiness (a pool at 100% utilisation has unbounded queues in a real system; the
closed-loop model is ``serving.disaggregated``), prefill/decode batches other than the searched points,
workers of fractional size, and the decode context: the decode point is the planner's, evaluated at
``--context``, while ``r_d`` holds a sequence for ``O - 1`` tokens; a ``--context`` far from ``P + (O-1)/2``
(the mean context over a request's decode life) misprices TPOT, hence ``r_d``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..errors import require_number, require_whole

MAX_WORKERS = 16
MAX_WORKERS_LIMIT = 1024  # --max-workers' bound
_TIE = 1e-9


@dataclass(frozen=True, kw_only=True)
class WorkerRatio:
    """Worker counts for one workload and what they give (rates in requests/s; seconds; $ per M tokens)."""

    prefill_workers: int
    decode_workers: int
    prefill_chips_per_worker: int
    decode_chips_per_worker: int
    prefill_requests_per_s: float    # one prefill worker
    decode_requests_per_s: float     # one decode worker
    kv_transfer_s: float | None      # None: a system has no scale-out link (``no_transfer`` says which)
    prefill_latency_s: float
    tpot_s: float
    ttft_target_s: float | None
    usd_per_mtok: float | None       # every chip billed, per token of a request (prompt + output)
    max_workers: int = MAX_WORKERS
    no_transfer: str = ""            # why the KV transfer is not priced ('' when it is)
    decode_point: str = "best"       # "best", or "best (speculates, k=.., E=..)"

    @property
    def chips(self) -> int:
        return (self.prefill_workers * self.prefill_chips_per_worker
                + self.decode_workers * self.decode_chips_per_worker)

    @property
    def ratio(self) -> str:
        return f"{self.prefill_workers}:{self.decode_workers}"

    @property
    def requests_per_s(self) -> float:
        return min(self.prefill_workers * self.prefill_requests_per_s, self.decode_workers * self.decode_requests_per_s)

    @property
    def prefill_utilisation(self) -> float:
        return self.requests_per_s / (self.prefill_workers * self.prefill_requests_per_s)

    @property
    def decode_utilisation(self) -> float:
        return self.requests_per_s / (self.decode_workers * self.decode_requests_per_s)

    @property
    def at_bound(self) -> bool:
        """A count reached ``max_workers`` while the other pool still idles: a larger bound may balance better."""
        return (self.prefill_workers == self.max_workers and self.prefill_utilisation >= self.decode_utilisation
                or self.decode_workers == self.max_workers and self.decode_utilisation >= self.prefill_utilisation) \
            and min(self.prefill_utilisation, self.decode_utilisation) < 1.0 - 1e-9

    @property
    def ttft_s(self) -> float:
        """Prefill latency + KV transfer (the prefill latency alone when the transfer cannot be priced)."""
        return self.prefill_latency_s + (self.kv_transfer_s or 0.0)

    @property
    def meets_ttft(self) -> bool:
        return self.ttft_target_s is None or self.ttft_s <= self.ttft_target_s


def choose_workers(*, prefill_requests_per_s: float, decode_requests_per_s: float, prefill_cost: float,
                   decode_cost: float, max_workers: int = MAX_WORKERS) -> tuple[int, int]:
    """(n_p, n_d) in 1..max_workers minimising ``(n_p·prefill_cost + n_d·decode_cost) / min(n_p·r_p, n_d·r_d)``
    (cost per request; a worker's cost per unit time: chips x price, or chips). For each n_p only the floor and
    ceiling of the balance ``n_p·r_p/r_d`` are tried (module docstring). Ties: lower total cost, then fewer
    workers."""
    require_whole("max_workers", max_workers)
    require_number("max_workers", max_workers, minimum=1, maximum=MAX_WORKERS_LIMIT,
                   hint="workers per pool the search may use")
    for name, v in (("prefill_requests_per_s", prefill_requests_per_s), ("decode_requests_per_s",
                                                                          decode_requests_per_s)):
        require_number(name, v, minimum=0, exclusive=True, hint="requests per second of one worker")
    for name, v in (("prefill_cost", prefill_cost), ("decode_cost", decode_cost)):
        require_number(name, v, minimum=0, hint="cost per unit time of one worker")
    best, key = (1, 1), (math.inf, math.inf, math.inf)
    for n_p in range(1, max_workers + 1):
        balance = n_p * prefill_requests_per_s / decode_requests_per_s
        for n_d in sorted({min(max(math.floor(balance), 1), max_workers), min(max(math.ceil(balance), 1),
                                                                               max_workers)}):
            cost = n_p * prefill_cost + n_d * decode_cost
            rate = min(n_p * prefill_requests_per_s, n_d * decode_requests_per_s)
            per = cost / rate
            k = (per, cost, n_p + n_d)
            if per < key[0] * (1 - _TIE) or (per <= key[0] * (1 + _TIE) and k[1:] < key[1:]):
                best, key = (n_p, n_d), k
    return best


def plan_workers(result, model, systems, options, *, max_workers: int = MAX_WORKERS) -> WorkerRatio | None:
    """The worker ratio of a ``planner.PlanResult``'s best prefill and decode points (module docstring);
    None when either phase has no best point, or with one output token (no decode pool to size)."""
    from ..errors import SpecError
    from ..spec.deployment import Deployment
    from ..step.disaggregated import decode_rate, kv_transfer_s, prefill_rate

    p, d = result.prefill.best, result.decode.best
    if p is None or d is None or result.targets.output_tokens < 2:  # O = 1: the prefill's token is the only one
        return None
    # a speculating decode point prices its pool as it runs (issue 34): its latency is TPOT = iteration / E, so
    # decode_rate's (O - 1)·TPOT is the slot a sequence holds (step.disaggregated, serving.disaggregated)
    why_point = "best" if not d.spec_tokens else f"best (speculates, k={d.spec_tokens}, E={d.tokens_per_step:.3g})"
    by = {s.name: s for s in systems}
    t = result.targets
    deps = [Deployment(model=model, system=by[pt.system], plan=pt.plan, weight_dtype=options.weight_dtype,
                       kv_dtype=options.kv_dtype, profile=options.profile_for(by[pt.system])) for pt in (p, d)]
    try:
        xfer, why = float(kv_transfer_s(deps[0], deps[1], prompt_tokens=t.prompt_tokens, batch=p.batch)), ""
    except SpecError as exc:  # a system without a scale-out link: say so, price the rest
        xfer, why = None, exc.rule
    r_p = float(prefill_rate(p.batch, p.step_s))
    r_d = float(decode_rate(d.batch, t.output_tokens, d.latency_s))
    prices = [result.prices.get(pt.system) for pt in (p, d)]
    priced = all(v is not None for v in prices)
    # a worker's cost per unit time: chips x price; unpriced (or all free): chips, i.e. requests/s per chip
    weights = [pt.plan.chips * (v if priced and any(prices) else 1.0) for pt, v in zip((p, d), prices)]
    n_p, n_d = choose_workers(prefill_requests_per_s=r_p, decode_requests_per_s=r_d, prefill_cost=weights[0],
                              decode_cost=weights[1], max_workers=max_workers)
    usd = None
    if priced:
        per_s = (n_p * p.plan.chips * prices[0] + n_d * d.plan.chips * prices[1]) / 3600.0
        usd = per_s / (min(n_p * r_p, n_d * r_d) * (t.prompt_tokens + t.output_tokens)) * 1e6
    return WorkerRatio(prefill_workers=n_p, decode_workers=n_d, prefill_chips_per_worker=p.plan.chips,
                       decode_chips_per_worker=d.plan.chips, prefill_requests_per_s=r_p, decode_requests_per_s=r_d,
                       kv_transfer_s=xfer, prefill_latency_s=p.latency_s, tpot_s=d.latency_s,
                       ttft_target_s=t.ttft_s, usd_per_mtok=usd, max_workers=max_workers, no_transfer=why,
                       decode_point=why_point)
