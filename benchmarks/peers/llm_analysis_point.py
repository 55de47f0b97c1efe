"""Evaluate one decode step with llm-analysis 0.2.2 and time it.

Run this with the python of the throw-away peer venv made by
``setup_llm_analysis.sh`` (default /tmp/peers/llm-analysis/bin/python), never with
the project's interpreter: it imports ``llm_analysis`` and must not import llmecon.

Point evaluated (defaults = the PEERS.md comparison point):
  Llama-3-70B (hidden 8192, 80 layers, 64 heads, 8 KV heads, FFN 28672, vocab 128256,
  untied embeddings), H100-SXM (989 TFLOP/s bf16 dense, 3350 GB/s, 80 GB), bf16
  weights / activations / embeddings / KV cache, TP=--tp, global decode batch --batch
  sequences, prompt of --context tokens, 1 generated token.

Batch semantics: llm-analysis' ``batch_size_per_gpu`` is the batch seen by one model
replica (one TP x PP group): FLOPs, weight bytes and KV heads are divided by tp_size but
the batch is not.  With dp_size = 1 it therefore equals the global decode batch, so
``--batch 16`` passes ``batch_size_per_gpu=16``.

MLP: llm-analysis has no SwiGLU gate (two matrices, 2*h*ffn parameters).  With
``--mlp gate-fixed`` (default) the model is given ffn_embed_dim = 1.5 * 28672 = 43008 so
that its two matrices hold the same 3*h*ffn parameters (and weight bytes) as the real
gated MLP; ``--mlp native`` passes the real 28672 and gets its 50.7B-parameter model.
The MLP FLOPs are hard-coded to 16*b*s*h^2 whatever the FFN width (the true gated figure
is 6*h*ffn = 21*b*s*h^2), which no config can fix.  Both variants are always evaluated
once and reported; the timed loop uses the selected one.

Output: exactly one JSON line on stdout.
"""

import time

_T_TOP = time.perf_counter()  # first statement: everything after this counts as "cold"

import argparse  # noqa: E402
import contextlib  # noqa: E402
import io  # noqa: E402
import json  # noqa: E402
import logging  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402

# --- the peer tool (its import pulls in transformers.AutoConfig: part of its cold cost) ---
_T_IMPORT0 = time.perf_counter()
from llm_analysis.analysis import LLMAnalysis  # noqa: E402
from llm_analysis.config import (  # noqa: E402
    DtypeConfig,
    GPUConfig,
    ModelConfig,
    ParallelismConfig,
)
from llm_analysis.logger import logger as _la_logger  # noqa: E402

_T_IMPORT1 = time.perf_counter()

# Llama-3(.1)-70B, from shared/reference/models/llama-3.1-70b.json
HIDDEN = 8192
LAYERS = 80
HEADS = 64
KV_HEADS = 8
FFN = 28672
VOCAB = 128256
MAX_POS = 131072

# H100-SXM 80 GB.  Peak and bandwidth as in the benchmark brief (same values as
# llm-analysis' own gpu_configs/h100-sxm-80gb.json); NVLink 450 GB/s one-way and 8 us
# minimum message latency are llm-analysis' own H100-SXM figures.
GPU = dict(
    name="h100-sxm-80gb",
    mem_per_GPU_in_GB=80,
    hbm_bandwidth_in_GB_per_sec=3350,
    intra_node_bandwidth_in_GB_per_sec=450,
    intra_node_min_message_latency=8e-06,
    peak_fp16_TFLOPS=989,
    peak_i8_TFLOPS=1979,
    peak_i4_TFLOPS=3958,
    inter_node_bandwidth_in_GB_per_sec=400,
)


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("llm-analysis")
    except Exception:  # pragma: no cover - metadata missing
        return "unknown"


def _model(mlp: str) -> ModelConfig:
    if mlp == "gate-fixed":
        ffn = FFN * 3 // 2  # 43008: two matrices carrying the parameters of three
    elif mlp == "native":
        ffn = FFN
    else:
        raise ValueError(f"unknown --mlp {mlp!r}")
    return ModelConfig(
        name=f"llama-3-70b-{mlp}",
        num_layers=LAYERS,
        n_head=HEADS,
        hidden_dim=HIDDEN,
        vocab_size=VOCAB,
        max_seq_len=MAX_POS,
        num_key_value_heads=KV_HEADS,
        ffn_embed_dim=ffn,
        # 28672 / 8192 = 3.5 is not an integer: without an explicit ratio its
        # __post_init__ asserts ffn_embed_dim % hidden_dim == 0 and fails.
        expansion_ratio=ffn / HIDDEN,
        model_type="llama",
    )


