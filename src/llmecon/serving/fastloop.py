"""The event loop of ``engine.Engine`` for continuous batching, compiled with numba (``compiled.py``
decides when it runs and marshals the arrays; this module is imported only then).

It is a line-by-line port of the Python path: ``Engine._loop``/``_arrive``/``_reject``, ``admit``,
``prefill_iteration``, ``join``, ``preempt``, ``decode_run``, ``advance_decodes``, ``Continuous``'s
``wake``/``act`` (prefill first, no chunks), ``batchstate.DecodeSet`` and ``sum_max_affine`` /
``first_k_reaching`` / ``last_k_within``, with the same floating-point operations in the same
order, so both paths give the same results bit for bit (``tests/serving/test_serving_compiled.py``).
Python ints become int64 (contexts, counts and steps stay far below 2**53), ``max`` of floats keeps
the first of equal values as CPython does, and the heaps pop in the same order (their keys are
unique: (time, sequence number) and (step, request, stint)).

State lives in preallocated arrays (no allocation per event): per-request arrays, a ring buffer for
the FCFS queue, per-replica rows for the running batch and its heaps, and append-only output buffers.
The kernel returns before an event that could overflow a buffer (code ``GROW``: the caller enlarges
them and calls again), before arrival ``stop_i`` (code ``PAUSE``: progress reports) and before a
prefill of more tokens than the step model's table holds whose terms it has not been given (code
``NEED``: the event is put back, the caller adds ``StepModel.terms`` of that count to the sorted
extra rows ``xn``/``xt``); all loop state is in the arrays, so a call resumes exactly where the
previous one stopped.
"""

from __future__ import annotations

import math

import numpy as np

from ._jit import njit
from .fastparts import (N_RFLT, N_RINT, R_CROSSLEN, R_FINLEN, R_G, R_GLEN, R_LASTEND, R_N, R_ORDERLEN, R_SCHED,
                        R_STOPPED, R_VERSION, _max3, compact_order, ds_add, ds_advance, ds_remove, ev_pop, ev_push,
                        find_extra, first_k_reaching, group_add, group_leave, held_at, last_k_within, newest,
                        run_sums, steps_to_event, sum_max_affine, total_held1)

DONE, GROW, PAUSE, NEED = 0, 1, 2, 3
# int scalars (``isc``)
I_NEXT, I_ARRIVED, I_DEPARTED, I_EVENTS, I_SEQ, I_QHEAD, I_QLEN, I_ITER, I_TOKENS, I_EVLEN = range(10)
I_GAPLEN, I_RUNLEN, I_TLLEN, I_NEED, I_XLEN = 10, 11, 12, 13, 14
N_ISC = 15
# float scalars (``fsc``)
F_SUM_ARR, F_SUM_DEP, F_BUSY = 0, 1, 2
N_FSC = 3
# request states (status.py)
WAITING, RUNNING, COMPLETED, REJECTED = 0, 1, 2, 3
PREFILL, SWAP_IN = 0, 1
KV_CAPACITY, QUEUE_FULL = 1, 2


# ---- the loop ------------------------------------------------------------------------------------


