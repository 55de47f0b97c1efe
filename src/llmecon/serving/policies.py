"""Scheduling policies of the serving simulator (SPEC E20): one class per policy behind two small
Protocols, and the registry ``POLICIES`` (name -> class) the CLI and sweeps build them from.

* ``Train``        fixed cadence: an iteration departs every ``tau_s`` on a fixed clock, full or
                   not; waiting requests board the next departure if there is room (slots, KV);
                   every aboard sequence decodes one token per train (the lecture's "train
                   schedule"). A train that takes longer than tau makes the next departure slip to
                   the next clock tick.
* ``Adaptive``     request-level (static) batching with a dynamic batcher: a batch departs when
                   ``batch_cap`` requests wait or the oldest has waited ``deadline_s``, then runs
                   prefill and decode until its last member finishes; nobody joins mid-batch
                   (Triton's dynamic batcher: max batch size + max queue delay).
* ``Continuous``   iteration-level scheduling (Orca, Yu et al. OSDI 2022; vLLM, Kwon et al. SOSP
                   2023): each iteration either prefills newly admitted requests (prefill first,
                   decodes pause: vLLM v0 default) or, with ``chunk_tokens``, mixes every running
                   decode with prefill chunks under a token budget (chunked prefill: Sarathi-Serve,
                   Agrawal et al. OSDI 2024; vLLM v1).
* ``Disaggregated`` prefill and decode on separate replica pools (DistServe, Zhong et al. OSDI
                   2024; Splitwise, Patel et al. ISCA 2024); KV moves over the scale-out link. Both
                   pools are scheduled by ``Continuous`` (the prefill pool sends every prefilled
                   request on; the decode pool admits delivered KV without a token budget).

A policy is a frozen spec (validated on creation) that also carries its behaviour:
``ServingPolicy`` is what ``simulate`` asks of it (step models, pools), ``Scheduler`` what the
event loop asks of the policy running one pool (``wake`` when work arrives, ``act`` when a replica
decides). The engine binds ``wake``/``act`` once per pool; the policies drive the engine's shared
mechanisms (admission, prefill iterations, closed-form decode runs, preemption).

Preemption when KV runs out (continuous/chunked/decode pool): the most recently admitted sequence
is evicted (vLLM's policy); ``recompute`` drops its KV and re-prefills prompt + generated tokens
later; ``swap`` copies it to the host memory tier and back (time = bytes / tier bandwidth, the
replica stalls meanwhile); ``auto`` swaps when the system has a host tier with a known bandwidth,
else recomputes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, ClassVar, Protocol, runtime_checkable

import numpy as np

from ..errors import SpecError, did_you_mean, require_whole
from ..spec.plan import Plan
from ..step.inference import decode_of
from .batchstate import last_k_steps_within, max_affine_at, sum_max_affine
from .status import KV_READY, PREFILL, SWAP_IN

if TYPE_CHECKING:
    from .engine import Engine, Pool, Replica
    from .steptime import StepModel

PREEMPTION = ("auto", "recompute", "swap")
DEFAULT_BATCH_CAP = 256  # vLLM's default max_num_seqs (vllm.config.SchedulerConfig, v0.x)
UNLIMITED = 1 << 62  # a token budget that never binds


@runtime_checkable
class ServingPolicy(Protocol):
    """What ``simulate`` and the engine's set-up ask of a policy (``SimConfig.policy``)."""

    name: ClassVar[str]  # the ``--policy`` name, reported as ``SimResult.policy``
    batch_cap: int

    def iteration_tokens(self) -> int:
        """Most prefill tokens one iteration may batch besides its decodes (sizes the step tables)."""
        ...

    def roles(self) -> dict[str, Plan | None]:
        """The step models the policy runs on, by role (``"main"``, or one per pool), each with its
        plan (None: the deployment's)."""
        ...

    def build(self, eng: Engine, models: dict[str, StepModel]) -> list[Pool]:
        """Create the pools of replicas (``eng.add_pool``) and return the pool each workload class
        enters, by class index."""
        ...


