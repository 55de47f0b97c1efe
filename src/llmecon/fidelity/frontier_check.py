"""Validate the frontier, not only rows (issue 37 item 4): measured envelopes of output tokens/s per GPU against
tokens/s per user from NVIDIA's silicon serving runs (aiconfigurator ``silicon_dev.csv``, read by
``fidelity.silicon``), against llmecon's whole-request frontier (``econ.serving_frontier``).

Measured points (one per priced row, aggregated and disaggregated): a closed-loop benchmark at concurrency C
with ``P``/``O`` prompt/output tokens, measured TTFT and TPOT, serves ``C·O / (TTFT + (O - 1)·TPOT)`` output
tokens/s (each client waits for its request, then sends the next); per GPU over the deployment's GPUs
(aggregated: ``tp·adp·pp``; disaggregated: prefill workers x their GPUs + decode workers x theirs). Tokens/s per
user = 1 / TPOT. Groups: (chip, model path, weight format, P, O); the measured envelope at u is the most
tokens/s per GPU of any point of the group at u or faster.

Predicted, per group: the whole-request frontier (view 'whole': aggregated and disaggregated; 'measured': the
serving each engine's rows ran, aggregated, disaggregated or both, as a sweep that ran aggregated only measured
nothing about disaggregated serving; 'decode': decode steps only) on the row's
catalogue system with each engine of the group's rows (its ``chip/engine`` profile, the engine's layouts,
``SearchOptions.layouts`` 'engine'), the envelope of their union, the GPU budget of one replica = the largest
replica measured in the group (aggregated: its GPUs; disaggregated: a decode worker's), decode batches up to the
largest concurrency one replica (or decode worker: concurrency / decode workers) was measured at (``cap``: a
benchmark that stopped at concurrency 256 measured nothing beyond it, so a frontier point there has no
measurement to be scored against; ``cap=False`` scores the uncapped frontier), decode context
``P + O/2`` (the mean over a request's decode), TTFT target ``TTFT_TARGET_S`` for the prefill workers.
Engine terms (``terms``): 'model' (leave one model out, the engine terms a group's chip and engine
get when fitted without that model's rows, ``holdout_silicon.model_folds`` and its fit, shared terms and
other-chip fallback as there; a (chip, engine) with no aggregated fold, e.g. disaggregated-only, falls back to
'kernel'), 'kernel' (the default, a minute instead of several: kernel-table fits only, engine terms at
``engine_fit.BASE``: no serving row enters, out of sample by construction), 'floor' (kernel terms with the
low-batch floor terms of ``fidelity.floor_fit`` fitted without the group's model), 'shipped' (the shipped
profiles, whose engine terms were fitted on these rows' aggregated subset: in sample, not an accuracy claim) or
'ideal' (datasheet peaks: a bound no measured point should pass). ``layouts`` 'measured' keeps the search to the
layouts the group's rows ran (``SearchOptions.only_layouts``: a diagnostic of layout choice); ``speculative``
scores the MTP runs (``silicon.SPECULATIVE_RUNS``) against the frontier with ``mtp`` K draft tokens searched.

Scores per group (``GroupScore``): the median over its measured points of predicted / measured envelope at the
point's tokens/s per user; the share of points reachable (the predicted frontier reaches the point's tokens/s
per user with at least ``REACHABLE_SHARE`` of its tokens/s per GPU); Kendall's tau of the chips' order at
``ORDER_AT`` tokens/s per user per (model, format, workload) with three or more chips measured there.
Omitted: the AMD tables other than MI300X's batch-latency runs (``fidelity.frontier_amd``: offline throughput
has no tokens/s per user at a load), disaggregated rows without worker counts (GPUs unknown).
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from dataclasses import dataclass

import numpy as np

REACHABLE_SHARE = 0.85
ORDER_AT = 50.0
TTFT_TARGET_S = 2.0
TERMS = ("floor", "model", "kernel", "shipped", "ideal")
DEFAULT_BATCHES = np.unique(np.round(np.logspace(0, math.log10(2 ** 17), 128)))
"""The planner's default decode batch grid (``planner._grid``), cut at the measured concurrency."""


@dataclass(frozen=True, kw_only=True)
class Measured:
    chip: str
    system: str
    engine: str
    model: str              # model path as in the CSV
    config: str             # config file the catalogue reads
    weight_dtype: str
    kv_dtype: str
    prompt_tokens: int
    output_tokens: int
    mode: str               # "agg" or "disagg"
    gpus: int
    replica_gpus: int       # aggregated: gpus; disaggregated: one decode worker's
    replica_concurrency: float  # sequences one replica (aggregated) or decode worker holds: C / decode workers
    per_user: float
    per_gpu: float
    layout: tuple = ()      # (tp, ep, pp, adp) of the replica (aggregated) or decode worker (disaggregated)


