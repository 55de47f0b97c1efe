"""Plans across scale-up domains (SPEC D15, D17-D19): placement rules, hand-computed
communication on the tier each collective lands on, and properties.

Toy system: domains of 2 chips; scale-up 1e8 B/s per direction, alpha 1 us; scale-out 1e7 B/s,
alpha 10 us. Tiny models as in test_inference_hand.py (d 64, 2 layers, bf16; the MoE has 4
experts, top-2, both layers MoE). Every expected number is worked out in the docstrings.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmecon.catalog.hardware import get_system
from llmecon.catalog.models import get_model
from llmecon.errors import InfeasibleError, SpecError
from llmecon.spec.hardware import Accelerator, Link, System
from llmecon.catalog.hf_config import model_from_hf_config
from llmecon.step.inference import comm_parts, decode_step, memory_per_chip
from llmecon.spec.plan import Plan, feasible_plans, place

EXACT = 1e-9
DENSE = {"architectures": ["LlamaForCausalLM"], "hidden_size": 64, "num_hidden_layers": 2,
         "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 128, "vocab_size": 100,
         "tie_word_embeddings": False, "torch_dtype": "bfloat16"}
MOE = {**DENSE, "architectures": ["MixtralForCausalLM"], "num_local_experts": 4, "num_experts_per_tok": 2}
UP = Link(name="toy up", bandwidth_bytes_per_s=1e8, latency_s=1e-6)
OUT = Link(name="toy out", bandwidth_bytes_per_s=1e7, latency_s=1e-5)
CHIP = Accelerator(name="toy", vendor="test", peak_flops_per_s={"bf16": 1e12}, hbm_bytes=1e9,
                   hbm_bandwidth_bytes_per_s=1e9)
PAIRS = System(name="toy pairs", accelerator=CHIP, chips=2, scale_up=UP, scale_out=OUT)
SINGLE_DOMAIN = System(name="toy island", accelerator=CHIP, chips=2, scale_up=UP, scale_out=None)
FAST = settings(max_examples=40, deadline=None)


@pytest.fixture(scope="module")
def dense():
    return model_from_hf_config(DENSE, name="tiny-dense")


@pytest.fixture(scope="module")
def moe():
    return model_from_hf_config(MOE, name="tiny-moe")


# --- the plan itself ---------------------------------------------------------------------------

def test_attention_dp_defaults_to_ep_and_shapes_the_stage():
    p = Plan(tp=2, ep=4)
    assert (p.adp, p.width, p.expert_tp, p.chips, p.total_chips) == (4, 8, 2, 8, 8)
    q = Plan(tp=8, ep=8, adp=1, pp=2, dp=3)  # vLLM's TP8 + EP8 without attention DP
    assert (q.width, q.expert_tp, q.chips, q.total_chips) == (8, 1, 16, 48)
    assert q.label() == "tp8·ep8·pp2·adp1·dp3"
    assert Plan(tp=2, ep=4).label() == "tp2·ep4·pp1"


@pytest.mark.parametrize("kwargs,field", [(dict(ep=4, adp=1), "^ep 4"), (dict(dp=0), "^dp"),
                                          (dict(adp=0), "^adp"), (dict(tp=2.0), "^tp")])
def test_bad_plans_name_the_degree(kwargs, field):
    with pytest.raises(SpecError, match=field):
        Plan(**kwargs)


# --- redundant experts (DeepSeek's EP144 / EP320) ----------------------------------------------

def test_redundant_experts_let_ep_exceed_and_not_divide_the_experts():
    """DeepSeek-V3 decode on EP144 with 32 redundant experts: 288 slots, 2 per GPU (DeepSeek's
    inference-system note); EP320 with 64 (the V3 report): 1 per GPU. Each slot costs memory:
    the routed experts held per chip are (256 + 32)/256 of the stage's over its 144 chips."""
    m, rack = get_model("deepseek-v3"), get_system("gb200-nvl72")
    plan = Plan(ep=144, redundant_experts=32)
    plan.validate(m, rack)
    assert (plan.expert_slots(m), plan.slots_per_rank(m), plan.label()) == (288, 2, "tp1·ep144·pp1·r32")
    assert plan.as_dict()["redundant_experts"] == 32
    Plan(ep=320, redundant_experts=64).validate(m, get_system("hgx-h100"))
    w = m.weight_bytes()
    held = float(memory_per_chip(m, plan, batch=0.0, context=0.0))
    assert held == pytest.approx(w.non_expert + 288 / 256 * w.routed_experts / 144, rel=1e-12)
    plain = float(memory_per_chip(m, Plan(ep=128), batch=0.0, context=0.0))
    assert plain == pytest.approx(w.non_expert + w.routed_experts / 128, rel=1e-12)


