"""Run one simulation scenario of a sweep: ``serving.simulate`` on a seeded synthetic workload.

Builds the deployment, policy, config and workload exactly as ``llmecon simulate`` does
(``cli_serving.simulate_cmd``: the workload and the config share the seed) and returns one row of
metrics from ``SimResult.summary()``. A scenario the simulator rejects (a LlmeconError, e.g. the
KV cache cannot hold one sequence) is a row whose ``note`` says why, with null metrics; it is not
dropped. Omitted: traces, service classes, prefix caching and replicas (one replica per pool).
"""

from __future__ import annotations

from ..econ.tco import per_megawatt
from ..errors import LlmeconError
from .grid import Scenario

# summary() key -> row column (the sweep's simulation outputs)
METRICS = {
    "ttft_p50_s": "ttft_p50_s", "ttft_p99_s": "ttft_p99_s", "tpot_p50_s": "tpot_p50_s", "tpot_p99_s": "tpot_p99_s",
    "e2e_p50_s": "e2e_p50_s", "e2e_p99_s": "e2e_p99_s", "goodput_requests_per_s": "goodput_requests_per_s",
    "slo_attainment": "slo_attainment", "completed": "completed", "rejected": "rejected",
    "utilization": "utilization", "usd_per_mtok": "usd_per_mtok", "throughput_tokens_per_s": "tokens_per_s",
}


def run_scenario(sc: Scenario) -> dict:
    """One row (column -> Python value or None) for scenario ``sc``."""
    from ..spec.deployment import Deployment
    from ..serving import SLO, SimConfig, simulate
    from ..serving.policies import policy_from_name
    from ..serving.workload import parse_lengths, synthetic

    wl = sc.workload
    pol = policy_from_name(sc.policy, batch_cap=sc.batch_cap)
    row: dict = {"point_id": sc.point_id, "policy": sc.policy, "workload": wl.name, "rate_per_s": wl.rate_per_s,
                 "seed": sc.seed, "batch_cap": pol.batch_cap, "price_per_chip_hour": sc.price, "note": None}
    row.update({col: None for col in METRICS.values()})
    row["tokens_per_s_per_chip"] = row["tokens_per_s_per_mw"] = None
    try:
        cfg = SimConfig(policy=pol, slo=SLO(ttft_s=sc.slo_ttft_s, tpot_s=sc.slo_tpot_s),
                        price_per_chip_hour=sc.price, seed=sc.seed)
        workload = synthetic(rate_per_s=wl.rate_per_s, prompt=parse_lengths(wl.prompt, field="prompt"),
                             output=parse_lengths(wl.output, field="output"), seed=sc.seed, n=wl.requests,
                             duration_s=wl.duration_s, arrival=wl.arrival, cv=wl.cv)
        dep = Deployment(model=sc.model, system=sc.system, plan=sc.plan, profile=sc.profile)
        d = simulate(dep, workload, cfg).summary()
    except LlmeconError as exc:
        row["note"] = str(exc)
        return row
    for key, col in METRICS.items():
        row[col] = d[key]
    chips = sum(p["chips_per_replica"] * p["replicas"] for p in d["pools"])
    if d["throughput_tokens_per_s"] is not None and chips:
        row["tokens_per_s_per_chip"] = d["throughput_tokens_per_s"] / chips
        if sc.watts_per_chip == sc.watts_per_chip:  # NaN = no catalogued power
            row["tokens_per_s_per_mw"] = float(per_megawatt(row["tokens_per_s_per_chip"], sc.watts_per_chip))
    return row
