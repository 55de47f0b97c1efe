"""``simulate``: deployment + workload + config -> SimResult, with the end-of-run checks."""

from __future__ import annotations

import gc
import math
from dataclasses import replace
from typing import Callable

import numpy as np

from ..spec.deployment import Deployment
from ..errors import SpecError
from .compiled import fallback_note, run as run_compiled, use_compiled
from .config import SimConfig
from .engine import Engine
from .metrics import SECONDS_PER_HOUR, PoolStats, SimResult, check_accounting, expand_itl
from .status import REASONS, Status
from .steptime_calibrated import CalibratedStepModel
from .steptime import FixedService, InternalError, StepModel, check_override_size
from .workload import Workload

LITTLE_TOL = 1e-6  # the truncated-sojourn form of Little's law is an identity: only rounding remains


def simulate(dep: Deployment | None, workload: Workload, config: SimConfig | None = None, *,
             service: FixedService | None = None, progress: Callable[[float], None] | None = None,
             compiled: bool | None = None) -> SimResult:
    """Simulate serving ``workload`` on ``dep`` under ``config`` (default: continuous batching).

    ``service`` replaces the roofline step times by a model-free service-time override (queueing
    checks); ``progress`` is called with the fraction of arrivals processed. Requests longer than
    the model's context (prompt + output) are an error (``Workload.require_within_context``).
    ``compiled``: None runs the compiled event loop (numba, ``compiled.py``) when it is installed and
    supports the run, else the Python loop (the same results, bit for bit); False always the Python
    loop; True requires the compiled one (SpecError when it cannot be used).
    """
    cfg = config or SimConfig()
    if service is not None:
        check_override_size(service, workload.n)
    if dep is not None:  # a sequence never exceeds the model's context (0 = unknown: not checked)
        workload.require_within_context(dep.model.max_context, model_name=dep.model.name)
    if dep is not None and dep.speculation is not None and dep.speculation.k > 0 and service is None:
        _check_speculative_policy(cfg)
    models = step_models(dep, cfg, service=service, workload=workload)
    # the cyclic collector stays off until the result is built: the run allocates millions of
    # objects that are never part of a cycle, and collections over them would make it super-linear
    enabled = gc.isenabled()
    gc.disable()
    try:
        eng = Engine(models, workload, cfg, progress=progress)
        ran = use_compiled(eng, compiled) and run_compiled(eng, progress, fallback=compiled is None)
        if not ran:
            eng.run()
        res = _result(eng)
        note = fallback_note(eng, compiled, ran)
        return res if note is None else replace(res, engine_note=note)
    finally:
        if enabled:
            gc.enable()


def _check_speculative_policy(cfg: SimConfig) -> None:
    """Speculative decoding runs in the policies whose decode iterations hold decodes only
    (continuous without chunked prefill, adaptive, disaggregated): a train's or a chunked
    iteration's prefill tokens would ride in a verify iteration whose time is spread over E tokens."""
    pol = cfg.policy
    if pol.name == "train" or getattr(pol, "chunk_tokens", None) is not None:
        what = "chunked prefill" if pol.name != "train" else "the train policy"
        raise SpecError(f"speculative decoding is not simulated with {what} (prefill and decode share iterations "
                        "there)", field="spec_tokens", value=None, show_value=False,
                        fix="use the continuous (unchunked), adaptive or disaggregated policy, or drop {spec_tokens}")


