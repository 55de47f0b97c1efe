"""How the silicon rows' TTFT at concurrency <= 8 compares with the kernel-only prefill of one prompt (P_1) and of
the whole cohort of C prompts in one batch (P_C): the measurement behind ``serving.steady_state`` step 5's
cohort term (docs/engines.md, "TTFT from causes").

    PYTHONPATH=src python benchmarks/ttft_cohort.py

Each aggregated row of shared/validation/aiconfigurator/silicon_dev.csv at concurrency C <= 8 is priced with its
(chip, engine) kernel-table profile at the kernel-only terms (``engine_fit.BASE``): P_1 and P_C are ``predict``
prefill latencies of 1 and C prompts of the row's input length. Printed per engine and C: medians of
measured TTFT / P_1 and / P_C, against the cohort prefilled one after another ((C+1)/(2C) of P_C) or as one
batch (1). Groups llmecon refuses (plans) are skipped and named.
"""

from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from llmecon.errors import LlmeconError  # noqa: E402
from llmecon.fidelity.engine_fit import BASE, with_terms  # noqa: E402
from llmecon.fidelity.predict import predict_cases  # noqa: E402
from llmecon.fidelity.silicon import read_silicon, row_profile  # noqa: E402


def main() -> None:
    rows, _ = read_silicon()
    groups = defaultdict(list)
    for r in rows:
        if r.concurrency <= 8:
            groups[r.profile].append(r)
    out = defaultdict(list)  # (engine, C) -> [(measured, P_1, P_C)]
    for prof, rs in sorted(groups.items()):
        cases = []
        for r in rs:
            one = {**r.case, "phase": "prefill", "batch": "1", "context": ""}
            cases += [one, {**one, "batch": str(r.concurrency)}]
        try:
            got = predict_cases(cases, mode="calibrated", profile=with_terms(row_profile(prof), BASE))
        except LlmeconError as exc:
            print(f"skipped {prof}: {str(exc)[:120]}")
            continue
        for j, r in enumerate(rs):
            out[(r.engine, r.concurrency)].append((r.ttft_s, got[2 * j]["ttft_s"], got[2 * j + 1]["ttft_s"]))
    print("| engine | C | rows | TTFT / P_1 median | TTFT / P_C median | one after another (C+1)/(2C) | one batch |")
    print("|---|---|---|---|---|---|---|")
    for (engine, c), v in sorted(out.items()):
        a = np.array(v)
        ratio_1, ratio_c = np.median(a[:, 0] / a[:, 1]), np.median(a[:, 0] / a[:, 2])
        print(f"| {engine} | {c} | {len(a)} | {ratio_1:.2f} | {ratio_c:.2f} | {(c + 1) / (2 * c):.3f} | 1 |")


if __name__ == "__main__":
    main()
