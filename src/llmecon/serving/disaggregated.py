"""Closed-loop steady state of disaggregated serving: ``C`` clients against ``W_p`` prefill workers and
``W_d`` decode workers (the disaggregated twin of ``serving.steady_state``; one request's path is
``step.disaggregated``). A request's cycle is its time to first token (prefill worker, KV transfer) then
``O - 1`` decode steps (the prefill emits the first token); clients in prefill or in transfer hold no
decode slot.

1. **Arrival rate** (Little's law over the closed loop): ``λ = C / (TTFT_run + (O-1)·TPOT)``.
2. **Decode batch** (Little's law at a decode worker): a sequence holds its slot for ``(O-1)·TPOT``, so a
   worker holds ``B_d = λ/W_d · (O-1) · TPOT(B_d)`` sequences on average, capped at ``B_kv``, the sequences
   whose KV fits beside the weights (``steady_state.kv_capacity`` at ``kv_tokens_held``). A busy worker
   runs at least one sequence: ``TPOT = decode step at max(B_d, 1)`` at the mean context ``P + (O-1)/2``,
   plus the profile's serving-loop ``iteration_overhead_s`` (0 in ideal mode); no prefill stalls. With
   speculative decoding on the decode worker (``decode.speculation``) the step is the speculative iteration
   (verify + drafts, ``step.speculative``) and ``TPOT = (iteration + overhead) / E``, as in
   ``steady_state`` step 6; a sequence still holds its slot for ``(O-1)·TPOT``.
3. **KV queue.** When ``B_d`` would exceed ``B_kv`` the decode pool runs ``λ = W_d·B_kv / ((O-1)·TPOT)``
   and the rest of the ``C`` clients queue before admission: ``queue = C/λ - TTFT_run - (O-1)·TPOT``
   (Little's law again), added to TTFT.
4. **Prefill batch.** ``λ / W_p`` prompts per second reach each prefill worker, which prefills those that
   arrived during its previous step together: ``x = max(1, λ/W_p · T_p(x))``.
5. **TTFT_run** = the wait for the prefill step in progress + ``a · prefill latency(x)`` (the step plus the
   pipeline fill; ``a`` = the prefill profile's ``ttft_prefill_factor``, 1 in ideal mode) + the KV transfer
   of the ``x`` prompts (``step.disaggregated.kv_transfer_s``). The wait is the mean residual service of a
   busy deterministic server, ``E[S²]/(2·E[S]) = T_p/2`` (M/G/1 residual life; Kleinrock, Queueing Systems
   vol. 1, sec. 5.2), times the chance an arrival finds the worker busy: its utilisation ``ρ = min(1,
   λ/W_p · T_p(x)/x)`` as seen by one of ``C`` closed-loop clients, which never meets its own request (the
   arrival theorem, Reiser & Lavenberg 1980, in Schweitzer's approximation: ``ρ·(C-1)/C``). So
   ``wait = ρ·(C-1)/C · T_p(x)/2``: 0 for one client, about half a step for a saturated worker (``x > 1``).
   Prompts that arrive during a step all join the next one, so there is no queue beyond the residual. (The
   aggregated ``steady_state`` charges a whole iteration: a closed-loop newcomer there arrives at an
   iteration boundary, when its predecessor finishes; here it arrives when a decode worker finishes, at
   any point of a prefill step.)
6. **TTFT** = ``TTFT_run`` + the KV queue + the prefill profile's ``request_overhead_s`` (0 in ideal mode;
   outside the loop's λ, as in ``steady_state``).

Steps 1-5 are one fixed point in ``(x, B_d)``, solved by iteration (as ``steady_state``). The calibrated
terms (``iteration_overhead_s``, ``ttft_prefill_factor``, ``request_overhead_s``) are the profiles' as fitted
on aggregated serving rows and are applied unchanged: disaggregated rows are out of sample for them.
Nothing is priced where a worker does not fit: the decode worker's KV capacity below one sequence, or the
prefill step at its batch over the chip's HBM (``prefill_fits`` False; NaN outputs). Omitted beyond
``step.disaggregated``: the uneven spread of requests over workers (a router balances by load; the mean
stands in), the prefill workers' own KV limit beyond the step's memory, and clients that start together
(``steady_state``'s note on bursts).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import SpecError, require_whole
from ..spec.deployment import Deployment
from ..step.disaggregated import disaggregated_of
from ..step.inference import StepResult
from .steady_state import kv_capacity, kv_tokens_held

ITERATIONS = 80  # fixed-point steps on (x, B_d) (tests check the converged point satisfies Little's law)


@dataclass(frozen=True, kw_only=True)
class DisaggregatedState:
    """Steady state of disaggregated serving (arrays broadcast over the inputs; NaN where nothing fits)."""

    concurrency: object
    prefill_workers: int
    decode_workers: int
    prefill_batch: object        # prompts per prefill step of one prefill worker
    decode_batch: object         # mean sequences in one decode worker (Little's law; 0 where nothing fits)
    kv_limited: object
    prefill_fits: object         # the prefill step at its batch fits the prefill worker's HBM
    decode: StepResult           # the decode worker's step
    prefill_s: object            # the prefill's latency (step + pipeline fill)
    prefill_wait_s: object       # mean wait for the prefill step in progress
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
    prof_p, prof_d = prefill.profile, decode.profile  # resolved once, with each Deployment
    cap = kv_capacity(decode, kv_tokens_held(prof_d, p, o))
    ok = cap >= 1
    cap_safe = np.where(ok, cap, 1.0)

    def loop(x, b, rate):
        """One pass of the fixed point (module docstring, steps 1-5) at prefill batch x, decode batch b and the
        previous pass's arrival rate (for the prefill worker's utilisation)."""
        r = disaggregated_of(prefill, decode, prefill_batch=x, decode_batch=np.maximum(b, 1.0), prompt_tokens=p,
                             output_tokens=o)
        t_p = np.asarray(r.prefill.step_s, dtype=float)
        tpot = (np.asarray(r.iteration_s, dtype=float) + prof_d.iteration_overhead_s) / r.tokens_per_step
        lat = np.asarray(r.prefill.latency_s, dtype=float)
        xfer = np.asarray(r.kv_transfer_s, dtype=float)
        wait = np.minimum(1.0, rate / wp * t_p / x) * (c - 1) / c * t_p / 2.0  # ρ·(C-1)/C·T_p/2 (step 5)
        ttft_run = wait + prof_p.ttft_prefill_factor * lat + xfer
        free = c / (ttft_run + (o - 1) * tpot)  # λ with every client in the loop (step 1)
        limited = free / wd * (o - 1) * tpot > cap_safe
        rate = np.where(limited, wd * cap_safe / ((o - 1) * tpot), free)  # step 3
        return r, rate, tpot, lat, xfer, t_p, wait, ttft_run, limited

    x, rate = np.ones_like(c), np.zeros_like(c)
    b = np.minimum(np.maximum(c / wd, 1.0), cap_safe)
    for _ in range(ITERATIONS):
        _, rate, tpot, _, _, t_p, _, _, _ = loop(x, b, rate)
        x = np.maximum(1.0, rate / wp * t_p)
        b = np.minimum(rate / wd * (o - 1) * tpot, cap_safe)
    r, rate, tpot, lat, xfer, t_p, wait, ttft_run, limited = loop(x, b, rate)
    queue = np.maximum(c / rate - ttft_run - (o - 1) * tpot, 0.0)
    b = np.where(limited, cap_safe, np.minimum(rate / wd * (o - 1) * tpot, cap_safe))
    fits = np.asarray(r.prefill.fits, dtype=bool)
    nan = np.where(ok & fits, 1.0, np.nan)
    return DisaggregatedState(concurrency=c, prefill_workers=wp, decode_workers=wd, prefill_batch=x * nan,
                              decode_batch=np.where(ok & fits, b, 0.0), kv_limited=ok & limited, prefill_fits=fits,
                              decode=r.decode, prefill_s=lat * nan, prefill_wait_s=wait * nan,
                              kv_transfer_s=xfer * nan, tpot_s=tpot * nan,
                              ttft_s=(ttft_run + prof_p.request_overhead_s + queue) * nan, queue_s=queue * nan,
                              requests_per_s=rate * nan, output_tokens=o)
