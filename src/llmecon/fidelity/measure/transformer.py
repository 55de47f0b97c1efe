"""A random-weight decoder built from a ``llmecon.spec.model.Model``, to time decode and prefill
steps without downloading weights.

Per layer, the work ``llmecon.step.inference`` counts: pre-norm (RMSNorm; LayerNorm with bias), a fused
QKV GEMM (bias where the config has one), q/k RMSNorm (Qwen3), rotary embedding (rotate-half,
eager: a few cheap element-wise kernels), attention, the O GEMM, a residual add, pre-norm, a fused
gate|up GEMM with SiLU·mul (plain MLPs: up + GELU), the down GEMM, a residual add. Phi-2's
parallel block (1 norm) and Gemma's post-norms (4) are followed. Then the final norm and the LM
head: over the last token for prefill, every sequence for decode. The parameter count equals
``Model.params.total`` (tested).

Prefill: causal ``scaled_dot_product_attention`` over the new tokens, K/V written to the cache.
Decode: the new token's K/V go to slot ``context`` of a static cache [B, H_kv, context+1, hd],
which it attends whole with the query heads grouped per KV head ([B, H_kv, H/H_kv, hd]), so no
K/V is repeated; the step is captured once as a CUDA graph and replayed (``step_callable``).

Supported: dense MHA/GQA/MQA models (llama-2/3.x, qwen3 dense, mistral, phi-2, gemma-3 within its
window). MoE, MLA, sparse attention, sinks and cross-layer KV sharing raise ``SpecError``. Sliding
layers attend min(context, window) tokens; the runner measures only up to the smallest window,
where full attention is the same.
"""

from __future__ import annotations

from ...errors import SpecError
from ...spec.model import Model
from .kernels import gelu, rms_norm, silu_mul

ROPE_THETA = 10000.0  # any base does: the cost of rope does not depend on it


def check_supported(model: Model) -> None:
    """SpecError naming what this decoder cannot build (MoE, MLA, DSA, sinks, KV sharing...)."""
    a = model.attention
    problems = [text for bad, text in (
        (model.is_moe, f"MoE ({model.moe.n_routed if model.moe else 0} routed experts)"),
        (a.kind == "mla", "MLA attention"), (a.is_sparse, "sparse attention (DSA)"), (a.sinks, "attention sinks"),
        (a.kind != "mla" and a.v_head_dim != a.head_dim, f"v_head_dim {a.v_head_dim} != head_dim {a.head_dim}"),
        (not all(model.kv_holding), "cross-layer KV sharing"),
        (model.norms_per_layer not in (1, 2, 4), f"{model.norms_per_layer} norms per layer")) if bad]
    if problems:
        raise SpecError(f"measure supports dense GQA models (MHA/GQA/MQA attention, no MoE); got {model.name}: "
                        f"{', '.join(problems)}")


def max_length(model: Model) -> int | None:
    """Longest sequence this decoder times exactly like the model: the smallest sliding window
    (full attention equals windowed attention up to it), else None (no limit)."""
    windows = [w for w in model.layer_windows if w]
    return min(windows) if windows else None


def gemm_shapes(model: Model) -> tuple[tuple[str, int, int], ...]:
    """(label, n, k) of the GEMMs one layer (and the head) runs: fused qkv, o, gate_up (or up), down, lm_head."""
    a, d, f = model.attention, model.d_model, model.dense_ffn_dim
    return (("qkv", (a.n_heads + 2 * a.n_kv_heads) * a.head_dim, d), ("o", d, a.n_heads * a.head_dim),
            ("gate_up" if model.ffn_gated else "up", (2 if model.ffn_gated else 1) * f, d), ("down", d, f),
            ("lm_head", model.vocab_size, d))


def weight_bytes(model: Model, dtype_bytes: float = 2.0) -> float:
    return float(model.params.total) * dtype_bytes


def kv_cache_bytes(model: Model, batch: int, length: int, dtype_bytes: float = 2.0) -> float:
    """K and V of every layer for ``batch`` sequences of ``length`` slots."""
    a = model.attention
    return 2.0 * model.n_layers * batch * a.n_kv_heads * length * a.head_dim * dtype_bytes


def activation_bytes(model: Model, tokens: int, out_rows: int, dtype_bytes: float = 2.0) -> float:
    """A generous bound on the transient memory of one forward: a layer's live tensors
    (x, norms, qkv and rope temporaries, attention out, gate_up, activation) plus the logits."""
    a, d, f = model.attention, model.d_model, model.dense_ffn_dim
    qkv = (a.n_heads + 2 * a.n_kv_heads) * a.head_dim
    return tokens * dtype_bytes * (5 * d + 4 * qkv + 5 * f) + out_rows * model.vocab_size * dtype_bytes * 2


