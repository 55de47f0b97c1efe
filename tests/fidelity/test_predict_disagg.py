"""predict's disaggregated rows (issue 22 item 2): columns, errors naming the column, aggregated rows unchanged."""

from __future__ import annotations

import pytest

from llmecon.errors import CatalogError
from llmecon.fidelity.predict import OUTPUT_COLUMNS, parse_cases, predict_cases, write_cases
from llmecon.resolve import deployment
from llmecon.serving.disaggregated import disaggregated_state
from llmecon.serving.steady_state import steady_state

HEAD = "model,system,phase,batch,prompt_tokens,output_tokens,deployment,prefill_plan,prefill_workers,decode_plan," \
       "decode_workers,tp\n"


def _rows(*lines: str) -> list[dict]:
    return parse_cases(HEAD + "\n".join(lines) + "\n")


def test_disaggregated_row_is_the_closed_loop():
    rows = _rows('llama-3.1-70b,hgx-h100,serving,8,1000,500,disaggregated,"tp8,ep1",2,tp8·ep1·pp1,4,')
    out = predict_cases(rows)[0]
    dep = deployment("llama-3.1-70b", "hgx-h100", tp=8)
    s = disaggregated_state(dep, dep, concurrency=8, prompt_tokens=1000, output_tokens=500, prefill_workers=2,
                            decode_workers=4)
    assert out["tpot_s"] == float(s.tpot_s) and out["ttft_s"] == float(s.ttft_s)
    assert out["kv_transfer_s"] == float(s.kv_transfer_s) and out["effective_batch"] == float(s.decode_batch)
    assert out["chips"] == 2 * 8 + 4 * 8
    assert out["tokens_per_s"] == pytest.approx(float(s.output_tokens_per_s))
    text = write_cases([out])
    assert "kv_transfer_s" in text.splitlines()[0]


def test_aggregated_rows_unchanged():
    """A file without the disaggregated columns predicts and writes exactly as the aggregated path: the
    serving row is serving.steady_state and the header has no disaggregated columns."""
    rows = parse_cases("model,system,phase,batch,prompt_tokens,output_tokens,tp\n"
                       "llama-3.1-70b,hgx-h100,serving,8,1000,500,8\n")
    out = predict_cases(rows)
    dep = deployment("llama-3.1-70b", "hgx-h100", tp=8)
    ss = steady_state(dep, concurrency=8, prompt_tokens=1000, output_tokens=500)
    assert out[0]["tpot_s"] == float(ss.tpot_s) and out[0]["ttft_s"] == float(ss.ttft_s)
    header = write_cases(out).splitlines()[0].split(",")
    assert header == ["model", "system", "phase", "batch", "prompt_tokens", "output_tokens", "tp",
                      *OUTPUT_COLUMNS]
    # an explicit 'aggregated' (or empty deployment) row prices the same
    both = _rows("llama-3.1-70b,hgx-h100,serving,8,1000,500,aggregated,,,,,8",
                 "llama-3.1-70b,hgx-h100,serving,8,1000,500,,,,,,8")
    got = predict_cases(both)
    assert got[0]["tpot_s"] == got[1]["tpot_s"] == out[0]["tpot_s"]


@pytest.mark.parametrize("line, column", [
    ("llama-3.1-70b,hgx-h100,serving,8,1000,500,disagg,tp8·ep1,,tp8·ep1,,", "deployment"),
    ("llama-3.1-70b,hgx-h100,serving,8,1000,500,disaggregated,tp8·xp1,,tp8·ep1,,", "prefill_plan"),
    ("llama-3.1-70b,hgx-h100,serving,8,1000,500,disaggregated,tp8·ep1,,,,", "decode_plan"),
    ("llama-3.1-70b,hgx-h100,serving,8,1000,500,disaggregated,tp8·ep1,0,tp8·ep1,,", "prefill_workers"),
    ("llama-3.1-70b,hgx-h100,serving,8,1000,500,disaggregated,tp8·ep1,,tp8·ep1,1.5,", "decode_workers"),
    ("llama-3.1-70b,hgx-h100,serving,8,1000,500,disaggregated,tp8·ep1,,tp8·ep1,2000000,", "decode_workers"),
    ("llama-3.1-70b,hgx-h100,serving,8,1000,500,disaggregated,tp8·ep1,inf,tp8·ep1,,", "prefill_workers"),
    ("llama-3.1-70b,hgx-h100,serving,8,1000,500,,tp8·ep1,,,,8", "prefill_plan"),
    ("llama-3.1-70b,hgx-h100,serving,8,1000,500,disaggregated,tp8·ep1,,tp8·ep1,,8", "tp"),
    ("llama-3.1-70b,hgx-h100,decode,8,1000,500,disaggregated,tp8·ep1,,tp8·ep1,,", "deployment"),
])
def test_bad_disaggregated_rows_name_the_column(line, column):
    with pytest.raises(CatalogError, match=rf"line 2 {column}\b"):
        predict_cases(_rows(line))


def test_plan_that_does_not_fit_the_model_names_the_role():
    with pytest.raises(Exception, match="decode_plan"):
        predict_cases(_rows("llama-3.1-70b,hgx-h100,serving,8,1000,500,disaggregated,tp8·ep1,,tp3·ep1,,"))


def test_prefill_plan_that_does_not_fit_names_prefill_plan():
    """Llama-3.1-70B bf16 on one H100: 141 GB of weights over 80 GB: refused, naming prefill_plan."""
    with pytest.raises(CatalogError, match=r"prefill_plan: tp1·ep1·pp1 does not fit hgx-h100"):
        predict_cases(_rows("llama-3.1-70b,hgx-h100,serving,8,1000,500,disaggregated,tp1·ep1,,tp8·ep1,,"))


def test_mtp_on_the_decode_workers():
    """Speculative decoding on disaggregated decode workers (issue 34 item 3): the row's spec columns go to the
    decode workers only; the step's TPOT is the speculative iteration (verify + draft, step.speculative) over
    E = 1.85 (k 1, a 0.85); at one client (a memory-bound decode of one sequence) it is faster than plain."""
    from llmecon.step.disaggregated import disaggregated_of
    from llmecon.step.speculative import speculative_of

    head = "model,system,phase,batch,prompt_tokens,output_tokens,deployment,prefill_plan,decode_plan,spec_tokens\n"
    line = "deepseek-v3,gb200-nvl72,serving,1,1000,200,disaggregated,tp1·ep8,tp1·ep8,{}\n"
    spec, plain = (predict_cases(parse_cases(head + line.format(k)))[0] for k in ("1", ""))
    assert spec["tokens_per_step"] == pytest.approx(1.85, rel=1e-12) and plain["tokens_per_step"] == ""
    assert spec["tpot_s"] < plain["tpot_s"]
    p = deployment("deepseek-v3", "gb200-nvl72", tp=1, ep=8)
    d = deployment("deepseek-v3", "gb200-nvl72", tp=1, ep=8, spec_tokens=1)
    s = disaggregated_state(p, d, concurrency=1, prompt_tokens=1000, output_tokens=200)
    assert spec["tpot_s"] == float(s.tpot_s) and spec["ttft_s"] == float(s.ttft_s)
    step = disaggregated_of(p, d, prefill_batch=1.0, decode_batch=3.0, prompt_tokens=1000, output_tokens=200)
    it = speculative_of(d, batch=3.0, context=1000 + 199 / 2)
    assert float(step.tpot_s) == pytest.approx(float(it.step_s) / 1.85, rel=1e-12)
