"""The compiled event loop (``fastloop``, numba): when a run can use it, and the arrays it runs on.

numba (an optional dependency: ``pip install llmecon[fast]``) compiles ``fastloop.run``, a port of
``Engine``'s loop for the common case: one pool (one or more replicas) run by ``Continuous`` without
chunked prefill, roofline or calibrated step models, closed-form runs, plain decoding. Every other run (train,
adaptive, chunked, disaggregated, service classes, service-time overrides, ``closed_form_runs=False``,
speculative decoding)
takes the pure-Python loop, as does every run when numba is not installed or the environment
variable ``LLMECON_SIM_COMPILED`` is ``0``, and, by default, a run of fewer than
``AUTO_MIN_REQUESTS`` requests in a process that has not loaded the kernel yet (``1``: those too).
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
    from .policies import Continuous

    if not eng.closed_form:
        return "closed_form_runs=False"
    if len(eng.pools) != 1:
        return "more than one pool (service classes or disaggregation)"
    pool = eng.pools[0]
    pol = getattr(pool.act, "__self__", None)
    if type(pol) is not Continuous:
        return f"the {eng.cfg.policy.name} policy"
    if pol.chunk_tokens is not None:
        return "chunked prefill"
    if pool.model.override:
        return "a service-time override"
    if pool.next_pool is not None or pool.sources:
        return "linked pools"
    if pool.spec is not None:
        return "speculative decoding"
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
    pool = eng.pools[0]
    m = pool.model
    n = eng.n
    R = len(pool.replicas)
    cap = pool.batch_cap
    wl = eng.wl
    arr = np.append(wl.arrival_s.astype(float), math.inf)
    prompt = wl.prompt_tokens.astype(np.int64)
    out = wl.output_tokens.astype(np.int64)
    cached, pf_c, pf_k, h_first, too_big = eng.cached, eng.pf_c, eng.pf_k, eng.h_first, eng.too_big
    tb, tw, tx = _table(m)
    if len(tb) <= cap:
        raise InternalError("step table shorter than the batch cap")  # simulate.step_models sizes it
    xn, xt = np.zeros(16, dtype=np.int64), np.zeros((16, 3))  # terms of longer prefills, sorted by tokens
    held, thetas = m.held, np.asarray(m.thetas, dtype=float)
    ha, hth = np.asarray(held.a, dtype=float), np.asarray(held.theta, dtype=float)
    fc, fk = m.dec_compute, m.dec_kv
    coef = np.array([fc.f0, fc.a[0], fk.f0, fk.a[0], held.f0, held.a[0]], dtype=float)
    kc = np.array([(th, fc.a[j + 1], fk.a[j + 1], held.a[j + 1]) for j, th in enumerate(m.thetas)],
                  dtype=float).reshape(len(m.thetas), 4)
    lpc, lpkw, lpkr = (np.asarray(v, dtype=float) for v in (m._pc, m._pkw, m._pkr))
    prm_f = np.array([m.kv_capacity_bytes, eng.horizon, pool.swap_bw or 0.0, pool.chips, held.f0], dtype=float)
    prm_i = np.array([pool.budget, cap, -1 if eng.max_queue is None else eng.max_queue, R, int(pool.multi)],
                     dtype=np.int64)
    status = np.full(n, 4, dtype=np.int64)  # NOT_ARRIVED
    reason, gen, preempted, resume = (np.zeros(n, dtype=np.int64) for _ in range(4))
    join_t, t_admit, t_first, t_done = (np.full(n, math.nan) for _ in range(4))
    mem_rep = np.full(n, -1, dtype=np.int64)
    mem_g0, mem_l0, mem_st = (np.zeros(n, dtype=np.int64) for _ in range(3))
    queue = np.zeros(n + 1, dtype=np.int64)
    isc, fsc = np.zeros(fl.N_ISC, dtype=np.int64), np.zeros(fl.N_FSC)
    rint = np.zeros((R, fl.N_RINT), dtype=np.int64)
    rflt = np.zeros((R, fl.N_RFLT))
    rflt[:, fl.R_SCHED], rflt[:, fl.R_LASTEND] = math.nan, -math.inf
    nth = len(m.thetas)
    nb, sb = np.zeros((R, nth), dtype=np.int64), np.zeros((R, nth))
    gk, gc = np.zeros((R, cap + 2)), np.zeros((R, cap + 2), dtype=np.int64)
    # buffers are grown on demand; np.zeros maps pages lazily, so a generous start costs only what is used
    # per-replica heap rows (stale entries of preempted sequences stay until they surface)
    per = 1 if _SMALL_BUFFERS else 4 * cap + 64
    fin = np.zeros((R, per, 3), dtype=np.int64)
    cross = np.zeros((R, per * max(nth, 1), 4), dtype=np.int64)
    order = np.zeros((R, per), dtype=np.int64)  # compacted by the kernel when full
    ne = 1 if _SMALL_BUFFERS else R + 16  # the event heap: one pending decision per replica
    et, ei = np.zeros(ne), np.zeros((ne, 3), dtype=np.int64)
    size = 1 if _SMALL_BUFFERS else 4 * n + 1024  # output buffers: about 2-3 gaps and acts per request
    gaps, wts, tl_t, tl_w, tl_r = (np.zeros(size) for _ in range(5))
    runs = np.zeros(1 if _SMALL_BUFFERS else 20 * n + 1024)  # 10 floats per closed-form run, 1-2 runs per request
    adm, done = np.zeros(cap + 1, dtype=np.int64), np.zeros(cap + 1, dtype=np.int64)
    tick = max(1, n // 200)
    stop_i = tick if progress is not None else n + 1
    while True:
        code = fl.run(arr, prompt, out, cached, pf_c, pf_k, h_first, too_big, tb, tw, tx, xn, xt, ha, hth, thetas,
                      coef, kc,
                      lpc, lpkw, lpkr, prm_f, prm_i, status, reason, gen, preempted, resume, join_t, t_admit, t_first,
                      t_done, mem_rep, mem_g0, mem_l0, mem_st, queue, isc, fsc, rint, rflt, nb, sb, gk, gc, fin, cross,
                      order, et, ei, gaps, wts, runs, tl_t, tl_w, tl_r, adm, done, stop_i)
        if code == fl.DONE:
            break
        if code == fl.PAUSE:
            progress(stop_i / n)
            stop_i += tick
            continue
        if code == fl.NEED:  # insert the terms of a long prefill (what the Python loop looks up)
            tok, nx = int(isc[fl.I_NEED]), int(isc[fl.I_XLEN])
            if nx == len(xn):
                xn, xt = _grow(xn), _grow(xt)
            j = int(np.searchsorted(xn[:nx], tok))
            xn[j + 1:nx + 1], xt[j + 1:nx + 1] = xn[j:nx].copy(), xt[j:nx].copy()
            xn[j], xt[j] = tok, m.terms(tok)
            isc[fl.I_XLEN] = nx + 1
            continue
        # GROW: double whatever could overflow at the next event (the kernel checks the same bounds)
        if isc[fl.I_EVLEN] + 2 > et.shape[0]:
            et, ei = _grow(et), _grow(ei)
        if isc[fl.I_GAPLEN] + cap + 2 > gaps.shape[0]:
            gaps, wts = _grow(gaps), _grow(wts)
        if isc[fl.I_RUNLEN] + 10 > runs.shape[0]:
            runs = _grow(runs)
        if isc[fl.I_TLLEN] + 1 > tl_t.shape[0]:
            tl_t, tl_w, tl_r = _grow(tl_t), _grow(tl_w), _grow(tl_r)
        if (rint[:, fl.R_FINLEN] + cap + 1 > fin.shape[1]).any():
            fin = _grow(fin, axis=1)
        if (rint[:, fl.R_CROSSLEN] + (cap + 1) * nth > cross.shape[1]).any():
            cross = _grow(cross, axis=1)
        if (rint[:, fl.R_ORDERLEN] + cap + 1 > order.shape[1]).any():
            order = _grow(order, axis=1)
    i = int(isc[fl.I_NEXT])
    while progress is not None and stop_i <= i:  # reports the Python loop makes after the last pause
        progress(stop_i / n)
        stop_i += tick
    # tokens generated so far by sequences still decoding (``simulate._result`` does this for the Python loop)
    live = np.nonzero(mem_rep >= 0)[0]
    gen[live] = mem_l0[live] + rint[mem_rep[live], fl.R_G] - mem_g0[live] - prompt[live] + 1
    eng.status, eng.reason, eng.gen, eng.preempted = status, reason, gen, preempted
    eng.t_admit, eng.t_first, eng.t_done = t_admit, t_first, t_done
    eng.n_arrived, eng.n_departed = int(isc[fl.I_ARRIVED]), int(isc[fl.I_DEPARTED])
    eng.sum_arr, eng.sum_dep = float(fsc[fl.F_SUM_ARR]), float(fsc[fl.F_SUM_DEP])
    eng.events, eng.next_index = int(isc[fl.I_EVENTS]), i
    pool.busy_s, pool.iterations, pool.tokens = float(fsc[fl.F_BUSY]), int(isc[fl.I_ITER]), int(isc[fl.I_TOKENS])
    g, rl, tl = int(isc[fl.I_GAPLEN]), int(isc[fl.I_RUNLEN]), int(isc[fl.I_TLLEN])
    eng.itl_first, eng.itl_runs = (gaps[:g], wts[:g]), runs[:rl]
    eng.itl = fl.expand_runs(gaps[:g], wts[:g], runs, rl // 10)  # what ``metrics.expand_itl`` gives, compiled
    eng.timeline = (tl_t[:tl], tl_w[:tl], tl_r[:tl])  # views: the untouched rest of each buffer was never mapped
    if math.isfinite(eng.horizon):
        eng.end_time = eng.horizon
    else:
        fin_t = t_done[~np.isnan(t_done)]
        eng.end_time = max(float(fin_t.max()) if fin_t.size else -math.inf, float(arr[i - 1]) if i else 0.0)
    return True


def _grow(a: np.ndarray, axis: int = 0) -> np.ndarray:
    shape = list(a.shape)
    shape[axis] *= 2
    b = np.zeros(shape, dtype=a.dtype)
    b[tuple(slice(0, s) for s in a.shape)] = a
    return b
