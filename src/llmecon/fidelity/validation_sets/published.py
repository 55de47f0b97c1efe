"""The hand-transcribed YAML sets as measurement rows (TensorRT-LLM v0.9, Qwen3-32B serving,
Pope et al. 2022, Megatron-LM 2021). Mapping choices are in the package docstring."""

from __future__ import annotations

from pathlib import Path

from ...dtypes import get_dtype
from ...errors import CatalogError
from ..measurements import Measurement, make
from ._common import MS, Skipped, read_yaml, table

TRTLLM = "trtllm_v0.9.yaml"
QWEN3 = "serving_qwen3_32b_h100.yaml"
POPE = "pope2022.yaml"
MEGATRON = "training_megatron2021.yaml"

# TensorRT-LLM names -> catalogue models ("LLaMA 7B/70B" are Llama-2, per the file's models_note).
TRTLLM_MODELS = {"LLaMA 7B": "llama-2-7b", "LLaMA 70B": "llama-2-70b", "Mistral 7B": "mistral-7b-v0.1",
                 "Mixtral 8x7B": "mixtral-8x7b"}
# Models of the tables with no catalogue entry (no sourced config.json): their rows are skipped.
TRTLLM_SKIPPED_MODELS = ("GPT-J 6B", "Falcon 180B")
TRTLLM_GPUS = {"H100": "hgx-h100", "H200": "hgx-h200", "A100": "hgx-a100"}


def _entry(data: dict, rel: str, version_id: str) -> dict:
    for entry in data.get("versions") or []:
        if entry.get("id") == version_id:
            return entry
    raise CatalogError(f"{rel}: no versions entry with id '{version_id}'")


def _trtllm(root: Path, version_id: str, kind: str) -> tuple[list[Measurement], list[Skipped]]:
    data = read_yaml(root, TRTLLM)
    entry = _entry(data, TRTLLM, version_id)
    needed = ("model", "gpu", "precision", "batch", "tp", "isl") + (
        ("osl", "value") if kind == "static" else ("ttft_ms",))
    rows, skipped_models = [], {}
    for i, r in enumerate(table(data, TRTLLM, entry, needed)):
        where = f"{TRTLLM} {version_id} row {i}"
        if r["model"] in TRTLLM_SKIPPED_MODELS:
            skipped_models[r["model"]] = skipped_models.get(r["model"], 0) + 1
            continue
        model = TRTLLM_MODELS.get(r["model"])
        if model is None:
            raise CatalogError(f"{where} model: {r['model']!r} is not mapped to a catalogue model; add it to "
                               "TRTLLM_MODELS or TRTLLM_SKIPPED_MODELS in llmecon.fidelity.validation_sets.published")
        if r["gpu"] not in TRTLLM_GPUS:
            raise CatalogError(f"{where} gpu: {r['gpu']!r} is not one of {', '.join(TRTLLM_GPUS)}")
        dtype = get_dtype(r["precision"]).name   # weights AND KV cache (models_note)
        out = {"kind": kind, "source": TRTLLM, "model": model, "system": TRTLLM_GPUS[r["gpu"]],
               "batch": r["batch"], "prompt_tokens": r["isl"], "tp": r["tp"], "weight_dtype": dtype,
               "kv_dtype": dtype, "group": model}
        if kind == "static":
            # value = output tokens/s PER GPU over the whole static batch (prefill + osl decode steps)
            out.update(output_tokens=r["osl"], measured_s=r["batch"] * r["osl"] / (r["value"] * r["tp"]),
                       note=f"{version_id} row {i}: {r['value']} output tok/s/GPU")
        else:
            out.update(measured_s=r["ttft_ms"] * MS, note=f"{version_id} row {i}: TTFT {r['ttft_ms']} ms")
        rows.append(make(out, where))
    skipped = [Skipped(source=f"{TRTLLM} {version_id}", items=n,
                       reason=f"{name}: not in the model catalogue (no sourced config.json)")
               for name, n in skipped_models.items()]
    return rows, skipped


def trtllm_static(root: Path):
    """``static`` rows: prefill of ``batch`` prompts of isl tokens, then osl decode steps."""
    return _trtllm(root, "v0.9.0_static", "static")


def trtllm_ttft(root: Path):
    """``prefill`` rows: batch-1 time to first token (output length 1) = one prefill pass."""
    return _trtllm(root, "v0.9.0_first_token_latency", "prefill")


# The YAML does not state the KV-cache format. With bf16 KV the ideal roofline (a lower bound)
# exceeds the measured TPOT on some rows (tp4/tp8 at prompt 4000, concurrency 128-224), which a
# bf16 cache cannot do; TensorRT-LLM's fp8 recipes quantise the KV cache too. So: fp8 KV.
KV_ASSUMED = "fp8"


