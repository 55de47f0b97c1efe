"""Properties of the step model that must hold for any input (hypothesis), over catalogue models
and systems with plans that fit (DESIGN.md §5): monotone in batch and context, lower <= upper,
FLOPs and weight bytes conserved across shardings, KV bytes linear (or window-capped) in tokens,
the touched-expert fraction a probability increasing in tokens, cost per token falling with batch,
the closed-form causal prefill sum equal to a brute-force sum of decode steps, and ring all-reduce
costs.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmecon.spec.deployment import Deployment
from llmecon.econ.batching import balance_batch, batch_curve
from llmecon.catalog.hardware import get_system
from llmecon.catalog.models import get_model
from llmecon.step.collectives import ring_all_reduce_s
from llmecon.spec.hardware import Link
from llmecon.step.inference import decode_step, memory_per_chip, prefill_step, touched_expert_fraction
from llmecon.spec.plan import Plan
from llmecon.step.inference import decode_of

FAST = settings(max_examples=50, deadline=None)

# (model, system, plan): plans that validate and whose weights fit the chips.
DEPLOYMENTS = [
    ("llama-3.1-8b", "h100-sxm", Plan()),
    ("llama-3.1-70b", "hgx-h100", Plan(tp=4)),
    ("llama-3.1-70b", "hgx-h100", Plan(tp=8)),
    ("llama-3.1-70b", "hgx-h100", Plan(tp=4, pp=2)),
    ("qwen3-30b-a3b", "hgx-h100", Plan(tp=4)),
    ("qwen3-30b-a3b", "hgx-h100", Plan(ep=8)),
    ("mistral-7b-v0.1", "h100-sxm", Plan()),
    ("gpt-oss-120b", "hgx-h100", Plan(tp=8)),
    ("deepseek-v3", "gb200-nvl72", Plan(tp=8)),
    ("deepseek-v3", "gb200-nvl72", Plan(ep=8, tp=8)),
]
IDS = [f"{m}@{s}:{p.label()}" for m, s, p in DEPLOYMENTS]


def _dep(model: str, system: str, plan: Plan) -> Deployment:
    return Deployment(model=get_model(model), system=get_system(system), plan=plan)


def test_deployments_fit():
    for model, system, plan in DEPLOYMENTS:
        dep = _dep(model, system, plan)
        plan.validate(dep.model, dep.system)
        assert dep.weights_per_chip_bytes < dep.system.accelerator.hbm_bytes, (model, plan)


batches = st.integers(min_value=1, max_value=8192)
contexts = st.integers(min_value=0, max_value=500_000)


@pytest.mark.parametrize("deployment", DEPLOYMENTS, ids=IDS)
@FAST
@given(b1=batches, b2=batches, context=contexts)
def test_decode_step_monotone_in_batch(deployment, b1, b2, context):
    b1, b2 = sorted((b1, b2))
    step = decode_of(_dep(*deployment), batch=np.array([b1, b2], dtype=float), context=context)
    t = np.asarray(step.step_s)
    assert t[0] <= t[1] * (1 + 1e-12)
    assert np.all(np.asarray(step.time.lower_s) <= np.asarray(step.time.upper_s))


@pytest.mark.parametrize("deployment", DEPLOYMENTS, ids=IDS)
@FAST
@given(batch=batches, c1=contexts, c2=contexts)
def test_decode_step_monotone_in_context(deployment, batch, c1, c2):
    c1, c2 = sorted((c1, c2))
    step = decode_of(_dep(*deployment), batch=batch, context=np.array([c1, c2], dtype=float))
    t = np.asarray(step.step_s)
    assert t[0] <= t[1] * (1 + 1e-12)
    upper = np.asarray(step.upper_s)
    assert np.all(t <= upper) and np.all(upper <= 3 * t * (1 + 1e-12))  # sum of 3 terms <= 3 x their max


TP_FAMILIES = [("llama-3.1-70b", "hgx-h100", (1, 2, 4, 8)), ("qwen3-30b-a3b", "hgx-h100", (1, 2, 4, 8)),
               ("deepseek-v3", "gb200-nvl72", (1, 2, 4, 8, 16)), ("gpt-oss-120b", "hgx-h100", (1, 2, 4, 8))]


@pytest.mark.parametrize("model,system,tps", TP_FAMILIES, ids=[f[0] for f in TP_FAMILIES])
@FAST
@given(batch=batches, context=contexts)
def test_flops_and_compute_conserved_across_tp(model, system, tps, batch, context):
    """Total FLOPs do not depend on the TP degree, and each chip does 1/tp of the work."""
    m, s = get_model(model), get_system(system)
    steps = [decode_step(m, s, batch=batch, context=context, plan=Plan(tp=tp)) for tp in tps]
    for tp, step in zip(tps, steps):
        assert float(step.flops) == pytest.approx(float(steps[0].flops), rel=1e-12)
        assert tp * float(step.time.compute_s) == pytest.approx(float(steps[0].time.compute_s), rel=1e-9)
        assert float(step.weight_bytes) == pytest.approx(float(steps[0].weight_bytes), rel=1e-9)


FULL_ATTENTION = ["llama-3.1-70b", "qwen3-30b-a3b", "deepseek-v3", "deepseek-v3.2-exp", "phi-2"]
kv_tokens = st.integers(min_value=0, max_value=2_000_000)


@pytest.mark.parametrize("model", FULL_ATTENTION)
@FAST
@given(a=kv_tokens, b=kv_tokens)
def test_kv_bytes_linear_for_full_attention(model, a, b):
    m = get_model(model)
    assert all(w == 0 for w in m.layer_windows)
    assert float(m.kv_bytes(a + b)) == pytest.approx(float(m.kv_bytes(a)) + float(m.kv_bytes(b)), rel=1e-12, abs=1e-6)
    assert float(m.kv_bytes(a)) == pytest.approx(a * m.kv_bytes_per_token(), rel=1e-12, abs=1e-6)


@FAST
@given(tokens=kv_tokens)
def test_kv_bytes_capped_by_window_every_layer(tokens):
    """Mistral 7B slides a 4096-token window on every layer: KV held = min(L, 4096)·per-token bytes."""
    m = get_model("mistral-7b-v0.1")
    assert set(m.layer_windows) == {4096}
    assert float(m.kv_bytes(tokens)) == pytest.approx(min(tokens, 4096) * m.kv_bytes_per_token(), rel=1e-12, abs=1e-6)


HYBRID = ["gpt-oss-120b", "gemma-3-27b", "llama-4-maverick-17b-128e"]


@pytest.mark.parametrize("model", HYBRID)
@FAST
@given(a=kv_tokens, b=kv_tokens)
def test_kv_bytes_hybrid_subadditive_and_linear_past_windows(model, a, b):
    """Local layers stop growing at their window: KV is subadditive, and past the largest window it
    grows only by the global layers' bytes per token."""
    m = get_model(model)
    assert float(m.kv_bytes(a + b)) <= float(m.kv_bytes(a)) + float(m.kv_bytes(b)) * (1 + 1e-12) + 1e-6
    w = max(m.layer_windows)
    n_global = sum(1 for x in m.layer_windows if x == 0)
    per_layer = m.kv_bytes_per_token() / m.n_layers
    lo = w + a
    assert float(m.kv_bytes(lo + b)) - float(m.kv_bytes(lo)) == pytest.approx(b * n_global * per_layer, rel=1e-9,
                                                                             abs=1e-3)


