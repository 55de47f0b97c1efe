"""The compiled event loop (``fastloop``, numba): when a run can use it, and the arrays it runs on.

numba (an optional dependency: ``pip install llmecon[fast]``) compiles ``fastloop.run``, a port of
``Engine``'s loop for one pool (one or more replicas) run by ``Continuous`` (prefill first, or
chunked prefill) or ``Adaptive``, roofline or calibrated step models, closed-form runs, plain or
speculative decoding (MTP or a draft model). The other runs (train, disaggregated, service classes,
service-time overrides, ``closed_form_runs=False``) take the pure-Python loop, as does every run
when numba is not installed or the environment variable ``LLMECON_SIM_COMPILED`` is ``0``, and, by
default, a run of fewer than ``AUTO_MIN_REQUESTS`` requests in a process that has not loaded the
kernel yet (``1``: those too). A run of ``AUTO_MIN_REQUESTS`` or more that falls back says so once:
``fallback_note`` is ``SimResult.engine_note`` (the CLI prints it among the notes).
Both loops give the same results bit for bit (``tests/serving/test_serving_compiled.py``). numba is
imported only here, when a run takes the compiled loop; the first run in a fresh environment
compiles the kernel (~10-20 s), later processes load it from numba's cache (``_jit.py``).
"""

from __future__ import annotations

import importlib.util
import math
import os
import sys
import warnings

import numpy as np

from ..errors import SpecError
from . import fastlayout as L
from .steptime import InternalError

ENV = "LLMECON_SIM_COMPILED"  # "0": always the pure-Python loop; "1": the compiled one whenever it applies
# unset: the compiled loop from this many requests (or once the kernel is loaded in this process).
# Loading numba and the cached kernel costs ~0.5-0.7 s of CPU once per process, what the Python loop
# takes for ~50,000 requests (benchmarks/results/fast_2026-11-26.md): below, a small run (the CLI's
# default is 600 requests) would start slower
AUTO_MIN_REQUESTS = 50_000
_SMALL_BUFFERS = False  # tests: start every buffer at one row, so that every growth path runs


def numba_available() -> bool:
    return importlib.util.find_spec("numba") is not None


def why_not(eng) -> str | None:
    """Why ``eng`` cannot run on the compiled loop (None: it can)."""
    from .policies import Adaptive, Continuous

    if not eng.closed_form:
        return "closed_form_runs=False"
    if len(eng.pools) != 1:
        return "more than one pool (service classes or disaggregation)"
    pool = eng.pools[0]
    pol = getattr(pool.act, "__self__", None)
    if type(pol) not in (Continuous, Adaptive):
        return f"the {eng.cfg.policy.name} policy"
    if pool.model.override:
        return "a service-time override"
    if pool.next_pool is not None or pool.sources:
        return "linked pools"
    chunk = getattr(pol, "chunk_tokens", None)
    if chunk is not None and chunk + pool.batch_cap >= len(pool.model._terms):
        return "chunked prefill beyond the step table"  # simulate.step_models sizes it to 65,536 tokens
    return None


def use_compiled(eng, compiled: bool | None) -> bool:
    """Whether ``simulate`` runs ``eng`` on the compiled loop: ``compiled`` None decides by itself
    (numba installed, ``LLMECON_SIM_COMPILED`` not ``0``, the run supported); True requires it."""
    if compiled is False:
        return False
    if compiled is None:
        env = os.environ.get(ENV, "")
        if env == "0" or (env != "1" and eng.n < AUTO_MIN_REQUESTS and "llmecon.serving.fastloop" not in sys.modules):
            return False
        return numba_available() and why_not(eng) is None
    if not numba_available():
        raise SpecError("needs numba (pip install 'llmecon[fast]')", field="compiled", value=True)
    reason = why_not(eng)
    if reason is not None:
        raise SpecError(f"the compiled loop does not support {reason}", field="compiled", value=True,
                        fix="leave {compiled} unset to fall back to the Python loop")
    return True


def fallback_note(eng, compiled: bool | None, ran_compiled: bool) -> str | None:
    """What ``SimResult.engine_note`` says when a run of ``AUTO_MIN_REQUESTS`` or more requests that was
    left to choose its loop ran the slower Python one (None otherwise: it was asked for, the run is too
    small to gain from the compiled loop, or the compiled one ran)."""
    if ran_compiled or compiled is not None or eng.n < AUTO_MIN_REQUESTS or os.environ.get(ENV, "") == "0":
        return None
    if not numba_available():
        why = "numba is not installed (pip install 'llmecon[fast]')"
    else:
        why = why_not(eng)
        why = "numba failed to load" if why is None else f"the compiled loop does not support {why}"
    return f"the Python event loop ran ({why}): 10-30x slower than the compiled one"


