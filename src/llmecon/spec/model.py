"""Model spec: a decoder-only transformer, dense or MoE, with MHA/GQA/MQA, MLA, sliding or
chunked local layers (optionally with their own head counts), DeepSeek sparse attention (DSA),
linear-attention / state-space layers (Gated DeltaNet, Kimi Delta Attention, Mamba-2), layers
without a mixer or without an FFN (heterogeneous blocks), and multi-token-prediction modules.

Facts live in frozen dataclasses; every count is derived. Parameter counting conventions
(checked against published totals in tests/catalog/test_model_params.py, method of
``reference/models/README.md``): gated MLPs (SwiGLU/GeGLU) have 3 matrices of d x f, plain MLPs
2; RMSNorm has d weights, LayerNorm 2d; an untied output head counts V x d again; biases, sinks,
router biases are counted where the architecture has them. Multi-token-prediction modules
(``mtp_layers``) are counted apart (``ParamCounts.mtp``), not as decoder layers nor in ``total``.

Per layer i: ``layer_mixers[i]`` is "attention", "linear", "none" or "cross" (cross-attention to
image tokens with ``cross_attention``: ``spec/cross_attention.py``); an attention layer uses
``local_attention`` when it is windowed (``layer_windows[i] > 0``) and one is given, else
``attention``; ``layer_sparsity[i]`` is "dense", "indexed" (DSA with its own indexer) or "shared"
(DSA reusing an earlier layer's top-k: no indexer of its own); ``moe_layers[i]`` says whether it
has an MoE block and ``layer_ffn_dims[i]`` the width of its dense FFN (0: none; both may be set);
``layer_compress[i]`` is DeepSeek-V4's KV compression ratio r (0: none): the layer also caches one
entry per r tokens beside its window of raw tokens (shapes and sources: ``spec/compressed.py``).
``hyper_connections`` = hc > 1 is DeepSeek-V4's mHC: hc residual streams of d, mixed per layer.

Reading a Hugging Face ``config.json`` into this spec is ``hf_config.model_from_hf_config``.
Symbols used in docstrings here and elsewhere (N_total, N_active, S, E, k, kv, W, B, L, ...), their
units and code names: docs/notation.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

from ..dtypes import DType, get_dtype
from ..errors import SpecError, as_floats, require_choice, require_whole
from . import compressed, cross_attention
from .counts import MatmulFlops, ParamCounts, WeightBytes, _causal_sum, _reach
from .layers import ATTENTION_KINDS, LINEAR_KINDS, Attention, LinearMixer, MoE

__all__ = ["ATTENTION_KINDS", "LINEAR_KINDS", "Attention", "LinearMixer", "MatmulFlops", "Model", "MoE",
           "ParamCounts", "WeightBytes"]

MIXERS = ("attention", "linear", "none", "cross")


def _fp32_block_scales(elements: int, block: int = 128) -> float:
    """Bytes of one fp32 scale per ``block`` values (DeepSeek's fp8 caches: 128-value blocks)."""
    return 4.0 * math.ceil(elements / block)
SPARSITY = ("dense", "indexed", "shared")
COMPRESS_RATIOS = (0, 4, 128)  # DeepSeek-V4: none, CSA (indexed), HCA (SGLang asserts this set)


@dataclass(frozen=True, kw_only=True)
class Model:
    """A decoder-only transformer. ``layer_windows[i]`` is 0 for full attention, else the number of
    most recent tokens layer i attends to (sliding window, or chunk size for chunked attention).
    ``encoder_params``: a multimodal wrapper's vision encoder (estimated by the reader), reported
    apart and never in ``params`` (serving cost is the language model's). ``ignored_fields``: the
    config keys the reader did not read (harmless by category, null, a wrapper's processor keys, or
    named by the caller's ``ignore_fields``; docs/model_reader.md). ``learned_positions``: rows of a
    learned absolute position table (GPT-2, OPT: ``max_position_embeddings`` (+ 2 for OPT)), counted in
    ``ParamCounts.embedding`` (looked up like the token embedding, not a matmul). ``per_layer_input_dim``
    p > 0: Gemma 3n/4 per-layer input embeddings (transformers ``Gemma4TextModel``): a table of
    ``per_layer_vocab`` x L·p looked up per token, a d -> L·p model projection with a norm of p, and in
    each layer a d -> p gate, a p -> d projection and a norm of d. ``cross_attention``: the block of the
    "cross" layers (``spec/cross_attention.py``), attending ``cross_attention_tokens`` image tokens per
    sequence (a documented input; their K and V are per-sequence state, not per-token KV)."""

    name: str
    d_model: int
    n_layers: int
    vocab_size: int
    attention: Attention
    dense_ffn_dim: int
    ffn_gated: bool = True
    ffn_bias: bool = False
    moe: MoE | None = None
    moe_layers: tuple[bool, ...] = ()
    layer_windows: tuple[int, ...] = ()
    kv_holding: tuple[bool, ...] = ()
    layer_mixers: tuple[str, ...] = ()
    layer_ffn_dims: tuple[int, ...] = ()
    layer_sparsity: tuple[str, ...] = ()
    layer_compress: tuple[int, ...] = ()
    hyper_connections: int = 1
    local_attention: Attention | None = None
    linear: LinearMixer | None = None
    tie_embeddings: bool = False
    norm: str = "rms"
    norms_per_layer: int = 2
    lm_head_bias: bool = False
    weight_dtype: str = "bf16"
    expert_weight_dtype: str = ""
    ffn_weight_dtype: str = ""
    kv_dtype: str = "bf16"
    index_dtype: str = "fp8"
    max_context: int = 0
    source: str = ""
    assumptions: tuple[str, ...] = ()
    unrecognized_fields: tuple[str, ...] = ()
    ignored_fields: tuple[str, ...] = ()
    extra_layers_not_counted: int = 0
    encoder_params: int = 0
    learned_positions: int = 0
    per_layer_input_dim: int = 0
    per_layer_vocab: int = 0
    cross_attention: Attention | None = None
    cross_attention_tokens: int = 0
    _cache: dict = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        owner = f"model {self.name}"
        for name in ("d_model", "n_layers", "vocab_size"):
            require_whole(name, getattr(self, name), owner=owner)
        require_choice("norm", self.norm, ("rms", "layer"), owner=owner)
        for name in ("per_layer_input_dim", "per_layer_vocab"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 0:
                raise SpecError(f"{owner}: {name} must be a whole number >= 0, got {getattr(self, name)!r}")
        if not isinstance(self.learned_positions, int) or self.learned_positions < 0:
            raise SpecError(f"{owner}: learned_positions must be a whole number >= 0 (rows of a learned position "
                            f"table), got {self.learned_positions!r}")
        n = self.n_layers
        defaults = {"moe_layers": (self.moe is not None,) * n, "layer_windows": (0,) * n,
                    "kv_holding": (True,) * n, "layer_mixers": ("attention",) * n,
                    "layer_sparsity": (("indexed" if self.attention.is_sparse else "dense"),) * n,
                    "layer_compress": (0,) * n}
        for name, value in defaults.items():
            if not getattr(self, name):
                object.__setattr__(self, name, value)
        ffn_given = bool(self.layer_ffn_dims)  # explicit widths may be 0: a layer without an FFN (Mamba)
        if not self.layer_ffn_dims:
            object.__setattr__(self, "layer_ffn_dims", tuple(0 if m else self.dense_ffn_dim for m in self.moe_layers))
        if not self.expert_weight_dtype:
            object.__setattr__(self, "expert_weight_dtype", self.weight_dtype)
        for name in ("moe_layers", "layer_windows", "kv_holding", "layer_mixers", "layer_ffn_dims", "layer_sparsity",
                     "layer_compress"):
            if len(getattr(self, name)) != n:
                raise SpecError(f"{owner}: {name} has {len(getattr(self, name))} entries for {n} layers")
        if any(w < 0 for w in self.layer_windows):
            raise SpecError(f"{owner}: layer windows must be >= 0")
        if any(w < 0 for w in self.layer_ffn_dims):
            raise SpecError(f"{owner}: layer FFN widths must be >= 0")
        for i, (mixer, sparsity) in enumerate(zip(self.layer_mixers, self.layer_sparsity)):
            require_choice(f"layer_mixers[{i}]", mixer, MIXERS, owner=owner)
            require_choice(f"layer_sparsity[{i}]", sparsity, SPARSITY, owner=owner)
            if sparsity != "dense" and not self._attention_of(i).is_sparse:
                raise SpecError(f"{owner}: layer {i} is marked sparse but its attention has no indexer")
        for i, r in enumerate(self.layer_compress):
            require_choice(f"layer_compress[{i}]", r, COMPRESS_RATIOS, owner=owner)
            if r and not (self.layer_mixers[i] == "attention" and self._attention_of(i).compressed_kv):
                raise SpecError(f"{owner}: layer {i} compresses its KV but its attention has no compressor")
        require_whole("hyper_connections", self.hyper_connections, owner=owner)
        if "cross" in self.layer_mixers and self.cross_attention is None:
            raise SpecError(f"{owner}: cross-attention layers marked but no cross_attention spec")
        if not isinstance(self.cross_attention_tokens, int) or self.cross_attention_tokens < 0:
            raise SpecError(f"{owner}: cross_attention_tokens must be a whole number >= 0 (image tokens per "
                            f"sequence), got {self.cross_attention_tokens!r}")
        if "linear" in self.layer_mixers and self.linear is None:
            raise SpecError(f"{owner}: linear-mixer layers marked but no linear mixer spec")
        if "attention" in self.layer_mixers and not any(
                h for h, m in zip(self.kv_holding, self.layer_mixers) if m == "attention"):
            raise SpecError(f"{owner}: kv_holding needs at least one attention layer holding KV")
        if self.moe is None and any(self.moe_layers):
            raise SpecError(f"{owner}: MoE layers marked but no MoE spec")
        if self.n_dense_layers and self.dense_ffn_dim < 1 and not ffn_given:
            raise SpecError(f"{owner}: {self.n_dense_layers} dense layers need an FFN width >= 1")
        for name in ("weight_dtype", "expert_weight_dtype", "kv_dtype", "index_dtype"):
            get_dtype(getattr(self, name))
        if self.ffn_weight_dtype:
            get_dtype(self.ffn_weight_dtype)

    # ---- layer structure -------------------------------------------------------------------
    def _attention_of(self, i: int) -> Attention:
        if self.layer_windows[i] and self.local_attention is not None:
            return self.local_attention
        return self.attention

    @property
    def n_moe_layers(self) -> int:
        return sum(self.moe_layers)

    @property
    def n_dense_layers(self) -> int:
        return self.n_layers - self.n_moe_layers

    @property
    def n_attention_layers(self) -> int:
        return self.layer_mixers.count("attention")

    @property
    def n_cross_layers(self) -> int:
        return self.layer_mixers.count("cross")

    @property
    def n_linear_layers(self) -> int:
        return self.layer_mixers.count("linear")

    @property
    def is_moe(self) -> bool:
        return self.moe is not None and self.n_moe_layers > 0

    @property
    def mtp_layers(self) -> int:
        """Multi-token-prediction modules shipped beside the main model (not decoder layers)."""
        return self.extra_layers_not_counted

    @property
    def attention_label(self) -> str:
        """Human label: 'gqa', 'mla+dsa', 'gqa+sliding(4096)', 'gqa+local(1024):global 5:1',
        'gqa+gated_deltanet 45:15'..."""
        label = self.attention.kind + ("+dsa" if self.attention.is_sparse else "")
        if not self.n_attention_layers and not self.n_cross_layers:  # Mamba stacks: no attention at all
            label = "none"
        windows = [w for w, m in zip(self.layer_windows, self.layer_mixers) if w and m == "attention"]
        if windows:
            w = max(set(windows), key=windows.count)
            n_local = len(windows)
            if n_local == self.n_attention_layers:
                label += f"+sliding({w})"
            else:
                label += f"+local({w})/global {n_local}:{self.n_attention_layers - n_local}"
        if self.n_linear_layers:
            label += f"+{self.linear.kind} {self.n_linear_layers}:{self.n_attention_layers}"
        if self.n_cross_layers:
            label += f"+cross {self.n_cross_layers}"
        ratios = sorted({r for r in self.layer_compress if r})
        if ratios:
            label += "+compressed(" + ", ".join(f"1/{r} x{self.layer_compress.count(r)}" for r in ratios) + ")"
        return label

    def layer_breakdown(self) -> dict[str, int]:
        """Layer counts per kind: mixers (attention full/windowed/sparse, linear, none) and FFNs."""
        out: dict[str, int] = {}
        for i, mixer in enumerate(self.layer_mixers):
            if mixer == "attention":
                kind = self._attention_of(i).kind
                key = f"attention_{kind}_" + ("windowed" if self.layer_windows[i] else "full")
                if self.layer_sparsity[i] != "dense":
                    key += f"_sparse_{self.layer_sparsity[i]}"
                if self.layer_compress[i]:
                    key += f"_compressed_{self.layer_compress[i]}"
            elif mixer == "linear":
                key = f"linear_{self.linear.kind}"
            elif mixer == "cross":
                key = "cross_attention"
            else:
                key = "no_mixer"
            out[key] = out.get(key, 0) + 1
        out["ffn_moe"] = self.n_moe_layers
        out["ffn_dense"] = sum(1 for w in self.layer_ffn_dims if w)
        out["ffn_moe_and_dense"] = sum(1 for m, w in zip(self.moe_layers, self.layer_ffn_dims) if m and w)
        out["ffn_none"] = sum(1 for m, w in zip(self.moe_layers, self.layer_ffn_dims) if not m and not w)
        return out

    def _attention_groups(self, *, holding_only: bool) -> tuple[tuple[Attention, int, str, int, int], ...]:
        """(attention spec, window, sparsity, compress ratio, layer count) over attention layers (cached)."""
        key = ("attention_groups", holding_only)
        groups = self._cache.get(key)
        if groups is None:
            counts: dict[tuple, int] = {}
            for i, (w, holds, mixer) in enumerate(zip(self.layer_windows, self.kv_holding, self.layer_mixers)):
                if mixer == "attention" and (holds or not holding_only):
                    k = (id(self._attention_of(i)), w, self.layer_sparsity[i], self.layer_compress[i])
                    counts[k] = counts.get(k, 0) + 1
            specs = {id(self.attention): self.attention}
            if self.local_attention is not None:
                specs[id(self.local_attention)] = self.local_attention
            groups = self._cache[key] = tuple((specs[s], w, sp, r, c) for (s, w, sp, r), c in sorted(
                counts.items(), key=lambda kv: (kv[0][1], kv[0][2], kv[0][3], kv[0][0] != id(self.attention))))
        return groups

    def window_groups(self, *, holding_only: bool = False) -> tuple[tuple[int, int], ...]:
        """(window, attention-layer count) pairs; window 0 = full attention.

        ``holding_only`` counts only layers that keep their own KV cache (cross-layer sharing).
        """
        counts: dict[int, int] = {}
        for _, w, _, _, c in self._attention_groups(holding_only=holding_only):
            counts[w] = counts.get(w, 0) + c
        return tuple(sorted(counts.items()))

    @property
    def kv_sharing_factor(self) -> float:
        """Attention layers per distinct KV cache (1 without cross-layer sharing; CLA2 = 2)."""
        held = sum(h for h, m in zip(self.kv_holding, self.layer_mixers) if m == "attention")
        return self.n_attention_layers / held if held else 1.0

    def with_kv_sharing(self, factor: int) -> "Model":
        """This model with every ``factor`` adjacent layers sharing one KV cache: cross-layer
        attention (Brandon et al. 2024, arXiv:2405.12981; Character.AI's 2024 inference note).

        The first layer of each group holds the cache, the others attend to it. Held KV bytes
        fall by ~``factor``; bytes *read* per decode step do not, because each layer still reads
        the cache it attends (layers run one after another). Parameter counts are unchanged
        (the sharing layers' K/V projections are not removed). The layer's own window is kept.
        """
        if not (isinstance(factor, int) and 1 <= factor <= self.n_layers):
            raise SpecError(f"model {self.name}: kv sharing factor must be a whole number from 1 to "
                            f"{self.n_layers} (layers per shared cache), got {factor!r}")
        holding = tuple(i % factor == 0 for i in range(self.n_layers))
        name = self.name if factor == 1 else f"{self.name} (KV shared x{factor})"
        return replace(self, name=name, kv_holding=holding, _cache={})

    # ---- parameters ------------------------------------------------------------------------
    def _ffn_params(self, width: int) -> int:
        mats = 3 if self.ffn_gated else 2
        params = mats * self.d_model * width
        if self.ffn_bias:
            params += (2 if self.ffn_gated else 1) * width + self.d_model
        return params

    def _expert_params(self, width: int, d_in: int | None = None) -> int:
        mats = 3 if self.ffn_gated else 2
        d_in = d_in or self.d_model
        params = mats * d_in * width
        if self.moe is not None and self.moe.expert_bias:
            params += (2 if self.ffn_gated else 1) * width + d_in
        return params

    @property
    def params(self) -> ParamCounts:
        """Parameter counts per component (exact integers)."""
        if "params" not in self._cache:
            self._cache["params"] = self._count_params()
        return self._cache["params"]

    def _moe_layer_params(self) -> tuple[int, int, int, int, int]:
        """One MoE layer: (one routed expert, shared experts, router, latent projections+norm)."""
        m, d = self.moe, self.d_model
        expert = self._expert_params(m.expert_ffn_dim, m.latent_dim or d)
        shared = m.n_shared * self._expert_params(m.shared_ffn_dim or m.expert_ffn_dim)
        router = d * m.n_routed + (m.n_routed if m.router_bias else 0)
        latent = (2 * d * m.latent_dim + (m.latent_dim if m.latent_norm else 0)) if m.latent_dim else 0
        return expert, shared, router, latent, m.n_routed * expert

    def _count_params(self) -> ParamCounts:
        d, v = self.d_model, self.vocab_size
        norm_w = d if self.norm == "rms" else 2 * d
        attention = sum(self._layer_attention_params(i) for i, m in enumerate(self.layer_mixers) if m == "attention")
        if self.cross_attention is not None:
            attention += self.n_cross_layers * cross_attention.layer_params(self.cross_attention, d)
        linear = self.n_linear_layers * self.linear.params_per_layer(d) if self.linear is not None else 0
        dense_ffn = sum(self._ffn_params(w) for w in self.layer_ffn_dims if w)
        routed = shared = router = latent = routed_active = 0
        if self.moe is not None:
            expert, shared1, router1, latent1, routed1 = self._moe_layer_params()
            k = self.n_moe_layers
            routed, shared, router, latent = k * routed1, k * shared1, k * router1, k * latent1
            if self.moe.router_bias:  # hash-routed layers keep the gate but have no bias (MoE docstring)
                router -= min(self.moe.hash_layers, k) * self.moe.n_routed
            routed_active = k * self.moe.top_k * expert
        norms = self.n_layers * self.norms_per_layer * norm_w + norm_w
        embedding = v * d + self.learned_positions * d  # a learned absolute position table is looked up too
        lm_head = (0 if self.tie_embeddings else v * d) + (v if self.lm_head_bias else 0)
        return ParamCounts(embedding=embedding, lm_head=lm_head, attention=attention, dense_ffn=dense_ffn,
                           routed_experts=routed, routed_experts_active=routed_active, shared_experts=shared,
                           router=router, norms=norms, head_matmul=v * d, linear_mixers=linear, moe_latent=latent,
                           mtp=self.mtp_layers * self._mtp_module_params(),
                           hyper_connections=compressed.hyper_connection_params(self.hyper_connections, d,
                                                                                self.n_layers),
                           **self._per_layer_input_params())

    def _per_layer_input_params(self) -> dict[str, int]:
        """Gemma 3n/4 per-layer inputs (class docstring): lookup table and projections."""
        p, n, d = self.per_layer_input_dim, self.n_layers, self.d_model
        if not p:
            return {}
        return {"per_layer_embedding": self.per_layer_vocab * n * p,
                "per_layer_projections": d * n * p + p + n * (2 * d * p + d)}

    def _layer_attention_params(self, i: int) -> int:
        spec, indexed = self._attention_of(i), self.layer_sparsity[i] == "indexed"
        if spec.compressed_kv:
            return compressed.attention_params(spec, self.d_model, self.layer_compress[i], indexer=indexed)
        return spec.params_per_layer(self.d_model, indexer=indexed)

    def _mtp_module_params(self) -> int:
        """One multi-token-prediction module (DeepSeek-V3 §2.2, Fig. 3): embedding and hidden-state
        RMSNorms (2d), the projection of their concatenation (2d x d), one decoder layer with full
        attention and the FFN kind of the model's last layer, its norms, and a final norm.
        Embedding and output head are shared with the main model (not counted again). DeepSeek-V4:
        the module's attention is uncompressed (its ``compress_ratios`` entry is 0: no compressor, no
        indexer) and it has its own mHC mixing and head (SGLang ``deepseek_v4_nextn.py``)."""
        d, last = self.d_model, self.n_layers - 1
        if self.attention.compressed_kv:
            layer = compressed.attention_params(self.attention, d, 0)
        else:
            layer = self.attention.params_per_layer(d)
        layer += self.norms_per_layer * d + compressed.hyper_connection_params(self.hyper_connections, d, 1)
        if self.moe_layers[last]:
            expert, shared, router, latent, routed = self._moe_layer_params()
            layer += routed + shared + router + latent
        layer += self._ffn_params(self.layer_ffn_dims[last]) if self.layer_ffn_dims[last] else 0
        if not self.moe_layers[last] and not self.layer_ffn_dims[last] and self.dense_ffn_dim:
            layer += self._ffn_params(self.dense_ffn_dim)
        return 2 * d + 2 * d * d + layer + d

    def mtp_active_params(self) -> int:
        """Weights one token uses in one multi-token-prediction module (``_mtp_module_params`` with
        only the top-k of its routed experts), the shared output head not included; 0 without MTP."""
        if not self.mtp_layers:
            return 0
        module = self._mtp_module_params()
        if self.moe_layers[self.n_layers - 1]:
            expert, _, _, _, routed = self._moe_layer_params()
            module += self.moe.top_k * expert - routed
        return module

    @property
    def sparsity(self) -> float:
        """S = N_total / N_active >= 1 (SPEC conventions)."""
        p = self.params
        return p.total / p.active

    # ---- bytes -------------------------------------------------------------------------------
    def weight_bytes(self, weight_dtype: str | DType | None = None) -> WeightBytes:
        """Stored weight bytes, split into non-expert (dense) and routed-expert parts.

        ``weight_dtype`` overrides every format; None keeps the native ones: ``weight_dtype`` for
        attention, mixers, embeddings, head and norms, ``ffn_weight_dtype`` for dense FFNs and
        shared experts (when set; else dense FFNs at ``weight_dtype`` and shared experts at the
        expert format), ``expert_weight_dtype`` for routed experts (gpt-oss: MXFP4 experts).
        """
        key = ("weight_bytes", weight_dtype)
        if key in self._cache:  # every step of a sweep asks again: computed once per format
            return self._cache[key]
        p = self.params
        dense_b = get_dtype(weight_dtype or self.weight_dtype).bytes
        expert_b = get_dtype(weight_dtype or self.expert_weight_dtype).bytes
        ffn_b = get_dtype(weight_dtype or self.ffn_weight_dtype).bytes if self.ffn_weight_dtype else None
        shared_b = expert_b if ffn_b is None else ffn_b
        dense_ffn_b = dense_b if ffn_b is None else ffn_b
        non_expert = ((p.total - p.routed_experts - p.shared_experts - p.dense_ffn) * dense_b
                      + p.dense_ffn * dense_ffn_b + p.shared_experts * shared_b)
        out = self._cache[key] = WeightBytes(non_expert=non_expert, routed_experts=p.routed_experts * expert_b,
                                             input_embedding=(0.0 if self.tie_embeddings else p.embedding * dense_b)
                                             + p.per_layer_embedding * dense_b)
        return out

    def state_bytes_per_sequence(self) -> float:
        """Constant per-sequence state of the linear-attention / state-space layers (recurrent +
        conv state, at their own formats): it replaces a growing KV cache in those layers; plus
        the pending-token buffers of DeepSeek-V4's KV compressors (``compressed.layer_state_bytes``); plus the
        K and V of the image tokens cross-attention layers attend (``cross_attention_tokens``)."""
        key = "state_bytes"
        if key not in self._cache:
            linear = self.n_linear_layers * self.linear.state_bytes() if self.linear is not None else 0.0
            if self.cross_attention is not None:
                linear += cross_attention.sequence_cache_bytes(self.cross_attention, self.n_cross_layers,
                                                               self.cross_attention_tokens, self.kv_dtype)
            self._cache[key] = linear + sum(compressed.layer_state_bytes(self._attention_of(i), r)
                                            for i, r in enumerate(self.layer_compress) if r)
        return self._cache[key]

    def kv_bytes_per_token(self, kv_dtype: str | DType | None = None) -> float:
        """KV-cache bytes per token summed over the attention layers, at short context (every
        layer holds it); the constant state of linear layers is not per token (see
        ``state_bytes_per_sequence``).

        MHA/GQA/MQA: 2·K·H per layer; MLA: kv_lora + rope per layer (DeepSeek-V3 bf16: 61·576·2 =
        70,272 B); DSA adds the indexer's key cache. Sliding layers hold at most their window: see
        ``kv_bytes``. The fp8 layouts of DSA are DeepSeek's own (``_kv_layer_bytes``).
        """
        key = ("kv_bytes_per_token", kv_dtype)
        if key not in self._cache:  # a constant of the model and the format: summed once
            self._cache[key] = float(self._kv_sum(1.0, kv_dtype, holding_only=True, sparse=False))
        return self._cache[key]

    def _kv_layer_bytes(self, spec: Attention, kv_dtype: str | DType | None) -> tuple[float, float]:
        """(cache bytes, indexer-key bytes) per token per layer of attention ``spec``.

        DSA at 8 bits uses DeepSeek's published layouts (FlashMLA README, "FP8 KV cache" of the
        sparse kernels; DeepSeek-V3.2-Exp inference/model.py): the latent in fp8 with one fp32 scale
        per 128 values and the rope key kept in bf16, 512 + 4·4 + 64·2 = 656 B; the indexer key in
        fp8 with one fp32 scale per 128 values, 128 + 4 = 132 B. Other 8-bit caches (dense MLA, GQA)
        are counted with per-tensor scales (no per-token bytes) and every element at 8 bits.
        """
        key = ("kv_layer_bytes", id(spec), kv_dtype)
        if key not in self._cache:  # computed once per format
            kv = get_dtype(kv_dtype or self.kv_dtype)
            main = spec.kv_elements_per_token() * kv.bytes
            index = 0.0
            if spec.compressed_kv and kv.bits == 8:
                main = compressed.fp8_entry_bytes(spec)
            if spec.is_sparse:
                idx = get_dtype(self.index_dtype)
                index = spec.index_head_dim * idx.bytes + (_fp32_block_scales(spec.index_head_dim) if idx.bits == 8
                                                           else 0.0)
                if spec.kind == "mla" and kv.bits == 8:  # DSA
                    main = (spec.kv_lora_rank * kv.bytes + _fp32_block_scales(spec.kv_lora_rank)
                            + spec.qk_rope_head_dim * 2.0)
            self._cache[key] = (main, index)
        return self._cache[key]

    def kv_bytes(self, context, kv_dtype: str | DType | None = None):
        """KV bytes held for one sequence of ``context`` tokens, plus the constant state of linear
        layers (broadcasts over numpy arrays)."""
        return self._kv_sum(context, kv_dtype, holding_only=True, sparse=False) + self.state_bytes_per_sequence()

    def dense_kv_read_bytes(self, context, kv_dtype: str | DType | None = None):
        """What dense attention over the same cache layout would read at ``context`` (no indexer, no
        top-k): the comparison DSA's savings are stated against (SPEC B7). Linear layers' state
        included, as in ``kv_read_bytes``."""
        return (self._kv_sum(context, kv_dtype, holding_only=False, sparse=False, indexer=False)
                + self.state_bytes_per_sequence())

    def kv_read_bytes(self, context, kv_dtype: str | DType | None = None, *, sparse: bool = True):
        """KV bytes one decode step reads for one sequence at ``context`` tokens.

        Every attending layer reads its cache (a layer sharing another's cache reads it again).
        Dense attention reads all it holds; DSA (``sparse``) reads the indexer cache plus the
        top-k selected entries: L·b_index + min(L, k)·b_kv per layer (SPEC B7). Linear layers read
        their constant state once per step (writing it back is omitted).
        """
        return self._kv_sum(context, kv_dtype, holding_only=False, sparse=sparse) + self.state_bytes_per_sequence()

    def _kv_sum(self, context, kv_dtype, *, holding_only: bool, sparse: bool, indexer: bool = True):
        context = as_floats(context)
        total = 0.0
        for spec, window, sparsity, ratio, count in self._attention_groups(holding_only=holding_only):
            main, index = self._kv_layer_bytes(spec, kv_dtype)
            held, selected, scored = _reach(context, spec, window, sparsity, ratio, sparse=sparse)
            own_index = index if sparsity == "indexed" and indexer else 0.0
            total = total + count * (own_index * scored + main * selected)
        return total

    # ---- FLOPs ---------------------------------------------------------------------------------
    def _linear_flops_per_token(self) -> float:
        return self.n_linear_layers * self.linear.recurrent_flops_per_token() if self.linear is not None else 0.0

    def attention_flops_per_token(self, context, *, absorbed: bool = True):
        """Score and value FLOPs of one query token attending ``context`` cached tokens, plus the
        context-independent recurrence FLOPs of linear layers (``LinearMixer``).

        Per attention layer ``2·N·(d_qk + d_v)·L_eff`` (Kaplan et al. 2020 form, 4·N·H·L for
        d_qk = d_v = H), with L_eff = min(L, window) and, for DSA, min(L, top-k) plus the
        indexer's 2·index_heads·index_dim·L on layers with their own indexer. A compressed layer
        (ratio r) attends min(L, W) + L/r entries, or min(L, W) + min(L/r, top-k) when indexed, and its
        indexer scores L/r (``counts._reach``). Softmax, masking and the compressor's pooling are omitted.
        """
        context = np.asarray(context, dtype=float)
        total = 0.0
        for spec, window, sparsity, ratio, count in self._attention_groups(holding_only=False):
            d_qk, d_v = spec.score_value_dims(absorbed=absorbed)
            _, attended, scored = _reach(context, spec, window, sparsity, ratio, sparse=True)
            total = total + count * 2.0 * spec.n_heads * (d_qk + d_v) * attended
            if sparsity == "indexed":
                total = total + count * 2.0 * spec.index_n_heads * spec.index_head_dim * scored
        return total + self._linear_flops_per_token()

    def prefill_attention_flops(self, prompt_tokens, cached_tokens=0):
        """Causal attention FLOPs for ``prompt_tokens`` new tokens after ``cached_tokens`` cached ones.

        Token at position p (1-based) attends min(p, window) tokens; the sum over the prompt is
        closed-form: S(L0+T) - S(L0) with S(x) = sum_{p<=x} min(p, W). Unabsorbed MLA dims.
        DSA: min(p, k) attended plus the indexer over all p. Compressed layers (ratio r): the window
        sum plus sum_p p/r = (S_0(L0+T) - S_0(L0))/r entries, or, indexed, sum_p min(p/r, k) =
        (S_rk(L0+T) - S_rk(L0))/r, the indexer scoring p/r. Linear layers add their per-token
        recurrence FLOPs for each prompt token.
        """
        t = np.asarray(prompt_tokens, dtype=float)
        l0 = np.asarray(cached_tokens, dtype=float)
        total = 0.0
        for spec, window, sparsity, ratio, count in self._attention_groups(holding_only=False):
            d_qk, d_v = spec.score_value_dims(absorbed=False)
            full = _causal_sum(l0 + t, window) - _causal_sum(l0, window)
            attended = full
            if ratio:
                full = (_causal_sum(l0 + t, 0) - _causal_sum(l0, 0)) / ratio
                attended = attended + full
                if sparsity != "dense":
                    rk = float(ratio * spec.index_topk)
                    attended = attended - full + (_causal_sum(l0 + t, rk) - _causal_sum(l0, rk)) / ratio
            elif sparsity != "dense":
                k = float(spec.index_topk)
                attended = _causal_sum(l0 + t, k) - _causal_sum(l0, k)
            if sparsity == "indexed":
                total = total + count * 2.0 * spec.index_n_heads * spec.index_head_dim * full
            total = total + count * 2.0 * spec.n_heads * (d_qk + d_v) * attended
        return total + t * self._linear_flops_per_token()

    def matmul_flops_per_token(self) -> MatmulFlops:
        """2 FLOPs per weight used by one token (FLOPs, not MACs), split dense vs expert."""
        p = self.params
        dense = 2.0 * (p.attention + p.linear_mixers + p.dense_ffn + p.router + p.moe_latent + p.head_matmul
                       + p.hyper_connections + p.per_layer_projections)
        if self.cross_attention is not None and self.n_cross_layers:  # a text token runs only q and o there
            c, d = self.cross_attention, self.d_model
            dense -= 2.0 * self.n_cross_layers * (cross_attention.layer_params(c, d)
                                                  - cross_attention.token_matmul_params(c, d))
        expert = 2.0 * (p.shared_experts + p.routed_experts_active)
        return MatmulFlops(non_expert=dense, expert=expert)
