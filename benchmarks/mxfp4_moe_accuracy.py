"""Out-of-sample error of the Hopper MXFP4 (W4A16) MoE terms (``kernel_tables.MXFP4_MOE``, ``[moe.mxfp4]``).

Each chip/engine table's MXFP4 rows are dealt into 5 folds by shape group; each fold is predicted by terms
fitted on the other four (``fidelity.holdout_kernels``); median / p90 of |pred/meas - 1|. Run:

    PYTHONPATH=src python benchmarks/mxfp4_moe_accuracy.py
"""

from __future__ import annotations

import numpy as np

from llmecon.fidelity import holdout_kernels as hk
from llmecon.fidelity.kernel_fit import pool, primary_source
from llmecon.fidelity.kernel_tables import MXFP4_MOE, default_root, read_frame


def pct(e) -> str:
    return f"{100 * np.median(e):.1f}% / {100 * np.percentile(e, 90):.1f}%"


def main() -> None:
    root = default_root()
    if root is None:
        raise SystemExit("../shared/validation/aiconfigurator/kernels not found")
    print("| chip/engine | rows | balanced | skewed |\n|---|---|---|---|")
    for folder in sorted(MXFP4_MOE):
        for eng in ("trtllm", "sglang", "vllm"):
            frame = read_frame(root, folder, eng, "moe")
            if frame is None:
                continue
            cols = pool([primary_source(frame, by="dtype")])
            cols = hk.sub(cols, cols["dtype"] == "mxfp4")
            fold = hk.fold_ids(cols, "moe")
            pred, meas, bal = [], [], []
            for f in range(hk.FOLDS):
                for label, (p, m) in hk.predict_family("moe", hk.sub(cols, fold != f), hk.sub(cols, fold == f)).items():
                    pred.append(p)
                    meas.append(m)
                    bal.append(np.full(len(p), label == "moe balanced"))
            p, m, b = (np.concatenate(x) for x in (pred, meas, bal))
            e = np.abs(p / m - 1)
            print(f"| {folder}/{eng} | {len(e)} | {pct(e[b])} ({b.sum()}) | {pct(e[~b])} ({(~b).sum()}) |")


if __name__ == "__main__":
    main()
