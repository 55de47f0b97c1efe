"""The lecture's stated inputs (and SPEC's), each with where it comes from.

These are inputs, not results: the numbers the lecture (Reiner Pope, "The math behind how LLMs are
trained and served", 2026-04-29) or SPEC.md put into a calculation. Everything a claim *computes*
from them goes through llmecon's library; hardware, models and prices come from the catalogue.
The same inputs appear in tests/published/lecture_cases.yaml (copied from shared/), which the
tests read to check the computed values independently.
"""

from __future__ import annotations

# ---- A. roofline and batching --------------------------------------------------------------------
FLOPS_PER_PARAM_TOKEN = 2.0      # SPEC conventions: one multiply-add per weight per token = 2 FLOPs
DEEPSEEK_CARD_TOTAL_PARAMS = 671e9   # DeepSeek-V3 model card / arXiv:2412.19437 (SPEC A3: "671B total")
DEEPSEEK_CARD_ACTIVE_PARAMS = 37e9   # ibid. ("37B active")
LECTURE_DEEPSEEK_ACTIVE_EXPERTS = 32  # the lecture's "32 of 256" (SPEC A3/G: wrong, it is 8 + 1 shared)
LECTURE_DEEPSEEK_SPARSITY = 8.0      # the lecture's S = 256/32 (SPEC A3)
LECTURE_RATIO = 300.0                # the lecture's "≈300" multiplies per weight fetched (SPEC A3)
LECTURE_BALANCE_BATCH_DEEPSEEK = 2400.0  # the lecture's 300 × 8 (SPEC A3)
LECTURE_NO_BATCHING_RATIO = 1000.0   # "can be like a thousand times worse" (transcript 0:04:26; SPEC A2)
RACK_BATCH = 2400                    # the lecture's DeepSeek batch on a 64-GPU rack (lecture_cases
                                     # step_time_deepseek_rack)
RACK_GPUS = 64                       # SPEC A4: "on 64 GB200"
LECTURE_THROUGHPUT_BATCH = 2000      # "2,000 × 64, so 128,000 tokens per second" (SPEC A3)
LECTURE_STEPS_PER_S = 64.0           # ibid.
KV_CONTEXT_OVER_CROSSOVER = 0.5      # SPEC A3 B*(L) = B*_0/(1 - L/L_x) at L = L_x/2 (lecture_cases
                                     # balance_batch_with_kv)
FIVE_T_PARAMS = 5e12                 # SPEC A4/A6: "a 5T-param fp8 model"
LECTURE_DRAIN_CAPACITY_BYTES = 288e9  # "288 GB ÷ 20 TB/s" (seed summaries; SPEC A4/G: Rubin, not B300)
LECTURE_DRAIN_BANDWIDTH = 20e12       # ibid.
FAST_MODE_PROVIDER, FAST_MODE_MODEL = "anthropic", "claude-opus-4.6"  # "6× price for 2.5× speed" (SPEC A5)
FAST_MODE_DEPLOYMENT = ("llama-3.1-70b", "hgx-h100", 8)  # a dense deployment to recompute A5 on (model, system, tp)
FAST_MODE_CONTEXT = 4096.0           # the same batches at a real context (A5's note)

# ---- B. KV and context -----------------------------------------------------------------------------
DSA_CONTEXT = 128 * 1024             # SPEC B7: "~5× less than dense at long L" (DeepSeek-V3.2-Exp at 128K, fp8 KV)
DSA_SLOPE_CONTEXT = 1_000_000        # where the slope of reads vs L is read (long context)
BLOCK_SPARSE_CONTEXT = 1e6           # lecture_cases block_sparse_sqrt_optimum: L = 1M
BLOCK_SPARSE_BLOCKS = 16             # ibid.: k_b = 16 selected blocks
PER_SEQUENCE_CONTEXT = 1e6           # SPEC B8: "Per-sequence KV at 1M tokens"
TWO_KB = 2e3                         # SPEC B8: "2 GB at 2 KB/token"
FLAT_PRICE_MARGIN = 0.2              # B9: a flat price 20% above the short-context cost (illustrative margin)

