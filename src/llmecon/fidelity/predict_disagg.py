"""``predict`` rows of disaggregated serving (prefill and decode on separate workers).

Optional columns: ``deployment`` (``aggregated``, the default when empty, or ``disaggregated``);
on a disaggregated row ``prefill_plan`` and ``decode_plan`` (plan labels as the CLI prints them,
``tp1·ep32·pp1·adp32``; ``pp1`` may be omitted and ``,`` may stand for ``·``: ``spec.plan.parse_label``)
and ``prefill_workers`` / ``decode_workers`` (whole numbers in 1..1,000,000, empty = 1). Such a row is phase
``serving``: ``batch`` is the client concurrency over all workers, ``prompt_tokens`` / ``output_tokens`` the request,
and it is priced by ``serving.disaggregated.disaggregated_state`` (TTFT = prefill + KV transfer over the
scale-out network; TPOT = the decode worker's step). Its plan columns (``plan``, ``tp``, ``ep``, ``pp``,
``adp``) stay empty. The speculative columns (``spec_tokens``, ``acceptance``, ``draft``) apply to the decode
workers (they draft and verify; the prefill emits one token): TPOT = (verify + drafts) / E there, as on an
aggregated row, and ``tokens_per_step`` = E is written. Step columns describe the decode
worker's step; ``chips`` counts every worker's chips (``W_p·chips_p + W_d·chips_d``); ``effective_batch`` is
one decode worker's batch; ``kv_transfer_s``, ``prefill_s`` (prefill latency) and ``prefill_batch`` are
added. The disaggregated columns on an aggregated row are an error naming the column. A prefill plan that
cannot hold one prompt (weights, activations and its KV over the chip's HBM) is an error naming
``prefill_plan``; one that holds a prompt but not the closed loop's prefill batch prices NaN on that row, as
a decode worker without room for one sequence does.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import CatalogError, LlmeconError, did_you_mean
from ..spec.plan import Plan, parse_label

COLUMNS = ("deployment", "prefill_plan", "prefill_workers", "decode_plan", "decode_workers")
OUTPUT_COLUMNS = ("kv_transfer_s", "prefill_s", "prefill_batch")
DEPLOYMENTS = ("aggregated", "disaggregated")
MAX_WORKERS = 1_000_000  # a worker count above this is a typo, not a deployment


@dataclass(frozen=True)
class Disaggregated:
    """A row's disaggregated deployment (hashable: part of the group key)."""

    prefill_plan: Plan
    prefill_workers: int
    decode_plan: Plan
    decode_workers: int

    @property
    def chips(self) -> int:
        return self.prefill_workers * self.prefill_plan.chips + self.decode_workers * self.decode_plan.chips


def _workers(row: dict, col: str, where: str) -> int:
    raw = row.get(col, "")
    if raw == "":
        return 1
    try:
        v = float(raw)
    except ValueError:
        v = float("nan")
    if not (np.isfinite(v) and v.is_integer() and 1 <= v <= MAX_WORKERS):
        raise CatalogError(f"{where} {col}: expected a whole number in 1..{MAX_WORKERS:,}, got {raw!r}")
    return int(v)


