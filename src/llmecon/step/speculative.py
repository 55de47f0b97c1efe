"""Speculative decoding (draft k tokens, verify them in one step) priced with the same step model as
plain decoding, in ideal and calibrated mode alike.

One speculative iteration = k draft passes + one verify step, and emits E tokens per sequence on
average (``spec.speculation.expected_tokens_per_step``; Leviathan et al. 2023, Chen et al. 2023):

* verify step: a decode step over k+1 tokens per sequence (batch·(k+1) query tokens through every
  weight; each query attends the context, the i-th one context + i tokens, summed exactly; the KV
  is read once per sequence for its k+1 queries — the multi-query decode kernels of FlashInfer and
  FlashMLA keep the queries of one sequence together — and k+1 tokens' KV written). It runs through
  ``inference._assemble`` with ``tokens_per_seq = k+1``, so MoE expert loads, communication and a
  calibrated profile (kernel efficiencies at batch·(k+1) rows) price it as any step;
* draft, "mtp" (DeepSeek-V3 §2.2: one decoder layer, a 2d x d projection and the shared output
  head per module; a module is chained for k beyond the modules shipped, as SGLang and vLLM do):
  each of the k passes costs the plain decode step at the same batch and context times
  r = (MTP module's active weights + output head) / (the model's active matmul weights). Scaling
  every term by r is exact for the weight reads and matmul FLOPs (the module's layer is one of the
  model's kind); KV reads and communication of one layer are 1/n_layers of the step, close to r;
* draft model: k decode steps of that model at the same batch and context on the target's tensor-
  parallel chips (``Plan(tp=dep.plan.tp)``), with the deployment's profile; its weights and KV in
  HBM are not counted against the target's memory (omitted).

Drafting and verification run one after the other (no overlap). TPOT per output token =
(verify + draft) / E. Speculation pays while that is below the plain decode step: at small batch the
verify step is memory-bound and costs about one plain step, so TPOT ≈ plain·(1 + k·r)/E; as the batch
grows the (k+1)x compute binds and the verify step grows k+1 times faster than a plain one —
``breakeven_batch`` finds where the two TPOTs meet. Omitted: tree drafts, the rejection-sampling
arithmetic, the KV of rejected tokens (overwritten next step), DSA's per-query top-k selection (the
union of k+1 queries' selections is counted as one query's).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import SpecError, require_array
from ..spec.deployment import Deployment
from ..spec.plan import Plan
from ..spec.plan_array import PlanArray
from ..spec.speculation import Speculation
from .inference import StepResult, _assemble, _decode, decode_step


@dataclass(frozen=True, kw_only=True)
class SpeculativeStep:
    """One speculative iteration at ``batch`` sequences of ``context`` tokens: the ``verify`` step,
    the ``draft_s`` of its k draft passes, E = ``tokens_per_step`` per sequence, and the ``plain``
    decode step it replaces. ``speculation`` None (or k = 0) is plain decoding: verify = plain, no
    draft, E = 1 — the same numbers, bit for bit."""

    speculation: Speculation | None
    plain: StepResult
    verify: StepResult
    draft_s: object
    draft_share: float

    @property
    def k(self) -> int:
        return 0 if self.speculation is None else self.speculation.k

    @property
    def tokens_per_step(self) -> float:
        return 1.0 if self.speculation is None else self.speculation.tokens_per_step

    @property
    def step_s(self):
        """One speculative iteration: verify + draft (plain: the decode step)."""
        if self.k == 0:
            return self.plain.step_s
        return np.add(self.verify.step_s, self.draft_s)

    @property
    def tpot_s(self):
        """Time per output token of one sequence: the iteration over E."""
        if self.k == 0:
            return self.plain.step_s
        return np.divide(self.step_s, self.tokens_per_step)

    @property
    def plain_tpot_s(self):
        return self.plain.step_s

    @property
    def speedup(self):
        """Plain TPOT over speculative TPOT (> 1: speculation pays)."""
        return np.divide(self.plain_tpot_s, self.tpot_s)

    @property
    def tokens_per_s(self):
        """Output tokens per second of the replica: batch·E per iteration."""
        return np.divide(np.multiply(self.plain.batch, self.tokens_per_step), self.step_s)

    @property
    def bound(self):
        return self.verify.bound


def mtp_draft_share(model) -> float:
    """r: one MTP draft pass over a plain decode step = (MTP module's active weights + output head) /
    (the model's active matmul weights) (module docstring)."""
    if not model.mtp_layers:
        raise SpecError(f"model {model.name} ships no multi-token-prediction modules", field="draft", value="mtp",
                        fix="name a draft model or choose a model with MTP layers")
    return 2.0 * (model.mtp_active_params() + model.params.head_matmul) / model.matmul_flops_per_token().total


def verify_step(model, system, plan, profile, *, mode, batch, context, k: int, weight_dtype=None, kv_dtype=None,
                expert_imbalance: float = 1.0, dispatch_dtype=None, balanced: bool = False) -> StepResult:
    """The verify step: a decode step over k+1 tokens per sequence (module docstring). ``plan`` may
    be a ``PlanArray`` (the planner: one plan per point); k = 0 is the plain decode step. ``balanced``:
    the batch spread evenly over the attention-DP groups (``inference._assemble``)."""
    if k == 0:
        return _decode(model, system, plan, profile, mode=mode, batch=batch, context=context,
                       weight_dtype=weight_dtype, kv_dtype=kv_dtype, expert_imbalance=expert_imbalance,
                       dispatch_dtype=dispatch_dtype, balanced=balanced)
    batch = require_array("batch", batch, minimum=0, exclusive=True)
    context = require_array("context", context, minimum=0)
    attn = sum(model.attention_flops_per_token(context + i, absorbed=True) for i in range(k + 1))
    return _assemble(model, system, plan, phase="decode", mode=mode, profile=profile, batch=batch, context=context,
                     tokens_per_seq=float(k + 1), flops_attn_per_seq=attn,
                     kv_read_per_seq=model.kv_read_bytes(context, kv_dtype),
                     kv_write_per_seq=(k + 1) * model.kv_bytes_per_token(kv_dtype), weight_dtype=weight_dtype,
                     kv_dtype=kv_dtype, expert_imbalance=expert_imbalance, dispatch_dtype=dispatch_dtype,
                     balanced=balanced)


def verify_of(dep: Deployment, *, batch, context, k: int, balanced: bool = False) -> StepResult:
    """``verify_step`` of a Deployment."""
    return verify_step(dep.model, dep.system, dep.plan, dep.profile, mode=dep.mode, batch=batch, context=context,
                       k=k, weight_dtype=dep.weight_dtype, kv_dtype=dep.kv_dtype, balanced=balanced)


def draft_s(model, system, plan, profile, spec: Speculation, *, mode, batch, context, plain_step_s):
    """Seconds of the k draft passes of one iteration: MTP, k·r·(plain decode step); a draft model,
    k of its decode steps on ``Plan(tp=plan.tp)`` (per distinct tp when ``plan`` is a ``PlanArray``)."""
    if spec.is_mtp:
        return spec.k * mtp_draft_share(model) * np.asarray(plain_step_s)
    from ..catalog.models import get_model
    from ..errors import LlmeconError, with_field

    try:
        m = get_model(spec.draft)
        if not isinstance(plan, PlanArray):
            return spec.k * np.asarray(decode_step(m, system, batch=batch, context=context, plan=Plan(tp=plan.tp),
                                                   profile=profile, mode=mode).step_s)
        out = np.empty(plan.shape(batch))
        b = np.broadcast_to(np.asarray(batch, dtype=float), out.shape)
        for (tp,), idx in plan.groups(plan.tp):
            out[idx] = decode_step(m, system, batch=b[idx], context=context, plan=Plan(tp=int(tp)), profile=profile,
                                   mode=mode).step_s
        return spec.k * out
    except LlmeconError as exc:
        raise with_field(exc, "draft") from None


def speculative_of(dep: Deployment, *, batch, context, speculation: Speculation | None = None) -> SpeculativeStep:
    """One speculative iteration of ``dep`` (its ``speculation``, or the one given) at ``batch`` x
    ``context`` (numpy-broadcastable)."""
    spec = speculation if speculation is not None else dep.speculation
    plain = _decode(dep.model, dep.system, dep.plan, dep.profile, mode=dep.mode, batch=batch, context=context,
                    weight_dtype=dep.weight_dtype, kv_dtype=dep.kv_dtype, expert_imbalance=1.0, dispatch_dtype=None)
    if spec is None or spec.k == 0:
        return SpeculativeStep(speculation=None, plain=plain, verify=plain, draft_s=0.0, draft_share=0.0)
    verify = verify_of(dep, batch=batch, context=context, k=spec.k)
    drafted = draft_s(dep.model, dep.system, dep.plan, dep.profile, spec, mode=dep.mode, batch=batch,
                      context=context, plain_step_s=plain.step_s)
    share = float(np.mean(np.divide(drafted, spec.k * np.asarray(plain.step_s))))
    return SpeculativeStep(speculation=spec, plain=plain, verify=verify, draft_s=drafted, draft_share=share)


def breakeven_batch(dep: Deployment, *, context, speculation: Speculation | None = None,
                    max_batch: float = 2.0 ** 24) -> float | None:
    """The smallest batch (a whole number of sequences) at which speculative TPOT is no better than
    plain decoding's (speedup <= 1): where the verify step's (k+1)x compute binds. None when it pays
    at every batch up to ``max_batch``, 1 when it never pays. Geometric scan, then bisection on
    whole batches (speedup falls with batch in both bounds; the scan finds the first crossing)."""
    spec = speculation if speculation is not None else dep.speculation
    if spec is None or spec.k == 0:
        return None
    grid = np.unique(np.round(np.geomspace(1.0, max_batch, 97)))
    s = speculative_of(dep, batch=grid, context=context, speculation=spec)
    bad = np.nonzero(np.asarray(s.speedup) <= 1.0)[0]
    if bad.size == 0:
        return None
    hi = int(bad[0])
    if hi == 0:
        return 1.0
    lo_b, hi_b = float(grid[hi - 1]), float(grid[hi])
    while hi_b - lo_b > 1.0:
        mid = float(np.floor((lo_b + hi_b) / 2.0))
        if float(speculative_of(dep, batch=mid, context=context, speculation=spec).speedup) <= 1.0:
            hi_b = mid
        else:
            lo_b = mid
    return hi_b
