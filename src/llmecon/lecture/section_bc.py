"""SPEC sections B (items 7-9: KV bytes, crossover context, context tiers) and C (items 10-13:
prices read backwards) — each lecture number recomputed through llmecon and compared."""

from __future__ import annotations

import math
from dataclasses import replace

from ..spec.deployment import Deployment
from ..econ.batching import crossover_context, crossover_context_lecture, smallest_plan
from ..catalog.hardware import get_accelerator, get_storage_device, get_system
from ..catalog.models import get_model
from ..catalog.prices import get_price_sheet
from ..econ.context import block_sparse_reads, context_economics, kv_per_sequence_bytes, tiers_for_steps
from ..econ.kvcache import break_even_price_ratio
from ..econ.pricing import (break_even_hold_s, cache_hold_price_per_hour, decode_prefill_cost_ratio, infer_fast_mode,
    kv_bytes_from_crossover, operating_point)
from . import inputs as I
from .claims import Claim, Tolerance, check, undecided

GB, MIN, HOUR = 1e-9, 1 / 60.0, 1 / 3600.0  # bytes -> GB; seconds -> minutes / hours (display)
EXACT = Tolerance(kind="exact")


def _b7() -> list[Claim]:
    src_dsa = "SPEC B7; catalogue deepseek-v3.2-exp (top-k 2048, fp8 KV)"
    dsa = get_model("deepseek-v3.2-exp")
    L = I.DSA_CONTEXT
    # dense attention over the same fp8 layout (656 B/token/layer, no indexer) against DSA's reads
    # (the 132 B indexer key of every token + the top-k latents)
    dense_over_dsa = float(dsa.dense_kv_read_bytes(L, "fp8")) / float(dsa.kv_read_bytes(L, "fp8"))
    Ls = I.DSA_SLOPE_CONTEXT
    dsa_slope = math.log2(float(dsa.kv_read_bytes(2 * Ls, "fp8")) / float(dsa.kv_read_bytes(Ls, "fp8")))
    one = block_sparse_reads(context=I.BLOCK_SPARSE_CONTEXT, selected_blocks=I.BLOCK_SPARSE_BLOCKS)
    two = block_sparse_reads(context=2 * I.BLOCK_SPARSE_CONTEXT, selected_blocks=I.BLOCK_SPARSE_BLOCKS)
    return [
        check("B7.mla-kv-deepseek-v3", statement="DeepSeek-V3 MLA KV bytes per token (bf16): 61 layers × "
              "(512 + 64) × 2",
              lecture=70272, computed=get_model("deepseek-v3").kv_bytes_per_token("bf16"), unit="B/token",
              tol=EXACT, fmt=",.0f", source="SPEC B7; catalogue deepseek-v3"),
        check("B7.dsa-reads-vs-dense", statement="DeepSeek sparse attention reads ~5× less KV than dense at 128K",
              lecture=5.0, computed=dense_over_dsa, unit="×", tol=Tolerance(kind="rel", value=0.2, why="'~5×'"),
              fmt=".3g", source=src_dsa),
        check("B7.dsa-scaling-exponent", statement="How DSA's KV reads grow with context: exponent of L "
              "(reads ∝ L^x, read between 1M and 2M tokens)", lecture="√L", reference=0.5, computed=dsa_slope,
              unit="exponent", tol=Tolerance(kind="abs", value=0.1), fmt=".3f",
              correct="DSA reads L·b_index + min(L, 2048)·b_kv per layer: ~5× less than dense, still linear in L; "
                      "only block-sparse attention with block √(L/k_b) gives a square-root law (SPEC B7, G)",
              source=src_dsa),
        check("B7.block-sparse-exponent", statement="Block-sparse attention with block √(L/k_b) reads 2√(k_b·L): "
              "exponent of L", lecture="√L", reference=0.5,
              computed=math.log2(float(two.token_reads) / float(one.token_reads)), unit="exponent",
              tol=Tolerance(kind="abs", value=0.01), fmt=".3f",
              source="SPEC B7; lecture_cases block_sparse_sqrt_optimum"),
        check("B7.block-sparse-reads-1m", statement="Block-sparse reads at L = 1M with k_b = 16 blocks: 2√(16 × 1M)",
              lecture=8000, computed=float(one.token_reads), unit="tokens", tol=Tolerance(kind="rel", value=1e-9),
              fmt=",.0f", source="SPEC B7; lecture_cases block_sparse_sqrt_optimum"),
    ]


