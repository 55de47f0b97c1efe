"""Disaggregated prefill and decode (DistServe, Zhong et al. OSDI 2024; Splitwise, Patel et al. ISCA 2024;
DeepSeek-V3 technical report sec. 3.4): a prefill worker prefills the prompts, their KV cache moves over the
scale-out network to a decode worker, which generates the rest.

* **KV transfer** (``kv_transfer_s``). One request's cache is ``model.kv_bytes(prompt)`` (every attention
  layer's K/V or MLA latent plus the constant state of linear layers, in the KV format). On each worker it
  sits on the chips of one attention group (tp·pp chips; attention-DP groups hold different requests): each
  such chip holds ``phi · kv / kv_shards`` of it (``phi`` = the largest pipeline stage's share of the layers,
  ``kv_shards`` = min(KV heads, tp), 1 for MLA, whose latent every tp rank holds whole: the chip's share as
  ``spec.deployment.kv_per_chip`` counts it). A prefill step of ``batch`` prompts spreads them over
  min(batch, adp) groups, so each sending chip sends, and each receiving chip receives,
  ``batch / min(batch, adp)`` requests' shares. Every chip sends or receives at its scale-out link's
  per-direction bandwidth, all at once, so the transfer is one point-to-point operation at the busier end:
  ``t = max(p2p(S_prefill, link_prefill), p2p(S_decode, link_decode))`` with ``p2p(S, L) = alpha + step +
  S/BW`` (``step.collectives.p2p_s``: ``alpha`` the tier's per-operation latency floor, ``step`` the
  profile's per-step latency, 0 in ideal mode). The links are the profile's view of the systems' scale-out
  links (``EfficiencyProfile.system``; the catalogue link in ideal mode).
* **TTFT** = the prefill's latency (the step plus the pipeline fill when pp > 1, ``StepResult.latency_s``)
  + the KV transfer of its whole batch (the first token streams from the decode worker once the cache is
  there, as in NVIDIA Dynamo's disaggregated flow); **TPOT** = the decode worker's step.
* **Rates** for sizing the pools (``prefill_rate``, ``decode_rate``): a prefill worker serves ``prefill_batch /
  prefill step`` requests/s, a decode worker ``decode_batch / ((output_tokens - 1) · TPOT)`` (the prefill
  emits the first token; a sequence holds its decode slot for the other ``O - 1``).
* **Speculative decoding** on the decode worker is not modelled: ``disaggregated_of`` refuses it (the one
  place; ``serving.disaggregated`` and the planner's worker ratio go through it or use plain decode points).

Omitted: overlapping the transfer with the prefill (layer-by-layer sends, as Splitwise and Mooncake do,
hide all but the last layers' share; this serial sum is then an upper bound on that part), a transfer inside
one scale-up domain (workers on one NVL72 rack can move KV over NVLink, faster than this prices), congestion
of the scale-out fabric by other traffic, KV layout conversion between different tp/pp shardings (a copy in
HBM), KV replicas sent once and copied inside the worker (each replica chip is charged its copy), a prefill batch's
prompts spread over several decode workers (the receive side takes the whole batch on one decode worker's
attention groups: conservative, as the busier end can only be less busy when the batch is split), and the
decode worker's queueing (``serving.disaggregated`` adds the closed loop).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import SpecError
from ..spec.deployment import Deployment
from ..spec.hardware import System
from ..spec.model import Model
from ..spec.plan import Plan
from .collectives import p2p_s
from .inference import StepResult, decode_of, prefill_of


def kv_bytes_per_chip(model: Model, plan: Plan, *, prompt_tokens, batch=1.0, kv_dtype=None):
    """KV bytes each chip of the busiest attention group of ``plan`` holds for ``batch`` requests of
    ``prompt_tokens`` tokens: ``batch / min(batch, adp) · phi · kv(prompt) / kv_shards`` (module docstring)."""
    b = np.asarray(batch, dtype=float)
    if np.any(b <= 0):
        raise SpecError("must be > 0", field="batch", value=batch)
    per_group = b / np.minimum(b, plan.adp)
    kv = np.asarray(model.kv_bytes(np.asarray(prompt_tokens, dtype=float), kv_dtype), dtype=float)
    return per_group * plan.stage_fraction(model) * kv / plan.kv_shards(model)


def _scale_out(system: System, profile, role: str):
    link = profile.system(system).scale_out
    if link is None:
        raise SpecError(f"{system.name} has no scale-out link to move the KV cache between prefill and decode "
                        "workers", field=f"{role}_system", value=system.name,
                        fix="pick a system with one (llmecon catalog systems), or serve aggregated")
    return link


def kv_transfer_s(prefill: Deployment, decode: Deployment, *, prompt_tokens, batch=1.0):
    """Seconds to move the KV of ``batch`` prompts of ``prompt_tokens`` tokens (prefilled together) from the
    prefill worker to the decode worker over the scale-out network (module docstring). Broadcasts."""
    if prefill.model is not decode.model and prefill.model != decode.model:
        raise SpecError("prefill and decode workers serve different models", field="decode_model",
                        value=decode.model.name, fix="use one model for both")
    if prefill.kv_format != decode.kv_format:
        raise SpecError(f"prefill writes {prefill.kv_format} KV, decode reads {decode.kv_format}", field="kv_dtype",
                        value=decode.kv_format, fix="give both workers one KV format")
    m = prefill.model
    send = kv_bytes_per_chip(m, prefill.plan, prompt_tokens=prompt_tokens, batch=batch, kv_dtype=prefill.kv_dtype)
    recv = kv_bytes_per_chip(m, decode.plan, prompt_tokens=prompt_tokens, batch=batch, kv_dtype=decode.kv_dtype)
    out = _scale_out(prefill.system, prefill.profile, "prefill")
    into = _scale_out(decode.system, decode.profile, "decode")
    return np.maximum(p2p_s(message_bytes=send, link=out), p2p_s(message_bytes=recv, link=into))


@dataclass(frozen=True, kw_only=True)
class DisaggregatedStep:
    """One request's path through a prefill worker and a decode worker (arrays broadcast over the inputs)."""

    prefill: StepResult          # the prefill step of ``prefill_batch`` prompts
    decode: StepResult           # the decode step of ``decode_batch`` sequences
    prefill_batch: object
    decode_batch: object
    output_tokens: object
    kv_transfer_s: object        # the prefill batch's KV over the scale-out network
    decode_iteration_s: object = None  # one decode iteration (speculative: verify + draft; None: ``decode.step_s``)
    tokens_per_step: float = 1.0       # E, tokens a sequence emits per decode iteration (1 without speculation)

    @property
    def ttft_s(self):
        """Prefill latency (step + pipeline fill) + KV transfer."""
        return np.add(self.prefill.latency_s, self.kv_transfer_s)

    @property
    def iteration_s(self):
        """One decode iteration: the plain step, or with speculation the verify step plus the drafts."""
        return self.decode.step_s if self.decode_iteration_s is None else self.decode_iteration_s

    @property
    def tpot_s(self):
        """The iteration over the tokens it emits per sequence (E = 1 without speculation)."""
        return np.divide(self.iteration_s, self.tokens_per_step)

    @property
    def prefill_requests_per_s(self):
        """Requests one prefill worker serves per second (``prefill_rate``)."""
        return prefill_rate(self.prefill_batch, self.prefill.step_s)

    @property
    def decode_requests_per_s(self):
        """Requests one decode worker finishes per second (``decode_rate``)."""
        return decode_rate(self.decode_batch, self.output_tokens, self.tpot_s)