class Scheduler(Protocol):
    """What the event loop asks of the policy that runs one pool of replicas."""

    static_batches: ClassVar[bool]  # join only between batches, KV reserved for the whole request

    def wake(self, eng: Engine, pool: Pool, t: float) -> None:
        """Work joined ``pool``'s queue at ``t``: schedule an idle replica's next decision."""
        ...

    def act(self, eng: Engine, rep: Replica, t: float) -> None:
        """One decision of replica ``rep`` at ``t``: plan its next iteration(s) and schedule its next
        decision at their end, or stay idle until woken."""
        ...


def require_time(name: str, value, *, allow_none: bool = True, allow_zero: bool = False):
    """``value`` as a finite time in seconds (> 0, or >= 0 with ``allow_zero``; None passes when
    ``allow_none``), else SpecError with field ``name``."""
    if value is None and allow_none:
        return None
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if not ok or value < 0 or (value == 0 and not allow_zero):
        raise SpecError(f"must be a finite time {'>=' if allow_zero else '>'} 0 seconds, got {value!r}", field=name,
                        value=value, show_value=False)
    return value


def check_preemption(mode: str) -> None:
    if mode not in PREEMPTION:
        raise SpecError(f"unknown mode '{mode}'{did_you_mean(mode, PREEMPTION)}", field="preemption", value=mode,
                        show_value=False, fix=f"use one of {', '.join(PREEMPTION)}")


class _OnePool:
    """Shared by the policies that run every request on one pool (or one pool per service class)."""

    static_batches: ClassVar[bool] = False

    def roles(self) -> dict[str, Plan | None]:
        return {"main": None}

    def iteration_tokens(self) -> int:
        return 0


