"""CLI command ``simulate``: the serving simulator (SPEC E20). Thin: parse -> llmecon.serving -> report."""

from __future__ import annotations

import sys
from typing import Annotated, Optional

import typer

from .options import (DEFAULT_MODEL, DEFAULT_SYSTEM, AcceptanceOpt, DraftOpt, EpOpt, JsonOpt, KvDtypeOpt, Mode,
    ModelOpt, ModeOpt, PpOpt, EngineOpt, ProfileOpt, SpecTokensOpt, SystemOpt, TcoOpt, TpOpt, WeightDtypeOpt,
    _check_plot_path,
    _chip_hour_price, _console, _deployment, _emit_json, _kv_table, _power_basis, app)

PROGRESS_MIN_REQUESTS = 50_000
# show a progress bar (stderr TTY only) for runs at least this large
_SYNTHETIC_DEFAULTS = {"rate": 10.0, "arrival": "poisson"}


def _opt(help_: str, *names: str):
    return typer.Option(*names, help=help_)


def _parse_pairs(items: list[str], flag: str, example: str) -> list[tuple[str, str]]:
    from ..errors import SpecError

    out = []
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip() or not value.strip():
            raise SpecError(f"{flag} {item!r}: expected NAME=VALUE, e.g. {flag} {example}")
        out.append((name.strip(), value.strip()))
    return out


def _classes(items: list[str]):
    """--class NAME=CAP[:REPLICAS[:USD_PER_MTOK]] -> {name: ServiceClass}."""
    from ..errors import SpecError
    from ..serving import ServiceClass

    out = {}
    for name, value in _parse_pairs(items, "--class", "fast=16:1:12"):
        parts = value.split(":")
        try:
            cap = int(parts[0])
            reps = int(parts[1]) if len(parts) > 1 and parts[1] else 1
            price = float(parts[2]) if len(parts) > 2 and parts[2] else None
        except ValueError:
            raise SpecError(f"--class {name}={value}: expected BATCH_CAP[:REPLICAS[:USD_PER_MTOK]], "
                            "e.g. fast=16:1:12") from None
        if len(parts) > 3:
            raise SpecError(f"--class {name}={value}: expected BATCH_CAP[:REPLICAS[:USD_PER_MTOK]]")
        if name in out:
            raise SpecError(f"--class {name}: given twice; give each class once")
        out[name] = ServiceClass(batch_cap=cap, replicas=reps, price_usd_per_mtok=price)
    return out


def _mix(items: list[str]) -> dict[str, float] | None:
    from ..errors import SpecError

    if not items:
        return None
    out = {}
    for name, value in _parse_pairs(items, "--class-mix", "fast=0.2"):
        try:
            out[name] = float(value)
        except ValueError:
            raise SpecError(f"--class-mix {name}={value}: the share must be a number, e.g. fast=0.2") from None
    return out