def disaggregated_of(row: dict, where: str) -> Disaggregated | None:
    """The row's disaggregated deployment, or None for an aggregated row (errors name the column)."""
    kind = row.get("deployment", "") or "aggregated"
    if kind not in DEPLOYMENTS:
        raise CatalogError(f"{where} deployment: unknown deployment {kind!r}{did_you_mean(kind, DEPLOYMENTS)}; "
                           f"one of {', '.join(DEPLOYMENTS)} (empty = aggregated)")
    given = [c for c in COLUMNS[1:] if row.get(c)]
    if kind == "aggregated":
        if given:
            raise CatalogError(f"{where} {given[0]}: applies to deployment disaggregated only",
                               fix="set deployment to disaggregated on this line, or empty the column")
        return None
    if row.get("phase") != "serving":
        raise CatalogError(f"{where} deployment: disaggregated rows are phase serving (TTFT and TPOT of a closed "
                           f"loop), not {row.get('phase')!r}", fix="set phase to serving on this line")
    degrees = [c for c in ("plan", "tp", "ep", "pp", "adp") if row.get(c)]
    if degrees:
        raise CatalogError(f"{where} {degrees[0]}: a disaggregated row takes prefill_plan and decode_plan, not "
                           "the aggregated plan columns", fix=f"empty {', '.join(degrees)} on this line")
    plans = {}
    for col in ("prefill_plan", "decode_plan"):
        if not row.get(col):
            raise CatalogError(f"{where} {col}: a disaggregated row needs it (a plan label, e.g. tp8·ep8·pp1·adp1)")
        try:
            plans[col] = parse_label(row[col], field=col)
        except LlmeconError as exc:
            raise CatalogError(f"{where} {exc}") from None
    return Disaggregated(prefill_plan=plans["prefill_plan"], prefill_workers=_workers(row, "prefill_workers", where),
                         decode_plan=plans["decode_plan"], decode_workers=_workers(row, "decode_workers", where))


def predict_disaggregated(key, dis: Disaggregated, col: dict, *, mode, profile):
    """(the decode worker's StepResult, values by output column, chips of all workers, the decode Deployment)
    of one group of rows."""
    from ..catalog.efficiency import resolve as resolve_profile
    from ..catalog.hardware import get_system
    from ..catalog.models import get_model
    from ..serving.disaggregated import disaggregated_state
    from ..spec.deployment import Deployment

    from ..spec.speculation import speculation_for

    model, system, _, _, wdt, kvdt, (k, acceptance, draft) = key
    sys_ = get_system(system)
    m = get_model(model)
    prof = resolve_profile(mode, profile, sys_.accelerator)
    spec = speculation_for(m, k=k, acceptance=acceptance, draft=draft) if k else None
    deps = {}
    for role, plan in (("prefill_plan", dis.prefill_plan), ("decode_plan", dis.decode_plan)):
        try:
            deps[role] = Deployment(model=m, system=sys_, plan=plan, weight_dtype=wdt, kv_dtype=kvdt, profile=prof,
                                    speculation=spec if role == "decode_plan" else None)
        except LlmeconError as exc:
            raise type(exc)(f"{role}: {exc}") from exc
    from ..step.inference import prefill_of

    one = prefill_of(deps["prefill_plan"], batch=1.0, prompt_tokens=col["prompt_tokens"])
    if not np.all(one.fits):
        i = int(np.argmin(np.asarray(one.fits) * 1))
        need, have = np.broadcast_to(one.memory_per_chip_bytes, np.shape(one.fits))[i], one.hbm_per_chip_bytes
        raise CatalogError(f"prefill_plan: {dis.prefill_plan.label()} does not fit {system}: one prompt of "
                           f"{col['prompt_tokens'][i]:,.0f} tokens needs {need / 1e9:.1f} GB per chip, "
                           f"HBM holds {have / 1e9:.1f} GB", fix="a plan over more chips (higher tp/pp/ep)")
    s = disaggregated_state(deps["prefill_plan"], deps["decode_plan"], concurrency=col["batch"],
                            prompt_tokens=col["prompt_tokens"], output_tokens=col["output_tokens"],
                            prefill_workers=dis.prefill_workers, decode_workers=dis.decode_workers)
    values = {"tpot_s": s.tpot_s, "ttft_s": s.ttft_s, "effective_batch": s.decode_batch,
              "tokens_per_s": s.output_tokens_per_s, "kv_transfer_s": s.kv_transfer_s, "prefill_s": s.prefill_s,
              "prefill_batch": s.prefill_batch}
    if spec is not None:
        values["tokens_per_step"] = spec.tokens_per_step
    return s.decode, values, dis.chips, deps["decode_plan"]