@FAST
@given(experts=st.integers(min_value=1, max_value=512), data=st.data(),
       t1=st.floats(min_value=0, max_value=1e5), t2=st.floats(min_value=0, max_value=1e5))
def test_touched_fraction_is_probability_increasing_in_tokens(experts, data, t1, t2):
    k = data.draw(st.integers(min_value=1, max_value=experts))
    t1, t2 = sorted((t1, t2))
    f = touched_expert_fraction(experts=experts, active_experts=k, tokens=np.array([t1, t2]))
    assert np.all((f >= 0.0) & (f <= 1.0))
    assert f[0] <= f[1]
    if t1 >= 1:
        assert f[0] >= k / experts * (1 - 1e-12)  # at least one token's k experts


PLANS = {
    "llama-3.1-70b": [Plan(tp=t, pp=p) for t in (1, 2, 4, 8) for p in (1, 2, 3, 4, 7)],
    "qwen3-30b-a3b": [Plan(tp=t, ep=e, pp=p) for t in (1, 2, 4) for e in (1, 2, 8) for p in (1, 5)],
    "deepseek-v3": [Plan(tp=t, ep=e, pp=p) for t in (1, 8) for e in (1, 8, 64) for p in (1, 2, 4)]
    + [Plan(tp=t, ep=e, pp=p, redundant_experts=32) for t in (1, 8) for e in (36, 72, 144) for p in (1, 2)],
}


