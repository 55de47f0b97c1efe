"""``POST /api/train``: ``llmecon train --json`` on the web (cli/training.py is the reference). The same library
calls in the same order -- ``resolve.training_dp``, ``econ.training_step.TrainPlan``/``train_step``,
``resolve.training_fidelity``, ``econ.training_goodput.goodput_inputs``, ``econ.training_memory.require_fit`` --
and the same view, ``report.training.train_dict`` (+ ``published_dict`` for a preset).

A preset (``catalog.training_runs.preset_options``, shared with ``train --preset``) fills every field the request
does not set (pydantic's ``model_fields_set``; a field set to null counts as not set); the fields set that change
the prediction are its ``changed_options``.
"""

from __future__ import annotations

from ..errors import LlmeconError, SpecError
from . import schemas as S

#: pipeline stages x micro-batches x virtual stages of an interleaved plan: the memory walk visits each
#: micro-batch chunk of every rank in Python (``econ.training_memory.peak_in_flight``; measured 2026-11-27 on
#: the 2-core CI machine: 16 x 36,864 x 7 = 4.1e6 visits answer in 0.8 s, benchmarks/results/web_train_2026-11-27.md),
#: so a web request is held near a second. The closed-form schedules (1f1b, gpipe, zero-bubble, dualpipe) need none.
TRAIN_WALK_MAX = 4_194_304

#: preset options that are enums in the schema (values checked against the schema before use)
_ENUMS = ("schedule", "recompute", "precision", "ema", "model", "system")


def _preset(body: S.TrainIn) -> tuple[dict, object, tuple[str, ...], bool]:
    """(options, run or None, changed options, layout changed): the body's fields, filled from its preset where
    not set (``catalog.training_runs.preset_options``, as the CLI's --preset)."""
    params = body.model_dump(exclude={"preset"})
    if body.preset is None:
        return params, None, (), False
    from ..catalog.training_runs import get_training_run, preset_options

    run = get_training_run(body.preset)
    given = {k: params[k] for k in body.model_fields_set if k in params and params[k] is not None}
    defaults = {k: f.default for k, f in S.TrainIn.model_fields.items() if k != "preset"}
    chosen = preset_options(run, given, defaults)
    return chosen.options, run, chosen.changed, chosen.layout_changed


def _check_walk(p: dict, plan) -> None:
    """Refuse an interleaved plan whose memory walk is over ``TRAIN_WALK_MAX`` (field global_batch_tokens)."""
    if plan.schedule != "interleaved" or plan.pp == 1:
        return
    visits = plan.pp * plan.chunks * p["global_batch_tokens"] / p["seq_len"] / (plan.dp * plan.microbatch)
    if visits > TRAIN_WALK_MAX:
        raise SpecError(f"pp × micro-batches × chunks = {visits:,.0f} is over {TRAIN_WALK_MAX:,} for one web "
                        "request (the interleaved schedule's memory walk)", field="global_batch_tokens",
                        value=p["global_batch_tokens"],
                        fix="use fewer tokens per step, a larger {micro_batch} or {dp}, or run llmecon train")


def train_answer(body: S.TrainIn, priced) -> dict:
    """The JSON of ``llmecon train --json`` for ``body`` (not yet made JSON-safe: ``units.to_json``).
    ``priced(system, price_per_gpu_hour)``: (USD per GPU-hour or None, TcoRate or None) from the rent or
    the body's ``tco`` object (the app's resolver, which locates a TCO error under ``tco``)."""
    p, run, changed, layout_changed = _preset(body)
    try:
        return _answer(p, run, changed, layout_changed, priced)
    except LlmeconError as exc:
        if run is not None and exc.field is not None:  # the field may be the preset's, not the request's
            exc.fix = (exc.fix + "; " if exc.fix else "") + f"preset {run.name} sets the fields not given"
        raise


def _answer(p: dict, run, changed: tuple, layout_changed: bool, priced) -> dict:
    """``train_answer`` once the preset is applied."""
    from ..catalog.efficiency import named_profile
    from ..catalog.hardware import get_system
    from ..catalog.models import get_model
    from ..econ.tco import power_for
    from ..econ.training_goodput import goodput_inputs
    from ..econ.training_memory import require_fit
    from ..econ.training_step import TrainPlan, train_step
    from ..errors import require_number
    from ..report.training import published_dict, train_dict
    from ..resolve import training_dp, training_fidelity

    if run is not None:  # a preset's names go through the schema's enums, as the CLI's do through its choices
        for key in _ENUMS:
            allowed = S.TrainIn.model_fields[key].annotation.__args__
            if p[key] not in allowed:
                from ..errors import unknown_name

                raise unknown_name(f"{key} in preset {run.name}", p[key], allowed, field="preset")
    m, s = get_model(p["model"]), get_system(p["system"])
    price, rate = priced(s, p["price_per_gpu_hour"])
    plan = TrainPlan(tp=p["tp"], pp=p["pp"], dp=training_dp(p["gpus"], p["dp"], p["tp"], p["pp"], p["cp"]),
                     ep=p["ep"], cp=p["cp"], microbatch=p["micro_batch"], schedule=p["schedule"], chunks=p["chunks"],
                     zero=p["zero"], recompute=p["recompute"], flash_attention=not p["eager_attention"],
                     dropout=p["dropout"], pp_trim=p["pp_trim"], grad_fp32=p["grad_fp32"],
                     bf16_moments=p["bf16_moments"], ema=p["ema"], recompute_norms=p["recompute_norms"],
                     recompute_mla_up=p["recompute_mla_up"], fp8_activations=p["fp8_activations"], mtp=p["mtp"],
                     fp8_dispatch=p["fp8_dispatch"], ep_node_limit=p["ep_node_limit"],
                     comm_sm_share=p["comm_sm_share"])
    _check_walk(p, plan)
    require_number("reserve_gb", p["reserve_gb"], minimum=0)
    profile = None if p["profile"] is None else named_profile(p["profile"])  # a shipped name, never a file
    prof, eff = training_fidelity(p["mode"], profile, s, p["efficiency"])
    st = train_step(m, s, plan, seq_len=p["seq_len"], global_batch_tokens=p["global_batch_tokens"], efficiency=eff,
                    dp_overlap=p["dp_overlap"], precision=p["precision"], reserve=p["reserve_gb"] * 1e9,
                    profile=prof, kernel_share=p["kernel_share"])
    gp = goodput_inputs(gpus=plan.gpus, checkpoint_s=p["checkpoint_s"], restart_s=p["restart_s"],
                        mtbf_gpu_hours=p["mtbf_gpu_hours"], checkpoint_interval_s=p["checkpoint_interval_s"])
    if run is None or layout_changed:  # the published layout did run: shown with fits false, as the CLI does
        require_fit(st.memory, model_name=m.name, plan_label=plan.label(), system_name=s.name)
    d = train_dict(st, m, s.name, tokens=p["tokens"], price_per_gpu_hour=price, dp_overlap=p["dp_overlap"],
                   goodput=gp, rate=rate, power=power_for(s, rate))
    if run is not None:
        d["published"] = published_dict(run, changed, d)
    return d
