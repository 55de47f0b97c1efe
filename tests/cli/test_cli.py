"""The command line end to end: JSON keys the issue promises, exit code 2 with one line on bad
input (no traceback, nothing written), and the no-argument main job."""

from __future__ import annotations

import json
import math

import pytest
from cli_run import run, run_json




def test_analyze_no_arguments_prints_summary():
    proc = run("analyze", "--mode", "ideal")
    assert proc.returncode == 0, proc.stderr
    for label in ("deepseek-v3", "gb200-nvl72", "latency floor", "balance batch", "bound by batch"):
        assert label in proc.stdout


def test_analyze_json_default_deployment():
    d = run_json("analyze", "--mode", "ideal")
    assert d["model"] == "deepseek-v3" and d["system"] == "gb200-nvl72"
    # weights per chip must fit in a GB200's 186 GB
    assert 0 < d["weights_per_chip_bytes"] <= 186e9
    assert d["decode_at_batch"]["fits"] is True


def test_model_json_keys_deepseek():
    d = run_json("model", "deepseek-v3")
    for key in ("total_params", "active_params", "kv_bytes_per_token", "n_layers", "attention", "is_moe"):
        assert key in d
    assert d["kv_bytes_per_token"] == 70272  # 61 layers x 576 x 2 bytes (SPEC B7)
    assert d["is_moe"] is True and d["n_layers"] == 61


def test_model_json_shows_layer_kinds_and_constant_state():
    """Qwen3.5-397B-A17B: 45 Gated DeltaNet + 15 full-attention layers (layer_types); KV per token
    15 x 2 x 2 x 256 x 2 B; state 45 x (64 x 128 x 128 x 4 B + 3 x 12,288 x 2 B) per sequence."""
    d = run_json("model", "qwen3.5-397b-a17b")
    assert d["layers"]["linear_gated_deltanet"] == 45 and d["layers"]["attention_gqa_full"] == 15
    assert d["layers"]["ffn_moe"] == 60
    assert d["kv_bytes_per_token"] == 30_720
    assert d["state_bytes_per_sequence"] == 45 * (64 * 128 * 128 * 4 + 3 * 12_288 * 2)
    assert d["linear_mixer"]["kind"] == "gated_deltanet" and d["mtp_layers"] == 1
    assert d["params_by_component"]["linear_mixers"] > 0 and d["params_by_component"]["mtp"] > 0
    text = run("model", "nemotron-3-super-120b-a12b").stdout
    assert "linear_mamba2 40" in text and "state per sequence" in text


def test_step_json_keys_and_values():
    d = run_json("step", "--model", "llama-3.1-70b", "--system", "hgx-h100", "--tp", "4", "--batch", "1",
                 "--context", "2048")
    for key in ("compute_s", "memory_s", "comm_s", "step_s", "upper_s", "bound", "tokens_per_s", "weight_bytes",
                "kv_bytes", "flops", "mode"):
        assert key in d
    # batch 1, by hand: weights read = (70,553,706,496 params - 128,256 x 8,192 untied input embedding,
    # only looked up) x 2 B = 139,006,066,688 B; KV read 2,048 x 327,680 B + one token written
    # 327,680 B = 671,416,320 B, split over 4 KV-head shards; all over 4 x 3.35 TB/s.
    expected = 139_006_066_688 / (4 * 3.35e12) + 671_416_320 / 4 / 3.35e12
    assert d["memory_s"] == pytest.approx(expected, rel=1e-9)  # 10.42 ms (PEERS.md: weights alone 10.5 ms)
    assert d["bound"] == "memory" and d["mode"] == "ideal"
    assert d["step_s"] <= d["upper_s"]


def test_step_with_redundant_experts_and_the_busiest_chip():
    """DeepSeek's EP144 needs 32 redundant experts (256 do not divide 144): the error names the flag
    and the count; with them the plan holds 288 slots, and at batch 1 the critical chip reads more
    than the mean chip (issue 18)."""
    proc = run("step", "--model", "deepseek-v3", "--system", "gb200-nvl72", "--ep", "144", "--batch", "1")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip() == ("error: --ep 144: 256 routed experts do not divide evenly over 144 expert groups; "
                                   "use a divisor of 256, or add --redundant-experts 32 (copies filling 288 slots, "
                                   "2 per group)")
    d = run_json("step", "--model", "deepseek-v3", "--system", "gb200-nvl72", "--ep", "144", "--redundant-experts",
                 "32", "--batch", "1")
    assert d["plan"]["redundant_experts"] == 32 and d["plan"]["label"] == "tp1·ep144·pp1·r32"
    assert d["weight_bytes_per_chip"] > d["weight_bytes"] / d["plan"]["chips"]
    # one token, 8 picks over 144 groups of 2 slots: the busiest holds 2 unless all 8 land in different
    # groups (C(144, 8)·2^8 of the C(288, 8) choices); the mean group 8/144 pairs
    busiest = 2 - math.comb(144, 8) * 2 ** 8 / math.comb(288, 8)
    assert d["expert_load_factor"] == pytest.approx(busiest / (8 / 144), rel=1e-9)


