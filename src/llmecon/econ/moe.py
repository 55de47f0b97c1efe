"""A MoE deployment summarised (SPEC A1, D14-D18): sparsity, touched experts, balance batch,
the expert-parallel all-to-all inside and across scale-up domains and where EP across domains
stops paying, pipeline-across-domains viability, pipeline parallelism for inference, and the
routed scaling law's view of what the expert count buys.

Every number comes from the same functions as the rest of llmecon (``inference.decode_step``,
``inference.comm_parts``, ``parallelism.pipeline_stage_time_ratio``, ``routed_scaling``); this
module only chooses what to evaluate. The EP sweep holds the batch *per chip* fixed (default:
the balance batch of an 8-chip group per chip, B*/8, capped so that KV fills at most half of a
chip's HBM at the context) and grows the expert-parallel group with attention
data-parallel (tp = 1, adp = ep), the layout of DeepSeek-V3's decode units: the power-of-two
divisors of the routed experts (and E itself), plus groups filling whole scale-up domains (D, 2D,
4D, ... chips) that E does not divide, with the fewest redundant expert copies that fill them
(EP72 and EP144 with 32 copies on NVL72 racks, as DeepSeek's EP144). Each step is priced on the
busiest expert group's chip (``step.expert_load``); rows say how many experts it reads per layer
against the mean group.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .batching import balance_batch
from ..dtypes import get_dtype
from ..errors import InfeasibleError, SpecError, require_number
from ..spec.hardware import System
from ..spec.efficiency import IDEAL, EfficiencyProfile
from ..step.inference import (ACTIVATION_DTYPE, comm_parts, decode_step, expert_load, memory_per_chip,
                              touched_expert_fraction)
from ..spec.model import Model
from ..spec.plan import Plan, feasible_plans, pipeline_stage_time_ratio
from .routed_scaling import effective_ratio, experts_for_ratio

TOUCHED_BATCHES = (1, 8, 32, 128, 512, 2048)
PP_STAGES = (1, 2, 4, 8)


@dataclass(frozen=True, kw_only=True)
class EpRow:
    """One expert-parallel group size at a fixed batch per chip (decode)."""

    ep: int
    redundant_experts: int    # expert copies beyond the routed experts (filling E + r = ep·slots per group)
    chips: int
    domains: int
    tier: str                 # where the all-to-all runs: "scale_up" or "two_tier"
    batch: float              # sequences in flight (batch per chip x chips)
    fits: bool
    weights_per_chip_bytes: float
    all_to_all_s: float       # dispatch + combine, all MoE layers, one decode iteration
    step_s: float
    bound: str
    chip_s_per_token: float
    busiest_experts: float    # expected distinct experts the busiest group reads per MoE layer per step
    mean_experts: float       # ... and the mean group
    expert_load_factor: float  # the busiest group's token-expert pairs over the mean group's

    @property
    def label(self) -> str:
        """"ep64", or "ep144+32" with redundant expert copies."""
        return f"ep{self.ep}" + (f"+{self.redundant_experts}" if self.redundant_experts else "")


@dataclass(frozen=True, kw_only=True)
class PpRow:
    """Pipeline parallelism for inference at a fixed EP (SPEC D18)."""

    pp: int
    chips: int
    weights_per_chip_bytes: float
    kv_per_chip_bytes: float
    hop_latency_s: float      # the pp-1 hops one token's activations make per iteration


@dataclass(frozen=True, kw_only=True)
class MoeSummary:
    model: str
    system: str
    fidelity: str               # "ideal" or "calibrated (<profile>)": how the EP sweep's steps were priced
    fidelity_fields: dict       # machine-readable fidelity (EfficiencyProfile.fidelity_fields)
    experts: int
    active_experts: int
    shared_experts: int
    total_params: float
    active_params: float
    sparsity: float
    expert_weight_fraction: float
    touched: dict                      # batch -> expected fraction of experts touched
    busiest_experts: dict              # batch -> experts the busiest group of pp_ep reads per MoE layer
    mean_experts: dict                 # batch -> ... and the mean group
    balance_batch: float               # SPEC A3 closed form (weights amortised, KV ignored)
    batch_per_chip: float
    context: float
    dispatch_dtype: str
    expert_imbalance: float
    ep_rows: tuple[EpRow, ...]
    ep_best: int | None                # cheapest EP per token among those that fit
    ep_limit_note: str
    scale_out_ratio: float | None      # BW_up / BW_out per chip
    min_layers_per_stage: int | None   # pipeline across domains viable from here (2kL >= ratio)
    stage_ratios: dict                 # layers per stage -> 2kL/(BW_up/BW_out)
    pp_ep: int
    pp_rows: tuple[PpRow, ...]
    law_label: str
    effective_params: float            # dense-equivalent size of the active parameters (scaling-law view)
    effective_ratio: float
    experts_for_10x: float | None       # None: the law saturates below 10x


def _ep_sizes(model: Model, limit: int, domain: int) -> list[tuple[int, int]]:
    """(ep, redundant experts): power-of-two divisors of E and E itself (no copies), and domain-filling
    sizes D·2^j that E does not divide, with the fewest copies r = -E mod ep filling them, up to E/4
    copies (DeepSeek-V3's largest share: 64 of 256 on EP320)."""
    e = model.moe.n_routed
    sizes = {(x, 0) for x in range(1, e + 1) if e % x == 0 and x <= limit and (x & (x - 1) == 0 or x == e)}
    x = domain
    while x <= limit:
        if e % x and 4 * (-e % x) <= e:
            sizes.add((x, -e % x))
        x *= 2
    return sorted(sizes)


def ep_sweep(model: Model, system: System, *, batch_per_chip: float, context: float, max_ep: int = 1024,
             weight_dtype=None, kv_dtype=None, dispatch_dtype=None, expert_imbalance: float = 1.0,
             profile: EfficiencyProfile = IDEAL) -> list[EpRow]:
    """Decode cost per token against the expert-parallel group size at a fixed batch per chip:
    bigger groups hold fewer experts per chip (less weight read, more room for KV) but move the
    all-to-all onto the scale-out network once the group outgrows a domain (SPEC D15). Steps are
    priced with ``profile`` (IDEAL: the roofline; a fitted profile: calibrated mode)."""
    links = profile.system(system)  # the links the step's communication runs on
    rows = []
    sizes = (Plan(tp=1, ep=ep, redundant_experts=copies) for ep, copies in _ep_sizes(model, max_ep, system.chips))
    for plan, where in feasible_plans(model, system, sizes):
        ep, copies = plan.ep, plan.redundant_experts
        batch = batch_per_chip * plan.chips
        kw = dict(weight_dtype=weight_dtype, kv_dtype=kv_dtype)
        r = decode_step(model, system, batch=batch, context=context, plan=plan, dispatch_dtype=dispatch_dtype,
                        expert_imbalance=expert_imbalance, profile=profile, **kw)
        c = comm_parts(model, links, plan, tokens=batch, dispatch_dtype=dispatch_dtype,
                       expert_imbalance=expert_imbalance, all_reduce=profile.all_reduce_algorithm,
                       ep_system=profile.system(system, "all_to_all"))
        load = expert_load(model, plan, tokens=batch, expert_imbalance=expert_imbalance)
        mean = plan.slots_per_rank(model) * float(touched_expert_fraction(
            experts=plan.expert_slots(model), active_experts=model.moe.top_k, tokens=batch))
        rows.append(EpRow(ep=ep, redundant_experts=copies, chips=plan.chips, domains=where.domains,
                          tier=c.tiers["ep"], batch=batch, fits=bool(r.fits),
                          weights_per_chip_bytes=float(memory_per_chip(model, plan, batch=0.0, context=0.0, **kw)),
                          all_to_all_s=float(c.ep_all_to_all_s), step_s=float(r.step_s), bound=str(r.bound),
                          chip_s_per_token=float(r.step_s) * plan.chips / batch,
                          busiest_experts=float(load.experts), mean_experts=mean,
                          expert_load_factor=float(load.load_factor)))
    return rows


def _ep_verdict(rows: list[EpRow], domain: int, hbm_bytes: float) -> tuple[int | None, str]:
    fitting = [r for r in rows if r.fits]
    if not fitting:
        if rows and min(r.weights_per_chip_bytes for r in rows) > hbm_bytes:
            return None, ("the weights alone overflow HBM at every EP size tried; raise max_ep (the largest EP "
                          "size tried) or use fp8/fp4 weights")
        return None, "no EP size fits this batch per chip and context in HBM; lower the batch or context"
    best = min(fitting, key=lambda r: (r.chip_s_per_token, r.ep))
    inside = [r for r in fitting if r.tier != "two_tier"]
    across = [r for r in fitting if r.tier == "two_tier"]
    if not across:
        return best.ep, f"every fitting EP size stays inside one {domain}-chip domain"
    if best.tier == "two_tier":
        if not inside:
            return best.ep, (f"only EP across domains fits; {best.label} is the cheapest per token "
                             f"({best.bound}-bound)")
        home = min(inside, key=lambda r: r.chip_s_per_token)
        saving = 1.0 - best.chip_s_per_token / home.chip_s_per_token
        tail = ("; beyond it the scale-out all-to-all costs more than the smaller weight share saves"
                if best.ep < max(r.ep for r in rows) else " (the largest size tried: it still pays there)")
        return best.ep, (f"EP across domains pays up to {best.label}: {saving:.0%} cheaper per token than the best "
                         f"in-domain size {home.label} ({best.bound}-bound){tail}")
    first = min(across, key=lambda r: r.ep)
    gap = first.chip_s_per_token / best.chip_s_per_token
    return best.ep, (f"EP stops paying at the domain edge: {first.label} (scale-out all-to-all) costs "
                     f"{gap:.2f}x per token of the best in-domain size {best.label}")


def moe_summary(model: Model, system: System, *, batch_per_chip: float | None = None, context: float = 4096.0,
                weight_dtype=None, kv_dtype=None, dispatch_dtype: str | None = "fp8",
                expert_imbalance: float = 1.0, max_ep: int = 1024, law=None,
                profile: EfficiencyProfile = IDEAL) -> MoeSummary:
    """Summarise a MoE model's deployment on ``system`` (module docstring). ``law`` is a
    ``routed_scaling`` RoutedLaw or PowerFit (default: the labelled lecture power fit); ``profile``
    prices the EP sweep's steps (IDEAL by default)."""
    from .routed_scaling import default_routed_law

    if not model.is_moe:
        raise SpecError(f"{model.name} is dense", field="model", fix="llmecon moe needs a mixture-of-experts model")
    require_number("context", context, minimum=0, hint="tokens of KV per sequence")
    law = law or default_routed_law()
    moe = model.moe
    p = model.params
    sparsity = p.total / p.active
    w_dtype = weight_dtype or model.expert_weight_dtype
    b_star = float(balance_batch(flops_per_byte=system.accelerator.flops_per_byte(w_dtype),
                                 bytes_per_param=get_dtype(w_dtype).bytes, sparsity=sparsity))
    if batch_per_chip is None:
        # the balance batch of an 8-chip EP group per chip (B*/ep), capped so KV takes <= half of HBM
        kv_room = 0.5 * system.accelerator.hbm_bytes / max(float(model.kv_bytes(context, kv_dtype)), 1.0)
        batch_per_chip = float(max(1, math.floor(min(b_star / 8.0, kv_room))))
    require_number("batch_per_chip", batch_per_chip, minimum=0, exclusive=True)
    rows = ep_sweep(model, system, batch_per_chip=batch_per_chip, context=context, max_ep=max_ep,
                    weight_dtype=weight_dtype, kv_dtype=kv_dtype, dispatch_dtype=dispatch_dtype,
                    expert_imbalance=expert_imbalance, profile=profile)
    ep_best, note = _ep_verdict(rows, system.chips, system.accelerator.hbm_bytes)
    ratio = None
    min_layers = None
    stage_ratios = {}
    if system.scale_up is not None and system.scale_out is not None:
        ratio = system.scale_out_ratio
        layers = np.arange(1, 5)
        stage_ratios = {int(n): float(v) for n, v in zip(layers, pipeline_stage_time_ratio(
            active_experts=moe.top_k, layers_per_stage=layers, bandwidth_ratio=ratio))}
        min_layers = math.ceil(ratio / (2.0 * moe.top_k))
    pp_ep = ep_best or max((r.ep for r in rows), default=1)
    copies = next((r.redundant_experts for r in rows if r.ep == pp_ep), 0)
    low = np.asarray(TOUCHED_BATCHES, dtype=float)
    busy_plan = Plan(tp=1, ep=pp_ep, redundant_experts=copies)
    busiest = expert_load(model, busy_plan, tokens=low, expert_imbalance=expert_imbalance).experts
    mean = busy_plan.slots_per_rank(model) * touched_expert_fraction(
        experts=busy_plan.expert_slots(model), active_experts=moe.top_k, tokens=low)
    pp_rows = _pp_rows(model, system, ep=pp_ep, copies=copies, micro_batch=batch_per_chip * pp_ep, context=context,
                       weight_dtype=weight_dtype, kv_dtype=kv_dtype)
    eff = float(effective_ratio(p.active, moe.n_routed, law))
    return MoeSummary(
        model=model.name, system=system.name, fidelity=profile.fidelity,
        fidelity_fields=profile.fidelity_fields, experts=moe.n_routed, active_experts=moe.top_k,
        shared_experts=moe.n_shared, total_params=p.total, active_params=p.active, sparsity=sparsity,
        expert_weight_fraction=model.weight_bytes(weight_dtype).routed_experts / model.weight_bytes(weight_dtype).total,
        touched={b: float(touched_expert_fraction(experts=moe.n_routed, active_experts=moe.top_k, tokens=b))
                 for b in TOUCHED_BATCHES},
        busiest_experts={b: float(v) for b, v in zip(TOUCHED_BATCHES, busiest)},
        mean_experts={b: float(v) for b, v in zip(TOUCHED_BATCHES, mean)},
        balance_batch=b_star, batch_per_chip=float(batch_per_chip), context=float(context),
        dispatch_dtype=dispatch_dtype or ACTIVATION_DTYPE, expert_imbalance=expert_imbalance,
        ep_rows=tuple(rows), ep_best=ep_best, ep_limit_note=note, scale_out_ratio=ratio,
        min_layers_per_stage=min_layers, stage_ratios=stage_ratios, pp_ep=pp_ep, pp_rows=tuple(pp_rows),
        law_label=getattr(law, "label", "routed law"), effective_params=p.active * eff, effective_ratio=eff,
        experts_for_10x=_experts_for_10x(law, p.active))


def _experts_for_10x(law, active_params: float) -> float | None:
    """Experts for a 10x dense-equivalent size; None when the law cannot reach 10x (a Clark law
    whose saturation E_max caps the gain below it)."""
    try:
        return float(experts_for_ratio(10.0, law, active_params=active_params))
    except InfeasibleError:
        return None


def _pp_rows(model, system, *, ep, copies, micro_batch, context, weight_dtype, kv_dtype) -> list[PpRow]:
    """SPEC D18: P stages with P micro-batches of ``micro_batch`` in flight. Weights per chip fall
    as 1/P; each chip holds the KV of its L/P layers for all P·micro_batch sequences, which is
    unchanged in P; one token's activations make P-1 hops (inside or across domains)."""
    rows = []
    stages = (Plan(tp=1, ep=ep, pp=pp, redundant_experts=copies) for pp in PP_STAGES if pp <= model.n_layers)
    for plan, _ in feasible_plans(model, system, stages):
        pp = plan.pp
        kw = dict(weight_dtype=weight_dtype, kv_dtype=kv_dtype)
        w = float(memory_per_chip(model, plan, batch=0.0, context=0.0, **kw))
        total = float(memory_per_chip(model, plan, batch=micro_batch * pp, context=context, **kw))
        hops = float(comm_parts(model, system, plan, tokens=1.0).pp_hops_s)
        rows.append(PpRow(pp=pp, chips=plan.chips, weights_per_chip_bytes=w, kv_per_chip_bytes=total - w,
                          hop_latency_s=hops))
    return rows
