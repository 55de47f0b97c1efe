"""SPEC sections D (items 14-19: routed scaling, expert and pipeline parallelism, scale-up
domains, tensor parallelism), E (item 20: the train schedule) and F (items 21-24: training
economics) — each lecture number recomputed through llmecon and compared."""

from __future__ import annotations

from dataclasses import replace

from ..econ import training as T
from ..spec.deployment import Deployment
from ..catalog.hardware import get_system
from ..catalog.models import get_model
from ..dtypes import get_dtype
from ..step.inference import ACTIVATION_DTYPE, comm_parts, memory_per_chip
from ..spec.model import Model
from ..spec.plan import Plan, pipeline_stage_time_ratio
from ..econ.routed_scaling import default_routed_law, effective_ratio, experts_for_ratio
from ..serving import SimConfig, Train, fixed, simulate, synthetic
from ..econ.training_step import TrainPlan, memory_per_gpu, train_step
from . import inputs as I
from .claims import Claim, Tolerance, check, undecided

SCALEOUT = "scale-out is ~9× slower per direction than scale-up (DGX H100 450 vs 50 GB/s; GB300 900 vs 100) or " \
           "~18× with GB200's 400G NICs, not 8× (SPEC D15, G)"


def _d14() -> list[Claim]:
    law = default_routed_law()
    src = f"SPEC D14; routed law: {law.label} (catalog/routed_law_power_fit.toml)"
    g6 = "Clark et al. do not support '100× total for 10× active': under the fit of the lecture's own reading " \
         "(γ ≈ 0.30) 100 experts give ≈ 4× and 10× needs ~2,000 experts (SPEC D14, G)"
    return [
        check("D14.64-experts-effective-ratio", statement="64 experts are worth ~4× the active parameters "
              "(dense-equivalent / active)", lecture=4.0,
              computed=float(effective_ratio(I.CLARK_ACTIVE_PARAMS, 64, law)),
              unit="×", tol=Tolerance(kind="rel", value=0.15, why="a figure reading"), fmt=".3g",
              agree="64 is the expert count, not 64× total params; the default law is fitted to this very reading "
                    "(64 experts at 370M ≈ 1.3B dense), so this checks the arithmetic, not the paper", source=src),
        check("D14.100x-total-for-10x-active", statement="'100× total params for the equivalent of 10× active': "
              "dense-equivalent / active at 100 experts", lecture=10.0,
              computed=float(effective_ratio(I.CLARK_ACTIVE_PARAMS, 100, law)), unit="×",
              tol=Tolerance(kind="rel", value=0.15), fmt=".3g", correct=g6, source=src),
        check("D14.experts-for-10x-active", statement="Experts needed for 10× the active parameters", lecture=100,
              computed=float(experts_for_ratio(10.0, law)), unit="experts", tol=Tolerance(kind="factor", value=1.5),
              fmt=",.0f", correct=g6, source=src),
    ]


def _d15_16() -> list[Claim]:
    out = []
    for sid in ("hgx-h100", "gb200-nvl72", "gb300-nvl72"):
        s = get_system(sid)
        out.append(check(f"D15.scale-out-ratio-{sid}", statement=f"Scale-up over scale-out bandwidth per direction, "
                         f"{s.name}", lecture=I.LECTURE_SCALEOUT_RATIO, computed=s.scale_out_ratio, unit="×",
                         tol=Tolerance(kind="rel", value=0.05, why="link speeds are datasheet figures"), fmt=".3g",
                         correct=SCALEOUT, source=f"SPEC D15, G; catalogue {sid}; lecture_cases scaleout_ratio_*"))
    nvl, dgx = get_system("gb200-nvl72"), get_system("hgx-h100")
    out += [
        check("D16.domain-chips-hopper", statement="Scale-up domain size, Hopper (HGX/DGX H100)", lecture=8,
              computed=dgx.chips, unit="GPUs", tol=Tolerance(kind="exact"), fmt="d",
              source="SPEC D16; catalogue hgx-h100"),
        check("D16.domain-chips-blackwell", statement="Scale-up domain size, Blackwell NVL72", lecture=72,
              computed=nvl.chips, unit="GPUs", tol=Tolerance(kind="exact"), fmt="d",
              source="SPEC D16; catalogue gb200-nvl72"),
        check("D16.nvl72-aggregate-bandwidth", statement="Aggregate HBM bandwidth of a GB200 NVL72", lecture=576,
              computed=nvl.hbm_bandwidth_bytes_per_s * 1e-12, unit="TB/s", tol=Tolerance(kind="rel", value=0.01),
              fmt=".4g", source="SPEC D16; catalogue gb200-nvl72"),
        check("D16.nvl72-over-dgx-h100-bandwidth", statement="... over a DGX H100's (what lowers the latency floor)",
              lecture=21.5, computed=nvl.hbm_bandwidth_bytes_per_s / dgx.hbm_bandwidth_bytes_per_s, unit="×",
              tol=Tolerance(kind="rel", value=0.01), fmt=".3g", source="SPEC D16; catalogue gb200-nvl72, hgx-h100"),
    ]
    return out


