"""The event loop of ``engine.Engine`` compiled with numba, and the policies it runs: ``Continuous``
(prefill first, or chunked prefill) and ``Adaptive``, with plain or speculative decoding
(``compiled.py`` decides when it runs and marshals the arrays; this module is imported only then).

It is a line-by-line port of the Python path: ``Engine._loop``/``_arrive``/``_reject``, the
policies' ``wake``/``act`` (``Continuous._chunked_iteration``) here, the engine's mechanisms in
``faststeps`` and ``batchstate`` in ``fastparts``, with the same floating-point operations in the
same order, so both paths give the same results bit for bit (``tests/serving/test_serving_compiled.py``).
Python ints become int64 (contexts, counts and steps stay far below 2**53), ``max`` of floats keeps
the first of equal values as CPython does, and the heaps pop in the same order (their keys are
unique: (time, sequence number) and (step, request, stint)).

State lives in preallocated arrays (no allocation per event), grouped in ``fastlayout``'s named
tuples: per-request arrays, a ring buffer for the FCFS queue, per-replica rows for the running
batch, its heaps and its chunked prefills, and append-only output buffers. The kernel returns
before an event that could overflow a buffer (code ``GROW``: the caller enlarges them and calls
again), before arrival ``stop_i`` (code ``PAUSE``: progress reports) and before a prefill of more
tokens than the step model's table holds whose terms it has not been given (code ``NEED``: the
event is put back, the caller adds ``StepModel.terms`` of that count to the sorted extra rows
``xn``/``xt``); all loop state is in the arrays, so a call resumes exactly where the previous one
stopped.
"""

from __future__ import annotations

import math

import numpy as np

from ._jit import njit, njit_alloc, njit_inline
from .fastlayout import (ADAPTIVE, CHUNKED, DONE, F_BUSY, F_SUM_ARR, F_SUM_DEP, GROW, I_ARRIVED, I_DEPARTED,
                         I_EVENTS, I_EVLEN, I_GAPLEN, I_ITER, I_NEXT, I_QHEAD, I_QLEN, I_RUNLEN, I_SPECLEN, I_TLLEN,
                         I_TOKENS, KV_CAPACITY, NEED, P_BUDGET, P_CAP, P_CAPKV, P_CHIPS, P_CHUNK, P_DEADLINE, P_H0,
                         P_HORIZON, P_MAXQ, P_POLICY, P_R, P_SWAPBW, PAUSE, PREFILL, QUEUE_FULL, R_CROSSLEN, R_FINLEN,
                         R_N, R_NPART, R_ORDERLEN, R_SCHED, R_STATIC, R_STOPPED, R_VERSION, REJECTED, SWAP_IN,
                         UNLIMITED, WAITING)
from .fastparts import compact_order, ev_pop, ev_push, held_at, max_affine_at, run_sums, total_held1
from .faststeps import (admit, advance_decodes, decode_run, first_token_gaps, join, preempt, prefill_iteration,
                        prefilled, schedule)