@app.command("simulate")
def simulate_cmd(
    model: ModelOpt = DEFAULT_MODEL, system: SystemOpt = DEFAULT_SYSTEM,
    rate: Annotated[float, _opt("Mean arrival rate, requests per second.", "--rate")] = 10.0,
    duration: Annotated[Optional[float], _opt("Seconds of arrivals (default 60); the run ends then (in-flight "
                                              "requests are reported).", "--duration")] = None,
    requests: Annotated[Optional[int], _opt("Number of requests instead of --duration (the run ends at the "
                                            "last arrival unless --drain).", "--requests")] = None,
    arrival: Annotated[str, _opt("Arrival process: poisson, gamma (bursty, see --cv) or constant.",
                                 "--arrival")] = "poisson",
    cv: Annotated[Optional[float], _opt("Coefficient of variation of gamma inter-arrival times (>1 bursty; "
                                        "default 1).", "--cv")] = None,
    prompt: Annotated[Optional[str], _opt("Prompt tokens: N, uniform:LO:HI or lognormal:MEDIAN:SIGMA[:LO:HI] "
                                          "(default 1024).", "--prompt")] = None,
    output: Annotated[Optional[str], _opt("Output tokens (first token included), same forms as --prompt "
                                          "(default 256).", "--output")] = None,
    trace: Annotated[Optional[str], _opt("Replay a CSV/JSONL trace (arrival_s, prompt_tokens, output_tokens, "
                                         "[class], [prefix_id]) instead of a synthetic workload.", "--trace")] = None,
    time_scale: Annotated[Optional[float], _opt("Replay the trace this many times faster (default 1).",
                                                "--time-scale")] = None,
    policy: Annotated[str, _opt("train, adaptive, continuous or disaggregated.", "--policy")] = "continuous",
    batch_cap: Annotated[Optional[int], _opt("Most sequences in a batch (default 256, vLLM's max_num_seqs).",
                                             "--batch-cap")] = None,
    tau: Annotated[Optional[float], _opt("train: seconds between departures (default: the decode step at a "
                                         "full batch).", "--tau")] = None,
    deadline: Annotated[Optional[float], _opt("adaptive: longest wait before a batch leaves not full, seconds.",
                                              "--deadline")] = None,
    chunk_tokens: Annotated[Optional[int], _opt("continuous: chunked prefill with this token budget per "
                                                "iteration.", "--chunk-tokens")] = None,
    max_batched_tokens: Annotated[Optional[int], _opt("Most prompt tokens in one prefill iteration.",
                                                      "--max-batched-tokens")] = None,
    preemption: Annotated[Optional[str], _opt("When KV runs out: auto, recompute or swap.", "--preemption")] = None,
    replicas: Annotated[int, _opt("Replicas of the deployment sharing one queue.", "--replicas")] = 1,
    prefill_replicas: Annotated[Optional[int], _opt("disaggregated: prefill replicas.", "--prefill-replicas")] = None,
    decode_replicas: Annotated[Optional[int], _opt("disaggregated: decode replicas.", "--decode-replicas")] = None,
    service_class: Annotated[list[str], _opt("NAME=BATCH_CAP[:REPLICAS[:USD_PER_MTOK]]: a service tier on its own "
                                             "pool (repeatable).", "--class")] = [],  # noqa: B006
    class_mix: Annotated[list[str], _opt("NAME=SHARE of synthetic requests in a class (repeatable).",
                                         "--class-mix")] = [],  # noqa: B006
    prefix_tokens: Annotated[Optional[int], _opt("Prefix caching: tokens a hit skips.", "--prefix-tokens")] = None,
    prefix_hit_rate: Annotated[Optional[float], _opt("Prefix caching: share of requests that hit (else the "
                                                     "trace's prefix_id).", "--prefix-hit-rate")] = None,
    slo_ttft: Annotated[Optional[float], _opt("Goodput SLO on time to first token, seconds.", "--slo-ttft")] = None,
    slo_tpot: Annotated[Optional[float], _opt("Goodput SLO on time per output token, seconds.", "--slo-tpot")] = None,
    price_per_chip_hour: Annotated[Optional[float], _opt("Rent of one accelerator, USD per hour (for $/Mtok).",
                                                         "--price-per-chip-hour")] = None,
    tco: TcoOpt = None,
    hbm_fraction: Annotated[float, _opt("Share of each chip's HBM for weights + KV.", "--hbm-fraction")] = 1.0,
    max_queue: Annotated[Optional[int], _opt("Reject arrivals that find this many waiting.", "--max-queue")] = None,
    drain: Annotated[bool, _opt("Run until every admitted request finishes.", "--drain")] = False,
    seed: Annotated[int, _opt("Random seed (workload and prefix hits).", "--seed")] = 0,
    max_memory: Annotated[str, _opt("Refuse a run estimated to need more memory than this (e.g. 16GB); the "
                                    "estimate is in the error.", "--max-memory")] = "4GB",
    plot: Annotated[Optional[str], _opt("Write latency CDFs and queue length over time (PNG/SVG/PDF).",
                                        "--plot")] = None,
    requests_out: Annotated[Optional[str], _opt("Write the per-request table (.csv, or .parquet with pyarrow).",
                                                "--requests-out")] = None,
    weight_dtype: WeightDtypeOpt = None, kv_dtype: KvDtypeOpt = None, tp: TpOpt = None, ep: EpOpt = None,
    pp: PpOpt = None, mode: ModeOpt = Mode.ideal, profile: ProfileOpt = None, engine: EngineOpt = None,
    as_json: JsonOpt = False,
    spec_tokens: SpecTokensOpt = None, acceptance: AcceptanceOpt = None, draft: DraftOpt = None,
) -> None:
    """Simulate serving traffic: continuous batching, train schedule, adaptive dispatch or
    prefill/decode disaggregation, with step times from the roofline of each actual batch.

    Without --tp/--ep/--pp the plan is the smallest that holds the weights in half of HBM.
    With --spec-tokens k each decode iteration is a verify step over k+1 tokens plus k draft passes
    (--draft: MTP or a draft model) and every running request advances by the expected accepted
    tokens E (docs/serving.md).
    """
    from ..errors import SpecError, require_number, require_whole
    from ..serving import SLO, PrefixCache, SimConfig
    from ..serving.budget import expected_requests, pool_sizes, require_memory, simulation_bytes
    from ..serving.policies import policy_from_name
    from ..report.serving import check_requests_path, plot_simulation, simulation_dict, write_requests
    from ..serving.workload import load_trace, parse_lengths, synthetic
    from ..units import parse

    # validate everything before running (nothing is written half-way)
    if plot:
        _check_plot_path(plot)
    if requests_out:
        check_requests_path(requests_out)
    limit = require_number("max_memory", parse(max_memory, "bytes", field="--max-memory"), minimum=0, exclusive=True,
                           hint="e.g. --max-memory 16GB")
    pol = policy_from_name(policy, batch_cap=batch_cap, tau_s=tau, deadline_s=deadline, chunk_tokens=chunk_tokens,
                           max_batched_tokens=max_batched_tokens, preemption=preemption,
                           prefill_replicas=prefill_replicas, decode_replicas=decode_replicas)
    price_per_chip_hour, tco_rate = _chip_hour_price(system, price_per_chip_hour, tco)
    classes = _classes(service_class) or None
    prefix = None
    if prefix_tokens is not None or prefix_hit_rate is not None:
        if prefix_tokens is None:
            raise SpecError("--prefix-hit-rate needs --prefix-tokens (how many prompt tokens a hit skips)")
        prefix = PrefixCache(prefix_tokens=prefix_tokens, hit_rate=prefix_hit_rate)
    cfg = SimConfig(policy=pol, replicas=replicas, classes=classes, prefix_cache=prefix,
                    slo=SLO(ttft_s=slo_ttft, tpot_s=slo_tpot), price_per_chip_hour=price_per_chip_hour,
                    hbm_fraction=require_number("hbm_fraction", hbm_fraction, minimum=0, exclusive=True, maximum=1),
                    max_queue=max_queue, drain=drain, seed=seed)
    n_replicas, slots = pool_sizes(cfg)
    if trace:
        require_memory(simulation_bytes(requests=0, replicas=n_replicas, batch_slots=slots), limit,
                       what=f"{n_replicas:,} replicas, {slots:,} batch slots", fix="lower the replicas or batch caps")
    else:
        if time_scale is not None:
            raise SpecError("applies to a replayed trace only", field="time_scale", fix="drop it, or give {trace}")
        if requests is not None and duration is not None:
            raise SpecError("give one of {duration} (seconds of arrivals) or {requests} (a count), not both",
                            field="duration", value=duration, show_value=False, fix="drop one")
        if requests is not None:
            require_whole("requests", requests, minimum=1)
        if cv is not None and arrival != "gamma":
            raise SpecError(f"applies to --arrival gamma only, not {arrival}", field="cv",
                            fix="drop it, or use {arrival} gamma")
        duration = 60.0 if requests is None and duration is None else duration
        n = expected_requests(rate_per_s=require_number("rate", rate, minimum=0, exclusive=True),
                              duration_s=duration, requests=requests)
        require_memory(simulation_bytes(requests=n, replicas=n_replicas, batch_slots=slots), limit,
                       what=f"{n:,.0f} requests at ~3.2 kB each, {n_replicas:,} replicas, {slots:,} batch slots",
                       fix="lower {rate}, {duration} or {requests}, the replicas or the batch caps")
    if trace:
        wl = load_trace(trace, time_scale=1.0 if time_scale is None else time_scale, max_memory_bytes=limit)
        # a synthetic workload's options mean nothing with a trace: refused, not ignored
        for name, value in (("rate", rate), ("duration", duration), ("requests", requests), ("arrival", arrival),
                            ("cv", cv), ("prompt", prompt), ("output", output), ("class_mix", class_mix or None)):
            if value is not None and not (name in ("rate", "arrival") and value == _SYNTHETIC_DEFAULTS[name]):
                raise SpecError("describes a synthetic workload; the trace gives arrivals and lengths",
                                field=name, fix="drop it, or drop {trace}")
    else:
        wl = synthetic(rate_per_s=rate, prompt=parse_lengths(prompt or "1024", field="prompt"),
                       output=parse_lengths(output or "256", field="output"), seed=seed,
                       n=requests, duration_s=None if requests is not None else duration, arrival=arrival,
                       cv=1.0 if cv is None else cv, classes=_mix(class_mix))
    dep = _deployment(model, system, tp, ep, pp, weight_dtype, kv_dtype, mode, auto=True, profile=profile,
                      spec_tokens=spec_tokens, acceptance=acceptance, draft=draft, engine=engine)
    wl.require_within_context(dep.model.max_context, model_name=dep.model.name)  # before sizing tables by it
    longest = int((wl.prompt_tokens + wl.output_tokens).max()) if wl.n else 0
    require_memory(simulation_bytes(requests=wl.n, longest_tokens=longest, replicas=n_replicas, batch_slots=slots),
                   limit,
                   what=f"{wl.n:,} requests at ~3.2 kB each, tables over the longest request of {longest:,} "
                        "tokens at ~0.5 kB per token", fix="shorten the run or the requests")
    res = _run(dep, wl, cfg)
    d = simulation_dict(dep, wl, res, tco_rate)
    if requests_out:
        write_requests(res, requests_out)
    if plot:
        plot_simulation(res, plot, title=f"{dep.model.name} on {dep.system.name}, {pol.name}")
    if as_json:
        _emit_json(d)
        return
    _print(d, plot, requests_out, tco_rate, _power_basis(dep.system, tco_rate))


