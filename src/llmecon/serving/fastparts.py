"""numba helpers of the compiled serving loop (``fastloop``): the roofline-run arithmetic of
``batchstate`` (``sum_max_affine``, ``first_k_reaching``, ``last_k_within``), the heaps, and the
running batch of one replica (``batchstate.DecodeSet``) as rows of preallocated arrays, each a
port of the Python code with the same floating-point operations in the same order."""

from __future__ import annotations

import math

from ._jit import njit
from .fastlayout import R_CROSSLEN, R_FINLEN, R_G, R_GLEN, R_N, R_ORDERLEN, R_S, R_STINT


@njit
def _max3(a, b, c):
    m = a
    if b > m:
        m = b
    if c > m:
        m = c
    return m


@njit
def max_first(la, nl):
    """max of la[0..nl-1] (the first of equal values, as CPython's ``max``)."""
    m = la[0]
    for i in range(1, nl):
        if la[i] > m:
            m = la[i]
    return m


@njit
def max_affine_at(la, lb, nl, j):
    """``batchstate.max_affine_at``: max_i (la[i] + lb[i]·j)."""
    m = la[0] + lb[0] * j
    for i in range(1, nl):
        v = la[i] + lb[i] * j
        if v > m:
            m = v
    return m


@njit
def sum_max_affine(la, lb, nl, k):
    """``batchstate.sum_max_affine`` over the lines (la[i], lb[i]), i = 0..nl-1."""
    if k <= 1:
        if k == 1:
            return max_first(la, nl)
        return 0.0
    a, b = la[0], lb[0]
    for i in range(nl):
        a2, b2 = la[i], lb[i]
        if a2 > a or (a2 == a and b2 > b):
            a, b = a2, b2
    steepest = True
    for i in range(nl):
        if lb[i] > b:
            steepest = False
            break
    if steepest:
        return 0.0 + (k * a + b * (k - 1) * k / 2.0)
    j = 0
    total = 0.0
    while j < k:
        a, b = la[0], lb[0]
        for i in range(nl):
            a2, b2 = la[i], lb[i]
            v, top = a2 + b2 * j, a + b * j
            if v > top or (v == top and b2 > b):
                a, b = a2, b2
        nxt = k
        for i in range(nl):
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
def first_k_reaching(la, lb, nl, kmax, gap, out):
    """``batchstate.first_k_reaching``: writes (k, sum) to ``out``."""
    first = max_first(la, nl)
    q = gap / first
    c = kmax if q >= 4.0e18 else int(math.ceil(q))
    hi = min(kmax, max(1, c))
    t_hi = sum_max_affine(la, lb, nl, hi)
    if t_hi < gap or hi == 1:
        out[0], out[1] = hi, t_hi
        return
    t_lo = sum_max_affine(la, lb, nl, hi - 1)
    if t_lo < gap:
        out[0], out[1] = hi, t_hi
        return
    lo = 1
    hi, t_hi = hi - 1, t_lo
    while hi - lo > 1:
        mid = (lo + hi) // 2
        t = sum_max_affine(la, lb, nl, mid)
        if t < gap:
            lo = mid
        else:
            hi, t_hi = mid, t
    out[0], out[1] = hi, t_hi


@njit
def last_k_within(la, lb, nl, kmax, gap):
    if sum_max_affine(la, lb, nl, kmax) <= gap:
        return kmax
    lo, hi = 0, kmax
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if sum_max_affine(la, lb, nl, mid) <= gap:
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
def verify_sums(r, rint, nb, sb, vcoef, vkc, vs):
    """``DecodeSet.verify_sums`` (and ``draft_sums``: the draft model's coefficients) into vs = (c, dc, k, dk)."""
    n, S = rint[r, R_N], rint[r, R_S]
    fc0, ac, fk0, ak = vcoef[0], vcoef[1], vcoef[2], vcoef[3]
    c = n * fc0 + ac * S
    dc = ac * n
    k = n * fk0 + ak * S
    dk = ak * n
    for j in range(vkc.shape[0]):
        th, ac, ak = vkc[j, 0], vkc[j, 1], vkc[j, 2]
        nbj = nb[r, j]
        below = sb[r, j] + th * (n - nbj)
        c += ac * below
        dc += ac * nbj
        k += ak * below
        dk += ak * nbj
    vs[0], vs[1], vs[2], vs[3] = c, dc, k, dk


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
