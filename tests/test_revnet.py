"""Reversible networks (SPEC F24, llmecon.revnet): exact inverse, gradients equal to the storing
twin (gradcheck, float64 and float32, with dropout replayed), O(1) activation memory in depth,
the 4N-vs-3N recompute structure by call and FLOP counts, and the lecture cases
``revnet_inverse_exact`` / ``revnet_overhead_ratio`` (tests/published/lecture_cases.yaml, a copy
of shared/lecture_cases.yaml; Gomez et al. 2017, arXiv:1707.04585).

Skipped as a whole when PyTorch is not installed (``pip install -e ".[torch]"``).
"""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

import yaml  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from torch import nn  # noqa: E402

from llmecon.errors import SpecError  # noqa: E402
from llmecon.revnet import (ReversibleBlock, ReversibleSequence, ReversibleTransformerBlock,  # noqa: E402
                            count_flops, cuda_memory, measure_overhead, measure_saved_tensors,
                            reversible_transformer, saved_activation_bytes, split_halves, theoretical_overhead)

CASES_FILE = Path(__file__).parent / "published" / "lecture_cases.yaml"
CASES = {c["name"]: c for c in yaml.safe_load(CASES_FILE.read_text(encoding="utf-8"))["acceptance_cases"]}
SRC = str(Path(__file__).resolve().parents[1] / "src")

torch.set_num_threads(min(2, torch.get_num_threads()))


class TanhLinear(nn.Module):
    """tanh(W x), no bias: the F and G of the lecture case."""

    def __init__(self, dim: int, *, dropout: float = 0.0, dtype=torch.float64) -> None:
        super().__init__()
        self.lin = nn.Linear(dim, dim, bias=False, dtype=dtype)
        self.drop = nn.Dropout(dropout)

    def forward(self, x):
        return self.drop(torch.tanh(self.lin(x)))


class Counting(nn.Module):
    """Wraps a module and counts its calls."""

    def __init__(self, inner: nn.Module) -> None:
        super().__init__()
        self.inner, self.calls = inner, 0

    def forward(self, x):
        self.calls += 1
        return self.inner(x)


def _tanh_sequence(depth: int, dim: int, *, dropout: float = 0.0, dtype=torch.float64, **kw) -> ReversibleSequence:
    return ReversibleSequence([ReversibleBlock(TanhLinear(dim, dropout=dropout, dtype=dtype),
                                               TanhLinear(dim, dropout=dropout, dtype=dtype))
                               for _ in range(depth)], **kw)


def _grads(seq: ReversibleSequence, fn, x: torch.Tensor, seed: int, dy: torch.Tensor):
    """Output, input grad and parameter grads (via torch.autograd.grad) of fn(x) under ``seed``."""
    torch.manual_seed(seed)
    out = fn(x)
    grads = torch.autograd.grad(out, (x, *seq.parameters()), dy)
    return out.detach(), grads


def _run_python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": SRC, "PATH": "/usr/bin:/bin"})


# ----------------------------------------------------------------------------- packaging

def test_import_llmecon_does_not_import_torch():
    proc = _run_python("import sys, llmecon; print('torch' in sys.modules)")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "False"


def test_missing_torch_gives_install_hint():
    proc = _run_python("import sys; sys.modules['torch'] = None\n"
                       "try:\n    import llmecon.revnet\nexcept ImportError as e:\n    print(e)")
    assert proc.returncode == 0, proc.stderr
    assert "pip install torch==2.13.0" in proc.stdout and '.[torch]' in proc.stdout
    assert len(proc.stdout.strip().splitlines()) == 1


# ----------------------------------------------------------------------------- lecture cases