def _d17() -> list[Claim]:
    k = get_model("deepseek-v3").moe.top_k
    viable = lambda ratio: "viable" if ratio >= 1.0 else "not viable"  # noqa: E731  SPEC D17: 2kL >= BW_up/BW_out
    gb200 = get_system("gb200-nvl72").scale_out_ratio
    one_gb200 = float(pipeline_stage_time_ratio(active_experts=k, layers_per_stage=1, bandwidth_ratio=gb200))
    layers = next(n for n in range(1, 64) if pipeline_stage_time_ratio(active_experts=k, layers_per_stage=n,
                                                                       bandwidth_ratio=gb200) >= 1.0)
    src = "SPEC D17; catalogue deepseek-v3 (k = 8)"
    return [
        check("D17.pipeline-lecture-ratio", statement="Pipeline across racks: scale-up over scale-out time per stage, "
              "2·k·L_stage / (BW_up/BW_out), k = 8, one layer, the lecture's ratio 8", lecture=2.0,
              computed=pipeline_stage_time_ratio(active_experts=k, layers_per_stage=1,
                                                 bandwidth_ratio=I.LECTURE_SCALEOUT_RATIO),
              unit="×", tol=Tolerance(kind="rel", value=1e-9), fmt=".3g", source=src + "; lecture_cases "
              "pipeline_viability_k8_ratio8"),
        check("D17.one-layer-stage-hgx-h100", statement="One MoE layer per stage across DGX H100 domains (ratio 9)",
              lecture="viable", computed=viable(float(pipeline_stage_time_ratio(
                  active_experts=k, layers_per_stage=1, bandwidth_ratio=get_system("hgx-h100").scale_out_ratio))),
              unit="", tol=Tolerance(kind="exact"), agree="16 ≥ 9", source=src + ", hgx-h100"),
        check("D17.one-layer-stage-gb200-nvl72", statement="One MoE layer per stage across GB200 NVL72 racks "
              "(ratio 18)", lecture="viable", computed=viable(one_gb200), unit="", tol=Tolerance(kind="exact"),
              correct=f"with 400G NICs scale-out is 18× slower: 16/18 = {one_gb200:.2f} < 1, so a stage needs 2 "
                      "layers (SPEC D17, G)", source=src + ", gb200-nvl72"),
        check("D17.layers-per-stage-gb200-nvl72", statement="Fewest MoE layers per stage that make the GB200 NVL72 "
              "pipeline viable", lecture=1, computed=layers, unit="layers", tol=Tolerance(kind="exact"), fmt="d",
              correct="2·8·L ≥ 18 needs L = 2 layers per stage (SPEC D17, G)", source=src + ", gb200-nvl72"),
    ]