class RandomDecoder:
    """The model's decoder with N(0, 0.02) weights (structure: module docstring)."""

    def __init__(self, model: Model, *, device: str = "cuda", dtype=None, seed: int = 0) -> None:
        import torch

        check_supported(model)
        a = model.attention
        self.model, self.device = model, device
        self.dtype = dtype or torch.bfloat16
        self.n_heads, self.n_kv, self.head_dim = a.n_heads, a.n_kv_heads, a.head_dim
        self.gqa_mode = "native" if tuple(int(x) for x in torch.__version__.split(".")[:2]) >= (2, 5) else "expanded"
        gen = torch.Generator(device=device).manual_seed(seed)

        def w(*shape):
            return torch.empty(shape, device=device, dtype=self.dtype).normal_(0.0, 0.02, generator=gen)

        def ones(n):
            return torch.ones(n, device=device, dtype=self.dtype)

        def norm():
            return (ones(model.d_model), w(model.d_model) if model.norm == "layer" else None)

        d, f, hd = model.d_model, model.dense_ffn_dim, a.head_dim
        qkv_out, ffn_out = (a.n_heads + 2 * a.n_kv_heads) * hd, (2 if model.ffn_gated else 1) * f
        self.layers = []
        for _ in range(model.n_layers):
            self.layers.append({
                "norms": [norm() for _ in range(model.norms_per_layer)],
                "wqkv": w(qkv_out, d), "bqkv": w(qkv_out) if a.qkv_bias else None,
                "q_norm": ones(hd) if a.qk_norm else None, "k_norm": ones(hd) if a.qk_norm else None,
                "wo": w(d, a.n_heads * hd), "bo": w(d) if a.o_bias else None,
                "wup": w(ffn_out, d), "bup": w(ffn_out) if model.ffn_bias else None,
                "wdown": w(d, f), "bdown": w(d) if model.ffn_bias else None,
            })
        self.final_norm = norm()
        self.embed = w(model.vocab_size, d)
        self.head = self.embed if model.tie_embeddings else w(model.vocab_size, d)
        self.head_bias = w(model.vocab_size) if model.lm_head_bias else None
        self._rope_len, self._cos, self._sin = 0, None, None

    def param_count(self) -> int:
        """Elements of every distinct weight tensor (tied embeddings counted once)."""
        tensors = [self.embed, self.head, self.head_bias, *self.final_norm]
        for layer in self.layers:
            tensors += [t for key, t in layer.items() if key != "norms"] + [t for n in layer["norms"] for t in n]
        return sum(t.numel() for t in {id(t): t for t in tensors if t is not None}.values())

    # --- building blocks ---------------------------------------------------------------------
    def _norm(self, x, params):
        import torch.nn.functional as F

        weight, bias = params
        if bias is not None:
            return F.layer_norm(x, (x.shape[-1],), weight, bias, 1e-5)
        return rms_norm(x, weight)

    def rope_tables(self, length: int) -> None:
        """cos/sin tables [length, head_dim] (built once per longest length seen)."""
        import torch

        if length <= self._rope_len:
            return
        inv = 1.0 / ROPE_THETA ** (torch.arange(0, self.head_dim, 2, device=self.device, dtype=torch.float32)
                                   / self.head_dim)
        freqs = torch.outer(torch.arange(length, device=self.device, dtype=torch.float32), inv)
        emb = torch.cat((freqs, freqs), dim=-1)
        self._rope_len, self._cos, self._sin = length, emb.cos().to(self.dtype), emb.sin().to(self.dtype)

    def _rope(self, x, cos, sin):
        import torch

        half = x.shape[-1] // 2
        return x * cos + torch.cat((-x[..., half:], x[..., :half]), dim=-1) * sin

    def _qkv(self, layer, h, cos, sin):
        """q [..., H, hd], k and v [..., H_kv, hd] of normed input h [..., d]."""
        import torch.nn.functional as F

        qkv = F.linear(h, layer["wqkv"], layer["bqkv"]).unflatten(-1, (self.n_heads + 2 * self.n_kv, self.head_dim))
        q, k, v = qkv.split((self.n_heads, self.n_kv, self.n_kv), dim=-2)
        if layer["q_norm"] is not None:
            q, k = rms_norm(q, layer["q_norm"]), rms_norm(k, layer["k_norm"])
        return self._rope(q, cos, sin), self._rope(k, cos, sin), v

    def _causal_attention(self, q, k, v):
        """Causal SDPA of q [B, H, T, hd] over k, v [B, H_kv, T, hd]. GQA runs natively
        (``enable_gqa``) where a fused kernel takes it (on CUDA the math fallback, which builds
        the T x T scores, is excluded); else K/V are expanded to H heads (``gqa_mode`` says which)."""
        import torch.nn.functional as F

        if self.n_kv != self.n_heads and self.gqa_mode == "native":
            try:
                if self.device != "cuda":
                    return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
                from torch.nn.attention import SDPBackend, sdpa_kernel

                fused = [SDPBackend.FLASH_ATTENTION, SDPBackend.CUDNN_ATTENTION, SDPBackend.EFFICIENT_ATTENTION]
                with sdpa_kernel(fused):
                    return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
            except (RuntimeError, TypeError, ImportError, AttributeError):
                self.gqa_mode = "expanded"
        if self.n_kv != self.n_heads:
            b, _, t, hd = k.shape
            group = self.n_heads // self.n_kv
            k, v = (x[:, :, None].expand(b, self.n_kv, group, t, hd).reshape(b, self.n_heads, t, hd) for x in (k, v))
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)

    def _mlp(self, layer, h):
        import torch.nn.functional as F

        up = F.linear(h, layer["wup"], layer["bup"])
        return F.linear(silu_mul(up) if self.model.ffn_gated else gelu(up), layer["wdown"], layer["bdown"])

    def _block(self, layer, x, attend):
        """One layer: pre-norm sequential (2 norms), parallel (1), or with post-norms (4)."""
        import torch.nn.functional as F

        norms = layer["norms"]
        if len(norms) == 1:
            h = self._norm(x, norms[0])
            return x + F.linear(attend(layer, h), layer["wo"], layer["bo"]) + self._mlp(layer, h)
        a = F.linear(attend(layer, self._norm(x, norms[0])), layer["wo"], layer["bo"])
        x = x + (self._norm(a, norms[2]) if len(norms) == 4 else a)
        m = self._mlp(layer, self._norm(x, norms[1]))
        return x + (self._norm(m, norms[3]) if len(norms) == 4 else m)

    def _head(self, x):
        import torch.nn.functional as F

        return F.linear(self._norm(x, self.final_norm), self.head, self.head_bias)

    # --- steps ---------------------------------------------------------------------------------
    def alloc_cache(self, batch: int, length: int) -> list:
        """Per layer (K, V) zero tensors [batch, H_kv, length, head_dim]."""
        import torch

        shape = (batch, self.n_kv, length, self.head_dim)
        return [(torch.zeros(shape, device=self.device, dtype=self.dtype),
                 torch.zeros(shape, device=self.device, dtype=self.dtype)) for _ in self.layers]

    def prefill(self, tokens, cache):
        """Logits [B, V] of the last position after ``tokens`` [B, T]; K/V written to cache[:, :, :T]."""
        import torch.nn.functional as F

        b, t = tokens.shape
        self.rope_tables(t)
        cos, sin = self._cos[:t, None, :], self._sin[:t, None, :]
        x = F.embedding(tokens, self.embed)
        for layer, (ck, cv) in zip(self.layers, cache):
            def attend(layer, h, ck=ck, cv=cv):
                q, k, v = self._qkv(layer, h, cos, sin)            # [B, T, heads, hd]
                ck[:, :, :t].copy_(k.transpose(1, 2))
                cv[:, :, :t].copy_(v.transpose(1, 2))
                o = self._causal_attention(q.transpose(1, 2), ck[:, :, :t], cv[:, :, :t])
                return o.transpose(1, 2).reshape(b, t, self.n_heads * self.head_dim)
            x = self._block(layer, x, attend)
        return self._head(x[:, -1])

    def decode(self, tokens, position: int, cache):
        """Logits [B, V] of one new token per sequence (``tokens`` [B]) at ``position``: its K/V
        go to cache slot ``position`` and it attends slots 0..position."""
        import torch.nn.functional as F

        b = tokens.shape[0]
        self.rope_tables(position + 1)
        cos, sin = self._cos[position], self._sin[position]
        x = F.embedding(tokens, self.embed)
        group = self.n_heads // self.n_kv
        for layer, (ck, cv) in zip(self.layers, cache):
            def attend(layer, h, ck=ck, cv=cv):
                q, k, v = self._qkv(layer, h, cos, sin)            # [B, heads, hd]
                ck[:, :, position].copy_(k)
                cv[:, :, position].copy_(v)
                qg = q.reshape(b, self.n_kv, group, self.head_dim)
                o = F.scaled_dot_product_attention(qg, ck[:, :, :position + 1], cv[:, :, :position + 1])
                return o.reshape(b, self.n_heads * self.head_dim)
            x = self._block(layer, x, attend)
        return self._head(x)


