"""One inference step (decode or prefill) of a model on a system under a plan: FLOPs, bytes,
communication, and the roofline time — vectorised over batch and context (SPEC A1).

Per-chip view of the slowest pipeline stage (see ``parallelism``). With pp stages the batch runs
as pp micro-batches of B/pp; one iteration (every sequence advances) costs pp stage-steps plus
(pp-1) hops, so weights are re-read once per micro-batch (SPEC D18).

Counted: matmul FLOPs (2 per weight per token), attention score/value FLOPs, weight reads (MoE:
only the experts the batch touches), KV reads and the new tokens' KV writes, TP all-reduces (2 per
layer), EP dispatch+combine all-to-alls (attention data-parallel plans), PP hops — each on the tier
``spec.plan.place`` puts it (inside a scale-up domain, or hierarchical across domains). MoE layers
wait for their all-to-all, so the critical chip is the one of the *busiest* expert group
(``expert_load``): its distinct experts read (exact expectation under uniform routing), its
token-expert pairs computed and received (a documented approximation) — at batch 1 on DeepSeek-V3
EP64 about 1.3 of a layer's 8 touched experts, 10x the mean 1/8. Step times use that chip;
``weight_bytes`` and ``flops`` stay totals over all chips (the mean chip times the chips). Omitted in ideal mode:
activation traffic, softmax/norm/elementwise FLOPs, the input embedding lookup (B rows), kernel
launch and framework overheads. A non-ideal ``profile`` prices the same work with achieved
efficiencies, element-wise traffic, kernel floors and overheads (``calibrated``); ``mode`` defaults
to the profile's own. The step takes a profile, it does not choose one (calibrated mode without one
is an error naming the fix): ``llmecon.default_profile(accelerator)`` is a chip's shipped profile.
``decode_of``/``prefill_of`` price a ``Deployment``, which carries its profile and was validated
once, at construction.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from .calibrated import Work, calibrated_time, expert_terms
from .expert_load import BusiestRank, busiest_rank, touched_expert_fraction
from .collectives import all_reduce_s, all_to_all_s, p2p_s, two_tier_all_reduce_s, two_tier_all_to_all_s
from ..dtypes import get_dtype
from ..spec.efficiency import IDEAL, MODES, EfficiencyProfile
from ..errors import SpecError, as_floats, require_array, require_choice, require_number
from ..spec.hardware import System
from ..spec.model import Model
from ..spec.deployment import Deployment, busiest_group_sequences, memory_per_chip
from ..spec.plan import Placement, Plan, place
from ..spec.plan_array import STAGE_TIERS, PlanArray
from .roofline import StepTime

ACTIVATION_DTYPE = "bf16"  # activations and attention math; what all-reduces and all-to-alls carry


def pipeline_fill_factor(pp):
    """A prefill's latency over its iteration time with ``pp`` stages: (2pp - 1)/pp (``StepResult.latency_s``)."""
    pp = np.asarray(pp, dtype=float)
    return (2.0 * pp - 1.0) / pp


@dataclass(frozen=True, kw_only=True)
class StepResult:
    """One iteration of a deployment. Byte and FLOP totals are summed over all chips (the mean chip's
    expected work times the chips); ``weight_bytes_per_chip`` is what the critical chip reads (the
    busiest expert group's experts), and ``routed_compute_s`` the part of ``time.compute_s`` spent on
    its routed experts' FLOPs (at the rate the mode prices them), the one compute term that is not
    additive over sequences (the serving simulator splits it off); ``expert_load_factor`` is that
    group's token-expert pairs over the mean group's (1 for a dense model)."""

    phase: str
    mode: str
    profile: str
    plan: Plan
    batch: object
    context: object
    time: StepTime
    flops: object
    weight_bytes: object
    weight_bytes_per_chip: object
    routed_compute_s: object
    expert_load_factor: object
    kv_bytes: object
    tokens: object
    memory_per_chip_bytes: object
    hbm_per_chip_bytes: float
    compute_dtype: str

    @property
    def step_s(self):
        return self.time.step_s

    @property
    def upper_s(self):
        return self.time.upper_s

    @property
    def bound(self):
        return self.time.bound

    @property
    def latency_s(self):
        """Time from the step's start until its last sequence is done: what a request waits. Decode:
        the iteration (a pipeline is kept full across iterations, so a token waits one iteration).
        Prefill: the iteration plus the pipeline fill. The batch runs as pp micro-batches through pp
        stages, (m + pp - 1) stage-steps for m = pp micro-batches (GPipe, Huang et al. 2019, sec. 2.2),
        against the pp stage-steps ``step_s`` charges for throughput, so ``step_s·(2pp-1)/pp``. TTFT
        is this, without queueing. Omitted: the fill's hops differ from the iteration's (pp-1 hops)
        only in which micro-batch makes them."""
        if self.phase != "prefill" or self.plan.pp == 1:
            return self.step_s
        return np.multiply(self.step_s, pipeline_fill_factor(self.plan.pp))

    @property
    def mean_compute_s(self):
        """``time.compute_s`` with the routed experts at the mean group's load: what one sequence adds
        to a large batch (additive over sequences; the balance batch and crossover context use it)."""
        return np.asarray(self.time.compute_s) - np.asarray(self.routed_compute_s) * (
            1.0 - 1.0 / np.asarray(self.expert_load_factor))

    @property
    def tokens_per_s(self):
        return np.divide(self.tokens, self.step_s)

    @property
    def fits(self):
        return np.asarray(self.memory_per_chip_bytes) <= self.hbm_per_chip_bytes


