"""The serving simulator's step loop (SPEC E20).

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
from typing import Callable

import numpy as np

from ..errors import SpecError, did_you_mean
from .batchstate import DecodeSet, first_k_reaching, last_k_within, scalar, sum_max_affine
from .dispatch import PolicyIterations
from .policies import Continuous, Disaggregated, SimConfig
from .status import DONE, FUTURE, REJECTED, RUNNING, WAITING
from .steptime import StepModel
from .workload import Workload
from ..step.inference import decode_of

HOST_TIER_KINDS = ("host_dram", "cpu_lpddr")


# ---------------------------------------------------------------------------------------------


class _Pool:
    """Replicas of one deployment sharing a FCFS queue."""

    def __init__(self, name: str, kind: str, model: StepModel, replicas: int, *, batch_cap: int,
                 budget: int, chunk: int | None, tau: float | None, deadline: float | None, preemption: str,
                 swap_bw: float | None, chips: int):
        self.name, self.kind, self.model = name, kind, model
        self.batch_cap, self.budget, self.chunk, self.tau, self.deadline = batch_cap, budget, chunk, tau, deadline
        self.swap_bw = swap_bw if preemption in ("auto", "swap") else None
        self.chips = chips
        self.queue: deque[int] = deque()
        self.replicas: list[_Replica] = []
        self.multi = replicas > 1
        self.static_batches = kind == "adaptive"
        self.pending: list[float] = []  # heap of scheduled internal arrivals (KV transfers) to this pool
        self.next_pool: _Pool | None = None  # disaggregated: where prefilled requests go
        self.held = scalar(model.held)
        self.busy_s = 0.0
        self.iterations = 0
        self.tokens = 0  # tokens processed (prefill + decode)
        self.late = 0  # train: departures that left after their tick because the previous train ran long


class _Replica:
    def __init__(self, pool: _Pool, index: int):
        self.pool, self.index = pool, index
        self.ds = DecodeSet(pool.model.thetas)
        self.scheduled: float | None = None  # time of the pending act, None when idle
        self.version = 0
        self.partial: list[list[int]] = []  # chunked prefill in progress: [rid, done, stop]
        self.static = False  # adaptive: a static batch is running
        self.link_free = 0.0  # disaggregated prefill: the KV-transfer link is busy until
        self.last_run_end = -math.inf
        self.groups: dict[float, int] = {}  # last-token time -> sequences (inter-token latency)
        self.stopped = False


class Engine(PolicyIterations):
    """Run one simulation; use ``simulate`` rather than this class directly."""

    def __init__(self, models: dict[str, StepModel], wl: Workload, cfg: SimConfig, *,
                 progress: Callable[[float], None] | None = None):
        self.wl, self.cfg, self.progress = wl, cfg, progress
        self.closed_form = cfg.closed_form_runs
        n = wl.n
        self.n = n
        self.arr = wl.arrival_s.tolist()
        self.prompt = wl.prompt_tokens.tolist()
        self.out = wl.output_tokens.tolist()
        horizon = cfg.horizon_s if cfg.horizon_s is not None else (
            wl.duration_s if wl.duration_s is not None else (self.arr[-1] if n else 0.0))
        self.horizon = math.inf if cfg.drain else float(horizon)
        self.t_admit = [math.nan] * n
        self.t_first = [math.nan] * n
        self.t_done = [math.nan] * n
        self.status = [FUTURE] * n
        self.reason = [0] * n
        self.gen = [0] * n
        self.preempted = [0] * n
        self.resume = [0] * n  # 0 needs prefill, 1 swapped out, 2 KV ready (transferred)
        self.join_t = [math.nan] * n
        self.cached = self._prefix_hits()
        self.n_arrived = 0
        self.n_departed = 0
        self.sum_arr = 0.0
        self.sum_dep = 0.0
        self.itl_first = (array("d"), array("d"))  # (gap, weight) of each run's first step
        self.itl_runs: list[tuple] = []  # (kind, lines, k, n, tau): gaps of steps 1..k-1
        self.timeline = (array("d"), array("d"), array("d"))  # time, waiting, running (at each act)
        self.events = 0
        self._seq = 0
        self.heap: list = []
        self.end_time = 0.0
        self._build_pools(models)

    # ---- set-up ------------------------------------------------------------------------------
    def _prefix_hits(self) -> list[int]:
        pc = self.cfg.prefix_cache
        n = self.n
        if pc is None:
            return [0] * n
        prompt = self.wl.prompt_tokens
        if pc.hit_rate is not None:
            hit = np.random.default_rng([self.cfg.seed, 7]).random(n) < pc.hit_rate
        else:
            if self.wl.prefix_id is None:
                raise SpecError("--prefix-tokens without --prefix-hit-rate needs a trace with a prefix_id column; "
                                "give --prefix-hit-rate")
            pid = self.wl.prefix_id
            hit = np.zeros(n, dtype=bool)
            seen: set[int] = set()
            for i, p in enumerate(pid.tolist()):
                if p >= 0:
                    hit[i] = p in seen
                    seen.add(p)
        return np.where(hit, np.minimum(pc.prefix_tokens, prompt - 1), 0).astype(np.int64).tolist()

    def _build_pools(self, models: dict[str, StepModel]) -> None:
        cfg, wl = self.cfg, self.wl
        pol = cfg.policy
        self.pools: list[_Pool] = []
        total_max = int((wl.prompt_tokens + wl.output_tokens).max()) if self.n else 1

        def swap_bw(model: StepModel):
            if model.override or model.dep is None:
                return None
            tiers = [t for t in model.dep.system.tiers if t.kind in HOST_TIER_KINDS and t.bandwidth_bytes_per_s]
            if not tiers:
                return None
            # the replica's share of the host tier: chips of the plan over chips of the system
            return tiers[0].bandwidth_bytes_per_s * model.dep.plan.chips / model.dep.system.chips

        def pool(name, kind, model, replicas, cap):
            budget = getattr(pol, "max_batched_tokens", 1 << 62)
            chunk = getattr(pol, "chunk_tokens", None)
            tau = getattr(pol, "tau_s", None)
            deadline = getattr(pol, "deadline_s", None)
            pre = getattr(pol, "preemption", "auto")
            if pre == "swap" and swap_bw(model) is None:
                raise SpecError("--preemption swap: the system has no host memory tier with a known bandwidth; use "
                                "--preemption recompute (or auto)")
            p = _Pool(name, kind, model, replicas, batch_cap=cap, budget=budget, chunk=chunk, tau=tau,
                      deadline=deadline, preemption=pre, swap_bw=swap_bw(model), chips=model.chips)
            if kind == "train" and p.tau is None:
                p.tau = self._default_tau(model, cap)
            p.replicas = [_Replica(p, i) for i in range(replicas)]
            model.prepare_prefill(total_max)
            self.pools.append(p)
            return p

        if isinstance(pol, Disaggregated):
            if cfg.classes:
                raise SpecError("--policy disaggregated: service classes are not supported with disaggregation; "
                                "drop the classes or use another policy")
            pre = pool("prefill", "prefill", models["prefill"], pol.prefill_replicas, pol.prefill_batch_cap)
            dec = pool("decode", "decode", models["decode"], pol.decode_replicas, pol.batch_cap)
            pre.next_pool = dec
            self.route = [pre] * len(wl.class_names)
            self._transfer_s = self._transfer_times(models["prefill"])
        else:
            kind = pol.name if not (isinstance(pol, Continuous) and pol.chunk_tokens) else "chunked"
            if cfg.classes:
                unknown = [c for c in cfg.classes if c not in wl.class_names]
                if unknown:
                    raise SpecError(f"class '{unknown[0]}': not in the workload{did_you_mean(unknown[0], wl.class_names)};"
                                    f" its classes are {', '.join(wl.class_names)}")
                missing = [c for c in wl.class_names if c not in cfg.classes]
                if missing:
                    raise SpecError(f"class '{missing[0]}': the workload has it but no pool is given for it; give every "
                                    f"class a ServiceClass ({', '.join(wl.class_names)})")
                by = {c: pool(c, kind, models["main"], s.replicas, s.batch_cap) for c, s in cfg.classes.items()}
                self.route = [by[c] for c in wl.class_names]
            else:
                p = pool("main", kind, models["main"], cfg.replicas, pol.batch_cap)
                self.route = [p] * len(wl.class_names)
        cid = self.wl.class_id
        self.pool_of = [self.route[c] for c in cid.tolist()]
        # whole-prompt prefill parts per request (from the cached prefix), one vectorised call per pool
        pf_c, pf_k = np.zeros(self.n), np.zeros(self.n)
        cached = np.asarray(self.cached, dtype=np.int64)
        for p in {id(p): p for p in self.route}.values():
            classes = [c for c, q in enumerate(self.route) if q is p]
            idx = np.nonzero(np.isin(cid, classes))[0]
            if idx.size:
                c, k = p.model.prefill_parts(idx, cached[idx], self.wl.prompt_tokens[idx], self.wl.prompt_tokens[idx])
                pf_c[idx], pf_k[idx] = c, k
        self.pf_c, self.pf_k = pf_c.tolist(), pf_k.tolist()

    def _default_tau(self, model: StepModel, cap: int) -> float:
        if model.override:
            if model.decode_step <= 0:
                raise SpecError("--policy train with a service-time override needs tau_s (or decode_step_s > 0)")
            return model.decode_step
        L = float(np.mean(self.wl.prompt_tokens + self.wl.output_tokens / 2.0)) if self.n else 1.0
        return float(decode_of(model.dep, batch=float(cap), context=L).step_s)

    def _transfer_times(self, model: StepModel) -> list[float]:
        dep = model.dep
        if dep is None:
            raise SpecError("--policy disaggregated needs a model deployment, not a service-time override")
        link = dep.system.scale_out
        if link is None:
            raise SpecError(f"--policy disaggregated: {dep.system.name} has no scale-out link to move KV between "
                            "pools; pick a system with one (llmecon catalog systems)")
        kv = np.asarray(dep.model.kv_bytes(self.wl.prompt_tokens.astype(float), dep.kv_dtype), dtype=float)
        # every chip of the prefill replica sends its share of the KV over its own NIC
        return (link.latency_s + kv / (dep.plan.chips * link.bandwidth_bytes_per_s)).tolist()

    # ---- the loop ----------------------------------------------------------------------------
    def _push(self, t: float, kind: int, obj, arg=None) -> None:
        self._seq += 1
        heapq.heappush(self.heap, (t, self._seq, kind, obj, arg))

    def _schedule(self, rep: _Replica, t: float) -> None:
        v = rep.version = rep.version + 1
        rep.scheduled = t
        self._seq += 1
        heapq.heappush(self.heap, (t, self._seq, 0, rep, v))

    def run(self) -> None:
        """Run to the horizon. The cyclic garbage collector is paused meanwhile: the loop allocates
        millions of small tuples that are never part of a cycle, and gen-2 collections over them
        would make the run super-linear in the number of requests."""
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
        i = 0
        tick = max(1, n // 200)
        while True:
            t_arr = arr[i] if i < n else math.inf
            t_ev = heap[0][0] if heap else math.inf
            if t_arr <= t_ev:
                if t_arr >= horizon or t_arr == math.inf:
                    break
                self._arrive(i, t_arr)
                i += 1
                if self.progress is not None and i % tick == 0:
                    self.progress(i / n)
                continue
            if t_ev > horizon:
                break
            t, _, kind, obj, arg = heapq.heappop(heap)
            if kind == 0:
                if arg != obj.version or obj.stopped:
                    continue
                obj.scheduled = None
                self._act(obj, t)
            else:
                heapq.heappop(obj.pending)
                self._deliver(obj, arg, t)
        self.next_index = i
        self.end_time = horizon if math.isfinite(horizon) else max(
            [x for x in self.t_done if x == x] + [arr[i - 1] if i else 0.0])

    def _arrive(self, rid: int, t: float) -> None:
        self.status[rid] = WAITING
        self.n_arrived += 1
        self.sum_arr += t
        pool = self.pool_of[rid]
        need = self.prompt[rid] + self.out[rid] - 1
        if pool.held(need) > pool.model.kv_capacity_bytes or (
                pool.next_pool is not None and pool.next_pool.held(need) > pool.next_pool.model.kv_capacity_bytes):
            return self._reject(rid, t, 1)
        if self.cfg.max_queue is not None and len(pool.queue) >= self.cfg.max_queue:
            return self._reject(rid, t, 2)
        pool.queue.append(rid)
        self._wake(pool, t)

    def _deliver(self, pool: _Pool, rid: int, t: float) -> None:
        """A request's KV arrives at the decode pool (disaggregated)."""
        self.resume[rid] = 2
        pool.queue.append(rid)
        self._wake(pool, t)

    def _wake(self, pool: _Pool, t: float) -> None:
        for rep in pool.replicas:
            if rep.stopped:
                continue
            if pool.kind == "adaptive":
                if rep.static:
                    continue
                when = t if len(pool.queue) >= pool.batch_cap else max(t, self.arr[pool.queue[0]] + pool.deadline)
                if rep.scheduled is None or when < rep.scheduled:
                    self._schedule(rep, when)
                return
            if rep.scheduled is not None:
                continue
            if pool.kind == "train":
                # next departure on the replica's clock grid k*tau
                self._schedule(rep, math.ceil(t / pool.tau - 1e-12) * pool.tau)
            else:
                self._schedule(rep, t)
            return

    def _reject(self, rid: int, t: float, reason: int) -> None:
        self.status[rid] = REJECTED
        self.reason[rid] = reason
        self.t_done[rid] = t
        self._depart(t)

    def _depart(self, t: float) -> None:
        self.n_departed += 1
        self.sum_dep += t

    def _finish(self, rid: int, t: float) -> None:
        self.status[rid] = DONE
        self.t_done[rid] = t
        self._depart(t)

    # ---- one replica decision ----------------------------------------------------------------
    def _act(self, rep: _Replica, t: float) -> None:
        self.events += 1
        pool = rep.pool
        tl = self.timeline
        tl[0].append(t)
        tl[1].append(len(pool.queue))
        tl[2].append(rep.ds.n + len(rep.partial))
        kind = pool.kind
        if kind == "adaptive":
            return self._act_adaptive(rep, t)
        if kind == "chunked" and (rep.partial or pool.queue):
            if self._chunked_iteration(rep, t):
                return
        elif kind == "train":
            return self._act_train(rep, t)
        elif kind != "chunked" and pool.queue and rep.ds.n < pool.batch_cap:
            admitted = self._admit(rep, t, budget=pool.budget if kind != "decode" else 1 << 62)
            if admitted:
                if self._prefill_iteration(rep, t, admitted):
                    return
        if rep.ds.n:
            self._decode_run(rep, t)

    def _admit(self, rep: _Replica, t: float, *, budget: int, room: int | None = None) -> list[int]:
        """FCFS admission from the pool queue under the batch cap, token budget and KV capacity."""
        pool, ds = rep.pool, rep.ds
        q = pool.queue
        held = pool.held
        cap_kv = pool.model.kv_capacity_bytes
        # KV after the next decode step (every running sequence one token longer) must fit: then a
        # head-of-line request that does not fit stays blocked until a completion (KV only grows)
        used = ds.total(pool.model.held, 1) + sum(held(p[2] + 1) for p in rep.partial)
        slots = (pool.batch_cap - ds.n - len(rep.partial)) if room is None else room
        out, tok = [], 0
        while q and len(out) < slots:
            rid = q[0]
            r = self.resume[rid]
            if r == 0:
                need = self.prompt[rid] + self.gen[rid] - self.cached[rid]
                L_after = self.prompt[rid] + self.gen[rid]
            else:
                need = 0
                L_after = self.prompt[rid] + self.gen[rid] - 1
            if out and tok + need > budget:
                break
            h = held(L_after + 1 if pool.kind != "adaptive" else self.prompt[rid] + self.out[rid] - 1)
            if used + h > cap_kv:
                break
            q.popleft()
            out.append(rid)
            tok += need
            used += h
            self.status[rid] = RUNNING
            if self.t_admit[rid] != self.t_admit[rid]:
                self.t_admit[rid] = t
        return out

    def _swap_s(self, pool: _Pool, L: int) -> float:
        """Moving one sequence's KV between HBM and the host tier: bytes on all chips / bandwidth."""
        return pool.held(L) * pool.chips / pool.swap_bw

    def _prefill_iteration(self, rep: _Replica, t: float, admitted: list[int]) -> bool:
        """One iteration prefilling ``admitted`` (decodes pause). Returns True when the replica's
        next act is settled (iteration scheduled, or stopped at the horizon); False when only
        requests with KV already in place joined and no iteration was needed."""
        pool = rep.pool
        m = pool.model
        pc = pk = stall = 0.0
        tok = 0
        for rid in admitted:
            r = self.resume[rid]
            if r == 1:
                stall += self._swap_s(pool, self.prompt[rid] + self.gen[rid] - 1)
            elif r == 0:
                g = self.gen[rid]
                if g == 0:
                    c, k = self.pf_c[rid], self.pf_k[rid]
                else:
                    c, k = m.prefill_part(rid, self.cached[rid], self.prompt[rid] + g, self.prompt[rid] + g)
                pc += c
                pk += k
                tok += self.prompt[rid] + g - self.cached[rid]
        dur = (m.step_s(compute_s=pc, kv_s=pk, tokens=tok) if tok else 0.0) + stall
        end = t + dur
        if end > self.horizon:
            for rid in reversed(admitted):
                pool.queue.appendleft(rid)
                self.status[rid] = WAITING
            self._stop(rep)
            return True
        if dur == 0.0:  # only transferred-KV joins: no iteration needed
            for rid in admitted:
                self._join(rep, rid, t)
            return False
        pool.busy_s += dur
        pool.iterations += 1
        pool.tokens += tok
        for rid in admitted:
            if self.resume[rid] == 0:
                self.gen[rid] += 1
                if self.t_first[rid] != self.t_first[rid]:
                    self.t_first[rid] = end
                if pool.next_pool is not None and self.gen[rid] < self.out[rid]:
                    self._send(rep, rid, end)
                    continue
            self._join(rep, rid, end)
        self._schedule(rep, end)
        return True

    def _join(self, rep: _Replica, rid: int, t: float) -> None:
        """A sequence with KV in place starts (or resumes) decoding; finishes if it has all tokens."""
        self.resume[rid] = 0
        if self.gen[rid] >= self.out[rid]:
            self._finish(rid, t)
            return
        L = self.prompt[rid] + self.gen[rid] - 1
        rep.ds.add(rid, L, self.out[rid] - self.gen[rid])
        self.join_t[rid] = t
        rep.groups[t] = rep.groups.get(t, 0) + 1

    def _send(self, rep: _Replica, rid: int, end: float) -> None:
        """Disaggregated: queue the request's KV on the prefill replica's scale-out link (FIFO)."""
        start = max(end, rep.link_free)
        done = start + self._transfer_s[rid]
        rep.link_free = done
        nxt = rep.pool.next_pool
        heapq.heappush(nxt.pending, done)
        self._push(done, 1, nxt, rid)

    def _stop(self, rep: _Replica) -> None:
        rep.stopped = True

    def _preempt(self, rep: _Replica, need: float) -> float:
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
                stall += self._swap_s(pool, L)
                self.resume[rid] = 1
            else:
                self.resume[rid] = 0
            pool.queue.appendleft(rid)
        return stall

    def _leave_group(self, rep: _Replica, rid: int) -> None:
        jt = self.join_t[rid]
        key = jt if jt > rep.last_run_end else rep.last_run_end
        c = rep.groups.get(key, 0) - 1
        if c > 0:
            rep.groups[key] = c
        else:
            rep.groups.pop(key, None)

    def _run_lines(self, rep: _Replica, extra_c: float = 0.0, extra_k: float = 0.0, extra_tok: int = 0):
        """The (value at step 0, increase per step) of the compute, memory and comm terms of a run
        of decode steps, plus prefill chunks riding along in its first step."""
        ds, m = rep.ds, rep.pool.model
        c0, dc, k0, dk, _, _ = ds.sums(m.dec_compute, m.dec_kv, m.held)
        n = ds.n + extra_tok
        return ((c0 + extra_c, dc), (m.weights_s(n) + k0 + extra_k, dk), (m.comm_s(n), 0.0))

    def _decode_run(self, rep: _Replica, t: float) -> None:
        """Decode iterations for the running batch: as many identical-composition steps as no event
        separates, in closed form."""
        pool, ds = rep.pool, rep.ds
        m = pool.model
        stall = 0.0
        cap = m.kv_capacity_bytes
        c0, dc, k0, dk, h0, dh = ds.sums(m.dec_compute, m.dec_kv, m.held)
        if h0 + dh > cap:
            stall = self._preempt(rep, 0.0)
            c0, dc, k0, dk, h0, dh = ds.sums(m.dec_compute, m.dec_kv, m.held)
        k = ds.steps_to_event() if self.closed_form else 1
        if dh > 0 and k > 1:
            k = min(k, int((cap - h0) // dh))
        k = max(int(min(k, 1 << 40)), 1)
        n = ds.n
        lines = ((c0, dc), (m.weights_s(n) + k0, dk), (m.comm_s(n), 0.0))
        first = max(lines[0][0], lines[1][0], lines[2][0])
        dur = None
        # arrivals matter only if the batch has room and nobody is blocked ahead of them
        if k > 1 and (pool.multi or (ds.n < pool.batch_cap and not pool.queue and not pool.static_batches)):
            t_next = self._next_arrival(pool)
            if t + stall + first >= t_next:
                k = 1
            elif t_next < math.inf:
                k, dur = first_k_reaching(lines, k, t_next - t - stall)
        if dur is None:
            dur = first if k == 1 else sum_max_affine(lines, k)
        if t + stall + dur > self.horizon:
            k = last_k_within(lines, k, self.horizon - t - stall)
            if k == 0:
                self._stop(rep)
                return
            dur = sum_max_affine(lines, k)
        dur += stall
        end = t + dur
        g = t + stall + first
        gaps, wts = self.itl_first
        for tg, cnt in rep.groups.items():
            gaps.append(g - tg)
            wts.append(cnt)
        if k > 1:
            self.itl_runs.append((0, lines, k, n, 0.0))
        done = ds.advance(k)
        rep.groups = {end: n - len(done)} if n > len(done) else {}
        rep.last_run_end = end
        out = self.out
        gen = self.gen
        for rid in done:
            gen[rid] = out[rid]
            self._finish(rid, end)
        pool.busy_s += dur
        pool.iterations += k
        pool.tokens += k * n
        self._schedule(rep, end)

    def _next_arrival(self, pool: _Pool) -> float:
        """Earliest time a request could next join ``pool``'s queue (a lower bound)."""
        i = self.n_arrived  # arrivals are processed in order: the next one not yet arrived
        t = self.arr[i] if i < self.n else math.inf
        if pool.pending:
            t = min(t, pool.pending[0])
        if pool.kind == "decode":
            # a new KV delivery needs a prefill iteration to end first; running ones have theirs queued
            for src in self.pools:
                if src.next_pool is pool:
                    for r in src.replicas:
                        if r.scheduled is not None:
                            t = min(t, r.scheduled)
        return t
