"""The running decode batch of one replica as O(1) aggregates (the engine's hot data structure).

Every running sequence advances one token per decode iteration, so its context is
``L0 + (G - G0)`` where G counts the replica's decode iterations. For the piecewise-linear
per-sequence functions of ``steptime`` (f0 + sum_j a_j·min(L, theta_j)) the batch sums need only
n, S = sum L and, per kink theta_j, the count and context sum of the sequences still below it.
A sequence crossing a kink is an event at a known G (``G0 + theta - L0``); completions likewise
(``G0 + steps left``). Between events every sum is affine in the number of steps taken, which is
what lets the engine advance many identical-composition steps in closed form.
"""

from __future__ import annotations

import heapq
import math

from .steptime import PiecewiseLinear


def scalar(f: PiecewiseLinear):
    """A fast pure-Python evaluator of ``f`` at one context."""
    pairs = [(a, t) for a, t in zip(f.a, f.theta)]
    f0 = f.f0

    def at(L: float) -> float:
        v = f0
        for a, t in pairs:
            v += a * (L if L < t else t)
        return v

    return at


class DecodeSet:
    """Aggregates of one replica's running sequences; see the module docstring."""

    def __init__(self, thetas: tuple[float, ...], funcs: tuple[PiecewiseLinear, ...] | None = None,
                 verify: tuple[PiecewiseLinear, ...] | None = None):
        self.thetas = list(thetas)
        if funcs is not None:  # bound (compute, KV time, held KV): ``run_sums`` needs no arguments
            fc, fk, fh = funcs
            self._coef = (fc.f0, fc.a[0], fk.f0, fk.a[0], fh.f0, fh.a[0])
            self._kcoef = [(th, fc.a[j + 1], fk.a[j + 1], fh.a[j + 1]) for j, th in enumerate(thetas)]
        if verify is not None:  # speculative decoding: the verify step's (compute, KV time), ``verify_sums``
            vc, vk = verify[:2]
            self._vcoef = (vc.f0, vc.a[0], vk.f0, vk.a[0])
            self._vkcoef = [(th, vc.a[j + 1], vk.a[j + 1]) for j, th in enumerate(thetas)]
            if len(verify) == 4:  # and a draft model's decode (compute, KV time), ``draft_sums``
                self._draft = DecodeSet.__new__(DecodeSet)
                self._draft._vcoef = (verify[2].f0, verify[2].a[0], verify[3].f0, verify[3].a[0])
                self._draft._vkcoef = [(th, verify[2].a[j + 1], verify[3].a[j + 1]) for j, th in enumerate(thetas)]
        self.G = 0
        self.n = 0
        self.S = 0
        self.nb = [0] * len(thetas)
        self.sb = [0] * len(thetas)
        self.members: dict[int, tuple[int, int, int]] = {}  # rid -> (G0, L0, stint)
        self.fin: list[tuple[int, int, int]] = []  # (G at which it has all tokens, rid, stint)
        self.cross: list[tuple[int, int, int, int]] = []  # (G, kink index, rid, stint)
        self.order: list[int] = []  # admission order, for LIFO preemption (lazy deletion)
        self._stint = 0

    def add(self, rid: int, L: int, steps_left: int) -> None:
        self._stint += 1
        s = self._stint
        G = self.G
        self.members[rid] = (G, L, s)
        self.n += 1
        self.S += L
        for j, th in enumerate(self.thetas):
            if L < th:
                self.nb[j] += 1
                self.sb[j] += L
                heapq.heappush(self.cross, (G + int(th - L), j, rid, s))
        heapq.heappush(self.fin, (G + steps_left, rid, s))
        self.order.append(rid)

    def context(self, rid: int) -> int:
        G0, L0, _ = self.members[rid]
        return L0 + self.G - G0

    def remove(self, rid: int) -> int:
        """Remove a sequence; returns its context."""
        L = self.context(rid)
        del self.members[rid]
        self.n -= 1
        self.S -= L
        for j, th in enumerate(self.thetas):
            if L < th:
                self.nb[j] -= 1
                self.sb[j] -= L
        return L

    def total(self, f: PiecewiseLinear, shift: int = 0) -> float:
        """sum_i f(L_i + shift), valid while no sequence passes a kink within ``shift`` steps."""
        n = self.n
        v = n * f.f0 + f.a[0] * (self.S + shift * n)
        a = f.a
        for j, th in enumerate(self.thetas):
            nb = self.nb[j]
            v += a[j + 1] * (self.sb[j] + shift * nb + th * (n - nb))
        return v

    def run_sums(self):
        """(total, slope) over the batch of the three functions bound at construction (compute, KV
        time, held KV), at once: the engine's per-run hot path."""
        n, S = self.n, self.S
        fc0, ac, fk0, ak, fh0, ah = self._coef
        c = n * fc0 + ac * S
        dc = ac * n
        k = n * fk0 + ak * S
        dk = ak * n
        h = n * fh0 + ah * S
        dh = ah * n
        if self._kcoef:
            nbs, sbs = self.nb, self.sb
            for j, (th, ac, ak, ah) in enumerate(self._kcoef):
                nb = nbs[j]
                below = sbs[j] + th * (n - nb)
                c += ac * below
                dc += ac * nb
                k += ak * below
                dk += ak * nb
                h += ah * below
                dh += ah * nb
        return c, dc, k, dk, h, dh

    def verify_sums(self, coef=None):
        """(total, slope) of the verify step's compute and KV time over the batch (speculative
        decoding; ``run_sums``' arithmetic on the functions bound as ``verify``)."""
        n, S = self.n, self.S
        fc0, ac, fk0, ak = self._vcoef if coef is None else coef._vcoef
        kcoef = self._vkcoef if coef is None else coef._vkcoef
        c = n * fc0 + ac * S
        dc = ac * n
        k = n * fk0 + ak * S
        dk = ak * n
        if kcoef:
            nbs, sbs = self.nb, self.sb
            for j, (th, ac, ak) in enumerate(kcoef):
                nb = nbs[j]
                below = sbs[j] + th * (n - nb)
                c += ac * below
                dc += ac * nb
                k += ak * below
                dk += ak * nb
        return c, dc, k, dk

    def draft_sums(self):
        """``verify_sums`` of the draft model's decode functions (bound as ``verify[2:]``)."""
        return self.verify_sums(self._draft)

    def slope(self, f: PiecewiseLinear) -> float:
        """Increase of ``total(f)`` per decode step (no kink crossed)."""
        v = f.a[0] * self.n
        for j in range(len(self.thetas)):
            v += f.a[j + 1] * self.nb[j]
        return v

    def _clean(self, heap: list) -> None:
        members = self.members
        while heap:
            top = heap[0]
            m = members.get(top[-2])
            if m is not None and m[2] == top[-1]:
                return
            heapq.heappop(heap)

    def steps_to_event(self) -> int:
        """Decode steps until the next completion or kink crossing (>= 1 when any member runs)."""
        fin = self.fin
        if fin:
            top = fin[0]
            m = self.members.get(top[1])
            if m is None or m[2] != top[2]:
                self._clean(fin)
        k = fin[0][0] - self.G if fin else math.inf
        if self.cross:
            self._clean(self.cross)
            if self.cross:
                k = min(k, self.cross[0][0] - self.G)
        return k

    def advance(self, k: int) -> list[int]:
        """Advance k steps; apply kink crossings; return the rids that have all their tokens now."""
        G = self.G = self.G + k
        n = self.n
        self.S += k * n
        members = self.members
        if self.thetas:
            nbs, sbs, thetas = self.nb, self.sb, self.thetas
            for j in range(len(thetas)):
                sbs[j] += k * nbs[j]
            cross = self.cross
            while cross and cross[0][0] <= G:  # stale entries (removed sequences) are dropped unapplied
                _, j, rid, stint = heapq.heappop(cross)
                m = members.get(rid)
                if m is not None and m[2] == stint:
                    nbs[j] -= 1
                    sbs[j] -= thetas[j]
        done = []
        fin = self.fin
        while fin and fin[0][0] <= G:
            _, rid, stint = heapq.heappop(fin)
            m = members.get(rid)
            if m is not None and m[2] == stint:
                done.append(rid)
        if done:
            if self.thetas:
                for rid in done:
                    self.remove(rid)
            else:  # ``remove`` without kinks
                S = self.S
                for rid in done:
                    G0, L0, _ = members.pop(rid)
                    S -= L0 + G - G0
                self.S = S
                self.n = n - len(done)
        return done

    def newest(self) -> int | None:
        """Most recently admitted running sequence (the vLLM preemption victim)."""
        order = self.order
        while order and order[-1] not in self.members:
            order.pop()
        return order[-1] if order else None


