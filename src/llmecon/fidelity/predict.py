"""Batch prediction: many (model, system, plan, phase, shape) cases in one process, vectorised.

Cases are grouped by everything that is not a number of tokens (model, system, plan, formats,
phase); each group is one call of ``inference.decode_step`` / ``prefill_step`` or
``serving.steady_state`` over numpy arrays of its batches and lengths. Phases:

* ``decode``: one step of ``batch`` sequences at ``context`` cached tokens;
* ``prefill``: one prefill of ``batch`` prompts of ``prompt_tokens`` after ``context`` cached
  tokens (empty context = 0);
* ``serving``: the closed-loop steady state at concurrency ``batch`` (``serving.steady_state``);
  step columns then describe its decode step at the effective batch.

Input columns: ``INPUT_COLUMNS`` (unused ones may be empty; ``id`` is carried through). The plan is
either the degrees ``tp, ep, pp, adp`` (empty: tp 1, ep 1, pp 1, adp = ep) or the optional ``plan``
column holding the CLI's plan label (``tp8·ep8·pp1·adp1``; ``spec.plan.parse_label``), not both on
one row. ``adp`` (attention data-parallel groups) defaults to ``ep`` as in ``Plan`` and in plan
labels (pure EP with attention DP, the stage ``tp·ep`` chips wide): a TP8·EP8 run on 8 GPUs needs
``adp`` 1, else it is priced on 64. Every published set in ``validation_sets`` has ep 1, where the
default changes nothing (checked when adp was added). Output adds ``OUTPUT_COLUMNS``; ``chips`` is
the chips of one replica the case was priced on (tp·adp·pp), so the default is never silent;
``transferred`` says whether the profile was transferred from other chips (``fidelity.transfer``) and
``expected_tpot_error`` is then its leave-one-chip-out TPOT median error (a share; '' otherwise). Any
bad row is an error naming its line, the column and the fix, and nothing is written.

Speculative decoding (optional columns): ``spec_tokens`` k (empty or 0 = plain decoding),
``acceptance`` per drafted position (empty = the model family's published default,
``spec.speculation``), ``draft`` ("mtp", the default, or a draft model's name). A decode row then
reports the iteration (verify + draft) as ``step_s``, the verify step's compute/memory/comm and bound,
``tpot_s`` = step_s / E and ``tokens_per_step`` = E (``step.speculative``); a serving row runs the
steady state with speculative iterations (``serving.steady_state`` step 6), its step columns those of
the iteration at the effective batch (step_s verify + draft, the rest the verify step's).

Serving engine (optional column ``engine``, or the command's ``--engine`` for rows where it is empty):
``trtllm``, ``sglang``, ``vllm`` (and any engine a shipped profile names); the row is priced in calibrated
mode with its chip's profile for that engine (``fidelity.engines.engine_profile``: the shipped
``<chip>-<engine>`` profile, else one transferred from the engine's other chips, whose ``transferred`` and
``expected_tpot_error`` columns say so), whatever ``mode`` says; not with a ``profile``.

Disaggregated serving (optional columns ``deployment``, ``prefill_plan``, ``prefill_workers``, ``decode_plan``,
``decode_workers``; ``fidelity.predict_disagg``): a ``deployment`` ``disaggregated`` row is phase serving on
separate prefill and decode workers, TTFT including the KV transfer over the scale-out network
(``step.disaggregated``); its outputs add ``kv_transfer_s``, ``prefill_s`` and ``prefill_batch``, written only
when some row is disaggregated, so a file of aggregated rows is predicted exactly as before.
"""

from __future__ import annotations

import csv
import io
from collections import defaultdict
from pathlib import Path

import numpy as np

from ..catalog.efficiency import resolve as resolve_profile
from ..spec.deployment import Deployment
from ..catalog.hardware import get_system
from ..catalog.models import get_model
from ..spec.efficiency import EfficiencyProfile
from ..errors import CatalogError, LlmeconError, did_you_mean
from ..spec.plan import Plan, parse_label
from ..spec.speculation import speculation_for
from ..step.inference import decode_of, prefill_of
from .predict_disagg import COLUMNS as DISAGG_COLUMNS, OUTPUT_COLUMNS as DISAGG_OUTPUT_COLUMNS
from .predict_disagg import disaggregated_of, predict_disaggregated

INPUT_COLUMNS = ("model", "system", "phase", "batch", "context", "prompt_tokens", "output_tokens", "tp", "ep", "pp",
                 "adp", "weight_dtype", "kv_dtype")
OPTIONAL_COLUMNS = ("id", "plan", "engine", "spec_tokens", "acceptance", "draft") + DISAGG_COLUMNS
OUTPUT_COLUMNS = ("step_s", "compute_s", "memory_s", "comm_s", "bound", "tokens_per_s", "tpot_s", "ttft_s",
                  "effective_batch", "mode", "profile", "chips", "transferred", "expected_tpot_error",
                  "tokens_per_step")