def pipeline_memory(model: Model, stages=I.PP_STAGES) -> tuple[list[float], list[float]]:
    """(weights per chip, KV per chip) in bytes for P in ``stages``, EP = 64, P micro-batches of
    2,400 sequences at 32,768 tokens in flight (SPEC D18; lecture_cases pp_inference_memory_per_gpu)."""
    weights, kv = [], []
    for p in stages:
        plan = Plan(ep=I.PP_EXPERT_PARALLEL, pp=p)
        w = float(memory_per_chip(model, plan, batch=0.0, context=0.0))
        total = float(memory_per_chip(model, plan, batch=p * I.PP_MICRO_BATCH, context=I.PP_CONTEXT))
        weights.append(w)
        kv.append(total - w)
    return weights, kv


def _d18_19() -> list[Claim]:
    ds = get_model("deepseek-v3")
    w, kv = pipeline_memory(ds)
    p = I.PP_STAGES[-1]
    uneven = f"61 layers split unevenly: the largest of {p} stages holds 8 layers, not 61/{p}"
    src = "SPEC D18; catalogue deepseek-v3; lecture_cases pp_inference_memory_per_gpu"
    llama, hgx = get_model("llama-3.1-70b"), get_system("hgx-h100")
    parts = comm_parts(llama, hgx, Plan(tp=8), tokens=I.TP_BATCH)
    per_reduce = llama.n_layers * I.TP_BATCH * llama.d_model * get_dtype(ACTIVATION_DTYPE).bytes
    return [
        check("D18.weights-per-chip-over-p", statement=f"Pipeline with P stages for inference: weights per chip at "
              f"P = 1 over P = {p} (DeepSeek-V3, EP 64)", lecture=float(p), computed=w[0] / w[-1], unit="×",
              tol=Tolerance(kind="rel", value=0.1, why=uneven), fmt=".3g", source=src),
        check("D18.kv-per-chip-unchanged", statement=f"... KV per chip at P = {p} over P = 1, P micro-batches of "
              "2,400 sequences at 32K in flight", lecture=1.0, computed=kv[-1] / kv[0], unit="×",
              tol=Tolerance(kind="rel", value=0.1, why=uneven), fmt=".3g", source=src),
        check("D18.kv-per-chip-deepseek", statement="KV per chip, DeepSeek-V3 (70,272 B/token), EP 64, 2,400 "
              "sequences of 32,768 tokens", lecture=86.35, computed=kv[0] * 1e-9, unit="GB",
              tol=Tolerance(kind="rel", value=0.001), fmt=".4g", source=src),
        check("D19.tp-all-reduces-per-layer", statement="Tensor parallelism all-reduces the B·D activations twice per "
              "layer (Llama-3.1-70B, tp 8): bytes per layer / (B·D·bytes)", lecture=2.0,
              computed=float(parts.tp_bytes) / per_reduce, unit="per layer", tol=Tolerance(kind="rel", value=1e-9),
              fmt=".3g", source="SPEC D19; catalogue llama-3.1-70b, hgx-h100"),
    ]


def _e20() -> list[Claim]:
    dep = Deployment(model=get_model("llama-3.1-8b"), system=get_system("h100-sxm"), plan=Plan())
    wl = synthetic(rate_per_s=I.TRAIN_RATE_PER_S, prompt=fixed(I.TRAIN_TOKENS), output=fixed(I.TRAIN_TOKENS),
                   duration_s=I.TRAIN_DURATION_S, seed=0)
    res = simulate(dep, wl, SimConfig(policy=Train(batch_cap=I.TRAIN_BATCH_CAP), seed=0))
    tau = res.pools[0].tau_s
    wait = res.queue_wait_s
    src = (f"SPEC E20; simulator, Llama-3.1-8B on one H100, Poisson {I.TRAIN_RATE_PER_S:g}/s, {len(wait):,} requests, "
           f"train every {tau * 1e3:.2f} ms")
    return [
        check("E20.train-mean-wait", statement="Trains leave on a fixed cadence τ, full or not: mean wait to board, "
              "in units of τ (light load)", lecture=0.5, computed=float(wait.mean()) / tau, unit="τ",
              tol=Tolerance(kind="rel", value=0.05, why="simulation noise"), fmt=".3f",
              agree="a Poisson arrival sees a uniform residual time to the next departure", source=src),
        check("E20.train-max-wait", statement="... and the longest wait, in units of τ (there is room on every train)",
              lecture=1.0, computed=float(wait.max()) / tau, unit="τ", tol=Tolerance(kind="at_most"),
              fmt=".3f", source=src),
    ]


