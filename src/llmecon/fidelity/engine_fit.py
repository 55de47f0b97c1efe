"""Engine overhead terms of a kernel-table profile, fitted on measured end-to-end serving rows.

The kernel-table profiles (``kernel_profiles``) price each kernel as NVIDIA measured it, one at a
time; an engine serving requests pays more, and each extra cost has a cause it scales with:

=========================  ====================================================  ================
term                       scales with                                           where it acts
=========================  ====================================================  ================
``step_overhead_s``        forward steps (scheduler, sampling, host sync)        every step
``layer_overhead_s``       layers per step (per-layer host work, graph nodes)    every step
``engine_floor_scale``     kernel launches: the share of the measured per-       every kernel and
                           kernel floors a step still pays (CUDA graphs: < 1)    collective call
``prefill_stall_factor``   a prefill mixed into the decode iterations (held: 1)  TPOT
``ttft_prefill_factor``    the prefill a newcomer waits for                      TTFT
``request_overhead_s``     requests (admission, tokenisation, first token back)  TTFT
=========================  ====================================================  ================

Fit (``fit_terms``): the steady-state predictions (``silicon.predict_silicon``) are linearised in
the five fitted terms around the kernel-only profile ``BASE`` (finite differences,
``holdout_silicon.jacobian``), and the
terms minimise the robust (soft-L1, scale 0.1) relative error of TPOT on every row plus TTFT on
rows of concurrency <= ``TTFT_MAX_CONCURRENCY`` (larger ones are queueing at the batch/KV limit,
the README warns), within ``BOUNDS``, by ``scipy.optimize.least_squares``. The linearisation only
guides the fit: every reported error re-prices the rows with the full model and the fitted terms.
``iteration_overhead_s`` stays 0 (a second per-step term is not identifiable beside
``step_overhead_s``). ``fit_terms(..., hold=...)`` holds named terms at given values and fits the
rest: ``holdout_silicon`` fits the TTFT terms once per engine over every chip and holds them in the
per-chip fits, and a chip fitted on other chips' rows keeps its per-chip terms at ``BASE``.

``prefill_stall_factor`` is not fitted (``FIXED``: 1). On the silicon rows where the prefill stall
is identifiable (the stall x·P_1 at least 30% of the measured TPOT, no KV queueing: 320 rows of
h100/b200/b300 on all three engines, 2026-11-26) the stall per arriving prompt that the measured
TPOT, TTFT and the kernel-only decode step imply, (TPOT − decode step)/x with x = C·TPOT/(TTFT +
(O−1)·TPOT) arrivals per iteration (Little's law), is 0.97 of the kernel-only single-prompt prefill
P_1 (median; p10 0.42, p90 1.25): the prefill a decode iteration waits for is priced right. Fitted
factors of 1.5–1.9 (b200/h200 sglang, h200 trtllm) stood in for other errors and did not transfer
to other models or chips.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..errors import InfeasibleError

PARAMS = ("engine_floor_scale", "step_overhead_s", "layer_overhead_s", "ttft_prefill_factor", "request_overhead_s")
FIXED = {"prefill_stall_factor": 1.0}
"""Engine terms held at their physical value, not fitted (module docstring); ``fit_terms`` returns them too."""
BASE = {"engine_floor_scale": 1.0, "step_overhead_s": 0.0, "layer_overhead_s": 0.0, "prefill_stall_factor": 1.0,
        "ttft_prefill_factor": 1.0, "prefill_cohort_share": 0.0, "request_overhead_s": 0.0}
STEPS = {"engine_floor_scale": -0.5, "step_overhead_s": 1e-3, "layer_overhead_s": 2e-5, "prefill_stall_factor": 1.0,
         "ttft_prefill_factor": 1.0, "prefill_cohort_share": 0.25, "request_overhead_s": 1e-2}
BOUNDS = {"engine_floor_scale": (0.01, 1.0), "step_overhead_s": (0.0, 0.05), "layer_overhead_s": (0.0, 1e-3),
          "prefill_stall_factor": (1.0, 20.0), "ttft_prefill_factor": (1.0, 20.0), "prefill_cohort_share": (0.0, 1.0),
          "request_overhead_s": (0.0, 2.0)}
# prefill_cohort_share (serving.steady_state step 5) is in BASE/STEPS/BOUNDS so that a fit can name it (PARAMS
# or ``hold``), but PARAMS keeps ttft_prefill_factor: fitted per engine in its place (2026-11-28), the cohort
# share priced held-out TTFT worse (28% / 71% against 26% / 57%, docs/engines.md).
TTFT_MAX_CONCURRENCY = 8
PRIOR_WEIGHT = float(__import__("os").environ.get("LLMECON_ENGINE_PRIOR", "1.0"))
"""Weight of the pull towards ``BASE`` (no engine cost), in relative-error units per ``STEPS`` of
a term: a ridge that keeps a term at its kernel-only value unless many rows ask for it."""
UNPENALISED = ("ttft_prefill_factor", "request_overhead_s")
"""Terms fitted without the ridge: the TTFT terms, which ``holdout_silicon`` fits once per engine over every
chip's rows (256-394 TTFT rows per engine in silicon_dev.csv) and holds in the per-chip fits. The ridge's
scale for ``request_overhead_s`` is its finite-difference step, 10 ms, and SGLang's measured first-token
cost over the kernel-only prefill is 150-270 ms (b200, h200, b300 at concurrency 4-8): the ridge held it
at 0.13 s and priced held-out (leave one chip out) SGLang TTFT 34% too fast at the median, 37.9% median error;
without it 18% too fast, 24.3% (all engines 31.4% -> 26.5%; 2026-11-29, benchmarks/results/validate_2026-11-29.md,
where the choice's optimism is noted)."""


def with_terms(profile, terms: dict):
    """``profile`` with the engine terms ``terms`` (names of ``PARAMS``)."""
    return dataclasses.replace(profile, **{k: float(v) for k, v in terms.items()})


def fit_terms(idx, rows, lin, at: dict, hold: dict | None = None) -> dict:
    """Terms fitted on rows ``idx`` (one profile's training rows) from the linearisation ``lin``
    (``jacobian``'s output over all ``rows``) taken at ``at``; terms named in ``hold`` are held at
    its values (the engine-shared ones of ``holdout_silicon``), the others fitted."""
    from scipy.optimize import least_squares

    tpot0, ttft0, d_tpot, d_ttft = lin
    hold = dict(hold or {})
    free = [j for j, p in enumerate(PARAMS) if p not in hold]
    fixed = [j for j, p in enumerate(PARAMS) if p in hold]
    if not free:
        return {**FIXED, **{k: float(v) for k, v in hold.items()}}
    idx = np.asarray([i for i in idx if np.isfinite(tpot0[i]) and np.all(np.isfinite(d_tpot[i]))])
    if idx.size < len(free):
        raise InfeasibleError(f"engine fit: {idx.size} predicted rows, fewer than the {len(free)} terms")
    m_tpot = np.array([rows[i].tpot_s for i in idx])
    m_ttft = np.array([rows[i].ttft_s for i in idx])
    low = np.array([rows[i].concurrency <= TTFT_MAX_CONCURRENCY for i in idx]) & np.isfinite(ttft0[idx]) \
        & np.all(np.isfinite(d_ttft[idx]), axis=1)
    names = [PARAMS[j] for j in free]
    x0 = np.array([at[p] for p in names])
    prior = np.array([BASE[p] for p in names])
    scale = np.abs(np.array([STEPS[p] for p in names]))
    # the held terms' offset from the linearisation point, a constant in the linear model
    off = np.array([hold[PARAMS[j]] - at[PARAMS[j]] for j in fixed])
    tpot_h = tpot0[idx] + (d_tpot[idx][:, fixed] @ off if fixed else 0.0)
    ttft_h = ttft0[idx] + (d_ttft[idx][:, fixed] @ off if fixed else 0.0)
    dt, df = d_tpot[idx][:, free], d_ttft[idx][:, free]

    ridge = PRIOR_WEIGHT * np.array([p not in UNPENALISED for p in names], float) / scale

    def resid(x):
        dx = x - x0
        r1 = (tpot_h + dt @ dx) / m_tpot - 1.0
        r2 = (ttft_h[low] + df[low] @ dx) / m_ttft[low] - 1.0
        return np.concatenate([r1, r2, ridge * (x - prior)])

    lo = np.array([BOUNDS[p][0] for p in names])
    hi = np.array([BOUNDS[p][1] for p in names])
    sol = least_squares(resid, np.clip(x0, lo, hi), bounds=(lo, hi), loss="soft_l1", f_scale=0.1, x_scale=scale)
    return {**FIXED, **dict(zip(names, (float(v) for v in sol.x))), **{k: float(v) for k, v in hold.items()}}
