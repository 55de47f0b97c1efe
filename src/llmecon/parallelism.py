"""Parallelism plan for one model replica: tensor (tp), expert (ep) and pipeline (pp) degrees.

Layout assumed (the one DeepSeek-V3 and vLLM/SGLang use for MoE serving): tp shards every
matrix; ep shards the routed experts and runs attention data-parallel (each EP rank holds the
non-expert weights and serves batch/ep sequences); pp splits layers into stages, the slowest
stage holding ceil(layers/pp) of them. The replica spans tp·ep·pp chips of one scale-up domain
(multi-domain placement is the planner's job).
"""

from __future__ import annotations

import math

import numpy as np
from dataclasses import dataclass

from .errors import InfeasibleError, SpecError
from .hardware import System
from .model import Model


@dataclass(frozen=True, kw_only=True)
class Plan:
    """Degrees of parallelism; chips = tp·ep·pp."""

    tp: int = 1
    ep: int = 1
    pp: int = 1

    def __post_init__(self) -> None:
        for name in ("tp", "ep", "pp"):
            value = getattr(self, name)
            if not (isinstance(value, int) and not isinstance(value, bool) and value >= 1):
                raise SpecError(f"--{name}: must be a whole number >= 1, got {value!r}")

    @property
    def chips(self) -> int:
        return self.tp * self.ep * self.pp

    def label(self) -> str:
        return f"tp{self.tp}·ep{self.ep}·pp{self.pp}"

    def stage_fraction(self, model: Model) -> float:
        """Share of the layers on the slowest pipeline stage: ceil(L/pp)/L."""
        return math.ceil(model.n_layers / self.pp) / model.n_layers

    def kv_shards(self, model: Model) -> int:
        """Ways the KV cache of one sequence splits over tp: min(KV heads, tp); MLA's latent is
        shared by all heads, so it is replicated on every tp rank (1)."""
        if model.attention.kind == "mla":
            return 1
        return min(model.attention.n_kv_heads, self.tp)

    def validate(self, model: Model, system: System) -> None:
        """Raise SpecError for a plan the model cannot be split by, InfeasibleError if too big."""
        a = model.attention
        if a.n_heads % self.tp:
            raise SpecError(f"--tp {self.tp}: {model.name} has {a.n_heads} attention heads, not divisible by "
                            f"{self.tp}; use a divisor of {a.n_heads}")
        if a.kind != "mla":
            k = a.n_kv_heads
            if (k >= self.tp and k % self.tp) or (k < self.tp and self.tp % k):
                raise SpecError(f"--tp {self.tp}: {model.name} has {k} KV heads; tp must divide it or be a "
                                "multiple of it")
        if self.ep > 1:
            if not model.is_moe:
                raise SpecError(f"--ep {self.ep}: {model.name} is dense; expert parallelism needs a MoE model "
                                "(use --tp)")
            if model.moe.n_routed % self.ep:
                raise SpecError(f"--ep {self.ep}: {model.moe.n_routed} routed experts do not divide evenly; use a "
                                f"divisor of {model.moe.n_routed}")
        if self.pp > model.n_layers:
            raise SpecError(f"--pp {self.pp}: more stages than the {model.n_layers} layers of {model.name}")
        if self.chips > system.chips:
            raise InfeasibleError(f"plan {self.label()} needs {self.chips} chips but {system.name}'s scale-up "
                                  f"domain has {system.chips}; lower tp/ep/pp or pick a larger system "
                                  "(llmecon catalog systems)")


def pipeline_stage_time_ratio(*, active_experts, layers_per_stage, bandwidth_ratio):
    """Scale-up over scale-out time per pipeline stage across racks (SPEC D17).

    Per token and MoE layer, expert parallelism inside a rack moves ~2·k·D·bytes at scale-up
    bandwidth (dispatch + combine); handing the stage's activations to the next rack moves
    D·bytes once at scale-out bandwidth. Their ratio is 2·k·L_stage / (BW_up/BW_out): >= 1 means
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
