"""Results of a simulation: the per-request table, latency metrics, goodput, utilisation, cost.

Definitions (vLLM's ``benchmarks/benchmark_serving.py`` conventions, over completed requests):
* TTFT  = first token time - arrival (the first token is produced by the prefill);
* TPOT  = (E2E - TTFT) / (output tokens - 1), requests with >= 2 output tokens;
* ITL   = every gap between consecutive tokens of a request (one sample per token after the
  first; percentiles over all tokens, so long requests weigh more than in TPOT);
* E2E   = completion - arrival; queue wait = first admission - arrival;
* goodput = completed requests meeting every given SLO (TTFT and TPOT), per second of run
  (DistServe, Zhong et al. OSDI 2024);
* utilisation = share of replica time spent in iterations; $ = chips x run time x price (the
  chips are paid whether busy or not); $/Mtok = $ / output tokens generated x 1e6 (all requests,
  in flight included), and per class.
Percentiles are numpy's linear interpolation (``np.percentile`` default, as vLLM).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..units import json_num
from .status import STATUS_NAMES, Status
from .steptime import InternalError

SECONDS_PER_HOUR = 3600.0


@dataclass(frozen=True, kw_only=True)
class PoolStats:
    name: str
    kind: str
    replicas: int
    chips_per_replica: int
    batch_cap: int
    busy_s: float
    iterations: int
    tokens: int
    tau_s: float | None
    usd: float | None
    late_trains: int = 0

    def utilization(self, run_s: float) -> float:
        return self.busy_s / (self.replicas * run_s) if run_s > 0 else math.nan


@dataclass(frozen=True, kw_only=True)
class SimResult:
    """Everything a run produced. Arrays are per request, in arrival order."""

    arrival_s: np.ndarray
    prompt_tokens: np.ndarray
    output_tokens: np.ndarray
    class_id: np.ndarray
    class_names: tuple[str, ...]
    status: np.ndarray  # Status values (int64), index into STATUS_NAMES
    reject_reason: np.ndarray  # "" unless rejected
    admit_s: np.ndarray
    first_token_s: np.ndarray
    done_s: np.ndarray
    depart_s: np.ndarray  # completion or rejection time, NaN while in flight
    generated_tokens: np.ndarray
    preemptions: np.ndarray
    cached_tokens: np.ndarray
    run_s: float
    pools: tuple[PoolStats, ...]
    itl_values: np.ndarray
    itl_weights: np.ndarray
    timeline_s: np.ndarray
    timeline_waiting: np.ndarray
    timeline_running: np.ndarray
    occupancy_area: float
    policy: str
    price_per_chip_hour: float | None
    slo_ttft_s: float | None
    slo_tpot_s: float | None
    class_price: dict
    events: int
    engine_note: str | None = None  # set when a large run fell back to the slower Python loop (compiled.fallback_note)

    # ---- request sets --------------------------------------------------------------------------
    @property
    def completed(self) -> np.ndarray:
        return self.status == Status.COMPLETED

    @property
    def ttft_s(self) -> np.ndarray:
        return (self.first_token_s - self.arrival_s)[self.completed]

    @property
    def e2e_s(self) -> np.ndarray:
        return (self.done_s - self.arrival_s)[self.completed]

    @property
    def tpot_s(self) -> np.ndarray:
        c = self.completed & (self.output_tokens > 1)
        return (self.done_s[c] - self.first_token_s[c]) / (self.output_tokens[c] - 1)

    @property
    def queue_wait_s(self) -> np.ndarray:
        return (self.admit_s - self.arrival_s)[self.completed]

    def counts(self) -> dict[str, int]:
        c = np.bincount(self.status, minlength=len(Status))
        waiting, running = int(c[Status.WAITING]), int(c[Status.RUNNING])
        return {"completed": int(c[Status.COMPLETED]), "rejected": int(c[Status.REJECTED]),
                "in_flight": waiting + running, "waiting": waiting, "running": running,
                "not_arrived": int(c[Status.NOT_ARRIVED])}

    def slo_met(self) -> np.ndarray:
        """Boolean per completed request: within every given SLO."""
        ok = np.ones(int(self.completed.sum()), dtype=bool)
        if self.slo_ttft_s is not None:
            ok &= self.ttft_s <= self.slo_ttft_s
        if self.slo_tpot_s is not None:
            c = self.completed
            tp = np.zeros(int(c.sum()))
            multi = self.output_tokens[c] > 1
            tp[multi] = self.tpot_s
            ok &= tp <= self.slo_tpot_s
        return ok

    # ---- Little's law --------------------------------------------------------------------------
    def littles_law(self) -> dict[str, float]:
        """L (the engine's time-integrated number in system / T) against lambda x W with W the mean
        sojourn of every arrived request truncated at T (exact on every sample path), and against
        lambda x mean sojourn of completed requests only (differs by edge effects)."""
        T = self.run_s
        arrived = self.status != Status.NOT_ARRIVED
        lam = int(arrived.sum()) / T if T > 0 else math.nan
        end = np.where(np.isnan(self.depart_s), T, np.minimum(self.depart_s, T))[arrived]
        soj = end - self.arrival_s[arrived]
        L = self.occupancy_area / T if T > 0 else math.nan
        w_all = float(soj.mean()) if soj.size else 0.0
        done = self.completed
        w_done = float((self.done_s - self.arrival_s)[done].mean()) if done.any() else math.nan
        lam_w = lam * w_all
        return {"L": L, "lambda_per_s": lam, "W_s": w_all, "lambda_W": lam_w,
                "rel_error": abs(L - lam_w) / max(abs(L), 1e-300) if L else abs(lam_w),
                "W_completed_s": w_done, "rel_error_completed": abs(L - lam * w_done) / L if L else math.nan}

    # ---- summary ---------------------------------------------------------------------------------
    def usd(self) -> float | None:
        if self.price_per_chip_hour is None:
            return None
        return sum(p.usd for p in self.pools)

    def summary(self) -> dict:
        """The ``simulate --json`` object (see docs/serving.md for every key)."""
        c = self.counts()
        T = self.run_s
        ttft, tpot, e2e = self.ttft_s, self.tpot_s, self.e2e_s
        out_tok = int(self.generated_tokens.sum())
        in_tok = int(self.prompt_tokens[self.first_token_s == self.first_token_s].sum())
        usd = self.usd()
        met = self.slo_met()
        ll = self.littles_law()
        d = {
            "policy": self.policy, "run_s": T, "arrived": c["completed"] + c["rejected"] + c["in_flight"],
            **{k: c[k] for k in ("completed", "rejected", "in_flight", "waiting", "running", "not_arrived")},
            "rejected_by_reason": _reasons(self.reject_reason),
            **_pcts("ttft", ttft), **_pcts("tpot", tpot), **_pcts("itl", self.itl_values, self.itl_weights),
            **_pcts("e2e", e2e), **_pcts("queue_wait", self.queue_wait_s),
            "throughput_tokens_per_s": out_tok / T if T > 0 else None,
            "input_tokens_per_s": in_tok / T if T > 0 else None,
            "completed_requests_per_s": c["completed"] / T if T > 0 else None,
            "goodput_requests_per_s": int(met.sum()) / T if T > 0 else None,
            "slo_attainment": float(met.mean()) if met.size else None,
            "slo_ttft_s": self.slo_ttft_s, "slo_tpot_s": self.slo_tpot_s,
            "output_tokens": out_tok, "preemptions": int(self.preemptions.sum()),
            "prefix_hits": int((self.cached_tokens > 0).sum()),
            "utilization": json_num(sum(p.busy_s for p in self.pools) / sum(p.replicas for p in self.pools) / T)
            if T > 0 else None,
            "mean_waiting": json_num(float(np.average(self.timeline_waiting))) if self.timeline_waiting.size else 0.0,
            "max_waiting": int(self.timeline_waiting.max()) if self.timeline_waiting.size else 0,
            "price_per_chip_hour": self.price_per_chip_hour,
            "usd": usd,
            "usd_per_mtok": json_num(usd / out_tok * 1e6) if usd is not None and out_tok else None,
            "usd_per_mtok_reason": None if usd is not None else
            "no price: give --price-per-chip-hour or --tco (the catalogue has no rental prices)",
            "littles_law": {k: json_num(v) for k, v in ll.items()},
            "pools": [{"name": p.name, "kind": p.kind, "replicas": p.replicas, "chips_per_replica": p.chips_per_replica,
                       "batch_cap": p.batch_cap, "tau_s": p.tau_s, "late_trains": p.late_trains,
                       "iterations": p.iterations, "busy_s": p.busy_s, "utilization": json_num(p.utilization(T)),
                       "usd": p.usd} for p in self.pools],
            "classes": self._classes(),
            "engine_events": self.events,
            "engine_note": self.engine_note,
        }
        return d

    def _classes(self) -> list[dict]:
        rows = []
        names = self.class_names
        pools = {p.name: p for p in self.pools}
        total_tok = int(self.generated_tokens.sum())
        for k, name in enumerate(names):
            sel = self.class_id == k
            done = sel & self.completed
            tok = int(self.generated_tokens[sel].sum())
            pool = pools.get(name)
            if pool is not None and pool.usd is not None:
                usd = pool.usd
            elif self.price_per_chip_hour is not None and total_tok:
                usd = sum(p.usd for p in self.pools) * tok / total_tok  # shared pool: split by tokens
            else:
                usd = None
            ttft = (self.first_token_s - self.arrival_s)[done]
            c = done & (self.output_tokens > 1)
            tpot = (self.done_s[c] - self.first_token_s[c]) / (self.output_tokens[c] - 1)
            price = self.class_price.get(name)
            cost = json_num(usd / tok * 1e6) if usd is not None and tok else None
            rows.append({"name": name, "arrived": int((sel & (self.status != Status.NOT_ARRIVED)).sum()),
                         "completed": int(done.sum()),
                         "output_tokens": tok, **_pcts("ttft", ttft), **_pcts("tpot", tpot),
                         "usd_per_mtok": cost, "price_usd_per_mtok": price,
                         "margin": None if price is None or cost is None or price == 0 else json_num(1 - cost / price)})
        return rows


def _reasons(reasons: np.ndarray) -> dict[str, int]:
    vals, counts = np.unique(reasons[reasons != ""], return_counts=True)
    return {str(v): int(c) for v, c in zip(vals, counts)}


def weighted_percentiles(values: np.ndarray, weights: np.ndarray, qs) -> list[float]:
    """Percentiles ``qs`` of values with integer multiplicities (same as np.percentile of the
    expansion), from one sort. The order among equal values does not matter (they are equal), so
    the sort need not be stable."""
    order = np.argsort(values)
    v, w = values[order], weights[order]
    cum = np.cumsum(w)
    total = cum[-1]
    out = []
    for q in qs:
        pos = q / 100.0 * (total - 1)  # linear interpolation between order statistics
        lo = int(math.floor(pos))
        hi = min(lo + 1, int(total) - 1)
        vl = v[np.searchsorted(cum, lo + 1)]
        vh = v[np.searchsorted(cum, hi + 1)]
        out.append(float(vl + (vh - vl) * (pos - lo)))
    return out


def _pcts(name: str, x: np.ndarray, w: np.ndarray | None = None) -> dict:
    out = {}
    if x.size == 0 or (w is not None and w.sum() == 0):
        for q in ("mean", "p50", "p90", "p99"):
            out[f"{name}_{q}_s"] = None
        return out
    if w is None:
        out[f"{name}_mean_s"] = float(x.mean())
        for q in (50, 90, 99):
            out[f"{name}_p{q}_s"] = float(np.percentile(x, q))
    else:
        out[f"{name}_mean_s"] = float(np.average(x, weights=w))
        for q, v in zip((50, 90, 99), weighted_percentiles(x, w, (50, 90, 99))):
            out[f"{name}_p{q}_s"] = v
    return out


def check_accounting(status: np.ndarray, *, arrived: int, generated: np.ndarray, output: np.ndarray,
                     arrival: np.ndarray, first: np.ndarray, done: np.ndarray) -> None:
    """Every request is completed, rejected or in flight, none lost; completed ones are whole."""
    c = np.bincount(status, minlength=len(Status))
    if int(c[:Status.NOT_ARRIVED].sum()) != arrived or int(c.sum()) != status.size:
        raise InternalError(f"request accounting broken: {c.tolist()} (waiting, running, completed, rejected, not "
                            f"arrived) for {arrived} arrivals")
    comp = status == Status.COMPLETED
    if np.any(generated[comp] != output[comp]):
        raise InternalError("a completed request did not generate all its output tokens")
    if np.any(~(first[comp] >= arrival[comp])) or np.any(~(done[comp] >= first[comp])):
        raise InternalError("a completed request has its first token before arrival or finishes before it")


RUN_COLUMNS = 10  # per closed-form run (Engine.record_run): kind, (a, b) of its 3 lines, k, n, tau


def expand_itl(first: tuple, runs, spec=()) -> tuple[np.ndarray, np.ndarray]:
    """Inter-token gaps as (values, weights): the recorded first gaps of each run, and steps
    1..k-1 of every closed-form run (continuous: the step times; train: tau + the change of step
    time between consecutive trains), expanded vectorised. ``runs`` holds ``RUN_COLUMNS`` floats per
    run (kind, a0, b0, a1, b1, a2, b2, k, n, tau). Kind 2 (speculative decoding, ``Engine.spec_lines``):
    the three lines are the verify step's over E, and ``spec`` holds, per kind-2 run in order, the
    draft's three lines (6 floats) over E; the step is the sum of the two maxima."""
    vals = [np.frombuffer(first[0]) if len(first[0]) else np.zeros(0)]
    wts = [np.frombuffer(first[1]) if len(first[1]) else np.zeros(0)]
    if len(runs):
        R = np.frombuffer(runs).reshape(-1, RUN_COLUMNS)
        kind = R[:, 0]
        k = R[:, 7].astype(np.int64) - 1
        n, tau = R[:, 8], R[:, 9]
        L = R[:, 1:7]
        idx = np.repeat(np.arange(R.shape[0]), k)
        j = np.arange(int(k.sum())) - np.repeat(np.cumsum(k) - k, k) + 1  # 1..k-1 in each run
        Li = L[idx]

        def step(jj):
            return np.maximum(np.maximum(Li[:, 0] + Li[:, 1] * jj, Li[:, 2] + Li[:, 3] * jj), Li[:, 4] + Li[:, 5] * jj)

        cur = step(j)
        spec_run = kind == 2
        if spec_run.any():  # add the draft's step: its lines sit in ``spec``, one row per kind-2 run in order
            D = np.zeros((R.shape[0], 6))
            D[spec_run] = np.asarray(spec, dtype=float).reshape(-1, 6)
            Di = D[idx]
            cur = cur + np.maximum(np.maximum(Di[:, 0] + Di[:, 1] * j, Di[:, 2] + Di[:, 3] * j),
                                   Di[:, 4] + Di[:, 5] * j)
        train = kind[idx] == 1
        gap = np.where(train, tau[idx] + cur - step(j - 1), cur) if train.any() else cur
        vals.append(gap)
        wts.append(n[idx])
    return np.concatenate(vals), np.concatenate(wts)