def qwen3_serving(root: Path) -> tuple[list[Measurement], list[Skipped]]:
    """``serving`` rows: closed-loop TPOT/TTFT at client concurrency ``batch_size``."""
    data = read_yaml(root, QWEN3)
    rows = []
    for g, group in enumerate(data.get("groups") or []):
        head = f"{QWEN3} groups[{g}]"
        expect = {"system": "h100_sxm", "model": "Qwen/Qwen3-32B", "mode": "agg"}
        for key, value in expect.items():
            if group.get(key) != value:
                raise CatalogError(f"{head} {key}: {group.get(key)!r} is not mapped (expected {value!r})")
        for i, r in enumerate(group.get("rows") or []):
            where = f"{head} row {i}"
            if r.get("attention_dp_size") not in (None, 1):
                raise CatalogError(f"{where}: attention_dp_size {r['attention_dp_size']} is not modelled")
            rows.append(make({
                "kind": "serving", "source": QWEN3, "model": "qwen3-32b", "system": "hgx-h100",
                "batch": r["batch_size"], "prompt_tokens": r["isl"], "output_tokens": r["osl"], "tp": r["tp_size"],
                "pp": r["pp_size"], "weight_dtype": get_dtype(r["gemm_quant_mode"]).name,
                "kv_dtype": KV_ASSUMED,
                "measured_tpot_s": r["silicon_tpot_ms"] * MS, "measured_ttft_s": r["silicon_ttft_ms"] * MS,
                "group": f"isl{r['isl']}-osl{r['osl']}",
                "note": f"groups[{g}] row {i}: {group.get('backend', '')} {r.get('backend_version', '')}".strip()},
                where))
    if not rows:
        raise CatalogError(f"{QWEN3}: no rows under groups")
    return rows, []


def pope2022(root: Path) -> tuple[list[Measurement], list[Skipped]]:
    """Table 2: PaLM 540B (heads padded to 64) on 64 TPU v4 chips, all 64 tensor-parallel."""
    data = read_yaml(root, POPE)
    block = "table2_palm540b_64chips"
    rows = []
    for i, r in enumerate(data.get(block) or []):
        where = f"{POPE} {block}[{i}]"
        if r.get("chips") != 64:
            raise CatalogError(f"{where} chips: {r.get('chips')!r}; only the 64-chip slice tpu-v4-64 is catalogued")
        out = {"kind": r["phase"], "source": POPE, "model": "palm-540b-padded", "system": "tpu-v4-64", "tp": 64,
               "batch": r["batch"], "weight_dtype": get_dtype(r["weights"]).name, "measured_s": r["latency_s"],
               "group": r["setting"],
               "note": f"{block}[{i}] {r['setting']}: MFU {r['mfu']}, FFN {r['ffn_layout']}; "
                       f"+-30% (secondary transcription)"}
        if r["phase"] == "prefill":
            out["prompt_tokens"] = r["tokens_per_seq"]
        elif r["phase"] == "decode":
            out.update(context=2048, output_tokens=r["tokens_generated"])   # table 2: context 2048
        else:
            raise CatalogError(f"{where} phase: {r['phase']!r} is not prefill or decode")
        rows.append(make(out, where))
    if not rows:
        raise CatalogError(f"{POPE}: no rows under {block}")
    skipped = [
        Skipped(source=f"{POPE} table1_max_context_64chips", items=len(data.get("table1_max_context_64chips") or []),
                reason="maximum context lengths that fit in memory, not timings: no measurement kind"),
        Skipped(source=f"{POPE} derived_checks.interactive_example", items=1,
                reason="1.9 s for 64 new + 1920 cached tokens and 64 generated: batch size not given"),
        Skipped(source=f"{POPE} other_reported", items=len(data.get("other_reported") or []),
                reason="ratios and comparisons without a timed configuration"),
    ]
    return rows, skipped


def megatron2021(root: Path) -> tuple[list[Measurement], list[Skipped]]:
    """Nothing yet: the GPT shapes of Megatron-LM's Table 1 are not catalogue models (see skipped)."""
    data = read_yaml(root, MEGATRON)
    entry = data.get("megatron_lm_2021") or {}
    n = len(table(data, MEGATRON, entry, ("params_B", "hidden", "layers", "tp", "pp", "gpus", "global_batch")))
    return [], [Skipped(source=f"{MEGATRON} megatron_lm_2021", items=n, reason=(
        "the GPT models (1.7B-1T; heads/hidden/layers in the table) are not in the model catalogue and a "
        "measurement names its model by catalogue name or config.json path; tests/test_training_step.py builds "
        "them in memory. Add GPT configs to the catalogue to turn these rows into 'train' measurements"))]