@pytest.mark.parametrize("plan,match", [
    (Plan(ep=144), r"^ep 144: 256 routed experts do not divide evenly over 144 expert groups; use a divisor of "
                   r"256, or add redundant_experts 32 \(copies filling 288 slots, 2 per group\)"),
    (Plan(ep=144, redundant_experts=30), r"^redundant_experts 30: .*use redundant_experts 32"),
    (Plan(ep=2, redundant_experts=258), r"^redundant_experts 258: more copies than 2 expert groups"),
])
def test_redundant_expert_errors_name_the_fix(plan, match):
    with pytest.raises(SpecError, match=match):
        plan.validate(get_model("deepseek-v3"), get_system("gb200-nvl72"))


def test_redundant_experts_need_expert_parallelism_and_a_moe(dense):
    with pytest.raises(SpecError, match="^redundant_experts 8: .*with ep 1"):
        Plan(redundant_experts=8)
    with pytest.raises(SpecError, match="^redundant_experts 2: tiny-dense is dense"):
        Plan(tp=2, ep=2, redundant_experts=2).validate(dense, PAIRS)
    with pytest.raises(SpecError, match="^redundant_experts"):
        Plan(ep=2, redundant_experts=-1)


# --- placement ---------------------------------------------------------------------------------

def test_stage_inside_one_domain():
    w = place(Plan(tp=2), PAIRS)
    assert (w.domains, w.tp_tier, w.ep_tier, w.pp_hops_up, w.pp_hops_out) == (1, "scale_up", "none", 0, 0)


def test_pipeline_packs_stages_per_domain():
    """W = 1 on 2-chip domains: 2 stages per domain; pp 4 -> 2 domains, 1 boundary crosses."""
    w = place(Plan(pp=4), PAIRS)
    assert (w.domains, w.pp_hops_up, w.pp_hops_out) == (2, 2, 1)
    assert w.tiers["pp"] == "both"


def test_wide_stage_spans_whole_domains():
    w = place(Plan(ep=4), PAIRS)  # adp = 4: W = 4 = two domains
    assert (w.domains, w.ep_tier, w.tp_tier) == (2, "two_tier", "none")
    assert place(Plan(ep=4, pp=3), PAIRS).pp_hops_out == 2


def test_a_wide_stage_uses_the_largest_fitting_divisor_per_domain():
    """W = 3 on 2-chip domains: 1 chip in each of 3 domains; EP128 on 72-chip racks: 2 x 64."""
    w = place(Plan(adp=3), PAIRS)
    assert (w.chips_per_domain, w.domains) == (1, 3)
    rack = place(Plan(ep=128), get_system("gb200-nvl72"))
    assert (rack.chips_per_domain, rack.domains, rack.ep_tier) == (64, 2, "two_tier")


def test_uneven_stages_pack_and_leave_chips_idle():
    """EP64 on a 72-chip NVL72 rack: one stage per rack, 8 chips idle, no straddling."""
    rack = get_system("gb200-nvl72")
    w = place(Plan(ep=64, pp=2), rack)
    assert (w.domains, w.ep_tier, w.pp_hops_out) == (2, "scale_up", 1)


def test_tp_group_must_not_straddle_inside_a_wide_stage():
    rack = get_system("gb200-nvl72")
    with pytest.raises(SpecError, match="^tp 16"):
        place(Plan(tp=16, adp=9), rack)  # W = 144 = 2 racks, but 16-chip groups cross the boundary


def test_crossing_domains_needs_a_scale_out_link(dense):
    with pytest.raises(InfeasibleError, match="no scale-out link"):
        Plan(tp=4).validate(dense, SINGLE_DOMAIN)


