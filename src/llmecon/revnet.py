"""Reversible residual networks (RevNets) in PyTorch, with a recomputing autograd (SPEC F24).

Additive coupling (Gomez et al. 2017, "The Reversible Residual Network", arXiv:1707.04585, eq. 1-2):
the stream is two halves ``(x1, x2)``, ``y1 = x1 + F(x2)``, ``y2 = x2 + G(y1)``, and the inverse
``x2 = y2 - G(y1)``, ``x1 = y1 - F(x2)`` needs no stored activations. ``ReversibleSequence`` keeps
only the last block's outputs; its backward walks the blocks in reverse, rebuilds each block's
inputs from its outputs, recomputes F and G with grad enabled and back-propagates through that
local graph. Activation memory is O(1) in depth instead of O(L), at one extra forward:
forward N + backward 2N + recompute N = 4N against 3N, i.e. +1/3 (RevNet paper §3).
Mangalam et al. 2022 ("Reversible Vision Transformers", arXiv:2302.04869) use the same coupling
with F = attention and G = MLP, as ``ReversibleTransformerBlock`` does here.

This module needs PyTorch and is imported only on request: ``import llmecon`` never imports it.
"""

from __future__ import annotations

import contextlib
import statistics
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import NamedTuple

from .errors import SpecError, require_number, require_whole

try:
    import torch
    import torch.nn.functional as F
    from torch import nn
    from torch.autograd.function import once_differentiable
except ImportError as exc:  # pragma: no cover - exercised by a subprocess test
    raise ImportError('llmecon.revnet needs PyTorch, which is not installed: '
                      'pip install torch==2.13.0 (or pip install -e ".[torch]")') from exc

__all__ = [
    "CausalSelfAttention", "CudaMemory", "FlopCount", "OverheadMeasurement", "PreNormMLP",
    "ReversibleBlock", "ReversibleSequence", "ReversibleTransformerBlock", "SavedTensors",
    "count_flops", "cuda_memory", "measure_overhead", "measure_saved_tensors", "reversible_transformer",
    "saved_activation_bytes", "split_halves", "theoretical_overhead",
]


# ----------------------------------------------------------------------------- theory (pure)

def theoretical_overhead(*, forward_ops: float = 1.0, backward_ops: float = 2.0, recompute_ops: float = 1.0) -> float:
    """Extra compute of a reversible network over storing activations: recompute/(forward+backward).

    RevNet paper §3: backward costs ~2 forwards (gradients w.r.t. inputs and weights), and the
    reversible backward recomputes each block once more, so 4N against 3N = +1/3. Counts matmul
    work only; attention's flash backward (2.5x forward) and element-wise ops shift it slightly.
    """
    fwd = require_number("forward_ops", forward_ops, minimum=0.0, exclusive=True)
    bwd = require_number("backward_ops", backward_ops, minimum=0.0)
    rec = require_number("recompute_ops", recompute_ops, minimum=0.0)
    return rec / (fwd + bwd)


# ----------------------------------------------------------------------------- coupling