def prefill_rate(batch, step_s):
    """Requests/s of one prefill worker running ``batch`` prompts per step of ``step_s``, back to back."""
    return np.divide(batch, step_s)


def decode_rate(batch, output_tokens, tpot_s):
    """Requests/s of one decode worker holding ``batch`` sequences, each for ``output_tokens - 1`` steps of
    ``tpot_s`` (Little's law; the prefill emitted the first token)."""
    return np.divide(batch, np.multiply(np.subtract(output_tokens, 1.0), tpot_s))


def disaggregated_of(prefill: Deployment, decode: Deployment, *, prefill_batch, decode_batch, prompt_tokens,
                     output_tokens, context=None) -> DisaggregatedStep:
    """A prefill step of ``prefill_batch`` prompts on ``prefill``, its KV moved to ``decode``, and a decode
    step of ``decode_batch`` sequences at ``context`` cached tokens (None: the mean over a request's decode
    life, ``prompt + (output - 1)/2``). Speculative decoding on the decode worker (``decode.speculation``, MTP or
    a draft model; the prefill worker's is not used: it emits one token) prices the decode iteration as
    ``step.speculative`` does — the verify step over k+1 tokens plus the k drafts — and TPOT = iteration / E;
    ``decode`` is then the verify step. Omitted: the draft model's own KV sent to the decode worker."""
    p = np.asarray(prompt_tokens, dtype=float)
    o = np.asarray(output_tokens, dtype=float)
    ctx = p + (o - 1.0) / 2.0 if context is None else context
    pre = prefill_of(prefill, batch=prefill_batch, prompt_tokens=p)
    if decode.speculation is None:
        dec, iteration, e = decode_of(decode, batch=decode_batch, context=ctx), None, 1.0
    else:
        from .speculative import speculative_of

        s = speculative_of(decode, batch=decode_batch, context=ctx)
        dec, iteration, e = s.verify, s.step_s, float(decode.speculation.tokens_per_step)
    return DisaggregatedStep(prefill=pre, decode=dec, prefill_batch=np.asarray(prefill_batch, dtype=float),
                             decode_batch=np.asarray(decode_batch, dtype=float), output_tokens=o,
                             kv_transfer_s=kv_transfer_s(prefill, decode, prompt_tokens=p, batch=prefill_batch),
                             decode_iteration_s=iteration, tokens_per_step=e)