# --- communication on each tier, by hand -------------------------------------------------------

def test_expert_all_to_all_across_domains(moe):
    """Plan(ep=4): adp 4, W 4 over two 2-chip domains, one expert per group. B = 1, L = 0: each
    chip owns 1/4 token x top-2 = 1/2 token-expert pair on average, but the all-to-all waits for its
    busiest receiver, and a touched 1-expert group receives exactly 1 pair (x2 the mean; issue 18 —
    with the mean this was 64 B and 4·(0.5·64/1e7 + 1e-5) = 4.128e-5 s) -> 1·64·2 B = 128 B.
    p = 4, m = 2: inside 1/4·128/1e8 + 1e-6 = 1.32e-6 s; out 2/4·128/1e7 + 1e-5 = 1.64e-5 s;
    concurrent -> 1.64e-5 s. Dispatch + combine x 2 MoE layers = 6.56e-5 s; no TP, no hops."""
    step = decode_step(moe, PAIRS, batch=1, context=0, plan=Plan(ep=4))
    assert float(step.time.comm_s) == pytest.approx(6.56e-5, rel=EXACT)
    parts = comm_parts(moe, PAIRS, Plan(ep=4), tokens=1)
    assert float(parts.ep_all_to_all_s) == pytest.approx(6.56e-5, rel=EXACT)
    assert float(parts.ep_bytes) == pytest.approx(2 * 2 * 128, rel=EXACT)  # 2 layers x (dispatch + combine)
    assert parts.tiers == {"tp": "none", "ep": "two_tier", "pp": "none"}


def test_fp8_dispatch_and_expert_imbalance(moe):
    """fp8 dispatch halves the dispatch message of the test above to 64 B: out 0.5·64/1e7 + 1e-5 =
    1.32e-5 s; combine stays bf16 1.64e-5 -> (1.32e-5 + 1.64e-5)·2 layers = 5.92e-5 s. A skew cannot
    push more than one pair per token onto a 1-expert group: imbalance 2 changes nothing there.

    Skew on Plan(ep=2) (2 groups of 2 experts, inside one domain), B = 4, imbalance 1.5 (issue 18:
    it now scales reads and FLOPs too, not only the all-to-all). Uniform routing's busiest group
    gets 787/162 pairs (exact, tests/step/test_expert_load.py) -> 1.5·787/162 = 7.287 (under the
    cap 4 tokens x 2 = 8); it reads the experts 1.5·4 = 6 uniformly routed tokens would touch,
    23327/11664 of its 2 (brute force over 6^6 routings). Memory: 63,616 + (23327/23328)·196,608 +
    512 B KV. Compute: 2 tokens x 62,976 + 1.5·787/162 x 98,304 FLOPs. All-to-all: each chip sends
    2 tokens·2 pairs·64·2 = 512 B x 1.5·787/648, half of it to the other chip:
    0.5·512·1.5·787/648/1e8 + 1e-6, x2 (dispatch, combine) x2 layers."""
    fp8 = decode_step(moe, PAIRS, batch=1, context=0, plan=Plan(ep=4), dispatch_dtype="fp8")
    assert float(fp8.time.comm_s) == pytest.approx(5.92e-5, rel=EXACT)
    capped = decode_step(moe, PAIRS, batch=1, context=0, plan=Plan(ep=4), expert_imbalance=2.0)
    assert float(capped.time.comm_s) == pytest.approx(6.56e-5, rel=EXACT)
    hot = decode_step(moe, PAIRS, batch=4, context=0, plan=Plan(ep=2), expert_imbalance=1.5)
    lam = 1.5 * 787 / 648
    assert float(hot.time.memory_s) == pytest.approx((63_616 + 23_327 / 23_328 * 196_608 + 512) / 1e9, rel=EXACT)
    assert float(hot.time.compute_s) == pytest.approx((2 * 62_976 + 1.5 * 787 / 162 * 98_304) / 1e12, rel=EXACT)
    assert float(hot.time.comm_s) == pytest.approx(4 * (0.5 * 512 * lam / 1e8 + 1e-6), rel=EXACT)
    even = decode_step(moe, PAIRS, batch=4, context=0, plan=Plan(ep=2))
    assert float(hot.time.memory_s) > float(even.time.memory_s)
    assert float(hot.time.compute_s) > float(even.time.compute_s)


