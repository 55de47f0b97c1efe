"""The ``llmecon measure`` sweep: presets, GPU detection and catalogue ids, the benchmark loop.

``run`` times, in this order: HBM copies, element-wise kernels, bf16 (and fp8 where the GPU has
it) GEMMs over the model's own matrix shapes and a range of token counts m, then builds the
random-weight decoder (``transformer``) and times decode steps over batch × context and prefills
over (batch, prompt) points. Points that do not fit in free GPU memory, or pass a sliding window,
are skipped and listed. A progress bar goes to stderr. Rows are ``Measurement`` objects; the CLI
writes them with ``measurements.write_csv``.
"""

from __future__ import annotations

import datetime
import platform
import shutil
import subprocess
import time
from dataclasses import dataclass

from ...errors import InfeasibleError, SpecError, require_choice
from ..measurements import Measurement
from . import kernels
from . import transformer

CPU_MAX_WEIGHT_BYTES = 2e9  # the cpu smoke run builds the whole model: keep it to tiny configs
MEMORY_MARGIN_BYTES = 2 * 2**30  # left free for cuBLAS/SDPA workspaces and the allocator


@dataclass(frozen=True, kw_only=True)
class Preset:
    """What one run measures. ``copy_bytes``: buffer sizes (bytes moved = 2x); ``gemm_m``: token
    counts for every model GEMM shape in ``gemm_shapes``; ``prefill``: (batch, prompt) points."""

    name: str
    copy_bytes: tuple[int, ...]
    elementwise_tokens: tuple[int, ...]
    gemm_m: tuple[int, ...]
    gemm_shapes: tuple[str, ...]
    decode_batches: tuple[int, ...]
    decode_contexts: tuple[int, ...]
    prefill: tuple[tuple[int, int], ...]
    repeats: int
    step_repeats: int
    warmup: int


_MiB = 2**20
PRESETS = {
    # ~40 s on one H100 for llama-3.1-8b (torch start-up, model build and CUDA-graph captures included)
    "quick": Preset(name="quick", copy_bytes=(_MiB, 16 * _MiB, 256 * _MiB, 1024 * _MiB),
                    elementwise_tokens=(1, 64, 1024, 16384), gemm_m=(1, 32, 256, 2048, 8192),
                    gemm_shapes=("qkv", "o", "gate_up", "up", "down"), decode_batches=(1, 8, 32, 128),
                    decode_contexts=(512, 2048), prefill=((1, 128), (1, 512), (1, 2048), (1, 8192), (4, 2048)),
                    repeats=20, step_repeats=10, warmup=3),
    "full": Preset(name="full", copy_bytes=tuple(4**i * 64 * 2**10 for i in range(9)),
                   elementwise_tokens=(1, 8, 64, 256, 1024, 4096, 16384, 65536),
                   gemm_m=(1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384),
                   gemm_shapes=("qkv", "o", "gate_up", "up", "down", "lm_head"),
                   decode_batches=(1, 2, 4, 8, 16, 32, 64, 128, 256), decode_contexts=(128, 512, 2048, 8192, 32768),
                   prefill=tuple((b, t) for b in (1, 2, 4, 8) for t in (128, 512, 2048, 8192, 16384) if b * t <= 65536),
                   repeats=30, step_repeats=20, warmup=5),
    # --device cpu: a smoke run of every code path with tiny shapes (tests), not for calibration
    "cpu": Preset(name="cpu", copy_bytes=(64 * 2**10,), elementwise_tokens=(4,), gemm_m=(1, 8),
                  gemm_shapes=("qkv", "down"), decode_batches=(1, 2), decode_contexts=(8,), prefill=((1, 8), (2, 16)),
                  repeats=2, step_repeats=2, warmup=1),
}


@dataclass(frozen=True, kw_only=True)
class Environment:
    device: str
    gpu_name: str
    driver: str
    torch_version: str
    memory_bytes: float


