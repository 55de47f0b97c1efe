"""Serving benchmark results as the ecosystem's own tools write them, read as ``serving`` measurements.

A user who has benchmarked their deployment already holds its measurements: ``llmecon calibrate`` and
``llmecon validate`` read these files with the deployment (model, system, plan, formats) given on the
command line (``to_measurements``), since none of the files records the chips or the parallelism. One run
(one concurrency) becomes one ``serving`` row of ``fidelity.measurements``: client concurrency ``batch``, the
mean prompt and output tokens per completed request, and the mean TPOT and TTFT — the means, because
``serving.steady_state`` prices mean latencies. Formats, detected from their fields (``detect``):

* **vLLM** ``vllm bench serve`` with its save-result option (one JSON object per file; field names of
  ``vllm/benchmarks/serve.py`` in vLLM 0.33.0): ``model_id``, ``max_concurrency``, ``request_rate`` ("inf"
  for back-to-back requests), ``completed``, ``total_input_tokens``, ``total_output_tokens``,
  ``mean_ttft_ms``, ``mean_tpot_ms``; ``spec_decode_acceptance_length`` when the server drafted.
* **SGLang** ``python -m sglang.bench_serving`` with an output file (JSON Lines, one run appended per line; field
  names of ``sglang/benchmark/serving.py`` in SGLang 0.5.23): ``max_concurrency``, ``request_rate``,
  ``completed``, ``total_input_tokens``, ``total_output_tokens``, ``mean_ttft_ms``, ``mean_tpot_ms``,
  ``mean_e2e_latency_ms`` (vLLM's is ``mean_e2el_ms``: how the two are told apart), ``accept_length``
  (speculative decoding's mean accepted length, null without it).
* **AIPerf** ``profile_export_aiperf.json`` and **GenAI-Perf** ``profile_export_genai_perf.json`` (AIPerf
  0.13.0's ``JsonExportData``, schema 1.4, "designed to mimic the structure of the GenAI-Perf JSON output";
  GenAI-Perf 0.0.16's ``JsonExporter``): one object per metric, ``{"unit": "ms", "avg": ..., "p50": ...}``, for
  ``time_to_first_token``, ``inter_token_latency`` (per request ``(latency - TTFT)/(output tokens - 1)``, the
  TPOT), ``input_sequence_length`` and ``output_sequence_length``; the concurrency in ``input_config``:
  AIPerf ``phases[]`` (the ``profiling`` phase) ``.concurrency`` or, before its YAML v2 config,
  ``loadgen.concurrency``; GenAI-Perf ``perf_analyzer.stimulus.concurrency`` (0.0.16) or a top-level
  ``concurrency`` (earlier releases). AIPerf files carry ``aiperf_version`` or ``schema_version``.

Refused, each naming the file, the run and the field, never guessed: a run without a fixed concurrency
(an open loop at a request rate is not the closed loop ``serving`` rows describe), a run with no completed
request, a unit other than s/ms/us/ns or tokens, and a run whose server drafted speculatively (acceptance
length > 1): ``serving`` measurement rows price one token per step, so such a run would fit the engine
terms to speculation's gain. Omitted: the p50/p99 figures (the means are read), per-request details, goodput.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

from ..errors import CatalogError

FORMATS = ("vllm", "sglang", "aiperf", "genai-perf")
SUFFIXES = (".json", ".jsonl")
_SECONDS = {"s": 1.0, "sec": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}


@dataclass(frozen=True, kw_only=True)
class BenchRun:
    """One benchmark run (one concurrency) of a result file, in SI units."""

    tool: str
    where: str               # file and line (JSON Lines) of the run
    concurrency: int
    prompt_tokens: float     # mean per completed request
    output_tokens: float
    tpot_s: float            # mean
    ttft_s: float            # mean
    model_id: str = ""       # the served model as the tool names it ('' when the file does not say)


def is_bench_file(path: str | Path) -> bool:
    """A path this module reads (by suffix: .json, .jsonl)."""
    return Path(path).suffix.lower() in SUFFIXES


def read_bench_file(path: str | Path) -> list[BenchRun]:
    """The runs of one result file (errors name the file, the line and the field)."""
    from ..files import read_text

    p = Path(path)
    return parse_bench_text(read_text(p, field="measurements", what="benchmark result file"), where=str(p))


def _objects(text: str, where: str) -> list[tuple[str, dict]]:
    """(where, object) of a JSON file (one object, or a list of them) or of JSON Lines."""
    try:
        whole = json.loads(text)
    except ValueError:
        whole = None
    if isinstance(whole, dict):
        return [(where, whole)]
    if isinstance(whole, list):
        return [(f"{where} run {i + 1}", o) for i, o in enumerate(whole)]
    out = []
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            out.append((f"{where} line {n}", json.loads(line)))
        except ValueError as exc:
            raise CatalogError(f"{where} line {n}: not JSON ({exc.msg})",
                               fix="give a vllm bench serve, SGLang bench_serving, AIPerf or GenAI-Perf result file"
                               ) from None
    if not out:
        raise CatalogError(f"{where}: no benchmark run in the file")
    return out


def detect(obj) -> str:
    """Which tool wrote ``obj`` (one of ``FORMATS``), from its field names; CatalogError when none fits."""
    if not isinstance(obj, dict):
        raise CatalogError(f"expected a JSON object per run, got {type(obj).__name__}")
    if "mean_tpot_ms" in obj:
        return "sglang" if "mean_e2e_latency_ms" in obj else "vllm"
    if isinstance(obj.get("time_to_first_token"), dict):
        return "aiperf" if ("aiperf_version" in obj or "schema_version" in obj) else "genai-perf"
    raise CatalogError("not a benchmark result this reader knows: no mean_tpot_ms (vllm bench serve, SGLang "
                       "bench_serving) and no time_to_first_token metric (AIPerf, GenAI-Perf)",
                       fix="give the tool's saved result: vllm bench serve's (save-result), sglang.bench_serving's "
                           "(output file), or AIPerf's/GenAI-Perf's profile_export_*.json")


def parse_bench_text(text: str, *, where: str = "benchmark") -> list[BenchRun]:
    """The runs of a result file's text (module docstring)."""
    return [_run(obj, at) for at, obj in _objects(text, where)]