def test_no_dispatch_without_attention_data_parallel(moe):
    """adp = 1: every chip of the stage holds all tokens after the attention all-reduce, so the
    experts need no all-to-all (the combine is the layer's second all-reduce)."""
    parts = comm_parts(moe, PAIRS, Plan(tp=2, ep=2, adp=1), tokens=4)
    assert float(parts.ep_all_to_all_s) == 0.0
    assert float(parts.tp_all_reduce_s) > 0.0


def test_pipeline_hops_inside_and_across_domains():
    """The tiny dense model with 4 layers, Plan(pp=4), B = 4 -> micro-batches of 1 token; hop
    1·64·2 = 128 B per chip.
    Inside: 1e-6 + 128/1e8 = 2.28e-6 s (2 boundaries); across: 1e-5 + 128/1e7 = 2.28e-5 s (1)
    -> 2·2.28e-6 + 2.28e-5 = 2.736e-5 s per iteration."""
    deep = model_from_hf_config({**DENSE, "num_hidden_layers": 4}, name="tiny-dense-4")
    step = decode_step(deep, PAIRS, batch=4, context=0, plan=Plan(pp=4))
    assert float(step.time.comm_s) == pytest.approx(2.736e-5, rel=EXACT)


def test_tensor_parallel_across_domains_is_hierarchical(dense):
    """tp 4 over two 2-chip domains, B = 2, L = 0: all-reduce of 2·64·2 = 256 B.
    One scale-up floor 1e-6 s, then reduce-scatter inside (m = 2): 0.5·256/1e8 = 1.28e-6 s, and the
    all-gather again; across: all-reduce of 128 B between 2 domains, ring = one-shot at p = 2,
    1e-5 + 1·128/1e7 = 2.28e-5 s -> 1e-6 + 2.56e-6 + 2.28e-5 = 2.636e-5 s, x 2 per layer x 2 layers
    = 1.0544e-4 s (one floor per tier crossed, not one per phase and ring step)."""
    step = decode_step(dense, PAIRS, batch=2, context=0, plan=Plan(tp=4))
    assert float(step.time.comm_s) == pytest.approx(1.0544e-4, rel=EXACT)


# --- properties --------------------------------------------------------------------------------

REAL = [("deepseek-v3", "hgx-h100"), ("deepseek-v3", "gb200-nvl72"), ("qwen3-30b-a3b", "hgx-h100"),
        ("llama-3.1-70b", "hgx-h100")]


def _plans(model):
    if model.is_moe:
        return st.builds(lambda tp, adp, ep, pp: Plan(tp=tp, adp=adp, ep=ep, pp=pp),
                         st.sampled_from([1, 2, 4, 8]), st.sampled_from([1, 2, 4, 8, 16]),
                         st.sampled_from([1, 2, 4, 8, 16]), st.sampled_from([1, 2, 3, 4]))
    return st.builds(lambda tp, pp: Plan(tp=tp, pp=pp), st.sampled_from([1, 2, 4, 8, 16]), st.sampled_from([1, 2, 5]))


@pytest.mark.parametrize("model_name,system_name", REAL)
@FAST
@given(data=st.data(), batch=st.integers(min_value=1, max_value=4096), context=st.integers(0, 100_000))
def test_plan_invariants(model_name, system_name, data, batch, context):
    """Weights are conserved across any sharding (adp replicas of the non-expert part), the
    placement accounts for every hop, and a one-chip plan communicates nothing."""
    m, s = get_model(model_name), get_system(system_name)
    try:
        plan = data.draw(_plans(m))
        plan.validate(m, s)
    except (SpecError, InfeasibleError):
        return
    w = m.weight_bytes()
    held = float(memory_per_chip(m, plan, batch=0.0, context=0.0)) * plan.chips
    if m.n_layers % plan.pp == 0:
        assert held == pytest.approx(plan.adp * w.non_expert + w.routed_experts, rel=1e-12)
    else:
        assert held >= w.total * (1 - 1e-12)
    where = place(plan, s)
    assert where.pp_hops_up + where.pp_hops_out == plan.pp - 1
    assert where.domains * s.chips >= plan.chips
    step = decode_step(m, s, batch=batch, context=context, plan=plan)
    assert float(step.time.comm_s) >= 0.0
    one = decode_step(m, s, batch=batch, context=context, plan=Plan())
    assert float(one.time.comm_s) == 0.0


