"""Parallelism plan for serving one model: tensor (tp), attention data (adp), expert (ep),
pipeline (pp) and replica data (dp) degrees, and where each collective lands (SPEC D15-D19).

Layout (the one DeepSeek-V3, SGLang and vLLM use for MoE serving). One pipeline stage is
``width = tp·adp`` chips: attention runs as ``adp`` data-parallel groups of ``tp`` tensor-parallel
chips, each group serving batch/adp sequences and holding the non-expert weights sharded ``tp``
ways; the routed experts of the stage are spread over all ``width`` chips as ``ep`` expert groups
of ``width/ep`` tensor-parallel chips (expert TP). ``adp`` defaults to ``ep`` (pure EP with
attention data-parallel: each EP rank group holds the attention weights). pp splits the layers,
the slowest stage holding ceil(L/pp) of them; dp is whole replicas, which exchange nothing at
inference. One replica spans ``width·pp`` chips; a deployment ``chips·dp``.

Redundant experts (``redundant_experts`` r, DeepSeek-V3 report §3.4 and DeepSeek's inference-system
note: decode on EP144 holds 256 + 32 = 288 routed-expert copies, 2 per GPU; the report's EP320, 1 per
GPU, has 64 GPUs of redundant and shared experts): the stage holds E + r expert *slots*, (E + r)/ep
on each expert group, the r extra slots copies of experts chosen by the load balancer. ep need not
divide E, but must divide E + r; every slot costs its memory. Under uniform routing llmecon treats
the E + r slots as interchangeable: a token's k experts land on k distinct slots and a replicated
expert's tokens split evenly over its copies (what the balancer aims for); which experts are hot
and copied is not modelled (``expert_imbalance`` is the skew left after replication).

Placement over scale-up domains of n chips (``place``): ranks are numbered tp innermost, then
adp, then pp, then dp. Stages of width W ≤ n pack floor(n/W) per domain (the remainder idles:
EP64 on a 72-chip rack leaves 8 chips for other work); a stage wider than n uses m chips in each
of W/m domains, m the largest divisor of W that fits in one (EP128 on NVL72: 2 racks x 64), and
its tp groups must divide m (or be whole multiples of it) so that none straddles a boundary;
otherwise the plan is rejected. A collective inside a domain runs on
the scale-up link, one spanning domains is hierarchical (``collectives.two_tier_*``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import numpy as np

from ..errors import InfeasibleError, SpecError, require_whole
from .hardware import System
from .model import Model

DEGREES = ("tp", "ep", "pp", "dp", "adp")


@dataclass(frozen=True, kw_only=True)
class Plan:
    """Degrees of parallelism; ``adp`` None means "equal to ep"; ``redundant_experts`` extra routed-
    expert copies spread over the ep groups (see the module docstring)."""

    tp: int = 1
    ep: int = 1
    pp: int = 1
    dp: int = 1
    adp: int | None = None
    redundant_experts: int = 0

    def __post_init__(self) -> None:
        if self.adp is None:
            object.__setattr__(self, "adp", self.ep)
        for name in DEGREES:
            object.__setattr__(self, name, require_whole(name, getattr(self, name)))
        object.__setattr__(self, "redundant_experts", require_whole("redundant_experts", self.redundant_experts, 0))
        if self.redundant_experts and self.ep == 1:
            raise SpecError("redundant expert copies need expert parallelism: with ep 1 every expert is on every "
                            "chip already", field="redundant_experts", value=self.redundant_experts,
                            fix="set {ep} > 1 or {redundant_experts} 0")
        if self.width % self.ep:
            raise SpecError(f"expert groups must tile the stage's tp·adp = {self.width} chips", field="ep",
                            value=self.ep,
                            fix=f"use an ep dividing {self.width} or set {{adp}} so that tp·adp is a multiple of ep")

    @property
    def width(self) -> int:
        """Chips per pipeline stage: tp·adp."""
        return self.tp * self.adp

    @property
    def expert_tp(self) -> int:
        """Tensor-parallel ways of each routed expert: width/ep."""
        return self.width // self.ep

    @property
    def chips(self) -> int:
        """Chips of one replica: tp·adp·pp."""
        return self.width * self.pp

    @property
    def total_chips(self) -> int:
        """Chips of the whole deployment: chips·dp."""
        return self.chips * self.dp

    def label(self) -> str:
        parts = [f"tp{self.tp}", f"ep{self.ep}", f"pp{self.pp}"]
        if self.adp != self.ep:
            parts.append(f"adp{self.adp}")
        if self.dp > 1:
            parts.append(f"dp{self.dp}")
        if self.redundant_experts:
            parts.append(f"r{self.redundant_experts}")
        return "·".join(parts)

    def expert_slots(self, model: Model) -> int:
        """Routed-expert slots of one stage (per MoE layer): E + redundant_experts (0 for a dense model)."""
        return model.moe.n_routed + self.redundant_experts if model.is_moe else 0

    def slots_per_rank(self, model: Model) -> int:
        """Routed-expert slots each expert group holds per MoE layer: (E + r)/ep (after ``validate``)."""
        return self.expert_slots(model) // self.ep

    def as_dict(self) -> dict:
        """The plan as every ``--json`` object and web response shows it (docs/json.md): the degrees,
        the redundant expert copies, the derived ``expert_tp``, ``chips`` (one replica), ``total_chips``
        (chips·dp) and the label."""
        return {"tp": self.tp, "ep": self.ep, "pp": self.pp, "dp": self.dp, "adp": self.adp,
                "redundant_experts": self.redundant_experts, "expert_tp": self.expert_tp, "chips": self.chips,
                "total_chips": self.total_chips, "label": self.label()}

    def stage_fraction(self, model: Model) -> float:
        """Share of the layers on the slowest pipeline stage: ceil(L/pp)/L."""
        return math.ceil(model.n_layers / self.pp) / model.n_layers

    def kv_shards(self, model: Model) -> int:
        """Ways the KV cache of one sequence splits over tp: min(KV heads, tp); MLA's latent is
        shared by all heads, so it is replicated on every tp rank (1)."""
        if model.attention.kind == "mla":
            return 1
        return min(model.attention.n_kv_heads, self.tp)

    def _slots_problem(self, model: Model) -> SpecError | None:
        """ep groups must hold equal shares of the E + r expert slots, and a group never holds two
        copies of one expert (so r <= E·(ep - 1))."""
        e, r = model.moe.n_routed, self.redundant_experts
        if (e + r) % self.ep:
            fill = -e % self.ep
            if r == 0:
                return SpecError(f"{e} routed experts do not divide evenly over {self.ep} expert groups", field="ep",
                                 value=self.ep, fix=f"use a divisor of {e}, or add {{redundant_experts}} {fill} "
                                 f"(copies filling {e + fill} slots, {(e + fill) // self.ep} per group)")
            return SpecError(f"{e} routed experts + {r} copies = {e + r} slots do not divide evenly over {self.ep} "
                             "expert groups", field="redundant_experts", value=r,
                             fix=f"use {{redundant_experts}} {fill} (or {fill} plus a multiple of {self.ep})")
        if r > e * (self.ep - 1):
            return SpecError(f"more copies than {self.ep} expert groups can hold without one group holding an "
                             f"expert twice ({e}·({self.ep} - 1) = {e * (self.ep - 1)})", field="redundant_experts",
                             value=r, fix=f"use at most {e * (self.ep - 1)}")
        return None

    def _model_problem(self, model: Model) -> SpecError | None:
        """Why ``model`` cannot be split by this plan (heads, KV heads, experts, layers), as data; None if it can."""
        a = model.attention
        if a.n_heads % self.tp:
            return SpecError(f"{model.name} has {a.n_heads} attention heads, not divisible by {self.tp}",
                             field="tp", value=self.tp, fix=f"use a divisor of {a.n_heads}")
        if a.kind != "mla":
            k = a.n_kv_heads
            if (k >= self.tp and k % self.tp) or (k < self.tp and self.tp % k):
                return SpecError(f"{model.name} has {k} KV heads", field="tp", value=self.tp,
                                 fix="tp must divide it or be a multiple of it")
        if self.redundant_experts and not model.is_moe:
            return SpecError(f"{model.name} is dense", field="redundant_experts", value=self.redundant_experts,
                             fix="redundant experts need a MoE model")
        if self.ep > 1:
            if not model.is_moe:
                return SpecError(f"{model.name} is dense", field="ep", value=self.ep,
                                 fix="expert parallelism needs a MoE model (use {tp})")
            problem = self._slots_problem(model)
            if problem is not None:
                return problem
        if self.pp > model.n_layers:
            return SpecError(f"more stages than the {model.n_layers} layers of {model.name}", field="pp",
                             value=self.pp)
        return None

    def check(self, model: Model, system: System) -> Placement | SpecError | InfeasibleError:
        """The plan's ``Placement`` on ``system`` when ``model`` can run under it, else the reason as
        data (errors as data: what ``validate`` raises, built but not raised, so a search can skip
        the plan without an exception; ``feasible_plans``)."""
        problem = self._model_problem(model)
        return problem if problem is not None else _place(self, system)

    def validate(self, model: Model, system: System) -> Placement:
        """Raise SpecError for a plan the model cannot be split by or the domains cannot hold
        without straddling, InfeasibleError when it needs a network the system does not have;
        return the plan's ``Placement`` on ``system`` (``place``), which the check computes anyway.
        A plan that passed is remembered by the identity of the three (frozen) objects: a loop over
        batches or contexts through the Python API validates and places it once (issue 36)."""
        key = (id(self), id(model), id(system))
        hit = _VALIDATED.get(key)
        if hit is not None and hit[0] is self and hit[1] is model and hit[2] is system:
            return hit[3]
        where = self.check(model, system)
        if isinstance(where, Placement):
            if len(_VALIDATED) >= _VALIDATED_MAX:
                _VALIDATED.clear()
            _VALIDATED[key] = (self, model, system, where)  # holds the objects, so no id is reused meanwhile
            return where
        raise where


_VALIDATED: dict = {}  # (id(plan), id(model), id(system)) -> (plan, model, system, placement)
_VALIDATED_MAX = 256


def feasible_plans(model: Model, system: System, plans: Iterable[Plan]) -> Iterator[tuple[Plan, Placement]]:
    """(plan, placement) for each of ``plans`` (in their order) that ``model`` can run under on ``system``:
    the plans ``Plan.validate`` accepts, found without raising an exception per rejected plan (the
    searches ask this of tens to hundreds of candidates; ``Plan.check`` says why one is rejected)."""
    for plan in plans:
        where = plan.check(model, system)
        if isinstance(where, Placement):
            yield plan, where


@dataclass(frozen=True, kw_only=True)
class Placement:
    """Where one replica of a plan sits on a system's scale-up domains."""

    domain_chips: int
    chips_per_domain: int   # chips of one stage in each domain it touches (m)
    domains: int            # scale-up domains one replica touches
    tp_tier: str            # "none", "scale_up", "two_tier" (a tp group spanning domains)
    ep_tier: str            # "none", "scale_up", "two_tier" (the stage's all-to-all spans domains)
    pp_hops_up: int         # pipeline boundaries inside a domain
    pp_hops_out: int        # pipeline boundaries crossing domains (scale-out)

    @property
    def tiers(self) -> dict:
        hops = "none" if self.pp_hops_up + self.pp_hops_out == 0 else (
            "scale_out" if self.pp_hops_up == 0 else "scale_up" if self.pp_hops_out == 0 else "both")
        return {"tp": self.tp_tier, "ep": self.ep_tier, "pp": hops}


