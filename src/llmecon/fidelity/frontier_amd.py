"""The frontier check on AMD's measurements (issue 37 item 4): MI300X batch-latency runs as frontier points.

What ``../shared/validation/non_nvidia`` holds for AMD serving (its README): ``offline_throughput`` rows (every
request submitted at once: a throughput with no per-user speed at a load, and a unit the source leaves
ambiguous, input tokens counted or not) and ``batch_latency`` rows (vLLM ``benchmark_latency.py``: a fixed
batch of ``b`` requests run to completion, prefill of ``P`` tokens then ``O`` output tokens each; the value is
the seconds the whole batch took). Only the latter carry a per-user speed at a load, so only they are used:
one point per row of ``rocm_vllm_dev_docker/mi300x_vllm_dev_docker_readme_tidy.csv`` (the ROCm vLLM fork's
README, 8x MI300X, TP8, Llama-3.1-70B/405B FP8 with FP8 KV; ``is_repeat`` 'no' rows, the repeats being the
previous version's numbers copied):

    tokens/s per user = O / latency            (every request of the batch finishes together)
    output tokens/s per GPU = b · O / latency / 8

The latency includes the one prefill, so both are whole-request figures for a static batch. Predicted: the
decode-only frontier (``serving_frontier`` view 'decode') on ``mi300x-8`` with the ``mi300x/vllm`` profile,
the measured layout (TP8) and the measured batches, at the mean decode context ``P + O/2``. Omitted, each
optimistic for the prediction: the prefill (with P = 128 and O = 2048 under 1% of the run at batch 1; with
P = 2048 a few percent), and the batch's context growing from P to P + O (priced at its mean).
Not used: the rocm-hub page (8 ``batch_latency`` rows transcribed from page excerpts, low-medium confidence)
and the Oracle blog (405B at 128/128, no model of that name in its table); MI325X and MI355X have no
serving rows with a per-user speed in the shared data.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

from .frontier_check import Measured

TABLE = Path("non_nvidia") / "rocm_vllm_dev_docker" / "mi300x_vllm_dev_docker_readme_tidy.csv"
MODELS = {"amd/Llama-3.1-70B-Instruct-FP8-KV": "llama-3.1-70b", "amd/Llama-3.1-405B-Instruct-FP8-KV": "llama-3.1-405b"}
"""The table's model ids -> catalogue models (FP8 weights and KV: ``weight_dtype``/``kv_dtype`` fp8)."""


def default_table() -> Path | None:
    """``../shared/validation/<TABLE>`` beside the silicon CSV's folder, or None when absent."""
    from .silicon import default_path

    silicon = default_path()
    if silicon is None:
        return None
    p = silicon.parent.parent / TABLE
    return p if p.is_file() else None


def amd_points(path=None) -> list[Measured]:
    """The MI300X batch-latency rows as ``Measured`` points (module docstring)."""
    from ..errors import CatalogError
    from ..files import read_text

    p = Path(path) if path is not None else default_table()
    if p is None or not p.is_file():
        raise CatalogError(f"AMD batch-latency table: no file {p}; pass the path of shared/validation/{TABLE}")
    out = []
    for r in csv.DictReader(io.StringIO(read_text(p, field="amd", what="AMD tidy CSV"))):
        if r["workload"] != "batch_latency" or r["is_repeat"] != "no" or r["model"] not in MODELS:
            continue
        if r["metric"] != "e2e_batch_latency" or r["unit"] != "s":
            continue
        gpus, batch = int(r["n_chips"]), int(r["batch_or_concurrency"])
        latency, o = float(r["value"]), int(r["output_len"])
        out.append(Measured(chip="mi300x", system="mi300x-8", engine="vllm", model=r["model"],
                            config=MODELS[r["model"]], weight_dtype="fp8", kv_dtype="fp8",
                            prompt_tokens=int(r["input_len"]), output_tokens=o, mode="agg", gpus=gpus,
                            replica_gpus=gpus, replica_concurrency=float(batch), per_user=o / latency,
                            per_gpu=batch * o / latency / gpus, layout=(int(r["tp"]), 1, 1, gpus // int(r["tp"]))))
    return out


def amd_validation(path=None, *, terms: str = "kernel") -> dict:
    """Scores per (model, workload) (``frontier_check.score_group``: decode view, the measured layout and
    batches) and the summary over the points."""
    from .frontier_check import groups_of, score_group, summary

    scores = [score_group(key, g, terms=terms, view="decode", layouts="measured")
              for key, g in groups_of(amd_points(path)).items()]
    return {"terms": terms, "groups": scores, "all": summary(scores, None)}