def _profile(mode: str, profile: EfficiencyProfile | None) -> EfficiencyProfile:
    """The profile a step runs with: IDEAL in ideal mode (a fitted profile then is an error), the one
    given in calibrated mode. The step takes the profile, it does not choose one: an accelerator's
    shipped profile is ``llmecon.default_profile(accelerator)`` (``resolve`` picks it for the front-ends)."""
    if mode == "ideal":
        if profile is not None and not profile.is_ideal:
            raise SpecError("a profile needs {mode} calibrated (ideal mode uses datasheet peaks)", field="profile")
        return IDEAL
    require_choice("mode", mode, MODES)
    if profile is None:
        raise SpecError("calibrated mode needs an efficiency profile", field="profile", show_value=False,
                        fix="pass profile=llmecon.default_profile(system.accelerator) (the chip's shipped profile) "
                            "or load one with llmecon.load_profile")
    return profile


def _check_request(model: Model, system: System, plan: Plan, *, mode, profile, expert_imbalance,
                   dtypes) -> tuple[EfficiencyProfile, Placement | None]:
    """What decode and prefill both check before any arithmetic: mode and profile, plan, MoE
    options, formats. Returns the profile the step runs with (``IDEAL`` in ideal mode) and the
    plan's placement (None for a ``PlanArray``, whose plans were validated and placed when it was built)."""
    prof = _profile(mode, profile)
    where = None if isinstance(plan, PlanArray) else plan.validate(model, system)
    require_number("expert_imbalance", expert_imbalance, minimum=1,
                   hint="the busiest expert group's tokens over uniform routing's; 1 = uniform routing")
    for dt in dtypes:
        if dt is not None:
            get_dtype(dt)
    return prof, where


def weights_read_per_chip(model: Model, plan: Plan, *, weight_dtype=None, touched_fraction=1.0):
    """Weight bytes one stage-step reads per chip: the non-expert weights (less an untied input
    embedding, which is only looked up) and the touched share of this chip's routed-expert slots
    (1: all of them, redundant copies included)."""
    non_expert, experts = _weights_read_parts(model, plan, weight_dtype=weight_dtype, touched_fraction=touched_fraction)
    return non_expert + experts


def _weights_read_parts(model: Model, plan: Plan, *, weight_dtype, touched_fraction):
    """(non-expert, routed-expert) bytes per chip per stage-step: the chip holds (E + r)/ep slots of
    each MoE layer, each a 1/expert_tp shard of one expert (E/E = 1 without redundant copies)."""
    w = model.weight_bytes(weight_dtype)
    phi = plan.stage_fraction(model)
    slots = plan.expert_slots(model) / model.moe.n_routed if model.is_moe else 1.0
    return (phi * w.non_expert_read_per_step / plan.tp,
            phi * touched_fraction * slots * w.routed_experts / plan.width)


def expert_load(model: Model, plan: Plan, *, tokens, expert_imbalance: float = 1.0) -> BusiestRank:
    """The busiest expert group's load per MoE layer for a micro-batch of ``tokens`` tokens
    (``expert_load.busiest_rank`` over the plan's E + r slots and ep groups). A ``PlanArray`` with
    one token count per entry runs ``busiest_rank`` once per distinct (slots, ep)."""
    if isinstance(plan, PlanArray):
        return _expert_load_grouped(model, plan, tokens=tokens, expert_imbalance=expert_imbalance)
    return busiest_rank(slots=plan.expert_slots(model), active_experts=model.moe.top_k, ranks=plan.ep,
                        tokens=tokens, expert_imbalance=expert_imbalance)


