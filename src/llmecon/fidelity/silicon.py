"""NVIDIA's measured end-to-end serving rows (aiconfigurator ``silicon_dev.csv``) as ``predict`` cases.

Source: ``shared/validation/aiconfigurator/silicon_dev.csv`` (rows of aiconfigurator's
``silicon_sample.csv`` @095f58a, Apache-2.0; README in that folder): one closed-loop benchmark per
row, ``batch_size`` = client concurrency, ``isl``/``osl`` prompt and output tokens, measured
``silicon_ttft_ms`` and ``silicon_tpot_ms``. Each aggregated row becomes one ``predict`` case of
phase ``serving`` (``serving.steady_state``) with the (chip, engine) kernel-table profile
(``--profile <chip>/<engine>``). Mapping (each a choice, written down):

* ``model_path`` ``org/name`` -> ``<configs>/org--name_config.json`` (``shared/reference/hf_configs``);
  ``zhipuai/GLM-5`` -> ``zai-org--GLM-5`` (the same model: Zhipu AI publishes as zai-org on Hugging
  Face); ``meta-llama/Llama-3.1-70B`` -> ``meta-llama--Meta-Llama-3.1-70B`` (Meta renamed the
  repository; same weights). A path with no config (``nvidia/DeepSeek-R1-NVFP4``, ``nvidia/Qwen3-32B-NVFP4``) is
  skipped, not substituted.
* ``system`` -> catalogue system (``SYSTEMS``); ``backend`` -> engine profile ``<chip>/<engine>``.
* weights: ``gemm_quant_mode`` nvfp4 -> nvfp4, fp8 -> fp8, int4_wo -> int4; empty -> ``precision``
  (bf16/fp8/fp4->nvfp4/int4), empty both -> the model's own dtype. fp8 runs as ``fp8_block`` (fp8
  with 128x128 block scales: the same bytes and peak, the block-scaled kernels' table terms) where
  ``gemm_quant_mode`` or ``moe_quant_mode`` says fp8_block or the model's checkpoint config has a
  ``quantization_config.weight_block_size`` (DeepSeek-R1/V3, MiniMax-M2.5: an engine serves the
  checkpoint's own blocks). The two kernel families differ up to 4x on Hopper (vLLM's per-tensor
  fp8 MoE at MiniMax-M2.5's shape, 128 tokens: 3.7 ms vs 1.0 ms block-scaled, h200 moe table).
  nvfp4/fp4 on a checkpoint quantised ``mxfp4`` (gpt-oss) is that checkpoint: its own formats
  (bf16 attention, MXFP4 experts), not NVFP4 everywhere.
  llmecon has one weight dtype per deployment, so GEMMs and experts share it.
* KV cache: the CSV does not say. TensorRT-LLM rows with nvfp4 or (per-tensor) fp8 weights take fp8
  KV: such rows serve NVIDIA's ModelOpt checkpoints, whose ``hf_quant_config.json`` sets
  ``kv_cache_quant_algo: FP8`` (every nvidia/*-NVFP4 and -FP8 config in shared/reference/hf_configs),
  and TensorRT-LLM builds its cache in that format. Every other row takes the model's default (bf16):
  vLLM's and SGLang's ``kv_cache_dtype`` defaults to ``auto`` (the activation dtype), and block-fp8
  checkpoints carry no KV quantisation.
* concurrency: the client's concurrency against the replica is ``silicon_concurrency`` in
  ``silicon_data_source`` where it is given (``batch_size`` there is per attention-DP rank:
  ``silicon_concurrency = batch_size · attention_dp_size`` on every attention-DP row that has both,
  and ``batch_size · tp`` on 29 TRT-LLM rows), else ``batch_size · attention_dp_size``.
* plan: ``tp = tp_size``, ``adp = attention_dp_size`` (empty or 0: 1), ``pp = pp_size``; a MoE
  model takes ``ep = moe_ep_size`` and its ``moe_tp_size·moe_ep_size`` must equal ``tp·adp``
  (llmecon's expert TP is ``tp·adp/ep``), else the row is skipped; a dense model has ep 1. An ep that does not
  divide the routed experts (EP 24 or 48 for DeepSeek's 256) runs with redundant expert copies (the engines
  need whole expert slots per rank: SGLang's ``--ep-num-redundant-experts``, TensorRT-LLM's MoE load balancer
  ``num_slots``); the CSV does not record them, so the row takes the fewest that tile, ``r = -E mod ep`` (EP 48:
  32 copies, 288 slots, 6 per rank), a documented choice, written as the ``plan`` label (``...·r32``).
* ``mode`` disagg (separate prefill and decode workers) is read only with ``disaggregated=True``
  (``read_silicon(..., disaggregated=True)``), which reads nothing else; the default read (every engine-term
  fit: ``engine_fit``, ``holdout_silicon``, ``benchmarks/silicon_accuracy.py``) skips those rows, so the
  profiles stay fitted on aggregated rows only and disaggregated rows are out of sample for them. A
  disaggregated row becomes a ``predict`` case with ``deployment`` disaggregated: ``prefill_plan`` and
  ``decode_plan`` from the ``prefill_*`` / ``decode_*`` parallelism (each mapped as the plan above),
  ``prefill_workers`` / ``decode_workers`` from ``*_num_workers``, ``batch`` = ``silicon_concurrency``.
  Rows without worker counts (1,080 of the 1,316 in silicon_dev.csv) or without ``silicon_concurrency`` are
  skipped: a decode worker's batch is not known without them, and none is assumed. ``prefill_batch_size``
  and ``decode_batch_size`` are the benchmark's settings, not read: the closed loop derives both
  (``serving.disaggregated``; ``decode_batch_size`` = concurrency / decode workers on the rows that have both).
* Runs that decoded speculatively are skipped (``SPECULATIVE_RUNS``): the CSV does not record
  speculative decoding, and llmecon's serving model prices one token per forward step. DeepSeek-R1 on
  TensorRT-LLM ``1.2.0rc6.post3`` (88 aggregated B200 rows, 2026-02-05/06): measured TPOT is 0.56x
  the kernel-only one-token step at concurrency <= 16 (median of 37 rows) against 0.89x for the
  ``1.2.0rc6.post2`` rows of the same model and chip (25 rows); one configuration halves its TPOT
  between the two patch releases (tp 8, fp8, c = 4, 1024/1024: 10.30 ms -> 5.38 ms), and the ratio
  rises with concurrency (0.43-0.60 at c = 4, 0.52-0.83 at c = 64, 0.58-1.2 at c = 256), as
  multi-token prediction does (DeepSeek-R1 ships an MTP module, DeepSeek-AI 2024 sec. 2.2, which
  TensorRT-LLM runs as speculative decoding in its low-latency DeepSeek-R1 configurations). Left
  in: the ``1.1.0rc2.post2`` DeepSeek-R1 rows (at c <= 16: 0.45-0.68 on 11 of 21 rows, 0.75-1.15 on
  the rest; mixed, and no recorded field separates them).
  ``read_silicon(..., speculative=True)`` reads those ``SPECULATIVE_RUNS`` rows only, each a ``predict`` case
  with ``spec_tokens`` = ``SPECULATIVE_DRAFT_TOKENS`` (3, assumed) and the model family's default acceptance
  (``spec.speculation``: DeepSeek-V3's published 0.85 at the first drafted position, decaying after it); the
  default read and every engine-term fit still skip them, so they are out of sample for the profiles.

``read_silicon`` gives (rows, skipped); ``predict_silicon`` prices rows group by group (a group
that llmecon refuses is recorded with its reason, never dropped silently).
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import CatalogError, LlmeconError
from .predict_disagg import MAX_WORKERS

SYSTEMS = {"h100_sxm": "hgx-h100", "h200_sxm": "hgx-h200", "b200_sxm": "hgx-b200", "b300_sxm": "hgx-b300",
           "gb200": "gb200-nvl72", "gb300": "gb300-nvl72"}
CHIPS = {"h100_sxm": "h100-sxm", "h200_sxm": "h200", "b200_sxm": "b200", "b300_sxm": "b300", "gb200": "gb200",
         "gb300": "gb300"}
"""aiconfigurator system -> catalogue accelerator (the profile's chip)."""
ENGINES = ("trtllm", "sglang", "vllm")
MODEL_ALIASES = {"zhipuai/GLM-5": "zai-org/GLM-5", "meta-llama/Llama-3.1-70B": "meta-llama/Meta-Llama-3.1-70B"}
_WEIGHTS = {"nvfp4": "nvfp4", "fp8": "fp8", "fp8_block": "fp8_block", "int4_wo": "int4", "bf16": "bf16",
            "fp4": "nvfp4", "int4": "int4"}
SPECULATIVE_RUNS = {("trtllm", "1.2.0rc6.post3"): ("deepseek-ai/DeepSeek-R1",)}
"""(backend, backend_version) -> model paths whose rows ran speculative decoding (module docstring)."""
SPECULATIVE_DRAFT_TOKENS = 3
"""k of the ``SPECULATIVE_RUNS`` rows (``read_silicon(..., speculative=True)``): the CSV does not record it; 3 MTP
draft steps is TensorRT-LLM's published low-latency DeepSeek-R1 setting (its DeepSeek-V3/R1 example and
"Pushing Latency Boundaries: Optimizing DeepSeek-R1 Performance on NVIDIA B200 GPUs", NVIDIA tech blog,
2025: ``num_nextn_predict_layers: 3``), an assumption written down, not a recorded field."""
NEEDED = ("id", "backend", "model_path", "system", "precision", "mode", "isl", "osl", "gemm_quant_mode", "batch_size",
          "tp_size", "pp_size", "attention_dp_size", "moe_tp_size", "moe_ep_size", "silicon_ttft_ms",
          "silicon_tpot_ms")


@dataclass(frozen=True, kw_only=True)
class SiliconRow:
    """One measured aggregated-serving row and the ``predict`` case that prices it."""

    id: str
    model: str          # model_path as in the CSV (the leave-one-model-out group)
    chip: str           # catalogue accelerator
    engine: str
    concurrency: int
    case: dict          # a ``predict`` row (text values), phase serving (deployment disaggregated: disagg rows)
    ttft_s: float
    tpot_s: float

    @property
    def profile(self) -> str:
        return f"{self.chip}/{self.engine}"


@dataclass(frozen=True, kw_only=True)
class SiliconSkip:
    id: str
    reason: str


def default_path() -> Path | None:
    from .validation_sets import default_root

    root = default_root()
    return None if root is None else root / "aiconfigurator" / "silicon_dev.csv"


def read_silicon(path: str | Path | None = None, configs: str | Path | None = None, *, disaggregated: bool = False,
                 speculative: bool = False):
    """(rows, skipped) of ``silicon_dev.csv``: its aggregated rows, with ``disaggregated`` its disagg rows only,
    with ``speculative`` its MTP rows only (``SPECULATIVE_RUNS``); ``configs`` defaults to
    ``shared/reference/hf_configs`` beside the validation folder."""
    from ..files import read_text

    p = Path(path) if path is not None else default_path()
    if p is None or not p.is_file():
        raise CatalogError(f"silicon rows: no file {p}; pass the path of shared/validation/aiconfigurator/"
                           "silicon_dev.csv")
    cfg = Path(configs) if configs is not None else p.parent.parent.parent / "reference" / "hf_configs"
    return parse_silicon(read_text(p, field="silicon", what="silicon CSV"), cfg, where=str(p),
                         disaggregated=disaggregated, speculative=speculative)


def _system_of(name: str, seen: dict) -> tuple[str, str] | str:
    """(catalogue system, accelerator) of a CSV ``system``: aiconfigurator's names (``SYSTEMS``), else a
    catalogue system by its own name (e.g. ``mi300x-8``: rows of other vendors in the same format), else
    the reason the row is skipped."""
    if name not in seen:
        if name in SYSTEMS:
            seen[name] = (SYSTEMS[name], CHIPS[name])
        else:
            from ..catalog.hardware import get_system

            try:
                s = get_system(name)
                seen[name] = (s.name, s.accelerator.name)
            except LlmeconError:
                seen[name] = f"unknown system {name!r}"
    return seen[name]


def _int(raw: str, default: int) -> int:
    """A parallel degree; empty or 0 (some rows write 0 for 'not used') -> ``default``."""
    v = int(float(raw)) if raw.strip() else 0
    return v if v > 0 else default


def _concurrency(r: dict, adp: int) -> int:
    """Client concurrency against the replica: ``silicon_concurrency`` of ``silicon_data_source``
    where given, else ``batch_size`` (per attention-DP rank) times ``adp``."""
    m = re.search(r"silicon_concurrency=(\d+)", r.get("silicon_data_source") or "")
    return int(m.group(1)) if m else int(r["batch_size"]) * adp


def _checkpoint_quant(cfg: Path, seen: dict) -> str:
    """The checkpoint config's weight quantisation: 'fp8_block' (fp8 with
    ``quantization_config.weight_block_size``), 'mxfp4', or ''."""
    if cfg not in seen:
        try:
            q = json.loads(cfg.read_text()).get("quantization_config") or {}
        except (OSError, ValueError, AttributeError):
            q = {}
        method = str(q.get("quant_method", "")).lower()
        seen[cfg] = "fp8_block" if method == "fp8" and q.get("weight_block_size") else (
            "mxfp4" if method == "mxfp4" else "")
    return seen[cfg]


def _plan(r: dict, prefix: str, model) -> tuple[int, int, int, int, int] | str:
    """(tp, ep, pp, adp, redundant experts) of the row's ``<prefix>`` parallelism columns, or the reason it is
    skipped. An ep that does not divide the routed experts gets the fewest copies that tile (module docstring)."""
    tp, pp, adp = (_int(r.get(prefix + c) or "", 1) for c in ("tp_size", "pp_size", "attention_dp_size"))
    mtp, mep = _int(r.get(prefix + "moe_tp_size") or "", 1), _int(r.get(prefix + "moe_ep_size") or "", 1)
    if model.is_moe and mtp * mep != tp * adp:
        return f"{prefix}moe_tp_size·{prefix}moe_ep_size = {mtp}·{mep} does not tile tp·adp = {tp}·{adp}"
    ep = mep if model.is_moe else 1
    return tp, ep, pp, adp, (-model.moe.n_routed % ep if model.is_moe else 0)


def plan_label(plan: tuple[int, int, int, int, int]) -> str:
    """The plan label of ``_plan``'s degrees (``spec.plan.parse_label`` reads it back)."""
    tp, ep, pp, adp, red = plan
    return f"tp{tp}·ep{ep}·pp{pp}·adp{adp}" + (f"·r{red}" if red else "")


def _disaggregated_case(r: dict, model) -> dict | str:
    """The ``predict`` columns of a disagg row's two workers, or the reason it is skipped (module docstring)."""
    out = {"deployment": "disaggregated"}
    for role in ("prefill", "decode"):
        plan = _plan(r, role + "_", model)
        if isinstance(plan, str):
            return plan
        out[role + "_plan"] = plan_label(plan)
        workers = (r.get(role + "_num_workers") or "").strip()
        if not workers:
            return "disaggregated row without prefill/decode worker counts: a decode worker's batch is unknown"
        try:
            n = float(workers)
        except ValueError:
            n = float("nan")
        if not (math.isfinite(n) and n.is_integer() and 1 <= n <= MAX_WORKERS):
            return f"{role}_num_workers {workers!r}: expected a whole number in 1..{MAX_WORKERS:,}"
        out[role + "_workers"] = str(int(n))
    if not re.search(r"silicon_concurrency=(\d+)", r.get("silicon_data_source") or ""):
        return "disaggregated row without silicon_concurrency: the client concurrency is unknown"
    return out


def parse_silicon(text: str, configs: str | Path, *, where: str = "silicon_dev.csv", disaggregated: bool = False,
                  speculative: bool = False):
    """(rows, skipped) of a silicon CSV's text: the aggregated rows, or with ``disaggregated`` the disagg rows
    only (the other mode is neither read nor listed as skipped then); see the module docstring."""
    reader = csv.DictReader(io.StringIO(text))
    missing = [c for c in NEEDED if c not in (reader.fieldnames or [])]
    if missing:
        raise CatalogError(f"{where}: missing column(s) {', '.join(missing)}")
    seen = _Seen(configs=Path(configs))
    rows, skipped = [], []
    for line, r in enumerate(reader, start=2):
        rid = r["id"] or f"line {line}"
        got = _read_row(r, rid, seen, disaggregated=disaggregated, speculative=speculative)
        if isinstance(got, str):
            skipped.append(SiliconSkip(id=rid, reason=got))
        elif got is not None:
            rows.append(got)
    return rows, skipped


@dataclass
class _Seen:
    """What ``parse_silicon`` has looked up once per file: model configs, checkpoint quantisation, systems."""

    configs: Path
    models: dict = field(default_factory=dict)
    blocks: dict = field(default_factory=dict)
    systems: dict = field(default_factory=dict)

    def model(self, path: str):
        """(config path, model) of a CSV ``model_path``, or (config path, the reason it is skipped)."""
        from ..catalog.models import get_model

        mp = MODEL_ALIASES.get(path, path)
        cfg = self.configs / (mp.replace("/", "--") + "_config.json")
        if mp not in self.models:
            try:
                self.models[mp] = get_model(str(cfg)) if cfg.is_file() else f"no config {cfg.name} in {self.configs}"
            except LlmeconError as exc:
                self.models[mp] = f"config {cfg.name} not read: {str(exc).splitlines()[0]}"
        return cfg, self.models[mp]


def _mode_skip(r: dict, disaggregated: bool) -> str | bool:
    """Why a row of the other mode is not read: True (silently: the other read takes it), a reason (listed as
    skipped), or False (read it)."""
    if disaggregated and r["mode"] != "disagg":
        return True
    if not disaggregated and r["mode"] != "agg":
        return (f"mode {r['mode']}: disaggregated rows are read apart (read_silicon(..., disaggregated=True)); "
                "engine terms are fitted on aggregated rows only" if r["mode"] == "disagg"
                else f"unknown mode {r['mode']!r}")
    return False


def _engine_skip(r: dict, speculative: bool) -> str | bool:
    """Why a row of an unknown engine or of the other speculation read is not read (as ``_mode_skip``)."""
    from .engines import measured_engines

    if r["backend"] not in ENGINES and r["backend"] not in measured_engines():
        return f"unknown backend {r['backend']!r} (no shipped profile measures it)"
    ran_mtp = r["model_path"] in SPECULATIVE_RUNS.get((r["backend"], (r.get("backend_version") or "").strip()), ())
    if speculative != ran_mtp:
        return True if speculative else (
            f"speculative decoding (MTP) ran: {r['backend']} {r['backend_version']} {r['model_path']} rows decode "
            "at about half the one-token step (fidelity.silicon.SPECULATIVE_RUNS)")
    return False


def _weights(r: dict, cfg: Path, seen: _Seen) -> str | None:
    """The row's weight quantisation as read (module docstring), or None where it is unknown."""
    quant = r["gemm_quant_mode"] or r["precision"]
    if quant and quant not in _WEIGHTS:
        return None
    native = _checkpoint_quant(cfg, seen.blocks)
    if _WEIGHTS.get(quant) == "fp8" and "fp8_block" in (r.get("moe_quant_mode"), native):
        return "fp8_block"
    if _WEIGHTS.get(quant) == "nvfp4" and native == "mxfp4":
        return ""  # the checkpoint's own formats (gpt-oss: bf16 attention, MXFP4 experts)
    return quant


def _read_row(r: dict, rid: str, seen: _Seen, *, disaggregated: bool, speculative: bool) -> SiliconRow | str | None:
    """One CSV row as a ``SiliconRow``, the reason it is skipped, or None (the other read's row)."""
    why = _mode_skip(r, disaggregated)
    if why:
        return None if why is True else why
    where_run = _system_of(r["system"], seen.systems)
    if isinstance(where_run, str):
        return where_run
    why = _engine_skip(r, speculative)
    if why:
        return None if why is True else why
    cfg, model = seen.model(r["model_path"])
    if isinstance(model, str):
        return model
    quant = _weights(r, cfg, seen)
    if quant is None:
        return f"unknown precision {r['gemm_quant_mode'] or r['precision']!r}"
    try:
        plan = _disaggregated_case(r, model) if disaggregated else _plan(r, "", model)
        isl, osl = int(r["isl"]), int(r["osl"])
        c = 0 if disaggregated and isinstance(plan, str) else _concurrency(
            r, 1 if disaggregated or isinstance(plan, str) else plan[3])
        ttft, tpot = float(r["silicon_ttft_ms"]) * 1e-3, float(r["silicon_tpot_ms"]) * 1e-3
    except ValueError as exc:
        return f"unreadable number: {exc}"
    if not (np.isfinite(ttft) and np.isfinite(tpot) and ttft > 0 and tpot > 0):
        return "no measured TTFT/TPOT"
    if isinstance(plan, str):
        return plan
    where_plan = plan if disaggregated else (
        {"plan": plan_label(plan)} if plan[4] else dict(zip(("tp", "ep", "pp", "adp"), (str(v) for v in plan))))
    case = {"id": rid, "model": str(cfg), "system": where_run[0], "phase": "serving", "batch": str(c),
            "context": "", "prompt_tokens": str(isl), "output_tokens": str(osl), **where_plan,
            "weight_dtype": _WEIGHTS.get(quant, ""),
            "kv_dtype": "fp8" if r["backend"] == "trtllm" and _WEIGHTS.get(quant) in ("nvfp4", "fp8") else "",
            **({"spec_tokens": str(SPECULATIVE_DRAFT_TOKENS)} if speculative else {})}
    return SiliconRow(id=rid, model=r["model_path"], chip=where_run[1], engine=r["backend"], concurrency=c,
                      case=case, ttft_s=ttft, tpot_s=tpot)


def row_profile(name: str):
    """The profile of a row's ``chip/engine`` (``fidelity.engines.engine_profile``: the shipped one, else one
    transferred from the engine's other chips, e.g. an AMD chip's rows of an engine it has no profile for)."""
    from ..catalog.hardware import get_accelerator
    from .engines import engine_profile

    chip, engine = name.split("/", 1)
    return engine_profile(get_accelerator(chip), engine)


_PLAN_KEYS = ("plan", "tp", "ep", "pp", "adp", "prefill_plan", "prefill_workers", "decode_plan", "decode_workers")


def predict_silicon(rows: list[SiliconRow], *, mode: str = "calibrated", profiles: dict | None = None):
    """Predicted (TPOT, TTFT) arrays in row order (NaN where not predicted) and {reason: count} of
    the rows llmecon refused. ``profiles`` maps ``chip/engine`` to a profile (default: the shipped
    one by name); ``mode`` 'ideal' prices with datasheet peaks."""
    from .predict import predict_cases

    tpot = np.full(len(rows), np.nan)
    ttft = np.full(len(rows), np.nan)
    problems: Counter = Counter()
    groups: dict[tuple, list[int]] = defaultdict(list)
    for i, r in enumerate(rows):
        c = r.case
        groups[(r.profile, c["model"], c["system"], *(c.get(k) for k in _PLAN_KEYS), c["weight_dtype"],
                c.get("spec_tokens"), c.get("acceptance"))].append(i)
    for key, idx in groups.items():
        prof = None
        try:
            if mode != "ideal":
                prof = (profiles or {}).get(key[0]) or row_profile(key[0])
            out = predict_cases([rows[i].case for i in idx], mode=mode, profile=prof, where=key[0])
        except LlmeconError as exc:
            problems[str(exc).split(": ", 1)[-1].splitlines()[0][:160]] += len(idx)
            continue
        for j, i in enumerate(idx):
            tpot[i], ttft[i] = out[j]["tpot_s"], out[j]["ttft_s"]
    return tpot, ttft, dict(problems)


def disaggregated_note(path: str | Path | None = None, configs: str | Path | None = None, *,
                       max_concurrency: int = 8) -> str:
    """One line for ``llmecon validate``: the file's disagg rows priced by ``predict`` with the shipped
    (chip, engine) profiles, |pred/meas - 1| median / p90 at concurrency <= ``max_concurrency``. Out of sample:
    the profiles' engine terms were fitted on aggregated rows only (``benchmarks/disagg_accuracy.py`` gives
    the tables)."""
    rows, skipped = read_silicon(path, configs, disaggregated=True)
    most = Counter(s.reason for s in skipped).most_common(1)
    tail = f"; {len(skipped)} disagg rows skipped" + (f" (most: {most[0][0]})" if most else "")
    if not rows:
        return "disaggregated rows: none priced" + tail
    tpot, ttft, problems = predict_silicon(rows)
    low = np.array([r.concurrency <= max_concurrency for r in rows]) & np.isfinite(tpot)

    def err(pred, meas):
        e = np.abs(pred[low] / meas[low] - 1)
        return f"{np.median(e):.0%} / {np.quantile(e, 0.9):.0%}" if e.size else "–"

    meas_tpot, meas_ttft = np.array([r.tpot_s for r in rows]), np.array([r.ttft_s for r in rows])
    refused = sum(problems.values())
    return (f"disaggregated rows (all chips and engines, shipped profiles; out of sample: engine terms are fitted on "
            f"aggregated rows only): {len(rows) - refused} priced, {int(low.sum())} at concurrency <= "
            f"{max_concurrency}: TPOT {err(tpot, meas_tpot)}, TTFT {err(ttft, meas_ttft)} (median / p90)"
            + (f"; {refused} refused" if refused else "") + tail)


def speculative_note(path: str | Path | None = None, configs: str | Path | None = None) -> str:
    """One line for ``llmecon validate``: the MTP rows (``SPECULATIVE_RUNS``, k = 3 assumed) priced with the
    shipped profiles (fitted without them) and the default decaying acceptance, |pred/meas - 1| median / p90.
    The decay was fitted on these rows: its out-of-sample score is ``benchmarks/speculative_mtp.py``'s."""
    rows, _ = read_silicon(path, configs, speculative=True)
    if not rows:
        return "speculative (MTP) rows: none in this file"
    tpot, _, problems = predict_silicon(rows)
    ok = np.isfinite(tpot)
    e = np.abs(tpot[ok] / np.array([r.tpot_s for r in rows])[ok] - 1)
    return (f"speculative (MTP) rows, k = {SPECULATIVE_DRAFT_TOKENS} assumed, default decaying acceptance: "
            f"{int(ok.sum())} of {len(rows)} priced, TPOT {np.median(e):.0%} / {np.quantile(e, 0.9):.0%} (median / "
            "p90; the decay was fitted on these rows, leave-one-shape-out in benchmarks/speculative_mtp.py)"
            + (f"; {sum(problems.values())} refused" if problems else ""))
