"""Kernel microbenchmarks: HBM copy bandwidth, bf16/fp8 GEMMs, element-wise kernels.

Each benchmark is one function that returns ``Measurement`` rows (``llmecon.fidelity.measurements``,
kinds ``copy``, ``gemm``, ``elementwise``); ``Bench`` carries the device, the catalogue ids and
the metadata every row gets. Timing (``time_s``) follows ``triton.testing.do_bench``: warm-up
calls, then per repeat an L2 flush (zeroing a 256 MiB buffer, larger than the 50 MB L2 of
H100/H200) outside the timed region, CUDA events around one call, and the median of the
repeats. So every kernel starts with cold caches, as a weight matrix does inside a model whose
other layers have passed through L2 since its last use. On CPU (smoke runs) it is
``time.perf_counter`` around each call, no flush.

Bytes are the minimum a fused kernel must move (read + written, bf16 = 2 bytes), the same counts
``llmecon.step.calibrated`` uses: RMSNorm 2·t·d·2 + d·2 (weight), gated activation 3·t·F·2 (reads
gate and up, writes F), residual add 3·t·d·2. Eager PyTorch may run more than one kernel for an
op (SiLU then multiply); the row's ``note`` says which, and the fitted efficiency absorbs it.
torch is imported inside the functions only.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass

from ...errors import SpecError
from ..measurements import Measurement, make

SOURCE = "llmecon measure"
FLUSH_BYTES = 256 * 2**20  # > L2 of every catalogued GPU (H100/H200 50 MB, B200 126 MB)
_FLUSH: dict = {}


@dataclass(frozen=True, kw_only=True)
class Bench:
    """Where rows are measured (device, catalogue ids), how often, and the metadata every row carries."""

    device: str
    accelerator: str
    system: str
    repeats: int = 20
    warmup: int = 5
    gpu_name: str = ""
    driver: str = ""
    torch_version: str = ""
    date: str = ""
    note: str = ""

    def row(self, kind: str, *, note: str = "", **columns) -> Measurement:
        """A validated row (``measurements.make``) with this bench's metadata and ``note`` appended."""
        notes = "; ".join(x for x in (self.note, note) if x)
        return make({"kind": kind, "source": SOURCE, "accelerator": self.accelerator, "system": self.system,
                     "gpu_name": self.gpu_name, "driver": self.driver, "torch": self.torch_version, "date": self.date,
                     "note": notes, **columns},
                    where=f"llmecon measure {kind}")


def _sync(device: str) -> None:
    import torch

    if device == "cuda":
        torch.cuda.synchronize()


def time_s(fn, bench: Bench, *, repeats: int | None = None, warmup: int | None = None, flush: bool = True) -> float:
    """Median seconds of one ``fn()`` over ``repeats`` calls after ``warmup`` calls (module docstring)."""
    import torch

    repeats = bench.repeats if repeats is None else repeats
    warmup = bench.warmup if warmup is None else warmup
    for _ in range(warmup):
        fn()
    _sync(bench.device)
    if bench.device != "cuda":
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
        return statistics.median(times)
    scratch = None
    if flush:
        scratch = _FLUSH.get("cuda")
        if scratch is None:
            scratch = _FLUSH["cuda"] = torch.empty(FLUSH_BYTES, dtype=torch.int8, device="cuda")
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(repeats)]
    for start, end in events:
        if scratch is not None:
            scratch.zero_()
        start.record()
        fn()
        end.record()
    torch.cuda.synchronize()
    return statistics.median(start.elapsed_time(end) * 1e-3 for start, end in events)


def _randn(shape, device: str, dtype=None):
    import torch

    return torch.randn(shape, device=device, dtype=dtype or torch.bfloat16)


# --- the ops the random-weight decoder runs (one definition, timed here and used there) --------


def rms_norm(x, weight, eps: float = 1e-6):
    """RMSNorm over the last dim (``F.rms_norm`` where torch has it, >= 2.4; else the formula)."""
    import torch
    import torch.nn.functional as F

    if hasattr(F, "rms_norm"):
        return F.rms_norm(x, (x.shape[-1],), weight, eps)
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * weight


def silu_mul(gate_up):
    """SwiGLU activation of a fused gate|up output [..., 2F] -> [..., F] (eager: silu, then mul)."""
    import torch.nn.functional as F

    gate, up = gate_up.chunk(2, dim=-1)
    return F.silu(gate) * up


def gelu(x):
    """Plain-MLP activation (tanh GELU, GPT-2/Phi-2)."""
    import torch.nn.functional as F

    return F.gelu(x, approximate="tanh")


# --- benchmarks -----------------------------------------------------------------------------