def lifetime_split():
    """The lecture's over-training arithmetic (SPEC F22) through ``llmecon.econ.training``: lifetime
    inference tokens, pretraining tokens at equal cost, pretraining over RL tokens, the equal split
    and the cheapest model at the same loss. Returns (d_inf, d_pre, pre_over_rl, thirds, best, curve)."""
    n = I.OVERTRAIN_ACTIVE_PARAMS
    d_inf = float(T.inference_tokens(tokens_per_s=I.INFERENCE_TOKENS_PER_S, seconds=I.DEPLOYMENT_DAYS * 86400.0))
    d_pre = float(T.pretrain_tokens_matching_inference(inference_tokens=d_inf,
                                                       inference_efficiency=I.INFERENCE_EFFICIENCY))
    rl = dict(rl_flops_per_param_token=I.RL_FLOPS_PER_PARAM_TOKEN, rl_efficiency=I.RL_EFFICIENCY)
    pre_over_rl = float(T.pretrain_tokens_matching_rl(rl_tokens=1.0, **rl))
    kw = dict(inference_tokens=d_inf, inference_efficiency=I.INFERENCE_EFFICIENCY, rl_tokens=d_pre / pre_over_rl, **rl)
    thirds = T.lifetime_cost(params=n, pretrain_tokens=d_pre, **kw)
    best, curve = T.lifetime_optimum(target_loss=float(thirds.loss), **kw)
    return d_inf, d_pre, pre_over_rl, thirds, best, curve


