"""The engine's shared mechanisms, compiled (numba; ``fastloop`` drives them): ``Engine.schedule``,
``admit``, ``prefill_iteration``, ``join``, ``preempt``, ``decode_run`` (with speculative decoding's
lines, ``speculative.spec_lines``) and ``advance_decodes``, each a port of the Python method with
the same floating-point operations in the same order. Arguments are the named tuples of
``fastlayout`` (q: Req, m: Model, s: State, rp: Reps, o: Out, x: Tmp), replica ``r``, time ``t``.
"""

from __future__ import annotations

import math

from ._jit import njit_inline
from .fastlayout import (ADAPTIVE, COMPLETED, F_BUSY, F_SUM_DEP, I_ARRIVED, I_DEPARTED, I_EVLEN, I_GAPLEN, I_ITER,
                         I_NEED, I_QHEAD, I_QLEN, I_RUNLEN, I_SEQ, I_SPECLEN, I_TOKENS, I_XLEN, P_CAP, P_CAPKV,
                         P_CHIPS, P_DRAFT, P_H0, P_HORIZON, P_K1, P_MULTI, P_OVER, P_POLICY, P_SD, P_SV, P_SWAPBW,
                         PREFILL, R_GLEN, R_LASTEND, R_N, R_NPART, R_SCHED, R_STOPPED, R_VERSION, RUNNING, SWAP_IN,
                         WAITING)
from .fastparts import (_max3, ds_add, ds_advance, ds_remove, ev_push, find_extra, first_k_reaching, group_add,
                        group_leave, held_at, last_k_within, max_first, newest, run_sums, steps_to_event,
                        sum_max_affine, total_held1, verify_sums)


@njit_inline
def schedule(r, t, rp, o):
    """``Engine.schedule``: replica ``r`` decides next at ``t``."""
    rint, isc = rp.rint, o.isc
    rint[r, R_VERSION] += 1
    rp.rflt[r, R_SCHED] = t
    isc[I_SEQ] += 1
    isc[I_EVLEN] = ev_push(o.et, o.ei, isc[I_EVLEN], t, isc[I_SEQ], r, rint[r, R_VERSION])


@njit_inline
def push_front(rid, s, o):
    """``deque.appendleft`` on the FCFS queue."""
    isc = o.isc
    isc[I_QHEAD] = (isc[I_QHEAD] - 1) % s.queue.shape[0]
    isc[I_QLEN] += 1
    s.queue[isc[I_QHEAD]] = rid


@njit_inline
def held_sum(r, q, m, rp):
    """KV after the next decode step of ``r``'s running batch and chunked prefills (``admit``'s ``used``)."""
    pf = m.pf
    used = total_held1(r, rp.rint, rp.nb, rp.sb, m.thetas, pf[P_H0], m.ha)
    npart = rp.rint[r, R_NPART]
    if npart:
        ph = 0.0  # sum() from int 0: 0 + x == x
        for a in range(npart):
            ph += held_at(rp.part[r, a, 2] + 1, pf[P_H0], m.ha, m.hth)
        used = used + ph
    return used


@njit_inline
def admit(r, t, budget, room, q, m, s, rp, o, x):
    """``Engine.admit`` (``room`` < 0: the batch cap's free slots, and a prefill iteration follows) into
    ``x.adm``; returns the count, or (room < 0) -1 with the admission undone and ``I_NEED`` set when a
    prefill of that many tokens has no terms yet."""
    isc, pf = o.isc, m.pf
    h0f, cap_kv = pf[P_H0], pf[P_CAPKV]
    whole = m.pi[P_POLICY] == ADAPTIVE
    used = held_sum(r, q, m, rp)
    slots = m.pi[P_CAP] - rp.rint[r, R_N] - rp.rint[r, R_NPART] if room < 0 else room
    na, tok = 0, 0
    while isc[I_QLEN] and na < slots:
        rid = s.queue[isc[I_QHEAD]]
        g = s.gen[rid]
        if s.resume[rid] == PREFILL:
            need = q.prompt[rid] + g - q.cached[rid]
            h = q.h_need[rid] if whole else (q.h_first[rid] if g == 0 else
                                              held_at(q.prompt[rid] + g + 1, h0f, m.ha, m.hth))
        else:
            need = 0
            h = q.h_need[rid] if whole else held_at(q.prompt[rid] + g, h0f, m.ha, m.hth)
        if na and tok + need > budget:
            break
        if used + h > cap_kv:
            break
        isc[I_QHEAD] = (isc[I_QHEAD] + 1) % s.queue.shape[0]
        isc[I_QLEN] -= 1
        x.adm[na] = rid
        x.fadm[na] = math.isnan(s.t_admit[rid])
        if x.fadm[na]:
            s.t_admit[rid] = t
        na += 1
        tok += need
        used += h
        s.status[rid] = RUNNING
    if room < 0 and na and tok >= m.tb.shape[0] and find_extra(m.xn, isc[I_XLEN], tok) < 0:
        for a in range(na - 1, -1, -1):
            push_front(x.adm[a], s, o)
            s.status[x.adm[a]] = WAITING
            if x.fadm[a]:
                s.t_admit[x.adm[a]] = math.nan
        isc[I_NEED] = tok
        return -1
    return na


