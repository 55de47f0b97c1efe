"""Workloads: arrival processes match their rates and variability, length distributions, seeded
reproducibility, and the trace loader (CSV/JSONL; unknown or missing columns are named)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from llmecon.errors import SpecError
from llmecon.serving.workload import (Lengths, arrival_times, empirical, fixed, load_trace, lognormal,
                                      parse_lengths, synthetic, uniform)


def _gaps(kind, **kw):
    t = arrival_times(kind, rng=np.random.default_rng(0), n=200_000, **kw)
    return np.diff(t)


def test_poisson_rate_and_cv():
    g = _gaps("poisson", rate_per_s=50.0)
    assert g.mean() == pytest.approx(1 / 50, rel=0.01)
    assert g.std() / g.mean() == pytest.approx(1.0, rel=0.02)


@pytest.mark.parametrize("cv", [0.5, 2.0, 4.0])
def test_gamma_rate_and_cv(cv):
    g = _gaps("gamma", rate_per_s=10.0, cv=cv)
    assert g.mean() == pytest.approx(0.1, rel=0.02 * cv)
    assert g.std() / g.mean() == pytest.approx(cv, rel=0.05)


def test_constant_rate_is_exact():
    t = arrival_times("constant", rate_per_s=4.0, rng=np.random.default_rng(0), duration_s=2.0)
    assert t.tolist() == [0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75]


def test_duration_keeps_arrivals_before_it():
    t = arrival_times("poisson", rate_per_s=100.0, rng=np.random.default_rng(1), duration_s=30.0)
    assert t.max() < 30.0 and len(t) == pytest.approx(3000, rel=0.1)


def test_lengths():
    rng = np.random.default_rng(0)
    assert fixed(7).sample(3, rng).tolist() == [7, 7, 7]
    u = uniform(10, 20).sample(10_000, rng)
    assert u.min() == 10 and u.max() == 20
    x = lognormal(500, 1.0, high=4000).sample(100_000, rng)
    assert np.median(x) == pytest.approx(500, rel=0.03) and x.max() <= 4000 and x.min() >= 1
    e = empirical([3, 5]).sample(1000, rng)
    assert set(e.tolist()) == {3, 5}


def test_parse_lengths():
    assert parse_lengths("512", field="--prompt") == fixed(512)
    assert parse_lengths("uniform:1:9", field="--prompt") == uniform(1, 9)
    assert parse_lengths("lognormal:512:1.5", field="--prompt") == lognormal(512, 1.5)
    with pytest.raises(SpecError, match="--prompt 'uniform:1'"):
        parse_lengths("uniform:1", field="--prompt")
    with pytest.raises(SpecError, match="did you mean 'uniform'"):
        Lengths(kind="unifrom")


def test_seeded_and_reproducible():
    kw = dict(rate_per_s=3.0, prompt=lognormal(100, 1), output=uniform(1, 50), duration_s=100)
    a, b, c = synthetic(seed=1, **kw), synthetic(seed=1, **kw), synthetic(seed=2, **kw)
    assert np.array_equal(a.arrival_s, b.arrival_s) and np.array_equal(a.output_tokens, b.output_tokens)
    assert not np.array_equal(a.arrival_s[:5], c.arrival_s[:5])


def test_class_mix():
    w = synthetic(rate_per_s=100, prompt=fixed(1), output=fixed(1), n=20_000, classes={"a": 0.25, "b": 0.75})
    assert w.class_names == ("a", "b")
    assert (w.class_id == 0).mean() == pytest.approx(0.25, abs=0.01)
    with pytest.raises(SpecError, match="sum to 1"):
        synthetic(rate_per_s=1, prompt=fixed(1), output=fixed(1), n=3, classes={"a": 0.5})


def test_bad_inputs_name_the_field():
    with pytest.raises(SpecError, match="rate"):
        arrival_times("poisson", rate_per_s=0, rng=np.random.default_rng(0), n=3)
    with pytest.raises(SpecError, match="did you mean 'poisson'"):
        arrival_times("poison", rate_per_s=1, rng=np.random.default_rng(0), n=3)


def test_csv_trace(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("arrival_s,prompt_tokens,output_tokens,class,prefix_id\n"
                 "10.5,100,20,fast,sys\n10.0,50,5,slow,\n11,7,1,fast,sys\n")
    w = load_trace(p)
    assert w.arrival_s.tolist() == [0.0, 0.5, 1.0]  # sorted, shifted to start at 0
    assert w.prompt_tokens.tolist() == [50, 100, 7]
    assert [w.class_names[c] for c in w.class_id] == ["slow", "fast", "fast"]
    assert w.prefix_id.tolist() == [-1, 0, 0]
    assert load_trace(p, time_scale=2.0).arrival_s.tolist() == [0.0, 0.25, 0.5]


def test_jsonl_trace(tmp_path):
    p = tmp_path / "t.jsonl"
    p.write_text("\n".join(json.dumps(r) for r in ({"arrival_s": 0, "prompt_tokens": 3, "output_tokens": 2},
                                                   {"arrival_s": 1.5, "prompt_tokens": 4, "output_tokens": 1})))
    w = load_trace(p)
    assert w.n == 2 and w.output_tokens.tolist() == [2, 1] and w.prefix_id is None


def test_trace_unknown_column_did_you_mean(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("arrival_s,prompt_tokens,output_token\n0,1,1\n")
    with pytest.raises(SpecError, match="unknown column 'output_token' \\(did you mean 'output_tokens'\\?\\)"):
        load_trace(p)


def test_trace_missing_and_bad_values(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("arrival_s,prompt_tokens\n0,1\n")
    with pytest.raises(SpecError, match="missing column\\(s\\) output_tokens"):
        load_trace(p)
    p.write_text("arrival_s,prompt_tokens,output_tokens\n0,1.5,1\n")
    with pytest.raises(SpecError, match="row 1: prompt_tokens must be a whole number"):
        load_trace(p)
    q = tmp_path / "t.jsonl"
    q.write_text('{"arrival_s": 0, "prompt_tokens": 1, "output_tokens": 1, "clas": "x"}\n')
    with pytest.raises(SpecError, match="did you mean 'class'"):
        load_trace(q)
    with pytest.raises(SpecError, match="no such file"):
        load_trace(tmp_path / "nope.csv")


# ---- the model's context (issue 18, item 4) ----------------------------------------------------------


def _dsv3():
    from llmecon.catalog.hardware import get_system
    from llmecon.catalog.models import get_model
    from llmecon.spec.deployment import Deployment
    from llmecon.spec.plan import Plan

    return Deployment(model=get_model("deepseek-v3"), system=get_system("gb200-nvl72"), plan=Plan(tp=1, ep=8))


@pytest.mark.parametrize("prompt, output, field", [("170000", "10", "prompt"), ("163000", "1000", "output"),
                                                   ("163840", "1", "prompt")])
def test_simulate_rejects_requests_longer_than_the_context(prompt, output, field):
    """DeepSeek-V3's 163,840 tokens bound prompt + output (vLLM's max_model_len rule); the error
    names the input the lengths came from (``parse_lengths``' field): the prompt when it alone is
    too long, else the output. Before issue 18 these ran (with KV the model never saw in training)."""
    from llmecon.serving import simulate

    wl = synthetic(rate_per_s=1.0, prompt=parse_lengths(prompt, field="prompt"),
                   output=parse_lengths(output, field="output"), n=3)
    with pytest.raises(SpecError, match="3 of 3 requests longer than deepseek-v3's 163,840-token context") as exc:
        simulate(_dsv3(), wl)
    assert exc.value.field == field
    assert exc.value.render(lambda f: "--" + f).startswith(f"--{field}: ")
    assert "{prompt} + {output} <= 163,840" in exc.value.fix


def test_context_check_names_the_trace_and_skips_unknown_contexts(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("arrival_s,prompt_tokens,output_tokens\n0,1000,10\n1,163000,841\n2,163000,840\n")
    wl = load_trace(path)
    assert wl.length_fields == ("trace", "trace")
    with pytest.raises(SpecError, match=r"1 of 3 requests .* the first at 1 s: prompt 163,000 \+ output 841") as exc:
        wl.require_within_context(163_840, model_name="deepseek-v3")
    assert exc.value.field == "trace"
    wl.require_within_context(0, model_name="gemma-3-27b")  # unknown context: nothing checked
    wl.require_within_context(163_841, model_name="m")      # 163,000 + 841 = 163,841 fits exactly
    # a synthetic workload built without parse_lengths names the library fields
    plain = synthetic(rate_per_s=1.0, prompt=fixed(10), output=fixed(10), n=2)
    assert plain.length_fields == ("prompt_tokens", "output_tokens")
