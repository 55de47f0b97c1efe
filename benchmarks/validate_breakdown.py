"""Where the held-out serving error is: per-row held-out predictions of NVIDIA's silicon rows, broken down.

    PYTHONPATH=src python benchmarks/validate_breakdown.py dump --holdout chip --out /tmp/rows_chip.csv
    PYTHONPATH=src python benchmarks/validate_breakdown.py table /tmp/rows_chip.csv
    PYTHONPATH=src python benchmarks/validate_breakdown.py compare BEFORE.csv AFTER.csv

``dump`` runs ``fidelity.holdout_silicon.silicon_holdout`` (the computation behind ``llmecon validate
--holdout chip|model``: no row is scored by terms fitted on it) over the aggregated rows of
``shared/validation/aiconfigurator/silicon_dev.csv`` and writes one CSV line per row: its labels
(engine, model group, chip, concurrency, ISL/OSL, plan), measured TPOT/TTFT, the held-out and ideal
predictions, and the kernel-only causes of TTFT priced with the chip's kernel-table profile at
``engine_fit.BASE`` (no engine term: nothing fitted on any row): ``p1_s`` one prompt's prefill,
``pc_s`` the prefill of C prompts as one batch, ``dec_s`` the decode step at batch C. ``table`` reads
that file and prints median / p90 of |pred/meas - 1| by each label, the signed median (bias: + is
predicted too slow), and which labels the rows beyond the p90 share (the tail first).
"""

from __future__ import annotations

import argparse
import csv
import sys
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from llmecon.errors import LlmeconError  # noqa: E402
from llmecon.fidelity.engine_fit import BASE, TTFT_MAX_CONCURRENCY, with_terms  # noqa: E402
from llmecon.fidelity.holdout_silicon import group_of, silicon_holdout  # noqa: E402
from llmecon.fidelity.predict import predict_cases  # noqa: E402
from llmecon.fidelity.silicon import read_silicon, row_profile  # noqa: E402

FIELDS = ("id", "engine", "model", "chip", "concurrency", "isl", "osl", "plan", "weight_dtype", "tpot_s", "ttft_s",
          "held_tpot_s", "held_ttft_s", "ideal_tpot_s", "ideal_ttft_s", "p1_s", "pc_s", "dec_s")


