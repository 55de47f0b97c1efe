"""llmecon's config reader against an oracle no one here wrote: transformers' own model classes.

For every causal-LM ``model_type`` of the installed transformers (``MODEL_FOR_CAUSAL_LM_MAPPING_NAMES``)
this builds the default config (``AutoConfig.for_model``), writes it as the ``config.json`` a user
would have (``to_dict``), reads it with llmecon (``model_from_hf_config``) and instantiates the model
on PyTorch's ``meta`` device (no memory, no download) to count its parameters exactly:
``sum(p.numel() for p in model.parameters())``. ``parameters()`` yields a shared tensor once, so tied
input/output embeddings count once, as in llmecon's ``ParamCounts.total``; buffers (rotary tables,
DeepSeek's ``e_score_correction_bias`` in some versions) are not parameters and are not counted.
Parameters under a multimodal wrapper's vision/audio tower and projector (names matching
``ENCODER_MARKERS``) are counted apart: llmecon's total is the language model's (``Model.encoder_params``).

Where a forward on ``meta`` works (a prompt of ``PROMPT`` tokens, ``use_cache=True``), the cache it
returns is compared: KV elements per token summed over layers (keys + values of every cache layer,
divided by the prompt length; llmecon's ``kv_bytes_per_token`` at 2 bytes) and the per-sequence
recurrent + conv state elements of linear/SSM layers (llmecon's ``state_bytes_per_sequence``).

Rows: ``match`` (parameters within 1%), ``off`` (read, parameters off by more than 1%: the note says
why), ``refused`` (llmecon's one-line reason), ``no oracle`` (transformers itself cannot build the
default config on meta; listed, not counted), ``not decoder`` (encoder-decoder or encoder-only types
in the causal-LM mapping; listed, not counted).

Run: ``/work/venv-oracle/bin/python benchmarks/model_oracle.py [--types a,b] [--shared] [--markdown]``
(needs ``pip install -e '.[oracle]'``: transformers==5.23.0 and torch). No network is used.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

ENCODER_MARKERS = ("vision", "visual", "multi_modal_projector", "audio", "mm_projector", "image_newline",
                   "embed_vision", "embed_audio", "patch_embed", "vqmodel", "vq_model", "speech", "img_",
                   "perceiver", "connector")
PROMPT = 4
TOLERANCE = 0.01

# Known, intended differences between llmecon's count and the meta-device count (per model_type): shown
# in the note of a row that is off, so no off row goes unexplained. Each says what llmecon counts differently.
EXPLAINED: dict[str, str] = {
    "longcat_flash": ("transformers 5.23.0 allocates gate_up_proj for all 768 router columns (768 x 4096 x 6144 per "
                      "layer) though 256 are zero (identity) experts with no weights and down_proj has 512: "
                      "180.4B parameters no forward uses; llmecon counts the 512 real experts, 560.6B, the "
                      "published LongCat-Flash total (560B)"),
}
# Known, intended differences in the cache comparison. DeepSeek sparse attention: llmecon also holds the
# lightning indexer's key per token per layer (index_head_dim at fp8 + one fp32 scale: 132 B, DeepSeek-V3.2
# inference/model.py, as the serving engines keep it); transformers' cache layers hold the latent only.
_DSA = ("llmecon adds the DSA indexer key cache (132 B per token per layer at fp8 + scale) that "
        "transformers' cache does not hold; the latent cache itself matches exactly")
CACHE_EXPLAINED: dict[str, str] = {
    "deepseek_v32": _DSA, "glm_moe_dsa": _DSA, "dots3_note": _DSA, "dots3_note_text": _DSA,
    # DeepSeek-V4: transformers' reference cache keeps keys and values as two bf16 tensors although K = V (one
    # shared head), and at a 4-token prompt holds raw tokens only; llmecon counts one K = V entry in DeepSeek's
    # fp8 layout (584 B) per raw token in the window plus the 1/4 and 1/128 compressed entries, per token of a
    # long context (spec/compressed.py). The two are not the same quantity at 4 tokens.
    "deepseek_v4": ("transformers holds K and V as two bf16 tensors (K = V) for the 4 raw tokens; llmecon counts "
                    "one fp8 K = V entry plus the compressed entries per token of a long context"),
    # CPM-Ant: CpmAntModel.forward prepends prompt_length (32) learned prompt positions to every sequence, so a
    # 4-token forward caches 36 positions (9x per prompt token); per generated token the KV is the same.
    "cpmant": ("transformers caches the 32 prompt positions CPM-Ant prepends to every sequence beside the 4 "
               "tokens (36 / 4 = 9x); per token the KV matches (393,216 el); llmecon omits those 32 positions "
               "per sequence (12.6M el, 25 MB at bf16)")}


@dataclass
class Row:
    model_type: str
    status: str = ""
    oracle_params: int = 0
    encoder_params: int = 0
    llmecon_params: int = 0
    rel: float | None = None
    note: str = ""
    kv_oracle: float | None = None
    kv_llmecon: float | None = None
    state_oracle: float | None = None
    state_llmecon: float | None = None
    cache_note: str = ""
    ignored: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def causal_lm_types() -> list[str]:
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    return sorted(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES)


def default_config(model_type: str):
    from transformers import AutoConfig

    return AutoConfig.for_model(model_type)


# Causal-LM model types that are not decoder-only language models, by what their modeling code is
# (listed in the report as "not decoder", never counted): encoders run with a causal mask, and the
# decoder halves of encoder-decoder models (they cross-attend an encoder's output).
NOT_DECODER = {
    "xlnet": "two-stream permutation-LM encoder", "xlm": "cross-lingual masked-LM encoder",
    "bert-generation": "BERT encoder run with a causal mask", "trocr": "decoder half of an image-to-text "
    "encoder-decoder", "git": "image-captioning decoder over a vision encoder's tokens (the whole model is one "
    "stack)",
}


def is_decoder_type(cfg) -> bool:
    """Decoder-style: not encoder-decoder, not in ``NOT_DECODER``, and not a bidirectional encoder used
    as a decoder (BERT-style configs carry ``type_vocab_size``, token-type embeddings of an encoder)."""
    if getattr(cfg, "is_encoder_decoder", False) or getattr(cfg, "model_type", "") in NOT_DECODER:
        return False
    text = cfg.get_text_config() if hasattr(cfg, "get_text_config") else cfg
    return getattr(text, "type_vocab_size", None) is None


def meta_model(cfg):
    import torch
    from transformers import AutoModelForCausalLM

    with torch.device("meta"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # bf16: the reference (torch) kernels of some linear-attention layers require it in forward
        return AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16)


def count_params(model) -> tuple[int, int]:
    """(language-model parameters, encoder parameters); tied tensors count once."""
    text = enc = 0
    for name, p in model.named_parameters():
        if any(m in name.lower() for m in ENCODER_MARKERS):
            enc += p.numel()
        else:
            text += p.numel()
    return text, enc


def cache_elements(model, cfg) -> tuple[float | None, float | None, str]:
    """(KV elements per token over layers, recurrent+conv state elements per sequence, note)."""
    import torch

    vocab = cfg.get_text_config().vocab_size
    ids = torch.zeros((1, PROMPT), dtype=torch.long, device="meta")
    try:
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = model(input_ids=ids % max(vocab, 1), use_cache=True)
    except Exception as exc:  # the oracle's own limits: reported, not counted
        return None, None, f"forward on meta failed: {type(exc).__name__}: {str(exc).splitlines()[0][:90]}"
    cache = getattr(out, "past_key_values", None)
    if cache is None:  # Mamba / FalconMamba / Mamba-2 return their cache as cache_params
        cache = getattr(out, "cache_params", None)
    if cache is None:
        return None, None, "no cache returned"
    kv = state = 0.0
    missing = 0
    layers = getattr(cache, "layers", None)
    if layers is None:
        return None, None, f"cache type {type(cache).__name__} not read"
    for layer in layers:
        holds_state = any(hasattr(layer, n) for n in ("conv_states", "recurrent_states", "ssm_states"))
        if holds_state and not any(getattr(layer, n, None) for n in ("conv_states", "recurrent_states", "ssm_states")):
            missing += 1
        for name in ("keys", "values"):
            t = getattr(layer, name, None)
            if isinstance(t, torch.Tensor) and t.dim() >= 3:
                kv += t.numel() / PROMPT
        for name in ("conv_states", "recurrent_states", "ssm_states", "conv_state", "recurrent_state"):
            state += _state_numel(getattr(layer, name, None), conv=name.startswith("conv"))
    for t in getattr(cache, "linear_cache", None) or []:  # MiniMaxCache: lightning-attention states apart
        state += _state_numel(t, conv=False)
    if missing:
        return kv, None, f"{missing} linear/SSM layers return no state on meta (KV compared only)"
    return kv, state, ""


def _state_numel(value, *, conv: bool) -> float:
    """Elements of a cache layer's state (a tensor, or a dict/list of them). transformers keeps the
    last ``kernel`` conv inputs (its last dimension); llmecon counts the ``kernel - 1`` a causal conv
    needs (vLLM's layout), so conv states are compared as numel·(kernel-1)/kernel."""
    import torch

    items = value.values() if isinstance(value, dict) else (value if isinstance(value, (list, tuple)) else [value])
    total = 0.0
    for t in items:
        if isinstance(t, torch.Tensor):
            k = t.shape[-1] if conv and t.dim() >= 2 else 0
            total += t.numel() * (k - 1) / k if k > 1 else t.numel()
    return total


def llmecon_read(config: dict, model_type: str, ignore: tuple[str, ...] = ()):
    from llmecon.catalog.hf_config import model_from_hf_config

    return model_from_hf_config(config, name=model_type, where=f"{model_type} default config",
                                ignore_fields=ignore)


def check_type(model_type: str, *, cache: bool = True) -> Row:
    from llmecon.errors import LlmeconError

    row, t0 = Row(model_type), time.perf_counter()
    try:
        cfg = default_config(model_type)
    except Exception as exc:
        row.status, row.note = "no oracle", f"AutoConfig.for_model failed: {type(exc).__name__}"
        return row
    if not is_decoder_type(cfg):
        row.status = "not decoder"
        row.note = NOT_DECODER.get(model_type, "encoder-decoder or BERT-style encoder")
        return row
    config = json.loads(cfg.to_json_string(use_diff=False))
    try:
        model = meta_model(cfg)
    except Exception as exc:
        row.status = "no oracle"
        row.note = f"meta build failed: {type(exc).__name__}: {str(exc).splitlines()[0][:100] if str(exc) else ''}"
        return row
    row.oracle_params, row.encoder_params = count_params(model)
    try:
        m = llmecon_read(config, model_type)
    except LlmeconError as exc:
        row.status, row.note = "refused", str(exc).split(": ", 1)[-1]
        row.seconds = time.perf_counter() - t0
        return row
    row.ignored = list(m.ignored_fields)
    row.llmecon_params = m.params.total
    row.rel = row.llmecon_params / row.oracle_params - 1 if row.oracle_params else None
    ok = row.rel is not None and abs(row.rel) <= TOLERANCE
    row.status = "match" if ok else "off"
    if not ok:
        row.note = EXPLAINED.get(model_type, "UNEXPLAINED")
    if cache:
        kv, state, note = cache_elements(model, cfg)
        row.cache_note = note
        if kv is not None:
            row.kv_oracle, row.state_oracle = kv, state
            row.kv_llmecon = m.kv_bytes_per_token("bf16") / 2.0
            row.state_llmecon = _state_elements(m) if state is not None else None
    row.seconds = time.perf_counter() - t0
    return row


def _state_elements(m) -> float:
    """Recurrent + conv state elements per sequence of llmecon's model (its bytes at each format)."""
    if m.linear is None:
        return float(m.state_bytes_per_sequence() and 0.0)
    lin = m.linear
    return float(m.n_linear_layers * (lin.state_elements() + lin.conv_state_elements()))


def shared_configs(folder: Path) -> list[Row]:
    """The shared reference configs (real config.json files) through both readers."""
    rows = []
    for path in sorted(folder.glob("*_config.json")):
        if path.name.endswith("hf_quant_config.json"):
            continue
        rows.append(_shared_row(path))
    return rows


def _shared_row(path: Path) -> Row:
    from transformers import AutoConfig

    from llmecon.catalog.hf_config import load_config_file
    from llmecon.errors import LlmeconError

    raw = json.loads(path.read_text())
    row = Row(path.name.removesuffix("_config.json"))
    try:
        m = load_config_file(path)
        row.llmecon_params = m.params.total
        row.ignored = list(m.ignored_fields)
    except LlmeconError as exc:
        row.status, row.note = "refused", str(exc)
        return row
    try:
        cfg = AutoConfig.for_model(raw["model_type"], **{k: v for k, v in raw.items() if k != "model_type"})
        cfg.quantization_config = None
        if hasattr(cfg, "quantization_config"):
            del cfg.quantization_config
        model = meta_model(cfg)
    except Exception as exc:
        first = str(exc).splitlines()[0][:100] if str(exc) else ""
        row.status, row.note = "no oracle", f"{type(exc).__name__}: {first}"
        return row
    row.oracle_params, row.encoder_params = count_params(model)
    row.rel = row.llmecon_params / row.oracle_params - 1
    row.status = "match" if abs(row.rel) <= TOLERANCE else "off"
    return row


def summary(rows: list[Row]) -> dict:
    counted = [r for r in rows if r.status in ("match", "off", "refused")]
    out = {s: sum(r.status == s for r in rows) for s in ("match", "off", "refused", "no oracle", "not decoder")}
    out["counted"] = len(counted)
    out["match_share"] = out["match"] / len(counted) if counted else 0.0
    cache = [r for r in rows if r.kv_oracle is not None]
    out["cache_compared"] = len(cache)
    out["cache_within_1pct"] = sum(_cache_ok(r) for r in cache)
    out["cache_explained"] = sum(not _cache_ok(r) and r.model_type in CACHE_EXPLAINED for r in cache)
    return out


def _close(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return False
    return abs(a - b) <= TOLERANCE * max(abs(a), abs(b)) or (a == b == 0)


def _cache_ok(r: Row) -> bool:
    state_ok = r.state_oracle is None or _close(r.state_oracle, r.state_llmecon)
    return _close(r.kv_oracle, r.kv_llmecon) and state_ok


BASE_KEYS = frozenset({
    # keys every transformers config writes (PretrainedConfig.to_dict) plus the usual special-token ids,
    # init and dropout: left out of a row's note (listed in --json)
    "architectures", "attention_dropout", "bos_token_id", "chunk_size_feed_forward", "dtype", "eos_token_id",
    "id2label", "initializer_range", "is_encoder_decoder", "label2id", "output_attentions", "output_hidden_states",
    "pad_token_id", "problem_type", "return_dict", "transformers_version", "use_cache", "hidden_act",
    "rms_norm_eps", "layer_norm_eps", "rope_parameters", "tie_word_embeddings", "tokenizer_class", "prefix",
    "sep_token_id", "decoder_start_token_id", "task_specific_params", "torchscript", "max_position_embeddings"})


def markdown(rows: list[Row], title: str) -> str:
    lines = [f"## {title}", "", "| model_type | status | meta params | llmecon | diff | KV el/token (hf / llmecon) | "
             "state el/seq (hf / llmecon) | note |", "|---|---|---:|---:|---:|---|---|---|"]
    for r in rows:
        diff = f"{r.rel:+.2%}" if r.rel is not None else ""
        kv = f"{r.kv_oracle:g} / {r.kv_llmecon:g}" if r.kv_oracle is not None else r.cache_note[:70]
        st = (f"{r.state_oracle:g} / {r.state_llmecon:g}" if r.state_oracle is not None
              else (r.cache_note[:70] if r.kv_oracle is not None else ""))
        note = r.note.replace("|", "/")
        if r.kv_oracle is not None and not _cache_ok(r):
            note = f"cache: {CACHE_EXPLAINED.get(r.model_type, 'UNEXPLAINED')}. " + note
        notable = [k for k in r.ignored if k not in BASE_KEYS]
        if notable:
            note += f" (ignored: {', '.join(notable)})"
        enc = f" (+{r.encoder_params:,} encoder)" if r.encoder_params else ""
        lines.append(f"| {r.model_type} | {r.status} | {r.oracle_params:,}{enc} | {r.llmecon_params:,} | {diff} | "
                     f"{kv} | {st} | {note} |")
    return "\n".join(lines)


def _load_rows(paths: list[str]) -> tuple[list[Row], list[Row]]:
    """Rows of saved runs, merged by model type (a later file replaces an earlier one's rows)."""
    rows: dict[str, Row] = {}
    shared: dict[str, Row] = {}
    for path in paths:
        doc = json.loads(Path(path).read_text())
        rows.update({d["model_type"]: Row(**d) for d in doc["rows"]})
        shared.update({d["model_type"]: Row(**d) for d in doc.get("shared", [])})
    return sorted(rows.values(), key=lambda r: r.model_type), sorted(shared.values(), key=lambda r: r.model_type)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--types", default="", help="comma-separated model types (default: every causal-LM type)")
    parser.add_argument("--shared", default="", help="folder of real config.json files to run as well")
    parser.add_argument("--no-cache", action="store_true", help="skip the forward-on-meta cache comparison")
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--save-json", default="", help="also write the rows as JSON to this file")
    parser.add_argument("--from-json", default="", help="report rows saved by --save-json instead of running; "
                        "comma-separated files, a later file's rows replace an earlier one's of the same type")
    args = parser.parse_args(argv)
    import transformers

    if args.from_json:
        rows, shared = _load_rows(args.from_json.split(","))
    else:
        types = [t for t in args.types.split(",") if t] or causal_lm_types()
        rows = [check_type(t, cache=not args.no_cache) for t in types]
        shared = shared_configs(Path(args.shared)) if args.shared else []
    s = summary(rows)
    head = (f"transformers {transformers.__version__}: {s['counted']} decoder text model types built on meta; "
            f"{s['match']} read within 1% ({s['match_share']:.1%}), {s['off']} off, {s['refused']} refused; "
            f"{s['no oracle']} without an oracle, {s['not decoder']} not decoder-style; cache compared for "
            f"{s['cache_compared']}, {s['cache_within_1pct']} within 1%, {s['cache_explained']} explained in the note")
    doc = {"summary": s, "rows": [r.as_dict() for r in rows], "shared": [r.as_dict() for r in shared]}
    if args.save_json:
        Path(args.save_json).write_text(json.dumps(doc, indent=1))
    if args.json:
        print(json.dumps(doc, indent=1))
        return 0
    print(head)
    if args.markdown:
        print(markdown(rows, "transformers default configs"))
        if shared:
            print()
            print(markdown(shared, "shared reference configs"))
    else:
        for r in rows + shared:
            diff = f"{r.rel:+.2%}" if r.rel is not None else ""
            print(f"{r.model_type:28s} {r.status:11s} {r.oracle_params:>16,} {r.llmecon_params:>16,} {diff:>8s} "
                  f"{r.note[:150]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
