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

DONE, GROW, PAUSE, NEED = 0, 1, 2, 3
# int scalars (``isc``)
I_NEXT, I_ARRIVED, I_DEPARTED, I_EVENTS, I_SEQ, I_QHEAD, I_QLEN, I_ITER, I_TOKENS, I_EVLEN = range(10)
I_GAPLEN, I_RUNLEN, I_TLLEN, I_NEED, I_XLEN = 10, 11, 12, 13, 14
N_ISC = 15
# float scalars (``fsc``)
F_SUM_ARR, F_SUM_DEP, F_BUSY = 0, 1, 2
N_FSC = 3
# per-replica int rows (``rint``)
R_G, R_N, R_S, R_STINT, R_STOPPED, R_VERSION, R_FINLEN, R_CROSSLEN, R_ORDERLEN, R_GLEN = range(10)
N_RINT = 10
# per-replica float rows (``rflt``)
R_SCHED, R_LASTEND = 0, 1
N_RFLT = 2
# request states (status.py)
WAITING, RUNNING, COMPLETED, REJECTED = 0, 1, 2, 3
PREFILL, SWAP_IN = 0, 1
KV_CAPACITY, QUEUE_FULL = 1, 2


@njit
def _max3(a, b, c):
    m = a
    if b > m:
        m = b
    if c > m:
        m = c
    return m


@njit
def sum_max_affine(la, lb, k):
    """``batchstate.sum_max_affine`` over the lines (la[i], lb[i]), i = 0..2."""
    if k <= 1:
        if k == 1:
            return _max3(la[0], la[1], la[2])
        return 0.0
    a, b = la[0], lb[0]
    for i in range(3):
        a2, b2 = la[i], lb[i]
        if a2 > a or (a2 == a and b2 > b):
            a, b = a2, b2
    steepest = True
    for i in range(3):
        if lb[i] > b:
            steepest = False
            break
    if steepest:
        return 0.0 + (k * a + b * (k - 1) * k / 2.0)
    j = 0
    total = 0.0
    while j < k:
        a, b = la[0], lb[0]
        for i in range(3):
            a2, b2 = la[i], lb[i]
            v, top = a2 + b2 * j, a + b * j
            if v > top or (v == top and b2 > b):
                a, b = a2, b2
        nxt = k
        for i in range(3):
            a2, b2 = la[i], lb[i]
            if b2 > b:
                x = (a - a2) / (b2 - b)
                if x < nxt:
                    jj = int(math.floor(x)) + 1
                    nxt = jj if jj > j else j + 1
        total += (nxt - j) * a + b * (j + nxt - 1) * (nxt - j) / 2.0
        j = nxt
    return total


@njit
def first_k_reaching(la, lb, kmax, gap, out):
    """``batchstate.first_k_reaching``: writes (k, sum) to ``out``."""
    first = _max3(la[0], la[1], la[2])
    q = gap / first
    c = kmax if q >= 4.0e18 else int(math.ceil(q))
    hi = min(kmax, max(1, c))
    t_hi = sum_max_affine(la, lb, hi)
    if t_hi < gap or hi == 1:
        out[0], out[1] = hi, t_hi
        return
    t_lo = sum_max_affine(la, lb, hi - 1)
    if t_lo < gap:
        out[0], out[1] = hi, t_hi
        return
    lo = 1
    hi, t_hi = hi - 1, t_lo
    while hi - lo > 1:
        mid = (lo + hi) // 2
        t = sum_max_affine(la, lb, mid)
        if t < gap:
            lo = mid
        else:
            hi, t_hi = mid, t
    out[0], out[1] = hi, t_hi


@njit
def last_k_within(la, lb, kmax, gap):
    if sum_max_affine(la, lb, kmax) <= gap:
        return kmax
    lo, hi = 0, kmax
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if sum_max_affine(la, lb, mid) <= gap:
            lo = mid
        else:
            hi = mid
    return lo


@njit
def find_extra(xn, nx, tok):
    """Row of ``tok`` among the first ``nx`` sorted extra token counts, -1 if absent."""
    lo, hi = 0, nx
    while lo < hi:
        mid = (lo + hi) // 2
        if xn[mid] < tok:
            lo = mid + 1
        else:
            hi = mid
    return lo if lo < nx and xn[lo] == tok else -1


# ---- heaps of int rows (lexicographic order), one per replica ------------------------------------


@njit
def _less(h, r, i, j, ncol):
    for c in range(ncol):
        a, b = h[r, i, c], h[r, j, c]
        if a != b:
            return a < b
    return False


@njit
def _swap(h, r, i, j, ncol):
    for c in range(ncol):
        h[r, i, c], h[r, j, c] = h[r, j, c], h[r, i, c]


@njit
def heap_push(h, r, size, ncol):
    """Sift up the entry just written at ``h[r, size]``; returns the new size."""
    i = size
    while i > 0:
        p = (i - 1) >> 1
        if _less(h, r, i, p, ncol):
            _swap(h, r, i, p, ncol)
            i = p
        else:
            break
    return size + 1