@pytest.mark.parametrize("model", list(PLANS))
@FAST
@given(data=st.data())
def test_weights_per_chip_times_chips_cover_the_model(model, data):
    """Sharding never loses weights: memory_per_chip x chips >= total weight bytes; tp-only plans
    with pp dividing the layers conserve them exactly; EP replicates only the non-expert part, and
    redundant expert copies add (E + r)/E of the routed experts."""
    m = get_model(model)
    plan = data.draw(st.sampled_from(PLANS[model]))
    held = float(memory_per_chip(m, plan, batch=0.0, context=0.0)) * plan.chips
    w = m.weight_bytes()
    assert held >= w.total * (1 - 1e-12)
    if m.n_layers % plan.pp == 0:
        copies = (m.moe.n_routed + plan.redundant_experts) / m.moe.n_routed if m.is_moe else 1.0
        assert held == pytest.approx(plan.ep * w.non_expert + copies * w.routed_experts, rel=1e-12)


MOE_PLANS = [("deepseek-v3", "gb200-nvl72", p) for p in (Plan(tp=8), Plan(tp=8, ep=8), Plan(ep=64),
                                                        Plan(tp=8, adp=8, ep=64), Plan(ep=72, redundant_experts=32))]
MOE_PLANS += [("qwen3-30b-a3b", "hgx-h100", p) for p in (Plan(ep=8), Plan(tp=2, ep=4), Plan(tp=8, ep=8, adp=1))]


@pytest.mark.parametrize("deployment", MOE_PLANS, ids=[f"{m}:{p.label()}" for m, _, p in MOE_PLANS])
@FAST
@given(bs=st.lists(st.integers(min_value=1, max_value=20_000), min_size=2, max_size=6, unique=True))
def test_critical_chip_reads_at_least_the_mean_and_grow_with_batch(deployment, bs):
    """Issue 18: the busiest expert group's chip reads at least the mean chip's weights (equal when
    one group holds every expert, ep 1), and both grow with the batch."""
    dep = _dep(*deployment)
    b = np.asarray(sorted(bs), dtype=float)
    r = decode_of(dep, batch=b, context=1000.0)
    busiest = np.asarray(r.weight_bytes_per_chip, dtype=float)
    mean = np.asarray(r.weight_bytes, dtype=float) / dep.plan.chips
    assert np.all(busiest >= mean * (1 - 1e-12))
    if dep.plan.ep == 1:
        assert np.allclose(busiest, mean, rtol=1e-12)
    assert np.all(np.diff(busiest) >= -1e-9 * busiest[1:]) and np.all(np.diff(mean) >= -1e-9 * mean[1:])
    assert np.all(np.asarray(r.expert_load_factor) >= 1 - 1e-12)


@FAST
@given(r=st.floats(min_value=1, max_value=5000), b=st.sampled_from([0.5, 0.53125, 1.0, 2.0, 4.0]),
       s=st.floats(min_value=1, max_value=100))
def test_balance_batch_scales_with_sparsity_and_bytes(r, b, s):
    base = float(balance_batch(flops_per_byte=r, bytes_per_param=2, sparsity=1))
    assert float(balance_batch(flops_per_byte=r, bytes_per_param=2, sparsity=s)) == pytest.approx(s * base, rel=1e-12)
    assert float(balance_batch(flops_per_byte=r, bytes_per_param=b, sparsity=s)) == pytest.approx(
        s * base * b / 2, rel=1e-12)
    assert base == pytest.approx(r, rel=1e-12)  # bf16 dense: B* is the FLOP/byte ratio


