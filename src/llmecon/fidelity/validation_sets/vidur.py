"""vidur's profiling CSVs as measurement rows: per-op times (``gemm``/``elementwise``) and NCCL
collectives (``all_reduce``/``send_recv``).

Compute (``vidur/profiling/compute/<gpu>/<org>/<model>/mlp.csv``): one CSV row per (num_tokens,
TP) of one model, ``time_stats.<op>.median`` in ms per call of one layer's op, medians of the
profiler's 20 timed repeats, fp16 (vidur 0.0.26 ``vidur/profiling/mlp/mlp_impl.py`` and
``mlp_wrapper.py``: the block is built with sarathi's Column/RowParallelLinear, TP emulated on
one GPU by dividing the shapes, no all-reduce). With m = num_tokens, d = n_embd, nh = n_head,
nkv = n_kv_head, hd = d/nh, ff = n_expanded_embd, t = TP:

============== ===============================================================================
attn_pre_proj  gemm m x (nh + 2·nkv)·hd/t x d        (QKV projection)
attn_post_proj gemm m x d x nh·hd/t                  (O projection, input split over TP)
mlp_up_proj    gemm m x (2 if gated else 1)·ff/t x d (gate+up in one matrix when gated)
mlp_down_proj  gemm m x d x ff/t
============== ===============================================================================

Elementwise byte models (2 bytes per fp16 element; activations only, the norms' d-element
weight/bias vectors are omitted, < 1/m of the traffic):

- ``input_layernorm``, ``post_attention_layernorm``: read m·d, write m·d -> 4·m·d bytes.
- ``add``: with a post-attention norm (Llama-style block) vidur times the second residual add,
  read 2·m·d, write m·d -> 6·m·d. Without one (phi-2's parallel block) it times
  ``attn + mlp + residual``: two eager kernels, read 4·m·d, write 2·m·d -> 12·m·d.
- ``mlp_act``: gated (SiluAndMul) read 2·m·ff/t, write m·ff/t -> 6·m·ff/t; GELU read and write
  m·ff/t -> 4·m·ff/t.
- ``attn_rope``: in place on q and k, read + write m·(nh + nkv)/t·hd elements, plus the cos/sin
  cache row of hd elements and one int64 position per token -> 4·m·(nh + nkv)/t·hd + 2·m·hd +
  8·m. vidur profiles rotary_dim = hd for every model, phi-2 included (its real model rotates
  only 40% of each head), so these rows follow what was timed.
- ``emb`` (a vocabulary gather) is skipped: no measurement kind describes it.

Network (``vidur/profiling/network/<cluster>/{all_reduce,send_recv}.csv``) is read with
``collective_fit.load_measurements`` (columns ``time_stats.<op>.median`` ms -> s, ``size`` =
bytes per rank, ``num_workers``, ``devices_per_node``). Each time is the median over 3 repeats
of the median per-launch NCCL kernel time (vidur ``collectives_wrapper.py``). h100_dgx ->
``hgx-h100``, a100_dgx -> ``hgx-a100`` (``collective_fit.CLUSTER_SYSTEMS``);
a100_pairwise_nvlink (4 A100s per node bridged in NVLink pairs) has no catalogued system and is
skipped.
"""

from __future__ import annotations

import csv
from pathlib import Path

from ..collective_fit import CLUSTER_SYSTEMS, OPS, load_measurements
from ...errors import CatalogError
from ..measurements import Measurement, make, parse_whole
from ._common import MS, Skipped, need_file

COMPUTE = "vidur/profiling/compute"
NETWORK = "vidur/profiling/network"
# vidur profiled "h100" and "a100"; its A100 device config (vidur/config/device_sku_config.py,
# A100DeviceSKUConfig) is total_memory_gb = 80, hence a100-80gb.
ACCELERATORS = {"h100": "h100-sxm", "a100": "a100-80gb"}
CLUSTERS = {"h100": ("h100_dgx",), "a100": ("a100_dgx", "a100_pairwise_nvlink")}
GEMM_OPS = ("attn_pre_proj", "attn_post_proj", "mlp_up_proj", "mlp_down_proj")
ELEMENTWISE_OPS = ("input_layernorm", "post_attention_layernorm", "attn_rope", "mlp_act")
SKIPPED_OPS = {"emb": "embedding gather (a vocabulary-row lookup): no measurement kind describes it",
               "add": ("residual add timed on inputs the previous kernel just wrote: below ~50 MB they sit in "
                       "the 40-50 MB L2, and 52% of the H100 rows run faster than HBM bandwidth allows, so "
                       "these rows measure L2, not the HBM-bound cost an add has inside a real step")}
SHAPE_COLUMNS = ("n_head", "n_kv_head", "n_embd", "n_expanded_embd", "use_gated_mlp", "num_tokens",
                 "num_tensor_parallel_workers")
FP16_BYTES = 2


def model_files(root: Path, gpu: str) -> list[tuple[str, Path]]:
    """(model folder such as ``meta-llama/Llama-2-7b-hf``, mlp.csv path) for every profiled model."""
    folder = root / COMPUTE / gpu
    if not folder.is_dir():
        raise CatalogError(f"{folder}: no such folder; expected vidur's compute profiling for {gpu}")
    files = sorted(folder.glob("*/*/mlp.csv"))
    if not files:
        raise CatalogError(f"{folder}: no <org>/<model>/mlp.csv files")
    return [(p.parent.relative_to(folder).as_posix(), p) for p in files]