@njit
def heap_pop(h, r, size, ncol):
    """Remove the top (read it before calling); returns the new size."""
    size -= 1
    if size > 0:
        for c in range(ncol):
            h[r, 0, c] = h[r, size, c]
        i = 0
        while True:
            lft = 2 * i + 1
            if lft >= size:
                break
            m = lft
            if lft + 1 < size and _less(h, r, lft + 1, lft, ncol):
                m = lft + 1
            if _less(h, r, m, i, ncol):
                _swap(h, r, m, i, ncol)
                i = m
            else:
                break
    return size


@njit
def ev_push(et, ei, size, t, seq, rep, ver):
    """Event heap ordered by (t, seq): ``et`` times, ``ei`` rows (seq, replica, version)."""
    i = size
    et[i] = t
    ei[i, 0], ei[i, 1], ei[i, 2] = seq, rep, ver
    while i > 0:
        p = (i - 1) >> 1
        if et[i] < et[p] or (et[i] == et[p] and ei[i, 0] < ei[p, 0]):
            et[i], et[p] = et[p], et[i]
            for c in range(3):
                ei[i, c], ei[p, c] = ei[p, c], ei[i, c]
            i = p
        else:
            break
    return size + 1


@njit
def ev_pop(et, ei, size):
    size -= 1
    if size > 0:
        et[0] = et[size]
        for c in range(3):
            ei[0, c] = ei[size, c]
        i = 0
        while True:
            lft = 2 * i + 1
            if lft >= size:
                break
            m = lft
            if lft + 1 < size and (et[lft + 1] < et[lft] or (et[lft + 1] == et[lft] and ei[lft + 1, 0] < ei[lft, 0])):
                m = lft + 1
            if et[m] < et[i] or (et[m] == et[i] and ei[m, 0] < ei[i, 0]):
                et[m], et[i] = et[i], et[m]
                for c in range(3):
                    ei[m, c], ei[i, c] = ei[i, c], ei[m, c]
                i = m
            else:
                break
    return size


# ---- the running batch (``batchstate.DecodeSet``), replica r's row of each array ----------------


@njit
def held_at(L, f0, ha, hth):
    """``batchstate.scalar(model.held)`` at context L."""
    v = f0
    for j in range(ha.shape[0]):
        t = hth[j]
        v += ha[j] * (L if L < t else t)
    return v


@njit
def total_held1(r, rint, nb, sb, thetas, f0, ha):
    """``DecodeSet.total(model.held, 1)``."""
    n = rint[r, R_N]
    v = n * f0 + ha[0] * (rint[r, R_S] + 1 * n)
    for j in range(thetas.shape[0]):
        nbj = nb[r, j]
        v += ha[j + 1] * (sb[r, j] + 1 * nbj + thetas[j] * (n - nbj))
    return v


@njit
def run_sums(r, rint, nb, sb, coef, kc, rs):
    """``DecodeSet.run_sums`` into rs = (c, dc, k, dk, h, dh)."""
    n, S = rint[r, R_N], rint[r, R_S]
    fc0, ac, fk0, ak, fh0, ah = coef[0], coef[1], coef[2], coef[3], coef[4], coef[5]
    c = n * fc0 + ac * S
    dc = ac * n
    k = n * fk0 + ak * S
    dk = ak * n
    h = n * fh0 + ah * S
    dh = ah * n
    for j in range(kc.shape[0]):
        th, ac, ak, ah = kc[j, 0], kc[j, 1], kc[j, 2], kc[j, 3]
        nbj = nb[r, j]
        below = sb[r, j] + th * (n - nbj)
        c += ac * below
        dc += ac * nbj
        k += ak * below
        dk += ak * nbj
        h += ah * below
        dh += ah * nbj
    rs[0], rs[1], rs[2], rs[3], rs[4], rs[5] = c, dc, k, dk, h, dh


@njit
def ds_add(r, rid, L, steps_left, rint, nb, sb, thetas, fin, cross, order, mem_rep, mem_g0, mem_l0, mem_st):
    rint[r, R_STINT] += 1
    s = rint[r, R_STINT]
    G = rint[r, R_G]
    mem_rep[rid], mem_g0[rid], mem_l0[rid], mem_st[rid] = r, G, L, s
    rint[r, R_N] += 1
    rint[r, R_S] += L
    for j in range(thetas.shape[0]):
        th = thetas[j]
        if L < th:
            nb[r, j] += 1
            sb[r, j] += L
            m = rint[r, R_CROSSLEN]
            cross[r, m, 0], cross[r, m, 1], cross[r, m, 2], cross[r, m, 3] = G + int(th - L), j, rid, s
            rint[r, R_CROSSLEN] = heap_push(cross, r, m, 4)
    m = rint[r, R_FINLEN]
    fin[r, m, 0], fin[r, m, 1], fin[r, m, 2] = G + steps_left, rid, s
    rint[r, R_FINLEN] = heap_push(fin, r, m, 3)
    m = rint[r, R_ORDERLEN]
    order[r, m] = rid
    rint[r, R_ORDERLEN] = m + 1


