"""The curated public API (``llmecon.__all__``, resolved lazily from ``llmecon._EXPORTS``) stays what users
import: the exact set of names below (an export removed or renamed fails here; one added must be added here on
purpose), each resolving to the object its module defines under that name, sorted, nothing else reachable."""

import importlib

import pytest

import llmecon

PUBLIC = frozenset({
    "Accelerator", "Analysis", "Attention", "BatchCurve", "BatchEconomics", "CHINCHILLA", "CachePlacement",
    "CatalogError", "CommParts", "ContextEconomics", "ContextTier", "DType", "Deployment", "EfficiencyProfile",
    "ExpertValue", "FastMode", "Frontier", "IDEAL", "InfeasibleError", "LECTURE_POWER_FIT", "LifetimeCost",
    "Link", "LlmeconError", "MemoryTier", "MoE", "Model", "MoeSummary", "Placement", "Plan", "PlanResult",
    "PlanTargets", "PowerFit", "PriceSheet", "RoutedLaw", "ScalingLaw", "SearchOptions", "ServingCost",
    "SimConfig", "SimResult", "SpecError", "Speculation", "SpeculativeStep", "StepResult", "StepTime", "System",
    "TcoInputs", "TcoRate", "TierSchedule", "TrainMemory", "TrainPlan", "TrainStep", "UnitError",
    "additive_fast_mode_load", "all_gather_s", "all_reduce_s", "all_to_all_s", "analyze", "balance_batch",
    "balance_batch_with_kv", "batch_curve", "batch_economics", "block_sparse_reads", "break_even_hold_s",
    "breakeven_batch", "bubble_fraction", "busiest_rank_experts", "busiest_rank_pairs",
    "cache_hold_price_per_hour", "cache_placement", "cache_tier_fit", "capital_recovery_factor",
    "check_catalogue", "check_prices", "chinchilla_tokens", "comm_parts", "context_economics", "context_limit",
    "crossover_context", "crossover_context_lecture", "crossover_context_of", "decode_frontier", "decode_of",
    "decode_prefill_cost_ratio", "decode_step", "default_profile", "default_routed_law", "device_tier",
    "drain_time_s", "effective_params", "effective_ratio", "ep_sweep", "expert_transform", "expert_value",
    "experts_for_ratio", "fast_mode", "fast_mode_batch_ratio", "feasible_plans", "fit_groups",
    "five_minute_tier", "get_accelerator", "get_dtype", "get_model", "get_price_sheet", "get_system",
    "gray_break_even_s", "in_switch_all_reduce_s", "infer_fast_mode", "infer_kv_from_price_step",
    "inference_tokens", "kv_bytes_from_crossover", "kv_capacity_tokens", "latency_floor_s", "lifetime_cost",
    "lifetime_optimum", "load_measurements", "load_profile", "load_routed_law", "load_trace", "max_batch",
    "max_context", "max_roofline_fast_mode", "memory_per_gpu", "model_from_hf_config", "moe_summary",
    "no_batching_cost_ratio", "operating_point", "overtrain_factor", "p2p_s", "pareto_front",
    "pipeline_stage_time_ratio", "place", "plan_deployment", "power_fit_from_point", "power_law_split",
    "prefill_of", "prefill_step", "pretrain_tokens_matching_inference", "pretrain_tokens_matching_rl",
    "priced_tiers", "reduce_scatter_s", "require_fit", "ring_all_reduce_s", "serving_cost", "simulate",
    "smallest_plan", "speculation_for", "speculative_of", "speculative_tokens_per_step", "step_time",
    "synthetic", "tco_rate", "throughput_tokens_per_s", "tier_break_evens", "tiers_for_boundaries",
    "tiers_for_steps", "tokens_for_loss", "tokens_per_s_per_mw", "touched_expert_fraction", "train_step",
    "training_flops", "tree_all_reduce_s", "two_tier_all_reduce_s", "two_tier_all_to_all_s", "usd_per_mtok"
})


def broken_exports(exports: dict[str, str]) -> list[str]:
    """``name: why`` for every entry of ``exports`` ({name: submodule}) that does not resolve: the submodule
    does not import, lacks the name, or the name is a module (an export is a class, function or constant)."""
    bad = []
    for name, where in sorted(exports.items()):
        try:
            module = importlib.import_module(f"llmecon.{where}")
        except ImportError as exc:
            bad.append(f"{name}: llmecon.{where} does not import ({exc})")
            continue
        if not hasattr(module, name):
            bad.append(f"{name}: llmecon.{where} has no {name}")
        elif type(getattr(module, name)).__name__ == "module":
            bad.append(f"{name}: llmecon.{where}.{name} is a module")
    return bad


def test_the_public_names_are_exactly_these():
    names = set(llmecon.__all__)
    assert not PUBLIC - names, f"exports removed or renamed: {sorted(PUBLIC - names)}"
    assert not names - PUBLIC, f"exports added without adding them to PUBLIC here: {sorted(names - PUBLIC)}"
    assert llmecon.__all__ == sorted(llmecon.__all__)


def test_every_export_resolves_to_its_modules_object():
    assert broken_exports(llmecon._EXPORTS) == []
    for name, where in llmecon._EXPORTS.items():
        assert getattr(llmecon, name) is getattr(importlib.import_module(f"llmecon.{where}"), name), name


def test_the_check_fails_on_a_broken_export():
    """The checks above can fail: a missing name, a missing module and a module exported as a name."""
    importlib.import_module("llmecon.step.collectives")  # an attribute of llmecon.step once imported
    fake = {"decode_step": "step.inference", "no_such_function": "step.inference", "Plan": "spec.no_such_module",
            "collectives": "step"}
    assert broken_exports(fake) == [
        "Plan: llmecon.spec.no_such_module does not import (No module named 'llmecon.spec.no_such_module')",
        "collectives: llmecon.step.collectives is a module",
        "no_such_function: llmecon.step.inference has no no_such_function"]


def test_unknown_attribute_raises():
    with pytest.raises(AttributeError, match="no attribute 'no_such_thing'"):
        llmecon.no_such_thing  # noqa: B018
