"""The questions users ask, answered as result objects: batching, context, KV-cache tiers, pricing,
MoE and routed scaling, the planner, training economics."""