def kernel_causes(rows) -> dict[str, tuple[float, float, float]]:
    """{row id: (P_1, P_C, decode step at C)} at the kernel-only terms; rows of refused plans absent."""
    by = defaultdict(list)
    for r in rows:
        by[r.profile].append(r)
    out = {}
    for prof, rs in sorted(by.items()):
        base = with_terms(row_profile(prof), BASE)
        for r in rs:
            c, isl, osl = r.concurrency, int(r.case["prompt_tokens"]), int(r.case["output_tokens"])
            one = {**r.case, "phase": "prefill", "batch": "1", "context": ""}
            dec = {**r.case, "phase": "decode", "batch": str(c), "context": str(isl + (osl - 1) // 2)}
            try:
                got = predict_cases([one, {**one, "batch": str(c)}, dec], mode="calibrated", profile=base)
            except LlmeconError:
                continue
            out[r.id] = (got[0]["ttft_s"], got[1]["ttft_s"], got[2]["step_s"])
    return out


def dump(holdout: str, out: str, engines=None) -> None:
    rows, _ = read_silicon()
    got = silicon_holdout(rows, holdout, engines=engines,
                          progress=lambda d, t, n: print(f"{d}/{t} {n}", file=sys.stderr, flush=True))
    causes = kernel_causes(rows)
    nan = (float("nan"),) * 3
    with open(out, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(FIELDS)
        for i, r in enumerate(rows):
            c = r.case
            plan = c.get("plan") or "tp{tp}·ep{ep}·pp{pp}·adp{adp}".format(**{k: c.get(k, "1") for k in
                                                                              ("tp", "ep", "pp", "adp")})
            w.writerow([r.id, r.engine, group_of(r), r.chip, r.concurrency, c["prompt_tokens"], c["output_tokens"],
                        plan, c["weight_dtype"] or "native", r.tpot_s, r.ttft_s, got.held_tpot_s[i], got.held_ttft_s[i],
                        got.ideal_tpot_s[i], got.ideal_ttft_s[i], *causes.get(r.id, nan)])
    print(f"wrote {out}: {len(rows)} rows, holdout {holdout}")


def read(path: str) -> dict[str, np.ndarray]:
    with open(path) as fh:
        recs = list(csv.DictReader(fh))
    cols = {}
    for k in FIELDS:
        vals = [r[k] for r in recs]
        try:
            cols[k] = np.array([float(v) for v in vals])
        except ValueError:
            cols[k] = np.array(vals, dtype=object)
    return cols


def _band(v: np.ndarray, edges) -> np.ndarray:
    return np.array([next((f"<={e}" for e in edges if x <= e), f">{edges[-1]}") for x in v], dtype=object)


def _row(name, err, sign) -> str:
    if not err.size:
        return f"| {name} | 0 | – | – | – |"
    return (f"| {name} | {err.size} | {np.median(err):.1%} | {np.quantile(err, 0.9):.1%} | "
            f"{np.median(sign):+.1%} |")


def table(path: str) -> None:
    d = read(path)
    d["isl/osl"] = np.array([f"{int(a)}/{int(b)}" for a, b in zip(d["isl"], d["osl"])], dtype=object)
    d["c band"] = _band(d["concurrency"], (1, 4, 8, 32, 128))
    labels = ("engine", "model", "chip", "c band", "isl/osl", "weight_dtype")
    for q, low in (("tpot", np.ones(len(d["id"]), bool)), ("ttft", d["concurrency"] <= TTFT_MAX_CONCURRENCY)):
        pred, meas = d[f"held_{q}_s"], d[f"{q}_s"]
        ok = low & np.isfinite(pred)
        sign = pred / meas - 1
        err = np.abs(sign)
        print(f"\n## {q.upper()}{' c<=8' if q == 'ttft' else ''}: {ok.sum()} rows predicted, "
              f"median {np.median(err[ok]):.1%}, p90 {np.quantile(err[ok], 0.9):.1%}, signed median "
              f"{np.median(sign[ok]):+.1%}\n")
        tail = ok & (err > np.quantile(err[ok], 0.9))
        for lab in labels:
            print(f"\n| {lab} | rows | median | p90 | signed median |\n|---|---:|---:|---:|---:|")
            for v in sorted(set(d[lab][ok])):
                m = ok & (d[lab] == v)
                print(_row(v, err[m], sign[m]))
            share = Counter(d[lab][tail])
            print(f"\nbeyond p90 ({tail.sum()} rows) by {lab}: "
                  + ", ".join(f"{k} {n} ({n / tail.sum():.0%}; {n / max((ok & (d[lab] == k)).sum(), 1):.0%} of its "
                              "rows)" for k, n in share.most_common(6)))


def _stat(pred, meas, m) -> str:
    ok = m & np.isfinite(pred)
    if not ok.any():
        return "– | –"
    e = np.abs(pred[ok] / meas[ok] - 1)
    return f"{np.median(e):.1%} / {np.quantile(e, 0.9):.1%} | {ok.sum()} / {m.sum()}"


def compare(before: str, after: str) -> None:
    """Markdown: median / p90 and predicted / rows of two dumps of the same rows, per engine and chip/engine."""
    b, a = read(before), read(after)
    if list(b["id"]) != list(a["id"]):
        raise SystemExit("the two dumps hold different rows")
    b["chip/engine"] = np.array([f"{c}/{e}" for c, e in zip(b["chip"], b["engine"])], dtype=object)
    b["all"] = np.array(["all"] * len(b["id"]), dtype=object)
    for q, low in (("tpot", np.ones(len(b["id"]), bool)), ("ttft", b["concurrency"] <= TTFT_MAX_CONCURRENCY)):
        print(f"\n**{q.upper()}{' c<=8' if q == 'ttft' else ''}**\n\n| group | before: median / p90 | predicted / rows "
              "| after: median / p90 | predicted / rows |\n|---|---:|---:|---:|---:|")
        for lab in ("all", "engine", "chip/engine"):
            for v in sorted(set(b[lab][low])):
                m = low & (b[lab] == v)
                before_, after_ = (_stat(x[f"held_{q}_s"], x[f"{q}_s"], m) for x in (b, a))
                print(f"| {v} | {before_} | {after_} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("dump")
    a.add_argument("--holdout", default="chip", choices=("chip", "model", "none"))
    a.add_argument("--out", required=True)
    a.add_argument("--engines", help="score only these engines (comma-separated); the fits use every row")
    b = sub.add_parser("table")
    b.add_argument("path")
    c = sub.add_parser("compare")
    c.add_argument("before")
    c.add_argument("after")
    args = ap.parse_args()
    if args.cmd == "dump":
        dump(args.holdout, args.out, set(args.engines.split(",")) if args.engines else None)
    elif args.cmd == "compare":
        compare(args.before, args.after)
    else:
        table(args.path)


if __name__ == "__main__":
    main()