def _table(m) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The step model's per-iteration terms (``StepModel.terms``) for 0..N - 1 tokens, N >= the
    batch cap (the kernel asks for larger prefills one by one)."""
    b, w, x = (np.array(c, dtype=float) for c in zip(*m._terms))
    return b, w, x


def run(eng, progress=None, *, fallback: bool = False) -> bool:
    """Run ``eng`` (``why_not(eng)`` is None) on the compiled loop; leaves the engine as
    ``Engine.run`` does (what ``simulate._result`` reads). With ``fallback``, numba failing to load
    or compile the kernel returns False (with a warning) and leaves the engine untouched."""
    try:
        from . import fastloop as fl

        return _run(eng, fl, progress)
    except Exception as e:  # only numba's own failures fall back; anything else is a bug and is raised
        if not fallback or not (isinstance(e, ImportError) or type(e).__module__.startswith("numba")):
            raise
        warnings.warn(f"the compiled serving loop is unavailable ({type(e).__name__}: {e}); using the Python loop",
                      RuntimeWarning, stacklevel=3)
        return False


def _run(eng, fl, progress) -> bool:
    n = eng.n
    q, m = _requests(eng), _model(eng)
    s, rp, o, x = _state(eng)
    tick = max(1, n // 200)
    stop_i = tick if progress is not None else n + 1
    while True:
        code = fl.run(q, m, s, rp, o, x, stop_i)
        if code == L.DONE:
            break
        if code == L.PAUSE:
            progress(stop_i / n)
            stop_i += tick
        elif code == L.NEED:
            m = _add_terms(eng.pools[0].model, m, o.isc)
        else:
            rp, o = _grow_buffers(m, rp, o)
    i = int(o.isc[L.I_NEXT])
    while progress is not None and stop_i <= i:  # reports the Python loop makes after the last pause
        progress(stop_i / n)
        stop_i += tick
    _finish(eng, fl, q, s, rp, o, i)
    return True


def _requests(eng) -> tuple:
    wl = eng.wl
    return L.Req(arr=np.append(wl.arrival_s.astype(float), math.inf), prompt=wl.prompt_tokens.astype(np.int64),
                 out=wl.output_tokens.astype(np.int64), cached=eng.cached, pf_c=eng.pf_c, pf_k=eng.pf_k,
                 h_first=eng.h_first, h_need=eng.h_need, too_big=eng.too_big)


def _coefs(fs, thetas) -> tuple[np.ndarray, np.ndarray]:
    """(f0, a0 of each function), (theta_j, a_{j+1} of each function) per kink: ``DecodeSet``'s bound coefficients."""
    head = np.array([v for f in fs for v in (f.f0, f.a[0])], dtype=float)
    kinks = np.array([(th, *(f.a[j + 1] for f in fs)) for j, th in enumerate(thetas)],
                     dtype=float).reshape(len(thetas), len(fs) + 1)
    return head, kinks


def _model(eng) -> tuple:
    """The step model, the policy and the pool as ``fastlayout.Model``."""
    from .policies import Adaptive

    pool = eng.pools[0]
    m, cap = pool.model, pool.batch_cap
    pol = pool.act.__self__
    tb, tw, tx = _table(m)
    if len(tb) <= cap:
        raise InternalError("step table shorter than the batch cap")  # simulate.step_models sizes it
    held = m.held
    coef, kc = _coefs((m.dec_compute, m.dec_kv, held), m.thetas)
    spec = pool.spec
    k1, sv, sd, over, dm = spec if spec is not None else (0, 0.0, 0.0, 0.0, None)
    none = (np.zeros((1, 3)), np.zeros(4), np.zeros((len(m.thetas), 3)))
    vt, vcoef, vkc = none if spec is None else (np.array([m.terms(b * k1) for b in range(cap + 1)], dtype=float),
                                                *_coefs((m.ver_compute, m.ver_kv), m.thetas))
    dt, dcoef, dkc = none if dm is None else (np.array([dm.terms(b) for b in range(cap + 1)], dtype=float),
                                              *_coefs((dm.dec_compute, dm.dec_kv), m.thetas))
    chunk = getattr(pol, "chunk_tokens", None)
    policy = L.ADAPTIVE if type(pol) is Adaptive else L.CONTINUOUS if chunk is None else L.CHUNKED
    pf = np.array([m.kv_capacity_bytes, eng.horizon, pool.swap_bw or 0.0, pool.chips, held.f0,
                   getattr(pol, "deadline_s", 0.0), sv, sd, over], dtype=float)
    pi = np.array([pool.budget, cap, -1 if eng.max_queue is None else eng.max_queue, len(pool.replicas),
                   int(pool.multi), policy, chunk or 0, k1, int(dm is not None)], dtype=np.int64)
    return L.Model(tb=tb, tw=tw, tx=tx, xn=np.zeros(16, dtype=np.int64), xt=np.zeros((16, 3)),
                   ha=np.asarray(held.a, dtype=float), hth=np.asarray(held.theta, dtype=float),
                   thetas=np.asarray(m.thetas, dtype=float), coef=coef, kc=kc,
                   lpc=np.asarray(m._pc, dtype=float), lpkw=np.asarray(m._pkw, dtype=float),
                   lpkr=np.asarray(m._pkr, dtype=float), vt=vt, vcoef=vcoef, vkc=vkc, dt=dt, dcoef=dcoef, dkc=dkc,
                   pf=pf, pi=pi)


