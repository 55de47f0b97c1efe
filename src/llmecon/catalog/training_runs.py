"""Published training runs (``catalog/training_runs.toml``): the layout a paper gives and the figure it
reports, which ``llmecon train`` runs by name (its preset option) and sets beside the prediction. Keys are strict: an
unknown or missing one is an error with "did you mean"; values are checked again by ``TrainPlan`` and
``train_step`` when the run is priced."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from importlib import resources
from types import MappingProxyType
from typing import Mapping

from ..errors import CatalogError, unknown_name
from ._strict import check_keys, read_toml, text

WHOLE = ("tp", "pp", "dp", "ep", "cp", "chunks", "zero", "pp_trim", "ep_node_limit", "micro_batch", "seq_len")
NUMBER = ("global_batch_tokens", "comm_sm_share", "tokens", "reserve_gb")
FLAGS = ("grad_fp32", "bf16_moments", "recompute_norms", "recompute_mla_up", "fp8_activations", "mtp",
         "fp8_dispatch", "eager_attention", "dropout")
NAMES = ("model", "system", "schedule", "recompute", "precision", "ema")
META = ("description", "source", "status", "notes")
PUBLISHED = {"published_tflops_per_gpu": "tflops_per_gpu", "published_gpu_hours": "gpu_hours"}
STATUSES = ("verified", "recalled")


@dataclass(frozen=True, kw_only=True)
class TrainingRun:
    """One published run: ``options`` are ``llmecon train`` options by parameter name; ``metric`` is the
    key of the report the published ``value`` compares with (``tflops_per_gpu`` or ``gpu_hours``)."""

    name: str
    description: str
    source: str
    status: str
    notes: str
    options: Mapping[str, object]
    metric: str
    value: float


def parse_training_run(name: str, entry: Mapping, where: str) -> TrainingRun:
    """One ``[name]`` table of training_runs.toml (module docstring)."""
    at = f"{where} [{name}]"
    check_keys(entry, required=("description", "source", "status", "model", "system", "seq_len",
                                "global_batch_tokens"),
               optional=("notes", "tokens") + WHOLE + NUMBER + FLAGS + NAMES + tuple(PUBLISHED), where=at)
    for key, value in entry.items():
        kind = ("a whole number" if key in WHOLE else "a number" if key in NUMBER + tuple(PUBLISHED) else
                "true or false" if key in FLAGS else "a string")
        ok = (isinstance(value, int) and not isinstance(value, bool) if key in WHOLE else
              isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0
              if key in NUMBER + tuple(PUBLISHED) else isinstance(value, bool) if key in FLAGS else
              isinstance(value, str) and bool(value.strip()))
        if not ok:
            raise CatalogError(f"{at} {key}: expected {kind}" + (" above 0" if "number" in kind else "")
                               + f", got {value!r}")
    status = text(entry, "status", at)
    if status not in STATUSES:
        raise CatalogError(f"{at} status: expected one of {', '.join(STATUSES)}, got {status!r}")
    published = [k for k in PUBLISHED if k in entry]
    if len(published) != 1:
        raise CatalogError(f"{at}: give exactly one of {', '.join(PUBLISHED)}")
    if published[0] == "published_gpu_hours" and "tokens" not in entry:
        raise CatalogError(f"{at}: published_gpu_hours needs the run's tokens")
    options = {k: v for k, v in entry.items() if k not in META and k not in PUBLISHED}
    return TrainingRun(name=name, description=text(entry, "description", at), source=text(entry, "source", at),
                       status=status, notes=entry.get("notes", ""), options=MappingProxyType(options),
                       metric=PUBLISHED[published[0]], value=float(entry[published[0]]))


@functools.cache
def training_runs() -> Mapping[str, TrainingRun]:
    """Every shipped published run, by name."""
    where = "catalog/training_runs.toml"
    data = read_toml(resources.files("llmecon.catalog").joinpath("training_runs.toml").read_text("utf-8"), where)
    return MappingProxyType({name: parse_training_run(name, entry, where) for name, entry in data.items()})


def get_training_run(name: str) -> TrainingRun:
    runs = training_runs()
    if name not in runs:
        raise unknown_name("published training run", name, runs, field="preset")
    return runs[name]


#: options that do not change the figure a preset compares (output, price), and those that do not change the
#: memory layout either (so that a published run that does not fit by the memory model is still shown)
OUTPUT_ONLY = ("plot", "as_json", "price_per_gpu_hour", "tco")
MEMORY_NEUTRAL = OUTPUT_ONLY + ("mode", "profile", "efficiency", "kernel_share", "dp_overlap", "tokens",
                                "mtbf_gpu_hours", "checkpoint_s", "restart_s", "checkpoint_interval_s")


@dataclass(frozen=True, kw_only=True)
class PresetOptions:
    """A published run's options with a front-end's given ones laid over them (``preset_options``)."""

    options: dict            # every option: the given ones, else the run's, else the front-end's default
    changed: tuple           # names of given options that differ from the published configuration (sorted)
    layout_changed: bool     # whether any changes the layout (a layout that does not fit is then refused)


def preset_options(run: TrainingRun, given: Mapping[str, object], defaults: Mapping[str, object]) -> PresetOptions:
    """The options a preset runs with (``llmecon train``, ``POST /api/train``): ``defaults`` (every option of the
    front-end, by parameter name), the run's options over them, the ``given`` ones (set by the user; enums
    as their values) over those; a given ``gpus`` without ``dp`` drops the run's dp (derived from gpus); mode
    calibrated unless mode, profile or efficiency is given. ``changed``: given options, output and price
    aside, whose value differs from the published run's (its options, else the default; mode calibrated; its
    GPU count), sorted by name."""
    o = run.options
    published = {**defaults, **o, "mode": "calibrated", "gpus": o["tp"] * o.get("cp", 1) * o["pp"] * o["dp"]}
    changed = tuple(sorted(k for k, v in given.items()  # by name: the same order from every front-end
                           if k not in OUTPUT_ONLY and k != "preset" and v != published.get(k)))
    options = {**defaults, **{k: v for k, v in o.items() if not (k == "dp" and "gpus" in given)}, **given}
    if not {"mode", "profile", "efficiency"} & set(given):
        options["mode"] = "calibrated"
    return PresetOptions(options=options, changed=changed,
                         layout_changed=any(k not in MEMORY_NEUTRAL for k in changed))
