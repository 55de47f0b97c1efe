"""The training front-end checks the CLI and the web share (resolve.training_dp, training_memory.require_fit):
the data-parallel degree by hand and the refusals naming the field."""

from __future__ import annotations

import pytest

from llmecon.econ.training_memory import TrainMemory, require_fit
from llmecon.errors import InfeasibleError, SpecError
from llmecon.resolve import training_dp


def test_training_dp_by_hand():
    assert training_dp(None, None, 8, 1, 1) == 8  # the CLI's default
    assert training_dp(None, 16, 8, 4, 1) == 16
    assert training_dp(2048, None, 1, 16, 1) == 128  # DeepSeek-V3: 2,048 GPUs / pp 16
    assert training_dp(16384, 8, 8, 16, 16) == 8  # Llama 3 CP16: 8 · 16 · 16 · 8


@pytest.mark.parametrize("gpus, dp, words", [(12, None, "multiple of tp·pp·cp = 8"), (16, 4, "!= tp·pp·cp·dp = 32")])
def test_training_dp_refusals_name_gpus(gpus, dp, words):
    with pytest.raises(SpecError) as exc:
        training_dp(gpus, dp, 8, 1, 1)
    assert exc.value.field == "gpus" and words in str(exc.value)


def test_require_fit():
    fits = TrainMemory(weights=40e9, gradients=10e9, optimizer=20e9, activations=10e9, hbm=80e9)
    require_fit(fits, model_name="m", plan_label="p", system_name="s")  # 80 GB of 80: fits
    over = TrainMemory(weights=40e9, gradients=10e9, optimizer=20e9, activations=10e9, reserve=1e9, hbm=80e9, rank=3)
    with pytest.raises(InfeasibleError) as exc:
        require_fit(over, model_name="m", plan_label="p", system_name="s")
    assert "81 GB per GPU on pipeline rank 3" in str(exc.value) and "80 GB of HBM" in str(exc.value)
    assert exc.value.render(lambda f: "--" + f).endswith("shrink --micro_batch")
