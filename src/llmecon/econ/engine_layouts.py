"""Layouts a serving engine runs (issue 37 item 2, issue 35 item 5): which (tp, adp, ep, pp) of the planner's
search space an engine can be launched with, so a frontier point names a deployment someone can start.

llmecon's plan has stage width W = tp·adp (tp: attention tensor parallelism; adp: attention data-parallel
groups), experts over ep groups with expert TP W/ep, and pp pipeline stages. What each engine exposes
(launch options as documented by each project, as of 2026-11):

* ``trtllm`` (TensorRT-LLM, PyTorch backend, ``trtllm-serve`` / ``LLM(...)``): ``tensor_parallel_size`` = W,
  ``enable_attention_dp`` (attention runs data-parallel on every rank, attention TP 1: adp = W, tp = 1,
  else adp = 1), ``moe_expert_parallel_size`` x ``moe_tensor_parallel_size`` = W (any ep dividing W),
  ``pipeline_parallel_size``. Source: TensorRT-LLM docs, "LLM API" arguments and the DeepSeek-R1 deployment
  guide (https://nvidia.github.io/TensorRT-LLM/, examples/models/core/deepseek_v3/README.md).
* ``sglang`` (``--tp-size`` = W, ``--dp-size`` with ``--enable-dp-attention``: adp = dp, attention TP = W/dp,
  any split; ``--ep-size``: experts over all W ranks or tensor-parallel: ep in {1, W}; ``--pp-size``).
  Source: SGLang server arguments (https://docs.sglang.ai/backend/server_arguments.html).
* ``vllm`` (``--tensor-parallel-size`` = tp, ``--data-parallel-size`` = adp, ``--enable-expert-parallel``:
  experts over all tp·adp ranks, else tensor-parallel: ep in {1, W}; ``--pipeline-parallel-size``).
  Source: vLLM docs, "Data Parallel Deployment" and "Expert Parallel Deployment" (https://docs.vllm.ai/).
* ``""`` (no engine named: ideal mode or a legacy profile): every plan of the search space.

Pipeline parallelism for decode (every engine, named or not, when ``decode_pp`` is "fit"): pp > 1 only when
no pp = 1 plan of the search fits the weights in HBM. A pipeline adds no bandwidth or compute per token a
user sees (its stages run one after another), it only holds weights that one stage cannot; wider replicas
(tp, adp, ep) or more replicas give the throughput. That is how the engines' published DeepSeek and Llama
serving recipes use it (pp only for models that do not fit one node). ``decode_pp = "any"`` keeps every pp.

Omitted: engine-specific limits on widths (e.g. a largest EP the all-to-all kernels were built for) and
layouts an engine supports only for some models; the replica's GPU budget is ``SearchOptions``' per system.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import require_choice


@dataclass(frozen=True, kw_only=True)
class EngineLayouts:
    """What one engine can be launched with (module docstring)."""

    engine: str
    adp_only_with_tp1: bool      # attention DP replaces attention TP entirely (adp in {1, W})
    ep_all_or_none: bool         # experts either over every rank of the stage or tensor-parallel (ep in {1, W})
    note: str


ENGINES = {
    "trtllm": EngineLayouts(engine="trtllm", adp_only_with_tp1=True, ep_all_or_none=False,
                            note="attention DP only with attention TP 1 (enable_attention_dp); any EP x MoE-TP"),
    "sglang": EngineLayouts(engine="sglang", adp_only_with_tp1=False, ep_all_or_none=True,
                            note="DP attention with attention TP = tp/dp; EP over the whole stage or none"),
    "vllm": EngineLayouts(engine="vllm", adp_only_with_tp1=False, ep_all_or_none=True,
                          note="TP x DP; expert parallel over the whole stage or none"),
    "": EngineLayouts(engine="", adp_only_with_tp1=False, ep_all_or_none=False,
                      note="no engine named: every plan of the search space"),
}
DECODE_PP = ("fit", "any")


def layouts_for(engine: str) -> EngineLayouts:
    """The layouts of ``engine`` ('' = any engine)."""
    require_choice("engine", engine, tuple(ENGINES))
    return ENGINES[engine]


def engine_mask(table, engine: str, *, moe: bool) -> np.ndarray:
    """Boolean mask over a ``PlanArray``: the plans ``engine`` can be launched with (pp not judged here:
    ``pipeline_mask``)."""
    lay = layouts_for(engine)
    tp, adp, ep = (np.asarray(x) for x in (table.tp, table.adp, table.ep))
    ok = np.ones(tp.shape, dtype=bool)
    if lay.adp_only_with_tp1:
        ok &= (adp == 1) | (tp == 1)
    if lay.ep_all_or_none and moe:
        ok &= (ep == 1) | (ep == tp * adp)
    return ok


def pipeline_mask(table, weights_fit: np.ndarray, *, decode_pp: str = "fit") -> np.ndarray:
    """Boolean mask over a ``PlanArray``: with ``decode_pp`` 'fit', pp = 1 plans, and pp > 1 plans only when
    no pp = 1 plan has ``weights_fit`` (module docstring); 'any': every plan."""
    require_choice("decode_pp", decode_pp, DECODE_PP)
    pp = np.asarray(table.pp)
    if decode_pp == "any":
        return np.ones(pp.shape, dtype=bool)
    one = pp == 1
    return one if np.any(one & np.asarray(weights_fit, dtype=bool)) else np.ones(pp.shape, dtype=bool)