def test_lecture_revnet_inverse_exact():
    """F = tanh(W1 x), G = tanh(W2 x), float64, dim 64, seed 0: inverse reconstructs the input."""
    case = CASES["revnet_inverse_exact"]
    inp, bound = case["inputs"], case["expected"]["max_abs_reconstruction_error_lt"]
    assert inp["dtype"] == "float64"
    torch.manual_seed(inp["seed"])
    dim = inp["dim"]
    block = ReversibleBlock(TanhLinear(dim), TanhLinear(dim))
    x1, x2 = torch.randn(8, dim, dtype=torch.float64), torch.randn(8, dim, dtype=torch.float64)
    with torch.no_grad():
        y1, y2 = block(x1, x2)
        r1, r2 = block.inverse(y1, y2)
    assert (y1 - x1).abs().max() > 0.1  # the block does something
    err = max((r1 - x1).abs().max().item(), (r2 - x2).abs().max().item())
    assert err < bound


def test_lecture_revnet_overhead_ratio():
    case = CASES["revnet_overhead_ratio"]
    got = theoretical_overhead(**case["inputs"])
    assert got == pytest.approx(case["expected"]["overhead"], rel=case["tolerance"]["rel"])


def test_theoretical_overhead_hand_values():
    assert theoretical_overhead() == pytest.approx(1 / 3, rel=1e-12)
    # Without recomputation the overhead vanishes; recomputing twice doubles it.
    assert theoretical_overhead(recompute_ops=0) == 0.0
    assert theoretical_overhead(recompute_ops=2) == pytest.approx(2 / 3, rel=1e-12)


def test_sequence_inverse_depth8_float64():
    torch.manual_seed(3)
    seq = reversible_transformer(8, 16, 2, dtype=torch.float64)
    x = torch.randn(2, 7, 32, dtype=torch.float64)
    with torch.no_grad():
        y = seq(x)
        assert (y - x).abs().max() > 0.1
        assert (seq.inverse(y) - x).abs().max().item() < 1e-12


# ----------------------------------------------------------------------------- gradients