def _state(eng) -> tuple:
    """The loop's state at the start: ``fastlayout``'s State, Reps, Out and Tmp. Buffers are grown on demand;
    np.zeros maps pages lazily, so a generous start costs only what is used."""
    pool = eng.pools[0]
    n, R, cap, nth = eng.n, len(pool.replicas), pool.batch_cap, len(pool.model.thetas)
    i64 = np.int64
    s = L.State(status=np.full(n, 4, dtype=i64),  # NOT_ARRIVED
                reason=np.zeros(n, dtype=i64), gen=np.zeros(n, dtype=i64), preempted=np.zeros(n, dtype=i64),
                resume=np.zeros(n, dtype=i64), join_t=np.full(n, math.nan), t_admit=np.full(n, math.nan),
                t_first=np.full(n, math.nan), t_done=np.full(n, math.nan), mem_rep=np.full(n, -1, dtype=i64),
                mem_g0=np.zeros(n, dtype=i64), mem_l0=np.zeros(n, dtype=i64), mem_st=np.zeros(n, dtype=i64),
                queue=np.zeros(n + 1, dtype=i64))
    rflt = np.zeros((R, L.N_RFLT))
    rflt[:, L.R_SCHED], rflt[:, L.R_LASTEND] = math.nan, -math.inf
    # per-replica heap rows (stale entries of preempted sequences stay until they surface)
    per = 1 if _SMALL_BUFFERS else 4 * cap + 64
    rp = L.Reps(rint=np.zeros((R, L.N_RINT), dtype=i64), rflt=rflt, nb=np.zeros((R, nth), dtype=i64),
                sb=np.zeros((R, nth)), gk=np.zeros((R, cap + 2)), gc=np.zeros((R, cap + 2), dtype=i64),
                fin=np.zeros((R, per, 3), dtype=i64), cross=np.zeros((R, per * max(nth, 1), 4), dtype=i64),
                order=np.zeros((R, per), dtype=i64),  # compacted by the kernel when full
                part=np.zeros((R, cap + 1, 3), dtype=i64))
    ne = 1 if _SMALL_BUFFERS else R + 16  # the event heap: about one pending decision per replica
    size = 1 if _SMALL_BUFFERS else 4 * n + 1024  # output buffers: about 2-3 gaps and acts per request
    o = L.Out(isc=np.zeros(L.N_ISC, dtype=i64), fsc=np.zeros(L.N_FSC), et=np.zeros(ne), ei=np.zeros((ne, 3), dtype=i64),
              gaps=np.zeros(size), wts=np.zeros(size),
              runs=np.zeros(1 if _SMALL_BUFFERS else 20 * n + 1024),  # 10 floats per closed-form run, 1-2 per request
              spec=np.zeros(1 if _SMALL_BUFFERS or pool.spec is None else 12 * n + 1024),
              tl_t=np.zeros(size), tl_w=np.zeros(size), tl_r=np.zeros(size))
    x = L.Tmp(adm=np.zeros(cap + 1, dtype=i64), done=np.zeros(cap + 1, dtype=i64), fadm=np.zeros(cap + 1, dtype=bool),
              la=np.zeros(9), lb=np.zeros(9), fk=np.zeros(2), rs=np.zeros(6), vs=np.zeros(4), sp=np.zeros(12))
    return s, rp, o, x


def _add_terms(sm, m, isc) -> tuple:
    """Insert the terms of a long prefill into the sorted extra rows: the whole aligned block of token
    counts holding it (``StepModel.terms_block``, what the Python loop reads), so that the kernel stops
    for a block once, not for every count (adaptive batching: 921 stops and 0.49 CPU-s at 3·10^5
    requests before, one vectorised call per block now)."""
    tok, nx = int(isc[L.I_NEED]), int(isc[L.I_XLEN])
    lo, rows = sm.terms_block(tok)
    B = len(rows)
    xn, xt = m.xn, m.xt
    while nx + B > len(xn):
        xn, xt = _grow(xn), _grow(xt)
    j = int(np.searchsorted(xn[:nx], lo))  # blocks are disjoint and a block is inserted once
    xn[j + B:nx + B], xt[j + B:nx + B] = xn[j:nx].copy(), xt[j:nx].copy()
    xn[j:j + B], xt[j:j + B] = np.arange(lo, lo + B, dtype=np.int64), rows
    isc[L.I_XLEN] = nx + B
    return m._replace(xn=xn, xt=xt)


