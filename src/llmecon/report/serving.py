"""Simulation results as a per-request table (CSV or Parquet) and figures (matplotlib, Agg)."""

from __future__ import annotations

import csv
import math

import numpy as np

from ..errors import SpecError
from ..serving.metrics import SimResult
from ..serving.status import STATUS_NAMES, Status
from .figure import pyplot, save_figure

REQUEST_COLUMNS = ("request_id", "arrival_s", "class", "prompt_tokens", "output_tokens", "status", "reject_reason",
                   "admit_s", "first_token_s", "done_s", "ttft_s", "tpot_s", "e2e_s", "generated_tokens",
                   "preemptions", "cached_tokens")


def requests_columns(res: SimResult) -> dict[str, np.ndarray]:
    """One column per field, one row per request (NaN where a time does not exist yet)."""
    done = res.status == Status.COMPLETED
    ttft = np.where(res.first_token_s == res.first_token_s, res.first_token_s - res.arrival_s, np.nan)
    multi = done & (res.output_tokens > 1)
    tpot = np.full(res.status.shape, np.nan)
    tpot[multi] = (res.done_s[multi] - res.first_token_s[multi]) / (res.output_tokens[multi] - 1)
    return {
        "request_id": np.arange(res.status.size), "arrival_s": res.arrival_s,
        "class": np.asarray(res.class_names, dtype=object)[res.class_id] if res.status.size else np.asarray([]),
        "prompt_tokens": res.prompt_tokens, "output_tokens": res.output_tokens,
        "status": np.asarray(STATUS_NAMES, dtype=object)[res.status] if res.status.size else np.asarray([]),
        "reject_reason": res.reject_reason, "admit_s": res.admit_s, "first_token_s": res.first_token_s,
        "done_s": res.done_s, "ttft_s": ttft, "tpot_s": tpot,
        "e2e_s": np.where(done, res.done_s - res.arrival_s, np.nan), "generated_tokens": res.generated_tokens,
        "preemptions": res.preemptions, "cached_tokens": res.cached_tokens,
    }


def simulation_dict(dep, workload, res: SimResult, rate=None) -> dict:
    """``llmecon simulate --json`` and ``/api/simulate`` (docs/serving.md): what ran (model, system,
    plan, mode and the profile by name, workload), then ``res.summary()``, and output tokens/s per MW over
    every chip of every pool (``econ.tco.power_for``: facility power by default)."""
    m = dep.model
    notes = [] if m.max_context else [f"{m.name}'s trained context is unknown (its config gives no "
                                      "max_position_embeddings): request lengths were not checked against it"]
    if res.engine_note:  # a large run that fell back to the Python event loop says so
        notes.append(res.engine_note)
    return {"model": m.name, "system": dep.system.name, "plan": dep.plan.as_dict(), "mode": dep.mode,
            "fidelity": dep.fidelity, **dep.fidelity_fields,
            "workload": workload.source, "model_max_context": m.max_context or None,
            "speculation": None if dep.speculation is None else dep.speculation.as_dict(),
            "notes": notes, **_with_power(res.summary(), dep, rate)}


def _with_power(d: dict, dep, rate) -> dict:
    from ..econ.tco import power_for
    from .tco import priced_fields

    power = power_for(dep.system, rate)
    chips = sum(p["replicas"] * p["chips_per_replica"] for p in d["pools"])
    per_chip = None if d["throughput_tokens_per_s"] is None or not chips else d["throughput_tokens_per_s"] / chips
    return {**d, "tokens_per_s_per_chip": per_chip, "tokens_per_s_per_mw": power.tokens_per_s_per_mw(per_chip),
            **priced_fields(d["price_per_chip_hour"], rate, power, dep.system.name)}


def check_requests_path(path: str) -> str:
    """Validate the output path before a run (nothing is written half-way): returns 'csv'/'parquet'."""
    from ..files import check_output

    suffix = check_output(path, field="requests_out", suffixes=(".csv", ".parquet")).suffix.lower()
    if suffix == ".parquet":
        import importlib.util

        if importlib.util.find_spec("pyarrow") is None:
            raise SpecError(f"--requests-out {path}: writing Parquet needs pyarrow, which is not installed; "
                            "pip install pyarrow (or use a .csv file name)")
    return suffix[1:]


def write_requests(res: SimResult, path: str) -> None:
    from ..files import atomic_path

    kind = check_requests_path(path)
    cols = requests_columns(res)
    with atomic_path(path) as tmp:
        if kind == "parquet":
            import pyarrow as pa
            import pyarrow.parquet as pq

            pq.write_table(pa.table({k: (v.astype(str) if v.dtype == object else v) for k, v in cols.items()}), tmp)
            return
        with open(tmp, "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(REQUEST_COLUMNS)
            rows = zip(*(cols[k].tolist() for k in REQUEST_COLUMNS))
            w.writerows([["" if isinstance(x, float) and math.isnan(x) else x for x in row] for row in rows])


def plot_simulation(res: SimResult, path: str, *, title: str = "") -> None:
    """Latency CDFs (TTFT, TPOT, E2E) and the waiting queue over time."""
    fig, (ax1, ax2) = pyplot().subplots(1, 2, figsize=(11, 4.2))
    for name, x in (("TTFT", res.ttft_s), ("TPOT", res.tpot_s), ("E2E", res.e2e_s)):
        if x.size:
            xs = np.sort(x)
            ax1.plot(xs, np.arange(1, xs.size + 1) / xs.size, label=name)
    ax1.set_xscale("log")
    ax1.set_xlabel("seconds")
    ax1.set_ylabel("fraction of completed requests")
    ax1.set_title("latency CDFs")
    ax1.grid(alpha=0.3)
    ax1.legend()
    t = res.timeline_s
    if t.size:
        order = np.argsort(t, kind="stable")
        ax2.step(t[order], res.timeline_waiting[order], where="post", label="waiting")
        ax2.step(t[order], res.timeline_running[order], where="post", label="running (batch)", alpha=0.7)
    ax2.set_xlabel("time (s)")
    ax2.set_ylabel("requests")
    ax2.set_title("queue length over time (per replica at its iterations)")
    ax2.grid(alpha=0.3)
    ax2.legend()
    if title:
        fig.suptitle(title)
    save_figure(fig, path)
