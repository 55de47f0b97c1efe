"""Text view of ``simulate``: the run's JSON view in, the rich renderables out, in print order; the CLI prints
them. The JSON view, figures and per-request table are in report/serving.py."""

from __future__ import annotations

from .tables import kv_table


def simulate_view(d: dict, plot, requests_out, rate=None, power=None) -> list:
    """``llmecon simulate``: the run's latencies, throughput, cost and power, and per-class rows."""
    from .tco import mw_text, tco_line
    from ..units import fmt_seconds

    def s(x):
        return "-" if x is None else fmt_seconds(x)

    view: list = []
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
    view.append(kv_table(f"llmecon simulate ({d['policy']})", rows))
    if len(d["classes"]) > 1:
        from rich.table import Table

        t = Table("class", "completed", "TTFT p50", "TPOT p50", "$/Mtok", "price", "margin")
        for c in d["classes"]:
            t.add_row(c["name"], f"{c['completed']:,}", s(c["ttft_p50_s"]), s(c["tpot_p50_s"]),
                      "-" if c["usd_per_mtok"] is None else f"${c['usd_per_mtok']:,.4f}",
                      "-" if c["price_usd_per_mtok"] is None else f"${c['price_usd_per_mtok']:,.2f}",
                      "-" if c["margin"] is None else f"{c['margin']:.0%}")
        view.append(t)
    for what, path in (("figure", plot), ("requests", requests_out)):
        if path:
            view.append(f"{what} written to {path}")
    return view
