"""Refit the engine-shared TTFT terms of the shipped profiles, nothing else (issue 34 item 4, 2026-11-29).

    PYTHONPATH=src python benchmarks/refit_ttft_terms.py            # print the terms
    PYTHONPATH=src python benchmarks/refit_ttft_terms.py --write    # and write them into the profiles

``ttft_prefill_factor`` and ``request_overhead_s`` are fitted once per engine over every chip's priced
aggregated rows of ``shared/validation/aiconfigurator/silicon_dev.csv`` (``fidelity.holdout_silicon.
shared_terms``, the pool ``in_sample`` uses; since 2026-11-29 without the ridge: ``fidelity.engine_fit.
UNPENALISED``). ``--write`` replaces those two values in every shipped profile that carries the engine's
previous shared values (the NVIDIA ``<chip>-<engine>.toml`` profiles, and for vLLM the AMD and transferred
profiles that copied them) and appends a sentence to each one's ``derivation``. The per-chip terms
(``engine_floor_scale``, ``step_overhead_s``, ``layer_overhead_s``) are left as shipped: the low-batch
step floor belongs to the frontier work, and a per-chip refit would move it. Out-of-sample scores of the
change: ``benchmarks/results/validate_2026-11-29.md``.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from llmecon.fidelity.holdout_silicon import SHARED, linearise, shared_terms  # noqa: E402
from llmecon.fidelity.silicon import read_silicon  # noqa: E402

PROFILES = ROOT / "src" / "llmecon" / "catalog" / "profiles"
OLD = {"sglang": ("2.349", "0.1333"), "trtllm": ("1.582", "0.02961"), "vllm": ("1.767", "0.01733")}
"""The shared values shipped until 2026-11-29 (ttft_prefill_factor, request_overhead_s), as written."""


def fit() -> dict[str, dict[str, float]]:
    rows, _ = read_silicon()
    lin0 = linearise(rows)
    out, cache = {}, {}
    for engine in sorted({r.engine for r in rows}):
        pool = [i for i, r in enumerate(rows) if r.engine == engine and np.isfinite(lin0[0][i])]
        out[engine] = shared_terms(rows, lin0, pool, cache)
        print(f"{engine}: {len(pool)} priced rows: " + ", ".join(f"{k} = {v:.4g}" for k, v in out[engine].items()))
    return out


def write(terms: dict[str, dict[str, float]]) -> None:
    for path in sorted(PROFILES.glob("*.toml")):
        text = path.read_text()
        for engine, (a_old, r_old) in OLD.items():
            if f"ttft_prefill_factor = {a_old}\n" not in text or f"request_overhead_s = {r_old}\n" not in text:
                continue
            a_new, r_new = f"{terms[engine]['ttft_prefill_factor']:.4g}", f"{terms[engine]['request_overhead_s']:.4g}"
            text = text.replace(f"ttft_prefill_factor = {a_old}\n", f"ttft_prefill_factor = {a_new}\n")
            text = text.replace(f"request_overhead_s = {r_old}\n", f"request_overhead_s = {r_new}\n")
            note = (f" TTFT terms refitted 2026-11-29 (benchmarks/refit_ttft_terms.py): ttft_prefill_factor "
                    f"{a_old} -> {a_new}, request_overhead_s {r_old} -> {r_new} s, fitted over every NVIDIA chip's "
                    f"{engine} rows without the ridge (fidelity.engine_fit.UNPENALISED); other terms as before.")
            text = re.sub(r'^(derivation = ".*)"$', lambda m: m.group(1) + note + '"', text, count=1, flags=re.M)
            path.write_text(text)
            print(f"wrote {path.name} ({engine})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    if set(SHARED) != {"ttft_prefill_factor", "request_overhead_s"}:
        raise SystemExit(f"LLMECON_SHARED_TERMS is {','.join(SHARED)}: this script refits the two TTFT terms only")
    terms = fit()
    if args.write:
        write(terms)


if __name__ == "__main__":
    main()