PHASES = ("decode", "prefill", "serving")
_NEEDS = {"decode": ("batch", "context"), "prefill": ("batch", "prompt_tokens"),
          "serving": ("batch", "prompt_tokens", "output_tokens")}


def read_cases(path: str | Path) -> list[dict]:
    from ..files import read_text

    p = Path(path)
    return parse_cases(read_text(p, field="cases", what="cases file"), where=str(p))


def parse_cases(text: str, *, where: str = "cases") -> list[dict]:
    """Rows of a cases CSV as dicts of text, with the header checked (unknown columns: did you mean)."""
    from ..files import csv_rows

    header, reader = csv_rows(text, where)
    check_header(header or [], where)
    rows = [{k: (v or "").strip() for k, v in r.items() if k is not None} for r in reader]
    if not rows:
        raise CatalogError(f"{where}: no cases after the header")
    return rows


def check_header(header: list[str], where: str) -> None:
    """A cases file's header: every column known (did you mean), the required ones present."""
    allowed = INPUT_COLUMNS + OPTIONAL_COLUMNS
    for col in header:
        if col not in allowed:
            raise CatalogError(f"{where}: unknown column '{col}'{did_you_mean(col, allowed)}; "
                               f"allowed: {', '.join(allowed)}")
    for col in ("model", "system", "phase", "batch"):
        if col not in header:
            raise CatalogError(f"{where}: missing column '{col}'; columns: {', '.join(INPUT_COLUMNS)}")


def shape_columns(phase: str) -> tuple[str, ...]:
    """The numeric columns a row of ``phase`` is predicted from (``context`` defaults to 0 outside decode)."""
    return ("batch",) + _NEEDS[phase][1:] + (() if phase == "decode" else ("context",))


def _num(row: dict, col: str, where: str, *, default=None, whole=False):
    raw = row.get(col, "")
    if raw == "":
        if default is None:
            raise CatalogError(f"{where}: phase '{row.get('phase')}' needs column '{col}'")
        return default
    try:
        v = float(raw)
    except ValueError:
        raise CatalogError(f"{where} {col}: expected a number, got {raw!r}") from None
    if not np.isfinite(v) or v < 0 or (whole and (not v.is_integer() or v < 1)):
        raise CatalogError(f"{where} {col}: expected a {'whole number >= 1' if whole else 'number >= 0'}, got {raw!r}")
    return int(v) if whole else v


def _group_key(row: dict, where: str) -> tuple:
    phase = row.get("phase", "")
    if phase not in PHASES:
        raise CatalogError(f"{where} phase: unknown phase {phase!r}{did_you_mean(phase, PHASES)}; "
                           f"one of {', '.join(PHASES)}")
    for col in ("model", "system"):
        if not row.get(col):
            raise CatalogError(f"{where}: column '{col}' is empty")
    dis = disaggregated_of(row, where)
    return (row["model"], row["system"], phase, dis or _plan_of(row, where), row.get("weight_dtype") or None,
            row.get("kv_dtype") or None, _spec_of(row, where))


def _engine_of(row: dict, default: str | None, profile, where: str) -> str:
    """The row's serving engine ('' = none: the mode's and profile's choice): its ``engine`` column, else
    ``default``; checked against the engines with measured profiles (``fidelity.engines.check_engine``)."""
    from .engines import check_engine

    name = (row.get("engine") or "").strip() or (default or "")
    if not name:
        return ""
    if profile is not None:
        raise CatalogError(f"{where} engine: {name!r} given with a profile; the engine picks the chip's profile",
                           fix="drop {profile}, or empty the engine column")
    try:
        return check_engine(name)
    except LlmeconError as exc:
        raise CatalogError(f"{where} {exc}") from None


def _spec_of(row: dict, where: str) -> tuple:
    """(k, acceptance text, draft) of the row: k 0 (empty) = plain decoding; acceptance empty = the
    model family's published default ('0.9;0.8' or a quoted '0.9,0.8' per position); draft empty = mtp."""
    k = int(_num(row, "spec_tokens", where, default=0.0)) if row.get("spec_tokens") else 0
    if row.get("spec_tokens") and float(row["spec_tokens"]) != k:
        raise CatalogError(f"{where} spec_tokens: expected a whole number >= 0, got {row['spec_tokens']!r}")
    if (row.get("acceptance") or row.get("draft")) and not k:
        raise CatalogError(f"{where} acceptance: given without spec_tokens", fix="give spec_tokens k >= 1 on this line")
    return (k, row.get("acceptance") or None, row.get("draft") or None)


