"""The compiled serving loop's data layout (``fastloop``/``faststeps``, numba): the arrays it runs on,
grouped by concept into named tuples (numba passes them to every compiled function as one
argument), and the indices of the scalars inside them. Plain Python: ``compiled.py`` builds the
tuples, the kernels read them; nothing here imports numba.
"""

from __future__ import annotations

from collections import namedtuple

# per-replica int rows (``Reps.rint``); R_NPART: chunked prefills in progress (rows of ``part``), R_STATIC: a
# static batch runs (adaptive)
R_G, R_N, R_S, R_STINT, R_STOPPED, R_VERSION, R_FINLEN, R_CROSSLEN, R_ORDERLEN, R_GLEN, R_NPART, R_STATIC = range(12)
N_RINT = 12
# per-replica float rows (``Reps.rflt``)
R_SCHED, R_LASTEND = 0, 1
N_RFLT = 2
# return codes of ``fastloop.run``
DONE, GROW, PAUSE, NEED = 0, 1, 2, 3
# int scalars (``Out.isc``); I_SPECLEN: floats in ``Out.spec`` (6 per speculative run)
I_NEXT, I_ARRIVED, I_DEPARTED, I_EVENTS, I_SEQ, I_QHEAD, I_QLEN, I_ITER, I_TOKENS, I_EVLEN = range(10)
I_GAPLEN, I_RUNLEN, I_TLLEN, I_NEED, I_XLEN, I_SPECLEN = range(10, 16)
N_ISC = 16
# float scalars (``Out.fsc``)
F_SUM_ARR, F_SUM_DEP, F_BUSY = 0, 1, 2
N_FSC = 3
# float parameters (``Model.pf``): KV capacity, horizon, swap bandwidth, chips, held KV's f0, the adaptive
# deadline, speculation's 1/E, draft scale / E and loop overhead
P_CAPKV, P_HORIZON, P_SWAPBW, P_CHIPS, P_H0, P_DEADLINE, P_SV, P_SD, P_OVER = range(9)
N_PF = 9
# int parameters (``Model.pi``): token budget, batch cap, max queue (-1: none), replicas, replicas > 1, the
# policy, chunk tokens, speculation's k + 1 (0: plain decoding), a draft model (1) or MTP (0)
P_BUDGET, P_CAP, P_MAXQ, P_R, P_MULTI, P_POLICY, P_CHUNK, P_K1, P_DRAFT = range(9)
N_PI = 9
CONTINUOUS, CHUNKED, ADAPTIVE = 0, 1, 2  # ``P_POLICY``
UNLIMITED = 1 << 62  # policies.UNLIMITED: a token budget that never binds
# request states (status.py)
WAITING, RUNNING, COMPLETED, REJECTED = 0, 1, 2, 3
PREFILL, SWAP_IN = 0, 1
KV_CAPACITY, QUEUE_FULL = 1, 2
RUN_FLOATS, SPEC_FLOATS = 10, 6  # per closed-form run (metrics.RUN_COLUMNS); the draft lines of a speculative one

# per request, read only: arrival times (+ an inf sentinel), prompt and output tokens, cached prefix, the
# whole-prompt prefill parts, KV after the first decode step, the whole request's KV, too big to ever fit
Req = namedtuple("Req", "arr prompt out cached pf_c pf_k h_first h_need too_big")
# the step model and pool: iteration terms (table, and sorted extra rows xn/xt), held KV (f0 in pf, slopes ha,
# kinks hth), the decode functions' coefficients, prefill's cumulative tables, speculation (verify terms at
# n·(k+1) per batch size n, verify and draft coefficients, draft terms), parameters
Model = namedtuple("Model", "tb tw tx xn xt ha hth thetas coef kc lpc lpkw lpkr vt vcoef vkc dt dcoef dkc pf pi")
# per request, mutable: status and the engine's per-request lists, membership in a running batch, the FCFS
# queue (a ring buffer)
State = namedtuple("State", "status reason gen preempted resume join_t t_admit t_first t_done "
                            "mem_rep mem_g0 mem_l0 mem_st queue")
# per replica: counters, times, kink sums, inter-token groups, the heaps of DecodeSet, admission order, chunked
# prefills in progress (rid, done, stop)
Reps = namedtuple("Reps", "rint rflt nb sb gk gc fin cross order part")
# loop scalars, the event heap, append-only outputs (first gaps and weights, runs, speculative draft lines,
# the timeline)
Out = namedtuple("Out", "isc fsc et ei gaps wts runs spec tl_t tl_w tl_r")
# scratch: admitted and finished rids, whether each admission was a first, the run's lines, first_k_reaching's
# answer, run sums, verify sums, the verify and draft lines of a speculative run
Tmp = namedtuple("Tmp", "adm done fadm la lb fk rs vs sp")