@dataclass(frozen=True, kw_only=True)
class MeasureResult:
    """Rows of one run, what was skipped and why, and where it ran."""

    rows: tuple[Measurement, ...]
    skipped: tuple[str, ...]
    model: str
    preset: str
    env: Environment
    accelerator: str
    system: str
    step_timing: str
    wall_s: float

    def headline(self) -> dict[str, float]:
        """Best achieved rates, and their share of the catalogue's datasheet figure where known:
        copy and element-wise bytes/s, GEMM FLOP/s per dtype, decode and prefill tokens/s."""
        best: dict[str, float] = {}
        for r in self.rows:
            if r.kind in ("copy", "elementwise"):
                key, value = f"{r.kind}_bytes_per_s", r.bytes / r.measured_s
            elif r.kind == "gemm":
                key, value = f"gemm_{r.dtype}_flops_per_s", 2 * r.m * r.n * r.k / r.measured_s
            else:
                key, value = f"{r.kind}_tokens_per_s", r.batch * (r.prompt_tokens or 1) / r.measured_s
            best[key] = max(best.get(key, 0.0), value)
        from ...catalog.hardware import accelerators

        chip = accelerators().get(self.accelerator)
        if chip is not None:
            for key in list(best):
                if key.endswith("bytes_per_s"):
                    best[key.replace("bytes_per_s", "hbm_share")] = best[key] / chip.hbm_bandwidth_bytes_per_s
                elif key.startswith("gemm_") and key.split("_")[1] in chip.peak_flops_per_s:
                    best[key.replace("flops_per_s", "peak_share")] = best[key] / chip.peak(key.split("_")[1])
        return best


def require_torch():
    try:
        import torch
    except ImportError:
        raise SpecError('llmecon measure needs PyTorch: pip install -e ".[torch]"') from None
    return torch


