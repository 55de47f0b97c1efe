"""Steady-state TPOT and TTFT of a closed-loop serving benchmark with in-flight batching (SPEC E20).

A benchmark client keeps ``C`` requests in flight, each of ``P`` prompt and ``O`` output tokens;
the engine batches every running request's decode step and mixes newcomers' prefills in. What
the client measures is not one decode step:

1. **Effective batch.** Only ``B = min(C, B_kv)`` requests run, where ``B_kv`` sequences fit in
   HBM beside the weights (``batching``); the other ``C - B`` queue. How many tokens a running
   sequence holds depends on how the engine admits it (``kv_tokens_held``): an engine that pages
   KV on demand (vLLM, SGLang: blocks allocated as tokens are written, admission against the
   blocks in use) holds on average ``P + (O-1)/2`` per sequence in the steady state (running
   requests are spread uniformly over their decode lives); one that reserves a request's whole
   budget at admission (TensorRT-LLM's default GUARANTEED_NO_EVICT capacity scheduler) ``P + O``.
   Ideal mode takes the mean (the larger capacity, as a lower bound must); a profile of no named
   engine the reservation.
2. **Decode iteration.** ``T_it = decode_step(B, context = P + (O-1)/2) + iteration_overhead``
   (mean context over a request's decode life; the profile's serving-loop overhead).
3. **Prefill stalls.** Each iteration also carries the prefills of the requests that arrived
   during the previous one: ``x = λ·TPOT`` arrivals per iteration, prefilled together (one
   batched prefill step ``P_x`` of max(x, 1) prompts, weights read once), so
   ``TPOT = T_it + s·min(x, 1)·P_x`` (``s`` = ``prefill_stall_factor``).
4. **Little's law** closes the loop: ``λ = B / (TTFT_run + (O-1)·TPOT)``, so
   ``x = B / ((O-1) + TTFT_run/TPOT)``; solved by fixed-point iteration.
5. **TTFT** = the iteration the prompt joins (the scheduler's wait: in a closed loop a replacement
   request arrives when its predecessor finishes, at an iteration boundary) + the prefill it waits
   for, ``T_it + a·((1-q)·P_x + q·(B+1)/(2B)·P_B)`` + queueing. ``a`` = ``ttft_prefill_factor`` (a
   multiplier fitted per engine). ``q`` = ``prefill_cohort_share`` (0 in every shipped profile: fitted per
   engine in place of ``a`` it priced held-out TTFT worse, docs/engines.md): the share of
   requests that arrive in step with the other B running ones. A benchmark whose requests all have
   the same output length keeps its clients in step (they finish in the same iteration and return
   together), so a newcomer waits for the cohort's prompts ahead of it: prefilled one after another
   as they reach the scheduler, the i-th of B is done at i/B of the cohort's prefill ``P_B`` (one
   prefill of B prompts), (B+1)/(2B)·P_B on average. The engines' prefill token budgets (vLLM
   ``max_num_batched_tokens``, SGLang ``chunked_prefill_size``, TensorRT-LLM ``max_num_tokens``)
   would let a cohort of 8 prompts of 1,024 tokens run as one batch (every prompt then waits
   ``P_B``): NVIDIA's silicon rows measure 0.57·P_8 at concurrency 8 (median, TensorRT-LLM and vLLM,
   kernel-only P_8, 2026-11-28: docs/engines.md), the one-after-another figure
   (0.5625), not the one-batch one (1). ``q`` = 0 is a request arriving alone (``P_x``: the prompts of
   the iteration it joins). Then queueing: the ``C - B`` waiting requests leave at rate λ, so a
   newcomer waits ``(C - B)/λ``; plus the profile's ``request_overhead_s`` once per request
   (admission, tokenisation, first-token return; 0 in ideal mode). It is not in the loop's λ:
   it overlaps other requests' iterations.
6. **Speculative decoding** (``dep.speculation``, MTP or a draft model: ``step.speculative``): an
   iteration is the verify step over k+1 tokens plus the k draft passes at the same B and
   context, and emits E tokens per running sequence, so ``TPOT = (T_it + s·min(x, 1)·P_x)/E``
   and the arrivals per iteration are ``x = λ·E·TPOT = B·E / ((O-1) + TTFT_run/TPOT)``; TTFT's
   iteration is the speculative one. E = 1 (no speculation) is steps 2-5 unchanged.

With the ideal profile (s = a = 1, no overheads) this is the roofline of the same work the
simulator does (checked against ``simulate`` at the same arrival rate in tests). Calibrated
profiles fit ``iteration_overhead_s``, ``prefill_stall_factor`` and ``ttft_prefill_factor`` to
end-to-end measurements (``llmecon calibrate``). The model is prefill-first scheduling (whole
prompts in the iteration after they arrive). Omitted: chunked prefill that prices a prompt chunk
and the decodes as one roofline iteration, hiding prefill compute under the decode weight reads
(the simulator's chunked policy gives ~0.7x this TPOT), requests waiting for their first token
still counted in the decode batch (~1%), preemption, the spread of contexts inside the batch
(the mean context stands in), prefix caching, and client/HTTP time, and
clients that start together and stay in step (a burst of C prompts prefilled back to back: the
measured TTFT of NVIDIA's silicon rows grows about linearly in C, which this flat TTFT misses;
docs/calibration.md).
Closed-loop TPOT is not monotone in component speeds: a slower TTFT lowers the arrival rate
and with it the prefill stalls, so calibrated TPOT can fall below ideal TPOT when prefill
dominates (step times themselves never do).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..spec.deployment import Deployment
from ..errors import SpecError
from ..step.inference import decode_of, prefill_of

ITERATIONS = 40  # fixed-point steps on x (tests check the converged point is a fixed point)


@dataclass(frozen=True, kw_only=True)
class SteadyState:
    """Closed-loop steady state (arrays broadcast over the inputs). NaN where nothing fits."""

    concurrency: object
    prompt_tokens: object
    output_tokens: object
    effective_batch: object
    kv_limited: object
    decode_step_s: object
    iteration_s: object
    prefill_s: object
    tpot_s: object
    ttft_s: object
    queue_s: object
    requests_per_s: object

    @property
    def output_tokens_per_s(self):
        return np.asarray(self.requests_per_s) * np.asarray(self.output_tokens)


def kv_capacity(dep: Deployment, context) -> np.ndarray:
    """Sequences at ``context`` tokens whose KV fits beside the weights on every chip (floor)."""
    free = dep.system.accelerator.hbm_bytes - dep.weights_per_chip_bytes
    per_seq = np.asarray(dep.kv_per_sequence_per_chip_bytes(np.asarray(context, dtype=float)), dtype=float)
    return np.floor(np.maximum(free, 0.0) / per_seq)


ON_DEMAND_ENGINES = ("vllm", "sglang")
"""Engines that page KV on demand (vLLM PagedAttention, Kwon et al. 2023, sec. 4; SGLang's token
pool); TensorRT-LLM reserves the request's maximum at admission by default."""