@njit_inline
def prefill_iteration(r, t, na, q, m, s, rp, o, x):
    """``Engine.prefill_iteration`` of the ``na`` rids in ``x.adm``: True when the replica's next act is
    settled (iteration scheduled, or stopped at the horizon)."""
    pf, isc = m.pf, o.isc
    pc = pk = stall = 0.0
    tok = 0
    for a in range(na):  # ``boarding_work``
        rid = x.adm[a]
        if s.resume[rid] == PREFILL:
            g = s.gen[rid]
            if g == 0:
                c, k = q.pf_c[rid], q.pf_k[rid]
            else:
                start, stop = q.cached[rid], q.prompt[rid] + g
                c, k = m.lpc[stop] - m.lpc[start], m.lpkr[start] + m.lpkw[stop] - m.lpkw[start]
            pc += c
            pk += k
            tok += q.prompt[rid] + g - q.cached[rid]
        elif s.resume[rid] == SWAP_IN:
            stall += held_at(q.prompt[rid] + s.gen[rid] - 1, pf[P_H0], m.ha, m.hth) * pf[P_CHIPS] / pf[P_SWAPBW]
    if tok:
        if tok < m.tb.shape[0]:
            dur = _max3(m.tb[tok] + pc, m.tw[tok] + pk, m.tx[tok]) + stall
        else:
            j = find_extra(m.xn, isc[I_XLEN], tok)
            dur = _max3(m.xt[j, 0] + pc, m.xt[j, 1] + pk, m.xt[j, 2]) + stall
    else:
        dur = 0.0 + stall
    end = t + dur
    if end > pf[P_HORIZON]:  # ``requeue``, ``stop``
        for a in range(na - 1, -1, -1):
            push_front(x.adm[a], s, o)
            s.status[x.adm[a]] = WAITING
        rp.rint[r, R_STOPPED] = 1
        return True
    if dur == 0.0:  # only KV already in place joined: no iteration
        for a in range(na):
            join(r, x.adm[a], t, q, m, s, rp, o)
        return False
    o.fsc[F_BUSY] += dur
    isc[I_ITER] += 1
    isc[I_TOKENS] += tok
    for a in range(na):
        rid = x.adm[a]
        if s.resume[rid] == PREFILL:
            prefilled(rid, end, s)
        join(r, rid, end, q, m, s, rp, o)
    schedule(r, end, rp, o)
    return True


@njit_inline
def prefilled(rid, end, s):
    """``RequestOps.prefilled``: the prefill ending at ``end`` emitted the next token."""
    s.gen[rid] += 1
    if math.isnan(s.t_first[rid]):
        s.t_first[rid] = end


@njit_inline
def join(r, rid, t, q, m, s, rp, o):
    """``Engine.join``: start (or resume) decoding; finish if it has all its tokens."""
    s.resume[rid] = PREFILL
    g, out = s.gen[rid], q.out[rid]
    if g >= out:
        s.status[rid] = COMPLETED
        s.t_done[rid] = t
        o.isc[I_DEPARTED] += 1
        o.fsc[F_SUM_DEP] += t
        return
    ds_add(r, rid, q.prompt[rid] + g - 1, out - g, rp.rint, rp.nb, rp.sb, m.thetas, rp.fin, rp.cross, rp.order,
           s.mem_rep, s.mem_g0, s.mem_l0, s.mem_st)
    s.join_t[rid] = t
    group_add(r, t, rp.rint, rp.gk, rp.gc)


