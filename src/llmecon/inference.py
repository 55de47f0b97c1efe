"""One inference step (decode or prefill) of a model on a system under a plan: FLOPs, bytes,
communication, and the roofline time — vectorised over batch and context (SPEC A1).

Per-chip view of the slowest pipeline stage (see ``parallelism``). With pp stages the batch runs
as pp micro-batches of B/pp; one iteration (every sequence advances) costs pp stage-steps plus
(pp-1) hops, so weights are re-read once per micro-batch (SPEC D18).

Counted: matmul FLOPs (2 per weight per token), attention score/value FLOPs, weight reads (MoE:
only the experts the batch touches, expected fraction 1-(1-k/E)^tokens under uniform routing),
KV reads and the new tokens' KV writes, TP all-reduces (2 per layer, ring or one-shot), EP dispatch+combine
all-to-alls, PP hops. Omitted: activation traffic, softmax/norm/elementwise FLOPs, the input
embedding lookup (B rows), kernel launch and framework overheads (calibrated mode, later).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .collectives import all_reduce_s, all_to_all_s, p2p_s
from .dtypes import get_dtype
from .errors import SpecError
from .hardware import System
from .model import Model
from .parallelism import Plan
from .roofline import StepTime

MODES = ("ideal", "calibrated")
ACTIVATION_DTYPE = "bf16"  # activations and attention math; what all-reduces and all-to-alls carry


def touched_expert_fraction(*, experts: int, active_experts: int, tokens):
    """Expected fraction of E experts that at least one of ``tokens`` routes to, each token picking
    k distinct experts uniformly: 1 - (1 - k/E)^tokens (SPEC A1; DeepSeek-V3: 3.1% at 1 token,
    63.8% at 32, 98.3% at 128). Real routers are not uniform: this is the expected value."""
    return 1.0 - np.power(1.0 - active_experts / experts, np.asarray(tokens, dtype=float))


@dataclass(frozen=True, kw_only=True)
class StepResult:
    """One iteration of a deployment. Byte and FLOP totals are summed over all chips."""

    phase: str
    mode: str
    plan: Plan
    batch: object
    context: object
    time: StepTime
    flops: object
    weight_bytes: object
    kv_bytes: object
    tokens: object
    memory_per_chip_bytes: object
    hbm_per_chip_bytes: float
    compute_dtype: str

    @property
    def step_s(self):
        return self.time.lower_s

    @property
    def upper_s(self):
        return self.time.upper_s

    @property
    def bound(self):
        return self.time.bound

    @property
    def tokens_per_s(self):
        return np.divide(self.tokens, self.step_s)

    @property
    def fits(self):
        return np.asarray(self.memory_per_chip_bytes) <= self.hbm_per_chip_bytes


def _check(name: str, value, *, allow_zero: bool) -> np.ndarray:
    arr = np.asarray(value, dtype=float)
    bad = (arr < 0) if allow_zero else (arr <= 0)
    if np.any(bad) or not np.all(np.isfinite(arr)):
        rule = ">= 0" if allow_zero else "> 0"
        raise SpecError(f"--{name}: must be {rule}, got {value!r}")
    return arr


def _check_mode(mode: str) -> None:
    if mode not in MODES:
        raise SpecError(f"--mode: must be one of {', '.join(MODES)}, got {mode!r}")
    if mode == "calibrated":
        raise SpecError("--mode calibrated: no efficiency profile exists yet; use --mode ideal (datasheet peaks)")


def memory_per_chip(model: Model, plan: Plan, *, batch, context, weight_dtype=None, kv_dtype=None):
    """Bytes held per chip on the largest stage: weights + KV of every sequence at ``context``."""
    phi = plan.stage_fraction(model)
    w = model.weight_bytes(weight_dtype)
    weights = phi * (w.non_expert / plan.tp + w.routed_experts / (plan.tp * plan.ep))
    kv = phi * np.asarray(batch, dtype=float) * model.kv_bytes(context, kv_dtype) / (plan.kv_shards(model) * plan.ep)
    return weights + kv


def weights_read_per_chip(model: Model, plan: Plan, *, weight_dtype=None, touched_fraction=1.0):
    """Weight bytes one stage-step reads per chip: the non-expert weights (less an untied input
    embedding, which is only looked up) and the touched share of this chip's routed experts."""
    w = model.weight_bytes(weight_dtype)
    return plan.stage_fraction(model) * (w.non_expert_read_per_step / plan.tp
                                         + touched_fraction * w.routed_experts / (plan.tp * plan.ep))


def _comm(model: Model, system: System, plan: Plan, tokens, phi: float):
    """TP all-reduces, EP all-to-alls, per stage-step; the PP hop per boundary."""
    link = system.scale_up
    act = get_dtype(ACTIVATION_DTYPE).bytes
    d = model.d_model
    zero = np.zeros_like(np.asarray(tokens, dtype=float))
    if link is None:
        return zero, 0.0
    rank_tokens = np.asarray(tokens, dtype=float) / plan.ep
    layers = phi * model.n_layers
    comm = zero + layers * 2 * all_reduce_s(message_bytes=rank_tokens * d * act, participants=plan.tp, link=link)
    if plan.ep > 1:
        k = model.moe.top_k
        per_chip = rank_tokens * k * d * act / plan.tp
        comm = comm + phi * model.n_moe_layers * 2 * all_to_all_s(message_bytes=per_chip, participants=plan.ep,
                                                                   link=link)
    hop = 0.0
    if plan.pp > 1:
        hop = p2p_s(message_bytes=np.asarray(tokens, dtype=float) * d * act / plan.tp, link=link)
    return comm, hop


