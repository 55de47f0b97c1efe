"""Re-read every model type of a saved oracle run with the current llmecon (no model builds).

transformers' side of ``benchmarks/model_oracle.py`` (meta-device parameter counts, the cache a forward on
meta returns) depends only on the transformers release and the default config, so it is kept from saved
runs (``--save-json`` files, merged in order: a later file's row replaces an earlier one's); llmecon's side
(status, parameters, KV elements per token, state per sequence, ignored fields, refusal reason) is
recomputed here from each type's default config. Rows that llmecon now reads but whose saved row has no
cache comparison (it was refused when saved) are reported without one unless a later file supplies it.

Run: ``PYTHONPATH=src python benchmarks/model_oracle_recheck.py saved1.json[,saved2.json...] --save-json out.json``
then ``python benchmarks/model_oracle.py --from-json out.json --markdown``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import model_oracle as mo  # noqa: E402  (the benchmark's rows, tolerances and helpers)


def recheck(row: mo.Row) -> mo.Row:
    """``row`` with llmecon's side recomputed (transformers' side kept)."""
    from llmecon.errors import LlmeconError

    if row.status not in ("match", "off", "refused"):
        return row
    config = json.loads(mo.default_config(row.model_type).to_json_string(use_diff=False))
    out = mo.Row(row.model_type, oracle_params=row.oracle_params, encoder_params=row.encoder_params,
                 kv_oracle=row.kv_oracle, state_oracle=row.state_oracle, cache_note=row.cache_note)
    try:
        m = mo.llmecon_read(config, row.model_type)
    except LlmeconError as exc:
        out.status, out.note = "refused", str(exc).split(": ", 1)[-1]
        out.kv_oracle = out.state_oracle = None
        out.cache_note = ""
        return out
    out.ignored = list(m.ignored_fields)
    out.llmecon_params = m.params.total
    out.rel = out.llmecon_params / out.oracle_params - 1 if out.oracle_params else None
    ok = out.rel is not None and abs(out.rel) <= mo.TOLERANCE
    out.status = "match" if ok else "off"
    out.note = "" if ok else mo.EXPLAINED.get(row.model_type, "UNEXPLAINED")
    if out.kv_oracle is not None:
        out.kv_llmecon = m.kv_bytes_per_token("bf16") / 2.0
        out.state_llmecon = mo._state_elements(m) if out.state_oracle is not None else None
    elif not out.cache_note:
        out.cache_note = "no cache comparison saved for this type"
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("saved", help="comma-separated --save-json files of model_oracle.py, merged in order")
    parser.add_argument("--save-json", required=True)
    args = parser.parse_args(argv)
    rows, shared = mo._load_rows(args.saved.split(","))
    rows = [recheck(r) for r in rows]
    doc = {"summary": mo.summary(rows), "rows": [r.as_dict() for r in rows], "shared": [r.as_dict() for r in shared]}
    Path(args.save_json).write_text(json.dumps(doc, indent=1))
    print(json.dumps(doc["summary"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