def test_gradcheck_tanh_blocks():
    torch.manual_seed(0)
    seq = _tanh_sequence(3, 4)
    x = torch.randn(2, 8, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(seq, (x,), eps=1e-6, atol=1e-8)


def test_gradcheck_transformer():
    torch.manual_seed(0)
    seq = reversible_transformer(2, 8, 2, dtype=torch.float64).eval()
    x = torch.randn(1, 4, 16, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(seq, (x,), eps=1e-6, atol=1e-8)


@pytest.mark.parametrize("dropout", [0.0, 0.2])
def test_transformer_grads_equal_twin_float64(dropout):
    """Input and parameter gradients equal the storing twin's; with dropout, the RNG replay makes
    the recomputed masks equal to the forward's (same seed for both runs)."""
    torch.manual_seed(1)
    seq = reversible_transformer(3, 16, 2, dropout=dropout, dtype=torch.float64).train()
    x = torch.randn(2, 5, 32, dtype=torch.float64, requires_grad=True)
    dy = torch.randn(2, 5, 32, dtype=torch.float64)
    out_std, g_std = _grads(seq, seq.forward_standard, x, 7, dy)
    out_rev, g_rev = _grads(seq, seq, x, 7, dy)
    assert torch.equal(out_std, out_rev)
    for a, b in zip(g_std, g_rev):
        torch.testing.assert_close(b, a, rtol=0, atol=1e-10)
    if dropout:
        out_other, _ = _grads(seq, seq.forward_standard, x, 8, dy)
        assert not torch.equal(out_other, out_std), "dropout must be active for this test to mean anything"


def test_without_rng_replay_dropout_grads_differ():
    """The check above can fail: turning the replay off makes recomputed dropout masks differ."""
    torch.manual_seed(1)
    seq = reversible_transformer(2, 16, 2, dropout=0.2, dtype=torch.float64, preserve_rng_state=False).train()
    x = torch.randn(2, 5, 32, dtype=torch.float64, requires_grad=True)
    dy = torch.randn(2, 5, 32, dtype=torch.float64)
    _, g_std = _grads(seq, seq.forward_standard, x, 7, dy)
    _, g_rev = _grads(seq, seq, x, 7, dy)
    assert max((a - b).abs().max().item() for a, b in zip(g_std, g_rev)) > 1e-3


def test_backward_leaves_global_rng_where_forward_left_it():
    seq = reversible_transformer(2, 16, 2, dropout=0.1)
    x = torch.randn(2, 5, 32)
    torch.manual_seed(0)
    out = seq(x)
    state = torch.get_rng_state()
    out.sum().backward()
    assert torch.equal(torch.get_rng_state(), state)


def test_optimizer_sees_parameter_grads():
    """Gradients reach ``.grad`` through ``loss.backward()`` and an SGD step moves every parameter."""
    torch.manual_seed(2)
    seq = reversible_transformer(2, 16, 2)
    x = torch.randn(2, 5, 32)
    seq(x).pow(2).mean().backward()
    before = [p.detach().clone() for p in seq.parameters()]
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in seq.parameters())
    torch.optim.SGD(seq.parameters(), lr=0.1).step()
    assert all(not torch.equal(a, p) for a, p in zip(before, seq.parameters()))


def test_float32_transformer_grads_match_twin():
    """float32, depth 8: reconstruction rounding makes the gradients differ from the twin's by
    rounding only; stated tolerance rtol 1e-4, atol 1e-5 (observed: max abs difference 4.8e-6
    with gradients up to 24)."""
    torch.manual_seed(4)
    seq = reversible_transformer(8, 32, 4, dropout=0.1)
    x = torch.randn(2, 16, 64, requires_grad=True)
    dy = torch.randn(2, 16, 64)
    out_std, g_std = _grads(seq, seq.forward_standard, x, 11, dy)
    out_rev, g_rev = _grads(seq, seq, x, 11, dy)
    torch.testing.assert_close(out_rev, out_std, rtol=0, atol=0)
    for a, b in zip(g_std, g_rev):
        torch.testing.assert_close(b, a, rtol=1e-4, atol=1e-5)


def test_shared_module_grads_accumulate():
    """One F module used by every block (weight tying): its gradient sums over the blocks."""
    torch.manual_seed(5)
    f = TanhLinear(4)
    seq = ReversibleSequence([ReversibleBlock(f, TanhLinear(4)) for _ in range(3)])
    x = torch.randn(3, 8, dtype=torch.float64, requires_grad=True)
    dy = torch.randn(3, 8, dtype=torch.float64)
    _, g_std = _grads(seq, seq.forward_standard, x, 0, dy)
    _, g_rev = _grads(seq, seq, x, 0, dy)
    assert len(list(seq.parameters())) == 4  # f once + three G's
    for a, b in zip(g_std, g_rev):
        torch.testing.assert_close(b, a, rtol=0, atol=1e-12)


@settings(max_examples=15, deadline=None)
@given(depth=st.integers(1, 4), dim=st.integers(1, 6), batch=st.integers(1, 3), seed=st.integers(0, 2**16),
       dropout=st.sampled_from([0.0, 0.3]))
def test_property_grads_equal_twin(depth, dim, batch, seed, dropout):
    torch.manual_seed(seed)
    seq = _tanh_sequence(depth, dim, dropout=dropout)
    x = torch.randn(batch, 2 * dim, dtype=torch.float64, requires_grad=True)
    dy = torch.randn(batch, 2 * dim, dtype=torch.float64)
    out_std, g_std = _grads(seq, seq.forward_standard, x, seed, dy)
    out_rev, g_rev = _grads(seq, seq, x, seed, dy)
    assert torch.equal(out_std, out_rev)
    for a, b in zip(g_std, g_rev):
        torch.testing.assert_close(b, a, rtol=0, atol=1e-12)


# ----------------------------------------------------------------------------- memory

def test_saved_activation_bytes_constant_in_depth():
    """Reversible: only the final (y1, y2) are saved (batch*seq*2d*4 bytes, any depth). Twin:
    grows linearly, twin(16)/twin(2) ~ 8."""
    batch, seq_len, d = 2, 8, 16
    x = torch.randn(batch, seq_len, 2 * d)
    rev, std = {}, {}
    for depth in (2, 4, 8, 16):
        torch.manual_seed(depth)
        model = reversible_transformer(depth, d, 2)
        rev[depth] = saved_activation_bytes(model, x)
        std[depth] = saved_activation_bytes(model.forward_standard, x)
    assert set(rev.values()) == {batch * seq_len * 2 * d * 4}
    assert std[16] / std[2] == pytest.approx(8, rel=0.1)
    assert std[4] < std[8] < std[16]
    assert std[2] > 10 * rev[2]


def test_saved_weights_are_not_activations():
    """A single Linear saves its input (for dW) and, as x needs a gradient, its weight (for dx):
    the weight is not an activation."""
    lin = nn.Linear(8, 4)
    x = torch.randn(5, 8, requires_grad=True)
    got = measure_saved_tensors(lin, x)
    assert got.activation_bytes == 5 * 8 * 4
    assert got.weight_bytes == 4 * 8 * 4
    # Without the module's weights listed, the weight counts as an activation.
    assert saved_activation_bytes(lambda t: lin(t), x) == 5 * 8 * 4 + 4 * 8 * 4


def test_shared_storage_counts_once():
    x = torch.randn(4, 6, requires_grad=True)
    a, b = x[:, :3], x[:, 3:]
    got = measure_saved_tensors(lambda: (a * b).sum(), weights=())  # mul saves both views of x
    assert got.n_saved == 2 and got.n_storages == 1
    assert got.activation_bytes == 4 * 6 * 4


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device: cuda_memory path not exercised")
def test_cuda_memory_and_grads():
    torch.manual_seed(0)
    seq = reversible_transformer(8, 64, 4, dropout=0.1, device="cuda")
    x = torch.randn(4, 64, 128, device="cuda", requires_grad=True)
    dy = torch.randn_like(x)
    _, g_std = _grads(seq, seq.forward_standard, x, 3, dy)
    _, g_rev = _grads(seq, seq, x, 3, dy)
    for a, b in zip(g_std, g_rev):
        torch.testing.assert_close(b, a, rtol=1e-3, atol=1e-4)
    std, rev = cuda_memory(seq.forward_standard, x), cuda_memory(seq, x)
    assert rev.after_forward_bytes < std.after_forward_bytes / 4


def test_cuda_memory_needs_cuda_tensor():
    with pytest.raises(SpecError, match="x: cuda_memory needs"):
        cuda_memory(lambda t: t, torch.zeros(2))


# ----------------------------------------------------------------------------- overhead

def test_call_counts_show_one_recompute():
    """Forward calls F and G once per block; backward recomputes each once more (4N vs 3N with
    backward ~ 2 forwards). The twin calls each once."""
    depth = 3
    blocks = [ReversibleBlock(Counting(TanhLinear(4)), Counting(TanhLinear(4))) for _ in range(depth)]
    seq = ReversibleSequence(blocks)
    x = torch.randn(2, 8, dtype=torch.float64, requires_grad=True)
    out = seq(x)
    assert [b.f.calls for b in blocks] == [1] * depth and [b.g.calls for b in blocks] == [1] * depth
    out.sum().backward()
    assert [b.f.calls for b in blocks] == [2] * depth and [b.g.calls for b in blocks] == [2] * depth
    seq.forward_standard(x).sum().backward()
    assert [b.f.calls for b in blocks] == [3] * depth


def test_flop_overhead_is_one_third_for_matmul_blocks():
    """Matmul-only blocks: forward N, backward 2N, recompute N -> counted overhead exactly 1/3."""
    torch.manual_seed(0)
    seq = _tanh_sequence(4, 8)
    x = torch.randn(3, 16, dtype=torch.float64, requires_grad=True)
    got = count_flops(seq, x)
    per_linear = 2 * 3 * 8 * 8  # 2*m*n*k FLOPs, 8 linears
    assert got.standard_flops == 8 * 3 * per_linear
    assert got.reversible_flops == 8 * 4 * per_linear
    assert got.overhead == pytest.approx(theoretical_overhead(), rel=1e-12)


def test_flop_overhead_transformer_hand_computed():
    """Per block forward matmul FLOPs M = 2*B*T*(3d^2 + d^2 + 2*d*4d) and attention A = 4*B*T^2*d
    (QK^T and PV, mask ignored); torch counts the flash backward as 5 bmm = 2.5 A. Twin:
    L*(3M + 3.5A); reversible: L*(4M + 4.5A), so the overhead is slightly below 1/3."""
    b, t, d, depth = 2, 16, 32, 3
    torch.manual_seed(0)
    seq = reversible_transformer(depth, d, 4, dtype=torch.float64)
    x = torch.randn(b, t, 2 * d, dtype=torch.float64, requires_grad=True)
    m = 2 * b * t * (3 * d * d + d * d + 2 * d * 4 * d)
    a = 4 * b * t * t * d
    got = count_flops(seq, x)
    assert got.standard_flops == depth * (3 * m + 3.5 * a)
    assert got.reversible_flops == depth * (4 * m + 4.5 * a)
    assert 0.3 < got.overhead < theoretical_overhead()


def test_measure_overhead_runs():
    """Timing is noisy on CI: only check that the figures are finite, no bound on time."""
    torch.manual_seed(0)
    seq = reversible_transformer(2, 16, 2)
    got = measure_overhead(seq, torch.randn(2, 8, 32), repeats=3, warmup=1)
    assert all(math.isfinite(x) for x in (got.standard_s, got.reversible_s, got.measured_overhead))
    assert got.theoretical_overhead == pytest.approx(1 / 3)
    assert all(p.grad is None for p in seq.parameters())


# ----------------------------------------------------------------------------- bad input

def test_odd_last_dimension_is_spec_error():
    seq = _tanh_sequence(1, 2)
    with pytest.raises(SpecError, match=r"x: the last dimension .* must be even, got shape \(2, 5\)"):
        seq(torch.randn(2, 5, dtype=torch.float64))
    with pytest.raises(SpecError, match="even"):
        split_halves(torch.tensor(1.0))


def test_bad_specs():
    with pytest.raises(SpecError, match="blocks: .* at least one"):
        ReversibleSequence([])
    with pytest.raises(SpecError, match=r"blocks\[0\]: must be a ReversibleBlock"):
        ReversibleSequence([nn.Linear(2, 2)])
    with pytest.raises(SpecError, match="n_heads: d_model=10 must be divisible by n_heads=4"):
        ReversibleTransformerBlock(10, 4)
    with pytest.raises(SpecError, match="depth"):
        reversible_transformer(0, 8, 2)
    with pytest.raises(SpecError, match="dropout"):
        reversible_transformer(1, 8, 2, dropout=1.0)
    with pytest.raises(SpecError, match="forward_ops"):
        theoretical_overhead(forward_ops=0)
    with pytest.raises(SpecError, match="repeats"):
        measure_overhead(reversible_transformer(1, 8, 2), torch.randn(1, 2, 16), repeats=0)


def test_shape_changing_f_is_spec_error():
    block = ReversibleBlock(nn.Linear(4, 3, dtype=torch.float64), TanhLinear(4))
    with pytest.raises(SpecError, match=r"f: output shape \(2, 3\) must equal"):
        ReversibleSequence([block])(torch.randn(2, 8, dtype=torch.float64))


def test_attention_rejects_wrong_rank():
    seq = reversible_transformer(1, 8, 2)
    with pytest.raises(SpecError, match=r"x: attention expects \(batch, seq, 8\)"):
        seq(torch.randn(4, 16))
