"""llmecon: the math of how large language models are trained and served, as software.

Public API (kept in sync with ``__all__`` by tests/test_public_api.py). Heavy modules are loaded
on first use so that ``import llmecon`` and ``llmecon --help`` stay fast.
"""

from __future__ import annotations

import importlib

__version__ = "0.1.0"

_EXPORTS = {
    "Accelerator": "spec.hardware", "Attention": "spec.model", "BatchCurve": "econ.batching",
    "BatchEconomics": "econ.batching", "CatalogError": "errors", "DType": "dtypes", "Deployment": "spec.deployment",
    "FastMode": "econ.batching", "InfeasibleError": "errors", "Link": "spec.hardware", "LlmeconError": "errors",
    "MoE": "spec.model", "Model": "spec.model", "Plan": "spec.plan", "SpecError": "errors",
    "StepResult": "step.inference", "StepTime": "step.roofline", "System": "spec.hardware", "UnitError": "errors",
    "additive_fast_mode_load": "econ.batching", "balance_batch": "econ.batching",
    "balance_batch_with_kv": "econ.batching", "batch_curve": "econ.batching", "batch_economics": "econ.batching",
    "crossover_context": "econ.batching", "crossover_context_lecture": "econ.batching",
    "crossover_context_of": "econ.batching", "context_limit": "econ.batching", "kv_capacity_tokens": "econ.batching",
    "decode_step": "step.inference", "drain_time_s": "econ.batching",
    "fast_mode": "econ.batching", "fast_mode_batch_ratio": "econ.batching", "get_accelerator": "catalog.hardware",
    "get_dtype": "dtypes", "get_model": "catalog.models", "get_system": "catalog.hardware",
    "latency_floor_s": "econ.batching", "max_batch": "econ.batching", "max_context": "econ.batching",
    "max_roofline_fast_mode": "econ.batching", "model_from_hf_config": "catalog.hf_config",
    "no_batching_cost_ratio": "econ.batching", "prefill_step": "step.inference", "require_fit": "econ.batching",
    "smallest_plan": "econ.batching", "speculative_tokens_per_step": "econ.batching", "step_time": "step.roofline",
    "throughput_tokens_per_s": "econ.batching", "touched_expert_fraction": "step.inference",
    "busiest_rank_experts": "step.expert_load", "busiest_rank_pairs": "step.expert_load",
    # one Deployment with its efficiency profile (IDEAL or fitted), priced by every analysis
    "Analysis": "econ.batching", "EfficiencyProfile": "spec.efficiency", "IDEAL": "spec.efficiency",
    "analyze": "econ.batching", "decode_of": "step.inference", "default_profile": "catalog.efficiency",
    "load_profile": "catalog.efficiency", "prefill_of": "step.inference",
    # speculative decoding / MTP as a deployment option
    "Speculation": "spec.speculation", "SpeculativeStep": "step.speculative", "breakeven_batch": "step.speculative",
    "speculation_for": "spec.speculation", "speculative_of": "step.speculative",
    # context length, KV-cache tiers, prices (SPEC B, C)
    "CachePlacement": "econ.kvcache", "ContextEconomics": "econ.context", "ContextTier": "spec.prices",
    "MemoryTier": "spec.hardware", "PriceSheet": "spec.prices", "ServingCost": "econ.pricing",
    "TierSchedule": "econ.context", "block_sparse_reads": "econ.context", "break_even_hold_s": "econ.pricing",
    "cache_hold_price_per_hour": "econ.pricing", "cache_placement": "econ.kvcache", "cache_tier_fit": "econ.pricing",
    "five_minute_tier": "econ.kvcache", "gray_break_even_s": "econ.kvcache", "tier_break_evens": "econ.pricing",
    "check_prices": "econ.context", "context_economics": "econ.context", "decode_prefill_cost_ratio": "econ.pricing",
    "device_tier": "catalog.hardware", "get_price_sheet": "catalog.prices", "infer_fast_mode": "econ.pricing",
    "infer_kv_from_price_step": "econ.pricing", "kv_bytes_from_crossover": "econ.pricing",
    "operating_point": "econ.pricing", "priced_tiers": "econ.kvcache", "serving_cost": "econ.pricing",
    "tiers_for_boundaries": "econ.context", "tiers_for_steps": "econ.context", "usd_per_mtok": "econ.context",
    # training economics (SPEC F)
    "CHINCHILLA": "econ.training", "LifetimeCost": "econ.training", "ScalingLaw": "econ.training",
    "TrainMemory": "econ.training_step", "TrainPlan": "econ.training_step", "TrainStep": "econ.training_step",
    "bubble_fraction": "econ.training", "chinchilla_tokens": "econ.training", "inference_tokens": "econ.training",
    "lifetime_cost": "econ.training", "lifetime_optimum": "econ.training", "memory_per_gpu": "econ.training_step",
    "overtrain_factor": "econ.training", "power_law_split": "econ.training",
    "pretrain_tokens_matching_inference": "econ.training", "pretrain_tokens_matching_rl": "econ.training",
    "tokens_for_loss": "econ.training", "train_step": "econ.training_step", "training_flops": "econ.training",
    # serving simulator (SPEC E)
    "SimConfig": "serving", "SimResult": "serving", "simulate": "serving", "synthetic": "serving",
    "load_trace": "serving",
    # MoE, topology, parallelism and the planner (SPEC D)
    "CommParts": "step.inference", "ExpertValue": "econ.routed_scaling", "LECTURE_POWER_FIT": "econ.routed_scaling",
    "MoeSummary": "econ.moe", "Placement": "spec.plan", "PlanResult": "econ.planner", "PlanTargets": "econ.planner",
    "PowerFit": "econ.routed_scaling", "RoutedLaw": "econ.routed_scaling", "SearchOptions": "econ.planner",
    "comm_parts": "step.inference", "default_routed_law": "econ.routed_scaling",
    "effective_params": "econ.routed_scaling", "effective_ratio": "econ.routed_scaling", "ep_sweep": "econ.moe",
    "expert_transform": "econ.routed_scaling", "expert_value": "econ.routed_scaling",
    "experts_for_ratio": "econ.routed_scaling", "load_routed_law": "econ.routed_scaling", "moe_summary": "econ.moe",
    "pareto_front": "econ.planner", "pipeline_stage_time_ratio": "spec.plan", "place": "spec.plan",
    "feasible_plans": "spec.plan",
    "plan_deployment": "econ.planner", "power_fit_from_point": "econ.routed_scaling",
    # the frontier users compare (plan --frontier)
    "Frontier": "econ.frontier", "decode_frontier": "econ.frontier",
    # total cost of ownership (llmecon tco)
    "TcoInputs": "econ.tco", "TcoRate": "econ.tco", "capital_recovery_factor": "econ.tco", "tco_rate": "econ.tco",
    "tokens_per_s_per_mw": "econ.tco",
    # collectives on network tiers
    "all_gather_s": "step.collectives", "all_reduce_s": "step.collectives", "all_to_all_s": "step.collectives",
    "check_catalogue": "fidelity.collective_fit", "fit_groups": "fidelity.collective_fit",
    "in_switch_all_reduce_s": "step.collectives", "load_measurements": "fidelity.collective_fit",
    "p2p_s": "step.collectives", "reduce_scatter_s": "step.collectives", "ring_all_reduce_s": "step.collectives",
    "tree_all_reduce_s": "step.collectives", "two_tier_all_reduce_s": "step.collectives",
    "two_tier_all_to_all_s": "step.collectives",
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