DENSE = [("llama-3.1-8b", "h100-sxm", Plan()), ("llama-3.1-70b", "hgx-h100", Plan(tp=8)),
         ("qwen3-32b", "hgx-h100", Plan(tp=4, pp=2))]


@pytest.mark.parametrize("deployment", DENSE, ids=[d[0] for d in DENSE])
@FAST
@given(bs=st.lists(st.integers(min_value=1, max_value=100_000), min_size=2, max_size=8, unique=True))
def test_chip_seconds_per_token_non_increasing_in_batch_at_context_0(deployment, bs):
    curve = batch_curve(_dep(*deployment), context=0.0, batches=sorted(bs))
    cost = curve.chip_s_per_token
    assert np.all(np.diff(cost) <= 1e-12 * cost[:-1])


PREFILL_MODELS = ["llama-3.1-8b", "mistral-7b-v0.1", "gpt-oss-20b", "gemma-3-27b", "deepseek-v3",
                  "deepseek-v3.2-exp"]


@pytest.mark.parametrize("model", PREFILL_MODELS)
@FAST
@given(l0=st.integers(min_value=0, max_value=6000), t=st.integers(min_value=1, max_value=150))
def test_prefill_attention_equals_brute_force_sum_of_decode_steps(model, l0, t):
    """Closed-form causal sum = sum over positions L0+1..L0+T of one token's attention FLOPs at that
    context (unabsorbed MLA on both sides), summed by brute force here."""
    m = get_model(model)
    brute = sum(float(m.attention_flops_per_token(c, absorbed=False)) for c in range(l0 + 1, l0 + t + 1))
    assert float(m.prefill_attention_flops(t, l0)) == pytest.approx(brute, rel=1e-9)


@pytest.mark.parametrize("model", ["llama-3.1-8b", "mistral-7b-v0.1", "gpt-oss-20b"])
@FAST
@given(l0=st.integers(min_value=0, max_value=6000), t=st.integers(min_value=1, max_value=150),
       batch=st.integers(min_value=1, max_value=64))
def test_prefill_flops_equal_sum_of_decode_step_flops(model, l0, t, batch):
    """Same identity through the step API (non-MLA models, where decode and prefill use the same
    attention form): prefill of T tokens = T decode steps at contexts L0+1..L0+T."""
    m, s = get_model(model), get_system("h100-sxm")
    decode = decode_step(m, s, batch=batch, context=np.arange(l0 + 1, l0 + t + 1, dtype=float))
    prefill = prefill_step(m, s, batch=batch, prompt_tokens=t, cached_tokens=l0)
    assert float(prefill.flops) == pytest.approx(float(np.sum(decode.flops)), rel=1e-9)
    assert float(prefill.tokens) == batch * t


LINKS = [Link(name="nvlink", bandwidth_bytes_per_s=450e9, latency_s=7.6e-6),
         Link(name="ideal", bandwidth_bytes_per_s=1e9, latency_s=0.0)]


@pytest.mark.parametrize("link", LINKS, ids=[x.name for x in LINKS])
@FAST
@given(s1=st.integers(min_value=0, max_value=10**10), s2=st.integers(min_value=0, max_value=10**10),
       p=st.integers(min_value=2, max_value=512))
def test_ring_all_reduce(link, s1, s2, p):
    assert float(ring_all_reduce_s(message_bytes=s1, participants=1, link=link)) == 0.0
    s1, s2 = sorted((s1, s2))
    t1, t2 = (float(ring_all_reduce_s(message_bytes=x, participants=p, link=link)) for x in (s1, s2))
    assert 0.0 <= t1 <= t2
    if s2 > s1:
        assert t1 < t2
    # more participants never make it cheaper (2(p-1)/p grows with p)
    assert float(ring_all_reduce_s(message_bytes=s2, participants=p + 1, link=link)) >= t2