def split_halves(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The two reversible streams: the halves of ``x`` along its last dimension (views, no copy)."""
    if x.dim() == 0 or x.shape[-1] % 2:
        raise SpecError(f"x: the last dimension holds two reversible streams and must be even, got shape "
                        f"{tuple(x.shape)}; concatenate two d-wide streams, e.g. torch.cat([h, h], dim=-1)")
    return x.chunk(2, dim=-1)


def _coupled(name: str, module: nn.Module, arg: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
    """``residual + module(arg)``, checking that the module keeps the residual's shape."""
    out = module(arg)
    if out.shape != residual.shape:
        raise SpecError(f"{name}: output shape {tuple(out.shape)} must equal the residual stream's shape "
                        f"{tuple(residual.shape)} (additive coupling adds them); make {name} map a half to a half")
    return residual + out


class ReversibleBlock(nn.Module):
    """Additive coupling block: ``(x1, x2) -> (x1 + F(x2), x2 + G(x1 + F(x2)))`` (Gomez et al. 2017).

    F and G are any modules mapping a tensor to one of the same shape (e.g. attention and MLP of
    a transformer block). ``forward``/``inverse`` take and return the pair of halves.
    """

    def __init__(self, f: nn.Module, g: nn.Module) -> None:
        super().__init__()
        self.f, self.g = f, g

    def forward(self, x1: torch.Tensor, x2: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        y1 = _coupled("f", self.f, x2, x1)
        return y1, _coupled("g", self.g, y1, x2)

    def inverse(self, y1: torch.Tensor, y2: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Inputs from outputs: ``x2 = y2 - G(y1)``, ``x1 = y1 - F(x2)``; exact up to rounding."""
        x2 = y2 - self.g(y1)
        return y1 - self.f(x2), x2


# ----------------------------------------------------------------------------- RNG replay

class _RngState(NamedTuple):
    cpu: torch.Tensor
    cuda: torch.Tensor | None


def _rng_state(device: torch.device) -> _RngState:
    """CPU generator state, plus the CUDA one of ``device`` when the stream lives on a GPU."""
    cuda = torch.cuda.get_rng_state(device) if device.type == "cuda" else None
    return _RngState(torch.get_rng_state(), cuda)


@contextlib.contextmanager
def _replay(state: _RngState | None, device: torch.device, autocast: tuple) -> Iterator[None]:
    """Recompute under the RNG state and autocast mode of the original call (as torch.utils.checkpoint
    does), so dropout draws the same masks; the caller's RNG is restored afterwards (fork_rng)."""
    device_type, enabled, dtype = autocast
    with contextlib.ExitStack() as stack:
        if state is not None:
            stack.enter_context(torch.random.fork_rng(devices=[device] if state.cuda is not None else []))
            torch.set_rng_state(state.cpu)
            if state.cuda is not None:
                torch.cuda.set_rng_state(state.cuda, device)
        stack.enter_context(torch.enable_grad())
        stack.enter_context(torch.autocast(device_type, dtype=dtype, enabled=enabled))
        yield


def _local_grads(out: torch.Tensor, inputs: tuple[torch.Tensor, ...], grad: torch.Tensor) -> list:
    """Vector-Jacobian product of one recomputed F or G w.r.t. its input and parameters (None = 0)."""
    if not out.requires_grad:
        return [None] * len(inputs)
    return list(torch.autograd.grad(out, inputs, grad, allow_unused=True))


def _add(a: torch.Tensor | None, b: torch.Tensor | None) -> torch.Tensor | None:
    return b if a is None else a if b is None else a + b


class _ReversibleFunction(torch.autograd.Function):
    """Runs the blocks without a graph, saves only the final (y1, y2); backward inverts block by
    block. Parameters are passed as extra inputs so their gradients flow through autograd (into
    ``.grad`` for optimisers, or to ``torch.autograd.grad``), not by side effect."""

    @staticmethod
    def forward(ctx, x1, x2, blocks, preserve_rng, param_index, *params):
        device = x1.device
        ctx.blocks, ctx.param_index, ctx.params, ctx.device = blocks, param_index, params, device
        ctx.autocast = (device.type, torch.is_autocast_enabled(device.type), torch.get_autocast_dtype(device.type))
        ctx.rng = []
        with torch.no_grad():
            for block in blocks:
                rng_f = _rng_state(device) if preserve_rng else None
                y1 = _coupled("f", block.f, x2, x1)
                rng_g = _rng_state(device) if preserve_rng else None
                x1, x2 = y1, _coupled("g", block.g, y1, x2)
                ctx.rng.append((rng_f, rng_g))
        ctx.save_for_backward(x1, x2)
        return x1, x2

    @staticmethod
    @once_differentiable
    def backward(ctx, dy1, dy2):
        y1, y2 = ctx.saved_tensors
        params, grads = ctx.params, [None] * len(ctx.params)
        def undo(module, arg, rng, index, d_out):
            """Recompute ``module(arg)`` as in forward; return it (detached) and J^T d_out w.r.t. ``arg``,
            adding the module's parameter gradients into ``grads``."""
            with _replay(rng, ctx.device, ctx.autocast):
                arg_ = arg.detach().requires_grad_(True)
                out = module(arg_)
            local = _local_grads(out, (arg_, *(params[i] for i in index)), d_out)
            for i, gr in zip(index, local[1:]):
                grads[i] = _add(grads[i], gr)
            return out.detach(), local[0]

        for block, (rng_f, rng_g), (idx_f, idx_g) in zip(reversed(ctx.blocks), reversed(ctx.rng),
                                                         reversed(ctx.param_index)):
            # y2 = x2 + G(y1): dL/dy1 += J_G^T dy2, and G's parameter gradients.
            g_out, d_y1 = undo(block.g, y1, rng_g, idx_g, dy2)
            dy1 = _add(dy1, d_y1)
            x2 = y2 - g_out
            # y1 = x1 + F(x2): dL/dx2 = dy2 + J_F^T dy1, dL/dx1 = dy1.
            f_out, d_x2 = undo(block.f, x2, rng_f, idx_f, dy1)
            dy2 = _add(dy2, d_x2)
            y1, y2 = y1 - f_out, x2
            del g_out, f_out
        return (dy1, dy2, None, None, None, *grads)


class ReversibleSequence(nn.Module):
    """A stack of ``ReversibleBlock``s on a stream ``x`` of shape ``(..., 2*d)`` (halves = x1, x2).

    ``forward(x)`` stores only the output for backward (O(1) activations in depth);
    ``forward_standard(x)`` runs the *same* block objects with ordinary autograd (the twin that
    stores every activation); ``inverse(y)`` rebuilds ``x``. ``preserve_rng_state`` records the
    RNG before every F and G call (two CPU states of 5056 bytes per block, plus CUDA ones on GPU,
    kept outside autograd's saved tensors) so dropout replays identically in backward.
    Double backward is not supported.
    """

    def __init__(self, blocks: Iterable[ReversibleBlock], *, preserve_rng_state: bool = True) -> None:
        super().__init__()
        blocks = list(blocks)
        if not blocks:
            raise SpecError("blocks: a ReversibleSequence needs at least one ReversibleBlock, got none")
        for i, block in enumerate(blocks):
            if not isinstance(block, ReversibleBlock):
                raise SpecError(f"blocks[{i}]: must be a ReversibleBlock, got {type(block).__name__}; "
                                "wrap F and G as ReversibleBlock(f, g)")
        self.blocks = nn.ModuleList(blocks)
        self.preserve_rng_state = bool(preserve_rng_state)

    def _params(self) -> tuple[tuple[torch.Tensor, ...], tuple]:
        """Trainable parameters (each once) and, per block, their indices in F and in G."""
        params = tuple(p for p in self.parameters() if p.requires_grad)
        where = {id(p): i for i, p in enumerate(params)}
        index = tuple((tuple(where[id(p)] for p in b.f.parameters() if p.requires_grad),
                       tuple(where[id(p)] for p in b.g.parameters() if p.requires_grad)) for b in self.blocks)
        return params, index

    def forward_pair(self, x1: torch.Tensor, x2: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Reversible forward on the two halves; backward recomputes instead of storing."""
        params, index = self._params()
        return _ReversibleFunction.apply(x1, x2, tuple(self.blocks), self.preserve_rng_state, index, *params)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cat(self.forward_pair(*split_halves(x)), dim=-1)

    def forward_standard(self, x: torch.Tensor) -> torch.Tensor:
        """The non-reversible twin: same blocks, ordinary autograd, every activation stored."""
        x1, x2 = split_halves(x)
        for block in self.blocks:
            x1, x2 = block(x1, x2)
        return torch.cat((x1, x2), dim=-1)

    def inverse(self, y: torch.Tensor) -> torch.Tensor:
        """The input stream that produced ``y`` (blocks inverted last to first)."""
        y1, y2 = split_halves(y)
        for block in reversed(self.blocks):
            y1, y2 = block.inverse(y1, y2)
        return torch.cat((y1, y2), dim=-1)


# ----------------------------------------------------------------------------- transformer

def _require_dropout(value) -> float:
    p = require_number("dropout", value, minimum=0.0, maximum=1.0, hint="use 0 <= dropout < 1")
    if p >= 1.0:
        raise SpecError(f"dropout: must be < 1 (1 drops everything), got {value!r}; use 0 <= dropout < 1")
    return p


class CausalSelfAttention(nn.Module):
    """F of a transformer block: pre-norm causal multi-head self-attention on ``(batch, seq, d_model)``
    via ``scaled_dot_product_attention`` (attention dropout when training) and residual dropout."""

    def __init__(self, d_model: int, n_heads: int, *, dropout: float = 0.0, bias: bool = True,
                 device=None, dtype=None) -> None:
        super().__init__()
        self.d_model, self.n_heads, self.dropout = d_model, n_heads, dropout
        kw = {"device": device, "dtype": dtype}
        self.norm = nn.LayerNorm(d_model, **kw)
        self.qkv = nn.Linear(d_model, 3 * d_model, bias=bias, **kw)
        self.proj = nn.Linear(d_model, d_model, bias=bias, **kw)
        self.drop = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() != 3 or x.shape[-1] != self.d_model:
            raise SpecError(f"x: attention expects (batch, seq, {self.d_model}) per stream half, got shape "
                            f"{tuple(x.shape)}; pass the stream as (batch, seq, 2*d_model)")
        b, t, d = x.shape
        q, k, v = self.qkv(self.norm(x)).view(b, t, 3, self.n_heads, d // self.n_heads).permute(2, 0, 3, 1, 4)
        o = F.scaled_dot_product_attention(q, k, v, dropout_p=self.dropout if self.training else 0.0, is_causal=True)
        return self.drop(self.proj(o.transpose(1, 2).reshape(b, t, d)))


class PreNormMLP(nn.Module):
    """G of a transformer block: LayerNorm -> Linear(d, hidden) -> GELU -> Linear(hidden, d) -> dropout."""

    def __init__(self, d_model: int, hidden: int, *, dropout: float = 0.0, bias: bool = True,
                 device=None, dtype=None) -> None:
        super().__init__()
        kw = {"device": device, "dtype": dtype}
        self.net = nn.Sequential(nn.LayerNorm(d_model, **kw), nn.Linear(d_model, hidden, bias=bias, **kw), nn.GELU(),
                                 nn.Linear(hidden, d_model, bias=bias, **kw), nn.Dropout(dropout))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


class ReversibleTransformerBlock(ReversibleBlock):
    """Reversible transformer block (Mangalam et al. 2022): F = causal attention, G = MLP, each on
    one d_model-wide half of a 2*d_model stream (parameters equal one standard block's)."""

    def __init__(self, d_model: int, n_heads: int, *, mlp_ratio: float = 4.0, dropout: float = 0.0,
                 bias: bool = True, device=None, dtype=None) -> None:
        require_whole("d_model", d_model, 1)
        require_whole("n_heads", n_heads, 1)
        if d_model % n_heads:
            raise SpecError(f"n_heads: d_model={d_model} must be divisible by n_heads={n_heads}; "
                            "choose n_heads dividing d_model")
        ratio = require_number("mlp_ratio", mlp_ratio, minimum=0.0, exclusive=True)
        hidden = max(1, round(ratio * d_model))
        p = _require_dropout(dropout)
        kw = {"bias": bias, "device": device, "dtype": dtype}
        super().__init__(CausalSelfAttention(d_model, n_heads, dropout=p, **kw),
                         PreNormMLP(d_model, hidden, dropout=p, **kw))


def reversible_transformer(depth: int, d_model: int, n_heads: int, *, mlp_ratio: float = 4.0,
                           dropout: float = 0.0, bias: bool = True, preserve_rng_state: bool = True,
                           device=None, dtype=None) -> ReversibleSequence:
    """``depth`` reversible transformer blocks on a ``(batch, seq, 2*d_model)`` stream. Start from
    embeddings ``h`` with ``torch.cat([h, h], -1)`` (as Reformer, Kitaev et al. 2020) and read out
    e.g. the mean of the halves; embeddings and head are outside and store activations as usual."""
    require_whole("depth", depth, 1)
    return ReversibleSequence([ReversibleTransformerBlock(d_model, n_heads, mlp_ratio=mlp_ratio, dropout=dropout,
                                                          bias=bias, device=device, dtype=dtype)
                               for _ in range(depth)], preserve_rng_state=preserve_rng_state)


# ----------------------------------------------------------------------------- measurement

@dataclass(frozen=True)
class SavedTensors:
    """Bytes that autograd keeps for backward after one forward, per distinct storage.

    ``activation_bytes``: storages of saved tensors that are not weights (inputs, intermediate
    results, dropout masks, attention log-sum-exp ...); ``weight_bytes``: saved storages shared
    with the given parameters/buffers (they live anyway and are not activation memory).
    ``n_saved``: tensors packed (before de-duplication); ``n_storages``: distinct activation storages.
    """

    activation_bytes: int
    weight_bytes: int
    n_saved: int
    n_storages: int


def _storage_key(t: torch.Tensor) -> tuple[int, int]:
    """(storage address, bytes): views of one storage share the address and count once."""
    try:
        storage = t.untyped_storage()
        return storage.data_ptr(), storage.nbytes()
    except (RuntimeError, NotImplementedError):  # sparse or storage-less tensors: count the tensor itself
        return id(t), t.numel() * t.element_size()


def _default_weights(fn: Callable) -> Iterable[torch.Tensor]:
    module = fn if isinstance(fn, nn.Module) else getattr(fn, "__self__", None)
    if isinstance(module, nn.Module):
        return [*module.parameters(), *module.buffers()]
    return []


def measure_saved_tensors(fn: Callable, *inputs, weights: Iterable[torch.Tensor] | None = None) -> SavedTensors:
    """Run ``fn(*inputs)`` under ``torch.autograd.graph.saved_tensors_hooks`` and sum what is saved.

    Each saved tensor's whole storage is counted once (by storage address), since that is the
    memory it keeps alive. Storages shared with ``weights`` (default: parameters and buffers of
    ``fn`` if it is a module or a bound method of one) go to ``weight_bytes``. Not counted: the
    output itself unless autograd saves it, RNG states a reversible sequence keeps on its ctx,
    allocator caching and temporaries freed during forward (see ``cuda_memory`` for peaks).
    """
    weight_keys = {_storage_key(w)[0] for w in (_default_weights(fn) if weights is None else weights)}
    storages: dict[int, int] = {}
    kept: list[torch.Tensor] = []  # keeps storages alive so that addresses stay unique

    def pack(t: torch.Tensor) -> torch.Tensor:
        kept.append(t)
        key, nbytes = _storage_key(t)
        storages[key] = nbytes
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = fn(*inputs)
    act = {k: n for k, n in storages.items() if k not in weight_keys}
    del out  # the graph, and with it the saved tensors, is released when ``kept`` goes out of scope
    return SavedTensors(activation_bytes=sum(act.values()), weight_bytes=sum(storages.values()) - sum(act.values()),
                        n_saved=len(kept), n_storages=len(act))


def saved_activation_bytes(fn: Callable, *inputs, weights: Iterable[torch.Tensor] | None = None) -> int:
    """Activation bytes saved for backward by ``fn(*inputs)`` (``measure_saved_tensors(...).activation_bytes``)."""
    return measure_saved_tensors(fn, *inputs, weights=weights).activation_bytes


def _forward_backward(fn: Callable, x: torch.Tensor) -> None:
    out = fn(x)
    out.backward(torch.ones_like(out))


def _sync(x: torch.Tensor) -> None:
    if x.device.type == "cuda":
        torch.cuda.synchronize(x.device)


@dataclass(frozen=True)
class OverheadMeasurement:
    """Median forward+backward wall times of the reversible path and its storing twin."""

    standard_s: float
    reversible_s: float
    repeats: int
    theoretical_overhead: float

    @property
    def measured_overhead(self) -> float:
        """reversible / standard - 1 (theory: 1/3)."""
        return self.reversible_s / self.standard_s - 1.0


def measure_overhead(seq: ReversibleSequence, x: torch.Tensor, *, repeats: int = 5,
                     warmup: int = 1) -> OverheadMeasurement:
    """Time ``seq(x)`` and ``seq.forward_standard(x)`` forward+backward (dL/dy = 1), alternating the
    two to share drift; medians of ``repeats`` after ``warmup`` untimed runs each. Wall time on
    whatever threads torch uses: pin them (``torch.set_num_threads``) for comparable numbers."""
    require_whole("repeats", repeats, 1)
    require_whole("warmup", warmup, 0)
    times: dict[str, list[float]] = {"standard": [], "reversible": []}
    fns = {"standard": seq.forward_standard, "reversible": seq}
    for i in range(warmup + repeats):
        for name, fn in fns.items():
            seq.zero_grad(set_to_none=True)
            _sync(x)
            t0 = time.perf_counter()
            _forward_backward(fn, x)
            _sync(x)
            if i >= warmup:
                times[name].append(time.perf_counter() - t0)
    seq.zero_grad(set_to_none=True)
    return OverheadMeasurement(standard_s=statistics.median(times["standard"]),
                               reversible_s=statistics.median(times["reversible"]), repeats=repeats,
                               theoretical_overhead=theoretical_overhead())


@dataclass(frozen=True)
class FlopCount:
    """FLOPs of one forward+backward counted with ``torch.utils.flop_counter``'s formulas."""

    standard_flops: int
    reversible_flops: int

    @property
    def overhead(self) -> float:
        """reversible / standard - 1 in counted FLOPs (1/3 for matmul-only blocks)."""
        return self.reversible_flops / self.standard_flops - 1.0


def _flop_formulas() -> dict:
    """torch's FLOP formulas (``torch.utils.flop_counter.flop_registry``: mm, addmm, bmm, SDPA ...),
    keyed by op packet. torch 2.13 has none for the CPU flash-attention kernels, so its own SDPA
    formulas are added for them (forward: 2 bmm; backward: 5 bmm incl. score recompute = 2.5x;
    the causal mask is ignored, as torch does for GPU kernels)."""
    from torch.utils import flop_counter as fc

    registry = dict(fc.flop_registry)
    aten = torch.ops.aten
    fwd = getattr(aten, "_scaled_dot_product_flash_attention_for_cpu", None)
    bwd = getattr(aten, "_scaled_dot_product_flash_attention_for_cpu_backward", None)
    if fwd is not None and bwd is not None and hasattr(fc, "sdpa_backward_flop_count"):
        registry.setdefault(fwd, fc.shape_wrapper(
            lambda q, k, v, *a, out_shape=None, **kw: fc.sdpa_flop_count(q, k, v)))
        registry.setdefault(bwd, fc.shape_wrapper(
            lambda g, q, k, v, *a, out_shape=None, **kw: fc.sdpa_backward_flop_count(g, q, k, v)))
    return registry


def _count(fn: Callable, x: torch.Tensor) -> int:
    """FLOPs of ``fn(x)`` forward+backward. A bare dispatch mode, not FlopCounterMode: the latter's
    module tracker installs grad hooks that fail under ``autograd.grad`` inside a backward."""
    from torch.utils._python_dispatch import TorchDispatchMode

    registry = _flop_formulas()

    class Counter(TorchDispatchMode):
        flops = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            out = func(*args, **kwargs)
            formula = registry.get(func._overloadpacket)
            if formula is not None:
                Counter.flops += formula(*args, **kwargs, out_val=out)
            return out

    with Counter():
        _forward_backward(fn, x)
    return Counter.flops


def count_flops(seq: ReversibleSequence, x: torch.Tensor) -> FlopCount:
    """Counted FLOPs of forward+backward for the twin and the reversible path: matmuls and attention
    by torch's formulas; element-wise ops (norms, GELU, adds, dropout) are not counted. Make ``x``
    require grad to compare equal work: the reversible backward always computes the input gradient."""
    totals = []
    for fn in (seq.forward_standard, seq):
        seq.zero_grad(set_to_none=True)
        totals.append(_count(fn, x))
    seq.zero_grad(set_to_none=True)
    return FlopCount(standard_flops=totals[0], reversible_flops=totals[1])


@dataclass(frozen=True)
class CudaMemory:
    """CUDA allocator bytes above the baseline: held after forward, and peak over forward+backward."""

    after_forward_bytes: int
    peak_bytes: int


def cuda_memory(fn: Callable, x: torch.Tensor) -> CudaMemory:
    """``torch.cuda.max_memory_allocated``-based alternative to ``measure_saved_tensors`` (includes
    the output, temporaries, workspace and gradients; excludes memory allocated before the call)."""
    if x.device.type != "cuda":
        raise SpecError(f"x: cuda_memory needs a tensor on a CUDA device, got device {x.device}; "
                        "use measure_saved_tensors on CPU")
    torch.cuda.synchronize(x.device)
    torch.cuda.reset_peak_memory_stats(x.device)
    base = torch.cuda.memory_allocated(x.device)
    out = fn(x)
    torch.cuda.synchronize(x.device)
    after = torch.cuda.memory_allocated(x.device) - base
    out.backward(torch.ones_like(out))
    del out
    torch.cuda.synchronize(x.device)
    return CudaMemory(after_forward_bytes=after, peak_bytes=torch.cuda.max_memory_allocated(x.device) - base)