def _f21_23() -> list[Claim]:
    n = I.OVERTRAIN_ACTIVE_PARAMS
    d_inf, d_pre, pre_over_rl, thirds, best, _ = lifetime_split()
    P, M, V = I.BUBBLE_STAGES, I.BUBBLE_MICROBATCHES, I.BUBBLE_CHUNKS
    return [
        check("F21.flops-per-param-token", statement="Training compute C = 6·N·D: FLOPs per parameter per token",
              lecture=6, computed=float(T.training_flops(params=1.0, tokens=1.0)), unit="FLOP",
              tol=Tolerance(kind="exact"), fmt=".3g", source="SPEC F21; Kaplan et al. 2020"),
        check("F21.chinchilla-100b", statement="Chinchilla tokens for 100B parameters (~20 per parameter)",
              lecture=2e12,
              computed=float(T.chinchilla_tokens(params=n)), unit="tokens", tol=Tolerance(kind="rel", value=1e-9),
              fmt=".3g", source="SPEC F21; Hoffmann et al. 2022; lecture_cases chinchilla_tokens"),
        check("F22.inference-tokens", statement="Lifetime inference tokens: 50M tokens/s for 60 days", lecture=2.6e14,
              computed=d_inf, unit="tokens", tol=Tolerance(kind="rel", value=0.01), fmt=".3g",
              source="SPEC F22; lecture_cases inference_tokens_2_months"),
        check("F22.overtrain-factor", statement="Pretraining tokens at equal cost with inference (η_inf = 1/3), over "
              "Chinchilla's, N_a = 100B", lecture=I.LECTURE_OVERTRAIN,
              computed=float(T.overtrain_factor(tokens=d_pre, params=n)), unit="×",
              tol=Tolerance(kind="factor", value=1.5, why="'about a hundred times'"), fmt=".4g",
              source="SPEC F22; lecture_cases overtrain_factor_lecture"),
        check("F22.pretrain-over-rl-tokens", statement="Pretraining tokens at equal cost with RL (r = 3, η_RL = 1/3) "
              "over RL tokens", lecture=1.5, computed=pre_over_rl, unit="×", tol=Tolerance(kind="rel", value=1e-6),
              fmt=".3g", source="SPEC F22; lecture_cases equal_cost_pretrain_vs_rl"),
        check("F22.equal-split-pretrain-share", statement="Equal thirds are the optimum: pretraining's share of "
              "lifetime compute for the cheapest model at the same loss (Chinchilla law)", lecture="1/3",
              reference=1 / 3,
              computed=float(best.shares[0]), unit="share", tol=Tolerance(kind="rel", value=0.1), fmt=".3f",
              correct=f"an equal split is optimal only for equal power-law exponents; under the Chinchilla law "
                      f"(α = {T.CHINCHILLA.alpha}, β = {T.CHINCHILLA.beta}) the optimum is a "
                      f"{float(best.params) / 1e9:.0f}B model trained on {float(best.pretrain_tokens):.2g} tokens, "
                      f"spending {float(best.shares[0]):.0%} on pretraining and {float(best.shares[2]):.0%} on "
                      "inference (SPEC F22)",
              source="SPEC F22; Hoffmann et al. 2022 approach 3; Sardana et al. 2023"),
        check("F22.equal-split-cost", statement="... yet its lifetime compute over the equal split's", lecture=1.0,
              computed=float(best.total_flops) / float(thirds.total_flops), unit="×",
              tol=Tolerance(kind="rel", value=0.05), fmt=".3f",
              agree="the equal split is a good heuristic: the true optimum saves only a few percent",
              source="SPEC F22"),
        check("F23.gpipe-bubble", statement=f"GPipe/1F1B bubble (P−1)/(M+P−1), P = {P}, M = {M}", lecture="3/11",
              reference=3 / 11,  # (4 - 1)/(8 + 4 - 1)
              computed=float(T.gpipe_bubble_fraction(stages=P, microbatches=M)), unit="of step",
              tol=Tolerance(kind="rel", value=1e-4), fmt=".4f", source="SPEC F23; GPipe arXiv:1811.06965"),
        check("F23.interleaved-bubble", statement=f"Interleaved 1F1B bubble / ideal (P−1)/(v·M), v = {V}",
              lecture="3/16", reference=3 / 16,  # (4 - 1)/(2 · 8)
              computed=float(T.interleaved_bubble_over_ideal(stages=P, microbatches=M, chunks=V)),
              unit="of ideal", tol=Tolerance(kind="rel", value=1e-9), fmt=".4f",
              source="SPEC F23; Narayanan et al. arXiv:2104.04473 §2.2"),
    ]


def with_depth(model: Model, layers: int) -> Model:
    """``model``'s layer shape at another depth (dense models: every layer alike)."""
    return replace(model, name=f"{model.name} ({layers} layers)", n_layers=layers, moe_layers=(), layer_windows=(),
                   kv_holding=(), layer_mixers=(), layer_ffn_dims=(), layer_sparsity=(), layer_compress=(),
                   _cache={})


def activation_memory(depths=I.REVNET_DEPTHS) -> dict[str, list[float]]:
    """Activation bytes per GPU against depth for store-all, checkpointing and reversible layers
    (training_step.memory_per_gpu: Korthikanti et al. 2022 accounting; reversible keeps only the
    stage output, SPEC F24), one micro-batch of REVNET_SEQ_LEN tokens, Llama-3.1-8B's layer shape."""
    base, system = get_model(I.REVNET_MODEL), get_system(I.REVNET_SYSTEM)
    out: dict[str, list[float]] = {"store all": [], "checkpointing": [], "reversible": []}
    for depth in depths:
        m = with_depth(base, depth)
        for label, mode in (("store all", "none"), ("checkpointing", "full"), ("reversible", "reversible")):
            out[label].append(memory_per_gpu(m, system, TrainPlan(recompute=mode), seq_len=I.REVNET_SEQ_LEN,
                                             microbatches=1).activations)
    return out