def _b8() -> list[Claim]:
    r = get_accelerator("h100-sxm").flops_per_byte("bf16")
    out = []
    for name, said in (("llama-3.1-70b", 1400), ("deepseek-v3", 3600)):
        m = get_model(name)
        lx = crossover_context_lecture(active_params=m.params.active, flops_per_byte=r,
                                       kv_bytes_per_token=m.kv_bytes_per_token("bf16"))
        out.append(check(f"B8.crossover-{name}-h100", statement=f"Crossover context L_x = 2·N_active/(R·kv): "
                         f"{m.name} ({m.attention_label}) on H100, bf16 KV", lecture=said, computed=float(lx),
                         unit="tokens", tol=Tolerance(kind="rel", value=0.05, why="SPEC gives 2 significant figures"),
                         fmt=",.0f", agree="the lecture's form, attention FLOPs left out of the compute side (see "
                                           "B8.crossover-attention-deepseek-v3-h100)",
                         source=f"SPEC B8; catalogue {name}, h100-sxm"))
    m = get_model("deepseek-v3")
    kv = m.kv_bytes_per_token("bf16")
    a = float(m.attention_flops_per_token(1.0))  # absorbed MLA: 61 x 2·128·(576 + 512) FLOP per cached token
    lx = crossover_context(active_params=m.params.active, flops_per_byte=r, kv_bytes_per_token=kv,
                           attention_flops_per_cached_token=a)
    out.append(check("B8.crossover-attention-deepseek-v3-h100", statement="Crossover context with attention FLOPs "
                     "counted as compute, L_x = 2·N_active/(R·kv - a): DeepSeek-V3 (absorbed MLA) on one H100, bf16",
                     lecture=3600, computed=float(lx), unit="tokens",
                     tol=Tolerance(kind="rel", value=0.05, why="SPEC gives 2 significant figures"), fmt=",.0f",
                     correct=f"absorbed MLA does 2·128·(576 + 512) = 278,528 FLOP per cached token per layer against "
                             f"1,152 B of bf16 latent ({a / kv:.0f} FLOP/B, close to H100's ridge {r:.0f}), so compute "
                             f"grows almost as fast as KV reads: L_x = 2·N_active/(R·kv - a) = {float(lx):,.0f} "
                             "tokens, not SPEC B8's 3.6K; on H200 (ridge 206) KV reads never catch up (issue 18)",
                     source="SPEC B8 (issue 18: attention FLOPs); catalogue deepseek-v3, h100-sxm"))
    out.append(check("B8.kv-1m-at-2kb", statement="KV of one 1M-token sequence at 2 KB/token", lecture=2.0,
                     computed=float(kv_per_sequence_bytes(kv_bytes_per_token=I.TWO_KB,
                                                          context=I.PER_SEQUENCE_CONTEXT)) * GB,
                     unit="GB", tol=Tolerance(kind="rel", value=0.01), fmt=".3g", source="SPEC B8"))
    for name, said in (("deepseek-v3", 70.0), ("llama-3.1-70b", 328.0)):
        out.append(check(f"B8.kv-1m-{name}", statement=f"KV of one 1M-token sequence, {name} (bf16 KV)", lecture=said,
                         computed=float(get_model(name).kv_bytes(I.PER_SEQUENCE_CONTEXT, "bf16")) * GB, unit="GB",
                         tol=Tolerance(kind="rel", value=0.01), fmt=".3g", source=f"SPEC B8; catalogue {name}"))
    return out


def _b9() -> list[Claim]:
    m, s = get_model("deepseek-v3"), get_system("gb200-nvl72")
    dep = Deployment(model=m, system=s, plan=smallest_plan(m, s))
    c = context_economics(dep).curve
    inp, outp = c.prefill_chip_s_per_token, c.decode_chip_s_per_token
    markup = 1.0 + I.FLAT_PRICE_MARGIN
    sched = tiers_for_steps(c.context, inp, outp, base_input=float(inp[0]) * markup,
                            base_output=float(outp[0]) * markup)
    return [check("B9.flat-price-limit", statement=f"A flat price {I.FLAT_PRICE_MARGIN:.0%} above the "
                  f"{c.context[0]:,.0f}-token cost covers cost only up to some context: DeepSeek-V3 on GB200 NVL72 "
                  f"({dep.plan.label()})", lecture="only up to some L", reference=float(c.context[-1]),
                  computed=sched.upper_tokens[0], unit="tokens", tol=Tolerance(kind="below", why="a finite L "
                  "before the longest context that fits"), fmt=",.0f",
                  agree=f"beyond it tiers are needed: {len(sched.upper_tokens)} tiers of 2× input / 1.5× output "
                        f"cover up to {sched.upper_tokens[-1]:,.0f} tokens",
                  source="SPEC B9; catalogue deepseek-v3, gb200-nvl72")]


