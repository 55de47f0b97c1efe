"""Speculative decoding as report views: the ``speculation`` object every command's JSON carries
when a deployment drafts tokens (``step.speculative``), and its table rows. SI units."""

from __future__ import annotations

import numpy as np

from ..spec.deployment import Deployment
from ..step.speculative import SpeculativeStep
from ..units import fmt_seconds, json_num


def speculation_dict(s: SpeculativeStep, *, breakeven_batch=None) -> dict | None:
    """``speculation`` in JSON: the spec (spec_tokens, acceptance, draft, acceptance_source,
    tokens_per_step) and, at the step's batch and context, the verify step, the draft time of its k
    passes, the iteration, TPOT per output token against plain decoding's, the speed-up, output
    tokens/s, and the batch at which speculation stops paying (null: it pays at every batch scanned)."""
    if s.speculation is None:
        return None
    return {**s.speculation.as_dict(), "verify_step_s": json_num(s.verify.step_s),
            "verify_bound": str(np.asarray(s.verify.bound).item() if np.ndim(s.verify.bound) == 0 else s.verify.bound),
            "draft_s": json_num(s.draft_s), "draft_share": json_num(s.draft_share),
            "iteration_s": json_num(s.step_s), "tpot_s": json_num(s.tpot_s), "plain_tpot_s": json_num(s.plain_tpot_s),
            "speedup": json_num(s.speedup), "tokens_per_s": json_num(s.tokens_per_s),
            "breakeven_batch": json_num(breakeven_batch) if breakeven_batch is not None else None}


def speculation_rows(d: dict | None) -> list[tuple[str, str]]:
    """Table rows of ``speculation_dict`` (none without speculation)."""
    if not d:
        return []
    acc = ", ".join(f"{a:g}" for a in d["acceptance"])
    draft = "MTP modules" if d["draft"] == "mtp" else f"draft model {d['draft']}"
    stop = (f"batch {d['breakeven_batch']:,.0f} (TPOT no better than plain from there)"
            if d["breakeven_batch"] is not None else "not within the batches scanned (pays at every batch)")
    return [("speculation", f"k={d['spec_tokens']} by {draft}, acceptance {acc} ({d['acceptance_source']}): "
                            f"{d['tokens_per_step']:.3g} tokens per verify step"),
            ("verify + draft", f"{fmt_seconds(d['verify_step_s'])} ({d['verify_bound']}-bound) + "
                               f"{fmt_seconds(d['draft_s'])} (each pass {d['draft_share']:.3g} of a plain step)"),
            ("TPOT", f"{fmt_seconds(d['tpot_s'])} per output token vs {fmt_seconds(d['plain_tpot_s'])} plain "
                     f"({d['speedup']:.3g}x)"),
            ("stops paying at", stop)]


def deployment_speculation(dep: Deployment) -> dict | None:
    """The deployment's speculation spec alone (no step priced): for views that price elsewhere."""
    return None if dep.speculation is None else dep.speculation.as_dict()
