"""What a policy does to the requests of a replica, as ``Engine`` methods (mixed into ``engine.Engine``): the
work that boarding requests bring, putting boarded requests back, a prefill's first token and the gaps before
a run's first token. Policies act through these, not on the engine's per-request lists.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .status import PREFILL, SWAP_IN, WAITING

if TYPE_CHECKING:
    from .engine import Pool, Replica


class RequestOps:
    """The per-request bookkeeping the policies share (``Engine`` holds the lists: resume, prompt, gen,
    cached, status, t_first, itl_first, the prefill parts pf_c/pf_k)."""

    def boarding_work(self, pool: Pool, rids) -> tuple[float, float, int, float]:
        """(compute s, memory s, tokens, stall s) that boarding ``rids`` adds to an iteration: each prefill's
        remaining prompt (the whole prompt at its first prefill, ``StepModel.prefill_part`` of the rest after a
        preemption), and a swap-in's PCIe time (``swap_s``)."""
        m = pool.model
        pc = pk = stall = 0.0
        tok = 0
        resume, prompt, gen, cached = self.resume, self.prompt, self.gen, self.cached
        for rid in rids:
            r = resume[rid]
            if r == PREFILL:
                g = gen[rid]
                if g == 0:
                    c, k = self.pf_c[rid], self.pf_k[rid]
                else:
                    c, k = m.prefill_part(rid, cached[rid], prompt[rid] + g, prompt[rid] + g)
                pc += c
                pk += k
                tok += prompt[rid] + g - cached[rid]
            elif r == SWAP_IN:
                stall += self.swap_s(pool, prompt[rid] + gen[rid] - 1)
        return pc, pk, tok, stall

    def requeue(self, pool: Pool, rids) -> None:
        """Put just-admitted ``rids`` back at the head of ``pool``'s queue, in their order (their iteration
        would end after the horizon)."""
        queue, status = pool.queue, self.status
        for rid in reversed(rids):
            queue.appendleft(rid)
            status[rid] = WAITING

    def first_token_gaps(self, rep: Replica, t_token: float) -> None:
        """The inter-token gap of each group of ``rep``'s running sequences whose next token comes at
        ``t_token``: from the group's last token (``Replica.groups``) to it."""
        gaps, wts = self.itl_first
        for tg, cnt in rep.groups.items():
            gaps.append(t_token - tg)
            wts.append(cnt)

    def prefilled(self, rid: int, end: float) -> None:
        """``rid``'s prefill ended at ``end``: it emitted its next token (the first one: its TTFT)."""
        self.gen[rid] += 1
        t_first = self.t_first
        if t_first[rid] != t_first[rid]:  # NaN: no first token yet
            t_first[rid] = end
