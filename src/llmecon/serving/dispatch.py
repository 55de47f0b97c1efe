"""Policy-specific iterations of the serving engine (SPEC E20): the fixed-cadence "train" (departs
every τ, full or not), adaptive static batches (depart when full or at a deadline) and chunked
prefill (a token budget shared by decodes and prompt chunks).

A mixin of ``engine.Engine``: the methods use the engine's request arrays and replica helpers
(admission, preemption, runs of decode steps); the engine keeps the event loop and plain
continuous batching.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from .batchstate import last_k_steps_within, max_affine_at, sum_max_affine
from .status import WAITING

if TYPE_CHECKING:
    from .engine import _Replica



class PolicyIterations:
    """``_act_train``, ``_act_adaptive`` and ``_chunked_iteration`` for ``Engine``."""

    # ---- train schedule ------------------------------------------------------------------------
    def _act_train(self, rep: _Replica, t: float) -> None:
        """A departure at t (on the clock grid): board, run one mixed step (or a run of k decode
        trains when nobody can board), schedule the next departure."""
        pool, ds = rep.pool, rep.ds
        m = pool.model
        tau = pool.tau
        stall = 0.0
        if ds.n and ds.total(m.held, 1) > m.kv_capacity_bytes:
            stall = self._preempt(rep, 0.0)
        board = self._admit(rep, t, budget=1 << 62) if pool.queue and ds.n < pool.batch_cap else []
        pc = pk = 0.0
        tok = 0
        for rid in board:
            if self.resume[rid] == 1:
                stall += self._swap_s(pool, self.prompt[rid] + self.gen[rid] - 1)
            elif self.resume[rid] == 0:
                g = self.gen[rid]
                c, k = (self.pf_c[rid], self.pf_k[rid]) if g == 0 else m.prefill_part(
                    rid, self.cached[rid], self.prompt[rid] + g, self.prompt[rid] + g)
                pc += c
                pk += k
                tok += self.prompt[rid] + g - self.cached[rid]
        n = ds.n
        if not n and not board:
            t_next = self._next_arrival(pool)
            if t_next < math.inf:
                self._schedule(rep, t + max(1, math.ceil((t_next - t) / tau - 1e-12)) * tau)
            return
        lines = self._run_lines(rep, pc, pk, tok)
        k = 1
        if not board and not stall and self.cfg.closed_form_runs:
            k = ds.steps_to_event()
            dh = ds.slope(m.held)
            if dh > 0:
                k = min(k, int((m.kv_capacity_bytes - ds.total(m.held)) // dh))
            k = max(int(min(k, 1 << 40)), 1)
            if ds.n < pool.batch_cap:
                t_next = self._next_arrival(pool)
                if t_next < math.inf:
                    k = min(k, max(1, math.ceil((t_next - t) / tau - 1e-12)))
            k = last_k_steps_within(lines, k, tau)
        last = stall + max_affine_at(lines, k - 1)
        end = t + (k - 1) * tau + last
        if end > self.horizon:
            if k > 1:
                k = max(0, min(k - 1, int((self.horizon - t - last) // tau)))
                while k > 0 and t + (k - 1) * tau + stall + max_affine_at(lines, k - 1) > self.horizon:
                    k -= 1
            else:
                k = 0
            if k == 0:
                for rid in reversed(board):
                    pool.queue.appendleft(rid)
                    self.status[rid] = WAITING
                self._stop(rep)
                return
            last = stall + max_affine_at(lines, k - 1)
            end = t + (k - 1) * tau + last
        first = stall + max_affine_at(lines, 0)
        gaps, wts = self.itl_first
        for tg, cnt in rep.groups.items():
            gaps.append(t + first - tg)
            wts.append(cnt)
        if k > 1:
            self.itl_runs.append((1, lines, k, n, tau))
        done = ds.advance(k) if n else []
        rep.groups = {end: n - len(done)} if n > len(done) else {}
        rep.last_run_end = end
        for rid in done:
            self.gen[rid] = self.out[rid]
            self._finish(rid, end)
        for rid in board:
            if self.resume[rid] == 0:
                self.gen[rid] += 1
                if self.t_first[rid] != self.t_first[rid]:
                    self.t_first[rid] = end
            self._join(rep, rid, end)
        pool.busy_s += stall + sum_max_affine(lines, k)
        pool.iterations += k
        pool.tokens += k * n + tok
        slots = 1
        if last > tau:  # a long train slips the next departure to the next free tick
            slots = math.ceil(last / tau - 1e-12)
            pool.late += 1
        self._schedule(rep, t + (k - 1 + slots) * tau)

    # ---- adaptive (static batches) -------------------------------------------------------------
    def _act_adaptive(self, rep: _Replica, t: float) -> None:
        pool, ds = rep.pool, rep.ds
        if ds.n:
            return self._decode_run(rep, t)
        rep.static = False
        q = pool.queue
        if not q:
            return
        if len(q) < pool.batch_cap and t < self.arr[q[0]] + pool.deadline - 1e-12:
            self._schedule(rep, self.arr[q[0]] + pool.deadline)
            return
        admitted = self._admit(rep, t, budget=1 << 62)
        rep.static = True
        self._prefill_iteration(rep, t, admitted)
        if rep.scheduled is None and not rep.stopped:
            self._act_adaptive(rep, t)

    # ---- chunked prefill -----------------------------------------------------------------------
    def _chunked_iteration(self, rep: _Replica, t: float) -> bool:
        """Decodes first, then prefill chunks under the token budget (Sarathi-Serve / vLLM v1)."""
        pool, ds = rep.pool, rep.ds
        m = pool.model
        stall = 0.0
        if ds.n and ds.total(m.held, 1) > m.kv_capacity_bytes:
            stall = self._preempt(rep, 0.0)
        rem = pool.chunk - ds.n
        room = pool.batch_cap - ds.n - len(rep.partial)
        if room > 0 and pool.queue:
            for rid in self._admit(rep, t, budget=1 << 62, room=room):
                if self.resume[rid] == 1:
                    stall += self._swap_s(pool, self.prompt[rid] + self.gen[rid] - 1)
                    self._join(rep, rid, t)
                elif self.resume[rid] == 2:
                    self._join(rep, rid, t)
                else:
                    rep.partial.append([rid, self.cached[rid], self.prompt[rid] + self.gen[rid]])
        pc = pk = 0.0
        tok = 0
        finished = []
        for p in rep.partial:
            if rem <= 0:
                break
            rid, done, stop = p
            take = min(stop - done, rem)
            c, k = m.prefill_part(rid, done, done + take, stop)
            pc += c
            pk += k
            tok += take
            rem -= take
            p[1] = done + take
            if p[1] == stop:
                finished.append(p)
        if not tok and not stall:
            return False  # nothing to prefill: plain decode run
        lines = self._run_lines(rep, pc, pk, tok)
        dur = stall + max_affine_at(lines, 0) if (ds.n or tok) else stall
        end = t + dur
        if end > self.horizon:
            self._stop(rep)
            return True
        n = ds.n
        gaps, wts = self.itl_first
        for tg, cnt in rep.groups.items():
            gaps.append(end - tg)
            wts.append(cnt)
        done = ds.advance(1) if n else []
        rep.groups = {end: n - len(done)} if n > len(done) else {}
        rep.last_run_end = end
        for rid in done:
            self.gen[rid] = self.out[rid]
            self._finish(rid, end)
        for p in finished:
            rep.partial.remove(p)
            rid = p[0]
            self.gen[rid] += 1
            if self.t_first[rid] != self.t_first[rid]:
                self.t_first[rid] = end
            self._join(rep, rid, end)
        pool.busy_s += dur
        pool.iterations += 1
        pool.tokens += n + tok
        self._schedule(rep, end)
        return True
