"""Speculative decoding in the serving simulator (docs/serving.md, "Speculative decoding").

The engine keeps one output token per running sequence per decode step; with speculation a step
lasts one speculative iteration over E = ``Speculation.tokens_per_step``: (verify + draft) / E, the
verify step over n·(k+1) tokens (``StepModel.terms``) with the batch's verify-step sums
(``DecodeSet.verify_sums``), the draft k·r x the plain decode step (MTP) or k of a draft model's
decode steps at the batch's contexts (``DecodeSet.draft_sums``; ``step.speculative``). Each is a
max of three affine lines in the step index, so their sum is the max of the nine sums: closed-form
runs (``batchstate.sum_max_affine``) stay exact.
"""

from __future__ import annotations


def spec_params(model) -> tuple | None:
    """(k + 1, 1/E, draft scale / E, loop overhead, draft model) of a step model's speculation (draft
    scale: k·r for MTP, k for a draft model's steps); None for plain decoding."""
    spec = model.spec
    if spec is None:
        return None
    e = spec.tokens_per_step
    d = model.draft_model
    return spec.k + 1, 1.0 / e, spec.k * (model.draft_share if d is None else 1.0) / e, model.loop_overhead_s, d


def spec_lines(pool, ds, plain):
    """The lines of a run of per-token decode steps, each (verify + draft) / E, and the two parts
    apart (verify / E; draft / E) for the ITL record. ``plain``: the plain decode step's three lines,
    the MTP draft's shape; a draft model's are its own step's at the batch's contexts. A calibrated
    profile's per-iteration loop overhead is taken out of the draft: the verify iteration carries it once."""
    k1, sv, sd, over, dm = pool.spec
    n = ds.n
    cv, dcv, kv, dkv = ds.verify_sums()
    b, w, x = pool.model.terms(n * k1)
    verify = ((sv * (b + cv), sv * dcv), (sv * (w + kv), sv * dkv), (sv * x, 0.0))
    if dm is not None:
        c, dc, k, dk = ds.draft_sums()
        b, w, x = dm.terms(n)
        plain = ((b + c, dc), (w + k, dk), (x, 0.0))
    draft = tuple((sd * (a - over), sd * d) for a, d in plain)
    return tuple((a1 + a2, d1 + d2) for a1, d1 in verify for a2, d2 in draft), (verify, draft)


def record_spec_run(eng, parts, k: int, n: int) -> None:
    """A closed-form run of k > 1 speculative steps: kind 2 in ``itl_runs`` (the verify lines) and its
    draft lines in ``itl_spec`` (``metrics.expand_itl`` adds the two)."""
    verify, draft = parts
    eng.itl_runs.extend((2, *verify[0], *verify[1], *verify[2], k, n, 0.0))
    eng.itl_spec.extend((*draft[0], *draft[1], *draft[2]))
