"""``fidelity.floor_fit`` (issue 37 item 3): the low-batch floor terms recovered by hand from a linearisation
built on paper, and the leave-one-model-out folds never fitted on the held-out model's rows."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from llmecon.fidelity.engine_fit import PARAMS
from llmecon.fidelity.floor_fit import FLOOR_PARAMS, LOW_CONCURRENCY, fit_floor, floor_for, held_out_floors


@dataclass(frozen=True)
class Row:
    model: str
    chip: str
    engine: str
    concurrency: int
    tpot_s: float

    @property
    def profile(self) -> str:
        return f"{self.chip}/{self.engine}"


def _lin(rows, floors_s, layers, truth):
    """A linearisation as ``holdout_silicon.linearise`` gives it, made by hand: at BASE (floor scale 1, no
    overheads) TPOT = 5 ms + the row's kernel floors; d/d scale = the floors, d/d step = 1, d/d layer = layers.
    Each row's measured TPOT is that line evaluated at ``truth``."""
    n = len(rows)
    t0 = 5e-3 + np.asarray(floors_s)
    d = np.zeros((n, len(PARAMS)))
    d[:, PARAMS.index("engine_floor_scale")] = floors_s
    d[:, PARAMS.index("step_overhead_s")] = 1.0
    d[:, PARAMS.index("layer_overhead_s")] = layers
    dx = np.zeros(len(PARAMS))
    dx[PARAMS.index("engine_floor_scale")] = truth[0] - 1.0
    dx[PARAMS.index("step_overhead_s")] = truth[1]
    dx[PARAMS.index("layer_overhead_s")] = truth[2]
    meas = t0 + d @ dx
    rows = [Row(r.model, r.chip, r.engine, r.concurrency, float(m)) for r, m in zip(rows, meas)]
    return rows, (t0, np.full(n, np.nan), d, np.full_like(d, np.nan))


def test_fit_recovers_terms_from_a_hand_built_linearisation():
    """Six rows with distinct floors and layer counts: the three terms are identified and recovered."""
    base = [Row("m", "b200", "vllm", 1, 0.0)] * 6
    floors = [1e-3, 2e-3, 4e-3, 1e-3, 3e-3, 6e-3]
    layers = [32, 32, 61, 80, 48, 94]
    truth = (0.4, 8e-4, 2e-5)
    rows, lin = _lin(base, floors, layers, truth)
    got = fit_floor(range(6), rows, lin)
    assert [got[p] for p in FLOOR_PARAMS] == pytest.approx(truth, rel=1e-4)


def test_held_out_folds_never_see_the_model():
    """Model 'a' runs at floor scale 0.2, model 'b' at 0.9 (no overheads): the fold without 'a' is fitted on
    'b' alone and finds 0.9, and the other way round; rows above ``LOW_CONCURRENCY`` are not fitted on."""
    base = ([Row("a", "h200", "sglang", 1, 0.0)] * 6 + [Row("b", "h200", "sglang", 2, 0.0)] * 6
            + [Row("b", "h200", "sglang", LOW_CONCURRENCY + 1, 0.0)] * 2)
    floors = [1e-3, 2e-3, 3e-3, 4e-3, 5e-3, 6e-3] * 2 + [1e-3, 2e-3]
    layers = [61, 32, 80, 40, 94, 20] * 2 + [10, 20]  # not proportional to the floors: identifiable
    rows_a, lin_a = _lin(base[:6], floors[:6], layers[:6], (0.2, 0.0, 0.0))
    rows_b, lin_b = _lin(base[6:12], floors[6:12], layers[6:12], (0.9, 0.0, 0.0))
    rows_c, lin_c = _lin(base[12:], floors[12:], layers[12:], (0.01, 0.0, 0.0))  # high concurrency: ignored
    rows = rows_a + rows_b + rows_c
    lin = tuple(np.concatenate([x, y, z]) for x, y, z in zip(lin_a, lin_b, lin_c))
    held = held_out_floors(rows, lin)
    assert floor_for(held, "h200/sglang", "a")["engine_floor_scale"] == pytest.approx(0.9, rel=1e-3)
    assert floor_for(held, "h200/sglang", "b")["engine_floor_scale"] == pytest.approx(0.2, rel=1e-3)
    assert floor_for(held, "h200/sglang", "a")["source"] == "h200/sglang"
    # a chip with no row of its own: the engine's rows of every chip, the model still left out
    assert floor_for(held, "b300/sglang", "a")["engine_floor_scale"] == pytest.approx(0.9, rel=1e-3)
    assert floor_for(held, "b300/sglang", "a")["source"] == "sglang: every chip"
    assert floor_for(held, "b300/trtllm", "a") is None