def kv_tokens_held(profile, prompt_tokens, output_tokens):
    """Mean KV tokens a running sequence holds in the steady state (step 1 of the module docstring):
    ``P + (O-1)/2`` where KV is paged on demand (ideal mode too: the lower bound), else ``P + O``."""
    p, o = np.asarray(prompt_tokens, dtype=float), np.asarray(output_tokens, dtype=float)
    on_demand = profile.is_ideal or profile.engine in ON_DEMAND_ENGINES
    return p + (o - 1.0) / 2.0 if on_demand else p + o


def steady_state(dep: Deployment, *, concurrency, prompt_tokens, output_tokens) -> SteadyState:
    """Mean TPOT and TTFT of ``concurrency`` closed-loop clients (see the module docstring).

    All three inputs broadcast as numpy arrays; ``output_tokens`` >= 2 (TPOT is measured over
    the tokens after the first)."""
    c, p, o = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (concurrency, prompt_tokens, output_tokens)))
    if np.any(c < 1) or np.any(p < 1) or np.any(o < 2) or not np.all(np.isfinite(c + p + o)):
        raise SpecError("serving: needs concurrency >= 1, prompt_tokens >= 1 and output_tokens >= 2 "
                        "(TPOT is measured after the first token)")
    prof = dep.profile  # resolved once, with the Deployment
    cap = kv_capacity(dep, kv_tokens_held(prof, p, o))
    b = np.minimum(c, cap)
    ok = b >= 1
    b_safe = np.where(ok, b, 1.0)
    spec = dep.speculation
    if spec is None:
        t_dec = np.asarray(decode_of(dep, batch=b_safe, context=p + (o - 1) / 2).step_s, dtype=float)
    else:  # step 6: one iteration = verify + draft (step.speculative), E tokens per running sequence
        from ..step.speculative import speculative_of

        t_dec = np.asarray(speculative_of(dep, batch=b_safe, context=p + (o - 1) / 2).step_s, dtype=float)
    t_it = t_dec + prof.iteration_overhead_s

    q = prof.prefill_cohort_share
    cohort = 0.0  # step 5: the mean wait of a prompt in a cohort of B prefilled one after another
    if q:
        cohort = (b_safe + 1) / (2 * b_safe) * np.asarray(prefill_of(dep, batch=b_safe, prompt_tokens=p).latency_s,
                                                          dtype=float)

    def latencies(x):
        """(TTFT in the engine, TPOT) when x prompts arrive per iteration (steps 3, 5 and 6)."""
        pf = prefill_of(dep, batch=np.maximum(x, 1.0), prompt_tokens=p)
        p_x = np.asarray(pf.step_s, dtype=float)  # what the prefill iteration stalls decode for
        wait = np.asarray(pf.latency_s, dtype=float)  # what its prompts wait: + the pipeline fill when pp > 1
        iteration = t_it + prof.prefill_stall_factor * np.minimum(x, 1.0) * p_x
        ttft = t_it + prof.ttft_prefill_factor * ((1.0 - q) * wait + q * cohort)
        return ttft, iteration if spec is None else iteration / spec.tokens_per_step

    x = np.zeros_like(t_it)
    for _ in range(ITERATIONS):
        ttft_run, tpot = latencies(x)
        x = b_safe / ((o - 1) + ttft_run / tpot) if spec is None else (
            b_safe * spec.tokens_per_step / ((o - 1) + ttft_run / tpot))
    ttft_run, tpot = latencies(x)
    t_pf = np.asarray(prefill_of(dep, batch=1.0, prompt_tokens=p).step_s, dtype=float)
    rate = b_safe / (ttft_run + (o - 1) * tpot)
    queue = np.maximum(c - b_safe, 0.0) / rate
    nan = np.where(ok, 1.0, np.nan)
    return SteadyState(concurrency=c, prompt_tokens=p, output_tokens=o, effective_batch=np.where(ok, b, 0.0),
                       kv_limited=c > cap, decode_step_s=t_dec * nan, iteration_s=t_it * nan, prefill_s=t_pf * nan,
                       tpot_s=tpot * nan, ttft_s=(ttft_run + prof.request_overhead_s + queue) * nan,
                       queue_s=queue * nan,
                       requests_per_s=rate * nan)
