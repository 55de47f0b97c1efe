"""``llmecon measure``: the error lines without torch / without CUDA, the cpu smoke run end to end
(CSV read back by ``measurements.read_csv``), the random-weight decoder against the model spec
(parameter count = ``Model.params.total``; decode with a KV cache = prefill), GPU-name mapping.
GPU runs are marked and skipped without CUDA."""

from __future__ import annotations

import json
import sys

import pytest

from llmecon.catalog.hardware import get_accelerator, get_system
from llmecon.catalog.models import get_model
from llmecon.cli import main
from llmecon.errors import SpecError
from llmecon.catalog.hf_config import model_from_hf_config
from llmecon.fidelity.measure import runner, transformer
from llmecon.fidelity.measurements import read_csv

TINY = {"architectures": ["LlamaForCausalLM"], "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
        "num_key_value_heads": 2, "intermediate_size": 96, "vocab_size": 128, "tie_word_embeddings": False,
        "torch_dtype": "bfloat16"}


def _cuda() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


needs_gpu = pytest.mark.skipif(not _cuda(), reason="needs a CUDA GPU")


def _cli(capsys, *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as info:
        main(list(args))
    out, err = capsys.readouterr()
    return info.value.code, out, err


@pytest.fixture
def tiny_config(tmp_path):
    path = tmp_path / "tiny" / "config.json"
    path.parent.mkdir()
    path.write_text(json.dumps(TINY), encoding="utf-8")
    return path


def test_without_torch_exit_2_with_install_hint(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` now raises ImportError
    code, out, err = _cli(capsys, "measure", "--out", str(tmp_path / "m.csv"))
    assert code == 2
    assert err.strip() == 'error: llmecon measure needs PyTorch: pip install -e ".[torch]"'
    assert not (tmp_path / "m.csv").exists()


def test_without_cuda_exit_2(tmp_path, capsys, monkeypatch):
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    code, out, err = _cli(capsys, "measure", "--out", str(tmp_path / "m.csv"), "--quick")
    assert code == 2
    assert err.strip() == ("error: llmecon measure needs a CUDA GPU (torch.cuda.is_available() is False); use "
                           "--device cpu only for a smoke run")
    assert "Traceback" not in err and not (tmp_path / "m.csv").exists()


def test_cpu_smoke_run_writes_a_readable_csv(tmp_path, tiny_config, capsys):
    pytest.importorskip("torch")
    out = tmp_path / "m.csv"
    code, stdout, err = _cli(capsys, "measure", "--device", "cpu", "--model", str(tiny_config), "--out", str(out),
                             "--profile-out", str(tmp_path / "p.toml"), "--json")
    assert code == 0, err
    summary = json.loads(stdout)
    rows = read_csv(out)
    kinds = {r.kind for r in rows}
    assert kinds == {"copy", "gemm", "elementwise", "decode", "prefill"}
    assert summary["rows"] == len(rows) and summary["by_kind"]["decode"] == 2
    assert all("cpu smoke run, not for calibration" in r.note for r in rows)
    assert all(r.source == "llmecon measure" and r.torch and r.date for r in rows)
    gemm_shapes = {(r.n, r.k) for r in rows if r.kind == "gemm"}
    assert gemm_shapes == {(128, 64), (64, 96)}  # fused qkv: (H + 2 H_kv)·hd = (4 + 4)·16 = 128; down: d x F
    decode = [r for r in rows if r.kind == "decode"]
    assert {(r.batch, r.context, r.tp, r.weight_dtype) for r in decode} == {(1, 8, 1, "bf16"), (2, 8, 1, "bf16")}
    prefill = [r for r in rows if r.kind == "prefill"]
    assert {(r.batch, r.prompt_tokens) for r in prefill} == {(1, 8), (2, 16)}
    copy = [r for r in rows if r.kind == "copy"][0]
    assert copy.bytes == 2 * 64 * 2**10  # read + written
    assert not (tmp_path / "p.toml").exists() and "not for calibration" in summary["profile"]


def test_cli_rejects_moe_and_bad_out(tmp_path, capsys):
    pytest.importorskip("torch")
    out = str(tmp_path / "m.csv")
    code, _, err = _cli(capsys, "measure", "--device", "cpu", "--model", "mixtral-8x7b", "--out", out)
    assert code == 2 and "measure supports dense GQA models" in err and "mixtral-8x7b: MoE" in err
    code, _, err = _cli(capsys, "measure", "--device", "cpu", "--out", str(tmp_path / "m.txt"))
    assert code == 2 and "--out" in err


def test_cpu_refuses_a_large_model(capsys, tmp_path):
    pytest.importorskip("torch")
    with pytest.raises(SpecError, match="tiny configs"):
        runner.run(model="llama-3.1-8b", device="cpu", progress=False)


@pytest.mark.parametrize("arch,extra", [("LlamaForCausalLM", {}), ("Qwen3ForCausalLM", {"head_dim": 32}),
                                        ("Qwen2ForCausalLM", {}), ("PhiForCausalLM", {}),
                                        ("Gemma3ForCausalLM", {"sliding_window": 512})])
def test_decoder_matches_the_model_spec(arch, extra):
    """Same parameter count as llmecon counts; one decode step with the cache filled by a prefill of
    T-1 tokens gives the logits of a prefill of T tokens (float32); K/V expansion = native GQA."""
    torch = pytest.importorskip("torch")
    model = model_from_hf_config({**TINY, "architectures": [arch], **extra}, name=arch)
    dec = transformer.RandomDecoder(model, device="cpu", dtype=torch.float32)
    assert dec.param_count() == model.params.total
    tokens = torch.randint(0, 128, (2, 7), generator=torch.Generator().manual_seed(0))
    with torch.inference_mode():
        full = dec.prefill(tokens, dec.alloc_cache(2, 7))
        cache = dec.alloc_cache(2, 7)
        dec.prefill(tokens[:, :6], cache)
        step = dec.decode(tokens[:, 6], 6, cache)
        dec.gqa_mode = "expanded"
        expanded = dec.prefill(tokens, dec.alloc_cache(2, 7))
    assert full.shape == (2, 128)
    torch.testing.assert_close(step, full, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(expanded, full, rtol=1e-5, atol=1e-5)


def test_supported_models():
    for name in ("llama-3.1-8b", "qwen3-8b", "llama-2-7b", "qwen3-32b", "mistral-7b-v0.1"):
        transformer.check_supported(get_model(name))
    for name in ("deepseek-v3", "qwen3-30b-a3b", "gpt-oss-20b"):
        with pytest.raises(SpecError, match=f"measure supports dense GQA models.*got {name}"):
            transformer.check_supported(get_model(name))
    assert transformer.max_length(get_model("llama-3.1-8b")) is None
    assert transformer.max_length(get_model("gemma-3-27b")) == 1024


def test_gemm_shapes_are_the_fused_projections():
    m = get_model("llama-3.1-8b")  # d 4096, 32 heads, 8 KV heads, hd 128, F 14336
    assert transformer.gemm_shapes(m) == (("qkv", 6144, 4096), ("o", 4096, 4096), ("gate_up", 28672, 4096),
                                          ("down", 4096, 14336), ("lm_head", 128256, 4096))
    # 2 * 32 layers * 8 KV heads * 128 dims * 2 bytes = 131072 B per token (the model's own count)
    assert transformer.kv_cache_bytes(m, 1, 1) == m.kv_bytes_per_token() == 131072


@pytest.mark.parametrize("name,memory,expected", [
    ("NVIDIA H100 80GB HBM3", 85.0e9, ("h100-sxm", "hgx-h100")),
    ("NVIDIA H100 SXM5 80GB", 85.0e9, ("h100-sxm", "hgx-h100")),
    ("NVIDIA H200", 150.0e9, ("h200", "hgx-h200")),
    ("NVIDIA A100-SXM4-80GB", 85.0e9, ("a100-80gb", "hgx-a100")),
    ("NVIDIA B200", 190.0e9, ("b200", "hgx-b200")),
    ("NVIDIA H100 PCIe", 85.0e9, None),
    ("NVIDIA H100 NVL", 100.0e9, None),
    ("NVIDIA A100-SXM4-40GB", 42.0e9, None),
    ("NVIDIA GeForce RTX 4090", 25.0e9, None),
])
def test_gpu_names_map_to_catalogue_ids(name, memory, expected):
    assert runner.match_gpu(name, memory) == expected
    if expected:
        assert get_system(expected[1]).accelerator.name == get_accelerator(expected[0]).name


def test_unknown_gpu_needs_flags():
    env = runner.Environment(device="cuda", gpu_name="NVIDIA GeForce RTX 4090", driver="", torch_version="x",
                             memory_bytes=25e9)
    with pytest.raises(SpecError, match="pass accelerator and system"):
        runner.resolve_targets(env, None, None)
    assert runner.resolve_targets(env, None, "hgx-h100") == ("h100-sxm", "hgx-h100")
    assert runner.resolve_targets(env, "h200", "hgx-h200") == ("h200", "hgx-h200")
    with pytest.raises(SpecError, match="has h100-sxm chips"):
        runner.resolve_targets(env, "h200", "hgx-h100")


@needs_gpu
def test_gpu_quick_run(tmp_path, capsys):
    """On a GPU: the quick preset writes copy, gemm, elementwise, decode and prefill rows whose
    best copy bandwidth is a plausible share of the datasheet (when the GPU is catalogued)."""
    out = tmp_path / "m.csv"
    code, stdout, err = _cli(capsys, "measure", "--quick", "--out", str(out), "--json")
    assert code == 0, err
    rows = read_csv(out)
    assert {"copy", "gemm", "elementwise", "decode", "prefill"} <= {r.kind for r in rows}
    share = json.loads(stdout)["headline"].get("copy_hbm_share")
    assert share is None or 0.3 < share <= 1.05


def test_sliding_window_points_past_the_window_are_skipped(tmp_path):
    pytest.importorskip("torch")
    path = tmp_path / "gemma.json"
    path.write_text(json.dumps({**TINY, "architectures": ["Gemma3ForCausalLM"], "sliding_window": 8}))
    result = runner.run(model=str(path), device="cpu", progress=False)
    steps = [(r.kind, r.batch, r.context or r.prompt_tokens) for r in result.rows if r.kind in ("decode", "prefill")]
    assert steps == [("prefill", 1, 8)]  # decode at context 8 attends 9 > 8; prefill of 16 > 8
    assert sum("sliding window (8)" in line for line in result.skipped) == 3


def test_profile_out_uses_calibrate_fit_profile_when_present(tmp_path, tiny_config, monkeypatch):
    """``--profile-out`` calls ``llmecon.fidelity.calibrate.fit_profile`` (imported lazily) with the keyword
    arguments it accepts and writes ``as_toml()``; without it, a note and no file."""
    import types

    from llmecon.commands.measure import fit_profile as _fit_profile

    pytest.importorskip("torch")
    result = runner.run(model=str(tiny_config), device="cpu", accelerator="h100-sxm", system="hgx-h100",
                        progress=False)
    seen = {}

    class Profile:
        def as_toml(self):
            return 'name = "x"\n'

    def fit_profile(rows, *, name, accelerators, derivation=""):
        seen.update(rows=len(rows), name=name, accelerators=accelerators, derivation=derivation)
        return Profile(), {"kernels": {}}

    monkeypatch.setitem(sys.modules, "llmecon.fidelity.calibrate", types.SimpleNamespace(fit_profile=fit_profile))
    line = _fit_profile(result, tmp_path / "p.toml")
    assert line == f"wrote profile {tmp_path / 'p.toml'}" and (tmp_path / "p.toml").read_text() == 'name = "x"\n'
    assert seen["rows"] == len(result.rows) and seen["accelerators"] == ("h100-sxm",)
    assert "cpu (" in seen["derivation"] and "torch" in seen["derivation"]
    monkeypatch.setitem(sys.modules, "llmecon.fidelity.calibrate", types.SimpleNamespace())
    line = _fit_profile(result, tmp_path / "q.toml")
    assert line.startswith("note: no profile written") and not (tmp_path / "q.toml").exists()
