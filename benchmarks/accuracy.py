"""Accuracy benchmark: every measured set in ../shared/validation and benchmarks/data/*.csv,
predicted in ideal and calibrated mode; median and p90 absolute relative error per set, on the
rows the shipped profiles were fitted on ('fit') and on the rows they never saw ('holdout').

    python benchmarks/accuracy.py [--json] [--out benchmarks/results/accuracy_<date>.md]

Targets (issue 7): calibrated median <= 10% and p90 <= 25% per set; ideal at or below the
measurement on kernel-level data (a lower bound: 'ideal <= meas' = 100%).
"""

from __future__ import annotations

import argparse
import datetime
import json
import time
from pathlib import Path

from llmecon.fidelity.accuracy import evaluate
from llmecon.fidelity.measurements import read_csv
from llmecon.fidelity.validation_sets import SETS, default_root, read_set

HERE = Path(__file__).resolve().parent


def load_sets() -> dict:
    sets = {}
    if default_root() is not None:
        for name in SETS:
            loaded = read_set(name)
            if loaded.rows:
                sets[name] = loaded.rows
    for path in sorted((HERE / "data").glob("*.csv")):
        sets[f"data/{path.name}"] = read_csv(path)
    return sets


def _pct(stats: dict, key: str) -> str:
    v = stats.get(key)
    return "—" if v is None or v != v else f"{100 * v:.1f}%"


def table(results: dict) -> str:
    head = ("| set | metric | rows | ideal median | ideal p90 | ideal <= meas | calibrated median (fit / holdout) "
            "| calibrated p90 (fit / holdout) |")
    lines = [head, "|" + "---|" * 8]
    for name, ev in results.items():
        for metric, modes in ev.metrics.items():
            i, c = modes["ideal"]["all"], modes["calibrated"]
            lines.append(f"| {name} | {'TTFT' if metric == 'ttft' else 'time' if 'serving' not in name else 'TPOT'} "
                         f"| {i['n']} | {_pct(i, 'median')} | {_pct(i, 'p90')} | {_pct(i, 'below_share')} "
                         f"| {_pct(c['fit'], 'median')} / {_pct(c['holdout'], 'median')} "
                         f"| {_pct(c['fit'], 'p90')} / {_pct(c['holdout'], 'p90')} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--out", help="also write the markdown table (and worst cases) to this file")
    args = ap.parse_args()
    t0 = time.perf_counter()
    results = {name: evaluate(rows) for name, rows in load_sets().items()}
    elapsed = time.perf_counter() - t0
    if args.json:
        print(json.dumps({k: v.as_dict() for k, v in results.items()}, indent=2, default=float))
        return
    text = [f"# llmecon accuracy benchmark ({datetime.date.today().isoformat()}, {elapsed:.1f} s)", "",
            "Absolute relative error |predicted/measured - 1|. 'fit' = rows the shipped profiles were fitted on "
            "(benchmarks/derive_profiles.py); 'holdout' = rows they never saw. Ideal mode has no fit.", "",
            table(results), ""]
    for name, ev in results.items():
        text.append(f"## {name}: worst calibrated rows (profiles: {', '.join(ev.profiles) or 'none'})")
        for w in ev.worst:
            text.append(f"- {w['row']} [{w['split']}]: measured {w['measured_s']:.4g} s, ideal {w['ideal_s']:.4g} s, "
                        f"calibrated {w['calibrated_s']:.4g} s ({100 * w['error']:.0f}% off)")
        for problem, count in ev.problems.items():
            text.append(f"- not predicted ({count} row-mode(s)): {problem}")
        text.append("")
    out = "\n".join(text)
    print(out)
    if args.out:
        Path(args.out).write_text(out + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