@njit_inline
def preempt(r, q, m, s, rp, o):
    """``Engine.preempt``: newest first until the next step's KV fits; returns the swap-out stall."""
    pf, rint = m.pf, rp.rint
    h0f, swap_bw = pf[P_H0], pf[P_SWAPBW]
    stall = 0.0
    while rint[r, R_N] > 1 and total_held1(r, rint, rp.nb, rp.sb, m.thetas, h0f, m.ha) > pf[P_CAPKV]:
        rid = newest(r, rint, rp.order, s.mem_rep)
        L = ds_remove(r, rid, rint, rp.nb, rp.sb, m.thetas, s.mem_rep, s.mem_g0, s.mem_l0)
        s.gen[rid] = L - q.prompt[rid] + 1
        jt, lre = s.join_t[rid], rp.rflt[r, R_LASTEND]
        group_leave(r, jt if jt > lre else lre, rint, rp.gk, rp.gc)
        s.preempted[rid] += 1
        s.status[rid] = WAITING
        if swap_bw:
            stall += held_at(L, h0f, m.ha, m.hth) * pf[P_CHIPS] / swap_bw
            s.resume[rid] = SWAP_IN
        else:
            s.resume[rid] = PREFILL
        push_front(rid, s, o)
    return stall


@njit_inline
def first_token_gaps(r, t_token, rp, o):
    """``RequestOps.first_token_gaps``: each group's gap to the token at ``t_token``."""
    ng = rp.rint[r, R_GLEN]
    g = o.isc[I_GAPLEN]
    for a in range(ng):
        o.gaps[g + a] = t_token - rp.gk[r, a]
        o.wts[g + a] = rp.gc[r, a]
    o.isc[I_GAPLEN] = g + ng


@njit_inline
def advance_decodes(r, k, end, q, m, s, rp, o, x):
    """``Engine.advance_decodes``: ``k`` steps ending at ``end``; finished requests complete."""
    rint = rp.rint
    n = rint[r, R_N]
    nd = 0
    if n:
        nd = ds_advance(r, k, rint, rp.nb, rp.sb, m.thetas, rp.fin, rp.cross, s.mem_rep, s.mem_g0, s.mem_l0,
                        s.mem_st, x.done)
    left = n - nd
    if left > 0:
        rp.gk[r, 0], rp.gc[r, 0] = end, left
        rint[r, R_GLEN] = 1
    else:
        rint[r, R_GLEN] = 0
    rp.rflt[r, R_LASTEND] = end
    for a in range(nd):
        rid = x.done[a]
        s.gen[rid] = q.out[rid]
        s.status[rid] = COMPLETED
        s.t_done[rid] = end
        o.fsc[F_SUM_DEP] += end
    o.isc[I_DEPARTED] += nd


@njit_inline
def spec_lines(r, n, m, rp, x):
    """``speculative.spec_lines``: the nine lines (verify + draft) / E of a speculative run into ``x.la``/``x.lb``
    (which hold the plain decode step's three), the verify and draft lines apart into ``x.sp``."""
    pf, la, lb, sp, vs = m.pf, x.la, x.lb, x.sp, x.vs
    sv, sd, over = pf[P_SV], pf[P_SD], pf[P_OVER]
    verify_sums(r, rp.rint, rp.nb, rp.sb, m.vcoef, m.vkc, vs)
    b, w, xx = m.vt[n, 0], m.vt[n, 1], m.vt[n, 2]
    sp[0], sp[1], sp[2], sp[3], sp[4], sp[5] = sv * (b + vs[0]), sv * vs[1], sv * (w + vs[2]), sv * vs[3], sv * xx, 0.0
    if m.pi[P_DRAFT]:
        verify_sums(r, rp.rint, rp.nb, rp.sb, m.dcoef, m.dkc, vs)
        b, w, xx = m.dt[n, 0], m.dt[n, 1], m.dt[n, 2]
        la[0], lb[0], la[1], lb[1], la[2], lb[2] = b + vs[0], vs[1], w + vs[2], vs[3], xx, 0.0
    for i in range(3):
        sp[6 + 2 * i], sp[7 + 2 * i] = sd * (la[i] - over), sd * lb[i]
    for i in range(3):
        for j in range(3):
            la[3 * i + j], lb[3 * i + j] = sp[2 * i] + sp[6 + 2 * j], sp[2 * i + 1] + sp[7 + 2 * j]


