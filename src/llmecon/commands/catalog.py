"""Commands on the catalogue: ``model`` (a model's derived facts) and the ``catalog`` listings (accelerators,
systems, models, memory tiers, published training runs), each a JSON-ready dict the front-ends print or
render (report/analyze.py, report/context.py: the rows)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from .args import DeploymentArgs, arg, inherit


@dataclass(frozen=True)
class ModelRequest:
    name: str = arg(None, "Catalogue name or path to a config.json.", required=True, positional=True, web=False)
    kv_dtype: Optional[str] = inherit(DeploymentArgs, "kv_dtype")


@dataclass(frozen=True)
class ModelOutcome:
    model: Any  # spec.model.Model
    view: dict  # report.analyze.model_dict


def model(req: ModelRequest) -> ModelOutcome:
    """The model named (or a config.json path) and its derived facts at ``kv_dtype`` (checked first)."""
    from ..catalog.models import get_model
    from ..dtypes import get_dtype
    from ..report.analyze import model_dict

    m = get_model(req.name)
    if req.kv_dtype is not None:
        get_dtype(req.kv_dtype)
    return ModelOutcome(m, model_dict(m, req.kv_dtype))


def accelerators() -> dict:
    """``catalog accelerators``: one row per chip (``report.analyze.accelerator_row``)."""
    from ..catalog.hardware import accelerators as chips
    from ..report.analyze import accelerator_row

    return {"accelerators": [accelerator_row(a) for a in chips().values()]}


def systems() -> dict:
    """``catalog systems``: one row per system (``report.analyze.system_row``)."""
    from ..catalog.hardware import systems as catalogued
    from ..report.analyze import system_row

    return {"systems": [system_row(s) for s in catalogued().values()]}


def models() -> dict:
    """``catalog models``: each shipped model's size, attention, weight format and KV bytes per token."""
    from ..catalog.models import get_model, model_names

    rows = []
    for name in model_names():
        m = get_model(name)
        rows.append({"name": name, "total_params": m.params.total, "active_params": m.params.active,
                     "attention": m.attention_label, "is_moe": m.is_moe, "weight_dtype": m.weight_dtype,
                     "kv_bytes_per_token": m.kv_bytes_per_token()})
    return {"models": rows}


def tiers(system: str | None = None) -> dict:
    """``catalog tiers``: the memory tiers of one system (or all) and the storage devices."""
    from ..catalog.hardware import get_system, storage_devices, systems as catalogued
    from ..report.context import tier_row

    chosen = [get_system(system)] if system else list(catalogued().values())
    return {"systems": {s.name: [tier_row(t) for t in s.memory_tiers] for s in chosen},
            "devices": {name: tier_row(t) for name, t in storage_devices().items()}}


def training_runs() -> dict:
    """``catalog training-runs``: the published runs ``train --preset`` reproduces."""
    from ..catalog.training_runs import training_runs as runs

    return {"training_runs": [{"name": r.name, "description": r.description, "metric": r.metric,
                               "published": r.value, "source": r.source, "status": r.status, "notes": r.notes,
                               "options": dict(r.options)} for r in runs().values()]}