def _c10() -> list[Claim]:
    gem = get_price_sheet(I.GEMINI_PROVIDER, I.GEMINI_MODEL)
    (tier,) = gem.long_context
    boundary = tier.above_tokens
    (lo_in, lo_out), (hi_in, hi_out) = gem.price_at(boundary), gem.price_at(boundary + 1)
    src = f"SPEC C10; catalogue prices {gem.provider}/{gem.model} (> {boundary:,.0f} tokens)"
    # the lecture counts multiplies; one multiply-accumulate is 2 FLOPs (SPEC conventions)
    lecture_r = 2.0 * I.LECTURE_MULTIPLIES_PER_BYTE
    h100_r = get_accelerator("h100-sxm").flops_per_byte("bf16")
    llama = get_model("llama-3.1-70b")  # 8 KV heads × 128 head dim, 80 layers
    kv = lambda r: kv_bytes_from_crossover(active_params=I.LECTURE_ACTIVE_PARAMS_GUESS,  # noqa: E731
                                           crossover_context=boundary, flops_per_byte=r)
    return [
        check("C10.kv-from-price-step", statement="KV bytes/token if Gemini's 200K price step is the crossover: "
              "2·N_active/(R·L_x), N_active = 100B, R = 300 multiplies per fp8 byte", lecture=1667,
              computed=float(kv(lecture_r)), unit="B/token", tol=Tolerance(kind="rel", value=0.001), fmt=",.0f",
              source=src + "; lecture_cases kv_bytes_from_crossover_lecture"),
        check("C10.kv-from-price-step-bf16-flops", statement="The same step with R = H100's bf16 FLOPs per byte (295)",
              lecture=1667, computed=float(kv(h100_r)), unit="B/token", tol=Tolerance(kind="rel", value=0.1),
              fmt=",.0f",
              correct="the inference is only as good as R: counted in bf16 FLOPs per byte (H100: 295) instead of 300 "
                      "multiplies per fp8 byte, the same step implies ~3.4 KB, twice the lecture's (SPEC C10)",
              source=src + "; lecture_cases kv_bytes_from_crossover_bf16"),
        check("C10.kv-2kb-shared-fp8-layer", statement="~2 KB/token = one 8-head × 128-dim fp8 KV layer shared by all "
              "layers (Llama-3.1-70B shape, 80 layers sharing one cache)", lecture=2048,
              computed=llama.with_kv_sharing(llama.n_layers).kv_bytes_per_token("fp8"), unit="B/token", tol=EXACT,
              fmt=",.0f", source="SPEC C10; catalogue llama-3.1-70b; lecture_cases gqa_kv_bytes_shared_layer_fp8"),
        check("C10.kv-2kb-real-gqa", statement="~2 KB/token is what an 8 KV-head × 128-dim model holds: "
              "Llama-3.1-70B (80 layers, fp8 KV)", lecture=2048, computed=llama.kv_bytes_per_token("fp8"),
              unit="B/token", tol=Tolerance(kind="factor", value=2.0), fmt=",.0f",
              correct="2 KB needs one shared 8-bit KV layer; real per-layer GQA at 61-80 layers holds 100-300 KB per "
                      "token (SPEC C10, G)", source="SPEC C10, G; catalogue llama-3.1-70b"),
        check("C10.gemini-input-step", statement="Gemini's input price above 200K over below", lecture=1.5,
              computed=hi_in / lo_in, unit="×", tol=Tolerance(kind="rel", value=0.01), fmt=".3g",
              correct="Gemini's > 200K tier doubles the input price (+100%); +50% is the output step (SPEC C10, G)",
              source=src + "; lecture_cases gemini_tier_ratios"),
        check("C10.gemini-output-step", statement="Gemini's output price above 200K over below", lecture=1.5,
              computed=hi_out / lo_out, unit="×", tol=Tolerance(kind="rel", value=0.01), fmt=".3g",
              source=src + "; lecture_cases gemini_tier_ratios"),
    ]