def _grow_buffers(m, rp, o) -> tuple:
    """GROW: double whatever could overflow at the next event (``fastloop.must_grow`` checks the same bounds)."""
    isc, cap, nth = o.isc, int(m.pi[L.P_CAP]), len(m.thetas)
    if isc[L.I_EVLEN] + 2 > o.et.shape[0]:
        o = o._replace(et=_grow(o.et), ei=_grow(o.ei))
    if isc[L.I_GAPLEN] + cap + 2 > o.gaps.shape[0]:
        o = o._replace(gaps=_grow(o.gaps), wts=_grow(o.wts))
    if isc[L.I_RUNLEN] + 10 > o.runs.shape[0]:
        o = o._replace(runs=_grow(o.runs))
    if isc[L.I_SPECLEN] + 6 > o.spec.shape[0]:
        o = o._replace(spec=_grow(o.spec))
    if isc[L.I_TLLEN] + 1 > o.tl_t.shape[0]:
        o = o._replace(tl_t=_grow(o.tl_t), tl_w=_grow(o.tl_w), tl_r=_grow(o.tl_r))
    rint = rp.rint
    if (rint[:, L.R_FINLEN] + cap + 1 > rp.fin.shape[1]).any():
        rp = rp._replace(fin=_grow(rp.fin, axis=1))
    if (rint[:, L.R_CROSSLEN] + (cap + 1) * nth > rp.cross.shape[1]).any():
        rp = rp._replace(cross=_grow(rp.cross, axis=1))
    if (rint[:, L.R_ORDERLEN] + cap + 1 > rp.order.shape[1]).any():
        rp = rp._replace(order=_grow(rp.order, axis=1))
    return rp, o


def _finish(eng, fl, q, s, rp, o, i) -> None:
    """Leave the engine as ``Engine.run`` does."""
    pool = eng.pools[0]
    isc, fsc = o.isc, o.fsc
    # tokens generated so far by sequences still decoding (``simulate._result`` does this for the Python loop)
    gen, mem_rep = s.gen, s.mem_rep
    live = np.nonzero(mem_rep >= 0)[0]
    gen[live] = s.mem_l0[live] + rp.rint[mem_rep[live], L.R_G] - s.mem_g0[live] - q.prompt[live] + 1
    eng.status, eng.reason, eng.gen, eng.preempted = s.status, s.reason, gen, s.preempted
    eng.t_admit, eng.t_first, eng.t_done = s.t_admit, s.t_first, s.t_done
    eng.n_arrived, eng.n_departed = int(isc[L.I_ARRIVED]), int(isc[L.I_DEPARTED])
    eng.sum_arr, eng.sum_dep = float(fsc[L.F_SUM_ARR]), float(fsc[L.F_SUM_DEP])
    eng.events, eng.next_index = int(isc[L.I_EVENTS]), i
    pool.busy_s, pool.iterations, pool.tokens = float(fsc[L.F_BUSY]), int(isc[L.I_ITER]), int(isc[L.I_TOKENS])
    g, rl, tl = int(isc[L.I_GAPLEN]), int(isc[L.I_RUNLEN]), int(isc[L.I_TLLEN])
    eng.itl_first, eng.itl_runs = (o.gaps[:g], o.wts[:g]), o.runs[:rl]
    eng.itl = fl.expand_runs(o.gaps[:g], o.wts[:g], o.runs, rl // 10, o.spec)  # ``metrics.expand_itl``, compiled
    eng.timeline = (o.tl_t[:tl], o.tl_w[:tl], o.tl_r[:tl])  # views: the untouched rest was never mapped
    if math.isfinite(eng.horizon):
        eng.end_time = eng.horizon
    else:
        fin_t = s.t_done[~np.isnan(s.t_done)]
        eng.end_time = max(float(fin_t.max()) if fin_t.size else -math.inf, float(q.arr[i - 1]) if i else 0.0)


def _grow(a: np.ndarray, axis: int = 0) -> np.ndarray:
    shape = list(a.shape)
    shape[axis] *= 2
    b = np.zeros(shape, dtype=a.dtype)
    b[tuple(slice(0, s) for s in a.shape)] = a
    return b