def test_prefill_is_compute_bound_at_long_prompt():
    d = run_json("step", "--model", "llama-3.1-8b", "--system", "h100-sxm", "--phase", "prefill", "--batch", "1",
                 "--context", "8192")
    assert d["bound"] == "compute" and d["tokens"] == 8192


def test_batch_json_keys(tmp_path):
    out = tmp_path / "curve.png"
    d = run_json("batch", "--model", "llama-3.1-8b", "--system", "h100-sxm", "--plot", str(out))
    for key in ("balance_batch", "latency_floor_s", "hbm_drain_s", "no_batching_cost_ratio", "curve"):
        assert key in d
    assert out.stat().st_size > 10_000
    assert d["hbm_drain_s"] == pytest.approx(81_559 * 2**20 / 3.35e12)  # the 81,559 MiB the device exposes


def test_catalog_json():
    assert len(run_json("catalog", "models")["models"]) >= 20
    names = {s["name"] for s in run_json("catalog", "systems")["systems"]}
    assert {"hgx-h100", "gb200-nvl72", "tpu-v5p-64"} <= names
    assert any(a["name"] == "h100-sxm" for a in run_json("catalog", "accelerators")["accelerators"])


@pytest.mark.parametrize("args, needle", [
    (("step", "--model", "llama-3.1-7b"), "did you mean 'llama-3.1-70b'"),
    (("step", "--system", "hgx-h10"), "did you mean 'hgx-h100'"),
    (("step", "--batch", "0"), "--batch"),
    (("step", "--batch", "-3"), "--batch"),
    (("step", "--context", "-1"), "--context"),
    (("step", "--weight-dtype", "fp9"), "did you mean 'fp8'"),
    (("step", "--kv-dtype", "int3"), "unknown dtype"),
    (("step", "--model", "llama-3.1-70b", "--system", "h100-sxm", "--tp", "1"), "does not fit"),
    (("step", "--model", "llama-3.1-8b", "--system", "h100-sxm", "--batch", "100000", "--context", "100000"),
     "per chip"),
    (("step", "--model", "llama-3.1-70b", "--system", "hgx-h100", "--tp", "3"), "--tp 3"),
    (("step", "--model", "llama-3.1-70b", "--system", "hgx-h100", "--ep", "2"), "dense"),
    (("step", "--model", "llama-3.1-70b", "--system", "mi300x-8", "--tp", "16"), "needs 16 chips"),
    (("step", "--model", "llama-3.1-8b", "--system", "rubin", "--mode", "calibrated"), "bf16 peak is unpublished"),
    (("model", "/no/such/config.json"), "no such file"),
])
def test_bad_input_exits_2_with_one_line(args, needle):
    proc = run(*args)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    assert needle in lines[0]
    assert "Traceback" not in proc.stderr and proc.stdout == ""


def _write(tmp_path, config: dict) -> str:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    return str(path)


BASE = {"architectures": ["LlamaForCausalLM"], "hidden_size": 4096, "num_hidden_layers": 32,
        "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 128256,
        "torch_dtype": "bfloat16", "tie_word_embeddings": False}


@pytest.mark.parametrize("mutate, needle", [
    (lambda c: c.pop("num_hidden_layers"), "missing required field 'num_hidden_layers'"),
    (lambda c: c.update(num_hidden_layers="32"), "'num_hidden_layers' must be int"),
    (lambda c: c.update(num_key_value_heads=5), "not divisible"),
    (lambda c: c.update(num_hiden_layers=3), "did you mean 'num_hidden_layers'"),
    (lambda c: c.update(hidden_size=-4096), "'hidden_size' must be >= 1"),
])
def test_malformed_config_json(tmp_path, mutate, needle):
    config = dict(BASE)
    mutate(config)
    proc = run("model", _write(tmp_path, config))
    assert proc.returncode == 2
    assert needle in proc.stderr and "Traceback" not in proc.stderr


def test_config_json_not_json(tmp_path):
    path = tmp_path / "config.json"
    path.write_text("{not json")
    proc = run("model", str(path))
    assert proc.returncode == 2 and "not valid JSON" in proc.stderr


def test_user_config_path_works(tmp_path):
    d = run_json("model", _write(tmp_path, BASE))
    # Llama-3.1-8B shape: 8.03B parameters (model card: 8B)
    assert d["total_params"] == pytest.approx(8.03e9, rel=0.001)


def test_bad_plot_path_writes_nothing(tmp_path):
    target = tmp_path / "missing" / "x.png"
    proc = run("batch", "--model", "llama-3.1-8b", "--system", "h100-sxm", "--plot", str(target))
    assert proc.returncode == 2 and not target.exists()
    proc = run("batch", "--model", "llama-3.1-8b", "--system", "h100-sxm", "--plot", str(tmp_path / "x.txt"))
    assert proc.returncode == 2 and not (tmp_path / "x.txt").exists()
