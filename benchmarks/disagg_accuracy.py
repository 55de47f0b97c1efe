"""Disaggregated serving accuracy on NVIDIA's measured silicon rows (issue 22 item 2).

    PYTHONPATH=src python benchmarks/disagg_accuracy.py [--out FILE.md]

Rows: the ``mode == disagg`` rows of shared/validation/aiconfigurator/silicon_dev.csv that
``fidelity.silicon`` maps (``read_silicon(disaggregated=True)``; rows without worker counts or a
model config are skipped, counted below). Each is priced by ``predict`` with ``deployment``
disaggregated (``serving.disaggregated``: TTFT = prefill + KV transfer over the scale-out network, TPOT
= the decode worker's step) with its (chip, engine) profile as shipped. The profiles' engine terms were
fitted on aggregated rows only, so every row here is out of sample for them (nothing is fitted here).
A (chip, engine) whose profile is transferred from other chips (``fidelity.transfer``) says so.

Errors are |pred/meas - 1|, median / p90, TPOT and TTFT at client concurrency <= 8 (the brief's cut; TTFT
above it is queueing at the batch limit). ``ideal <= measured`` is the share of rows whose ideal-mode
(datasheet roofline) prediction does not exceed the measurement, which a lower bound should make 100%.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from llmecon.catalog.efficiency import named_profile  # noqa: E402
from llmecon.errors import LlmeconError  # noqa: E402
from llmecon.fidelity.silicon import predict_silicon, read_silicon  # noqa: E402

LOW = 8  # client concurrency cut


def _pct(e: np.ndarray) -> str:
    e = e[np.isfinite(e)]
    if e.size == 0:
        return "–"
    return f"{np.median(e):.0%} / {np.quantile(e, 0.9):.0%}"


def _share(ok: np.ndarray) -> str:
    return f"{np.mean(ok):.0%} ({int(np.sum(ok))}/{ok.size})" if ok.size else "–"


def _kv_transfer(rows) -> np.ndarray:
    """Each row's predicted KV-transfer seconds (calibrated, shipped profile), from ``predict`` directly."""
    from llmecon.fidelity.predict import predict_cases

    out = np.full(len(rows), np.nan)
    for i, r in enumerate(rows):
        try:
            out[i] = predict_cases([r.case], mode="calibrated", profile=named_profile(r.profile))[0]["kv_transfer_s"]
        except LlmeconError:
            pass
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(ROOT / "benchmarks/results/disagg_accuracy_2026-11-26.md"))
    args = ap.parse_args()
    rows, skipped = read_silicon(disaggregated=True)
    tpot, ttft, problems = predict_silicon(rows)
    kv = _kv_transfer(rows)
    i_tpot, i_ttft, i_problems = predict_silicon(rows, mode="ideal")
    m_tpot = np.array([r.tpot_s for r in rows])
    m_ttft = np.array([r.ttft_s for r in rows])
    low = np.array([r.concurrency <= LOW for r in rows])
    e_tpot, e_ttft = np.abs(tpot / m_tpot - 1), np.abs(ttft / m_ttft - 1)
    by = defaultdict(list)
    for i, r in enumerate(rows):
        by[r.profile].append(i)
    lines = ["# Disaggregated serving accuracy, existing calibrated profiles (2026-11-26)", "",
             "`PYTHONPATH=src python benchmarks/disagg_accuracy.py` (method in its docstring). "
             f"Rows: {len(rows)} disaggregated rows of aiconfigurator's silicon_dev.csv mapped by `fidelity.silicon` "
             f"(`read_silicon(disaggregated=True)`); {len(skipped)} disagg rows skipped (reasons below). "
             "**Out of sample:** the profiles' engine terms were fitted on aggregated rows only; nothing was fitted "
             "or tuned on these rows. Errors |pred/meas − 1|, median / p90, at client concurrency <= 8; all "
             "concurrencies beside it for TPOT. `ideal <= meas` = share of rows (all concurrencies) whose ideal "
             "prediction is at or below the measurement.", "",
             "| chip/engine | profile | models | rows | rows c<=8 | **TPOT c<=8** | **TTFT c<=8** | TPOT all c | "
             "ideal <= meas TPOT | ideal <= meas TTFT |", "|---|---|---|---|---|---|---|---|---|---|"]
    for name in sorted(by) + ["all"]:
        idx = np.arange(len(rows)) if name == "all" else np.array(by[name])
        lo = idx[low[idx]]
        ok = idx[np.isfinite(i_tpot[idx])]
        if name == "all":
            prof = ""
        else:
            try:
                p = named_profile(name)
                engine = p.iteration_overhead_s or p.request_overhead_s or p.ttft_prefill_factor != 1.0
                prof = ("transferred" if p.transferred else
                        "kernel tables + engine terms (agg rows)" if engine else "kernel tables only")
            except LlmeconError:
                prof = "none"
        models = len({rows[i].model for i in idx})
        lines.append(f"| {name if name != 'all' else '**all**'} | {prof} | {models} | {idx.size} | {lo.size} | "
                     f"**{_pct(e_tpot[lo])}** | **{_pct(e_ttft[lo])}** | {_pct(e_tpot[idx])} | "
                     f"{_share(i_tpot[ok] <= m_tpot[ok])} | {_share(i_ttft[ok] <= m_ttft[ok])} |")
    lo_all = np.flatnonzero(low & np.isfinite(tpot))
    lines += ["", f"Direction at c <= 8: median pred/meas TPOT {np.median(tpot[lo_all] / m_tpot[lo_all]):.2f}, TTFT "
              f"{np.median(ttft[lo_all] / m_ttft[lo_all]):.2f}; median KV transfer share of predicted TTFT "
              f"{np.median(kv[lo_all] / ttft[lo_all]):.1%}."]
    lines += ["", "Per model, c <= 8 (all chips and engines):", "", "| model | rows c<=8 | TPOT | TTFT |",
              "|---|---|---|---|"]
    for model in sorted({r.model for r in rows}):
        lo = np.array([i for i, r in enumerate(rows) if r.model == model and low[i]], dtype=int)
        lines.append(f"| {model} | {lo.size} | {_pct(e_tpot[lo])} | {_pct(e_ttft[lo])} |")
    lines += ["", "Rows at c <= 8, measured against predicted (ms):", "",
              "| id | profile | prefill plan × W | decode plan × W | c | TTFT meas / pred | TPOT meas / pred |",
              "|---|---|---|---|---|---|---|"]
    for i in np.flatnonzero(low):
        r = rows[i]
        c = r.case
        lines.append(f"| {r.id} | {r.profile} | {c['prefill_plan']} × {c['prefill_workers']} | {c['decode_plan']} × "
                     f"{c['decode_workers']} | {r.concurrency} | {1e3 * m_ttft[i]:.0f} / {1e3 * ttft[i]:.0f} | "
                     f"{1e3 * m_tpot[i]:.2f} / {1e3 * tpot[i]:.2f} |")
    over = [i for i in range(len(rows)) if i_tpot[i] > m_tpot[i] or i_ttft[i] > m_ttft[i]]
    lines += ["", f"Rows where the ideal prediction exceeds the measurement ({len(over)}; ms):", "",
              "| id | prefill plan × W | decode plan × W | c | TTFT meas / ideal | TPOT meas / ideal |",
              "|---|---|---|---|---|---|"]
    for i in over:
        r, c = rows[i], rows[i].case
        lines.append(f"| {r.id} | {c['prefill_plan']} × {c['prefill_workers']} | {c['decode_plan']} × "
                     f"{c['decode_workers']} | {r.concurrency} | {1e3 * m_ttft[i]:.0f} / {1e3 * i_ttft[i]:.0f} | "
                     f"{1e3 * m_tpot[i]:.2f} / {1e3 * i_tpot[i]:.2f} |")
    lines += ["", "Skipped disagg rows:", ""]
    reasons = defaultdict(int)
    for s in skipped:
        reasons[s.reason] += 1
    lines += [f"- {k}: {v}" for k, v in sorted(reasons.items(), key=lambda kv: -kv[1])]
    for label, probs in (("calibrated", problems), ("ideal", i_problems)):
        lines += [f"- refused by llmecon ({label}): {k}: {v}" for k, v in probs.items()]
    text = "\n".join(lines) + "\n"
    Path(args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