def _expert_load_grouped(model: Model, plans: PlanArray, *, tokens, expert_imbalance: float) -> BusiestRank:
    t = np.broadcast_to(np.asarray(tokens, dtype=float), plans.shape(tokens))
    slots = plans.expert_slots(model)
    if plans.row.ndim == 2:  # a column layout: once per distinct (slots, ep, token row)
        return _moe_load(model, plans, tokens=t, expert_imbalance=expert_imbalance, touched=False)[0]
    experts, pairs, mean = np.empty(t.shape), np.empty(t.shape), np.empty(t.shape)
    for (s, ep), idx in plans.groups(slots, plans.ep):
        b = busiest_rank(slots=s, active_experts=model.moe.top_k, ranks=ep, tokens=t[idx],
                         expert_imbalance=expert_imbalance)
        experts[idx], pairs[idx], mean[idx] = b.experts, b.pairs, b.mean_pairs
    return BusiestRank(experts=experts, pairs=pairs, mean_pairs=mean, slots_per_rank=slots // plans.ep)


def _moe_load(model: Model, plan: Plan, *, tokens, expert_imbalance: float,
              touched: bool = True) -> tuple[BusiestRank, object]:
    """(``expert_load``, ``touched_expert_fraction`` of the plan's expert slots, or None when not
    ``touched``): the busiest group's load and the mean group's touched share (a column ``PlanArray``:
    both once per distinct (slots, ep, token row))."""
    slots, k = plan.expert_slots(model), model.moe.top_k
    if not (isinstance(plan, PlanArray) and plan.row.ndim == 2):
        return (expert_load(model, plan, tokens=tokens, expert_imbalance=expert_imbalance),
                touched_expert_fraction(experts=slots, active_experts=k, tokens=tokens) if touched else None)

    def both(key, rows):
        b = busiest_rank(slots=key[0], active_experts=k, ranks=key[1], tokens=rows, expert_imbalance=expert_imbalance)
        share = (touched_expert_fraction(experts=key[0], active_experts=k, tokens=rows),) if touched else ()
        return b.experts, b.pairs, b.mean_pairs, *share

    experts, pairs, mean, *share = plan.per_distinct_row(tokens, both, slots, plan.ep)
    return (BusiestRank(experts=experts, pairs=pairs, mean_pairs=mean, slots_per_rank=slots // plan.ep),
            share[0] if share else None)


def _tiered(tier: str, system: System, one_tier, two_tier, *, message_bytes, participants: int,
            domain_chips: int):
    """A collective on the tier ``place`` chose: inside the scale-up domain, or hierarchical across
    domains (with one chip per domain the hierarchical form is all scale-out)."""
    if tier == "none":
        return 0.0
    if tier == "scale_up":
        return one_tier(message_bytes=message_bytes, participants=participants, link=system.scale_up)
    return two_tier(message_bytes=message_bytes, participants=participants, domain_chips=domain_chips,
                    scale_up=system.scale_up, scale_out=system.scale_out)


@dataclass(frozen=True, kw_only=True)
class CommParts:
    """Communication of one iteration on the critical chip, per collective: seconds (all
    stage-steps and hops of the iteration) and bytes each chip sends, and the tier it lands on."""

    tp_all_reduce_s: object
    ep_all_to_all_s: object
    pp_hops_s: object
    tp_bytes: object
    ep_bytes: object
    pp_hop_bytes: object
    tiers: dict

    @property
    def total_s(self):
        return np.add(np.add(self.tp_all_reduce_s, self.ep_all_to_all_s), self.pp_hops_s)


def comm_parts(model: Model, system: System, plan: Plan, *, tokens, dispatch_dtype=None,
               expert_imbalance: float = 1.0, all_reduce: str = "best", ep_system: System | None = None) -> CommParts:
    """Communication of one iteration moving ``tokens`` tokens per micro-batch (batch/pp x tokens
    per sequence), with pp micro-batches per iteration (SPEC D15, D18, D19).

    Per stage-step: 2 TP all-reduces per layer over each attention group's tokens (``all_reduce``,
    see ``collectives.all_reduce_s``: "best", the default and ideal mode's, is the fastest algorithm
    the link supports, in-switch reduction included; calibrated mode passes its profile's
    ``all_reduce_algorithm``, "auto" = ring or one-shot; conservative for MoE layers with adp > 1,
    whose second one a fused combine can replace); for MoE layers with attention data-parallel (adp > 1) the dispatch
    (``dispatch_dtype``, default bf16) and combine (bf16) all-to-alls over the stage's chips, each
    chip sending its 1/width share of the token-expert pairs to every expert-TP rank, scaled by the
    busiest expert group's load over the mean (``expert_load``: chance under uniform routing, times
    the ``expert_imbalance`` skew): the all-to-all ends when its busiest receiver has its pairs.
    Per iteration: the pipeline hops, inside and across domains. The all-to-alls run on
    ``ep_system``'s links where given (a calibrated profile's ``system(system, "all_to_all")``).
    Omits overlap of communication with compute (the roofline takes the max)."""
    load = None
    if model.is_moe:
        load = expert_load(model, plan, tokens=np.asarray(tokens, dtype=float), expert_imbalance=expert_imbalance)
    return _comm_parts(model, system, plan, tokens=tokens, dispatch_dtype=dispatch_dtype, load=load,
                       all_reduce=all_reduce, ep_system=ep_system)


def _comm_parts(model: Model, system: System, plan: Plan, *, tokens, dispatch_dtype, load,
                all_reduce: str = "best", ep_system: System | None = None, where: Placement | None = None,
                totals: bool = True) -> CommParts:
    """``comm_parts`` with the expert load given; the EP all-to-alls run on ``ep_system``'s links
    (a calibrated profile's ``all_to_all`` terms: ``EfficiencyProfile.system(system, "all_to_all")``),
    default ``system``'s. ``where``: the plan's placement when the caller has it (``place``, else computed)."""
    if isinstance(plan, PlanArray):
        return _comm_parts_grouped(model, system, plan, tokens=tokens, dispatch_dtype=dispatch_dtype, load=load,
                                   all_reduce=all_reduce, ep_system=ep_system, totals=totals)
    ep_sys = ep_system or system
    where = where or place(plan, system)
    act = get_dtype(ACTIVATION_DTYPE).bytes
    d = model.d_model
    phi = plan.stage_fraction(model)
    tokens = as_floats(tokens)
    zero = tokens * 0.0  # tokens are finite (checked): zeros of their shape, a numpy scalar for a scalar
    tp_msg = tokens / plan.adp * d * act
    tp_s = zero + plan.pp * phi * model.n_layers * 2 * _tiered(
        where.tp_tier, system, functools.partial(all_reduce_s, algorithm=all_reduce),
        functools.partial(two_tier_all_reduce_s, algorithm=all_reduce), message_bytes=tp_msg, participants=plan.tp,
        domain_chips=where.chips_per_domain)
    ep_s, ep_bytes = zero, zero
    if model.is_moe and where.ep_tier != "none":
        pairs = tokens / plan.width * model.moe.top_k * plan.expert_tp * load.load_factor
        messages = [pairs * d * get_dtype(dt).bytes for dt in (dispatch_dtype or ACTIVATION_DTYPE, ACTIVATION_DTYPE)]
        layers = plan.pp * phi * model.n_moe_layers
        ep_s = zero + layers * sum(_tiered(where.ep_tier, ep_sys, all_to_all_s, two_tier_all_to_all_s,
                                           participants=plan.width, message_bytes=m,
                                           domain_chips=where.chips_per_domain) for m in messages)
        ep_bytes = layers * sum(messages)
    hop_msg = tokens * d * act / plan.width
    hops_s = zero
    if where.pp_hops_up:
        hops_s = hops_s + where.pp_hops_up * p2p_s(message_bytes=hop_msg, link=system.scale_up)
    if where.pp_hops_out:
        hops_s = hops_s + where.pp_hops_out * p2p_s(message_bytes=hop_msg, link=system.scale_out)
    tp_bytes = zero + (plan.pp * phi * model.n_layers * 2 * tp_msg if plan.tp > 1 else 0.0)
    return CommParts(tp_all_reduce_s=tp_s, ep_all_to_all_s=ep_s, pp_hops_s=hops_s, tp_bytes=tp_bytes,
                     ep_bytes=ep_bytes, pp_hop_bytes=(plan.pp - 1) * hop_msg, tiers=where.tiers)


def _tiered_grouped(plans: PlanArray, tier: np.ndarray, participants, system: System, one_tier, two_tier, *,
                    messages) -> list[np.ndarray]:
    """``_tiered`` per entry of ``plans`` for each of ``messages`` (bytes per entry): once per
    distinct (tier, participants, chips per domain)."""
    if plans.row.ndim == 2:  # a column layout: once per distinct (tier, participants, chips per domain, row)
        def cost(key, rows):
            if STAGE_TIERS[key[0]] == "none":
                return (0.0,)
            return (_tiered(STAGE_TIERS[key[0]], system, one_tier, two_tier, message_bytes=rows, participants=key[1],
                            domain_chips=key[2]),)

        # participants and domain size only matter where the collective runs (and the domain size across domains)
        p = np.where(tier == 0, 0, participants)
        per_domain = np.where(tier == STAGE_TIERS.index("two_tier"), plans.chips_per_domain, 0)
        return [plans.per_distinct_row(m, cost, tier, p, per_domain)[0] for m in messages]
    shape = plans.shape(*messages)
    outs = [np.zeros(shape) for _ in messages]
    msgs = [np.broadcast_to(np.asarray(m, dtype=float), shape) for m in messages]
    for (code, p, m), idx in plans.groups(tier, participants, plans.chips_per_domain):
        if STAGE_TIERS[code] != "none":
            for out, msg in zip(outs, msgs):
                out[idx] = _tiered(STAGE_TIERS[code], system, one_tier, two_tier, message_bytes=msg[idx],
                                   participants=p, domain_chips=m)
    return outs


def _comm_parts_grouped(model: Model, system: System, plans: PlanArray, *, tokens, dispatch_dtype, load,
                        all_reduce: str, ep_system: System | None = None, totals: bool = True) -> CommParts:
    """``_comm_parts`` for a ``PlanArray`` (one token count per entry): the same terms, the tiers as masks;
    without ``totals`` the byte counts are None."""
    ep_sys = ep_system or system
    act = get_dtype(ACTIVATION_DTYPE).bytes
    d = model.d_model
    phi = plans.stage_fraction(model)
    tokens = np.broadcast_to(np.asarray(tokens, dtype=float), plans.shape(tokens))
    zero = np.zeros_like(tokens)
    tp_msg = tokens / plans.adp * d * act
    tp_s = zero + plans.pp * phi * model.n_layers * 2 * _tiered_grouped(
        plans, plans.tp_tier, plans.tp, system, functools.partial(all_reduce_s, algorithm=all_reduce),
        functools.partial(two_tier_all_reduce_s, algorithm=all_reduce), messages=[tp_msg])[0]
    ep_s, ep_bytes = zero, zero
    if model.is_moe and np.any(plans.ep_tier != 0):
        pairs = tokens / plans.width * model.moe.top_k * plans.expert_tp * load.load_factor
        sizes = [get_dtype(dt).bytes for dt in (dispatch_dtype or ACTIVATION_DTYPE, ACTIVATION_DTYPE)]
        messages = [pairs * d * b for b in sizes] if sizes[0] != sizes[1] else [pairs * d * sizes[0]] * 2
        layers = plans.pp * phi * model.n_moe_layers
        if sizes[0] == sizes[1]:
            # dispatch and combine move the same bytes: one evaluation serves both (the same sum, bit for bit)
            one = _tiered_grouped(plans, plans.ep_tier, plans.width, ep_sys, all_to_all_s, two_tier_all_to_all_s,
                                  messages=messages[:1])[0]
            parts = [one, one]
        else:
            parts = _tiered_grouped(plans, plans.ep_tier, plans.width, ep_sys, all_to_all_s, two_tier_all_to_all_s,
                                    messages=messages)
        ep_s = zero + layers * sum(parts)
        ep_bytes = np.where(plans.ep_tier != 0, layers * sum(messages), zero) if totals else None
    hop_msg = tokens * d * act / plans.width
    hops_s = zero
    for hops, link in ((plans.pp_hops_up, system.scale_up), (plans.pp_hops_out, system.scale_out)):
        if np.any(hops > 0):  # hops x the send's cost: 0 where a plan has no hop on this link (the cost is finite)
            hops_s = hops_s + hops * p2p_s(message_bytes=hop_msg, link=link)
    if not totals:
        return CommParts(tp_all_reduce_s=tp_s, ep_all_to_all_s=ep_s, pp_hops_s=hops_s, tp_bytes=None, ep_bytes=None,
                         pp_hop_bytes=None, tiers=plans.tiers)
    tp_bytes = zero + np.where(plans.tp > 1, plans.pp * phi * model.n_layers * 2 * tp_msg, 0.0)
    return CommParts(tp_all_reduce_s=tp_s, ep_all_to_all_s=ep_s, pp_hops_s=hops_s, tp_bytes=tp_bytes,
                     ep_bytes=ep_bytes, pp_hop_bytes=(plans.pp - 1) * hop_msg, tiers=plans.tiers)


def attention_work_per_chip(model: Model, plan: Plan, *, flops_attn_per_seq, kv_read_per_seq, kv_write_per_seq):
    """(attention FLOPs, KV bytes read + written) that one sequence puts on the critical chip of the
    largest stage: its layers' share ``phi`` of the sequence's attention, split over the stage's
    tp·adp chips (FLOPs; heads and attention groups) and over the KV shards and attention groups
    (bytes). Additive over sequences: a step's attention work is the sum over its sequences."""
    phi = plan.stage_fraction(model)
    return (phi / plan.width * flops_attn_per_seq,
            phi * (kv_read_per_seq + kv_write_per_seq) / (plan.kv_shards(model) * plan.adp))


def gdn_work_per_chip(model: Model, plan: Plan, *, tokens_per_seq) -> tuple:
    """(recurrence FLOPs, state bytes read) that one sequence's Gated DeltaNet layers put on the
    critical chip — the part of ``attention_work_per_chip``'s work that ``calibrated`` prices with
    the ``gdn`` kernel terms: ``tokens_per_seq`` tokens of ``LinearMixer.recurrent_flops_per_token``
    and the layers' state (``LinearMixer.state_bytes``) read once, split as the attention work is.
    (0, 0) for models without Gated DeltaNet layers."""
    lin = model.linear
    if lin is None or lin.kind != "gated_deltanet" or not model.n_linear_layers:
        return 0.0, 0.0
    return attention_work_per_chip(
        model, plan, flops_attn_per_seq=tokens_per_seq * model.n_linear_layers * lin.recurrent_flops_per_token(),
        kv_read_per_seq=model.n_linear_layers * lin.state_bytes(), kv_write_per_seq=0.0)


def _assemble(model, system, plan, *, phase, mode, profile, batch, context, tokens_per_seq, flops_attn_per_seq,
              kv_read_per_seq, kv_write_per_seq, weight_dtype, kv_dtype, expert_imbalance,
              dispatch_dtype, where: Placement | None = None, totals: bool = True,
              balanced: bool = False) -> StepResult:
    """Shared arithmetic of decode and prefill for one micro-batch of batch/pp sequences. The
    critical chip belongs to the busiest expert group (``expert_load``; ``expert_imbalance`` skews
    it further): the distinct experts it reads, the token-expert pairs it computes (routed expert
    FLOPs; shared experts are local, every chip computes its tokens' share) and the all-to-all
    volume it receives. Ideal mode: the roofline of the sums; calibrated mode:
    ``calibrated.calibrated_time`` of the same work. ``totals=False``: no whole-step totals (``decode_step``).

    Attention data parallelism: a sequence lives whole on one of the ``adp`` groups (SGLang/DeepSeek DP
    attention; DeepSeek-V3 report sec. 3.4), so the work that stays on a group — attention FLOPs, KV reads
    and writes, Gated DeltaNet state, non-expert and shared-expert matmuls — is the busiest group's:
    ``busiest_group_sequences(batch/pp, adp)`` sequences on its tp chips, one whole sequence when there
    are fewer sequences than groups (DeepSeek-V3 tp1·ep8·adp8 on GB200, batch 1, 131K: 3.99 ms, not
    the 2.99 ms of one sequence spread over 8 groups). ``balanced=True`` spreads the batch evenly
    (batch/adp per group, the mean; additive over sequences), the share the serving simulator sums per
    sequence (``serving.steptime``); from adp sequences per micro-batch up both are the same. Omitted:
    the TP all-reduce message stays the mean group's (tokens/adp), the expert all-to-all sees every
    group's tokens (``expert_load``) either way."""
    chip = system.accelerator
    pp = plan.pp
    phi = plan.stage_fraction(model)
    micro = batch / pp
    tokens = micro * tokens_per_seq
    # adp x the busiest group's sequences: what the critical chip's group-local work scales with (docstring)
    one_group = type(plan.adp) is int and plan.adp == 1
    seqs = micro if balanced or one_group else busiest_group_sequences(micro, plan.adp) * plan.adp
    group_tokens = seqs * tokens_per_seq
    mm = model.matmul_flops_per_token()
    w_dtype = weight_dtype or model.weight_dtype
    e_dtype = weight_dtype or model.expert_weight_dtype
    routed_active = 2.0 * model.params.routed_experts_active  # FLOPs of one token's routed experts, all layers
    routed = rows = load = 0.0
    mean_touched = busy_touched = 0.0
    factor = 1.0
    if model.is_moe:
        load, mean_touched = _moe_load(model, plan, tokens=tokens, expert_imbalance=expert_imbalance, touched=totals)
        routed = phi * load.pairs * (routed_active / model.moe.top_k) / plan.expert_tp
        rows = load.rows_per_expert
        factor = load.load_factor
        busy_touched = load.touched_share
    ne_bytes, ex_bytes = _weights_read_parts(model, plan, weight_dtype=weight_dtype, touched_fraction=busy_touched)
    attn_flops, kv_bytes = attention_work_per_chip(model, plan, flops_attn_per_seq=flops_attn_per_seq,
                                                   kv_read_per_seq=kv_read_per_seq, kv_write_per_seq=kv_write_per_seq)
    lin_flops, lin_state = gdn_work_per_chip(model, plan, tokens_per_seq=tokens_per_seq)
    work = Work(tokens=group_tokens, ne_flops=phi / plan.width * group_tokens * mm.non_expert,
                ex_flops=phi / plan.width * group_tokens * (mm.expert - routed_active) + routed,
                attn_flops=seqs * attn_flops, ne_bytes=ne_bytes, ex_bytes=ex_bytes, kv_bytes=seqs * kv_bytes,
                expert_rows=rows, ne_peak=chip.peak(w_dtype), ex_peak=chip.peak(e_dtype),
                attn_peak=chip.peak(ACTIVATION_DTYPE), bandwidth=chip.hbm_bandwidth_bytes_per_s,
                ne_dtype=w_dtype, ex_dtype=e_dtype, phase=phase,
                kv_dtype=getattr(kv_dtype or model.kv_dtype, "name", kv_dtype or model.kv_dtype),
                lin_flops=seqs * lin_flops, lin_state=seqs * lin_state)
    comm = _comm_parts(model, profile.system(system), plan, tokens=tokens, dispatch_dtype=dispatch_dtype, load=load,
                       ep_system=profile.system(system, "all_to_all"),
                       all_reduce=profile.all_reduce_algorithm, where=where, totals=totals)
    routed_s = pp * routed / work.ex_peak if totals else None
    if profile.is_ideal:
        time = StepTime(compute_s=pp * (work.ne_flops / work.ne_peak + work.attn_flops / work.attn_peak
                                        + work.ex_flops / work.ex_peak),
                        memory_s=pp * (ne_bytes + ex_bytes + work.kv_bytes) / work.bandwidth, comm_s=comm.total_s)
    else:
        time = calibrated_time(model, plan, work, profile, comm_s=comm.total_s, comm_tiers=comm.tiers)
        if totals:
            routed_s = routed_s / expert_terms(profile, e_dtype).efficiency(np.maximum(rows, 1.0))  # as stage_time
    flops = weight_bytes = None
    if totals:
        flops = batch * tokens_per_seq * mm.total + batch * flops_attn_per_seq
        _, ex_mean = _weights_read_parts(model, plan, weight_dtype=weight_dtype, touched_fraction=mean_touched)
        weight_bytes = pp * (ne_bytes + ex_mean) * plan.chips
    return StepResult(
        phase=phase, mode=mode, profile=profile.name, plan=plan, batch=batch, context=context, time=time,
        flops=flops, weight_bytes=weight_bytes, weight_bytes_per_chip=pp * (ne_bytes + ex_bytes) if totals else None,
        routed_compute_s=routed_s, expert_load_factor=factor,
        kv_bytes=batch * (kv_read_per_seq + kv_write_per_seq), tokens=batch * tokens_per_seq,
        memory_per_chip_bytes=memory_per_chip(model, plan, batch=batch, context=context + (
            tokens_per_seq if phase == "prefill" else 0), weight_dtype=weight_dtype, kv_dtype=kv_dtype),
        hbm_per_chip_bytes=chip.hbm_bytes, compute_dtype=chip.compute_dtype(w_dtype))


def decode_step(model: Model, system: System, *, batch, context, plan: Plan | None = None,
                weight_dtype: str | None = None, kv_dtype: str | None = None, mode: str | None = None,
                expert_imbalance: float = 1.0, dispatch_dtype: str | None = None,
                profile: EfficiencyProfile | None = None, totals: bool = True) -> StepResult:
    """One decode iteration: ``batch`` sequences each attend ``context`` cached tokens and emit one.

    ``batch`` and ``context`` broadcast as numpy arrays. Attention uses MLA's absorbed form.
    ``plan`` may be a ``PlanArray`` (one plan per point, ``batch`` one value per point): every point
    of a search in one call, with the numbers of the per-plan calls. ``totals=False`` leaves out what a
    search over times and memory does not read (``flops``, ``weight_bytes``, ``weight_bytes_per_chip`` and
    ``routed_compute_s`` are None, and the collectives' byte counts): the times are the same.
    """
    plan = plan or Plan()
    mode = mode or (profile.mode if profile is not None else "ideal")
    prof, where = _check_request(model, system, plan, mode=mode, profile=profile, expert_imbalance=expert_imbalance,
                                 dtypes=(weight_dtype, kv_dtype, dispatch_dtype))
    return _decode(model, system, plan, prof, mode=mode, batch=batch, context=context, weight_dtype=weight_dtype,
                   kv_dtype=kv_dtype, expert_imbalance=expert_imbalance, dispatch_dtype=dispatch_dtype, where=where,
                   totals=totals)


def _decode(model, system, plan, prof, *, mode, batch, context, weight_dtype, kv_dtype, expert_imbalance,
            dispatch_dtype, where: Placement | None = None, totals: bool = True,
            balanced: bool = False) -> StepResult:
    batch = require_array("batch", batch, minimum=0, exclusive=True)
    context = require_array("context", context, minimum=0)
    return _assemble(model, system, plan, phase="decode", mode=mode, profile=prof, batch=batch, context=context,
                     tokens_per_seq=1.0, flops_attn_per_seq=model.attention_flops_per_token(context, absorbed=True),
                     kv_read_per_seq=model.kv_read_bytes(context, kv_dtype),
                     kv_write_per_seq=model.kv_bytes_per_token(kv_dtype), weight_dtype=weight_dtype,
                     kv_dtype=kv_dtype, expert_imbalance=expert_imbalance, dispatch_dtype=dispatch_dtype, where=where,
                     totals=totals, balanced=balanced)


def prefill_step(model: Model, system: System, *, batch, prompt_tokens, cached_tokens=0, plan: Plan | None = None,
                 weight_dtype: str | None = None, kv_dtype: str | None = None, mode: str | None = None,
                 expert_imbalance: float = 1.0, dispatch_dtype: str | None = None,
                 profile: EfficiencyProfile | None = None, totals: bool = True) -> StepResult:
    """Prefill ``batch`` prompts of ``prompt_tokens`` new tokens after ``cached_tokens`` cached ones.

    KV traffic: the cached prefix is read once, the new tokens' KV written once (flash-attention
    tiling keeps re-reads on chip; omitted). Causal attention FLOPs are summed exactly. ``totals``: as
    ``decode_step``'s.
    """
    plan = plan or Plan()
    mode = mode or (profile.mode if profile is not None else "ideal")
    prof, where = _check_request(model, system, plan, mode=mode, profile=profile, expert_imbalance=expert_imbalance,
                                 dtypes=(weight_dtype, kv_dtype, dispatch_dtype))
    return _prefill(model, system, plan, prof, mode=mode, batch=batch, prompt_tokens=prompt_tokens,
                    cached_tokens=cached_tokens, weight_dtype=weight_dtype, kv_dtype=kv_dtype,
                    expert_imbalance=expert_imbalance, dispatch_dtype=dispatch_dtype, where=where, totals=totals)


def _prefill(model, system, plan, prof, *, mode, batch, prompt_tokens, cached_tokens, weight_dtype, kv_dtype,
             expert_imbalance, dispatch_dtype, where: Placement | None = None, totals: bool = True,
             balanced: bool = False) -> StepResult:
    batch = require_array("batch", batch, minimum=0, exclusive=True)
    prompt = require_array("context", prompt_tokens, minimum=0, exclusive=True)
    cached = require_array("cached_tokens", cached_tokens, minimum=0)
    new_kv = model.kv_bytes(cached + prompt, kv_dtype) - model.kv_bytes(cached, kv_dtype)
    return _assemble(model, system, plan, phase="prefill", mode=mode, profile=prof, batch=batch, context=cached,
                     tokens_per_seq=prompt, flops_attn_per_seq=model.prefill_attention_flops(prompt, cached),
                     kv_read_per_seq=model.kv_read_bytes(cached, kv_dtype, sparse=False), kv_write_per_seq=new_kv,
                     weight_dtype=weight_dtype, kv_dtype=kv_dtype, expert_imbalance=expert_imbalance,
                     dispatch_dtype=dispatch_dtype, where=where, totals=totals, balanced=balanced)


def decode_of(dep: Deployment, *, batch, context, balanced: bool = False) -> StepResult:
    """One decode step of a Deployment (``decode_step`` with its plan, formats and profile; the
    Deployment was validated once, at construction, so nothing is checked again but the sizes).
    ``balanced``: the batch spread evenly over the attention-DP groups (``_assemble``), for per-sequence sums."""
    return _decode(dep.model, dep.system, dep.plan, dep.profile, mode=dep.mode, batch=batch, context=context,
                   weight_dtype=dep.weight_dtype, kv_dtype=dep.kv_dtype, expert_imbalance=1.0, dispatch_dtype=None,
                   where=dep.placement, balanced=balanced)


def prefill_of(dep: Deployment, *, batch, prompt_tokens, cached_tokens=0, balanced: bool = False) -> StepResult:
    """One prefill step of a Deployment (``prefill_step`` with its plan, formats and profile; ``balanced``
    as in ``decode_of``)."""
    return _prefill(dep.model, dep.system, dep.plan, dep.profile, mode=dep.mode, batch=batch,
                    prompt_tokens=prompt_tokens, cached_tokens=cached_tokens, weight_dtype=dep.weight_dtype,
                    kv_dtype=dep.kv_dtype, expert_imbalance=1.0, dispatch_dtype=None, where=dep.placement,
                    balanced=balanced)