def _div(a: int, b: int, what: str, where: str) -> int:
    if a % b:
        raise CatalogError(f"{where}: {what} = {a} is not divisible by {b}")
    return a // b


def _shapes(values: dict, gated: bool, sequential: bool, where: str) -> dict[str, tuple]:
    """op -> ('gemm', m, n, k) or ('elementwise', bytes) for one CSV row (see the module doc)."""
    nh, nkv, d, ff, m, t = (values[c] for c in ("n_head", "n_kv_head", "n_embd", "n_expanded_embd", "num_tokens",
                                                  "num_tensor_parallel_workers"))
    hd = _div(d, nh, "n_embd", where)
    h, g = _div(nh, t, "n_head", where), _div(nkv, t, "n_kv_head", where)
    f = _div(ff, t, "n_expanded_embd", where)
    b = FP16_BYTES
    return {
        "attn_pre_proj": ("gemm", m, (h + 2 * g) * hd, d),
        "attn_post_proj": ("gemm", m, d, h * hd),
        "mlp_up_proj": ("gemm", m, (2 if gated else 1) * f, d),
        "mlp_down_proj": ("gemm", m, d, f),
        "input_layernorm": ("elementwise", 2 * m * d * b),
        "post_attention_layernorm": ("elementwise", 2 * m * d * b),
        "add": ("elementwise", (3 if sequential else 6) * m * d * b),
        "mlp_act": ("elementwise", (3 if gated else 2) * m * f * b),
        "attn_rope": ("elementwise", 2 * m * (h + g) * hd * b + m * hd * b + 8 * m),
    }


def compute_rows(root: Path, gpu: str) -> tuple[list[Measurement], list[Skipped]]:
    """``gemm`` and ``elementwise`` rows of every model profiled on ``gpu`` (h100 or a100)."""
    rows: list[Measurement] = []
    skipped: list[Skipped] = []
    accelerator = ACCELERATORS[gpu]
    for group, path in model_files(root, gpu):
        rel = path.relative_to(root).as_posix()
        with path.open(newline="", encoding="utf-8") as handle:
            reader = csv.reader(handle)
            header = next(reader, None) or []
            col = {name: i for i, name in enumerate(header)}
            missing = [c for c in SHAPE_COLUMNS if c not in col]
            if missing:
                raise CatalogError(f"{path}: missing column '{missing[0]}'")
            timed = [c.split(".")[1] for c in header if c.startswith("time_stats.") and c.endswith(".median")]
            unknown = [op for op in timed if op not in GEMM_OPS + ELEMENTWISE_OPS and op not in SKIPPED_OPS]
            if unknown:
                raise CatalogError(f"{path}: op '{unknown[0]}' has no byte/shape model in "
                                   f"llmecon.fidelity.validation_sets.vidur")
            ops = [op for op in GEMM_OPS + ELEMENTWISE_OPS if op in timed]
            sequential = "post_attention_layernorm" in timed
            n_lines = 0
            for line, raw in enumerate(reader, start=2):
                n_lines += 1
                where = f"{path} line {line}"
                values = {c: parse_whole(raw[col[c]], c, where) for c in SHAPE_COLUMNS if c != "use_gated_mlp"}
                gated = raw[col["use_gated_mlp"]]
                if gated not in ("True", "False"):
                    raise CatalogError(f"{where} use_gated_mlp: expected True or False, got {gated!r}")
                shapes = _shapes(values, gated == "True", sequential, where)
                for op in ops:
                    shape = shapes[op]
                    out = {"kind": shape[0], "source": rel, "accelerator": accelerator, "dtype": "fp16",
                           "measured_s": float(raw[col[f"time_stats.{op}.median"]]) * MS, "group": group,
                           "note": f"{op} (line {line})"}
                    if shape[0] == "gemm":
                        out.update(m=shape[1], n=shape[2], k=shape[3])
                    else:
                        out["bytes"] = shape[1]
                    rows.append(make(out, f"{where} {op}"))
        for op, reason in SKIPPED_OPS.items():
            if op in timed:
                skipped.append(Skipped(source=rel, items=n_lines, reason=f"op '{op}': {reason}"))
    return rows, skipped


def network_rows(root: Path, gpu: str) -> tuple[list[Measurement], list[Skipped]]:
    """``all_reduce`` and ``send_recv`` rows of the clusters profiled with ``gpu``."""
    rows: list[Measurement] = []
    skipped: list[Skipped] = []
    for cluster in CLUSTERS[gpu]:
        for op in OPS:
            rel = f"{NETWORK}/{cluster}/{op}.csv"
            need_file(root, rel)
            m = load_measurements(root / NETWORK, cluster, op)
            system = CLUSTER_SYSTEMS.get(cluster)
            if system is None:
                skipped.append(Skipped(source=rel, items=len(m.time_s), reason=(
                    f"{cluster}: no catalogued system (A100s bridged in NVLink pairs, 4 per node, "
                    "no NVSwitch); hgx-a100's NVSwitch would misdescribe it")))
                continue
            for i, (size, time, p, d) in enumerate(zip(m.size_bytes.tolist(), m.time_s.tolist(),
                                                       m.participants.tolist(), m.devices_per_node.tolist())):
                rows.append(make({"kind": op, "source": rel, "system": system, "participants": p,
                                  "chips_per_node": d, "bytes": size, "measured_s": time,
                                  "note": f"line {i + 2}"}, f"{rel} line {i + 2}"))
    return rows, skipped