@njit
def ds_remove(r, rid, rint, nb, sb, thetas, mem_rep, mem_g0, mem_l0):
    """Remove a sequence; returns its context."""
    L = mem_l0[rid] + rint[r, R_G] - mem_g0[rid]
    mem_rep[rid] = -1
    rint[r, R_N] -= 1
    rint[r, R_S] -= L
    for j in range(thetas.shape[0]):
        if L < thetas[j]:
            nb[r, j] -= 1
            sb[r, j] -= L
    return L


@njit
def _clean(h, r, lenidx, ncol, rint, mem_rep, mem_st):
    while rint[r, lenidx] > 0:
        rid, s = h[r, 0, ncol - 2], h[r, 0, ncol - 1]
        if mem_rep[rid] == r and mem_st[rid] == s:
            return
        rint[r, lenidx] = heap_pop(h, r, rint[r, lenidx], ncol)


@njit
def steps_to_event(r, rint, fin, cross, mem_rep, mem_st):
    """``DecodeSet.steps_to_event`` (the batch is not empty)."""
    _clean(fin, r, R_FINLEN, 3, rint, mem_rep, mem_st)
    k = fin[r, 0, 0] - rint[r, R_G] if rint[r, R_FINLEN] > 0 else (1 << 62)
    if rint[r, R_CROSSLEN] > 0:
        _clean(cross, r, R_CROSSLEN, 4, rint, mem_rep, mem_st)
        if rint[r, R_CROSSLEN] > 0:
            k = min(k, cross[r, 0, 0] - rint[r, R_G])
    return k


@njit
def ds_advance(r, k, rint, nb, sb, thetas, fin, cross, mem_rep, mem_g0, mem_l0, mem_st, done):
    """``DecodeSet.advance``: the rids that have all their tokens go to ``done``; returns their count."""
    G = rint[r, R_G] + k
    rint[r, R_G] = G
    rint[r, R_S] += k * rint[r, R_N]
    nth = thetas.shape[0]
    if nth:
        for j in range(nth):
            sb[r, j] += k * nb[r, j]
        while rint[r, R_CROSSLEN] > 0 and cross[r, 0, 0] <= G:
            j, rid, s = cross[r, 0, 1], cross[r, 0, 2], cross[r, 0, 3]
            rint[r, R_CROSSLEN] = heap_pop(cross, r, rint[r, R_CROSSLEN], 4)
            if mem_rep[rid] == r and mem_st[rid] == s:
                nb[r, j] -= 1
                sb[r, j] -= thetas[j]
    nd = 0
    while rint[r, R_FINLEN] > 0 and fin[r, 0, 0] <= G:
        rid, s = fin[r, 0, 1], fin[r, 0, 2]
        rint[r, R_FINLEN] = heap_pop(fin, r, rint[r, R_FINLEN], 3)
        if mem_rep[rid] == r and mem_st[rid] == s:
            done[nd] = rid
            nd += 1
    for i in range(nd):
        ds_remove(r, done[i], rint, nb, sb, thetas, mem_rep, mem_g0, mem_l0)
    return nd


@njit
def newest(r, rint, order, mem_rep):
    m = rint[r, R_ORDERLEN]
    while m > 0 and mem_rep[order[r, m - 1]] != r:
        m -= 1
    rint[r, R_ORDERLEN] = m
    return order[r, m - 1] if m > 0 else -1


@njit
def compact_order(r, rint, order, mem_rep):
    """Drop the entries of sequences no longer running: ``newest`` would skip them (members keep
    their order, so the LIFO victims are the same)."""
    w = 0
    for i in range(rint[r, R_ORDERLEN]):
        rid = order[r, i]
        if mem_rep[rid] == r:
            order[r, w] = rid
            w += 1
    rint[r, R_ORDERLEN] = w


# ---- inter-token groups (``Replica.groups``: last-token time -> sequences, insertion order) -----


@njit
def group_add(r, t, rint, gk, gc):
    m = rint[r, R_GLEN]
    for i in range(m):
        if gk[r, i] == t:
            gc[r, i] += 1
            return
    gk[r, m], gc[r, m] = t, 1
    rint[r, R_GLEN] = m + 1


@njit
def group_leave(r, key, rint, gk, gc):
    m = rint[r, R_GLEN]
    for i in range(m):
        if gk[r, i] == key:
            c = gc[r, i] - 1
            if c > 0:
                gc[r, i] = c
            else:  # dict.pop: later keys keep their order
                for j in range(i, m - 1):
                    gk[r, j], gc[r, j] = gk[r, j + 1], gc[r, j + 1]
                rint[r, R_GLEN] = m - 1
            return


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
            if t_arr >= horizon:
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
