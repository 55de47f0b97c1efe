"""Errors as data (errors.py): a LlmeconError carries field, rule, value and fix; the CLI and the web
render it with their own spelling; the core never spells a command-line flag."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from llmecon.catalog.hardware import get_system
from llmecon.catalog.models import get_model
from llmecon.cli import flag
from llmecon.errors import (CatalogError, SpecError, require_array, require_choice, require_number, require_whole,
                            template, unknown_name, with_field, without_field)
from llmecon.spec.plan import Plan

PKG = Path(__file__).resolve().parents[1] / "src" / "llmecon"


# ---- rendering --------------------------------------------------------------------------------


def test_a_spec_error_renders_in_cli_and_web_spellings():
    exc = SpecError("deepseek-v3 has 128 attention heads, not divisible by 3", field="tp", value=3,
                    fix="use a divisor of 128 or set {weight_dtype} fp8")
    assert exc.render(flag) == ("--tp 3: deepseek-v3 has 128 attention heads, not divisible by 3; "
                                "use a divisor of 128 or set --weight-dtype fp8")
    web = exc.render()  # the web keeps the library names
    assert web == str(exc) == ("tp 3: deepseek-v3 has 128 attention heads, not divisible by 3; "
                               "use a divisor of 128 or set weight_dtype fp8")


def test_a_field_with_an_underscore_is_a_dashed_flag():
    exc = SpecError("must be a finite number >= 0, got -1", field="price_per_chip_hour", value=-1, show_value=False)
    assert exc.render(flag) == "--price-per-chip-hour: must be a finite number >= 0, got -1"
    assert str(exc) == "price_per_chip_hour: must be a finite number >= 0, got -1"


def test_an_error_without_a_field_is_its_rule_with_placeholders_spelled():
    exc = SpecError("{input_step}/{output_step}: at least one must exceed 1")
    assert exc.field is None
    assert exc.render(flag) == "--input-step/--output-step: at least one must exceed 1"
    assert str(exc) == "input_step/output_step: at least one must exceed 1"


# ---- converted core errors carry their parts ---------------------------------------------------


def test_a_plan_error_carries_field_rule_value_and_fix():
    with pytest.raises(SpecError) as info:
        Plan(tp=3).validate(get_model("deepseek-v3"), get_system("gb200-nvl72"))
    exc = info.value
    assert (exc.field, exc.value) == ("tp", 3)
    assert exc.rule == "deepseek-v3 has 128 attention heads, not divisible by 3"
    assert exc.fix == "use a divisor of 128"
    assert exc.render(flag) == ("--tp 3: deepseek-v3 has 128 attention heads, not divisible by 3; "
                                "use a divisor of 128")


def test_require_number_carries_field_rule_value_and_fix():
    with pytest.raises(SpecError) as info:
        require_number("context", -5.0, minimum=1, hint="tokens")
    exc = info.value
    assert (exc.field, exc.value, exc.fix) == ("context", -5.0, "tokens")
    assert exc.rule == "must be a finite number >= 1, got -5.0"
    assert exc.render(flag) == "--context: must be a finite number >= 1, got -5.0; tokens"
    assert require_number("context", 4096, minimum=1) == 4096.0


@pytest.mark.parametrize("call, text", [
    (lambda: require_number("utilization", 1.5, minimum=0, exclusive=True, maximum=1),
     "utilization: must be in (0, 1], got 1.5"),
    (lambda: require_number("x", float("nan")), "x: must be a finite number, got nan"),
    (lambda: require_number("x", True), "x: must be a finite number, got True"),
    (lambda: require_whole("tp", 2.0), "tp: must be a whole number >= 1, got 2.0"),
    (lambda: require_whole("zero", -1, 0), "zero: must be a whole number >= 0, got -1"),
    (lambda: require_array("batch", [1, 0], minimum=0, exclusive=True), "batch: must be finite and > 0, got [1, 0]"),
    (lambda: require_array("batch", "many"), "batch: must be finite, got 'many'"),
    (lambda: require_choice("mode", "ideel", ("ideal", "calibrated")),
     "mode: must be one of ideal, calibrated, got 'ideel' (did you mean 'ideal'?)"),
])
def test_validators_name_the_field_the_rule_and_the_value(call, text):
    with pytest.raises(SpecError) as info:
        call()
    assert str(info.value).startswith(text)
    assert info.value.field == text.split(":")[0]


def test_an_owner_names_a_catalogue_entry_and_no_field():
    with pytest.raises(SpecError) as info:
        require_number("hbm_bytes", -1.0, minimum=0, exclusive=True, owner="accelerator toy")
    assert info.value.field is None and info.value.value == -1.0
    assert str(info.value) == "accelerator toy: hbm_bytes must be a finite number > 0, got -1.0"
    assert info.value.render(flag) == str(info.value)  # no flag is made up for a catalogue key


def test_without_field_keeps_the_text_for_a_number_no_front_end_takes():
    with pytest.raises(SpecError) as info:
        require_number("premium price ratio", 1.0, minimum=1, exclusive=True)
    exc = without_field(info.value)
    assert exc.field is None
    assert exc.render(flag) == str(exc) == "premium price ratio: must be a finite number > 1, got 1.0"


def test_with_field_and_template():
    exc = with_field(unknown_name("dtype", "fp9", ["fp8", "bf16"]), "weight_dtype")
    assert isinstance(exc, CatalogError) and exc.field == "weight_dtype"
    assert exc.render(flag).startswith("--weight-dtype: unknown dtype 'fp9' (did you mean 'fp8'?)")
    quoted = SpecError(f"nothing to run ({template(SpecError('x', field='tp', value=3, fix='try {ep} 2'))})")
    assert quoted.render(flag) == "nothing to run (--tp 3: x; try --ep 2)"
    assert str(quoted) == "nothing to run (tp 3: x; try ep 2)"


# ---- the rule stays enforced: no CLI flag in the core --------------------------------------------

CORE = ["spec", "step", "econ", "catalog", "sweep", "fidelity", "lecture", "resolve.py", "dtypes.py", "units.py"]
FLAG = re.compile(r"(^|\s)--[a-z]")
#: command lines of other programs, not flags of llmecon
ALLOWED = {"--query-gpu=driver_version", "--format=csv,noheader"}


def _strings(tree: ast.AST):
    """(line, text) of every string literal; an f-string's replacement fields read as 'x'."""
    parts = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            parts.update(id(v) for v in node.values)
            yield node.lineno, "".join(v.value if isinstance(v, ast.Constant) else "x" for v in node.values)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in parts:
            yield node.lineno, node.value


def _core_files() -> list[Path]:
    return sorted(f for name in CORE for f in ([PKG / name] if name.endswith(".py") else (PKG / name).rglob("*.py")))


def test_the_scan_sees_flags_in_plain_and_f_strings():
    tree = ast.parse('a = "--tp 3: x"\nb = f"lower --{name} or {x}"\nc = "x --weight-dtype fp8"\nd = "a--b"')
    assert [t for _, t in _strings(tree) if FLAG.search(t)] == ["lower --x or x", "--tp 3: x", "x --weight-dtype fp8"]


def test_no_core_module_spells_a_cli_flag():
    files = _core_files()
    assert len(files) > 40
    found = [f"{f.relative_to(PKG)}:{line}: {text[:80]!r}" for f in files
             for line, text in _strings(ast.parse(f.read_text(encoding="utf-8")))
             if FLAG.search(text) and text not in ALLOWED]
    assert not found, "name the field (field=..., {name} placeholders) instead:\n" + "\n".join(found)
