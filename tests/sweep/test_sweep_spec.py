"""Sweep specs are checked whole before any work starts: unknown keys and names get "did you mean",
empty axes, bad ranges and bad plans are rejected, and the expansion into groups, points and chunks
is exactly the product of the axes (point ids 0..N-1), with skipped combinations counted."""

from __future__ import annotations

import math

import pytest

from llmecon.errors import CatalogError, LlmeconError, SpecError
from llmecon.sweep import expand, parse_spec
from llmecon.sweep.spec import DEFAULT_CHUNK_POINTS, OUTPUTS

BASE = """
name = "t"
[analytic]
models = ["llama-3.1-8b"]
systems = ["hgx-h100"]
plans = [{tp = 1}, {tp = 2}]
batches = [1, 8, 64]
contexts = [1024, 4096]
"""


def spec(text: str = BASE, **replace):
    for old, new in replace.items():
        text = text.replace(old, new)
    return parse_spec(text, where="t.toml")


def test_minimal_spec_defaults():
    s = spec()
    a = s.analytic
    assert s.name == "t" and s.chunk_points == DEFAULT_CHUNK_POINTS and s.outputs == OUTPUTS
    assert a.phases == ("decode",) and a.prices is None and a.weight_dtypes == (None,) and a.kv_dtypes == (None,)
    assert [p.tp for p in a.plans.plans] == [1, 2] and a.plans.mode == "list"
    assert s.simulation is None


@pytest.mark.parametrize("text, words", [
    ("analytics = {}\n", ["unknown key 'analytics'", "did you mean 'analytic'"]),
    ("[analytic]\nmodels=['x']\nsystems=['y']\nbatchs=[1]\ncontexts=[1]\nbatches=[1]\n",
     ["unknown key 'batchs'", "did you mean 'batches'"]),
    ("[analytic]\nmodels=[]\nsystems=['hgx-h100']\nbatches=[1]\ncontexts=[1]\n", ["models", "empty axis"]),
    ("[analytic]\nmodels=['a']\nsystems=['hgx-h100']\nbatches=[]\ncontexts=[1]\n", ["batches", "empty axis"]),
    ("[analytic]\nmodels=['a']\nsystems=['s']\nbatches=[1]\n", ["missing required key 'contexts'"]),
    ("[analytic]\nmodels=['a']\nsystems=['s']\nbatches=[0]\ncontexts=[1]\n", ["batches", ">= 1"]),
    ("[analytic]\nmodels=['a', 'a']\nsystems=['s']\nbatches=[1]\ncontexts=[1]\n", ["given twice"]),
    ("[analytic]\nmodels=['a']\nsystems=['s']\nbatches=[1]\ncontexts=[1]\nphases=['decod']\n",
     ["did you mean 'decode'"]),
    ("[analytic]\nmodels=['a']\nsystems=['s']\nbatches={start=1, stop=8}\ncontexts=[1]\n",
     ["missing required key 'num'"]),
    ("[analytic]\nmodels=['a']\nsystems=['s']\nbatches={start=0, stop=8, num=3, scale='log'}\ncontexts=[1]\n",
     ["log range needs start > 0"]),
    ("[analytic]\nmodels=['a']\nsystems=['s']\nbatches=[1]\ncontexts=[1]\nplans='autom'\n",
     ["did you mean 'auto'"]),
    ("[analytic]\nmodels=['a']\nsystems=['s']\nbatches=[1]\ncontexts=[1]\nplans=['tp4·xp2']\n",
     ["cannot read plan"]),
    ("[analytic]\nmodels=['a']\nsystems=['s']\nbatches=[1]\ncontexts=[1]\nplans=[{tp=2, ep=4, adp=1}]\n",
     ["ep 4"]),
    ("[analytic]\nmodels=['a']\nsystems=['s']\nbatches=[1]\ncontexts=[1]\nplans=[{tp=2}]\nmax_chips=8\n",
     ["max_chips", "only applies"]),
    ("[analytic]\nmodels=['a']\nsystems=['s']\nbatches=[1]\ncontexts=[1]\nweight_dtypes=['fp7']\n", ["fp7"]),
    ("[analytic]\nmodels=['a']\nsystems=['s']\nbatches=[1]\ncontexts=[0]\nphases=['prefill']\n",
     ["contexts", ">= 1"]),
    ("outputs = ['step_time']\n[analytic]\nmodels=['a']\nsystems=['s']\nbatches=[1]\ncontexts=[1]\n",
     ["unknown output 'step_time'"]),
    ("name = 't'\n", ["give an [analytic] table, a [simulation] table or both"]),
    ("[simulation]\nmodels=['a']\nsystems=['s']\nworkloads=[]\n", ["workloads", "at least one"]),
    ("[simulation]\nmodels=['a']\nsystems=['s']\npolicies=['continous']\n[[simulation.workloads]]\nrate=1\n"
     "duration=1\n", ["did you mean 'continuous'"]),
    ("[simulation]\nmodels=['a']\nsystems=['s']\n[[simulation.workloads]]\nrate=1\n", ["exactly one of duration"]),
    ("[simulation]\nmodels=['a']\nsystems=['s']\n[[simulation.workloads]]\nrate=1\nduration=1\nprompt='x:1'\n",
     ["prompt"]),
    ("[simulation]\nmodels=['a']\nsystems=['s']\n[[simulation.workloads]]\nrate=1\nduration=1\nrat=2\n",
     ["did you mean 'rate'"]),
    ("[analytic\n", ["invalid TOML"]),
])
def test_bad_specs_are_rejected(text, words):
    with pytest.raises(LlmeconError) as exc:
        parse_spec(text, where="t.toml")
    message = str(exc.value)
    assert "t.toml" in message
    for w in words:
        assert w in message, message


