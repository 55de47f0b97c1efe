"""The serving simulator's event loop and the mechanisms every policy shares (SPEC E20).

``Engine`` holds the per-request state (plain lists, turned into ``SimResult`` arrays at the end),
the pools of replicas (``Pool``: a shared FCFS queue; ``Replica``: its running batch as
``batchstate.DecodeSet``) and the shared mechanisms: admission under the batch cap, token budget
and KV capacity, prefill iterations, closed-form runs of decode steps, preemption, KV transfers.
The policy of each pool (``policies.Scheduler``) decides when its replicas act and what they run.

One global event loop over request arrivals, KV-transfer completions and replica iterations, in
time order. A replica's iteration is planned when it starts: its batch composition gives its
time from ``steptime.StepModel`` (inference's roofline of the actual mix: decode batch and KV
lengths, prefill tokens or chunks), its effects carry the end time as timestamp, and the replica
acts again at the end. Between events (arrival that could board, completion, sliding-window or
top-k kink, KV exhaustion, horizon) a run of identical-composition decode steps is advanced in
closed form (``batchstate.sum_max_affine``): exact, not an approximation.

Time semantics: requests arriving at or before an iteration boundary may join at that boundary;
the run ends at ``horizon_s``: iterations that would end after it are not started, and whatever
is not finished then is reported in flight. ``drain=True`` runs on until every admitted request
has finished.

Every request ends completed, rejected (with a reason) or in flight; the count is checked at the
end of every run, and Little's law (time-integrated number in system = arrival rate x mean
sojourn, truncated at the horizon: an identity on every sample path, Little 1961; El-Taha &
Stidham 1999) is checked to 1e-6 — a failure raises ``InternalError``.
"""

from __future__ import annotations

import gc
import heapq
import math
from array import array
from collections import deque
from typing import TYPE_CHECKING, Callable

import numpy as np

from ..errors import SpecError, did_you_mean
from .engine_requests import RequestOps
from .batchstate import DecodeSet, first_k_reaching, last_k_within, scalar, sum_max_affine
from .speculative import record_spec_run, spec_lines, spec_params
from .status import COMPLETED, KV_READY, NOT_ARRIVED, PREFILL, REJECTED, RUNNING, SWAP_IN, WAITING, Reason
from .steptime import StepModel, swap_bandwidth
from .workload import Workload

if TYPE_CHECKING:
    from .config import SimConfig
    from .policies import Scheduler

_ACT, _DELIVER = 0, 1  # event kinds on the heap: a replica decides; a KV transfer arrives


# ---------------------------------------------------------------------------------------------


class Pool:
    """Replicas of one deployment sharing a FCFS queue, run by one policy (``scheduler``)."""

    def __init__(self, name: str, kind: str, scheduler: Scheduler, model: StepModel, replicas: int, *,
                 batch_cap: int, budget: int, swap_bw: float | None, chips: int):
        self.name, self.kind, self.model = name, kind, model  # kind: the label PoolStats reports
        self.wake = scheduler.wake  # bound once: called per arrival and per replica decision
        self.act = scheduler.act
        self.static_batches = scheduler.static_batches
        self.batch_cap, self.budget = batch_cap, budget
        self.tau: float | None = None  # train: seconds between departures
        self.swap_bw = swap_bw
        self.chips = chips
        self.queue: deque[int] = deque()
        self.replicas = [Replica(self, i) for i in range(replicas)]
        self.multi = replicas > 1
        self.pending: list[float] = []  # heap of scheduled internal arrivals (KV transfers) to this pool
        self.next_pool: Pool | None = None  # disaggregated: where prefilled requests go
        self.transfer_s: list[float] = []  # ... and each request's KV transfer time to it
        self.sources: list[Pool] = []  # pools whose prefilled requests come here
        self.held = scalar(model.held)
        self.spec = spec_params(model)  # speculative decoding: a step is one token at E per verify iteration
        self.busy_s = 0.0
        self.iterations = 0
        self.tokens = 0  # tokens processed (prefill + decode)
        self.late = 0  # train: departures that left after their tick because the previous train ran long