def _result(eng: Engine) -> SimResult:
    wl, cfg = eng.wl, eng.cfg
    T = eng.end_time
    gen = np.asarray(eng.gen, dtype=np.int64)
    # tokens generated so far by sequences still decoding
    for pool in eng.pools:
        for rep in pool.replicas:
            for rid in rep.ds.members:
                gen[rid] = rep.ds.context(rid) - eng.prompt[rid] + 1
    status = eng.status if isinstance(eng.status, np.ndarray) else np.fromiter(  # compiled loop: an array already
        eng.status, dtype=np.int64, count=eng.n)  # Status members -> int64 (2x asarray's speed)
    first = np.asarray(eng.t_first)
    done = np.asarray(eng.t_done)
    # a request that finished is COMPLETED; the horizon never cuts a committed iteration
    check_accounting(status, arrived=eng.n_arrived, generated=gen, output=wl.output_tokens, arrival=wl.arrival_s,
                     first=first, done=done)
    area = eng.n_arrived * T - eng.sum_arr - (eng.n_departed * T - eng.sum_dep)
    price = cfg.price_per_chip_hour
    pools = tuple(PoolStats(name=p.name, kind=p.kind, replicas=len(p.replicas), chips_per_replica=p.chips,
                            batch_cap=p.batch_cap, busy_s=p.busy_s, iterations=p.iterations, tokens=p.tokens,
                            tau_s=p.tau, late_trains=p.late,
                            usd=None if price is None else price * p.chips * len(p.replicas) * T / SECONDS_PER_HOUR)
                  for p in eng.pools)
    itl_v, itl_w = eng.itl if eng.itl is not None else expand_itl(eng.itl_first, eng.itl_runs, eng.itl_spec)
    res = SimResult(
        arrival_s=wl.arrival_s, prompt_tokens=wl.prompt_tokens, output_tokens=wl.output_tokens,
        class_id=wl.class_id, class_names=wl.class_names, status=status,
        reject_reason=np.asarray([REASONS[r] for r in _plain(eng.reason)]) if eng.n else np.asarray([], dtype=str),
        admit_s=np.asarray(eng.t_admit), first_token_s=first, done_s=np.where(status == Status.COMPLETED, done, np.nan)
        if eng.n else done, depart_s=done, generated_tokens=gen, preemptions=np.asarray(eng.preempted, dtype=np.int64),
        cached_tokens=np.asarray(eng.cached, dtype=np.int64), run_s=float(T), pools=pools,
        itl_values=itl_v, itl_weights=itl_w, timeline_s=np.frombuffer(eng.timeline[0]),
        timeline_waiting=np.frombuffer(eng.timeline[1]), timeline_running=np.frombuffer(eng.timeline[2]),
        occupancy_area=float(area), policy=cfg.policy.name, price_per_chip_hour=price,
        slo_ttft_s=cfg.slo.ttft_s, slo_tpot_s=cfg.slo.tpot_s,
        class_price={k: v.price_usd_per_mtok for k, v in (cfg.classes or {}).items()}, events=eng.events)
    ll = res.littles_law()
    if T > 0 and eng.n_arrived and not (ll["rel_error"] <= LITTLE_TOL or math.isclose(ll["L"], ll["lambda_W"],
                                                                                        abs_tol=1e-9)):
        raise InternalError(f"Little's law fails on this run: L = {ll['L']:.9g} but lambda*W = {ll['lambda_W']:.9g}")
    return res


def _plain(values):
    """A list of Python ints (the compiled loop's int64 arrays index tuples slowly element by element)."""
    return values.tolist() if isinstance(values, np.ndarray) else values


def step_models(dep: Deployment | None, cfg: SimConfig, *, service: FixedService | None = None,
                workload: Workload | None = None) -> dict[str, StepModel]:
    """The step models a run needs, by the policy's roles: 'main', or one per pool ('prefill' and
    'decode' for disaggregation, each on its own plan)."""
    pol = cfg.policy
    roles = pol.roles()
    if service is not None:
        if list(roles) != ["main"]:
            raise SpecError("cannot be used with a service-time override (it times one pool of replicas)",
                            field="policy", value=pol.name)
        return {"main": service}
    if dep is None:
        raise SpecError("simulate: give a Deployment or a service-time override")
    caps = [pol.batch_cap] + [c.batch_cap for c in (cfg.classes or {}).values()]
    size = max(caps) + min(pol.iteration_tokens(), 1 << 16) + 1
    out = {}
    for role, plan in roles.items():
        d = dep if plan is None else replace(dep, plan=plan)  # a new Deployment validates its plan
        kind = StepModel if d.profile.is_ideal else CalibratedStepModel
        out[role] = kind(d, hbm_fraction=cfg.hbm_fraction, max_tokens=size)
    return out
