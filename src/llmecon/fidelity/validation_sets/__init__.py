"""Every published measurement set in ``shared/validation/`` as ``measurements.Measurement`` rows.

``load_set(name)`` gives the rows of one set, ``load_all()`` of every set in ``SETS``;
``read_set(name)`` gives a ``LoadedSet`` that also lists, as ``Skipped`` records, the raw items
that were not turned into rows and why. The folder is ``default_root()``: ``$LLMECON_VALIDATION_DIR``
if set, else ``<repo>/../shared/validation`` (absent on a fresh clone: the loaders then raise
``CatalogError`` saying where they looked).

Sets and mapping choices (units: raw ms -> s; ``source`` is the file relative to the folder,
``note`` says which raw line or table row):

- ``vidur-ops-h100`` / ``vidur-ops-a100``: vidur per-op medians -> ``gemm`` and ``elementwise``
  rows in fp16 (shapes and byte models in ``validation_sets.vidur``). ``group`` = the model folder
  (``meta-llama/Llama-2-7b-hf``), so ``default_split`` holds out whole models; the same shape
  measured for two models (Llama-2-70B and Llama-3-70B) stays two rows. Accelerators:
  ``h100-sxm`` (vidur's H100 is the DGX/SXM part) and ``a100-80gb``: the README does not say 40 or
  80 GB, but vidur's own A100 device config is 80 GB (``A100DeviceSKUConfig.total_memory_gb``),
  which is also the only A100 in the catalogue. Op times do not depend on the memory size anyway;
  the 40 GB SXM part has 1.56 TB/s instead of 2.04 TB/s, which would matter for memory-bound ops.
- ``vidur-net-h100`` / ``vidur-net-a100``: NCCL medians -> ``all_reduce`` / ``send_recv`` on
  ``hgx-h100`` / ``hgx-a100``, participants = num_workers, chips_per_node = devices_per_node.
  ``group`` empty: the hold-out is a hash of each row's key (~30% of sizes in every configuration).
  The a100_pairwise_nvlink cluster has no catalogued system and is skipped.
- ``trtllm-static``: TensorRT-LLM v0.9 static batches -> ``static``, measured_s = batch·osl /
  (per-GPU output tok/s · tp). fp8 weights and fp8 KV on H100/H200, fp16 on A100 (the file's
  models_note). GPT-J 6B and Falcon 180B are skipped (not catalogue models). ``group`` = model.
- ``trtllm-ttft``: the batch-1 time-to-first-token table -> ``prefill`` (output length 1), same
  dtype mapping, ``group`` = model.
- ``qwen3-serving``: aiconfigurator's Qwen3-32B fp8 H100 benchmarks -> ``serving`` (TPOT and TTFT,
  no ``measured_s``). weight_dtype fp8 (gemm_quant_mode); the KV-cache dtype is not in the
  transcription, so ``kv_dtype`` is left empty (the model's own, bf16). ``group`` =
  ``isl<ISL>-osl<OSL>``: the hold-out takes whole prompt/output scenarios, every TP and concurrency.
- ``pope2022``: Table 2 -> ``prefill`` (batch, 2048-token prompts) and ``decode`` (batch, context
  2048, 64 generated tokens; measured_s is the whole phase) on ``tpu-v4-64`` with tp = 64,
  weights int8 or bf16 per row, KV dtype left to the model (bf16). Model ``palm-540b-padded``: Pope
  et al. pad PaLM's 48 query heads to 64 to partition over 64 chips (pope2022.yaml), and llmecon's
  Plan needs tp to divide the heads; the padded model carries the +3.3% parameters that really ran.
  ``group`` = setting (low_latency / high_throughput). Table 1 and the prose figures are skipped.
- ``megatron2021``: no rows yet; its GPT models are not catalogue entries (see its skipped record).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from ...errors import CatalogError, unknown_name
from ..measurements import Measurement
from . import published
from . import vidur
from ._common import Skipped

ENV_VAR = "LLMECON_VALIDATION_DIR"

_LOADERS: dict[str, Callable[[Path], tuple[list[Measurement], list[Skipped]]]] = {
    "vidur-ops-h100": partial(vidur.compute_rows, gpu="h100"),
    "vidur-ops-a100": partial(vidur.compute_rows, gpu="a100"),
    "vidur-net-h100": partial(vidur.network_rows, gpu="h100"),
    "vidur-net-a100": partial(vidur.network_rows, gpu="a100"),
    "trtllm-static": published.trtllm_static,
    "trtllm-ttft": published.trtllm_ttft,
    "qwen3-serving": published.qwen3_serving,
    "pope2022": published.pope2022,
    "megatron2021": published.megatron2021,
}
SETS: tuple[str, ...] = tuple(_LOADERS)


@dataclass(frozen=True, kw_only=True)
class LoadedSet:
    """One set's rows and the raw items it left out (with reasons)."""

    name: str
    root: Path
    rows: tuple[Measurement, ...]
    skipped: tuple[Skipped, ...]

    @property
    def skipped_items(self) -> int:
        return sum(s.items for s in self.skipped)


def _repo_default() -> Path:
    # src/llmecon/fidelity/validation_sets/__init__.py -> parents[4] is the repository root
    return Path(__file__).resolve().parents[4].parent / "shared" / "validation"


def default_root() -> Path | None:
    """``$LLMECON_VALIDATION_DIR`` if set, else ``<repo>/../shared/validation``; None if that
    folder does not exist (a set env var is never overridden by the fallback)."""
    env = os.environ.get(ENV_VAR)
    path = Path(env).expanduser() if env else _repo_default()
    return path if path.is_dir() else None


def _root(root: str | Path | None) -> Path:
    if root is not None:
        path = Path(root).expanduser()
        if not path.is_dir():
            raise CatalogError(f"validation folder {path}: no such folder; pass the shared/validation folder "
                               f"or set {ENV_VAR}")
        return path
    found = default_root()
    if found is None:
        env = os.environ.get(ENV_VAR)
        looked = f"{ENV_VAR}={env}" if env else str(_repo_default())
        raise CatalogError(f"no validation folder: looked in {looked}; set {ENV_VAR} to the shared/validation "
                           "folder (it is not part of a fresh clone)")
    return found


def read_set(name: str, root: str | Path | None = None) -> LoadedSet:
    """Rows and skipped items of set ``name`` (one of ``SETS``) from ``root`` or ``default_root()``."""
    if name not in _LOADERS:
        raise unknown_name("validation set", name, SETS)
    path = _root(root)
    rows, skipped = _LOADERS[name](path)
    return LoadedSet(name=name, root=path, rows=tuple(rows), skipped=tuple(skipped))


def load_set(name: str, root: str | Path | None = None) -> list[Measurement]:
    """The measurement rows of set ``name`` (see ``read_set`` for what was skipped)."""
    return list(read_set(name, root).rows)


def read_all(root: str | Path | None = None) -> dict[str, LoadedSet]:
    """``read_set`` of every name in ``SETS``, in that order."""
    path = _root(root)
    return {name: read_set(name, path) for name in SETS}


def load_all(root: str | Path | None = None) -> dict[str, list[Measurement]]:
    """The rows of every set in ``SETS``, in that order."""
    return {name: list(loaded.rows) for name, loaded in read_all(root).items()}


__all__ = ["ENV_VAR", "SETS", "LoadedSet", "Skipped", "default_root", "load_all", "load_set", "read_all",
           "read_set"]
