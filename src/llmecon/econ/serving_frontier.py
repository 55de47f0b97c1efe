"""The whole-request frontier (issue 37 item 1): output tokens/s per GPU of the whole serving system against
tokens/s per user, for a workload of ``P`` prompt and ``O`` output tokens per request, the way published
serving benchmarks (InferenceX, aiconfigurator's silicon runs) count it: output tokens over the run's time
and every GPU of the deployment, prefill included.

Every (plan, batch[, k]) the planner evaluates for decode (``planner.evaluate_phase``, at the decode context of
``PlanTargets.context``, within each system's GPU budget and, with ``SearchOptions.layouts`` 'engine', the
layouts its engine runs) becomes up to two whole-request points:

* **aggregated** (one engine prefills and decodes on the same GPUs, prefill chunks interleaved with decode
  steps at the engine's token budget): a replica decoding at ``D`` output tokens/s spends ``T_p`` seconds
  prefilling each request, and a request yields ``O`` output tokens, so each output token costs
  ``1/D + T_p/O`` replica-seconds: ``R = 1 / (1/D + T_p/O)`` tokens/s per replica (per GPU: over its chips).
  Every sequence in flight waits for the interleaved prefills too: tokens/s per user = ``u · R / D`` (the mean
  inter-token time, prefill stalls included). ``T_p`` = ``prefill_step(batch = n, P)`` / ``n`` on the same
  plan, ``n = adp · pp · max(1, floor(budget / P))`` prompts per step (one token budget per attention group,
  ``TOKEN_BUDGET``).
* **disaggregated** (prefill on separate workers of the same system): each request costs ``c_p``
  prefill chip-seconds, the fewest of any prefill point (plan, prefill batch) the search evaluates whose TTFT
  (step and pipeline fill) meets ``PlanTargets.ttft_s`` (any TTFT when None); per GPU: ``D / (chips + D·c_p/O)``
  (prefill workers at the fractional ratio that keeps pace, the planner's ratio without rounding:
  ``econ.workers`` rounds); tokens/s per user is the decode point's.

The frontier per system is the non-dominated set of the union (``view`` 'whole'), or of one kind
('aggregated', 'disaggregated'), or the decode-only view ('decode': the decode steps alone, labelled so).

Speculative decoding (MTP) is a frontier option (issue 37 item 3): with ``SearchOptions.speculation`` the
frontier spans plain (k = 0) and speculative points together (each point's ``spec_tokens`` says which), and
``Frontier.without_speculation`` keeps each system's frontier of plain decoding alone, so both curves are
there to compare, labelled. A speculative point's tokens/s per user is E / iteration (``planner``, E the
expected tokens per verify step at the candidate's acceptance, an input: ``spec.speculation``); its prefill
is priced as plain decoding's (the draft module's prefill is omitted: one layer of 61 for DeepSeek-V3's MTP).

Omitted (each makes the figures optimistic or pessimistic as said): overlap inside a mixed prefill+decode step
(priced as the sum of the two, pessimistic by up to one weight read per chunk); the prefilling sequences' KV in
the decode batch's memory (optimistic); queueing and TTFT in the aggregated view (a closed-loop benchmark's
throughput counts TTFT, which at high concurrency is mostly queueing: ``serving/``); the KV transfer's
chip time in the disaggregated view (it is latency, ``econ.workers``); whole workers (fractional here).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from ..errors import InfeasibleError, require_choice, require_number
from ..spec.model import Model
from ..step.inference import prefill_step
from .context import usd_per_mtok
from .frontier import Frontier, at_interactivity
from .planner import PlanTargets, SearchOptions, _point, evaluate_phase, pareto_front, searched_plans

VIEWS = ("whole", "aggregated", "disaggregated", "decode")
TOKEN_BUDGET = 8192
"""Prompt tokens per engine step per attention group when prefill is interleaved: TensorRT-LLM's
``max_num_tokens`` default (8192, TensorRT-LLM docs "Tuning max batch size and max num tokens"), SGLang's
``chunked_prefill_size`` (8192 by default on most GPUs; SGLang server arguments), vLLM's
``max_num_batched_tokens`` for online serving (8192 in the V1 engine defaults). An input (``token_budget``)."""


def serving_frontier(model: Model, systems: list, *, targets: PlanTargets | None = None,
                     options: SearchOptions | None = None, prices: dict | None = None,
                     interactivity: float | None = None, view: str = "whole",
                     token_budget: float = TOKEN_BUDGET) -> Frontier:
    """Each system's whole-request frontier (module docstring) and, given ``interactivity`` (tokens/s per
    user), its figures there. Raises InfeasibleError when no plan fits any system."""
    require_choice("view", view, VIEWS)
    require_number("token_budget", token_budget, minimum=1, hint="prompt tokens per engine step")
    if interactivity is not None:
        require_number("interactivity", interactivity, minimum=0, exclusive=True, hint="tokens/s per user")
    t = targets or PlanTargets()
    options = options or SearchOptions()
    prices = dict(prices or {})
    open_t = PlanTargets(tpot_s=None, ttft_s=t.ttft_s, context=t.context, prompt_tokens=t.prompt_tokens,
                         output_tokens=t.output_tokens)
    plans = searched_plans(model, systems, options)
    if not any(len(p) for p in plans.values()):
        raise InfeasibleError(f"{model.name}'s weights do not fit any plan on {', '.join(s.name for s in systems)}",
                              fix="raise {max_chips} or use a smaller {weight_dtype}")
    a, plan_list = evaluate_phase(model, systems, plans, phase="decode", targets=open_t, options=options,
                                  prices=prices)
    if a is None:
        raise InfeasibleError("no decode point was evaluated", fix="raise {max_chips}")
    kinds = _views(model, systems, plans, a, plan_list, view=view, targets=open_t, options=options, prices=prices,
                   token_budget=token_budget)
    per_chip = np.concatenate([k["per_chip"] for _, k in kinds])
    per_user = np.concatenate([k["per_user"] for _, k in kinds])
    usable = np.concatenate([a["fits"] & np.isfinite(k["per_chip"]) & (k["per_chip"] > 0) for _, k in kinds])
    system_of = np.tile(a["sys"], len(kinds))
    plain = np.tile(a["spec"] == 0, len(kinds)) if "spec" in a else np.ones(system_of.size, bool)
    fronts, without = {}, {}
    for si, system in enumerate(systems):
        pick = dict(a=a, kinds=kinds, plan_list=plan_list, per_chip=per_chip, per_user=per_user,
                    engine=options.engine_for(system))
        fronts[system.name] = _front(usable & (system_of == si), **pick)
        if options.speculation:
            without[system.name] = _front(usable & plain & (system_of == si), **pick)
    at = {} if interactivity is None else {
        s.name: at_interactivity(fronts[s.name], interactivity, system=s.name, price=prices.get(s.name))
        for s in systems}
    return Frontier(model=model.name, systems=tuple(s.name for s in systems), targets=open_t, prices=prices,
                    frontiers=fronts, interactivity=interactivity, at=at, fidelity=options.fidelity(systems),
                    fidelity_fields=options.fidelity_fields(systems), speculation=tuple(options.speculation),
                    view=view, token_budget=float(token_budget), without_speculation=without)


def _front(sel, *, a, kinds, plan_list, per_chip, per_user, engine) -> tuple:
    """The non-dominated points among ``sel`` (over the stacked views ``kinds``), fastest per user first."""
    n = a["step"].size
    idx = np.flatnonzero(sel)
    pts = []
    for j in pareto_front(per_chip[idx], per_user[idx]):
        flat = int(idx[j])
        label, k = kinds[flat // n]
        pts.append(dataclasses.replace(_point({**a, **k}, flat % n, plan_list), serving=label, engine=engine))
    return tuple(sorted(pts, key=lambda p: -p.tokens_per_s_per_user))


def _views(model, systems, plans, a, plan_list, *, view, targets, options, prices, token_budget) -> list:
    """[(label, {per_chip, per_user, usd}), ...] of the requested view over the decode arrays ``a``."""
    if view == "decode":
        return [("decode", {"per_chip": a["per_chip"], "per_user": a["per_user"], "usd": a["usd"]})]
    replica = a["per_chip"] * a["chips"]                       # D: decode output tokens/s of one replica
    out_tokens = targets.output_tokens
    out = []
    if view in ("whole", "aggregated"):
        t_p = _prefill_s_per_request(model, systems, plans, targets=targets, options=options,
                                     token_budget=token_budget)[a["plan"]]
        whole = 1.0 / (1.0 / replica + t_p / out_tokens)       # R
        out.append(("aggregated", _priced(whole / a["chips"], a["per_user"] * whole / replica, a)))
    if view in ("whole", "disaggregated"):
        per_system = _prefill_chip_s_per_request(model, systems, plans, targets=targets, options=options,
                                                 prices=prices)
        if view == "disaggregated" and not np.isfinite(per_system).any():
            raise InfeasibleError(f"no prefill point meets ttft <= {targets.ttft_s:g} s on any system",
                                  field="ttft", fix="raise {ttft}, or set {view} to whole or aggregated")
        c_p = per_system[a["sys"]]
        out.append(("disaggregated", _priced(replica / (a["chips"] + replica * c_p / out_tokens), a["per_user"], a)))
    return out


def _priced(per_chip, per_user, a) -> dict:
    with np.errstate(divide="ignore"):  # 0 tokens/s (no prefill point meets the TTFT): dropped by the caller
        usd = usd_per_mtok(1.0 / per_chip, price_per_chip_hour=1.0) * a["price"]
    return {"per_chip": per_chip, "per_user": per_user, "usd": usd}


def _prefill_s_per_request(model, systems, plans, *, targets, options, token_budget) -> np.ndarray:
    """Replica-seconds of prefill per request on every searched plan (plan-list order: systems in order, each
    system's plans in table order, as ``planner._evaluate`` lists them)."""
    out = []
    per_group = max(1.0, math.floor(token_budget / targets.prompt_tokens))
    for system in systems:
        table = plans[system.name]
        if len(table) == 0:
            continue
        n = np.asarray(table.adp * table.pp, dtype=float) * per_group
        r = prefill_step(model, system, plan=table, batch=n, prompt_tokens=targets.prompt_tokens,
                         weight_dtype=options.weight_dtype, kv_dtype=options.kv_dtype,
                         dispatch_dtype=options.dispatch_dtype, expert_imbalance=options.expert_imbalance,
                         profile=options.profile_for(system))
        out.append(np.broadcast_to(r.step_s, n.shape) / n)
    return np.concatenate(out) if out else np.zeros(0)


def _prefill_chip_s_per_request(model, systems, plans, *, targets, options, prices) -> np.ndarray:
    """Per system (in order): the fewest prefill chip-seconds per request of any fitting prefill point whose
    TTFT meets ``targets.ttft_s`` (inf where none does)."""
    p, _ = evaluate_phase(model, systems, plans, phase="prefill", targets=targets, options=options, prices=prices)
    out = np.full(len(systems), np.inf)
    if p is None:
        return out
    ok = p["fits"] & ((p["latency"] <= targets.ttft_s) if targets.ttft_s is not None else True)
    cost = p["step"] * p["chips"] / p["batch"]
    for si in range(len(systems)):
        sel = ok & (p["sys"] == si)
        if np.any(sel):
            out[si] = float(np.min(cost[sel]))
    return out
