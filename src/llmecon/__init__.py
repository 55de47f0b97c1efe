"""llmecon: the math of how large language models are trained and served, as software.

Public API (kept in sync with ``__all__`` by tests/test_public_api.py). Heavy modules are loaded
on first use so that ``import llmecon`` and ``llmecon --help`` stay fast.
"""

from __future__ import annotations

import importlib

__version__ = "0.1.0"

_EXPORTS = {
    "Accelerator": "hardware", "Attention": "model", "BatchCurve": "batching", "BatchEconomics": "batching",
    "CatalogError": "errors", "DType": "dtypes", "Deployment": "batching", "FastMode": "batching",
    "InfeasibleError": "errors", "Link": "hardware", "LlmeconError": "errors", "MoE": "model", "Model": "model",
    "Plan": "parallelism", "SpecError": "errors", "StepResult": "inference", "StepTime": "roofline",
    "System": "hardware", "UnitError": "errors",
    "additive_fast_mode_load": "batching", "balance_batch": "batching", "balance_batch_with_kv": "batching",
    "batch_curve": "batching", "batch_economics": "batching", "crossover_context": "batching",
    "decode_step": "inference", "drain_time_s": "batching", "fast_mode": "batching",
    "fast_mode_batch_ratio": "batching", "get_accelerator": "catalog.hardware", "get_dtype": "dtypes",
    "get_model": "catalog.models", "get_system": "catalog.hardware", "latency_floor_s": "batching",
    "max_batch": "batching", "max_context": "batching", "max_roofline_fast_mode": "batching",
    "model_from_hf_config": "hf_config", "no_batching_cost_ratio": "batching", "prefill_step": "inference",
    "require_fit": "batching", "smallest_plan": "batching", "speculative_tokens_per_step": "batching",
    "step_time": "roofline", "throughput_tokens_per_s": "batching", "touched_expert_fraction": "inference",
    # context length, KV-cache tiers, prices (SPEC B, C)
    "CachePlacement": "kvcache", "ContextEconomics": "context", "ContextTier": "prices", "MemoryTier": "hardware",
    "PriceSheet": "prices", "ServingCost": "pricing", "TierSchedule": "context",
    "block_sparse_reads": "context", "break_even_hold_s": "pricing", "cache_hold_price_per_hour": "pricing",
    "cache_placement": "kvcache", "cache_tier_fit": "pricing", "check_prices": "context",
    "context_economics": "context", "decode_prefill_cost_ratio": "pricing", "device_tier": "catalog.hardware",
    "get_price_sheet": "catalog.prices", "infer_fast_mode": "pricing", "infer_kv_from_price_step": "pricing",
    "kv_bytes_from_crossover": "pricing", "operating_point": "pricing", "priced_tiers": "kvcache",
    "serving_cost": "pricing", "tiers_for_boundaries": "context", "tiers_for_steps": "context",
    "usd_per_mtok": "context",
    # training economics (SPEC F)
    "CHINCHILLA": "training", "LifetimeCost": "training", "ScalingLaw": "training", "TrainMemory": "training_step",
    "TrainPlan": "training_step", "TrainStep": "training_step", "bubble_fraction": "training",
    "chinchilla_tokens": "training", "inference_tokens": "training", "lifetime_cost": "training",
    "lifetime_optimum": "training", "memory_per_gpu": "training_step", "overtrain_factor": "training",
    "power_law_split": "training", "pretrain_tokens_matching_inference": "training",
    "pretrain_tokens_matching_rl": "training", "tokens_for_loss": "training", "train_step": "training_step",
    "training_flops": "training",
    # serving simulator (SPEC E)
    "SimConfig": "serving", "SimResult": "serving", "simulate": "serving", "synthetic": "serving",
    "load_trace": "serving",
    # MoE, topology, parallelism and the planner (SPEC D)
    "CommParts": "inference", "ExpertValue": "routed_scaling", "LECTURE_POWER_FIT": "routed_scaling",
    "MoeSummary": "moe", "Placement": "parallelism", "PlanResult": "planner", "PlanTargets": "planner",
    "PowerFit": "routed_scaling", "RoutedLaw": "routed_scaling", "SearchOptions": "planner",
    "comm_parts": "inference", "default_routed_law": "routed_scaling", "effective_params": "routed_scaling",
    "effective_ratio": "routed_scaling", "ep_sweep": "moe", "expert_transform": "routed_scaling",
    "expert_value": "routed_scaling", "experts_for_ratio": "routed_scaling", "load_routed_law": "routed_scaling",
    "moe_summary": "moe", "pareto_front": "planner", "pipeline_stage_time_ratio": "parallelism",
    "place": "parallelism", "plan_deployment": "planner", "power_fit_from_point": "routed_scaling",
    # collectives on network tiers
    "all_gather_s": "collectives", "all_reduce_s": "collectives", "all_to_all_s": "collectives",
    "check_catalogue": "collective_fit", "fit_groups": "collective_fit", "in_switch_all_reduce_s": "collectives",
    "load_measurements": "collective_fit", "p2p_s": "collectives", "reduce_scatter_s": "collectives",
    "ring_all_reduce_s": "collectives", "tree_all_reduce_s": "collectives",
    "two_tier_all_reduce_s": "collectives", "two_tier_all_to_all_s": "collectives",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        value = getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'llmecon' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(list(globals()) + __all__)
