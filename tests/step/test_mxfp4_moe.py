"""MXFP4 experts on Hopper are priced with the W4A16 MXFP4 MoE terms fitted on the kernel tables
(``kernel_tables.MXFP4_MOE``, ``[moe.mxfp4]``), not with the bf16 MoE terms at 4.25-bit bytes."""

from __future__ import annotations

import dataclasses

import pytest

from llmecon.catalog.efficiency import named_profile
from llmecon.catalog.hardware import get_system
from llmecon.catalog.models import get_model
from llmecon.spec.plan import Plan
from llmecon.step.calibrated import expert_terms
from llmecon.step.inference import decode_step


@pytest.mark.parametrize("name", ["h100-sxm/trtllm", "h100-sxm/vllm", "h200/trtllm", "h200/sglang"])
def test_hopper_profiles_carry_mxfp4_moe_terms(name):
    prof = named_profile(name)
    mx = prof.moe_terms("mxfp4")
    assert mx is not None and mx is dict(prof.moe)["mxfp4"]
    assert expert_terms(prof, "mxfp4") is mx
    assert mx is not prof.moe_terms("bf16")


def test_blackwell_mxfp4_keeps_the_fallback():
    prof = named_profile("b200/vllm")
    assert "mxfp4" not in dict(prof.moe)
    assert prof.moe_terms("mxfp4") is dict(prof.moe).get("nvfp4", dict(prof.moe)["bf16"])


def test_gpt_oss_decode_on_h200_pays_the_w4a16_kernel():
    # the measured W4A16 grouped GEMM is slower than the bf16 MoE kernel reading 4.25-bit weights
    model, system, plan = get_model("gpt-oss-120b"), get_system("hgx-h200"), Plan(tp=1, ep=1, pp=1)
    prof = named_profile("h200/trtllm")
    old = dataclasses.replace(prof, moe=tuple((d, t) for d, t in prof.moe if d != "mxfp4"))
    kw = dict(batch=8, context=2048)
    new_s = decode_step(model, system, plan=plan, profile=prof, **kw).time.step_s
    old_s = decode_step(model, system, plan=plan, profile=old, **kw).time.step_s
    assert new_s > 1.1 * old_s
