"""The compiled event loop (``serving.compiled``/``fastloop``, numba) against the pure-Python loop:
the same ``SimResult``, bit for bit, on every array (NaN-aware, dtype included), the summary, the
pools' counters and the event count, for every policy it runs (continuous, chunked prefill,
adaptive; plain, MTP and draft-model speculative decoding); when each loop is chosen, and the note
a large run that falls back carries."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from llmecon.catalog.efficiency import default_profile
from llmecon.catalog.hardware import get_system
from llmecon.catalog.models import get_model
from llmecon.econ.batching import smallest_plan
from llmecon.errors import SpecError
from llmecon.resolve import deployment
from llmecon.serving import (SLO, Adaptive, Continuous, Disaggregated, PrefixCache, SimConfig, Train, lognormal,
                             simulate, synthetic)
from llmecon.serving import compiled
from llmecon.serving.metrics import SimResult
from llmecon.spec.deployment import Deployment

needs_numba = pytest.mark.skipif(not compiled.numba_available(), reason="numba is not installed (extra 'fast')")


def _dep(model: str, system: str, calibrated: bool = False) -> Deployment:
    m, s = get_model(model), get_system(system)
    kw = {}
    if calibrated:
        kw["profile"] = dataclasses.replace(default_profile(s.accelerator), iteration_overhead_s=2e-3)
    return Deployment(model=m, system=s, plan=smallest_plan(m, s), **kw)


LLAMA = _dep("llama-3.1-8b", "h100-sxm")
LLAMA_CAL = _dep("llama-3.1-8b", "h100-sxm", calibrated=True)
GEMMA = _dep("gemma-3-27b", "gb200-nvl72")  # sliding windows: kink crossings; a host tier: swap
DSV3 = _dep("deepseek-v3", "gb200-nvl72")
DSV32 = _dep("deepseek-v3.2-exp", "gb200-nvl72")  # DSA top-k kink
# speculative decoding: DeepSeek-V3's MTP head (k = 3, decaying acceptance), and a draft model
MTP = deployment("deepseek-v3", "gb200-nvl72", tp=4, ep=4, pp=None, mode="ideal", spec_tokens=3,
                 acceptance="0.9,0.8,0.7")
MTP_DSA = deployment("deepseek-v3.2-exp", "gb200-nvl72", tp=4, ep=4, pp=None, mode="ideal", spec_tokens=2,
                     acceptance="0.8")  # the verify step's kinks next to the DSA top-k one
DRAFT = deployment("llama-3.1-70b", "h100-sxm", tp=4, ep=None, pp=None, mode="ideal", spec_tokens=3,
                   acceptance="0.8", draft="llama-3.1-8b")
DRAFT_CAL = deployment("gpt-oss-120b", "gb200-nvl72", tp=None, auto=True, mode="calibrated", spec_tokens=3,
                       acceptance="0.7", draft="gpt-oss-20b")  # sliding windows; the loop overhead out of the draft


def _workload(n: int, rate: float, seed: int = 1):
    return synthetic(rate_per_s=rate, prompt=lognormal(800, 1.0, high=8000), output=lognormal(200, 1.0, high=2000),
                     n=n, seed=seed)


def assert_identical(a: SimResult, b: SimResult) -> None:
    for f in dataclasses.fields(SimResult):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(x, np.ndarray):
            assert x.dtype == y.dtype and x.shape == y.shape, f.name
            ok = np.array_equal(x, y, equal_nan=True) if x.dtype.kind == "f" else np.array_equal(x, y)
            assert ok, f"{f.name} differs"
        else:
            assert x == y, f.name
    assert json.dumps(a.summary(), default=str) == json.dumps(b.summary(), default=str)


def both(dep, wl, cfg, **kw) -> tuple[SimResult, SimResult]:
    py = simulate(dep, wl, cfg, compiled=False, **kw)
    jit = simulate(dep, wl, cfg, compiled=True, **kw)
    assert_identical(py, jit)
    return py, jit


CASES = [
    (LLAMA, 20.0, {}),
    (LLAMA_CAL, 20.0, {}),
    (LLAMA, 60.0, dict(hbm_fraction=0.36)),  # recompute preemptions (no host tier on h100-sxm)
    (LLAMA, 20.0, dict(replicas=3, max_queue=4)),
    (LLAMA, 20.0, dict(horizon_s=40.0)),
    (LLAMA, 20.0, dict(drain=True, horizon_s=20.0)),
    (LLAMA, 20.0, dict(prefix_cache=PrefixCache(prefix_tokens=256, hit_rate=0.5),
                       slo=SLO(ttft_s=0.5, tpot_s=0.05), price_per_chip_hour=3.0)),
    (LLAMA, 20.0, dict(policy=Continuous(batch_cap=16, max_batched_tokens=1024))),  # prompts beyond the table
    (GEMMA, 60.0, dict(hbm_fraction=0.3, policy=Continuous(preemption="swap"))),
    (GEMMA, 60.0, dict(hbm_fraction=0.3, replicas=2, policy=Continuous(preemption="recompute"))),
    (DSV3, 40.0, {}),
    (DSV32, 40.0, dict(horizon_s=30.0)),
    # chunked prefill
    (LLAMA, 20.0, dict(policy=Continuous(chunk_tokens=2048))),
    (LLAMA_CAL, 20.0, dict(policy=Continuous(chunk_tokens=600, batch_cap=64), replicas=2, horizon_s=40.0)),
    (GEMMA, 60.0, dict(hbm_fraction=0.3, policy=Continuous(chunk_tokens=2048, preemption="swap"))),
    (GEMMA, 60.0, dict(hbm_fraction=0.3, replicas=2, policy=Continuous(chunk_tokens=1024, batch_cap=64,
                                                                       preemption="recompute"))),
    # adaptive batching (static batches of up to 256 prompts: prefills far beyond the step table)
    (LLAMA, 20.0, dict(policy=Adaptive())),
    (GEMMA, 60.0, dict(hbm_fraction=0.3, replicas=2, policy=Adaptive(batch_cap=64, deadline_s=0.2))),
    (LLAMA, 20.0, dict(policy=Adaptive(batch_cap=8, deadline_s=0.0), max_queue=6, horizon_s=30.0)),
    # speculative decoding
    (MTP, 40.0, {}),
    (MTP, 40.0, dict(policy=Adaptive(batch_cap=32), horizon_s=20.0)),
    (MTP_DSA, 80.0, dict(hbm_fraction=0.25)),  # preemptions (swap)
    (MTP, 40.0, dict(replicas=2, horizon_s=20.0)),
    (DRAFT, 10.0, {}),
    (DRAFT_CAL, 20.0, dict(replicas=2)),
]


@needs_numba
@pytest.mark.parametrize("case", range(len(CASES)))
def test_compiled_equals_python(case):
    dep, rate, cfg = CASES[case]
    py, _ = both(dep, _workload(1500, rate), SimConfig(**cfg))
    assert py.summary()["completed"] > 0


@needs_numba
def test_preemptions_and_kinks_are_exercised():
    """The equivalence cases above reach the paths that differ most between the loops."""
    py, _ = both(GEMMA, _workload(1500, 60.0), SimConfig(hbm_fraction=0.3, policy=Continuous(preemption="swap")))
    assert py.preemptions.sum() > 0
    assert GEMMA.model.window_groups()  # sliding windows: kinks in the per-sequence functions


@needs_numba
def test_growth_paths(monkeypatch):
    """Every buffer starting at one row (so that each is grown, repeatedly) changes nothing."""
    monkeypatch.setattr(compiled, "_SMALL_BUFFERS", True)
    both(GEMMA, _workload(800, 60.0), SimConfig(hbm_fraction=0.3, replicas=2))
    both(LLAMA, _workload(800, 20.0), SimConfig(policy=Continuous(batch_cap=16, max_batched_tokens=1024)))
    both(GEMMA, _workload(800, 60.0), SimConfig(hbm_fraction=0.3, replicas=2, policy=Continuous(chunk_tokens=2048)))
    both(LLAMA, _workload(800, 20.0), SimConfig(policy=Adaptive(batch_cap=16)))
    both(MTP, _workload(800, 40.0), SimConfig(horizon_s=10.0))


@needs_numba
def test_progress_pauses_change_nothing():
    seen: list[float] = []
    ref: list[float] = []
    wl = _workload(2000, 20.0)
    a = simulate(LLAMA, wl, SimConfig(), compiled=True, progress=seen.append)
    assert_identical(a, simulate(LLAMA, wl, SimConfig(), compiled=False, progress=ref.append))
    assert seen == ref and len(seen) >= 150 and seen == sorted(seen) and seen[-1] <= 1.0


@needs_numba
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(1, 300), rate=st.floats(1.0, 200.0), seed=st.integers(0, 10_000),
       cap=st.integers(1, 64), budget=st.integers(256, 20_000), replicas=st.integers(1, 3),
       hbm=st.sampled_from([1.0, 0.5, 0.3]), horizon=st.sampled_from([None, 5.0]), drain=st.booleans(),
       max_queue=st.sampled_from([None, 1, 3]), gemma=st.booleans())
def test_random_runs_identical(n, rate, seed, cap, budget, replicas, hbm, horizon, drain, max_queue, gemma):
    dep = GEMMA if gemma else LLAMA
    cfg = SimConfig(policy=Continuous(batch_cap=cap, max_batched_tokens=budget), replicas=replicas,
                    hbm_fraction=hbm, horizon_s=horizon, drain=drain, max_queue=max_queue)
    both(dep, _workload(n, rate, seed), cfg)


@needs_numba
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(1, 300), rate=st.floats(1.0, 200.0), seed=st.integers(0, 10_000),
       policy=st.sampled_from(["chunked", "adaptive", "mtp", "mtp-adaptive"]), cap=st.integers(1, 64),
       chunk=st.integers(65, 4096), deadline=st.sampled_from([0.0, 0.01, 0.3]), replicas=st.integers(1, 3),
       hbm=st.sampled_from([1.0, 0.5, 0.3]), horizon=st.sampled_from([None, 5.0]), drain=st.booleans(),
       max_queue=st.sampled_from([None, 1, 3]), gemma=st.booleans())
def test_random_policies_identical(n, rate, seed, policy, cap, chunk, deadline, replicas, hbm, horizon, drain,
                                   max_queue, gemma):
    """Chunked prefill, adaptive batching and speculative decoding on random workloads and settings."""
    if policy.startswith("mtp"):
        dep = MTP_DSA if gemma else MTP
        hbm = 0.25 if hbm == 0.3 else hbm  # (0.25: preemptions; DeepSeek's weights take most of the rest)
    else:
        dep = GEMMA if gemma else LLAMA
    pol = (Continuous(batch_cap=cap, chunk_tokens=max(chunk, cap + 1)) if policy == "chunked" else
           Adaptive(batch_cap=cap, deadline_s=deadline) if policy.endswith("adaptive") else Continuous(batch_cap=cap))
    cfg = SimConfig(policy=pol, replicas=replicas, hbm_fraction=hbm, horizon_s=horizon, drain=drain,
                    max_queue=max_queue)
    both(dep, _workload(n, rate, seed), cfg)


# ---- which loop runs ---------------------------------------------------------------------------


def test_unsupported_runs_take_the_python_loop():
    wl = _workload(50, 20.0)
    res = simulate(LLAMA, wl, SimConfig(policy=Train()))  # auto: the Python loop, no error
    assert res.policy == "train" and res.engine_note is None  # (a small run: no note)
    for cfg, what in ((SimConfig(policy=Train()), "train"), (SimConfig(closed_form_runs=False), "closed_form_runs"),
                      (SimConfig(policy=Disaggregated()), "more than one pool")):
        if compiled.numba_available():
            with pytest.raises(SpecError, match=what) as e:
                simulate(LLAMA, wl, cfg, compiled=True)
            assert e.value.field == "compiled"


def test_large_fallback_says_so(monkeypatch):
    """A run at or above ``AUTO_MIN_REQUESTS`` that had to take the Python loop carries one note naming why;
    one that chose its loop by request, or ran compiled, carries none (the threshold lowered to 40 here)."""
    from llmecon.report.serving import simulation_dict

    monkeypatch.setattr(compiled, "AUTO_MIN_REQUESTS", 40)
    monkeypatch.delenv(compiled.ENV, raising=False)
    wl = _workload(60, 20.0)
    res = simulate(LLAMA, wl, SimConfig(policy=Train()))
    assert res.engine_note.startswith("the Python event loop ran (")
    assert ("the train policy" if compiled.numba_available() else "numba is not installed") in res.engine_note
    assert res.summary()["engine_note"] == res.engine_note
    notes = simulation_dict(LLAMA, wl, res)["notes"]
    assert notes.count(res.engine_note) == 1
    assert simulate(LLAMA, wl, SimConfig(policy=Train()), compiled=False).engine_note is None
    assert simulate(LLAMA, _workload(30, 20.0), SimConfig(policy=Train())).engine_note is None
    monkeypatch.setenv(compiled.ENV, "0")  # the Python loop asked for
    assert simulate(LLAMA, wl, SimConfig(policy=Train())).engine_note is None
    if compiled.numba_available():
        monkeypatch.delenv(compiled.ENV)
        assert simulate(LLAMA, wl, SimConfig(policy=Continuous(chunk_tokens=2048))).engine_note is None


def test_auto_choice(monkeypatch):
    from llmecon.serving.engine import Engine
    from llmecon.serving.simulate import step_models

    cfg = SimConfig()
    small = Engine(step_models(LLAMA, cfg), _workload(100, 20.0), cfg)
    monkeypatch.delitem(sys.modules, "llmecon.serving.fastloop", raising=False)
    monkeypatch.delenv(compiled.ENV, raising=False)
    assert not compiled.use_compiled(small, None)  # below AUTO_MIN_REQUESTS: numba's load would cost more
    assert not compiled.use_compiled(small, False)
    monkeypatch.setenv(compiled.ENV, "1")
    assert compiled.use_compiled(small, None) == compiled.numba_available()
    monkeypatch.setenv(compiled.ENV, "0")
    assert not compiled.use_compiled(small, None)


def test_small_run_does_not_import_numba():
    """A run below the threshold (the CLI's default size) never imports numba."""
    code = ("import sys; from llmecon.catalog.models import get_model; from llmecon.catalog.hardware import get_system;"
            "from llmecon.econ.batching import smallest_plan; from llmecon.spec.deployment import Deployment;"
            "from llmecon.serving import simulate, synthetic, fixed;"
            "m, s = get_model('llama-3.1-8b'), get_system('h100-sxm');"
            "d = Deployment(model=m, system=s, plan=smallest_plan(m, s));"
            "simulate(d, synthetic(rate_per_s=10, prompt=fixed(512), output=fixed(64), n=600, seed=0));"
            "print('numba' in sys.modules)")
    env = {k: v for k, v in os.environ.items() if k != compiled.ENV}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.strip() == "False"


def test_jit_falls_back_without_a_cache_location(monkeypatch):
    """numba refuses ``cache=True`` when no cache directory is writable: compile uncached instead (and
    with reference counting when numba refuses ``_nrt``)."""
    pytest.importorskip("numba")
    from llmecon.serving import _jit

    class NoCacheNumba:
        def __init__(self, known):
            self.calls, self.known = [], known

        def njit(self, f=None, **kw):
            self.calls.append(kw)
            if set(kw) - self.known:
                raise KeyError(next(iter(set(kw) - self.known)))
            if kw.get("cache"):
                raise RuntimeError("cannot cache function 'f': no locator available for file")
            return lambda g: ("compiled", g)

    def f():
        return 1

    fake = NoCacheNumba({"cache", "_nrt"})
    monkeypatch.setattr(_jit, "numba", fake)
    assert _jit.njit(f) == ("compiled", f)
    assert fake.calls == [{"cache": True, "_nrt": False}, {"_nrt": False}]
    old = NoCacheNumba({"cache"})
    monkeypatch.setattr(_jit, "numba", old)
    assert _jit.njit(f) == ("compiled", f)
    assert old.calls == [{"cache": True, "_nrt": False}, {"cache": True}, {}]
    fake.calls.clear()
    monkeypatch.setattr(_jit, "numba", fake)
    assert _jit.njit_alloc(f) == ("compiled", f)
    assert fake.calls == [{"cache": True}, {}]


def test_kernel_cache_is_named_by_every_kernel_file():
    """numba checks a cached kernel against its own file only, but the loop inlines the other kernel files:
    editing any of them (``faststeps.py`` here) must name a new cache directory, or stale code would run."""
    pytest.importorskip("numba")
    from llmecon.serving import _jit

    here = Path(_jit.__file__).parent
    sources = [(here / name).read_bytes() for name in _jit.KERNEL_FILES]
    tag = _jit.kernel_tag(sources)
    assert tag.startswith("kernels-") and len(tag) == len("kernels-") + 16
    for i in range(len(sources)):
        edited = list(sources)
        edited[i] = edited[i] + b"\n# edited\n"
        assert _jit.kernel_tag(edited) != tag, _jit.KERNEL_FILES[i]
    if _jit._CACHE_DIR is not None:
        assert Path(_jit._CACHE_DIR).name == tag