def test_rack_boundary_makes_expert_parallelism_slower():
    """SPEC D15: the same EP group size costs more all-to-all time once it leaves an 8-GPU HGX
    (scale-out is 9x slower per direction) than inside one 72-GPU NVL72 rack."""
    m = get_model("deepseek-v3")
    hgx, rack = get_system("hgx-h100"), get_system("gb200-nvl72")
    t_hgx = float(comm_parts(m, hgx, Plan(ep=32), tokens=32 * 64).ep_all_to_all_s)
    t_rack = float(comm_parts(m, rack, Plan(ep=32), tokens=32 * 64).ep_all_to_all_s)
    t_in = float(comm_parts(m, hgx, Plan(ep=8), tokens=8 * 64).ep_all_to_all_s)
    assert t_hgx > 5 * t_rack
    assert t_hgx > 3 * t_in


# --- feasible_plans: the searches' one filter, errors as data --------------------------------------

def test_feasible_plans_keeps_the_valid_ones_in_order(dense, moe):
    """tiny-dense: 4 heads, 2 KV heads, 2 layers; on 2-chip domains without scale-out.
    tp 1 and 2 fit one domain; tp 3 does not divide the 4 heads; tp 4 would cross domains with no
    scale-out link; pp 3 exceeds the 2 layers. tiny-moe: 4 experts, so ep 3 does not divide them."""
    grid = [Plan(tp=1), Plan(tp=3), Plan(tp=2), Plan(tp=4), Plan(pp=3), Plan(pp=2)]
    got = list(feasible_plans(dense, SINGLE_DOMAIN, grid))
    assert [p for p, _ in got] == [Plan(tp=1), Plan(tp=2), Plan(pp=2)]
    assert [w.tp_tier for _, w in got] == ["none", "scale_up", "none"]
    moe_plans = feasible_plans(moe, PAIRS, [Plan(tp=1, ep=3, adp=3), Plan(ep=2)])
    assert [p.label() for p, _ in moe_plans] == ["tp1·ep2·pp1"]
    assert list(feasible_plans(dense, SINGLE_DOMAIN, [])) == []


def test_check_returns_what_validate_raises(dense, moe):
    """``Plan.check`` gives the error as data: the same type, field and rule ``validate`` raises."""
    for model, plan, system in ((dense, Plan(tp=3), PAIRS), (dense, Plan(tp=4), SINGLE_DOMAIN),
                                (moe, Plan(tp=1, ep=3, adp=3), PAIRS), (dense, Plan(pp=3), PAIRS)):
        problem = plan.check(model, system)
        with pytest.raises(type(problem)) as raised:
            plan.validate(model, system)
        assert (raised.value.field, raised.value.rule) == (problem.field, problem.rule)
    assert Plan(tp=2).check(dense, PAIRS) == place(Plan(tp=2), PAIRS)


@FAST
@given(tp=st.sampled_from([1, 2, 3, 4, 8, 16, 32, 64]), ep=st.sampled_from([1, 2, 4, 8, 16, 32, 64, 128, 256]),
       pp=st.sampled_from([1, 2, 3, 4, 8, 128]), model_name=st.sampled_from(["llama-3.1-70b", "deepseek-v3"]),
       system_name=st.sampled_from(["hgx-h100", "gb200-nvl72"]))
def test_feasible_plans_agrees_with_validate(tp, ep, pp, model_name, system_name):
    """A plan is yielded exactly when ``validate`` accepts it, with ``place``'s placement."""
    model, system = get_model(model_name), get_system(system_name)
    try:
        plan = Plan(tp=tp, ep=ep, pp=pp, adp=ep * 4 if ep > tp else None)
    except SpecError:
        return
    try:
        expected = [(plan, plan.validate(model, system))]
    except (SpecError, InfeasibleError):
        expected = []
    assert list(feasible_plans(model, system, [plan])) == expected