def _c11() -> list[Claim]:
    claude = get_price_sheet(I.CLAUDE_PROVIDER, I.CLAUDE_MODEL)
    op = operating_point(claude.output_input_ratio)
    src = f"SPEC C11; catalogue prices {claude.provider}/{claude.model}"
    out = [
        check("C11.ratio-at-balance", statement="Roofline output/input cost ratio r = max(1, B*/B + L/L_x) at B = B*, "
              "short context", lecture=1.0, computed=decode_prefill_cost_ratio(batch_over_balance=1.0,
                                                                                context_over_crossover=0.0),
              unit="×", tol=Tolerance(kind="rel", value=1e-9), fmt=".3g", source="SPEC C11; lecture_cases "
              "decode_prefill_ratio_balance"),
        check("C11.claude-5x-batch", statement="Claude's 5× output/input ratio read as small batches: B/B* at short "
              "context", lecture=0.2, computed=op.batch_over_balance_at_short_context, unit="B/B*",
              tol=Tolerance(kind="rel", value=1e-9), fmt=".3g", source=src),
        check("C11.claude-5x-context", statement="... or as long context at B = B*: L/L_x", lecture=4.0,
              computed=op.context_over_crossover_at_balance, unit="L/L_x", tol=Tolerance(kind="rel", value=1e-9),
              fmt=".3g", source=src),
    ]
    for provider, model in I.RATIO_SHEETS:
        sheet = get_price_sheet(provider, model)
        out.append(check(f"C11.output-input-ratio-{model}", statement=f"Output price / input price, {model} (the "
                         "lecture's '~5× premium')", lecture=I.LECTURE_OUTPUT_INPUT_RATIO,
                         computed=sheet.output_input_ratio, unit="×",
                         tol=Tolerance(kind="rel", value=0.25, why="'~5×'"), fmt=".3g",
                         correct="observed ratios run from 1.5× (DeepSeek V3.2) to 8× (GPT-5): a pricing choice, "
                                 "not a law of the roofline (SPEC C11)",
                         source=f"SPEC C11; catalogue prices {provider}/{model}; lecture_cases observed_price_ratios"))
    return out


