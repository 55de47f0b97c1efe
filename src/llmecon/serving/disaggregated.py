"""Closed-loop steady state of disaggregated serving: ``C`` clients against ``W_p`` prefill workers and
``W_d`` decode workers (the disaggregated twin of ``serving.steady_state``; one request's path is
``step.disaggregated``).

1. **Decode batch.** The ``C`` requests in flight spread evenly over the decode workers; a worker holding
   any runs at least one: ``B_d = max(C / W_d, 1)``, capped at the sequences whose KV fits beside the
   weights (``steady_state.kv_capacity`` at ``kv_tokens_held``, as for an aggregated replica).
2. **TPOT** = the decode worker's step at ``B_d`` and the mean context ``P + (O-1)/2``, plus the profile's
   serving-loop ``iteration_overhead_s`` (0 in ideal mode). No prefill stalls: prompts run elsewhere.
3. **Prefill batch.** Requests arrive at rate ``λ`` (Little's law over the running requests, ``λ = n /
   (TTFT_run + (O-1)·TPOT)``), ``λ / W_p`` at each prefill worker, which prefills the prompts that arrived
   during its previous step together: ``x = max(1, λ/W_p · T_p(x))``; solved with ``λ`` by fixed-point
   iteration (as ``steady_state``).
4. **TTFT** = ``a · prefill latency(x)`` (the step plus the pipeline fill; ``a`` = the prefill profile's
   ``ttft_prefill_factor``, 1 in ideal mode) + the KV transfer of the ``x`` prompts
   (``step.disaggregated.kv_transfer_s``) + the prefill profile's ``request_overhead_s`` (0 in ideal mode)
   + queueing of the requests beyond the decode workers' KV capacity, ``(C - n)/λ``.

The calibrated terms (``iteration_overhead_s``, ``ttft_prefill_factor``, ``request_overhead_s``) are the
profiles' as fitted on aggregated serving rows and are applied unchanged: disaggregated rows are out of
sample for them. Omitted beyond ``step.disaggregated``: the uneven spread of requests over workers (a
router balances by load; the mean stands in), the prefill workers' own KV limit, and clients that start
together (``steady_state``'s note on bursts).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..catalog.efficiency import resolve
from ..errors import SpecError, require_whole
from ..spec.deployment import Deployment
from ..step.disaggregated import disaggregated_of
from ..step.inference import StepResult
from .steady_state import ITERATIONS, kv_capacity, kv_tokens_held


@dataclass(frozen=True, kw_only=True)
class DisaggregatedState:
    """Steady state of disaggregated serving (arrays broadcast over the inputs; NaN where nothing fits)."""

    concurrency: object
    prefill_workers: int
    decode_workers: int
    prefill_batch: object        # prompts per prefill step of one prefill worker
    decode_batch: object         # sequences per decode step of one decode worker
    kv_limited: object
    decode: StepResult           # the decode worker's step
    prefill_s: object            # the prefill's latency (step + pipeline fill)
    kv_transfer_s: object
    tpot_s: object
    ttft_s: object
    queue_s: object
    requests_per_s: object       # the whole system's
    output_tokens: object

    @property
    def output_tokens_per_s(self):
        return np.asarray(self.requests_per_s) * np.asarray(self.output_tokens)


def disaggregated_state(prefill: Deployment, decode: Deployment, *, concurrency, prompt_tokens, output_tokens,
                        prefill_workers: int = 1, decode_workers: int = 1) -> DisaggregatedState:
    """Mean TPOT and TTFT of ``concurrency`` closed-loop clients (module docstring)."""
    wp, wd = require_whole("prefill_workers", prefill_workers), require_whole("decode_workers", decode_workers)
    c, p, o = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (concurrency, prompt_tokens, output_tokens)))
    if np.any(c < 1) or np.any(p < 1) or np.any(o < 2) or not np.all(np.isfinite(c + p + o)):
        raise SpecError("serving: needs concurrency >= 1, prompt_tokens >= 1 and output_tokens >= 2 "
                        "(TPOT is measured after the first token)")
    if decode.speculation is not None:
        raise SpecError("speculative decoding is not modelled on a disaggregated decode worker", field="spec_tokens",
                        value=decode.speculation.k, fix="drop it, or serve aggregated")
    prof_p = resolve(prefill.mode, prefill.profile, prefill.system.accelerator)
    prof_d = resolve(decode.mode, decode.profile, decode.system.accelerator)
    cap = kv_capacity(decode, kv_tokens_held(prof_d, p, o))
    b = np.minimum(np.maximum(c / wd, 1.0), cap)
    ok = b >= 1
    b_safe = np.where(ok, b, 1.0)
    running = np.minimum(c, wd * b_safe)
    def path(x):
        """One request's path when each prefill step takes x prompts (``step.disaggregated``)."""
        return disaggregated_of(prefill, decode, prefill_batch=x, decode_batch=b_safe, prompt_tokens=p,
                                output_tokens=o)

    s = path(np.ones_like(c))
    dec = s.decode
    tpot = np.asarray(s.tpot_s, dtype=float) + prof_d.iteration_overhead_s

    def first_token(x):
        """(TTFT in the system, prefill latency, KV transfer, prefill step) at x prompts per prefill step."""
        r = path(x)
        lat = np.asarray(r.prefill.latency_s, dtype=float)
        xfer = np.asarray(r.kv_transfer_s, dtype=float)
        return prof_p.ttft_prefill_factor * lat + xfer, lat, xfer, np.asarray(r.prefill.step_s, dtype=float)

    x = np.ones_like(tpot)
    for _ in range(ITERATIONS):
        ttft_run, _, _, t_p = first_token(x)
        rate = running / (ttft_run + (o - 1) * tpot)
        x = np.maximum(1.0, rate / wp * t_p)
    ttft_run, lat, xfer, _ = first_token(x)
    rate = running / (ttft_run + (o - 1) * tpot)
    queue = np.maximum(c - running, 0.0) / rate
    nan = np.where(ok, 1.0, np.nan)
    return DisaggregatedState(concurrency=c, prefill_workers=wp, decode_workers=wd, prefill_batch=x * nan,
                              decode_batch=np.where(ok, b, 0.0), kv_limited=c > wd * cap, decode=dec,
                              prefill_s=lat * nan, kv_transfer_s=xfer * nan, tpot_s=tpot * nan,
                              ttft_s=(ttft_run + prof_p.request_overhead_s + queue) * nan, queue_s=queue * nan,
                              requests_per_s=rate * nan, output_tokens=o)