@njit
def run(q, m, s, rp, o, x, stop_i):
    """Run until the horizon (DONE), a possible overflow (GROW), arrival ``stop_i`` (PAUSE) or a prefill
    whose terms are missing (NEED)."""
    isc, et, ei, rint = o.isc, o.et, o.ei, rp.rint
    horizon = m.pf[P_HORIZON]
    while True:
        if must_grow(m, s, rp, o):
            return GROW
        i = isc[I_NEXT]
        t_arr = q.arr[i]
        top = et[0] if isc[I_EVLEN] > 0 else math.inf
        if t_arr <= top:
            if t_arr > horizon or t_arr == math.inf:  # the last arrival, at the horizon itself, arrives (issue 35)
                return DONE
            if i >= stop_i:
                return PAUSE
            isc[I_NEXT] = i + 1
            arrive(i, t_arr, q, m, s, rp, o)
            continue
        if top > horizon:
            return DONE
        t = et[0]
        seq, r, ver = ei[0, 0], ei[0, 1], ei[0, 2]
        isc[I_EVLEN] = ev_pop(et, ei, isc[I_EVLEN])
        if ver != rint[r, R_VERSION] or rint[r, R_STOPPED]:
            continue
        rp.rflt[r, R_SCHED] = math.nan
        isc[I_EVENTS] += 1
        g = isc[I_TLLEN]
        o.tl_t[g], o.tl_w[g], o.tl_r[g] = t, isc[I_QLEN], rint[r, R_N] + rint[r, R_NPART]
        isc[I_TLLEN] = g + 1
        if not act(r, t, q, m, s, rp, o, x):  # undo the event, ask for the terms of a long prefill
            isc[I_TLLEN] -= 1
            isc[I_EVENTS] -= 1
            rp.rflt[r, R_SCHED] = t
            isc[I_EVLEN] = ev_push(et, ei, isc[I_EVLEN], t, seq, r, ver)
            return NEED


@njit_inline
def must_grow(m, s, rp, o):
    """Whether the next event could overflow a buffer (compacting admission orders first)."""
    isc, cap = o.isc, m.pi[P_CAP]
    if (isc[I_EVLEN] + 2 > o.et.shape[0] or isc[I_GAPLEN] + cap + 2 > o.gaps.shape[0]
            or isc[I_RUNLEN] + 10 > o.runs.shape[0] or isc[I_SPECLEN] + 6 > o.spec.shape[0]
            or isc[I_TLLEN] + 1 > o.tl_t.shape[0]):
        return True
    rint = rp.rint
    for r in range(m.pi[P_R]):
        if rint[r, R_ORDERLEN] + cap + 1 > rp.order.shape[1]:
            compact_order(r, rint, rp.order, s.mem_rep)
        if (rint[r, R_FINLEN] + cap + 1 > rp.fin.shape[1]
                or rint[r, R_CROSSLEN] + (cap + 1) * m.thetas.shape[0] > rp.cross.shape[1]
                or rint[r, R_ORDERLEN] + cap + 1 > rp.order.shape[1]):
            return True
    return False


@njit_inline
def arrive(i, t, q, m, s, rp, o):
    """``Engine._arrive`` (and ``_reject``)."""
    isc, fsc = o.isc, o.fsc
    s.status[i] = WAITING
    isc[I_ARRIVED] += 1
    fsc[F_SUM_ARR] += t
    max_queue = m.pi[P_MAXQ]
    if q.too_big[i] or (max_queue >= 0 and isc[I_QLEN] >= max_queue):
        s.status[i] = REJECTED
        s.reason[i] = KV_CAPACITY if q.too_big[i] else QUEUE_FULL
        s.t_done[i] = t
        isc[I_DEPARTED] += 1
        fsc[F_SUM_DEP] += t
        return
    s.queue[(isc[I_QHEAD] + isc[I_QLEN]) % s.queue.shape[0]] = i
    isc[I_QLEN] += 1
    wake(t, q, m, s, rp, o)


@njit_inline
def wake(t, q, m, s, rp, o):
    """The policy's ``wake``: schedule an idle replica's next decision (``Continuous``: now; ``Adaptive``: when
    the batch is full or the oldest request's deadline passes)."""
    rint, rflt = rp.rint, rp.rflt
    adaptive = m.pi[P_POLICY] == ADAPTIVE
    for r in range(m.pi[P_R]):
        if rint[r, R_STOPPED]:
            continue
        if not adaptive:
            if not math.isnan(rflt[r, R_SCHED]):
                continue
            schedule(r, t, rp, o)
            return
        if rint[r, R_STATIC]:
            continue
        when = t
        if o.isc[I_QLEN] < m.pi[P_CAP]:
            d = q.arr[s.queue[o.isc[I_QHEAD]]] + m.pf[P_DEADLINE]
            if d > t:
                when = d
        if math.isnan(rflt[r, R_SCHED]) or when < rflt[r, R_SCHED]:
            schedule(r, when, rp, o)
        return