# ---- C. prices read backwards ----------------------------------------------------------------------
LECTURE_ACTIVE_PARAMS_GUESS = 100e9  # SPEC C10: "N_active = 100B guessed"
LECTURE_MULTIPLIES_PER_BYTE = 300.0  # SPEC C10: "R = 300 *multiplies* per byte (fp8-equivalent)"
GEMINI_PROVIDER, GEMINI_MODEL = "google", "gemini-3.1-pro-preview"  # the ">200K" step (SPEC C10)
CLAUDE_PROVIDER, CLAUDE_MODEL = "anthropic", "claude-opus-4.6"      # output 5× input; cache writes (SPEC C11-C12)
RATIO_SHEETS = (("anthropic", "claude-opus-4.6"), ("google", "gemini-3.1-pro-preview"), ("openai", "gpt-5"),
                ("deepseek", "deepseek-v3.2"))  # SPEC C11's four observed ratios
LECTURE_OUTPUT_INPUT_RATIO = 5.0     # "~5x premium of output over input" (seed summaries)
FLASH_DEVICE, HDD_DEVICE = "pm1743", "exos-x24"  # fastest-draining catalogued flash drive and HDD (storage.toml)

# ---- D. MoE and topology ---------------------------------------------------------------------------
CLARK_ACTIVE_PARAMS = 370e6          # the lecture's reading of Clark et al. Fig. 1 (SPEC D14)
LECTURE_SCALEOUT_RATIO = 8.0         # "scale-out networks are typically 8x slower" (seed summaries; SPEC D15/G)
PP_EXPERT_PARALLEL = 64              # lecture_cases pp_inference_memory_per_gpu: EP = 64
PP_MICRO_BATCH = 2400                # ibid.: b = 2,400 sequences per micro-batch
PP_CONTEXT = 32768                   # ibid.: L = 32,768 tokens
PP_STAGES = (1, 2, 4, 8)             # ibid.
TP_BATCH = 64                        # D19: any batch; 64 sequences of one token

# ---- E. serving ------------------------------------------------------------------------------------
TRAIN_RATE_PER_S = 5.0               # a light load: every train has room (E20)
TRAIN_TOKENS = 16                    # prompt and output tokens per request (short: prefill fits in a train)
TRAIN_DURATION_S = 120.0
TRAIN_BATCH_CAP = 256

# ---- F. training -----------------------------------------------------------------------------------
OVERTRAIN_ACTIVE_PARAMS = 100e9      # SPEC F22: "with N_a = 100B"
INFERENCE_TOKENS_PER_S = 50e6        # SPEC F22: "50M tok/s × 60 days"
DEPLOYMENT_DAYS = 60.0
INFERENCE_EFFICIENCY = 1.0 / 3.0     # lecture_cases overtrain: η_inf = 1/3 gives D_pre = D_inf
RL_FLOPS_PER_PARAM_TOKEN = 3.0       # SPEC F22: r in [2, 6]; flashcards' r = 3
RL_EFFICIENCY = 1.0 / 3.0            # lecture_cases equal_cost_pretrain_vs_rl
LECTURE_OVERTRAIN = 100.0            # "about a hundred times larger" than Chinchilla (transcript)
BUBBLE_STAGES, BUBBLE_MICROBATCHES, BUBBLE_CHUNKS = 4, 8, 2  # lecture_cases gpipe/megatron bubble cases
REVNET_MODEL = "llama-3.1-8b"        # a dense transformer shape for the activation-memory comparison (F24)
REVNET_SYSTEM = "hgx-h100"
REVNET_SEQ_LEN = 4096
REVNET_DEPTHS = (8, 16, 32, 64, 128)
