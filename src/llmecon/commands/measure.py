"""The ``measure`` command: microbenchmarks on a CUDA GPU with PyTorch (``fidelity.measure.runner.run``),
written as a measurement CSV and, where ``fidelity.calibrate`` provides ``fit_profile``, a fitted profile."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from .args import arg

MEASURE_DEFAULT_MODEL = "llama-3.1-8b"


@dataclass(frozen=True)
class MeasureRequest:
    out: Optional[str] = arg(None, "Measurement CSV to write (llmecon.fidelity.measurements format).", required=True)
    profile_out: Optional[str] = arg(None, "Also fit an efficiency profile from the rows and write it (TOML).")
    model: str = arg(MEASURE_DEFAULT_MODEL, "Dense catalogue model or config.json to build with random weights "
                     "(bf16, tp=1, one GPU).", flags=("--model", "-m"))
    quick: bool = arg(False, "A short sweep (< 2 min on an H100) instead of the full one.")
    device: str = arg("cuda", "cuda, or cpu for a smoke run with tiny shapes (tests only; rows are marked not for "
                      "calibration).")
    accelerator: Optional[str] = arg(None, "Catalogue accelerator the rows name (default: detected from the GPU).")
    system: Optional[str] = arg(None, "Catalogue system the step rows name (default: detected from the GPU).",
                                flags=("--system", "-s"))
    eager: bool = arg(False, "Time decode steps eagerly instead of as CUDA-graph replays.")


@dataclass(frozen=True)
class MeasureOutcome:
    result: Any  # fidelity.measure.runner.MeasureResult
    out_path: Path
    profile_line: str
    counts: dict

    def to_dict(self) -> dict:
        r, env = self.result, self.result.env
        return {"out": str(self.out_path), "rows": len(r.rows), "by_kind": self.counts, "model": r.model,
                "preset": r.preset, "device": env.device, "gpu_name": env.gpu_name, "driver": env.driver,
                "torch": env.torch_version, "accelerator": r.accelerator, "system": r.system,
                "decode_timing": r.step_timing, "wall_s": r.wall_s, "headline": r.headline(),
                "skipped": list(r.skipped), "profile": self.profile_line}


def fit_profile(result, path: Path) -> str:
    """Fit and write a profile with ``llmecon.fidelity.calibrate.fit_profile`` where this version has it
    (imported lazily; it is optional here); the returned line says what happened."""
    import importlib
    import inspect

    from ..errors import LlmeconError

    try:
        calibrate = importlib.import_module("llmecon.fidelity.calibrate")
    except ImportError:
        calibrate = None
    fit = getattr(calibrate, "fit_profile", None)
    if fit is None:
        return (f"note: no profile written to {path}: llmecon.fidelity.calibrate.fit_profile is not available in this "
                "version; fit one later from the CSV (llmecon calibrate)")
    env = result.env
    offered = {"name": f"measured-{result.accelerator}",
               "accelerators": (result.accelerator,),
               "derivation": (f"llmecon measure ({result.preset} preset, {len(result.rows)} rows, model "
                              f"{result.model}) on {env.gpu_name} ({env.driver or 'driver unknown'}; torch "
                              f"{env.torch_version}), {result.rows[0].date}")}
    params = inspect.signature(fit).parameters
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    try:
        answer = fit(list(result.rows), **{k: v for k, v in offered.items() if takes_any or k in params})
    except LlmeconError as exc:
        return f"note: no profile written to {path}: {exc}"
    for obj in answer if isinstance(answer, tuple) else (answer,):
        text = obj.as_toml() if hasattr(obj, "as_toml") else obj.to_toml() if hasattr(obj, "to_toml") else None
        if isinstance(text, str):
            from ..files import write_text

            write_text(path, text)
            return f"wrote profile {path}"
    return f"note: no profile written to {path}: fit_profile returned {type(answer).__name__}, which has no as_toml()"



def measure(req: MeasureRequest, *, progress: bool = True) -> MeasureOutcome:
    """Check the output paths, run the sweep, write the CSV (and the profile)."""
    from ..errors import SpecError
    from ..fidelity.measure.runner import run
    from ..fidelity.measurements import write_csv
    from ..files import check_output

    out_path = check_output(req.out, field="out", suffixes=(".csv",))
    if req.profile_out is not None:
        check_output(req.profile_out, field="profile_out", suffixes=(".toml",))
    result = run(model=req.model, device=req.device, preset="quick" if req.quick else "full",
                 accelerator=req.accelerator, system=req.system, cuda_graph=not req.eager, progress=progress)
    if not result.rows:
        raise SpecError("no measurement fitted in GPU memory; nothing written")
    write_csv(result.rows, out_path)
    if req.profile_out is None:
        profile_line = ""
    elif req.device == "cpu":
        profile_line = f"note: no profile written to {req.profile_out}: a cpu smoke run is not for calibration"
    else:
        profile_line = fit_profile(result, Path(req.profile_out))
    counts: dict[str, int] = {}
    for r in result.rows:
        counts[r.kind] = counts.get(r.kind, 0) + 1
    return MeasureOutcome(result, out_path, profile_line, counts)