@pytest.mark.parametrize("old, new, words", [
    ('"llama-3.1-8b"', '"llama-3.1-8c"', ["unknown model 'llama-3.1-8c'", "did you mean 'llama-3.1-8b'"]),
    ('"hgx-h100"', '"hgx-h10"', ["unknown system 'hgx-h10'"]),
])
def test_unknown_catalogue_names_fail_in_expand(old, new, words):
    with pytest.raises(CatalogError) as exc:
        expand(spec(**{old: new}))
    for w in words:
        assert w in str(exc.value)


def test_expansion_is_the_product_of_the_axes():
    s = spec(**{"[analytic]": "chunk_points = 5\n[analytic]", 'contexts = [1024, 4096]':
                'contexts = [1024, 4096]\nprices = [1.0, 2.5]\nphases = ["decode", "prefill"]'})
    w = expand(s)
    assert len(w.groups) == 2 * 2                       # plans x phases
    assert all(g.n_points == 3 * 2 * 2 for g in w.groups)
    assert w.points == 4 * 12 and w.skipped == ()
    assert [g.first_point for g in w.groups] == [0, 12, 24, 36]
    assert len(w.chunks) == math.ceil(48 / 5)
    covered = [i for c in w.chunks for i in range(c.start, c.stop)]
    assert covered == list(range(48))                   # every point once, in order


def test_ranges_are_rounded_and_deduplicated():
    s = spec(**{"batches = [1, 8, 64]": 'batches = {start = 1, stop = 10, num = 20, scale = "log"}'})
    b = s.analytic.batches
    assert b[0] == 1 and b[-1] == 10 and list(b) == sorted(set(b)) and all(float(x).is_integer() for x in b)


def test_invalid_plans_are_skipped_with_reason_not_dropped_silently():
    # llama-3.1-8b has 32 heads / 8 KV heads: tp 3 cannot split it; ep on a dense model is invalid
    w = expand(spec(**{"plans = [{tp = 1}, {tp = 2}]": 'plans = [{tp = 1}, "tp3", {tp = 2, ep = 2}]'}))
    assert len(w.groups) == 1
    reasons = " | ".join(s.reason for s in w.skipped)
    assert "tp 3" in reasons and "ep 2" in reasons
    assert sum(s.points for s in w.skipped) == 2 * 6


def test_contexts_past_the_models_limit_are_skipped_and_counted():
    w = expand(spec(**{"contexts = [1024, 4096]": "contexts = [1024, 200000, 400000]"}))
    assert all(g.contexts == (1024.0,) for g in w.groups)
    (s,) = w.skipped
    assert s.points == 2 * 3 * 2 and "context limit" in s.reason


def test_a_spec_where_everything_is_skipped_is_an_error():
    with pytest.raises(SpecError, match="nothing to run"):
        expand(spec(**{"plans = [{tp = 1}, {tp = 2}]": 'plans = ["tp3"]'}))


def test_auto_plans_are_the_planners_candidates():
    from llmecon.catalog.hardware import get_system
    from llmecon.catalog.models import get_model
    from llmecon.econ.planner import candidate_plans

    w = expand(spec(**{"plans = [{tp = 1}, {tp = 2}]": 'plans = "auto"\nmax_chips = 8'}))
    expected = candidate_plans(get_model("llama-3.1-8b"), get_system("hgx-h100"), max_chips=8)
    assert [g.plan for g in w.groups] == expected


def test_spec_hash_is_stable_and_changes_with_the_spec():
    a, b = expand(spec()), expand(spec())
    assert a.spec_hash == b.spec_hash
    assert expand(spec(**{"[1, 8, 64]": "[1, 8, 32]"})).spec_hash != a.spec_hash
    assert expand(spec(**{'name = "t"': 'name = "t"\nchunk_points = 7'})).spec_hash != a.spec_hash