def _run(obj, at: str) -> BenchRun:
    try:
        tool = detect(obj)
    except CatalogError as exc:
        raise CatalogError(f"{at}: {exc.rule}", fix=exc.fix) from None
    return (_openai_bench if tool in ("vllm", "sglang") else _perf_export)(obj, at, tool)


def _number(obj: dict, key: str, at: str, *, positive: bool = True) -> float:
    if key not in obj or obj[key] is None:
        raise CatalogError(f"{at}: missing field '{key}'", fix="give the tool's whole result file, unedited")
    try:
        v = float(obj[key])
    except (TypeError, ValueError):
        raise CatalogError(f"{at} {key}: expected a number, got {obj[key]!r}") from None
    if not math.isfinite(v) or v < 0 or (positive and v == 0):
        raise CatalogError(f"{at} {key}: expected a finite number > 0, got {obj[key]!r}")
    return v


def _concurrency(value, at: str, field: str) -> int:
    if value is None:
        raise CatalogError(f"{at} {field}: the run had no fixed concurrency (an open loop at a request rate); a "
                           "serving measurement is a closed loop of that many clients",
                           fix="benchmark at a fixed concurrency (the tools' max-concurrency or concurrency "
                               "option)")
    try:
        c = float(value)
    except (TypeError, ValueError):
        c = float("nan")
    if not (math.isfinite(c) and c.is_integer() and c >= 1):
        raise CatalogError(f"{at} {field}: expected a whole number >= 1, got {value!r}")
    return int(c)


def _float(value, at: str, field: str) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        raise CatalogError(f"{at} {field}: expected a number, got {value!r}") from None


def _not_speculative(length, at: str, field: str) -> None:
    if length is not None and _float(length, at, field) > 1.0:
        raise CatalogError(f"{at} {field}: the server decoded speculatively ({float(length):.3g} tokens accepted per "
                           "step); serving measurements price one token per step, so this run would fit the engine "
                           "terms to speculation's gain", fix="benchmark the deployment without speculative decoding "
                                                              "to calibrate it (predict prices speculation itself)")


def _openai_bench(obj: dict, at: str, tool: str) -> BenchRun:
    """vllm bench serve / SGLang bench_serving: totals over the completed requests and mean latencies in ms."""
    rate = obj.get("request_rate")
    if rate not in (None, "inf", "Infinity") and math.isfinite(_float(rate, at, "request_rate")):
        raise CatalogError(f"{at} request_rate: {rate} requests/s, an open loop; a serving measurement is a closed "
                           "loop at fixed concurrency",
                           fix="benchmark with an infinite request rate and a fixed max-concurrency")
    c = _concurrency(obj.get("max_concurrency"), at, "max_concurrency")
    _not_speculative(obj.get("spec_decode_acceptance_length" if tool == "vllm" else "accept_length"), at,
                     "spec_decode_acceptance_length" if tool == "vllm" else "accept_length")
    done = _number(obj, "completed", at)
    return BenchRun(tool=tool, where=at, concurrency=c, prompt_tokens=_number(obj, "total_input_tokens", at) / done,
                    output_tokens=_number(obj, "total_output_tokens", at) / done,
                    tpot_s=_number(obj, "mean_tpot_ms", at) * 1e-3, ttft_s=_number(obj, "mean_ttft_ms", at) * 1e-3,
                    model_id=str(obj.get("model_id") or ""))


