"""A sequence never exceeds the model's context (issue 18, item 4): ``max_position_embeddings``
caps the longest context, the context curves and price tiers; what memory alone holds is
``kv_capacity_tokens``; requests and planner targets longer than the model's context are errors;
a model whose context is unknown (0) is not capped. Hand cases fail on the memory-only code."""

from __future__ import annotations

import math

import numpy as np
import pytest

from llmecon.catalog.hardware import get_system
from llmecon.catalog.models import get_model, model_names
from llmecon.econ.batching import (batch_economics, context_limit, kv_capacity_tokens, max_context, smallest_plan)
from llmecon.econ.context import context_economics, tiers_for_boundaries
from llmecon.econ.planner import PlanTargets, plan_deployment
from llmecon.errors import InfeasibleError, SpecError
from llmecon.spec.deployment import Deployment
from llmecon.spec.plan import Plan


@pytest.fixture(scope="module")
def dsv3():
    """DeepSeek-V3 on hgx-h100 under tp1·ep16 (attention data-parallel, 16 chips)."""
    return Deployment(model=get_model("deepseek-v3"), system=get_system("hgx-h100"), plan=Plan(tp=1, ep=16))


def test_deepseek_v3_capped_at_163840(dsv3):
    """Each chip holds W = 57,986,946,560 B of weights of the 81,559 MiB = 85,520,809,984 B the H100
    exposes; a token's 70,272 B of KV spreads over the 16 attention groups, 4,392 B per chip, so memory
    holds floor(27,533,863,424/4,392) = 6,269,094 KV tokens — but one sequence stops at the model's
    163,840 (the memory-only code reported the capacity as the max context). At batch 64 memory binds:
    floor(6,269,094.59/64) = 97,954 (on the nominal 80 GB: 5,012,079 and 78,313)."""
    w = dsv3.weights_per_chip_bytes
    assert w == 57_986_946_560
    assert kv_capacity_tokens(dsv3) == math.floor((81_559 * 2**20 - w) / (70_272 / 16)) == 6_269_094
    assert max_context(dsv3) == 163_840 == get_model("deepseek-v3").max_context
    assert max_context(dsv3, batch=64) == 97_954
    e = batch_economics(dsv3, context=4096.0, batches=[1.0, 64.0])
    assert (e.max_context_at_batch_1, e.kv_capacity_tokens, e.model_max_context) == (163_840, 6_269_094, 163_840)
    c = context_economics(dsv3)
    assert c.max_context_at_batch_1 == 163_840 and c.kv_capacity_tokens == 6_269_094
    assert c.curve.context[-1] == 163_840 and np.all(c.curve.context <= 163_840)
    with pytest.raises(SpecError, match="^contexts 163841: longer than deepseek-v3's 163,840-token context"):
        context_economics(dsv3, contexts=[1024, 163_841])


def test_unknown_context_is_not_capped():
    """Gemma-3-27B's config has no max_position_embeddings (max_context 0): nothing is capped, the
    memory limit stands and context_limit says inf: on hgx-h100 tp2 the global layers' KV grows 40,960 B
    per token per chip, so the 5,520,809,984 B the device exposes beyond the nominal 80 GB add
    134,785 tokens to the 1,288,392 of the nominal capacity: 1,423,177."""
    m, s = get_model("gemma-3-27b"), get_system("hgx-h100")
    assert m.max_context == 0 and math.isinf(context_limit(m))
    dep = Deployment(model=m, system=s, plan=smallest_plan(m, s))
    assert max_context(dep) == kv_capacity_tokens(dep) == 1_288_392 + 134_785
    e = context_economics(dep, contexts=[256, 1_000_000])  # beyond Gemma 3's real 128K: allowed, unknown here
    assert e.model_max_context == 0 and e.max_context_at_batch_1 == 1_423_177


@pytest.mark.parametrize("name", model_names())
def test_capped_values_never_exceed_the_models_context(name):
    """Property over the catalogue on GB200 NVL72 (smallest plan): max context <= the model's context
    (when known) and <= what memory holds; batch never raises it."""
    m, s = get_model(name), get_system("gb200-nvl72")
    plan = smallest_plan(m, s)
    if plan is None:
        pytest.skip(f"{name} does not fit {s.name}")
    dep = Deployment(model=m, system=s, plan=plan)
    cap, memory = max_context(dep), kv_capacity_tokens(dep)
    assert cap <= memory
    # with attention DP (adp > 1) one sequence lives on one group and holds less than the capacity
    # across groups (issue 35); with adp 1 the two coincide
    if m.max_context:
        assert cap <= m.max_context
        assert cap == min(memory, m.max_context) if plan.adp == 1 else cap <= min(memory, m.max_context)
    else:
        assert cap == memory if plan.adp == 1 else cap <= memory
    assert max_context(dep, batch=8.0) <= cap


def test_context_curves_stop_at_the_model_context():
    """Llama-3.1-8B on one H100 (bf16): memory holds 488K tokens, the curve stops at 131,072."""
    m, s = get_model("llama-3.1-8b"), get_system("h100-sxm")
    e = context_economics(Deployment(model=m, system=s, plan=Plan()))
    assert e.kv_capacity_tokens > 131_072 and e.max_context_at_batch_1 == 131_072
    assert e.curve.context[-1] == 131_072 and np.all(e.curve.context <= m.max_context)


def test_tier_boundary_beyond_the_model_context_is_an_error():
    contexts = np.array([1024.0, 2048.0, 4096.0])
    cost = np.array([1.0, 2.0, 3.0])
    with pytest.raises(SpecError, match="^boundary 4096: at or beyond the model's 4,096-token context") as exc:
        tiers_for_boundaries(contexts, cost, cost, boundaries=[2048, 4096], margin=0.0, context_limit=4096)
    assert exc.value.field == "boundary" and "below 4,096" in exc.value.fix
    sched = tiers_for_boundaries(contexts, cost, cost, boundaries=[2048], margin=0.0, context_limit=4096)
    assert sched.upper_tokens == (2048.0, 4096.0)


def test_planner_request_longer_than_the_context():
    """prompt 163,000 + output 1,000 = 164,000 > DeepSeek-V3's 163,840: an error on output_tokens;
    each alone is within it (the checks before issue 18 let it through)."""
    m = get_model("deepseek-v3")
    with pytest.raises(SpecError, match="^output_tokens 1000: prompt 163,000 [+] output 1,000") as exc:
        plan_deployment(m, [get_system("gb200-nvl72")],
                        targets=PlanTargets(context=4096, prompt_tokens=163_000, output_tokens=1_000))
    assert exc.value.field == "output_tokens"
    with pytest.raises((SpecError, InfeasibleError)) as ok:  # within the context: no context error
        plan_deployment(m, [get_system("gb200-nvl72")],
                        targets=PlanTargets(context=4096, prompt_tokens=163_000, output_tokens=840, tpot_s=1e-9))
    assert ok.value.field != "output_tokens" and "token context" not in str(ok.value)