def _assemble(model, system, plan, *, phase, mode, batch, context, tokens_per_seq, flops_attn_per_seq,
              kv_read_per_seq, kv_write_per_seq, weight_dtype, kv_dtype) -> StepResult:
    """Shared arithmetic of decode and prefill for one micro-batch of batch/pp sequences."""
    chip = system.accelerator
    pp = plan.pp
    phi = plan.stage_fraction(model)
    micro = batch / pp
    tokens = micro * tokens_per_seq
    mm = model.matmul_flops_per_token()
    w_dtype = weight_dtype or model.weight_dtype
    e_dtype = weight_dtype or model.expert_weight_dtype
    compute_stage = phi / (plan.tp * plan.ep) * (
        tokens * mm.non_expert / chip.peak(w_dtype)
        + micro * flops_attn_per_seq / chip.peak(ACTIVATION_DTYPE)
        + tokens * mm.expert / chip.peak(e_dtype))
    touched = 0.0
    if model.is_moe:
        touched = touched_expert_fraction(experts=model.moe.n_routed, active_experts=model.moe.top_k, tokens=tokens)
    weights_chip = weights_read_per_chip(model, plan, weight_dtype=weight_dtype, touched_fraction=touched)
    kv_chip = phi * micro * (kv_read_per_seq + kv_write_per_seq) / (plan.kv_shards(model) * plan.ep)
    bw = chip.hbm_bandwidth_bytes_per_s
    comm_stage, hop = _comm(model, system, plan, tokens, phi)
    time = StepTime(compute_s=pp * compute_stage, memory_s=pp * (weights_chip + kv_chip) / bw,
                    comm_s=pp * comm_stage + (pp - 1) * hop)
    flops = batch * tokens_per_seq * mm.total + batch * flops_attn_per_seq
    return StepResult(
        phase=phase, mode=mode, plan=plan, batch=batch, context=context, time=time, flops=flops,
        weight_bytes=pp * weights_chip * plan.chips, kv_bytes=batch * (kv_read_per_seq + kv_write_per_seq),
        tokens=batch * tokens_per_seq,
        memory_per_chip_bytes=memory_per_chip(model, plan, batch=batch, context=context + (
            tokens_per_seq if phase == "prefill" else 0), weight_dtype=weight_dtype, kv_dtype=kv_dtype),
        hbm_per_chip_bytes=chip.hbm_bytes, compute_dtype=chip.compute_dtype(w_dtype))


def decode_step(model: Model, system: System, *, batch, context, plan: Plan | None = None,
                weight_dtype: str | None = None, kv_dtype: str | None = None, mode: str = "ideal") -> StepResult:
    """One decode iteration: ``batch`` sequences each attend ``context`` cached tokens and emit one.

    ``batch`` and ``context`` broadcast as numpy arrays. Attention uses MLA's absorbed form.
    """
    plan = plan or Plan()
    _check_mode(mode)
    plan.validate(model, system)
    batch = _check("batch", batch, allow_zero=False)
    context = _check("context", context, allow_zero=True)
    for dt in (weight_dtype, kv_dtype):
        if dt is not None:
            get_dtype(dt)
    return _assemble(model, system, plan, phase="decode", mode=mode, batch=batch, context=context,
                     tokens_per_seq=1.0, flops_attn_per_seq=model.attention_flops_per_token(context, absorbed=True),
                     kv_read_per_seq=model.kv_read_bytes(context, kv_dtype),
                     kv_write_per_seq=model.kv_bytes_per_token(kv_dtype), weight_dtype=weight_dtype,
                     kv_dtype=kv_dtype)


def prefill_step(model: Model, system: System, *, batch, prompt_tokens, cached_tokens=0, plan: Plan | None = None,
                 weight_dtype: str | None = None, kv_dtype: str | None = None, mode: str = "ideal") -> StepResult:
    """Prefill ``batch`` prompts of ``prompt_tokens`` new tokens after ``cached_tokens`` cached ones.

    KV traffic: the cached prefix is read once, the new tokens' KV written once (flash-attention
    tiling keeps re-reads on chip; omitted). Causal attention FLOPs are summed exactly.
    """
    plan = plan or Plan()
    _check_mode(mode)
    plan.validate(model, system)
    batch = _check("batch", batch, allow_zero=False)
    prompt = _check("context", prompt_tokens, allow_zero=False)
    cached = _check("cached-tokens", cached_tokens, allow_zero=True)
    for dt in (weight_dtype, kv_dtype):
        if dt is not None:
            get_dtype(dt)
    new_kv = model.kv_bytes(cached + prompt, kv_dtype) - model.kv_bytes(cached, kv_dtype)
    return _assemble(model, system, plan, phase="prefill", mode=mode, batch=batch, context=cached,
                     tokens_per_seq=prompt, flops_attn_per_seq=model.prefill_attention_flops(prompt, cached),
                     kv_read_per_seq=model.kv_read_bytes(cached, kv_dtype, sparse=False), kv_write_per_seq=new_kv,
                     weight_dtype=weight_dtype, kv_dtype=kv_dtype)