@dataclass(frozen=True, kw_only=True)
class GroupScore:
    chip: str
    model: str
    weight_dtype: str
    workload: str           # "P/O"
    points: int
    median_ratio: float     # predicted / measured envelope, median over the points (NaN: none predicted)
    reachable: float        # share of points reachable
    max_per_user_measured: float
    max_per_user_predicted: float
    at_order: dict          # {"measured": x, "predicted": y} envelope at ORDER_AT (None where absent)
    engines: tuple
    ratios: tuple = ()      # per point, predicted / measured envelope (NaN: unreachable)
    reached: tuple = ()     # per point, reachable


def _degrees(plan: str) -> tuple:
    """(tp, ep, pp, adp) of a ``silicon.plan_label`` ('tp8·ep8·pp1·adp1', with an optional '·r32')."""
    return tuple(int(x) for x in re.findall(r"\d+", plan)[:4])


def _chips_of(plan: str) -> int:
    tp, ep, pp, adp = _degrees(plan)
    return tp * pp * adp


def measured_points(path=None, configs=None, *, speculative: bool = False) -> list[Measured]:
    """Every priced row of the silicon CSV as a ``Measured`` point (module docstring); with ``speculative`` the
    runs that decoded with MTP only (``silicon.SPECULATIVE_RUNS``, aggregated)."""
    from .silicon import read_silicon

    out = []
    for disagg in ((False,) if speculative else (False, True)):
        rows, _ = read_silicon(path, configs, disaggregated=disagg, speculative=speculative)
        for r in rows:
            c = r.case
            if disagg:
                gpus = sum(int(c[f"{k}_workers"]) * _chips_of(c[f"{k}_plan"]) for k in ("prefill", "decode"))
                replica, held = _chips_of(c["decode_plan"]), r.concurrency / int(c["decode_workers"])
                layout = _degrees(c["decode_plan"])
            else:
                layout = _degrees(c["plan"]) if "plan" in c else tuple(int(c[k]) for k in ("tp", "ep", "pp", "adp"))
                gpus = replica = layout[0] * layout[2] * layout[3]
                held = r.concurrency
            p, o = int(c["prompt_tokens"]), int(c["output_tokens"])
            per_gpu = r.concurrency * o / (r.ttft_s + (o - 1) * r.tpot_s) / gpus
            out.append(Measured(chip=r.chip, system=c["system"], engine=r.engine, model=r.model, config=c["model"],
                                weight_dtype=c["weight_dtype"], kv_dtype=c["kv_dtype"], prompt_tokens=p,
                                output_tokens=o, mode="disagg" if disagg else "agg", gpus=gpus,
                                replica_gpus=replica, replica_concurrency=float(held), per_user=1.0 / r.tpot_s,
                                per_gpu=per_gpu, layout=layout))
    return out


def envelope(per_user, per_gpu, at) -> np.ndarray:
    """Most ``per_gpu`` among points with ``per_user`` >= each of ``at`` (NaN where none)."""
    u, g = np.asarray(per_user, float), np.asarray(per_gpu, float)
    order = np.argsort(-u)
    best = np.maximum.accumulate(g[order])
    k = np.searchsorted(-u[order], -np.asarray(at, float), side="right")  # points with u >= at
    return np.where(k > 0, best[np.maximum(k - 1, 0)], np.nan)


def groups_of(points) -> dict:
    by = defaultdict(list)
    for p in points:
        by[(p.chip, p.model, p.weight_dtype, p.prompt_tokens, p.output_tokens)].append(p)
    return dict(sorted(by.items()))


