"""The ``moe`` command: a mixture-of-experts deployment on a rack system (SPEC A1, A3, D14-D18) --
sparsity, expert parallelism inside and across scale-up domains, pipelines, and the routed scaling law's
view of the expert count (``econ.moe.moe_summary``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from ..errors import LlmeconError, SpecError
from .args import DeploymentArgs, arg, inherit


@dataclass(frozen=True)
class MoeRequest:
    model: str = inherit(DeploymentArgs, "model")
    system: str = inherit(DeploymentArgs, "system")
    context: float = arg(4096, "Tokens of KV per sequence.", flags=("--context", "-L"))
    batch_per_chip: Optional[float] = arg(None, "Sequences decoding per chip in the EP sweep (default: B*/8, capped "
                                          "so KV fills at most half of HBM).")
    weight_dtype: Optional[str] = inherit(DeploymentArgs, "weight_dtype")
    kv_dtype: Optional[str] = inherit(DeploymentArgs, "kv_dtype")
    dispatch_dtype: str = arg("fp8", "Format of the all-to-all dispatch (fp8 as DeepSeek-V3, or bf16); the combine "
                              "is bf16.")
    expert_imbalance: float = arg(1.0, "Routing skew: the busiest expert group's tokens over what uniform routing "
                                  "gives it (>= 1; 1 = uniform; scales its reads, FLOPs and all-to-all).")
    max_ep: int = arg(1024, "Largest expert-parallel group to sweep.")
    law: Optional[str] = arg(None, "Routed scaling-law coefficient file (TOML, docs/routed_scaling.md); default: "
                             "the lecture's one-parameter power fit.")
    mode: str = inherit(DeploymentArgs, "mode")
    profile: Optional[str] = inherit(DeploymentArgs, "profile")
    engine: Optional[str] = inherit(DeploymentArgs, "engine")


@dataclass(frozen=True)
class MoeOutcome:
    summary: Any  # econ.moe.MoeSummary
    model: Any
    system: Any
    law: Any
    hundred_expert_ratio: float

    def to_dict(self, law_file: str | None) -> dict:
        from ..report.moe import moe_dict

        return moe_dict(self.summary, law_source=getattr(self.law, "source", ""), law_file=law_file,
                        hundred_expert_ratio=self.hundred_expert_ratio)


def _named(option: str, getter, name: str):
    """``getter(name)``, its error prefixed with the option."""
    try:
        return getter(name)
    except LlmeconError as exc:
        raise SpecError(f"{option}: {exc}") from None


def check(req: MoeRequest) -> None:
    """The numbers and formats, before any work."""
    from ..dtypes import get_dtype

    if req.max_ep < 1:
        raise SpecError(f"--max-ep {req.max_ep}: must be >= 1 (the largest expert-parallel group to sweep)")
    for option, name in (("--weight-dtype", req.weight_dtype), ("--kv-dtype", req.kv_dtype),
                         ("--dispatch-dtype", req.dispatch_dtype)):
        if name is not None:
            _named(option, get_dtype, name)


def _law(path: str | None):
    from pathlib import Path

    from ..econ.routed_scaling import default_routed_law, load_routed_law

    return default_routed_law() if path is None else _named("--law", load_routed_law, Path(path))


def moe(req: MoeRequest) -> MoeOutcome:
    """``check`` first (the front-end checks its output paths after it), then the summary."""
    from ..catalog.hardware import get_system
    from ..catalog.models import get_model
    from ..econ.moe import moe_summary
    from ..econ.routed_scaling import effective_ratio
    from ..resolve import fidelity
    from ..spec.efficiency import IDEAL

    the_law = _law(req.law)
    m, s = _named("--model", get_model, req.model), _named("--system", get_system, req.system)
    if m.max_context and req.context > m.max_context:  # as context, simulate and predict: no silent extrapolation
        raise SpecError(f"longer than {m.name}'s {m.max_context:,}-token context (max_position_embeddings)",
                        field="context", value=req.context, fix=f"keep it <= {m.max_context:,}")
    summary = moe_summary(m, s, batch_per_chip=req.batch_per_chip, context=req.context, weight_dtype=req.weight_dtype,
                          kv_dtype=req.kv_dtype, dispatch_dtype=req.dispatch_dtype,
                          expert_imbalance=req.expert_imbalance, max_ep=req.max_ep, law=the_law,
                          profile=fidelity(req.mode, req.profile, s, req.engine)[1] or IDEAL)
    return MoeOutcome(summary, m, s, the_law, float(effective_ratio(m.params.active, 100, the_law)))