def _plan_of(row: dict, where: str) -> Plan:
    """The row's plan: its ``plan`` label, or its degree columns (adp empty: equal to ep)."""
    degrees = [c for c in ("tp", "ep", "pp", "adp") if row.get(c)]
    if row.get("plan"):
        if degrees:
            raise CatalogError(f"{where} plan: give either the plan label or the columns {', '.join(degrees)}, "
                               "not both", fix="empty one of them on this line")
        try:
            return parse_label(row["plan"], field="plan")
        except LlmeconError as exc:
            raise CatalogError(f"{where} {exc}") from None
    tp, ep, pp = (_num(row, c, where, default=1, whole=True) for c in ("tp", "ep", "pp"))
    adp = _num(row, "adp", where, default=ep, whole=True)
    try:
        return Plan(tp=tp, ep=ep, pp=pp, adp=adp)
    except LlmeconError as exc:
        raise CatalogError(f"{where} {exc}") from None


def predict_cases(rows: list[dict], *, mode: str = "ideal", profile: EfficiencyProfile | None = None,
                  where: str = "cases", first_line: int = 2, engine: str | None = None) -> list[dict]:
    """Predictions for parsed case rows (``parse_cases``), in input order: each row's input
    columns plus ``OUTPUT_COLUMNS`` (floats; '' where a column does not apply). ``first_line``: the
    file line of ``rows[0]``, for messages (a streamed chunk starts further down). ``engine``: the
    serving engine of rows whose ``engine`` column is empty (module docstring)."""
    groups: dict[tuple, list[int]] = defaultdict(list)
    shapes = []
    limits: dict[str, int] = {}
    for i, row in enumerate(rows):
        at = f"{where} line {i + first_line}"
        key = _group_key(row, at) + (_engine_of(row, engine, profile, at),)
        groups[key].append(i)
        phase = key[2]
        shapes.append({col: _num(row, col, at, default=0.0 if col == "context" and phase != "decode" else None)
                       for col in shape_columns(phase)})
        if shapes[-1]["batch"] <= 0:
            raise CatalogError(f"{at} batch: must be > 0")
        _require_within_context(key[0], phase, shapes[-1], at, limits)
    out: list[dict] = [dict(r) for r in rows]
    for key, idx in groups.items():
        first = f"{where} line {idx[0] + first_line}"
        key, eng = key[:-1], key[-1]
        try:
            g_mode, g_prof = mode, profile
            if eng:  # an engine picks the chip's profile for it (fidelity.engines), calibrated
                from .engines import engine_profile

                g_mode, g_prof = "calibrated", engine_profile(get_system(key[1]).accelerator, eng)
                for i in idx:
                    out[i]["engine"] = eng
            _predict_group(key, idx, shapes, out, mode=g_mode, profile=g_prof)
        except LlmeconError as exc:
            raise type(exc)(f"{first} ({len(idx)} case(s) of {key[0]} on {key[1]}, {key[2]}): {exc}") from exc
    return out


#: the tokens one case's sequence holds, by phase, and the column to name when it is too long
_SEQUENCE = {"decode": (("context",), "context"), "prefill": (("context", "prompt_tokens"), "prompt_tokens"),
             "serving": (("prompt_tokens", "output_tokens"), "output_tokens")}


def _require_within_context(model: str, phase: str, shape: dict, at: str, limits: dict) -> None:
    """A case's sequence fits the model's context (``max_position_embeddings``): decode holds its
    ``context`` cached tokens, prefill ``context + prompt_tokens``, serving ``prompt_tokens +
    output_tokens`` (vLLM's rule). A model with no known context (0) is not checked; an unknown
    model name is left to the group's own error."""
    if model not in limits:
        try:
            limits[model] = get_model(model).max_context
        except LlmeconError:
            limits[model] = 0
    limit = limits[model]
    cols, name = _SEQUENCE[phase]
    total = sum(shape[c] for c in cols)
    if limit and total > limit:
        raise CatalogError(f"{at} {name}: {' + '.join(cols)} = {total:,.0f} tokens is longer than {model}'s "
                           f"{limit:,}-token context (max_position_embeddings)",
                           fix=f"keep {' + '.join(cols)} <= {limit:,} on this line")


def _predict_group(key, idx, shapes, out, *, mode, profile) -> None:
    col = {name: np.array([shapes[i][name] for i in idx]) for name in shapes[idx[0]]}
    values, meta = group_columns(key, col, mode=mode, profile=profile)
    names = OUTPUT_COLUMNS + (DISAGG_OUTPUT_COLUMNS if not isinstance(key[3], Plan) else ())
    for j, i in enumerate(idx):
        row = out[i]
        for name in names:
            row[name] = ""
        for name, v in values.items():
            row[name] = str(v[j]) if name == "bound" else float(v[j])
        row.update(meta)