def _nvidia_smi_driver() -> str:
    exe = shutil.which("nvidia-smi")
    try:
        out = subprocess.run([exe, "--query-gpu=driver_version", "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=20, check=False).stdout.strip() if exe else ""
    except (OSError, subprocess.SubprocessError):
        out = ""
    return out.splitlines()[0].strip() if out else ""


def environment(device: str) -> Environment:
    """The GPU (or CPU) this run measures. CUDA missing without ``device='cpu'`` is a SpecError."""
    torch = require_torch()
    require_choice("device", device, ("cuda", "cpu"))
    if device == "cpu":
        return Environment(device="cpu", gpu_name=f"cpu ({platform.machine()})", driver="",
                           torch_version=torch.__version__, memory_bytes=0.0)
    if not torch.cuda.is_available():
        raise SpecError("llmecon measure needs a CUDA GPU (torch.cuda.is_available() is False)",
                        fix="use {device} cpu only for a smoke run")
    smi = _nvidia_smi_driver()
    driver = "; ".join(x for x in (f"cuda {torch.version.cuda}" if torch.version.cuda else "",
                                   f"driver {smi}" if smi else "") if x)
    return Environment(device="cuda", gpu_name=torch.cuda.get_device_name(0), driver=driver,
                       torch_version=torch.__version__,
                       memory_bytes=float(torch.cuda.get_device_properties(0).total_memory))


def match_gpu(name: str, memory_bytes: float) -> tuple[str, str] | None:
    """(accelerator, system) catalogue ids for a ``torch.cuda.get_device_name`` string, or None.

    Only the SXM parts the catalogue describes match: "H100 80GB HBM3"/"H100 SXM" (not PCIe or
    NVL, which have other clocks and bandwidth), any H200, "A100-SXM4-80GB", B200 (not GB200).
    The system is the 8-GPU HGX board the part ships in; measurements run at tp=1 on one GPU.
    """
    up = name.upper()
    if "PCIE" in up:
        return None
    if "H200" in up:
        return "h200", "hgx-h200"
    if "H100" in up and "NVL" not in up and ("HBM3" in up or "SXM" in up or 75e9 <= memory_bytes <= 90e9):
        return "h100-sxm", "hgx-h100"
    if "A100" in up and ("80GB" in up or 75e9 <= memory_bytes <= 90e9):
        return "a100-80gb", "hgx-a100"
    if "B200" in up and "GB200" not in up:
        return "b200", "hgx-b200"
    return None


def resolve_targets(env: Environment, accelerator: str | None, system: str | None) -> tuple[str, str]:
    """Catalogue ids the rows carry: the flags where given (checked against the catalogue and each
    other), else the detected GPU's; an unknown GPU without flags is a SpecError. CPU smoke runs
    default to "cpu"."""
    from ...catalog.hardware import get_accelerator, get_system

    if accelerator:
        get_accelerator(accelerator)
    if system:
        accelerator = accelerator or get_system(system).accelerator.name
        if get_system(system).accelerator.name != accelerator:
            raise SpecError(f"has {get_system(system).accelerator.name} chips, not {{accelerator}} {accelerator}",
                            field="system", value=system, fix="give matching names")
    if (accelerator and system) or env.device == "cpu":
        return accelerator or "cpu", system or "cpu"
    found = match_gpu(env.gpu_name, env.memory_bytes)
    if found is None or (accelerator and accelerator != found[0]):
        raise SpecError(f"GPU '{env.gpu_name}' is not matched to a catalogue entry",
                        fix="pass {accelerator} and {system} (llmecon catalog accelerators / systems) "
                            "naming what it is")
    return found


def run(*, model: str, device: str = "cuda", preset: str = "quick", accelerator: str | None = None,
        system: str | None = None, cuda_graph: bool = True, progress: bool = True) -> MeasureResult:
    """Run the sweep (module docstring); errors are SpecError/InfeasibleError/CatalogError."""
    from ...catalog.models import get_model

    started = time.perf_counter()
    torch = require_torch()
    env = environment(device)
    spec = get_model(model)
    transformer.check_supported(spec)
    if preset not in PRESETS:
        raise SpecError(f"preset must be one of {', '.join(PRESETS)}, got {preset!r}")
    p = PRESETS["cpu" if device == "cpu" else preset]
    acc, sys_ = resolve_targets(env, accelerator, system)
    _require_weights_fit(spec, device, env, torch)
    note = "cpu smoke run, not for calibration" if device == "cpu" else ""
    bench = kernels.Bench(device=device, accelerator=acc, system=sys_, repeats=p.repeats, warmup=p.warmup,
                          gpu_name=env.gpu_name, driver=env.driver, torch_version=env.torch_version,
                          date=datetime.datetime.now(datetime.timezone.utc).date().isoformat(), note=note)
    skipped: list[str] = []
    tasks = _kernel_tasks(bench, spec, p, device, skipped)
    points = _step_points(spec, p, skipped)
    steps = _Steps(spec, model, bench, p, device=device, cuda_graph=cuda_graph, torch=torch, skipped=skipped)
    tasks.append((f"build {spec.name}", steps.build))
    tasks += [(f"{ph} B={b} L={n}", lambda ph=ph, b=b, n=n: steps.step(ph, b, n)) for ph, b, n in points]
    rows = _run_tasks(tasks, progress=progress, torch=torch)
    steps.decoder = None
    if device == "cuda":
        torch.cuda.empty_cache()
    return MeasureResult(rows=tuple(rows), skipped=tuple(skipped), model=model, preset=p.name, env=env,
                         accelerator=acc, system=sys_, step_timing=", ".join(sorted(steps.hows)) or "eager",
                         wall_s=time.perf_counter() - started)


def _require_weights_fit(spec, device: str, env, torch) -> None:
    """The whole model's bf16 weights must fit on the one device (a cpu smoke run: a tiny config only)."""
    need = transformer.weight_bytes(spec)
    if device == "cpu" and need > CPU_MAX_WEIGHT_BYTES:
        raise SpecError(f"builds the whole model: {spec.name} has {need / 1e9:.1f} GB of bf16 weights", field="device",
                        value="cpu", fix="the cpu smoke run is for tiny configs ({model} path/to/small/config.json)")
    free = torch.cuda.mem_get_info()[0] if device == "cuda" else float("inf")
    if need + MEMORY_MARGIN_BYTES > free:
        raise InfeasibleError(f"{spec.name}: {need / 1e9:.1f} GB of bf16 weights do not fit in the {free / 1e9:.1f} "
                              f"GB free on {env.gpu_name} (measure runs the whole model on one GPU, tp=1); pick a "
                              "smaller model")


def _kernel_tasks(bench, spec, p, device: str, skipped: list[str]) -> list:
    """(label, callable) of the kernel benchmarks: copies, elementwise kernels, GEMMs (fp8 where supported)."""
    shapes = [s for s in transformer.gemm_shapes(spec) if s[0] in p.gemm_shapes]
    fp8_reason = kernels.fp8_unsupported(device)
    if fp8_reason:
        skipped.append(f"gemm fp8: {fp8_reason}")
    dtypes = ("bf16",) if fp8_reason else ("bf16", "fp8")
    tasks = [(f"copy {s} B", lambda s=s: kernels.copy_bandwidth(bench, [s])) for s in p.copy_bytes]
    tasks += [(f"elementwise t={t}", lambda t=t: kernels.elementwise_kernels(
        bench, d_model=spec.d_model, ffn_dim=spec.dense_ffn_dim, gated=spec.ffn_gated, tokens=[t]))
        for t in p.elementwise_tokens]
    tasks += [(f"gemm {dt} {label} m={m}", lambda dt=dt, label=label, m=m, n=n, k=k: kernels.gemm_sweep(
        bench, [(label, m, n, k)], dtype=dt, skipped=skipped)) for dt in dtypes for label, n, k in shapes
        for m in p.gemm_m]
    return tasks


def _step_points(spec, p, skipped: list[str]) -> list[tuple[str, int, int]]:
    """(phase, batch, length) of the whole-model steps, those past the smallest sliding window skipped."""
    limit = transformer.max_length(spec)
    points = [("decode", b, c) for b in p.decode_batches for c in p.decode_contexts]
    points += [("prefill", b, t) for b, t in p.prefill]
    too_long = [pt for pt in points if limit is not None and pt[2] + (pt[0] == "decode") > limit]
    skipped += [f"{ph} B={b} L={n}: past the smallest sliding window ({limit}), where this decoder's full "
                "attention stops matching the model" for ph, b, n in too_long]
    return [pt for pt in points if pt not in too_long]


class _Steps:
    """The whole-model step tasks: ``build`` the random-weight decoder (after the kernel benchmarks), then
    ``step`` times one decode or prefill step (skipped, with the reason, where memory runs out)."""

    def __init__(self, spec, model: str, bench, p, *, device: str, cuda_graph: bool, torch, skipped: list[str]):
        self.spec, self.model, self.bench, self.p = spec, model, bench, p
        self.device, self.cuda_graph, self.torch, self.skipped = device, cuda_graph, torch, skipped
        self.decoder = None
        self.hows: set[str] = set()

    def build(self) -> list:
        if self.device == "cuda":
            self.torch.cuda.empty_cache()  # the kernel benchmarks' buffers
        self.decoder = transformer.RandomDecoder(self.spec, device=self.device)
        return []

    def _room(self, phase: str, b: int, length: int) -> bool:
        """Whether the step's KV cache and activations fit in the free GPU memory (else skipped)."""
        if self.device != "cuda":
            return True
        self.torch.cuda.empty_cache()
        free = self.torch.cuda.mem_get_info()[0]
        tokens, out = (b, b) if phase == "decode" else (b * length, b)
        want = (transformer.kv_cache_bytes(self.spec, b, length + (phase == "decode"))
                + transformer.activation_bytes(self.spec, tokens, out) + MEMORY_MARGIN_BYTES)
        if want > free:
            self.skipped.append(f"{phase} B={b} L={length}: needs ~{want / 1e9:.1f} GB, {free / 1e9:.1f} GB free")
            return False
        return True

    def step(self, phase: str, b: int, length: int) -> list:
        if not self._room(phase, b, length):
            return []
        decoder = self.decoder
        try:
            fn, how = transformer.step_callable(decoder, phase=phase, batch=b, length=length,
                                                cuda_graph=self.cuda_graph)
            seconds = kernels.time_s(fn, self.bench, repeats=self.p.step_repeats, flush=False)
        except self.torch.cuda.OutOfMemoryError:
            self.skipped.append(f"{phase} B={b} L={length}: out of GPU memory")
            return []
        if phase == "decode":
            self.hows.add(how)
        cols = {"context": length} if phase == "decode" else {"prompt_tokens": length}
        return [self.bench.row(phase, model=self.model, batch=b, tp=1, weight_dtype="bf16", kv_dtype="bf16",
                               measured_s=seconds, note=f"{how}; random weights" + (
                                   f"; {decoder.gqa_mode} GQA" if phase == "prefill"
                                   and decoder.n_kv != decoder.n_heads else ""), **cols)]


def _run_tasks(tasks, *, progress: bool, torch) -> list[Measurement]:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    rows: list[Measurement] = []
    columns = (TextColumn("measure {task.description:<32}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with torch.inference_mode(), Progress(*columns, console=Console(stderr=True), disable=not progress) as bar:
        task = bar.add_task("", total=len(tasks))
        for label, fn in tasks:
            bar.update(task, description=label)
            rows.extend(fn())
            bar.advance(task)
    return rows