def _metric(obj: dict, key: str, at: str, *, seconds: bool) -> float:
    """The ``avg`` of an AIPerf/GenAI-Perf metric object, in seconds (latencies) or tokens."""
    m = obj.get(key)
    if not isinstance(m, dict):
        raise CatalogError(f"{at}: missing metric '{key}'", fix="give the tool's whole profile_export JSON")
    unit = str(m.get("unit", "")).strip().lower()
    if seconds and unit not in _SECONDS:
        raise CatalogError(f"{at} {key}.unit: expected one of {', '.join(_SECONDS)}, got {m.get('unit')!r}")
    if not seconds and unit not in ("tokens", "token", ""):
        raise CatalogError(f"{at} {key}.unit: expected tokens, got {m.get('unit')!r}")
    return _number(m, "avg", f"{at} {key}") * (_SECONDS[unit] if seconds else 1.0)


def _perf_concurrency(cfg, at: str) -> int:
    """The concurrency of an AIPerf/GenAI-Perf ``input_config`` (module docstring), or a refusal."""
    cfg = cfg if isinstance(cfg, dict) else {}
    phases = cfg.get("phases")
    if isinstance(phases, dict):
        phases = [dict(v, name=k) for k, v in phases.items() if isinstance(v, dict)]
    if isinstance(phases, list) and phases:
        dicts = [p for p in phases if isinstance(p, dict)]
        pick = next((p for p in dicts if p.get("name") == "profiling"), dicts[0] if dicts else {})
        if "concurrency" in pick:
            return _concurrency(pick["concurrency"], at, "input_config.phases.concurrency")
    for path in (("loadgen", "concurrency"), ("perf_analyzer", "stimulus", "concurrency"), ("concurrency",)):
        node = cfg
        for part in path:
            node = node.get(part) if isinstance(node, dict) else None
        if node is not None:
            return _concurrency(node, at, "input_config." + ".".join(path))
    return _concurrency(None, at, "input_config concurrency")


def _perf_export(obj: dict, at: str, tool: str) -> BenchRun:
    """AIPerf / GenAI-Perf profile exports: metric objects with a unit and an average."""
    c = _perf_concurrency(obj.get("input_config"), at)
    return BenchRun(tool=tool, where=at, concurrency=c,
                    prompt_tokens=_metric(obj, "input_sequence_length", at, seconds=False),
                    output_tokens=_metric(obj, "output_sequence_length", at, seconds=False),
                    tpot_s=_metric(obj, "inter_token_latency", at, seconds=True),
                    ttft_s=_metric(obj, "time_to_first_token", at, seconds=True))


@dataclass(frozen=True, kw_only=True)
class BenchDeployment:
    """What the result files do not record, given on the command line: catalogue model and system, plan and
    formats (empty formats: the model's own)."""

    model: str
    system: str
    tp: int = 1
    ep: int = 1
    pp: int = 1
    weight_dtype: str = ""
    kv_dtype: str = ""


def to_measurements(runs: list[BenchRun], dep: BenchDeployment) -> list:
    """One ``serving`` measurement per run on ``dep`` (validated as any measurement row; the output tokens a
    run averaged are kept as a mean, fractional when requests stopped early)."""
    from .measurements import make

    out = []
    for r in runs:
        if r.output_tokens < 2:
            raise CatalogError(f"{r.where}: {r.output_tokens:.3g} output tokens per request on average; TPOT needs "
                               "at least 2", fix="benchmark with longer outputs")
        out.append(make({"kind": "serving", "source": f"{r.tool}: {r.where}", "model": dep.model,
                         "system": dep.system, "batch": r.concurrency, "prompt_tokens": r.prompt_tokens,
                         "output_tokens": r.output_tokens, "tp": dep.tp, "ep": dep.ep, "pp": dep.pp,
                         "weight_dtype": dep.weight_dtype, "kv_dtype": dep.kv_dtype, "measured_tpot_s": r.tpot_s,
                         "measured_ttft_s": r.ttft_s, "note": r.model_id}, where=r.where))
    return out


def read_bench_measurements(paths, dep: BenchDeployment) -> list:
    """``serving`` measurements of every run of every file in ``paths`` on ``dep``."""
    runs = [run for p in paths for run in read_bench_file(p)]
    return to_measurements(runs, dep)