@njit
def run(arr, prompt, out, cached, pf_c, pf_k, h_first, too_big,  # per request, read only
        tb, tw, tx, xn, xt, ha, hth, thetas, coef, kc, lpc, lpkw, lpkr, prm_f, prm_i,  # step model, pool
        status, reason, gen, preempted, resume, join_t, t_admit, t_first, t_done,  # per request
        mem_rep, mem_g0, mem_l0, mem_st, queue,  # running batch membership, the FCFS queue (a ring)
        isc, fsc, rint, rflt, nb, sb, gk, gc,  # scalars, per-replica state
        fin, cross, order, et, ei, gaps, wts, runs, tl_t, tl_w, tl_r,  # heaps and output buffers
        adm, done, stop_i):
    """Run until the horizon (DONE), a possible overflow (GROW) or arrival ``stop_i`` (PAUSE)."""
    qcap = queue.shape[0]
    cap_kv, horizon, swap_bw, chips, h0f = prm_f[0], prm_f[1], prm_f[2], prm_f[3], prm_f[4]
    budget, batch_cap, max_queue, R, multi = prm_i[0], prm_i[1], prm_i[2], prm_i[3], prm_i[4]
    nth = thetas.shape[0]
    la, lb, fk, rs = np.empty(3), np.empty(3), np.empty(2), np.empty(6)
    first_admit = np.zeros(adm.shape[0], dtype=np.bool_)
    inf = math.inf
    while True:
        if (isc[I_EVLEN] + 2 > et.shape[0] or isc[I_GAPLEN] + batch_cap + 2 > gaps.shape[0]
                or isc[I_RUNLEN] + 10 > runs.shape[0] or isc[I_TLLEN] + 1 > tl_t.shape[0]):
            return GROW
        for r in range(R):
            if rint[r, R_ORDERLEN] + batch_cap + 1 > order.shape[1]:
                compact_order(r, rint, order, mem_rep)
            if (rint[r, R_FINLEN] + batch_cap + 1 > fin.shape[1]
                    or rint[r, R_CROSSLEN] + (batch_cap + 1) * nth > cross.shape[1]
                    or rint[r, R_ORDERLEN] + batch_cap + 1 > order.shape[1]):
                return GROW
        i = isc[I_NEXT]
        t_arr = arr[i]
        top = et[0] if isc[I_EVLEN] > 0 else inf
        if t_arr <= top:  # ---- an arrival (``Engine._arrive``)
            if t_arr > horizon or t_arr == inf:  # the last arrival, at the horizon itself, arrives (issue 35)
                return DONE
            if i >= stop_i:
                return PAUSE
            t = t_arr
            isc[I_NEXT] = i + 1
            status[i] = WAITING
            isc[I_ARRIVED] += 1
            fsc[F_SUM_ARR] += t
            if too_big[i] or (max_queue >= 0 and isc[I_QLEN] >= max_queue):
                status[i] = REJECTED
                reason[i] = KV_CAPACITY if too_big[i] else QUEUE_FULL
                t_done[i] = t
                isc[I_DEPARTED] += 1
                fsc[F_SUM_DEP] += t
                continue
            queue[(isc[I_QHEAD] + isc[I_QLEN]) % qcap] = i
            isc[I_QLEN] += 1
            for r in range(R):  # ``Continuous.wake``
                if rint[r, R_STOPPED] or not math.isnan(rflt[r, R_SCHED]):
                    continue
                _schedule(r, t, rint, rflt, isc, et, ei)
                break
            continue
        if top > horizon:
            return DONE
        t = et[0]
        seq, r, ver = ei[0, 0], ei[0, 1], ei[0, 2]
        isc[I_EVLEN] = ev_pop(et, ei, isc[I_EVLEN])
        if ver != rint[r, R_VERSION] or rint[r, R_STOPPED]:
            continue
        rflt[r, R_SCHED] = math.nan
        isc[I_EVENTS] += 1
        m = isc[I_TLLEN]
        tl_t[m], tl_w[m], tl_r[m] = t, isc[I_QLEN], rint[r, R_N]
        isc[I_TLLEN] = m + 1
        # ---- ``Continuous.act`` (prefill first)
        if isc[I_QLEN] and rint[r, R_N] < batch_cap:
            # ``Engine.admit``
            used = total_held1(r, rint, nb, sb, thetas, h0f, ha)
            slots = batch_cap - rint[r, R_N]
            na, tok = 0, 0
            while isc[I_QLEN] and na < slots:
                rid = queue[isc[I_QHEAD]]
                g = gen[rid]
                if resume[rid] == PREFILL:
                    need = prompt[rid] + g - cached[rid]
                    h = h_first[rid] if g == 0 else held_at(prompt[rid] + g + 1, h0f, ha, hth)
                else:
                    need = 0
                    h = held_at(prompt[rid] + g, h0f, ha, hth)
                if na and tok + need > budget:
                    break
                if used + h > cap_kv:
                    break
                isc[I_QHEAD] = (isc[I_QHEAD] + 1) % qcap
                isc[I_QLEN] -= 1
                adm[na] = rid
                na += 1
                tok += need
                used += h
                status[rid] = RUNNING
                first_admit[na - 1] = math.isnan(t_admit[rid])
                if first_admit[na - 1]:
                    t_admit[rid] = t
            xrow = -1
            if na and tok >= tb.shape[0]:
                xrow = find_extra(xn, isc[I_XLEN], tok)
                if xrow < 0:  # undo the admission and the event, ask for the terms of ``tok`` tokens
                    for a in range(na - 1, -1, -1):
                        isc[I_QHEAD] = (isc[I_QHEAD] - 1) % qcap
                        isc[I_QLEN] += 1
                        queue[isc[I_QHEAD]] = adm[a]
                        status[adm[a]] = WAITING
                        if first_admit[a]:
                            t_admit[adm[a]] = math.nan
                    isc[I_TLLEN] -= 1
                    isc[I_EVENTS] -= 1
                    rflt[r, R_SCHED] = t
                    isc[I_EVLEN] = ev_push(et, ei, isc[I_EVLEN], t, seq, r, ver)
                    isc[I_NEED] = tok
                    return NEED
            if na:
                # ``Engine.prefill_iteration``
                pc = pk = stall = 0.0
                tok = 0
                for a in range(na):
                    rid = adm[a]
                    if resume[rid] == PREFILL:
                        g = gen[rid]
                        if g == 0:
                            c, k = pf_c[rid], pf_k[rid]
                        else:
                            start, stop = cached[rid], prompt[rid] + g
                            c, k = lpc[stop] - lpc[start], lpkr[start] + lpkw[stop] - lpkw[start]
                        pc += c
                        pk += k
                        tok += prompt[rid] + g - cached[rid]
                    elif resume[rid] == SWAP_IN:
                        stall += held_at(prompt[rid] + gen[rid] - 1, h0f, ha, hth) * chips / swap_bw
                if tok:
                    if xrow < 0:
                        dur = _max3(tb[tok] + pc, tw[tok] + pk, tx[tok]) + stall
                    else:
                        dur = _max3(xt[xrow, 0] + pc, xt[xrow, 1] + pk, xt[xrow, 2]) + stall
                else:
                    dur = 0.0 + stall
                end = t + dur
                if end > horizon:
                    for a in range(na - 1, -1, -1):
                        isc[I_QHEAD] = (isc[I_QHEAD] - 1) % qcap
                        isc[I_QLEN] += 1
                        queue[isc[I_QHEAD]] = adm[a]
                        status[adm[a]] = WAITING
                    rint[r, R_STOPPED] = 1
                    continue
                if dur == 0.0:  # only KV already in place joined: no iteration
                    for a in range(na):
                        _join(r, adm[a], t, prompt, out, gen, resume, status, t_done, join_t, isc, fsc, rint, nb,
                              sb, thetas, fin, cross, order, mem_rep, mem_g0, mem_l0, mem_st, gk, gc)
                else:
                    fsc[F_BUSY] += dur
                    isc[I_ITER] += 1
                    isc[I_TOKENS] += tok
                    for a in range(na):
                        rid = adm[a]
                        if resume[rid] == PREFILL:
                            gen[rid] += 1
                            if math.isnan(t_first[rid]):
                                t_first[rid] = end
                        _join(r, rid, end, prompt, out, gen, resume, status, t_done, join_t, isc, fsc, rint, nb,
                              sb, thetas, fin, cross, order, mem_rep, mem_g0, mem_l0, mem_st, gk, gc)
                    _schedule(r, end, rint, rflt, isc, et, ei)
                    continue
        if rint[r, R_N] == 0:
            continue
        # ---- ``Engine.decode_run``
        stall = 0.0
        run_sums(r, rint, nb, sb, coef, kc, rs)
        if rs[4] + rs[5] > cap_kv:
            # ``Engine.preempt``: newest first until the next step's KV fits
            while rint[r, R_N] > 1 and total_held1(r, rint, nb, sb, thetas, h0f, ha) > cap_kv:
                rid = newest(r, rint, order, mem_rep)
                L = ds_remove(r, rid, rint, nb, sb, thetas, mem_rep, mem_g0, mem_l0)
                gen[rid] = L - prompt[rid] + 1
                jt, lre = join_t[rid], rflt[r, R_LASTEND]
                group_leave(r, jt if jt > lre else lre, rint, gk, gc)
                preempted[rid] += 1
                status[rid] = WAITING
                if swap_bw:
                    stall += held_at(L, h0f, ha, hth) * chips / swap_bw
                    resume[rid] = SWAP_IN
                else:
                    resume[rid] = PREFILL
                isc[I_QHEAD] = (isc[I_QHEAD] - 1) % qcap
                isc[I_QLEN] += 1
                queue[isc[I_QHEAD]] = rid
            run_sums(r, rint, nb, sb, coef, kc, rs)
        c0, dc, k0, dk, h0, dh = rs[0], rs[1], rs[2], rs[3], rs[4], rs[5]
        k = steps_to_event(r, rint, fin, cross, mem_rep, mem_st)
        if dh > 0 and k > 1:
            k = min(k, int((cap_kv - h0) // dh))
        k = max(min(k, 1 << 40), 1)
        n = rint[r, R_N]
        l0, l1, x = tb[n] + c0, tw[n] + k0, tx[n]
        la[0], lb[0], la[1], lb[1], la[2], lb[2] = l0, dc, l1, dk, x, 0.0
        first = _max3(l0, l1, x)
        dur = -1.0
        if k > 1 and (multi or (n < batch_cap and not isc[I_QLEN])):
            t_next = arr[isc[I_ARRIVED]]
            if t + stall + first >= t_next:
                k = 1
            elif t_next < inf:
                first_k_reaching(la, lb, k, t_next - t - stall, fk)
                k, dur = int(fk[0]), fk[1]
        if dur == -1.0:
            dur = first if k == 1 else sum_max_affine(la, lb, k)
        if t + stall + dur > horizon:
            k = last_k_within(la, lb, k, horizon - t - stall)
            if k == 0:
                rint[r, R_STOPPED] = 1
                continue
            dur = sum_max_affine(la, lb, k)
        dur += stall
        end = t + dur
        ng = rint[r, R_GLEN]
        if ng:
            g = t + stall + first
            m = isc[I_GAPLEN]
            for a in range(ng):
                gaps[m + a] = g - gk[r, a]
                wts[m + a] = gc[r, a]
            isc[I_GAPLEN] = m + ng
        if k > 1:
            m = isc[I_RUNLEN]
            runs[m], runs[m + 1], runs[m + 2], runs[m + 3], runs[m + 4] = 0.0, l0, dc, l1, dk
            runs[m + 5], runs[m + 6], runs[m + 7], runs[m + 8], runs[m + 9] = x, 0.0, k, n, 0.0
            isc[I_RUNLEN] = m + 10
        # ``Engine.advance_decodes``
        nd = ds_advance(r, k, rint, nb, sb, thetas, fin, cross, mem_rep, mem_g0, mem_l0, mem_st, done)
        left = n - nd
        if left > 0:
            gk[r, 0], gc[r, 0] = end, left
            rint[r, R_GLEN] = 1
        else:
            rint[r, R_GLEN] = 0
        rflt[r, R_LASTEND] = end
        for a in range(nd):
            rid = done[a]
            gen[rid] = out[rid]
            status[rid] = COMPLETED
            t_done[rid] = end
            fsc[F_SUM_DEP] += end
        isc[I_DEPARTED] += nd
        fsc[F_BUSY] += dur
        isc[I_ITER] += k
        isc[I_TOKENS] += k * n
        _schedule(r, end, rint, rflt, isc, et, ei)


@njit
def _schedule(r, t, rint, rflt, isc, et, ei):
    """``Engine.schedule``."""
    rint[r, R_VERSION] += 1
    rflt[r, R_SCHED] = t
    isc[I_SEQ] += 1
    isc[I_EVLEN] = ev_push(et, ei, isc[I_EVLEN], t, isc[I_SEQ], r, rint[r, R_VERSION])


@njit
def _join(r, rid, t, prompt, out, gen, resume, status, t_done, join_t, isc, fsc, rint, nb, sb, thetas, fin, cross,
          order, mem_rep, mem_g0, mem_l0, mem_st, gk, gc):
    """``Engine.join``: start (or resume) decoding; finish if it has all its tokens."""
    resume[rid] = PREFILL
    g, o = gen[rid], out[rid]
    if g >= o:
        status[rid] = COMPLETED
        t_done[rid] = t
        isc[I_DEPARTED] += 1
        fsc[F_SUM_DEP] += t
        return
    ds_add(r, rid, prompt[rid] + g - 1, o - g, rint, nb, sb, thetas, fin, cross, order, mem_rep, mem_g0, mem_l0,
           mem_st)
    join_t[rid] = t
    group_add(r, t, rint, gk, gc)


@njit
def expand_runs(first_v, first_w, runs, nrows):
    """``metrics.expand_itl`` for runs of back-to-back decode steps (kind 0, the only kind here):
    the recorded first gaps, then steps 1..k-1 of every run, max of its three lines at step j."""
    total = first_v.shape[0]
    for q in range(nrows):
        total += int(runs[10 * q + 7]) - 1
    vals, wts = np.empty(total), np.empty(total)
    m = first_v.shape[0]
    vals[:m] = first_v
    wts[:m] = first_w
    for q in range(nrows):
        o = 10 * q
        a0, b0, a1, b1, a2, b2 = runs[o + 1], runs[o + 2], runs[o + 3], runs[o + 4], runs[o + 5], runs[o + 6]
        k, w = int(runs[o + 7]) - 1, runs[o + 8]
        for j in range(1, k + 1):
            x, y = a0 + b0 * j, a1 + b1 * j
            v = x if x >= y else y
            z = a2 + b2 * j
            vals[m] = v if v >= z else z
            wts[m] = w
            m += 1
    return vals, wts