def _run(dep, wl, cfg):
    from ..serving import simulate

    if wl.n < PROGRESS_MIN_REQUESTS or not sys.stderr.isatty():
        return simulate(dep, wl, cfg)
    from rich.console import Console
    from rich.progress import Progress

    with Progress(console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task("simulating", total=1.0)
        return simulate(dep, wl, cfg, progress=lambda f: bar.update(task, completed=f))


def _print(d: dict, plot, requests_out, rate=None, power=None) -> None:
    from ..report.tco import mw_text, tco_line
    from ..units import fmt_seconds

    def s(x):
        return "-" if x is None else fmt_seconds(x)

    p = d["plan"]
    how = ("ideal roofline (a lower bound on time)" if d["mode"] == "ideal" else
           f"{d['fidelity']}: achieved efficiencies and overheads")
    rows = [("deployment", f"{d['model']} on {d['system']}, {p['label']}, {how}")]
    sp = d.get("speculation")
    if sp:
        acc = ",".join(f"{a:g}" for a in sp["acceptance"])
        rows.append(("speculation", f"k={sp['spec_tokens']} ({sp['draft']}), acceptance {acc} "
                                    f"({sp['acceptance_source']}): E = {sp['tokens_per_step']:.4g} tokens per verify "
                                    "iteration"))
    rows += [("workload", f"{d['workload']}, {d['arrived']:,} arrived in {d['run_s']:,.1f} s"),
             ("requests", f"{d['completed']:,} completed, {d['rejected']:,} rejected, {d['in_flight']:,} in flight"),
             ("TTFT", f"p50 {s(d['ttft_p50_s'])}, p99 {s(d['ttft_p99_s'])}"),
             ("TPOT", f"p50 {s(d['tpot_p50_s'])}, p99 {s(d['tpot_p99_s'])}"),
             ("ITL", f"p50 {s(d['itl_p50_s'])}, p99 {s(d['itl_p99_s'])}"),
             ("end to end", f"p50 {s(d['e2e_p50_s'])}, p99 {s(d['e2e_p99_s'])}"),
             ("throughput", f"{d['throughput_tokens_per_s']:,.0f} output tokens/s"),
             ("goodput", f"{d['goodput_requests_per_s']:,.2f} requests/s"
                         + ("" if d["slo_ttft_s"] or d["slo_tpot_s"] else " (no SLO given: all completed count)")),
             ("utilisation", f"{d['utilization']:.1%} of replica time in iterations"),
             ("preemptions", f"{d['preemptions']:,}"),
             ("$/Mtok (output)",
              f"${d['usd_per_mtok']:,.4f}" if d["usd_per_mtok"] is not None else d["usd_per_mtok_reason"]),
             *((("TCO", tco_line(rate)),) if rate is not None else ()),
             ("tokens/s per MW", mw_text(d["tokens_per_s_per_mw"], power)),
             ("Little's law", f"L = {d['littles_law']['L']:.4g}, lambda*W = {d['littles_law']['lambda_W']:.4g}")]
    rows += [("note", n) for n in d["notes"]]
    console = _console()
    console.print(_kv_table(f"llmecon simulate ({d['policy']})", rows))
    if len(d["classes"]) > 1:
        from rich.table import Table

        t = Table("class", "completed", "TTFT p50", "TPOT p50", "$/Mtok", "price", "margin")
        for c in d["classes"]:
            t.add_row(c["name"], f"{c['completed']:,}", s(c["ttft_p50_s"]), s(c["tpot_p50_s"]),
                      "-" if c["usd_per_mtok"] is None else f"${c['usd_per_mtok']:,.4f}",
                      "-" if c["price_usd_per_mtok"] is None else f"${c['price_usd_per_mtok']:,.2f}",
                      "-" if c["margin"] is None else f"{c['margin']:.0%}")
        console.print(t)
    for what, path in (("figure", plot), ("requests", requests_out)):
        if path:
            console.print(f"{what} written to {path}")
