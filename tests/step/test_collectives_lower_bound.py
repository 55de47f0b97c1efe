"""An ideal collective is a lower bound (issue 18, item 5).

Ideal mode prices one collective as ``alpha + f·S/BW``: the link's per-operation latency floor
once (not once per ring step) plus the bytes on the busiest port at the peak bandwidth, with the
fastest algorithm the link supports (in-switch reduction, NVLS, where it has it). Calibrated mode
adds the profile's per-call overhead and per-step latency on top.

1. Hand-computed cases on the catalogue's HGX H100 NVLink (450 GB/s per direction, floor 2 us,
   NVLink SHARP), exact; each fails on the old per-step pricing (7.6 us per ring step: 171.6 us
   for the 16 MiB ring, 7.6 us for the small one-shot).
2. Every measured row we have, for the systems the catalogue has, is at or above its ideal:
   aiconfigurator's NCCL tables (all-reduce, all-gather, reduce-scatter, all-to-all; fp16 and
   int8) and framework all-reduces (TensorRT-LLM, SGLang, vLLM; CUDA graph and eager) on
   h100_sxm -> hgx-h100, h200_sxm -> hgx-h200, b200_sxm -> hgx-b200, gb200 -> gb200-nvl72,
   gb300 -> gb300-nvl72 (b300_sxm has no catalogue system), and vidur's NCCL all-reduce and
   send/recv on the H100 and A100 DGX clusters (inside and across nodes). A row below its ideal
   means a catalogue bandwidth or latency is wrong. 17,595 rows on 2026-11-24; the tightest is a
   vidur H100 send/recv across nodes (466 KiB, 23 us measured, ideal 0.98 of it), the tightest
   aiconfigurator row SGLang's 512 B all-reduce on 2 H200s (2.25 us, ideal 0.89 of it).
The data tests read ``../shared/validation`` and skip, saying why, when it is absent.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from llmecon.catalog import hardware as cat
from llmecon.fidelity import collective_fit as cf
from llmecon.spec.efficiency import IDEAL, EfficiencyProfile, LinkEfficiency
from llmecon.step.collectives import (all_reduce_s, in_switch_all_reduce_s, one_shot_all_reduce_s, p2p_s,
                                      ring_all_reduce_s)
from llmecon.step.kernels import collective_s

EXACT = 1e-9
MIB = 16 * 2 ** 20            # 16,777,216 B
VALIDATION = Path(__file__).resolve().parents[3] / "shared" / "validation"
AIC = VALIDATION / "aiconfigurator" / "kernels"
NETWORK = VALIDATION / "vidur" / "profiling" / "network"


def _f(x) -> float:
    return float(np.asarray(x))


# --- 1. hand-computed, exact ----------------------------------------------------------------------

def test_hgx_h100_nvlink_is_what_the_hand_cases_assume():
    link = cat.get_system("hgx-h100").scale_up
    assert link.bandwidth_bytes_per_s == 450e9 and link.latency_s == 2e-6 and link.step_latency_s == 0.0
    assert link.in_switch_reduction


def test_ring_and_nvls_all_reduce_8_gpus_16_mib():
    """p = 8, S = 16 MiB = 16,777,216 B on 450 GB/s, floor 2 us (one per all-reduce):
      ring      2e-6 + 2·7/8·16,777,216/450e9 = 2e-6 + 29,360,128/450e9 = 2e-6 + 6.5244729e-5 = 6.7244729e-5 s
      in-switch 2e-6 + 16,777,216/450e9                                 = 2e-6 + 3.7282703e-5 = 3.9282703e-5 s
    Ideal mode (best) takes in-switch: 39.3 us against NCCL's 121.9 us measured on 8 H100s
    (aiconfigurator h100_sxm, 8M fp16 elements). The old pricing, 14 ring steps x 7.6 us + 65.2 us
    = 171.6 us, was above the measurement."""
    link = cat.get_system("hgx-h100").scale_up
    ring = 2e-6 + 29_360_128 / 450e9
    nvls = 2e-6 + 16_777_216 / 450e9
    assert _f(ring_all_reduce_s(message_bytes=MIB, participants=8, link=link)) == pytest.approx(ring, rel=EXACT)
    assert _f(in_switch_all_reduce_s(message_bytes=MIB, participants=8, link=link)) == pytest.approx(nvls, rel=EXACT)
    assert _f(all_reduce_s(message_bytes=MIB, participants=8, link=link, algorithm="best")) == pytest.approx(
        nvls, rel=EXACT)
    assert _f(all_reduce_s(message_bytes=MIB, participants=8, link=link)) == pytest.approx(ring, rel=EXACT)  # auto
    assert ring == pytest.approx(6.7244729e-5, rel=1e-7) and nvls == pytest.approx(3.9282703e-5, rel=1e-7)
    # what ideal mode prices for one such all-reduce (no overhead, the fastest algorithm)
    got = collective_s(IDEAL, cat.get_system("hgx-h100"), kind="all_reduce", message_bytes=MIB, participants=8,
                       chips_per_node=8)
    assert _f(got) == pytest.approx(nvls, rel=EXACT)


def test_one_shot_small_message():
    """TensorRT-LLM's one-shot all-reduce of 256 bf16 (512 B) on 2 GPUs: 2e-6 + 1·512/450e9 =
    2e-6 + 1.1377778e-9 = 2.0011378e-6 s (measured 2.65 us on H100; the old price was
    7.6 us + 1.1 ns). On 8 GPUs, 8 KiB: 2e-6 + 7·8,192/450e9 = 2e-6 + 1.2743111e-7 = 2.1274311e-6 s."""
    link = cat.get_system("hgx-h100").scale_up
    assert _f(one_shot_all_reduce_s(message_bytes=512, participants=2, link=link)) == pytest.approx(
        2e-6 + 512 / 450e9, rel=EXACT)
    assert _f(one_shot_all_reduce_s(message_bytes=8192, participants=8, link=link)) == pytest.approx(
        2e-6 + 57_344 / 450e9, rel=EXACT)
    assert 2e-6 + 512 / 450e9 == pytest.approx(2.0011378e-6, rel=1e-7)
    # a send pays the same single floor: 2e-6 + 512/450e9
    assert _f(p2p_s(message_bytes=512, link=link)) == pytest.approx(2e-6 + 512 / 450e9, rel=EXACT)


def test_calibrated_keeps_the_per_step_latency():
    """A toy profile on HGX H100 NVLink: overhead 10 us per call, 1 us per step, 80% of 450 GB/s
    (360 GB/s). Calibrated prices ring or one-shot ("auto") with every step:
      ring     10e-6 + 2e-6 + 14·1e-6 + 29,360,128/360e9 = 2.6e-5 + 8.1555911e-5 = 1.07555911e-4 s <-
      one-shot 10e-6 + 2e-6 + 1e-6 + 7·16,777,216/360e9  = 1.3e-5 + 3.2622e-4
    i.e. 14 us more than the same profile without a step latency."""
    toy = EfficiencyProfile(name="toy", scale_up=LinkEfficiency(op_overhead_s=10e-6, step_latency_s=1e-6,
                                                                 bandwidth_fraction=0.8))
    h100 = cat.get_system("hgx-h100")
    got = collective_s(toy, h100, kind="all_reduce", message_bytes=MIB, participants=8, chips_per_node=8)
    assert _f(got) == pytest.approx(10e-6 + 2e-6 + 14e-6 + 29_360_128 / 360e9, rel=EXACT)
    assert toy.system(h100).scale_up.step_latency_s == 1e-6 and toy.system(h100).scale_up.latency_s == 2e-6
    assert toy.all_reduce_algorithm == "auto" and IDEAL.all_reduce_algorithm == "best"
    flat = EfficiencyProfile(name="flat", scale_up=LinkEfficiency(op_overhead_s=10e-6, bandwidth_fraction=0.8))
    less = collective_s(flat, h100, kind="all_reduce", message_bytes=MIB, participants=8, chips_per_node=8)
    assert _f(got) - _f(less) == pytest.approx(14e-6, rel=1e-6)


# --- 2. every measured row: ideal <= measured -------------------------------------------------------

needs_aic = pytest.mark.skipif(not AIC.is_dir(), reason=f"aiconfigurator's collective tables not present at {AIC} "
                               "(../shared is absent on a fresh clone)")
needs_vidur = pytest.mark.skipif(not NETWORK.is_dir(), reason=f"vidur NCCL profiling not present at {NETWORK} "
                                 "(../shared is absent on a fresh clone)")


def _below(measurements, system) -> tuple[int, float, list[str]]:
    """(rows, largest ideal/measured, the rows whose ideal is above the measurement)."""
    rows, worst, above = 0, 0.0, []
    for m in measurements:
        ratio = cf.predict_rows(m, system, algorithm=IDEAL.all_reduce_algorithm) / m.time_s
        rows += ratio.size
        worst = max(worst, float(ratio.max()))
        above += [f"{m.cluster} {m.op} p={m.participants[i]} {m.size_bytes[i]:.0f} B: measured "
                  f"{m.time_s[i] * 1e6:.3g} us, ideal {ratio[i]:.3f}x that" for i in np.flatnonzero(ratio > 1.0)]
    return rows, worst, above


# rows per chip: NCCL 504 (4 ops x 2 dtypes x 3 GPU counts x 21 sizes; GB200/GB300 2 and 4 GPUs: 336)
# + TensorRT-LLM 69 (46) + SGLang and vLLM 138 (92) each, graph and eager
AIC_ROWS = {"h100_sxm": 849, "h200_sxm": 849, "b200_sxm": 849, "gb200": 566, "gb300": 566}


@needs_aic
@pytest.mark.parametrize("chip", sorted(cf.AIC_SYSTEMS))
def test_ideal_is_below_every_aiconfigurator_row(chip):
    """Every NCCL and framework collective measured on ``chip`` takes at least its ideal time on
    the catalogue system it ran on; the tightest row per chip is within 2x of its ideal (0.64-0.89
    on 2026-11-24), so the floors and bandwidths are not vacuously low."""
    system = cat.get_system(cf.AIC_SYSTEMS[chip])
    rows, worst, above = _below(cf.load_aiconfigurator_comm(AIC, chip), system)
    assert rows == AIC_ROWS[chip]
    assert not above, f"{len(above)} of {rows} rows below the ideal of {system.name}: " + "; ".join(above[:5])
    assert worst > 0.5


@needs_vidur
@pytest.mark.parametrize("cluster", sorted(cf.CLUSTER_SYSTEMS))
def test_ideal_is_below_every_vidur_nccl_row(cluster):
    """vidur's NCCL all-reduce and send/recv medians (h100_dgx: 2,982 + 1,988 rows; a100_dgx: 6,958
    + 1,988), inside a node and across nodes (two-tier all-reduce, scale-out send): none below the
    ideal of hgx-h100 / hgx-a100. The tightest, 0.98, is an H100 send/recv across nodes."""
    system = cat.get_system(cf.CLUSTER_SYSTEMS[cluster])
    data = cf.load_all(NETWORK, clusters=(cluster,))
    rows, worst, above = _below(data, system)
    assert rows == {"h100_dgx": 4970, "a100_dgx": 8946}[cluster]
    assert not above, f"{len(above)} of {rows} rows below the ideal of {system.name}: " + "; ".join(above[:5])
    assert worst > 0.5


@needs_aic
def test_loader_reads_elements_as_bytes_and_medians_duplicates():
    """message_size is in elements: NCCL fp16 all-reduce on 8 H100s at 8,388,608 elements is 16 MiB
    and takes 121.9 us (the figure the hand case above quotes); int8 rows are 1 byte per element."""
    data = {(m.cluster, m.op): m for m in cf.load_aiconfigurator_comm(AIC, "h100_sxm")}
    m = data[("h100_sxm nccl/NCCL half", "all_reduce")]
    sel = (m.participants == 8) & (m.size_bytes == MIB)
    assert sel.sum() == 1 and float(m.time_s[sel][0]) == pytest.approx(121.9e-6, rel=1e-3)
    assert data[("h100_sxm nccl/NCCL int8", "all_gather")].size_bytes.max() == 2 ** 29
    assert {op for _, op in data} == {"all_reduce", "all_gather", "reduce_scatter", "all_to_all"}