def chips_per_domain(width: int, domain: int) -> int:
    """m: a stage of ``width`` chips uses m chips in each of width/m domains, m the largest
    divisor of the width that fits in one domain (EP128 on 72-chip racks: 2 x 64, 8 idle each)."""
    if width <= domain:
        return width
    return max(m for m in range(1, domain + 1) if width % m == 0)


def place(plan: Plan, system: System) -> Placement:
    """Placement of one replica (module docstring); SpecError for a tp group that would straddle
    a domain boundary, InfeasibleError when domains must be crossed and there is no scale-out."""
    where = _place(plan, system)
    if isinstance(where, Placement):
        return where
    raise where


def _place(plan: Plan, system: System) -> Placement | SpecError | InfeasibleError:
    """``place``'s placement, or its error as data (not raised)."""
    d = system.chips
    w = plan.width
    m = chips_per_domain(w, d)
    if w <= d:  # stages pack floor(d/w) per domain; the remainder of a domain idles
        tp_tier = "scale_up" if plan.tp > 1 else "none"
        stage_tier = "scale_up" if w > 1 else "none"
        domains = math.ceil(plan.pp / (d // w))
        hops_out = domains - 1
    else:
        stage_tier = "two_tier"
        if plan.tp <= m and m % plan.tp == 0:
            tp_tier = "scale_up" if plan.tp > 1 else "none"
        elif plan.tp > m and plan.tp % m == 0:
            tp_tier = "two_tier"
        else:
            return SpecError(f"a stage of tp·adp = {w} chips uses {m} chips in each of {w // m} {d}-chip domains, "
                             f"so tensor-parallel groups of {plan.tp} would straddle a boundary", field="tp",
                             value=plan.tp, fix=f"use a tp dividing {m}")
        domains = plan.pp * (w // m)
        hops_out = plan.pp - 1
    # tokens live on their attention group; with adp = 1 every chip of the stage already has them
    # all after the attention all-reduce, so experts need no dispatch (the combine is that all-reduce)
    ep_tier = stage_tier if plan.adp > 1 else "none"
    if domains > 1 and system.scale_out is None:
        return InfeasibleError(f"plan {plan.label()} needs {plan.chips} chips, more than {system.name}'s "
                               f"{d}-chip scale-up domain, and {system.name} has no scale-out link; lower "
                               "tp/adp/ep/pp or pick a larger system (llmecon catalog systems)")
    return Placement(domain_chips=d, chips_per_domain=m, domains=domains, tp_tier=tp_tier, ep_tier=ep_tier,
                     pp_hops_up=plan.pp - 1 - hops_out, pp_hops_out=hops_out)


def pipeline_stage_time_ratio(*, active_experts, layers_per_stage, bandwidth_ratio):
    """Scale-up over scale-out time per pipeline stage across racks (SPEC D17).

    Per token and MoE layer, expert parallelism inside a rack moves ~2·k·d_model·bytes at
    scale-up bandwidth (dispatch + combine); handing the stage's activations to the next rack moves
    d_model·bytes once at scale-out bandwidth. Their ratio is 2·k·L_stage / (BW_up/BW_out): >= 1 means
    the scale-out hop hides behind the stage's own communication (k = 8, one layer, ratio 9:
    16/9 -> viable; ratio 18: 16/18 -> not, take 2 layers per stage). Omits latency terms and
    the 1/EP share of tokens whose experts are local (which would lower the scale-up side).
    """
    k = np.asarray(active_experts, dtype=float)
    layers = np.asarray(layers_per_stage, dtype=float)
    ratio = np.asarray(bandwidth_ratio, dtype=float)
    if np.any(k <= 0) or np.any(layers <= 0) or np.any(ratio <= 0):
        raise SpecError("active experts, layers per stage and the bandwidth ratio must all be > 0")
    return 2.0 * k * layers / ratio


#: degrees a plan label may name, in the order ``Plan.label`` writes them
LABEL_DEGREES = ("tp", "ep", "pp", "adp", "dp", "r")
_LABEL_FIELDS = {"r": "redundant_experts"}  # label part -> Plan field where they differ


def parse_label(text: str, *, field: str = "plan") -> Plan:
    """The plan ``Plan.label`` writes, read back: ``tp1·ep32·pp1·adp32`` (``,`` may stand for ``·``;
    ``pp``, ``adp`` and ``dp`` may be omitted and then default as in ``Plan``: pp 1, adp = ep, dp 1;
    ``tp`` and ``ep`` are required, so that ``tp8`` alone cannot silently mean something else).
    ``r`` (redundant expert copies, as ``label`` writes them: ``tp1·ep48·pp1·adp48·r32``) defaults to 0.
    ``parse_label(p.label()) == p`` for every plan. Errors name ``field``."""
    fix = "write the CLI's plan label, e.g. tp8·ep8·pp1·adp1 (',' may stand for '·')"
    raw = (text or "").strip()
    if not raw:
        raise SpecError("empty plan label", field=field, value=text, fix=fix)
    degrees: dict[str, int] = {}
    for part in raw.replace(",", "·").split("·"):
        part = part.strip().lower()
        name = part.rstrip("0123456789")
        digits = part[len(name):]
        if name not in LABEL_DEGREES or not digits:
            from ..errors import did_you_mean

            raise SpecError(f"cannot read {part!r}: each part is a degree ({', '.join(LABEL_DEGREES)}) followed by "
                            f"a whole number{did_you_mean(name, LABEL_DEGREES) if name else ''}",
                            field=field, value=text, fix=fix)
        if name in degrees:
            raise SpecError(f"{name} is given twice", field=field, value=text, fix=fix)
        degrees[name] = int(digits)
        if degrees[name] < (0 if name == "r" else 1):
            raise SpecError(f"{name} must be >= 1", field=field, value=text, fix=fix)
    missing = [d for d in ("tp", "ep") if d not in degrees]
    if missing:
        raise SpecError(f"the label lacks {' and '.join(missing)}", field=field, value=text, fix=fix)
    try:
        return Plan(**{_LABEL_FIELDS.get(k, k): v for k, v in degrees.items()})
    except SpecError as exc:
        raise SpecError(exc.rule, field=field, value=text, fix=exc.fix) from None