def group_columns(key, col: dict, *, mode, profile) -> tuple[dict, dict]:
    """(output columns as arrays of the group's length, the columns equal on every row: mode, profile,
    chips, transferred, expected_tpot_error) of one group of cases (``_group_key``) whose numbers are
    ``col`` (``shape_columns`` of its phase -> arrays)."""
    model, system, phase, plan, wdt, kvdt, (k, acceptance, draft) = key
    n = len(col["batch"])
    if not isinstance(plan, Plan):  # disaggregated (``predict_disagg``): the decode worker's step, the closed loop
        r, extra, chips, dep = predict_disaggregated(key, plan, col, mode=mode, profile=profile)
        values = {"step_s": r.step_s, "compute_s": r.time.compute_s, "memory_s": r.time.memory_s,
                  "comm_s": r.time.comm_s, "bound": r.bound, **extra}
    else:
        r, extra, dep = _aggregated(key, col, mode=mode, profile=profile)
        chips = plan.chips
        values = {"step_s": r.step_s, "compute_s": r.time.compute_s, "memory_s": r.time.memory_s,
                  "comm_s": r.time.comm_s, "bound": r.bound, "tokens_per_s": r.tokens_per_s, **extra}
    values = {k: np.broadcast_to(np.asarray(v), (n,)) for k, v in values.items()}
    meta = {"mode": mode, "profile": r.profile, "chips": chips, "transferred": dep.profile.transferred,
            "expected_tpot_error": dep.profile.transfer.get("expected_error", {}).get("tpot_median", "")}
    return values, meta


def _aggregated(key, col: dict, *, mode, profile):
    """(StepResult, extra output columns, Deployment) of a group of aggregated cases."""
    model, system, phase, plan, wdt, kvdt, (k, acceptance, draft) = key
    sys_ = get_system(system)
    m = get_model(model)
    dep = Deployment(model=m, system=sys_, plan=plan, weight_dtype=wdt, kv_dtype=kvdt,
                     profile=resolve_profile(mode, profile, sys_.accelerator),
                     speculation=speculation_for(m, k=k, acceptance=acceptance, draft=draft) if k else None)
    extra = {}
    if phase == "decode" and dep.speculation is not None:
        from ..step.speculative import speculative_of

        s = speculative_of(dep, batch=col["batch"], context=col["context"])
        r = s.verify  # compute/memory/comm/bound: the verify step's; step_s: the iteration (verify + draft)
        extra = {"step_s": s.step_s, "tpot_s": s.tpot_s, "tokens_per_s": s.tokens_per_s,
                 "tokens_per_step": s.tokens_per_step}
    elif phase == "decode":
        r = decode_of(dep, batch=col["batch"], context=col["context"])
    elif phase == "prefill":
        r = prefill_of(dep, batch=col["batch"], prompt_tokens=col["prompt_tokens"], cached_tokens=col["context"])
        extra = {"ttft_s": r.latency_s}  # the step plus the pipeline fill when pp > 1
    else:
        from ..serving.steady_state import steady_state

        ss = steady_state(dep, concurrency=col["batch"], prompt_tokens=col["prompt_tokens"],
                          output_tokens=col["output_tokens"])
        b = np.where(ss.effective_batch >= 1, ss.effective_batch, 1.0)
        ctx = col["prompt_tokens"] + (col["output_tokens"] - 1) / 2
        extra = {"tpot_s": ss.tpot_s, "ttft_s": ss.ttft_s, "effective_batch": ss.effective_batch,
                 "tokens_per_s": ss.output_tokens_per_s}
        if dep.speculation is None:
            r = decode_of(dep, batch=b, context=ctx)
        else:
            from ..step.speculative import speculative_of

            s = speculative_of(dep, batch=b, context=ctx)
            r = s.verify
            extra.update(step_s=s.step_s, tokens_per_step=s.tokens_per_step)
    return r, extra, dep


def write_cases(rows: list[dict], path: str | Path | None = None) -> str:
    """CSV text of predicted rows (input columns present in the rows, then outputs)."""
    cols = [c for c in OPTIONAL_COLUMNS + INPUT_COLUMNS if any(c in r for r in rows)] + list(OUTPUT_COLUMNS)
    cols += [c for c in DISAGG_OUTPUT_COLUMNS if any(c in r for r in rows)]  # only when a row is disaggregated
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=cols, lineterminator="\n", extrasaction="ignore")
    w.writeheader()
    for r in rows:
        w.writerow({c: (f"{r[c]:.6g}" if isinstance(r.get(c), float) else r.get(c, "")) for c in cols})
    if path is not None:
        from ..files import write_text

        write_text(path, buf.getvalue())
    return buf.getvalue()