@njit_inline
def decode_run(r, t, q, m, s, rp, o, x):
    """``Engine.decode_run``: as many identical-composition decode steps as no event separates, in closed form."""
    pf, pi, isc, rint, rs, la, lb = m.pf, m.pi, o.isc, rp.rint, x.rs, x.la, x.lb
    cap_kv, horizon = pf[P_CAPKV], pf[P_HORIZON]
    stall = 0.0
    run_sums(r, rint, rp.nb, rp.sb, m.coef, m.kc, rs)
    if rs[4] + rs[5] > cap_kv:
        stall = preempt(r, q, m, s, rp, o)
        run_sums(r, rint, rp.nb, rp.sb, m.coef, m.kc, rs)
    c0, dc, k0, dk, h0, dh = rs[0], rs[1], rs[2], rs[3], rs[4], rs[5]
    k = steps_to_event(r, rint, rp.fin, rp.cross, s.mem_rep, s.mem_st)
    if dh > 0 and k > 1:
        k = min(k, int((cap_kv - h0) // dh))
    k = max(min(k, 1 << 40), 1)
    n = rint[r, R_N]
    l0, l1, xx = m.tb[n] + c0, m.tw[n] + k0, m.tx[n]
    la[0], lb[0], la[1], lb[1], la[2], lb[2] = l0, dc, l1, dk, xx, 0.0
    nl = 3
    if pi[P_K1]:
        spec_lines(r, n, m, rp, x)
        nl = 9
    first = max_first(la, nl)
    dur = -1.0
    if k > 1 and (pi[P_MULTI] or (n < pi[P_CAP] and not isc[I_QLEN] and pi[P_POLICY] != ADAPTIVE)):
        t_next = q.arr[isc[I_ARRIVED]]
        if t + stall + first >= t_next:
            k = 1
        elif t_next < math.inf:
            first_k_reaching(la, lb, nl, k, t_next - t - stall, x.fk)
            k, dur = int(x.fk[0]), x.fk[1]
    if dur == -1.0:
        dur = first if k == 1 else sum_max_affine(la, lb, nl, k)
    if t + stall + dur > horizon:
        k = last_k_within(la, lb, nl, k, horizon - t - stall)
        if k == 0:
            rint[r, R_STOPPED] = 1
            return
        dur = sum_max_affine(la, lb, nl, k)
    dur += stall
    end = t + dur
    if rint[r, R_GLEN]:
        first_token_gaps(r, t + stall + first, rp, o)
    if k > 1:
        record_run(k, n, l0, dc, l1, dk, xx, pi[P_K1] > 0, o, x)
    advance_decodes(r, k, end, q, m, s, rp, o, x)
    o.fsc[F_BUSY] += dur
    isc[I_ITER] += k
    isc[I_TOKENS] += k * n
    schedule(r, end, rp, o)


@njit_inline
def record_run(k, n, l0, dc, l1, dk, xx, spec, o, x):
    """``Engine.record_run`` (kind 0) or ``speculative.record_spec_run`` (kind 2: the verify lines, the draft's
    in ``o.spec``)."""
    runs, isc = o.runs, o.isc
    g = isc[I_RUNLEN]
    if spec:
        sp = x.sp
        runs[g] = 2.0
        for i in range(6):
            runs[g + 1 + i] = sp[i]
        h = isc[I_SPECLEN]
        for i in range(6):
            o.spec[h + i] = sp[6 + i]
        isc[I_SPECLEN] = h + 6
    else:
        runs[g], runs[g + 1], runs[g + 2], runs[g + 3], runs[g + 4], runs[g + 5], runs[g + 6] = (0.0, l0, dc, l1, dk,
                                                                                                xx, 0.0)
    runs[g + 7], runs[g + 8], runs[g + 9] = k, n, 0.0
    isc[I_RUNLEN] = g + 10