def sum_max_affine(lines: tuple[tuple[float, float], ...], k: int) -> float:
    """sum_{j=0}^{k-1} max_i (a_i + b_i·j) exactly (upper envelope of lines, integer breakpoints)."""
    if k <= 1:
        return max([a for a, _ in lines]) if k == 1 else 0.0
    a, b = lines[0]
    for a2, b2 in lines:  # the line on top at j = 0 (ties: the steeper one)
        if a2 > a or (a2 == a and b2 > b):
            a, b = a2, b2
    for _, b2 in lines:
        if b2 > b:
            break
    else:  # it is also the steepest: on top throughout (the loop below's single segment)
        return 0.0 + (k * a + b * (k - 1) * k / 2.0)
    j, total = 0, 0.0
    while j < k:
        a, b = lines[0]
        for a2, b2 in lines:  # the line on top at j (ties: the steeper one)
            v, top = a2 + b2 * j, a + b * j
            if v > top or (v == top and b2 > b):
                a, b = a2, b2
        nxt = k
        for a2, b2 in lines:
            if b2 > b:  # first integer j' > j with a2 + b2·j' > a + b·j'
                x = (a - a2) / (b2 - b)
                if x < nxt:
                    jj = math.floor(x) + 1
                    nxt = jj if jj > j else j + 1
        total += (nxt - j) * a + b * (j + nxt - 1) * (nxt - j) / 2.0
        j = nxt
    return total


