"""The low-batch step floor per chip x engine (issue 37 item 3), fitted so the frontier's top speed is right.

The top of a frontier (the most tokens/s per user) is the step time at batch 1-8, where a step is mostly fixed
costs, not bytes or FLOPs. Its physical form (the engine terms of ``engine_fit``, the three that act at every
step whatever the batch):

    step(b) = kernel-table step(b) with each kernel's measured floor x ``engine_floor_scale``
              + ``step_overhead_s``                      (per forward step: scheduler, sampling, host sync)
              + ``layer_overhead_s`` x layers             (per layer: host work, graph nodes)

``engine_floor_scale`` < 1 where an engine captures its steps as CUDA graphs (a launch paid once per graph, not
per kernel); the overheads are what the kernel tables, measured one kernel at a time, do not see.

Fit (``fit_floor``): on the aggregated silicon rows (``fidelity.silicon``) of low concurrency
(``LOW_CONCURRENCY``: the rows at the top of a measured envelope), the three terms minimise the robust (soft-L1,
scale 0.1) relative error of TPOT, the predictions linearised around the kernel-only profile (``engine_fit.BASE``:
``holdout_silicon.linearise``, exact for the two overheads, which add to every step, and for the floor scale,
which multiplies the floors), within ``engine_fit.BOUNDS``. No prior: unlike ``engine_fit`` (every row, every
concurrency, TTFT too), the rows here are the ones these terms dominate. The TTFT terms stay at ``BASE``.

Out of sample (``held_out_floors``): per (chip/engine, model group) the terms fitted without that group's rows
(``holdout_silicon.group_of``: DeepSeek-R1/V3/V3.1 one group); where fewer than ``MIN_ROWS`` rows are left on
that chip and engine, on the same engine's rows of every chip, the group still left out (a per-step overhead is
host work, chip-independent to first order; the floor scale is a share). In sample (``fitted_floors``): every
row of the profile, the values recorded in ``benchmarks/results/frontier_2026-11-29.md``.

Omitted: speculative runs (skipped by the reader, ``silicon.SPECULATIVE_RUNS``); disaggregated rows (a decode
worker's TPOT is fitted the same way but they have no worker counts on most rows); the terms' dependence on the
model beyond its layer count (an MoE step has more kernels per layer: the floor scale carries it).
"""

from __future__ import annotations

import numpy as np

from ..errors import InfeasibleError
from .engine_fit import BASE, BOUNDS, PARAMS, STEPS

FLOOR_PARAMS = ("engine_floor_scale", "step_overhead_s", "layer_overhead_s")
LOW_CONCURRENCY = 8
"""Rows at or below this client concurrency are the top of a measured envelope (1-8: what an interactive
deployment runs; above it the batch's bytes start to count)."""
MIN_ROWS = 2 * len(FLOOR_PARAMS)
"""Fewest priced rows a per-profile fit is made on; fewer: the same engine's rows of every chip."""


def low_rows(rows) -> list[int]:
    """Indices of the rows the floor is fitted on (``LOW_CONCURRENCY``)."""
    return [i for i, r in enumerate(rows) if r.concurrency <= LOW_CONCURRENCY]


def fit_floor(idx, rows, lin) -> dict:
    """The three ``FLOOR_PARAMS`` fitted on rows ``idx`` from ``lin`` (``holdout_silicon.linearise`` at ``BASE``),
    the other engine terms at ``BASE``. Raises InfeasibleError with fewer priced rows than terms."""
    from scipy.optimize import least_squares

    tpot0, _, d_tpot, _ = lin
    cols = [PARAMS.index(p) for p in FLOOR_PARAMS]
    idx = np.asarray([i for i in idx if np.isfinite(tpot0[i]) and np.all(np.isfinite(d_tpot[i, cols]))], dtype=int)
    if idx.size < len(FLOOR_PARAMS):
        raise InfeasibleError(f"floor fit: {idx.size} priced rows, fewer than the {len(FLOOR_PARAMS)} terms")
    meas = np.array([rows[i].tpot_s for i in idx])
    t0, d = tpot0[idx], d_tpot[idx][:, cols]
    x0 = np.array([BASE[p] for p in FLOOR_PARAMS])
    scale = np.abs(np.array([STEPS[p] for p in FLOOR_PARAMS]))
    lo = np.array([BOUNDS[p][0] for p in FLOOR_PARAMS])
    hi = np.array([BOUNDS[p][1] for p in FLOOR_PARAMS])
    sol = least_squares(lambda x: (t0 + d @ (x - x0)) / meas - 1.0, np.clip(x0, lo, hi), bounds=(lo, hi),
                        loss="soft_l1", f_scale=0.1, x_scale=scale)
    return {p: float(v) for p, v in zip(FLOOR_PARAMS, sol.x)}


def _linearised(rows):
    from .holdout_silicon import linearise

    return linearise(rows, low_rows(rows))


def _priced(idx, lin) -> list[int]:
    return [i for i in idx if np.isfinite(lin[0][i])]


def held_out_floors(rows, lin=None) -> dict:
    """{(chip/engine, model group): floor terms fitted without that group's rows} (module docstring), and
    {(engine, model group or None): the same engine's rows of every chip without the group (None: all of them)}
    for a chip/engine with no row (``floor_for``); each with ``"source"`` (the rows it was fitted on) and ``"rows"``."""
    from .holdout_silicon import group_of

    lin = _linearised(rows) if lin is None else lin
    low = _priced(low_rows(rows), lin)
    out = {}
    groups = sorted({group_of(r) for r in rows})
    for engine in sorted({r.engine for r in rows}):
        for g in groups + [None]:  # None: no group left out (a model with no row of this engine)
            train = [i for i in low if rows[i].engine == engine and group_of(rows[i]) != g]
            _put(out, (engine, g), train, rows, lin, f"{engine}: every chip")
    for prof in sorted({r.profile for r in rows}):
        for g in sorted({group_of(rows[i]) for i in range(len(rows)) if rows[i].profile == prof}):
            train = [i for i in low if rows[i].profile == prof and group_of(rows[i]) != g]
            if len(train) >= MIN_ROWS:
                _put(out, (prof, g), train, rows, lin, prof)
            elif (prof.split("/")[1], g) in out:
                out[(prof, g)] = out[(prof.split("/")[1], g)]
    return out


def _put(out, key, train, rows, lin, source) -> None:
    try:
        out[key] = {**fit_floor(train, rows, lin), "source": source, "rows": len(train)}
    except InfeasibleError:
        pass


def floor_for(held: dict, profile: str, group: str) -> dict | None:
    """The held-out floor terms of ``profile`` ('chip/engine') for model ``group`` (``held_out_floors``): the
    profile's own fold, else the engine's every-chip fit without the group, else the engine's every-chip fit
    (the group has no row of that engine, so none is left out); None where the engine has no row."""
    engine = profile.split("/")[1]
    return held.get((profile, group)) or held.get((engine, group)) or held.get((engine, None))


def fitted_floors(rows, lin=None) -> dict:
    """{chip/engine: floor terms fitted on every low-concurrency row of the profile} (in sample: the values to
    ship), with ``"rows"``; profiles with fewer than ``MIN_ROWS`` priced rows are left out."""
    lin = _linearised(rows) if lin is None else lin
    low = _priced(low_rows(rows), lin)
    out = {}
    for prof in sorted({r.profile for r in rows}):
        train = [i for i in low if rows[i].profile == prof]
        if len(train) >= MIN_ROWS:
            out[prof] = {**fit_floor(train, rows, lin), "rows": len(train)}
    return out