@njit_inline
def act(r, t, q, m, s, rp, o, x):
    """The policy's ``act``: one decision of replica ``r`` at ``t``. False: a prefill's terms are missing
    (nothing was changed)."""
    isc, pi = o.isc, m.pi
    policy = pi[P_POLICY]
    if policy == ADAPTIVE:
        return act_adaptive(r, t, q, m, s, rp, o, x)
    if policy == CHUNKED:
        if (rp.rint[r, R_NPART] or isc[I_QLEN]) and chunked_iteration(r, t, q, m, s, rp, o, x):
            return True
    elif isc[I_QLEN] and rp.rint[r, R_N] < pi[P_CAP]:  # prefill first
        na = admit(r, t, pi[P_BUDGET], -1, q, m, s, rp, o, x)
        if na < 0:
            return False
        if na and prefill_iteration(r, t, na, q, m, s, rp, o, x):
            return True
    if rp.rint[r, R_N]:
        decode_run(r, t, q, m, s, rp, o, x)
    return True


@njit_inline
def act_adaptive(r, t, q, m, s, rp, o, x):
    """``Adaptive.act``: decode the static batch; once it is empty, dispatch the next one when full or when
    the oldest request has waited the deadline."""
    isc, rint = o.isc, rp.rint
    while True:
        if rint[r, R_N]:
            decode_run(r, t, q, m, s, rp, o, x)
            return True
        rint[r, R_STATIC] = 0
        if not isc[I_QLEN]:
            return True
        d = q.arr[s.queue[isc[I_QHEAD]]] + m.pf[P_DEADLINE]
        if isc[I_QLEN] < m.pi[P_CAP] and t < d - 1e-12:
            schedule(r, d, rp, o)
            return True
        na = admit(r, t, UNLIMITED, -1, q, m, s, rp, o, x)
        if na < 0:
            return False
        rint[r, R_STATIC] = 1
        prefill_iteration(r, t, na, q, m, s, rp, o, x)
        if na == 0 or not math.isnan(rp.rflt[r, R_SCHED]) or rint[r, R_STOPPED]:
            return True  # (na == 0 cannot happen: a lone request's KV always fits; the Python loop would recurse)