def evaluate(batch: int, context: int, tp: int, mlp: str) -> dict:
    """One full evaluation: build the configs and the analysis, run inference()."""
    analysis = LLMAnalysis(
        _model(mlp),
        GPUConfig(**GPU),
        DtypeConfig(name="w16a16e16", weight_bits=16, activation_bits=16, embedding_bits=16),
        ParallelismConfig(tp_size=tp, pp_size=1, dp_size=1),
    )
    summary = analysis.inference(
        batch_size_per_gpu=batch,
        seq_len=context,
        num_tokens_to_generate=1,
        use_kv_cache=True,
        kv_cache_dtype_bytes=2,
    )
    summary["_num_params_total"] = analysis.total_num_params
    return summary


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=16, help="global decode batch (sequences)")
    ap.add_argument("--context", type=int, default=2048, help="prompt length in tokens")
    ap.add_argument("--tp", type=int, default=4, help="tensor-parallel size")
    ap.add_argument("--mlp", choices=("gate-fixed", "native"), default="gate-fixed")
    ap.add_argument("--repeats", type=int, default=100, help="warm repetitions (>= 20)")
    ap.add_argument(
        "--t-launch",
        type=float,
        default=None,
        help="caller's time.perf_counter() just before spawning this process "
        "(CLOCK_MONOTONIC is shared between processes), to add interpreter start-up",
    )
    args = ap.parse_args(argv)
    repeats = max(20, args.repeats)

    # Silence the tool: its logger ("__name__"!) writes INFO/WARNING to a stderr handler
    # (e.g. "flops efficiency > 0.55", "kv_cache is only useful when ..." warnings).
    _la_logger.setLevel(logging.CRITICAL + 1)
    sink = io.StringIO()

    error = None
    first = None
    try:
        with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
            first = evaluate(args.batch, args.context, args.tp, args.mlp)
    except AssertionError as exc:  # its memory checks are asserts
        error = f"AssertionError: {exc}"
    t_first_done = time.perf_counter()

    out = {
        "tool": "llm-analysis",
        "version": _version(),
        "warm_s_per_eval": None,
        "cold_s": t_first_done - _T_TOP,
        "decode_step_ms": None,
    }
    if args.t_launch is not None:
        out["cold_s_incl_interpreter"] = t_first_done - args.t_launch
    out["import_s"] = _T_IMPORT1 - _T_IMPORT0

    if error is None:
        samples = []
        with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
            for _ in range(repeats):
                t0 = time.perf_counter()
                evaluate(args.batch, args.context, args.tp, args.mlp)
                samples.append(time.perf_counter() - t0)
            other = "native" if args.mlp == "gate-fixed" else "gate-fixed"
            try:
                alt = evaluate(args.batch, args.context, args.tp, other)
            except AssertionError as exc:
                alt = {"_error": str(exc)}
        out["warm_s_per_eval"] = statistics.median(samples)
        out["warm_repeats"] = repeats
        out["decode_step_ms"] = first["decode_latency"] * 1e3
        out[f"decode_step_ms_{args.mlp.replace('-', '_')}"] = out["decode_step_ms"]
        out[f"decode_step_ms_{other.replace('-', '_')}"] = (
            alt["decode_latency"] * 1e3 if "decode_latency" in alt else None
        )
        out["params_total_b"] = first["_num_params_total"] / 1e9
        out["breakdown_ms"] = {
            k[len("decode_"):]: first[k] * 1e3
            for k in (
                "decode_latency_fwd_attn",
                "decode_latency_fwd_mlp",
                "decode_latency_fwd_layernorm",
                "decode_latency_fwd_tp_comm",
                "decode_latency_fwd_input_embedding",
                "decode_latency_fwd_output_embedding_loss",
            )
        }
        out["breakdown_ms"]["kv_cache"] = first["kv_cache_latency"] * 1e3
    else:
        out["error"] = error

    out["point"] = {
        "model": "Llama-3-70B",
        "gpu": "H100-SXM (989 TFLOP/s, 3350 GB/s, 80 GB)",
        "dtype": "bf16 w/a/emb/kv",
        "tp": args.tp,
        "global_batch": args.batch,
        "batch_size_per_gpu": args.batch,
        "context": args.context,
        "generated": 1,
        "mlp": args.mlp,
    }
    out["notes"] = (
        f"mlp={args.mlp}: "
        + (
            "ffn_embed_dim=43008 (=1.5*28672) so its 2-matrix MLP carries the gated 3*h*ffn "
            "weights; "
            if args.mlp == "gate-fixed"
            else "its own 2-matrix MLP, no SwiGLU gate (50.7B params); "
        )
        + "MLP FLOPs hard-coded 16*b*s*h^2 (true gated: 21*b*s*h^2); "
        "decode charges 2x the full KV cache (load+store of seq+1 tokens); "
        "input embedding table read whole (not /TP), lm_head counted as compute only and "
        "its weights not stored (shared_embedding=True); 2 all-reduces/layer at max(bytes/450 GB/s, 8 us); "
        "flops & HBM efficiency default 1.0; batch_size_per_gpu = batch per TP group = global batch (dp=1); "
        "warm = median wall of build LLMAnalysis + inference() with its logger silenced"
    )
    print(json.dumps(out), flush=True)
    return 0 if error is None else 2


if __name__ == "__main__":
    sys.exit(main())