class Replica:
    """One copy of the deployment: its running batch, its next decision, its policy's state."""

    def __init__(self, pool: Pool, index: int):
        self.pool, self.index = pool, index
        m = pool.model
        d = m.spec is not None and m.draft_model
        self.ds = DecodeSet(m.thetas, (m.dec_compute, m.dec_kv, m.held), None if m.spec is None else (
            (m.ver_compute, m.ver_kv) + ((d.dec_compute, d.dec_kv) if d else ())))
        self.scheduled: float | None = None  # time of the pending act, None when idle
        self.version = 0
        self.partial: list[list[int]] = []  # chunked prefill in progress: [rid, done, stop]
        self.static = False  # adaptive: a static batch is running
        self.link_free = 0.0  # disaggregated prefill: the KV-transfer link is busy until
        self.last_run_end = -math.inf
        self.groups: dict[float, int] = {}  # last-token time -> sequences (inter-token latency)
        self.stopped = False


class Engine(RequestOps):
    """Run one simulation; use ``simulate`` rather than this class directly. Policies act on requests through
    its methods (``engine_requests.RequestOps``: boarding work, requeue, first tokens and gaps)."""

    def __init__(self, models: dict[str, StepModel], wl: Workload, cfg: SimConfig, *,
                 progress: Callable[[float], None] | None = None):
        self.wl, self.cfg, self.progress = wl, cfg, progress
        self.closed_form = cfg.closed_form_runs
        self.max_queue = cfg.max_queue
        n = wl.n
        self.n = n
        horizon = cfg.horizon_s if cfg.horizon_s is not None else (
            wl.duration_s if wl.duration_s is not None else (float(wl.arrival_s[-1]) if n else 0.0))
        self.horizon = math.inf if cfg.drain else float(horizon)
        self.cached = self._prefix_hits()  # an array until ``run`` (the compiled loop keeps arrays)
        self.n_arrived = 0
        self.n_departed = 0
        self.sum_arr = 0.0
        self.sum_dep = 0.0
        self.itl_first = (array("d"), array("d"))  # (gap, weight) of each run's first step
        self.itl_runs = array("d")  # RUN_COLUMNS per run of k > 1 steps (``record_run``): gaps of steps 1..k-1
        self.itl_spec = array("d")  # speculative runs (kind 2): the draft's 3 lines (6 floats) per such run
        self.itl: tuple | None = None  # the compiled loop: the expanded gaps and weights (``metrics.expand_itl``)
        self.timeline = (array("d"), array("d"), array("d"))  # time, waiting, running (at each act)
        self.events = 0
        self._seq = 0
        self.heap: list = [(math.inf, 0, _ACT, None, None)]  # sentinel: never popped (the loop stops first)
        self.end_time = 0.0
        self._build_pools(models)

    # ---- set-up ------------------------------------------------------------------------------
    def _prefix_hits(self) -> np.ndarray:
        pc = self.cfg.prefix_cache
        n = self.n
        if pc is None:
            return np.zeros(n, dtype=np.int64)
        prompt = self.wl.prompt_tokens
        if pc.hit_rate is not None:
            hit = np.random.default_rng([self.cfg.seed, 7]).random(n) < pc.hit_rate
        else:
            if self.wl.prefix_id is None:
                raise SpecError("{prefix_tokens} without {prefix_hit_rate} needs a trace with a prefix_id column",
                                fix="give {prefix_hit_rate}")
            pid = self.wl.prefix_id
            hit = np.zeros(n, dtype=bool)
            seen: set[int] = set()
            for i, p in enumerate(pid.tolist()):
                if p >= 0:
                    hit[i] = p in seen
                    seen.add(p)
        return np.where(hit, np.minimum(pc.prefix_tokens, prompt - 1), 0).astype(np.int64)

    def _build_pools(self, models: dict[str, StepModel]) -> None:
        """The policy builds the pools (``add_pool``, ``class_pools``) and routes each class."""
        self.pools: list[Pool] = []
        self._total_max = int((self.wl.prompt_tokens + self.wl.output_tokens).max()) if self.n else 1
        self.route = self.cfg.policy.build(self, models)
        cid = self.wl.class_id
        self.pool_of = [self.route[0]] * self.n if len(set(map(id, self.route))) == 1 else [
            self.route[c] for c in cid.tolist()]
        # per request, one vectorised call per entry pool: whole-prompt prefill parts (from the cached
        # prefix) and, by the same arithmetic as the scalar ``Pool.held``, ``too_big`` (its whole KV,
        # prompt + output - 1 tokens, exceeds the KV capacity here or where its prefilled KV moves),
        # ``h_need`` (that KV: a static batch's reservation) and ``h_first`` (KV after its prefill
        # and one decode step)
        n, prompt = self.n, self.wl.prompt_tokens
        need = prompt + self.wl.output_tokens - 1
        pf_c, pf_k, h_need, h_first = np.zeros(n), np.zeros(n), np.zeros(n), np.zeros(n)
        too_big = np.zeros(n, dtype=bool)
        cached = self.cached
        for p in {id(p): p for p in self.route}.values():
            idx = np.nonzero(np.isin(cid, [c for c, q in enumerate(self.route) if q is p]))[0]
            if not idx.size:
                continue
            pf_c[idx], pf_k[idx] = p.model.prefill_parts(idx, cached[idx], prompt[idx], prompt[idx])
            h_need[idx] = p.model.held(need[idx])
            h_first[idx] = p.model.held(prompt[idx] + 1)
            big = h_need[idx] > p.model.kv_capacity_bytes
            if p.next_pool is not None:
                big |= np.asarray(p.next_pool.model.held(need[idx]), dtype=float) > p.next_pool.model.kv_capacity_bytes
            too_big[idx] = big
        self.pf_c, self.pf_k, self.too_big, self.h_need, self.h_first = pf_c, pf_k, too_big, h_need, h_first

    def add_pool(self, name: str, kind: str, scheduler: Scheduler, model: StepModel, replicas: int, batch_cap: int,
                 *, budget: int, preemption: str) -> Pool:
        """A pool of ``replicas`` copies of ``model`` run by ``scheduler``; ``budget`` caps the prompt
        tokens of one prefill iteration; ``preemption`` as in ``Continuous``."""
        bw = swap_bandwidth(model)
        if preemption == "swap" and bw is None:
            raise SpecError("the system has no host memory tier with a known bandwidth", field="preemption",
                            value=preemption, fix="use {preemption} recompute (or auto)")
        p = Pool(name, kind, scheduler, model, replicas, batch_cap=batch_cap, budget=budget,
                 swap_bw=bw if preemption in ("auto", "swap") else None, chips=model.chips)
        model.prepare_prefill(self._total_max)
        self.pools.append(p)
        return p

    def class_pools(self, scheduler: Scheduler, kind: str, model: StepModel, *, batch_cap: int, budget: int,
                    preemption: str) -> list[Pool]:
        """One pool per service class (``SimConfig.classes``, each with its cap and replicas), else one
        'main' pool of ``SimConfig.replicas``; returns the pool of each workload class."""
        cfg, names = self.cfg, self.wl.class_names
        if not cfg.classes:
            p = self.add_pool("main", kind, scheduler, model, cfg.replicas, batch_cap, budget=budget,
                              preemption=preemption)
            return [p] * len(names)
        unknown = [c for c in cfg.classes if c not in names]
        if unknown:
            raise SpecError(f"class '{unknown[0]}': not in the workload{did_you_mean(unknown[0], names)}",
                            fix=f"its classes are {', '.join(names)}")
        missing = [c for c in names if c not in cfg.classes]
        if missing:
            raise SpecError(f"class '{missing[0]}': the workload has it but no pool is given for it",
                            fix=f"give every class a ServiceClass ({', '.join(names)})")
        by = {c: self.add_pool(c, kind, scheduler, model, s.replicas, s.batch_cap, budget=budget,
                               preemption=preemption) for c, s in cfg.classes.items()}
        return [by[c] for c in names]

    def link(self, src: Pool, dst: Pool, transfer_s: list[float]) -> None:
        """Requests prefilled in ``src`` decode in ``dst``; request i's KV takes ``transfer_s[i]``."""
        src.next_pool, src.transfer_s = dst, transfer_s
        dst.sources.append(src)

    # ---- the loop ----------------------------------------------------------------------------
    def _push(self, t: float, kind: int, obj, arg=None) -> None:
        self._seq += 1
        heapq.heappush(self.heap, (t, self._seq, kind, obj, arg))

    def schedule(self, rep: Replica, t: float) -> None:
        """``rep`` decides next at ``t`` (replacing a decision scheduled earlier)."""
        v = rep.version = rep.version + 1
        rep.scheduled = t
        self._seq += 1
        heapq.heappush(self.heap, (t, self._seq, _ACT, rep, v))

    def _state(self) -> None:
        """The per-request inputs as lists and the per-request state (the Python loop's form)."""
        n, wl = self.n, self.wl
        self.arr = wl.arrival_s.tolist() + [math.inf]  # sentinel: arr[i] is the next arrival, inf after the last
        self.prompt, self.out = wl.prompt_tokens.tolist(), wl.output_tokens.tolist()
        self.cached, self.pf_c, self.pf_k = self.cached.tolist(), self.pf_c.tolist(), self.pf_k.tolist()
        self.too_big, self.h_need, self.h_first = self.too_big.tolist(), self.h_need.tolist(), self.h_first.tolist()
        self.t_admit, self.t_first, self.t_done = [math.nan] * n, [math.nan] * n, [math.nan] * n
        self.status, self.reason = [NOT_ARRIVED] * n, [Reason.NONE] * n
        self.gen, self.preempted = [0] * n, [0] * n
        self.resume = [PREFILL] * n  # what a waiting request needs before it decodes
        self.join_t = [math.nan] * n

    def run(self) -> None:
        """Run to the horizon. The cyclic garbage collector is paused meanwhile: the loop allocates
        millions of small tuples that are never part of a cycle, and gen-2 collections over them
        would make the run super-linear in the number of requests."""
        self._state()
        enabled = gc.isenabled()
        gc.disable()
        try:
            self._loop()
        finally:
            if enabled:
                gc.enable()

    def _loop(self) -> None:
        arr, n, heap = self.arr, self.n, self.heap
        horizon = self.horizon
        arrive, heappop = self._arrive, heapq.heappop
        tl_t, tl_waiting, tl_running = (a.append for a in self.timeline)
        progress = self.progress
        events = self.events
        i = 0
        t_arr = arr[0]
        tick = max(1, n // 200)
        while True:
            if t_arr <= heap[0][0]:  # both sentinels are inf: the run stops at the horizon at the latest
                if t_arr > horizon or t_arr == math.inf:  # an arrival at the horizon itself arrives (issue 35)
                    break
                arrive(i, t_arr)
                i += 1
                t_arr = arr[i]
                if progress is not None and i % tick == 0:
                    progress(i / n)
                continue
            if heap[0][0] > horizon:
                break
            t, _, kind, obj, arg = heappop(heap)
            if kind == _ACT:  # replica ``obj`` decides: record the queue, then its pool's policy acts
                if arg != obj.version or obj.stopped:
                    continue
                obj.scheduled = None
                events += 1
                pool = obj.pool
                tl_t(t)
                tl_waiting(len(pool.queue))
                tl_running(obj.ds.n + len(obj.partial))
                pool.act(self, obj, t)
            else:
                heappop(obj.pending)
                self._deliver(obj, arg, t)
        self.events = events
        self.next_index = i
        self.end_time = horizon if math.isfinite(horizon) else max(
            [x for x in self.t_done if x == x] + [arr[i - 1] if i else 0.0])

    def _arrive(self, rid: int, t: float) -> None:
        self.status[rid] = WAITING
        self.n_arrived += 1
        self.sum_arr += t
        pool = self.pool_of[rid]
        if self.too_big[rid]:
            return self._reject(rid, t, Reason.KV_CAPACITY)
        if self.max_queue is not None and len(pool.queue) >= self.max_queue:
            return self._reject(rid, t, Reason.QUEUE_FULL)
        pool.queue.append(rid)
        pool.wake(self, pool, t)

    def _deliver(self, pool: Pool, rid: int, t: float) -> None:
        """A request's KV arrives at the decode pool (disaggregated)."""
        self.resume[rid] = KV_READY
        pool.queue.append(rid)
        pool.wake(self, pool, t)

    def _reject(self, rid: int, t: float, reason: Reason) -> None:
        self.status[rid] = REJECTED
        self.reason[rid] = reason
        self.t_done[rid] = t
        self._depart(t)

    def _depart(self, t: float) -> None:
        self.n_departed += 1
        self.sum_dep += t

    def finish(self, rid: int, t: float) -> None:
        """Request ``rid`` completes at ``t``."""
        self.status[rid] = COMPLETED
        self.t_done[rid] = t
        self._depart(t)

    # ---- the mechanisms the policies share ---------------------------------------------------
    def admit(self, rep: Replica, t: float, *, budget: int, room: int | None = None) -> list[int]:
        """FCFS admission from the pool queue under the batch cap (or ``room`` slots), the token
        budget and KV capacity. Static batches reserve KV for the whole request."""
        pool, ds = rep.pool, rep.ds
        whole = pool.static_batches
        q = pool.queue
        held = pool.held
        cap_kv = pool.model.kv_capacity_bytes
        # KV after the next decode step (every running sequence one token longer) must fit: then a
        # head-of-line request that does not fit stays blocked until a completion (KV only grows)
        used = ds.total(pool.model.held, 1) + (sum(held(p[2] + 1) for p in rep.partial) if rep.partial else 0)
        slots = (pool.batch_cap - ds.n - len(rep.partial)) if room is None else room
        out, tok = [], 0
        resume, prompt, gen, status, t_admit = self.resume, self.prompt, self.gen, self.status, self.t_admit
        while q and len(out) < slots:
            rid = q[0]
            g = gen[rid]
            if resume[rid] == PREFILL:
                need = prompt[rid] + g - self.cached[rid]
                # KV at L_after + 1, L_after = prompt + generated (precomputed for a first prefill)
                h = self.h_need[rid] if whole else self.h_first[rid] if g == 0 else held(prompt[rid] + g + 1)
            else:
                need = 0
                h = self.h_need[rid] if whole else held(prompt[rid] + g)  # L_after = prompt + generated - 1
            if out and tok + need > budget:
                break
            if used + h > cap_kv:
                break
            q.popleft()
            out.append(rid)
            tok += need
            used += h
            status[rid] = RUNNING
            if t_admit[rid] != t_admit[rid]:
                t_admit[rid] = t
        return out

    def swap_s(self, pool: Pool, L: int) -> float:
        """Moving one sequence's KV between HBM and the host tier: bytes on all chips / bandwidth."""
        return pool.held(L) * pool.chips / pool.swap_bw

    def prefill_iteration(self, rep: Replica, t: float, admitted: list[int]) -> bool:
        """One iteration prefilling ``admitted`` (decodes pause). Returns True when the replica's
        next act is settled (iteration scheduled, or stopped at the horizon); False when only
        requests with KV already in place joined and no iteration was needed."""
        pool = rep.pool
        m = pool.model
        pc, pk, tok, stall = self.boarding_work(pool, admitted)
        if tok:  # the roofline of the iteration (StepModel.step_s)
            b, w, x = m.terms(tok)
            dur = max(b + pc, w + pk, x) + stall
        else:
            dur = 0.0 + stall
        end = t + dur
        if end > self.horizon:
            self.requeue(pool, admitted)
            self.stop(rep)
            return True
        if dur == 0.0:  # only transferred-KV joins: no iteration needed
            for rid in admitted:
                self.join(rep, rid, t)
            return False
        pool.busy_s += dur
        pool.iterations += 1
        pool.tokens += tok
        nxt, resume, gen = pool.next_pool, self.resume, self.gen
        for rid in admitted:
            if resume[rid] == PREFILL:
                self.prefilled(rid, end)
                if nxt is not None and gen[rid] < self.out[rid]:
                    self._send(rep, rid, end)
                    continue
            self.join(rep, rid, end)
        self.schedule(rep, end)
        return True

    def join(self, rep: Replica, rid: int, t: float) -> None:
        """A sequence with KV in place starts (or resumes) decoding; finishes if it has all tokens."""
        self.resume[rid] = PREFILL
        g, o = self.gen[rid], self.out[rid]
        if g >= o:
            self.finish(rid, t)
            return
        rep.ds.add(rid, self.prompt[rid] + g - 1, o - g)
        self.join_t[rid] = t
        groups = rep.groups
        groups[t] = groups.get(t, 0) + 1

    def _send(self, rep: Replica, rid: int, end: float) -> None:
        """Disaggregated: queue the request's KV on the prefill replica's scale-out link (FIFO)."""
        start = max(end, rep.link_free)
        pool = rep.pool
        done = start + pool.transfer_s[rid]
        rep.link_free = done
        nxt = pool.next_pool
        heapq.heappush(nxt.pending, done)
        self._push(done, _DELIVER, nxt, rid)

    def stop(self, rep: Replica) -> None:
        """``rep`` stops for good (its next iteration would end after the horizon)."""
        rep.stopped = True

    def preempt(self, rep: Replica) -> float:
        """Evict newest sequences until the next step's KV fits; returns the swap-out stall."""
        pool, ds = rep.pool, rep.ds
        cap = pool.model.kv_capacity_bytes
        stall = 0.0
        while ds.n > 1 and ds.total(pool.model.held, 1) > cap:
            rid = ds.newest()
            L = ds.remove(rid)
            self.gen[rid] = L - self.prompt[rid] + 1  # tokens so far (context = prompt + generated - 1)
            self._leave_group(rep, rid)
            self.preempted[rid] += 1
            self.status[rid] = WAITING
            if pool.swap_bw:
                stall += self.swap_s(pool, L)
                self.resume[rid] = SWAP_IN
            else:
                self.resume[rid] = PREFILL
            pool.queue.appendleft(rid)
        return stall

    def _leave_group(self, rep: Replica, rid: int) -> None:
        jt = self.join_t[rid]
        key = jt if jt > rep.last_run_end else rep.last_run_end
        c = rep.groups.get(key, 0) - 1
        if c > 0:
            rep.groups[key] = c
        else:
            rep.groups.pop(key, None)

    def run_lines(self, rep: Replica, extra_c: float = 0.0, extra_k: float = 0.0, extra_tok: int = 0):
        """The (value at step 0, increase per step) of the compute, memory and comm terms of a run
        of decode steps, plus prefill chunks riding along in its first step."""
        ds = rep.ds
        c0, dc, k0, dk, _, _ = ds.run_sums()
        b, w, x = rep.pool.model.terms(ds.n + extra_tok)
        return ((b + c0 + extra_c, dc), (w + k0 + extra_k, dk), (x, 0.0))

    def record_run(self, kind: int, lines, k: int, n: int, tau: float) -> None:
        """A run of ``k`` > 1 steps of ``n`` sequences (kind 0: back to back; 1: trains every
        ``tau``): ``metrics.expand_itl`` expands the gaps of its steps 1..k-1 at the end."""
        (a0, b0), (a1, b1), (a2, b2) = lines
        self.itl_runs.extend((kind, a0, b0, a1, b1, a2, b2, k, n, tau))

    def advance_decodes(self, rep: Replica, k: int, end: float) -> None:
        """The running batch advances ``k`` steps ending at ``end``: finished requests complete, the
        rest form one group whose last token came at ``end``."""
        ds = rep.ds
        n = ds.n
        done = ds.advance(k) if n else ()
        left = n - len(done)
        rep.groups = {end: left} if left > 0 else {}
        rep.last_run_end = end
        if done:  # ``finish`` of each, in order
            out, gen, status, t_done = self.out, self.gen, self.status, self.t_done
            sum_dep = self.sum_dep
            for rid in done:
                gen[rid] = out[rid]
                status[rid] = COMPLETED
                t_done[rid] = end
                sum_dep += end
            self.sum_dep = sum_dep
            self.n_departed += len(done)

    def decode_run(self, rep: Replica, t: float) -> None:
        """Decode iterations for the running batch: as many identical-composition steps as no event
        separates, in closed form."""
        pool, ds = rep.pool, rep.ds
        m = pool.model
        stall = 0.0
        cap = m.kv_capacity_bytes
        c0, dc, k0, dk, h0, dh = ds.run_sums()
        if h0 + dh > cap:
            stall = self.preempt(rep)
            c0, dc, k0, dk, h0, dh = ds.run_sums()
        k = ds.steps_to_event() if self.closed_form else 1
        if dh > 0 and k > 1:
            k = min(k, int((cap - h0) // dh))
        k = max(int(min(k, 1 << 40)), 1)
        n = ds.n
        b, w, x = m.terms(n)
        l0, l1 = b + c0, w + k0
        lines = ((l0, dc), (l1, dk), (x, 0.0))
        if pool.spec is None:
            first = max(l0, l1, x)
        else:
            lines, spec_parts = spec_lines(pool, ds, lines)
            first = max([a for a, _ in lines])
        dur = None
        # arrivals matter only if the batch has room and nobody is blocked ahead of them
        if k > 1 and (pool.multi or (n < pool.batch_cap and not pool.queue and not pool.static_batches)):
            t_next = self.next_arrival(pool) if (pool.pending or pool.sources) else self.arr[self.n_arrived]
            if t + stall + first >= t_next:
                k = 1
            elif t_next < math.inf:
                k, dur = first_k_reaching(lines, k, t_next - t - stall)
        if dur is None:
            dur = first if k == 1 else sum_max_affine(lines, k)
        if t + stall + dur > self.horizon:
            k = last_k_within(lines, k, self.horizon - t - stall)
            if k == 0:
                self.stop(rep)
                return
            dur = sum_max_affine(lines, k)
        dur += stall
        end = t + dur
        if rep.groups:
            self.first_token_gaps(rep, t + stall + first)
        if k > 1:
            if pool.spec is None:
                self.itl_runs.extend((0, l0, dc, l1, dk, x, 0.0, k, n, 0.0))  # record_run, inlined
            else:
                record_spec_run(self, spec_parts, k, n)
        self.advance_decodes(rep, k, end)
        pool.busy_s += dur
        pool.iterations += k
        pool.tokens += k * n
        self.schedule(rep, end)

    def next_arrival(self, pool: Pool) -> float:
        """Earliest time a request could next join ``pool``'s queue (a lower bound)."""
        t = self.arr[self.n_arrived]  # arrivals are processed in order: the next one not yet arrived (inf: none)
        if pool.pending:
            t = min(t, pool.pending[0])
        # a new KV delivery needs a source pool's prefill iteration to end first; running ones have theirs queued
        for src in pool.sources:
            for r in src.replicas:
                if r.scheduled is not None:
                    t = min(t, r.scheduled)
        return t