@njit_inline
def chunked_iteration(r, t, q, m, s, rp, o, x):
    """``Continuous._chunked_iteration``: decodes first, then prefill chunks under the token budget. False when
    there is nothing to prefill (the caller runs plain decodes)."""
    pf, pi, rint, part = m.pf, m.pi, rp.rint, rp.part
    stall = 0.0
    if rint[r, R_N] and total_held1(r, rint, rp.nb, rp.sb, m.thetas, pf[P_H0], m.ha) > pf[P_CAPKV]:
        stall = preempt(r, q, m, s, rp, o)
    rem = pi[P_CHUNK] - rint[r, R_N]
    room = pi[P_CAP] - rint[r, R_N] - rint[r, R_NPART]
    if room > 0 and o.isc[I_QLEN]:
        na = admit(r, t, UNLIMITED, room, q, m, s, rp, o, x)
        for a in range(na):
            rid = x.adm[a]
            if s.resume[rid] == SWAP_IN:
                L = q.prompt[rid] + s.gen[rid] - 1
                stall += held_at(L, pf[P_H0], m.ha, m.hth) * pf[P_CHIPS] / pf[P_SWAPBW]
                join(r, rid, t, q, m, s, rp, o)
            elif s.resume[rid] == PREFILL:
                g = rint[r, R_NPART]
                part[r, g, 0], part[r, g, 1], part[r, g, 2] = rid, q.cached[rid], q.prompt[rid] + s.gen[rid]
                rint[r, R_NPART] = g + 1
            else:  # KV delivered (disaggregation only)
                join(r, rid, t, q, m, s, rp, o)
    pc = pk = 0.0
    tok, nf = 0, 0
    for a in range(rint[r, R_NPART]):
        if rem <= 0:
            break
        done, stop = part[r, a, 1], part[r, a, 2]
        take = min(stop - done, rem)
        c, k = m.lpc[done + take] - m.lpc[done], m.lpkr[done] + m.lpkw[done + take] - m.lpkw[done]
        pc += c
        pk += k
        tok += take
        rem -= take
        part[r, a, 1] = done + take
        if done + take == stop:
            nf += 1
    if not tok and not stall:
        return False
    run_sums(r, rint, rp.nb, rp.sb, m.coef, m.kc, x.rs)
    nt = rint[r, R_N] + tok  # ``Engine.run_lines``
    la, lb = x.la, x.lb
    la[0], lb[0], la[1], lb[1], la[2], lb[2] = m.tb[nt] + x.rs[0] + pc, x.rs[1], m.tw[nt] + x.rs[2] + pk, x.rs[3], \
        m.tx[nt], 0.0
    dur = stall + max_affine_at(la, lb, 3, 0) if (rint[r, R_N] or tok) else stall
    end = t + dur
    if end > pf[P_HORIZON]:
        rint[r, R_STOPPED] = 1
        return True
    n = rint[r, R_N]
    first_token_gaps(r, end, rp, o)
    advance_decodes(r, 1, end, q, m, s, rp, o, x)
    g = 0  # the finished prefills leave the list (in order) and join
    for a in range(rint[r, R_NPART]):
        if part[r, a, 1] == part[r, a, 2]:
            x.done[g] = part[r, a, 0]
            g += 1
    w = 0
    for a in range(rint[r, R_NPART]):
        if part[r, a, 1] != part[r, a, 2]:
            part[r, w, 0], part[r, w, 1], part[r, w, 2] = part[r, a, 0], part[r, a, 1], part[r, a, 2]
            w += 1
    rint[r, R_NPART] = w
    for a in range(g):
        rid = x.done[a]
        prefilled(rid, end, s)
        join(r, rid, end, q, m, s, rp, o)
    o.fsc[F_BUSY] += dur
    o.isc[I_ITER] += 1
    o.isc[I_TOKENS] += n + tok
    schedule(r, end, rp, o)
    return True


@njit_alloc
def expand_runs(first_v, first_w, runs, nrows, spec):
    """``metrics.expand_itl`` for runs of back-to-back decode steps (kind 0, and kind 2: speculative, whose draft
    lines are the next 6 floats of ``spec``): the recorded first gaps, then steps 1..k-1 of every run."""
    total = first_v.shape[0]
    for r in range(nrows):
        total += int(runs[10 * r + 7]) - 1
    vals, wts = np.empty(total), np.empty(total)
    g = first_v.shape[0]
    vals[:g] = first_v
    wts[:g] = first_w
    h = 0
    for r in range(nrows):
        b = 10 * r
        a0, b0, a1, b1, a2, b2 = runs[b + 1], runs[b + 2], runs[b + 3], runs[b + 4], runs[b + 5], runs[b + 6]
        k, w = int(runs[b + 7]) - 1, runs[b + 8]
        sp = runs[b] == 2.0
        for j in range(1, k + 1):
            u, v = a0 + b0 * j, a1 + b1 * j
            v = u if u >= v else v
            z = a2 + b2 * j
            v = v if v >= z else z
            if sp:
                u, y = spec[h] + spec[h + 1] * j, spec[h + 2] + spec[h + 3] * j
                y = u if u >= y else y
                z = spec[h + 4] + spec[h + 5] * j
                v = v + (y if y >= z else z)
            vals[g] = v
            wts[g] = w
            g += 1
        if sp:
            h += 6
    return vals, wts