def max_affine_at(lines, j: int) -> float:
    """max_i (a_i + b_i·j): the length of step j of a run."""
    return max([a + b * j for a, b in lines])


# ---- how many identical steps fit a gap ----------------------------------------------------------


def first_k_reaching(lines, kmax: int, gap: float) -> tuple[int, float]:
    """Smallest k in [1, kmax] whose k steps end at or after ``gap`` (kmax if none), and their sum.
    Steps never shrink, so k <= ceil(gap / first step): usually one or two sums decide it."""
    first = max([a for a, _ in lines])
    hi = min(kmax, max(1, math.ceil(gap / first)))
    t_hi = sum_max_affine(lines, hi)
    if t_hi < gap:  # only possible when hi == kmax
        return hi, t_hi
    if hi == 1:
        return 1, t_hi
    t_lo = sum_max_affine(lines, hi - 1)
    if t_lo < gap:
        return hi, t_hi
    lo = 1  # sum(1) < gap is the caller's precondition; sum(hi - 1) >= gap
    hi, t_hi = hi - 1, t_lo
    while hi - lo > 1:
        mid = (lo + hi) // 2
        t = sum_max_affine(lines, mid)
        if t < gap:
            lo = mid
        else:
            hi, t_hi = mid, t
    return hi, t_hi


def last_k_within(lines, kmax: int, gap: float) -> int:
    """Largest k in [0, kmax] whose k steps end no later than ``gap``."""
    if sum_max_affine(lines, kmax) <= gap:
        return kmax
    lo, hi = 0, kmax  # sum(lo) <= gap < sum(hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if sum_max_affine(lines, mid) <= gap:
            lo = mid
        else:
            hi = mid
    return lo


def last_k_steps_within(lines, kmax: int, tau: float) -> int:
    """Largest k in [1, kmax] with every one of the first k steps <= tau (steps never shrink)."""
    if max_affine_at(lines, kmax - 1) <= tau:
        return kmax
    if max_affine_at(lines, 0) > tau:
        return 1
    lo, hi = 1, kmax
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if max_affine_at(lines, mid - 1) <= tau:
            lo = mid
        else:
            hi = mid
    return lo