def measured_reversible_activations(depths=(2, 16), *, batch: int = 2, seq_len: int = 8, d_model: int = 16):
    """Saved activation bytes of ``llmecon.revnet``'s reversible transformer and of its standard-backprop
    twin (same weights), measured with autograd's saved-tensor hooks on CPU, at each depth: a
    measurement of the module, not of a formula. None without PyTorch (``pip install 'llmecon[torch]'``)."""
    try:
        import torch

        from ..revnet import reversible_transformer, saved_activation_bytes
    except ImportError:
        return None
    x = torch.zeros(batch, seq_len, 2 * d_model)
    out = {"reversible": [], "standard": []}
    with torch.random.fork_rng():
        torch.manual_seed(0)
        for depth in depths:
            model = reversible_transformer(depth, d_model, 2)
            out["reversible"].append(saved_activation_bytes(model, x))
            out["standard"].append(saved_activation_bytes(model.forward_standard, x))
    return out


def _f24_depth_claim(src: str) -> Claim:
    depths = (2, 16)
    statement = (f"Reversible activation memory is O(1) in depth: saved bytes at {depths[1]} reversible blocks "
                 f"over {depths[0]}, measured on llmecon.revnet's module")
    measured = measured_reversible_activations(depths)
    if measured is None:
        return undecided("F24.reversible-activations-vs-depth", statement=statement, lecture=1.0,
                         computed="not measured", unit="×",
                         reason="SPEC F24 says O(1); deciding it needs PyTorch to measure the reversible module "
                                "(pip install 'llmecon[torch]')", source=src)
    rev, std = measured["reversible"], measured["standard"]
    return check("F24.reversible-activations-vs-depth", statement=statement, lecture=1.0, computed=rev[1] / rev[0],
                 unit="×", tol=Tolerance(kind="rel", value=0.01), fmt=".3f",
                 agree=f"only the last block's output is saved ({rev[0]:,} B); the same blocks under standard "
                       f"backprop save {std[1] / std[0]:.1f}× more at {depths[1]} blocks than at {depths[0]}",
                 source=src + "; measured with autograd saved-tensor hooks (torch, CPU)")


def _f24() -> list[Claim]:
    base, system = get_model(I.REVNET_MODEL), get_system(I.REVNET_SYSTEM)
    st = train_step(base, system, TrainPlan(recompute="reversible"), seq_len=I.REVNET_SEQ_LEN,
                    global_batch_tokens=float(I.REVNET_SEQ_LEN))
    depths = I.REVNET_DEPTHS
    mem = activation_memory(depths)
    deep = depths[-1] // depths[0]
    store = mem["store all"]
    # bytes each added layer costs, at the shallow end (depths[0] -> depths[1]) and the deep end
    slope_shallow = (store[1] - store[0]) / (depths[1] - depths[0])
    slope_deep = (store[-1] - store[-2]) / (depths[-1] - depths[-2])
    src = f"SPEC F24; RevNet arXiv:1707.04585 §3; training_step accounting, {I.REVNET_MODEL} layers"
    return [
        check("F24.reversible-compute-overhead", statement="Reversible blocks cost ~33% more compute (4N vs 3N): "
              "hardware FLOPs / model FLOPs − 1 of a training step", lecture="~33%", reference=1 / 3,
              computed=st.hardware_flops / st.model_flops - 1.0, unit="extra", tol=Tolerance(
                  kind="rel", value=0.1, why="the output head is not recomputed"), fmt=".3f", source=src),
        _f24_depth_claim(src),
        check("F24.store-all-linear-in-depth", statement=f"Stored activations are O(L): bytes per added layer at "
              f"{depths[-2]}-{depths[-1]} layers over those at {depths[0]}-{depths[1]}", lecture="O(L)",
              reference=1.0, computed=slope_deep / slope_shallow, unit="×", tol=Tolerance(kind="rel", value=0.01),
              fmt=".3f", agree=f"every layer adds {slope_deep / 1e6:,.0f} MB; {deep}× the depth holds "
                               f"{store[-1] / store[0]:.1f}× the activations (the logits do not grow)", source=src),
    ]


def claims() -> list[Claim]:
    """Every claim of sections D, E and F, in SPEC order."""
    return _d14() + _d15_16() + _d17() + _d18_19() + _e20() + _f21_23() + _f24()