# ---- train schedule ----------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Train(_OnePool):
    """Fixed-cadence dispatch. ``tau_s`` None: the decode step time at ``batch_cap`` sequences of
    the workload's mean prompt + output/2 context (so a full train just keeps time)."""

    batch_cap: int = DEFAULT_BATCH_CAP
    tau_s: float | None = None
    name: ClassVar[str] = "train"

    def __post_init__(self) -> None:
        require_whole("batch_cap", self.batch_cap)
        require_time("tau", self.tau_s)

    def build(self, eng: Engine, models: dict[str, StepModel]) -> list[Pool]:
        route = eng.class_pools(self, "train", models["main"], batch_cap=self.batch_cap, budget=UNLIMITED,
                                preemption="auto")
        for pool in dict.fromkeys(route):
            pool.tau = self.tau_s if self.tau_s is not None else self._default_tau(eng, pool.model, pool.batch_cap)
        return route

    @staticmethod
    def _default_tau(eng: Engine, model: StepModel, cap: int) -> float:
        if model.override:
            if model.decode_step <= 0:
                raise SpecError("must be given with a service-time override whose decode_step_s is 0", field="tau",
                                fix="give tau_s, or decode_step_s > 0")
            return model.decode_step
        L = float(np.mean(eng.wl.prompt_tokens + eng.wl.output_tokens / 2.0)) if eng.n else 1.0
        return float(decode_of(model.dep, batch=float(cap), context=L).step_s)

    def wake(self, eng: Engine, pool: Pool, t: float) -> None:
        for rep in pool.replicas:
            if rep.stopped or rep.scheduled is not None:
                continue
            eng.schedule(rep, math.ceil(t / pool.tau - 1e-12) * pool.tau)  # the next tick of the clock k*tau
            return

    def act(self, eng: Engine, rep: Replica, t: float) -> None:
        """A departure at t (on the clock grid): board, run one mixed step (or a run of k decode
        trains when nobody can board), schedule the next departure."""
        pool, ds = rep.pool, rep.ds
        m = pool.model
        tau = pool.tau
        stall = 0.0
        if ds.n and ds.total(m.held, 1) > m.kv_capacity_bytes:
            stall = eng.preempt(rep)
        board = eng.admit(rep, t, budget=UNLIMITED) if pool.queue and ds.n < pool.batch_cap else []
        pc, pk, tok, swap = eng.boarding_work(pool, board)
        stall += swap
        n = ds.n
        if not n and not board:
            t_next = eng.next_arrival(pool)
            if t_next < math.inf:
                eng.schedule(rep, t + max(1, math.ceil((t_next - t) / tau - 1e-12)) * tau)
            return
        lines = eng.run_lines(rep, pc, pk, tok)
        k = 1
        if not board and not stall and eng.closed_form:
            k = ds.steps_to_event()
            dh = ds.slope(m.held)
            if dh > 0:
                k = min(k, int((m.kv_capacity_bytes - ds.total(m.held)) // dh))
            k = max(int(min(k, 1 << 40)), 1)
            if ds.n < pool.batch_cap:
                t_next = eng.next_arrival(pool)
                if t_next < math.inf:
                    k = min(k, max(1, math.ceil((t_next - t) / tau - 1e-12)))
            k = last_k_steps_within(lines, k, tau)
        last = stall + max_affine_at(lines, k - 1)
        end = t + (k - 1) * tau + last
        if end > eng.horizon:
            if k > 1:
                k = max(0, min(k - 1, int((eng.horizon - t - last) // tau)))
                while k > 0 and t + (k - 1) * tau + stall + max_affine_at(lines, k - 1) > eng.horizon:
                    k -= 1
            else:
                k = 0
            if k == 0:
                eng.requeue(pool, board)
                eng.stop(rep)
                return
            last = stall + max_affine_at(lines, k - 1)
            end = t + (k - 1) * tau + last
        eng.first_token_gaps(rep, t + (stall + max_affine_at(lines, 0)))
        if k > 1:
            eng.record_run(1, lines, k, n, tau)
        eng.advance_decodes(rep, k, end)
        resume = eng.resume
        for rid in board:
            if resume[rid] == PREFILL:
                eng.prefilled(rid, end)
            eng.join(rep, rid, end)
        pool.busy_s += stall + sum_max_affine(lines, k)
        pool.iterations += k
        pool.tokens += k * n + tok
        slots = 1
        if last > tau:  # a long train slips the next departure to the next free tick
            slots = math.ceil(last / tau - 1e-12)
            pool.late += 1
        eng.schedule(rep, t + (k - 1 + slots) * tau)


# ---- adaptive (static batches) -----------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Adaptive(_OnePool):
    """Static batches dispatched when full or when the oldest request has waited ``deadline_s``."""

    batch_cap: int = DEFAULT_BATCH_CAP
    deadline_s: float = 0.05
    name: ClassVar[str] = "adaptive"
    static_batches: ClassVar[bool] = True

    def __post_init__(self) -> None:
        require_whole("batch_cap", self.batch_cap)
        require_time("deadline", self.deadline_s, allow_none=False, allow_zero=True)

    def build(self, eng: Engine, models: dict[str, StepModel]) -> list[Pool]:
        return eng.class_pools(self, "adaptive", models["main"], batch_cap=self.batch_cap, budget=UNLIMITED,
                               preemption="auto")

    def wake(self, eng: Engine, pool: Pool, t: float) -> None:
        for rep in pool.replicas:
            if rep.stopped or rep.static:
                continue
            q = pool.queue
            when = t if len(q) >= pool.batch_cap else max(t, eng.arr[q[0]] + self.deadline_s)
            if rep.scheduled is None or when < rep.scheduled:
                eng.schedule(rep, when)
            return

    def act(self, eng: Engine, rep: Replica, t: float) -> None:
        pool, ds = rep.pool, rep.ds
        if ds.n:
            return eng.decode_run(rep, t)
        rep.static = False
        q = pool.queue
        if not q:
            return
        if len(q) < pool.batch_cap and t < eng.arr[q[0]] + self.deadline_s - 1e-12:
            eng.schedule(rep, eng.arr[q[0]] + self.deadline_s)
            return
        admitted = eng.admit(rep, t, budget=UNLIMITED)
        rep.static = True
        eng.prefill_iteration(rep, t, admitted)
        if rep.scheduled is None and not rep.stopped:
            self.act(eng, rep, t)


# ---- continuous batching, chunked prefill ------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Continuous(_OnePool):
    """Iteration-level batching. ``max_batched_tokens`` caps the prompt tokens of one prefill
    iteration (a longer prompt runs alone); ``chunk_tokens`` switches on chunked prefill with that
    per-iteration token budget (decodes first, then prefill chunks)."""

    batch_cap: int = DEFAULT_BATCH_CAP
    max_batched_tokens: int = 16384
    chunk_tokens: int | None = None
    preemption: str = "auto"
    name: ClassVar[str] = "continuous"

    def __post_init__(self) -> None:
        require_whole("batch_cap", self.batch_cap)
        require_whole("max_batched_tokens", self.max_batched_tokens)
        if self.chunk_tokens is not None:
            require_whole("chunk_tokens", self.chunk_tokens)
            if self.chunk_tokens <= self.batch_cap:
                raise SpecError(f"must exceed {{batch_cap}} {self.batch_cap} so every running decode fits in an "
                                "iteration with room for prefill (vLLM requires max_num_batched_tokens >= "
                                "max_num_seqs)", field="chunk_tokens", value=self.chunk_tokens)
        check_preemption(self.preemption)

    def iteration_tokens(self) -> int:
        return self.chunk_tokens or self.max_batched_tokens

    def build(self, eng: Engine, models: dict[str, StepModel]) -> list[Pool]:
        kind = "chunked" if self.chunk_tokens is not None else "continuous"
        return eng.class_pools(self, kind, models["main"], batch_cap=self.batch_cap,
                               budget=self.max_batched_tokens, preemption=self.preemption)

    def wake(self, eng: Engine, pool: Pool, t: float) -> None:
        for rep in pool.replicas:
            if rep.stopped or rep.scheduled is not None:
                continue
            eng.schedule(rep, t)
            return

    def act(self, eng: Engine, rep: Replica, t: float) -> None:
        pool = rep.pool
        if self.chunk_tokens is not None:
            if (rep.partial or pool.queue) and self._chunked_iteration(eng, rep, t):
                return
        elif pool.queue and rep.ds.n < pool.batch_cap:
            admitted = eng.admit(rep, t, budget=pool.budget)
            if admitted and eng.prefill_iteration(rep, t, admitted):
                return
        if rep.ds.n:
            eng.decode_run(rep, t)

    def _chunked_iteration(self, eng: Engine, rep: Replica, t: float) -> bool:
        """Decodes first, then prefill chunks under the token budget (Sarathi-Serve / vLLM v1).
        False when there is nothing to prefill (the caller runs plain decodes)."""
        pool, ds = rep.pool, rep.ds
        m = pool.model
        resume, prompt, gen = eng.resume, eng.prompt, eng.gen
        stall = 0.0
        if ds.n and ds.total(m.held, 1) > m.kv_capacity_bytes:
            stall = eng.preempt(rep)
        rem = self.chunk_tokens - ds.n
        room = pool.batch_cap - ds.n - len(rep.partial)
        if room > 0 and pool.queue:
            for rid in eng.admit(rep, t, budget=UNLIMITED, room=room):
                if resume[rid] == SWAP_IN:
                    stall += eng.swap_s(pool, prompt[rid] + gen[rid] - 1)
                    eng.join(rep, rid, t)
                elif resume[rid] == KV_READY:
                    eng.join(rep, rid, t)
                else:
                    rep.partial.append([rid, eng.cached[rid], prompt[rid] + gen[rid]])
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
            return False
        lines = eng.run_lines(rep, pc, pk, tok)
        dur = stall + max_affine_at(lines, 0) if (ds.n or tok) else stall
        end = t + dur
        if end > eng.horizon:
            eng.stop(rep)
            return True
        n = ds.n
        eng.first_token_gaps(rep, end)
        eng.advance_decodes(rep, 1, end)
        for p in finished:
            rep.partial.remove(p)
            rid = p[0]
            eng.prefilled(rid, end)
            eng.join(rep, rid, end)
        pool.busy_s += dur
        pool.iterations += 1
        pool.tokens += n + tok
        eng.schedule(rep, end)
        return True


# ---- disaggregated prefill and decode ----------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Disaggregated:
    """Separate prefill and decode pools. Plans default to the deployment's; replicas to 1 each."""

    prefill_replicas: int = 1
    decode_replicas: int = 1
    prefill_plan: Plan | None = None
    decode_plan: Plan | None = None
    prefill_batch_cap: int = DEFAULT_BATCH_CAP
    max_batched_tokens: int = 16384
    batch_cap: int = DEFAULT_BATCH_CAP
    preemption: str = "auto"
    name: ClassVar[str] = "disaggregated"

    def __post_init__(self) -> None:
        for name, value in (("prefill_replicas", self.prefill_replicas), ("decode_replicas", self.decode_replicas),
                            ("prefill_batch_cap", self.prefill_batch_cap),
                            ("max_batched_tokens", self.max_batched_tokens), ("batch_cap", self.batch_cap)):
            require_whole(name, value)
        check_preemption(self.preemption)

    def iteration_tokens(self) -> int:
        return self.max_batched_tokens

    def roles(self) -> dict[str, Plan | None]:
        return {"prefill": self.prefill_plan, "decode": self.decode_plan}

    def build(self, eng: Engine, models: dict[str, StepModel]) -> list[Pool]:
        if eng.cfg.classes:
            raise SpecError("service classes are not supported with disaggregation", field="policy", value=self.name,
                            fix="drop the classes or use another policy")
        stage = Continuous(preemption=self.preemption)  # schedules both pools (with each pool's cap and budget)
        pre = eng.add_pool("prefill", "prefill", stage, models["prefill"], self.prefill_replicas,
                           self.prefill_batch_cap, budget=self.max_batched_tokens, preemption=self.preemption)
        dec = eng.add_pool("decode", "decode", stage, models["decode"], self.decode_replicas, self.batch_cap,
                           budget=UNLIMITED, preemption=self.preemption)
        eng.link(pre, dec, self._transfer_times(eng, models["prefill"], models["decode"]))
        return [pre] * len(eng.wl.class_names)

    def _transfer_times(self, eng: Engine, prefill: StepModel, decode: StepModel) -> list[float]:
        """Per request: its KV from the prefill replica to the decode replica over the scale-out link
        (``step.disaggregated.kv_transfer_s`` of one prompt: every chip of the request's attention group
        sends and receives its share at its per-direction bandwidth, after the link's latency floor)."""
        from ..step.disaggregated import kv_transfer_s

        if prefill.dep is None or decode.dep is None:
            raise SpecError("needs a model deployment, not a service-time override", field="policy", value=self.name)
        if prefill.dep.system.scale_out is None:
            raise SpecError(f"{prefill.dep.system.name} has no scale-out link to move KV between pools",
                            field="policy", value=self.name, fix="pick a system with one (llmecon catalog systems)")
        xfer = kv_transfer_s(prefill.dep, decode.dep, prompt_tokens=eng.wl.prompt_tokens.astype(float), batch=1.0)
        return np.broadcast_to(np.asarray(xfer, dtype=float), eng.wl.prompt_tokens.shape).tolist()


# ---- the registry ------------------------------------------------------------------------------

POLICIES: dict[str, type] = {"train": Train, "adaptive": Adaptive, "continuous": Continuous,
                             "disaggregated": Disaggregated}


def policy_from_name(name: str, **kw) -> ServingPolicy:
    """Build a policy from its CLI name and the options that apply to it (None: the default)."""
    if name not in POLICIES:
        raise SpecError(f"unknown policy '{name}'{did_you_mean(name, POLICIES)}", field="policy", value=name,
                        show_value=False, fix=f"use one of {', '.join(POLICIES)}")
    cls = POLICIES[name]
    names = {f.name for f in fields(cls)}
    for key, value in kw.items():  # an option the policy has no use for is refused, never silently dropped
        if value is not None and key not in names:
            users = [n for n, c in POLICIES.items() if key in {f.name for f in fields(c)}]
            raise SpecError(f"does not apply to the {name} policy (only to {', '.join(users) or 'none'})",
                            field=key.removesuffix("_s"), value=value, show_value=False,
                            fix=f"drop it, or choose {{policy}} {users[0]}" if users else "drop it")
    return cls(**{k: v for k, v in kw.items() if v is not None})
