"""The Deployment: a model on a system under a plan, with weight and KV formats and an efficiency
profile (and, optionally, speculative decoding: ``spec.speculation.Speculation``), validated and placed
once and then passed to every analysis.

``profile`` is an ``EfficiencyProfile`` object: ``IDEAL`` (datasheet peaks, perfect overlap, the
roofline lower bound) by default, or a fitted profile (calibrated mode). There is no separate mode
string: ``mode`` and ``fidelity`` are read off the profile, and every analysis that takes a
Deployment — step, batch, context, cost, cache, plan, simulate, sweep, moe, analyze — prices
with it. Names become a Deployment in ``resolve.deployment`` (the one place defaults are chosen).

Also here, because they are facts of the placement and not of one step: the bytes each chip of
the largest pipeline stage holds (``memory_per_chip``, ``kv_per_chip``). Weights: a stage holds the
share ``phi`` of the layers; non-expert weights are split over tp, routed experts (with any
redundant copies) over the stage's tp·adp chips. KV: a sequence lives on one attention-DP group (its
KV split over that group's KV shards), so the critical chip holds the busiest group's sequences
(``busiest_group_sequences``): one whole sequence when there are fewer sequences than groups.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from ..dtypes import get_dtype
from ..errors import LlmeconError, SpecError, with_field
from .efficiency import IDEAL, EfficiencyProfile
from .hardware import System
from .model import Model
from .plan import Placement, Plan, place
from .speculation import Speculation


def busiest_group_sequences(batch, adp):
    """Sequences on the busiest of ``adp`` attention-DP groups: a sequence's KV and attention live on one
    group (SGLang/DeepSeek DP attention, DeepSeek-V3 report sec. 3.4), so with fewer sequences than
    groups the busiest holds one whole sequence, not batch/adp of one; with at least adp sequences the
    scheduler's balance is taken as even (batch/adp, the mean; whole-sequence rounding, up to one
    sequence more on some groups, is omitted). max(batch/adp, min(batch, 1)): a fractional share below
    one sequence (batch/pp micro-batches) is kept as it is; adp 1 gives ``batch``. Examples: batch 1,
    adp 8 -> 1 (not 1/8); batch 16, adp 8 -> 2. Broadcasts over numpy ``batch`` and ``adp``."""
    if isinstance(batch, (int, float)) and isinstance(adp, (int, float)):  # the one-point call's fast path
        return max(batch / adp, min(float(batch), 1.0))
    b = np.asarray(batch, dtype=float)
    return np.maximum(b / adp, np.minimum(b, 1.0))


def memory_per_chip(model: Model, plan: Plan, *, batch, context, weight_dtype=None, kv_dtype=None):
    """Bytes held per chip on the largest stage: weights + KV of every sequence at ``context``. The
    routed experts count every slot the chip holds, redundant copies included: (E + r)/E of the
    stage's experts over its tp·adp chips."""
    phi = plan.stage_fraction(model)
    w = model.weight_bytes(weight_dtype)
    slots = plan.expert_slots(model) / model.moe.n_routed if model.is_moe else 1.0
    weights = phi * (w.non_expert / plan.tp + slots * w.routed_experts / plan.width)
    return weights + kv_per_chip(model, plan, batch=batch, context=context, kv_dtype=kv_dtype)


def kv_per_chip(model: Model, plan: Plan, *, batch, context, kv_dtype=None):
    """KV bytes held per chip on the largest stage by ``batch`` sequences at ``context`` (the KV
    term of ``memory_per_chip``, computed on its own: no cancellation against the weights): the
    busiest attention-DP group's sequences (``busiest_group_sequences``), each split over the KV
    shards of its group."""
    phi = plan.stage_fraction(model)
    return (phi * busiest_group_sequences(batch, plan.adp) * model.kv_bytes(context, kv_dtype)
            / plan.kv_shards(model))


@dataclass(frozen=True, kw_only=True)
class Deployment:
    """A model on a system under a plan, with weight and KV formats (None = the model's own) and an
    efficiency profile (``IDEAL`` by default; None is read as ``IDEAL``).

    Construction validates the formats and the plan against the model and the system (SpecError
    naming the field), so analyses do not check them again; the placement and the weights per chip
    are computed once, on first use."""

    model: Model
    system: System
    plan: Plan
    weight_dtype: str | None = None
    kv_dtype: str | None = None
    profile: EfficiencyProfile = IDEAL
    speculation: Speculation | None = None

    def __post_init__(self) -> None:
        if self.speculation is not None and not isinstance(self.speculation, Speculation):
            raise SpecError(f"expected a Speculation, got {type(self.speculation).__name__}", field="speculation",
                            fix="build one with llmecon.spec.speculation.speculation_for")
        if self.profile is None:
            object.__setattr__(self, "profile", IDEAL)
        if not isinstance(self.profile, EfficiencyProfile):
            raise SpecError(f"expected an EfficiencyProfile, got {type(self.profile).__name__}", field="profile",
                            fix="load one with llmecon.catalog.efficiency.load_profile")
        for field in ("weight_dtype", "kv_dtype"):
            name = getattr(self, field)
            if name is not None:
                try:
                    get_dtype(name)
                except LlmeconError as exc:
                    raise with_field(exc, field) from None
        self.plan.validate(self.model, self.system)

    @property
    def mode(self) -> str:
        """'ideal' (the IDEAL profile) or 'calibrated' (any other profile)."""
        return self.profile.mode

    @property
    def fidelity(self) -> str:
        """'ideal' or 'calibrated (<profile name>)': what every report says it used."""
        return self.profile.fidelity

    @property
    def fidelity_fields(self) -> dict:
        """The profile's machine-readable fidelity for JSON output (``EfficiencyProfile.fidelity_fields``)."""
        return self.profile.fidelity_fields

    @property
    def weight_format(self) -> str:
        """The weight format in use (the model's own when none was given)."""
        return self.weight_dtype or self.model.weight_dtype

    @property
    def kv_format(self) -> str:
        """The KV-cache format in use (the model's own when none was given)."""
        return self.kv_dtype or self.model.kv_dtype

    @functools.cached_property
    def placement(self) -> Placement:
        """Where one replica sits on the system's scale-up domains (``spec.plan.place``)."""
        return place(self.plan, self.system)

    @functools.cached_property
    def weights_per_chip_bytes(self) -> float:
        """Weight bytes each chip of the largest stage holds."""
        return float(memory_per_chip(self.model, self.plan, batch=0.0, context=0.0, weight_dtype=self.weight_dtype,
                                     kv_dtype=self.kv_dtype))

    def kv_per_sequence_per_chip_bytes(self, context):
        """KV bytes one sequence at ``context`` adds, on average over the attention-DP groups, to each
        chip of the largest stage: the marginal cost per sequence once every group is full (batch a
        multiple of adp), for batch and capacity sums. One sequence alone sits on one group and holds
        ``adp`` times this on its chips (``kv_per_chip``, ``kv_per_sequence_on_group_bytes``)."""
        return self.kv_per_sequence_on_group_bytes(context) / self.plan.adp

    def kv_per_sequence_on_group_bytes(self, context):
        """KV bytes one sequence at ``context`` puts on each chip of the attention-DP group holding it."""
        return kv_per_chip(self.model, self.plan, batch=1.0, context=context, kv_dtype=self.kv_dtype)

    def memory_per_chip_bytes(self, *, batch, context):
        """Bytes each chip of the largest stage holds: weights + the KV of ``batch`` sequences."""
        return self.weights_per_chip_bytes + kv_per_chip(self.model, self.plan, batch=batch, context=context,
                                                         kv_dtype=self.kv_dtype)