def predicted_frontier(pts: list[Measured], *, terms: str = "kernel", view: str = "whole", layouts: str = "engine",
                       cap: bool = True, mtp: int = 0, source: tuple = (None, None)):
    """(per_user, per_chip) arrays of the union of the group's engines' whole-request frontiers; with ``cap``,
    batches per replica up to the largest concurrency measured per replica (module docstring); with ``mtp`` K,
    speculative decoding with k = 1..K MTP draft tokens searched beside plain decoding (the frontier with
    speculation, ``serving_frontier``), at the model family's default acceptance (``spec.speculation``).
    ``source`` = (silicon CSV, configs) the held-out terms ('model', 'floor') are fitted on (None: the shared)."""
    from ..catalog.efficiency import named_profile
    from ..catalog.hardware import get_system
    from ..catalog.models import get_model
    from ..econ.planner import PlanTargets, SearchOptions
    from ..econ.serving_frontier import serving_frontier
    from ..spec.efficiency import IDEAL
    from ..spec.speculation import speculation_candidates
    from .engine_fit import BASE, with_terms

    p0 = pts[0]
    model, system = get_model(p0.config), get_system(p0.system)
    targets = PlanTargets(context=p0.prompt_tokens + p0.output_tokens / 2, prompt_tokens=p0.prompt_tokens,
                          output_tokens=p0.output_tokens, ttft_s=TTFT_TARGET_S)
    us, cs = [], []
    for engine in sorted({p.engine for p in pts}):
        prof = named_profile(f"{p0.chip}/{engine}")
        if terms == "model":
            prof = with_terms(prof, held_out_terms(*source).get((f"{p0.chip}/{engine}", _group(p0.model)), BASE))
        elif terms == "kernel":
            prof = with_terms(prof, BASE)
        elif terms == "ideal":  # datasheet peaks: a throughput bound, no measured point should pass it
            prof = IDEAL
        elif terms == "floor":
            prof = with_terms(prof, {**BASE, **held_out_floor(f"{p0.chip}/{engine}", _group(p0.model), *source)})
        budget = max(p.replica_gpus for p in pts if p.engine == engine)
        batches = ()
        if cap:  # the batches the benchmarks ran: the default grid up to the largest measured concurrency
            most = max(p.replica_concurrency for p in pts if p.engine == engine)
            batches = tuple(float(b) for b in DEFAULT_BATCHES if b < most) + (float(most),)
        ran = tuple(sorted({p.layout for p in pts if p.engine == engine})) if layouts == "measured" else ()
        opts = SearchOptions(profiles={system.name: prof}, max_chips_by_system={system.name: budget},
                             batches=batches, layouts="any" if ran else layouts, only_layouts=ran,
                             weight_dtype=p0.weight_dtype or None, kv_dtype=p0.kv_dtype or None,
                             speculation=speculation_candidates(model, max_k=mtp) if mtp else ())
        f = serving_frontier(model, [system], targets=targets, options=opts, view=_view_of(view, pts, engine))
        us += [q.tokens_per_s_per_user for q in f.frontiers[system.name]]
        cs += [q.tokens_per_s_per_chip for q in f.frontiers[system.name]]
    return np.array(us), np.array(cs)


def _view_of(view: str, pts, engine: str) -> str:
    """``view``, or with 'measured' the serving the group's ``engine`` rows ran: 'aggregated' or
    'disaggregated' where all ran one way, 'whole' where both."""
    if view != "measured":
        return view
    modes = {p.mode for p in pts if p.engine == engine}
    return "whole" if len(modes) > 1 else ("aggregated" if modes == {"agg"} else "disaggregated")


def _group(model_path: str) -> str:
    from .holdout_silicon import FAMILY

    return FAMILY.get(model_path, model_path)


_HELD: dict = {}


def held_out_terms(path=None, configs=None) -> dict:
    """{(chip/engine, model group): engine terms fitted without that group's rows} over the aggregated rows
    (``holdout_silicon``'s leave-one-model-out folds and fit, repeated here fold by fold; about a minute of CPU,
    cached per process)."""
    key = (str(path), str(configs))
    if key in _HELD:
        return _HELD[key]
    from .engine_fit import BASE, PARAMS
    from .holdout_silicon import (CROSS_CHIP_BASE, SHARED, fit_fold, group_of, linearise, model_folds, pool_of,
                                  shared_terms)
    from .silicon import read_silicon
    from ..errors import InfeasibleError

    rows, _ = read_silicon(path, configs)
    lin0 = linearise(rows)
    folds, _ = model_folds(rows, lin0[0])
    out, cache = {}, {}
    for fold in folds:
        if not fold.held:
            continue
        pool = pool_of(rows, fold.held, fold.train, lin0[0])
        hold = shared_terms(rows, lin0, pool, cache) if pool is not None else None
        if CROSS_CHIP_BASE and {rows[i].chip for i in fold.held}.isdisjoint(rows[i].chip for i in fold.train):
            hold = {p: BASE[p] for p in PARAMS if p not in SHARED}
        try:
            terms = fit_fold(fold.train, rows, lin0, hold)
        except InfeasibleError:
            continue
        r0 = rows[fold.held[0]]
        out[(r0.profile, group_of(r0))] = terms
    _HELD[key] = out
    return out


def held_out_floor(profile: str, group: str, path=None, configs=None) -> dict:
    """The low-batch floor terms (``fidelity.floor_fit``) of ``profile`` fitted without model ``group``'s rows
    ({} where its engine has no aggregated row: kernel-only); the fit is about a minute of CPU, cached per
    process."""
    from .floor_fit import FLOOR_PARAMS, floor_for, held_out_floors
    from .silicon import read_silicon

    key = ("floor", str(path), str(configs))
    if key not in _HELD:
        _HELD[key] = held_out_floors(read_silicon(path, configs)[0])
    got = floor_for(_HELD[key], profile, group)
    return {} if got is None else {p: got[p] for p in FLOOR_PARAMS}