def copy_bandwidth(bench: Bench, sizes_bytes) -> list[Measurement]:
    """Device-to-device copies (``Tensor.copy_``, a cudaMemcpyAsync) of buffers of ``sizes_bytes``;
    each row's ``bytes`` = 2·size (read + written)."""
    import torch

    rows = []
    for size in sizes_bytes:
        src = torch.ones(int(size), dtype=torch.uint8, device=bench.device)
        dst = torch.empty_like(src)
        seconds = time_s(lambda: dst.copy_(src), bench)
        rows.append(bench.row("copy", bytes=2 * int(size), measured_s=seconds,
                              note=f"copy_ of a {int(size)} B buffer"))
        src = dst = None  # free before the next size
    return rows


def fp8_unsupported(device: str) -> str:
    """Why fp8 GEMMs cannot run here ("" when they can): torch needs ``float8_e4m3fn`` and
    ``_scaled_mm``; CUDA needs compute capability 8.9+ (Ada, Hopper, Blackwell)."""
    import torch

    if not (hasattr(torch, "float8_e4m3fn") and hasattr(torch, "_scaled_mm")):
        return f"torch {torch.__version__} has no float8_e4m3fn/_scaled_mm"
    if device == "cuda":
        major, minor = torch.cuda.get_device_capability()
        if (major, minor) < (8, 9):
            return f"fp8 GEMMs need compute capability 8.9+ (Ada, Hopper, Blackwell); this GPU is sm_{major}{minor}"
    return ""


def _gemm_fn(a, w, dtype: str):
    """(callable, how) of one GEMM of activations ``a`` [m,k] with weights ``w`` [n,k]."""
    import torch
    import torch.nn.functional as F

    if dtype == "bf16":
        return (lambda: F.linear(a, w)), "F.linear"
    a8, b8 = a.to(torch.float8_e4m3fn), w.to(torch.float8_e4m3fn).t()
    one = torch.ones((), dtype=torch.float32, device=a.device)

    def fp8():
        return torch._scaled_mm(a8, b8, scale_a=one, scale_b=one, out_dtype=torch.bfloat16, use_fast_accum=True)

    return fp8, "_scaled_mm e4m3, per-tensor scales, fast accum"


def gemm_sweep(bench: Bench, shapes, *, dtype: str = "bf16", skipped: list | None = None) -> list[Measurement]:
    """C[m,n] = A[m,k]·W[n,k]ᵀ for each ``(label, m, n, k)`` in ``shapes``, as the model runs it.

    bf16: ``F.linear`` (cuBLAS, weight stored [n,k]). fp8: ``torch._scaled_mm`` on e4m3 operands
    with per-tensor float32 scales of 1, bf16 output and fast accumulation (as serving engines'
    fp8 GEMMs run on Hopper; W is [n,k] row-major, so Wᵀ is the column-major B cuBLASLt needs).
    A shape the fp8 kernel rejects (it needs k and n divisible by 16) goes to ``skipped`` with
    the reason instead of a row (without ``skipped`` the error propagates).
    """
    if dtype not in ("bf16", "fp8"):
        raise SpecError(f"gemm dtype must be bf16 or fp8, got {dtype!r}")
    rows = []
    for label, m, n, k in shapes:
        fn, how = _gemm_fn(_randn((int(m), int(k)), bench.device), _randn((int(n), int(k)), bench.device), dtype)
        try:
            seconds = time_s(fn, bench)
        except (RuntimeError, TypeError) as exc:
            if skipped is None:
                raise
            skipped.append(f"gemm {dtype} {label} m={m} n={n} k={k}: {str(exc).splitlines()[0]}")
            continue
        rows.append(bench.row("gemm", m=m, n=n, k=k, dtype=dtype, measured_s=seconds, note=f"{label}: {how}"))
    return rows


def elementwise_kernels(bench: Bench, *, d_model: int, ffn_dim: int, gated: bool, tokens) -> list[Measurement]:
    """RMSNorm [t, d], the FFN activation [t, F] and a residual add [t, d], bf16, for each t in
    ``tokens`` (bytes: module docstring)."""
    import torch

    rows = []
    for t in (int(t) for t in tokens):
        x, y = _randn((t, d_model), bench.device), _randn((t, d_model), bench.device)
        w = torch.ones(d_model, dtype=torch.bfloat16, device=bench.device)
        if gated:
            gate_up = _randn((t, 2 * ffn_dim), bench.device)
            act = (lambda: silu_mul(gate_up), 3 * t * ffn_dim * 2,
                   f"silu_mul [{t}, {ffn_dim}]: silu then mul (2 kernels)")
        else:
            up = _randn((t, ffn_dim), bench.device)
            act = (lambda: gelu(up), 2 * t * ffn_dim * 2, f"gelu [{t}, {ffn_dim}]")
        cases = ((lambda: rms_norm(x, w), 2 * t * d_model * 2 + d_model * 2, f"rms_norm [{t}, {d_model}]"), act,
                 (lambda: x + y, 3 * t * d_model * 2, f"residual add [{t}, {d_model}]"))
        for fn, moved, note in cases:
            rows.append(bench.row("elementwise", bytes=moved, dtype="bf16", measured_s=time_s(fn, bench), note=note))
    return rows