def _c12() -> list[Claim]:
    h100 = get_system("hgx-h100")
    (ddr,) = [t for t in h100.tiers if t.kind == "host_dram"]
    flash, hdd = get_storage_device(I.FLASH_DEVICE), get_storage_device(I.HDD_DEVICE)
    claude = get_price_sheet(I.CLAUDE_PROVIDER, I.CLAUDE_MODEL)
    short, long_ = sorted(claude.cache_writes, key=lambda w: w.hold_s)
    per_hour = [cache_hold_price_per_hour(base_input=claude.input_usd_per_mtok, write=w.usd_per_mtok, hold_s=w.hold_s)
                for w in (short, long_)]
    drains = "HBM ~20 ms, DDR ~1-3 s, flash 10-150 min, HDD ~1 day (SPEC C12, G)"
    # Gray's rule: the price-per-byte ratio of the faster tier over the slower at which each hold breaks even
    dram_over_flash = break_even_price_ratio(flash, hold_s=short.hold_s)
    dram_over_flash_1h = break_even_price_ratio(flash, hold_s=long_.hold_s)
    flash_over_hdd = break_even_price_ratio(hdd, hold_s=long_.hold_s)
    tier_src = "SPEC C12; catalogue hgx-h100 tiers, storage " + f"{I.FLASH_DEVICE}, {I.HDD_DEVICE}"
    return [
        # the datasheet's 80 GB per chip, as the lecture (the 81,559 MiB the device exposes: 25.5 ms)
        check("C12.hbm-drain", statement="Break-even hold time C/BW of HBM (H100, datasheet capacity)", lecture=20.0,
              computed=break_even_hold_s(replace(h100.hbm_tier, capacity_bytes=h100.chips
                                                 * h100.accelerator.hbm_datasheet_bytes)) * 1e3, unit="ms",
              tol=Tolerance(kind="rel", value=0.25, why="'~20 ms'"),
              fmt=".3g", source="SPEC C12; catalogue hgx-h100"),
        check("C12.ddr-drain", statement="... of host DDR (DGX H100: 2 TB DDR5)", lecture="1-3 s", reference=(1.0, 3.0),
              computed=break_even_hold_s(ddr), unit="s", tol=Tolerance(kind="range", value=0.1, why="'~'"), fmt=".3g",
              source="SPEC C12; catalogue hgx-h100; lecture_cases drain_ddr_dgx_h100"),
        check("C12.flash-drain", statement="... of an NVMe flash drive (the fastest-draining one catalogued)",
              lecture=1.0, computed=break_even_hold_s(flash) * MIN, unit="min",
              tol=Tolerance(kind="factor", value=2.0), fmt=".3g",
              correct=f"flash drains in 10-150 min, not ~1 min (the fastest catalogued drive, {flash.name}, takes "
                      f"{break_even_hold_s(flash) * MIN:.0f} min); {drains}", source=tier_src),
        check("C12.hdd-drain", statement="... of a hard disk (the fastest-draining one catalogued)", lecture=1.0,
              computed=break_even_hold_s(hdd) * HOUR, unit="h", tol=Tolerance(kind="factor", value=2.0), fmt=".3g",
              correct=f"a hard disk drains in ~1 day, not ~1 hour ({hdd.name}: {break_even_hold_s(hdd) * HOUR:.0f} h); "
                      f"{drains}", source=tier_src),
        undecided("C12.five-minute-cache-tier", statement="Tier for a 5-minute cache hold (Gray's five-minute rule): "
                  "host DRAM's price per byte over flash's above which flash wins", lecture="flash",
                  computed=dram_over_flash, unit="× (DRAM $/B ÷ flash $/B)", fmt=".3g",
                  reason=f"Gray's rule (Gray & Putzolu 1987): data re-read every T stays in the faster tier while "
                         f"T <= slower drain x slower $/B / faster $/B; flash ({flash.name}) drains in "
                         f"{flash.drain_s * MIN:.1f} min, so a 5-minute hold belongs in flash, as the lecture says, "
                         f"iff host DRAM costs more than {dram_over_flash:.3g}x flash per byte, else in DRAM. No "
                         f"catalogued source prices DRAM or flash, so llmecon leaves it open (SPEC C12 as amended "
                         f"by issue 18: the old 'slowest tier that drains within the hold' gave DRAM, ignoring "
                         f"prices)", source=tier_src + f"; {claude.provider}/{claude.model} cache writes"),
        undecided("C12.one-hour-cache-tier", statement="Tier for a 1-hour cache hold (Gray's five-minute rule): "
                  "flash's price per byte over a hard disk's above which the disk wins", lecture="spinning disk",
                  computed=flash_over_hdd, unit="× (flash $/B ÷ HDD $/B)", fmt=".3g",
                  reason=f"Gray's rule: a hard disk ({hdd.name}) drains in {hdd.drain_s * HOUR:.1f} h, so an hour's "
                         f"hold belongs on disk, as the lecture says, iff flash costs more than {flash_over_hdd:.3g}x "
                         f"disk per byte, else in flash; DRAM loses to flash for it whenever DRAM costs more than "
                         f"{dram_over_flash_1h:.2g}x flash per byte. No catalogued source prices flash or disks, "
                         f"so llmecon leaves it open (SPEC C12 as amended by issue 18; the old drain rule gave "
                         f"flash)", source=tier_src + f"; {claude.provider}/{claude.model} cache writes"),
        check("C12.short-cache-premium", statement="Anthropic's 5-minute cache write over its 1-hour write, per "
              "byte-hour held", lecture=3.0, computed=per_hour[0] / per_hour[1], unit="×",
              tol=Tolerance(kind="rel", value=1e-9), fmt=".3g",
              source=f"SPEC C12; catalogue prices {claude.provider}/{claude.model}; "
                     "lecture_cases anthropic_hold_cost_ratio"),
    ]


def _c13() -> list[Claim]:
    sheet = get_price_sheet(I.FAST_MODE_PROVIDER, I.FAST_MODE_MODEL)
    (fast,) = [p for p in sheet.premiums if p.speedup is not None]
    f = infer_fast_mode(price_ratio=fast.input_usd_per_mtok / sheet.input_usd_per_mtok, speedup=fast.speedup)
    src = f"SPEC C13/A5; catalogue prices {sheet.provider}/{sheet.model} ({fast.name})"
    return [
        check("C13.batch-ratio", statement="Fast-mode inversion: regular batch over fast batch", lecture=15.0,
              computed=f.batch_ratio, unit="×", tol=Tolerance(kind="rel", value=1e-9), fmt=".3g", source=src),
        check("C13.regular-batch", statement="... regular batch over balance (pure max-roofline)", lecture=2.5,
              computed=f.regular_over_balance, unit="B/B*", tol=Tolerance(kind="rel", value=1e-9), fmt=".3g",
              source=src),
        check("C13.fast-batch", statement="... fast batch over balance", lecture="B*/6", reference=1.0 / 6.0,
              computed=f.fast_over_balance, unit="B/B*", tol=Tolerance(kind="rel", value=1e-9), fmt=".3g", source=src),
    ]


def claims() -> list[Claim]:
    """Every section-B and section-C claim, in SPEC order."""
    return _b7() + _b8() + _b9() + _c10() + _c11() + _c12() + _c13()