def score_group(key, pts, *, terms: str = "kernel", view: str = "whole", layouts: str = "engine",
                cap: bool = True, mtp: int = 0, source: tuple = (None, None)) -> GroupScore:
    chip, model, wdt, p, o = key
    mu, mg = np.array([q.per_user for q in pts]), np.array([q.per_gpu for q in pts])
    try:
        pu, pc = predicted_frontier(pts, terms=terms, view=view, layouts=layouts, cap=cap, mtp=mtp,
                                    source=source)
    except Exception as exc:  # noqa: BLE001 - a refused group is scored as unpredicted, with its reason
        from ..errors import LlmeconError

        if not isinstance(exc, LlmeconError):
            raise
        pu, pc = np.zeros(0), np.zeros(0)
    pred = envelope(pu, pc, mu) if pu.size else np.full(mu.size, np.nan)
    meas = envelope(mu, mg, mu)
    ratio = pred / meas
    reach = np.where(np.isfinite(pred), pred >= REACHABLE_SHARE * mg, False)
    at = {"measured": _at(mu, mg), "predicted": _at(pu, pc) if pu.size else None}
    return GroupScore(chip=chip, model=model, weight_dtype=wdt or "model's", workload=f"{p}/{o}", points=len(pts),
                      median_ratio=float(np.nanmedian(ratio)) if np.isfinite(ratio).any() else math.nan,
                      reachable=float(reach.mean()), max_per_user_measured=float(mu.max()),
                      max_per_user_predicted=float(pu.max()) if pu.size else math.nan, at_order=at,
                      engines=tuple(sorted({q.engine for q in pts})), ratios=tuple(float(x) for x in ratio),
                      reached=tuple(bool(x) for x in reach))


def _at(u, g):
    v = envelope(u, g, [ORDER_AT])[0]
    return None if not np.isfinite(v) else float(v)


def chip_order(scores) -> list[dict]:
    """Kendall's tau of the chips' order at ``ORDER_AT`` tokens/s per user, per (model, format, workload) with
    three or more chips holding both a measured and a predicted envelope there."""
    from scipy.stats import kendalltau

    by = defaultdict(list)
    for s in scores:
        m, p = s.at_order["measured"], s.at_order["predicted"]
        if m is not None and p is not None:
            by[(s.model, s.weight_dtype, s.workload)].append((s.chip, m, p))
    out = []
    for (model, wdt, work), rows in sorted(by.items()):
        if len(rows) >= 3:
            tau = kendalltau([r[1] for r in rows], [r[2] for r in rows]).statistic
            out.append({"model": model, "weight_dtype": wdt, "workload": work, "chips": [r[0] for r in rows],
                        "tau": float(tau)})
    return out


def frontier_validation(path=None, configs=None, *, terms: str = "kernel", view: str = "whole", chips=None,
                        models=None, progress=None, layouts: str = "engine", cap: bool = True,
                        speculative: bool = False, mtp: int = 0) -> dict:
    """Scores of every group (``score_group``), the chip order (``chip_order``) and per-chip summaries; with
    ``speculative`` the MTP runs only, scored against the frontier with ``mtp`` K draft tokens searched (0: the
    plain frontier, what llmecon predicts without speculation)."""
    from ..errors import require_choice

    require_choice("terms", terms, TERMS)
    pts = [p for p in measured_points(path, configs, speculative=speculative) if (chips is None or p.chip in chips)
           and (models is None or p.model in models)]
    groups = groups_of(pts)
    scores = []
    for i, (key, g) in enumerate(groups.items()):
        if progress is not None:
            progress(i, len(groups), f"{key[0]} {key[1]} {key[3]}/{key[4]}")
        scores.append(score_group(key, g, terms=terms, view=view, layouts=layouts, cap=cap, mtp=mtp,
                                  source=(path, configs)))
    return {"terms": terms, "view": view, "layouts": layouts, "cap": cap, "speculative": speculative, "mtp": mtp,
            "points": len(pts), "groups": scores,
            "order": chip_order(scores),
            "per_chip": summary(scores, "chip"), "all": summary(scores, None)}


def summary(scores, by: str | None) -> dict:
    """{group: {points, median_ratio (over every point's predicted / measured envelope, unreachable points
    left out), reachable (share of points)}}."""
    out = defaultdict(list)
    for s in scores:
        out["all" if by is None else getattr(s, by)].append(s)
    res = {}
    for k, ss in sorted(out.items()):
        ratios = np.array([x for s in ss for x in s.ratios], float)
        reached = np.array([x for s in ss for x in s.reached], bool)
        ok = np.isfinite(ratios)
        res[k] = {"points": int(ratios.size), "median_ratio": float(np.median(ratios[ok])) if ok.any() else math.nan,
                  "reachable": float(reached.mean()) if reached.size else math.nan}
    return res