def step_callable(decoder: RandomDecoder, *, phase: str, batch: int, length: int, cuda_graph: bool = True):
    """(fn, how): a zero-argument callable running one decode step at context ``length`` (cache of
    length + 1) or one prefill of ``length`` tokens, for ``batch`` sequences; ``how`` is
    "cuda-graph" or "eager" (with the reason when graph capture failed)."""
    import torch

    gen = torch.Generator(device="cpu").manual_seed(1)
    vocab = decoder.model.vocab_size
    if phase == "prefill":
        tokens = torch.randint(0, vocab, (batch, length), generator=gen).to(decoder.device)
        cache = decoder.alloc_cache(batch, length)
        decoder.rope_tables(length)
        return (lambda: decoder.prefill(tokens, cache)), "eager"
    tokens = torch.randint(0, vocab, (batch,), generator=gen).to(decoder.device)
    cache = decoder.alloc_cache(batch, length + 1)
    decoder.rope_tables(length + 1)

    def step():
        return decoder.decode(tokens, length, cache)

    if not (cuda_graph and decoder.device == "cuda"):
        return step, "eager"
    try:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(2):
                step()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            step()
    except RuntimeError as exc:
        torch.cuda.synchronize()
        return step, f"eager (CUDA graph capture failed: {str(exc).splitlines()[0][:120]})"
    return graph.replay, "cuda-graph"
