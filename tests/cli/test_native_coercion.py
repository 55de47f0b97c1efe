"""Option values parsed without pydantic (``cli/coerce.py``, issue 23 cold start) must come out exactly
as typer's own pydantic coercion gives them: same value and type for every spelling it accepts,
typer's message for every one it refuses."""

from __future__ import annotations

import subprocess
import sys
from enum import Enum

import pytest
import typer
from cli_run import SRC, invoke, modules_after

from llmecon.cli.coerce import _Native, native_coercion



SPELLINGS = ["4", "+4", "-4", "0", "00012", " 4", "4 ", "4.0", "4.5", "-0.5", "1_000", "1e3", "1E-3", "2.5e+2", ".5",
             "5.", "0x10", "inf", "-inf", "nan", "Infinity", "", "abc", "\u0664", "\uff11\uff12", "true", "False",
             "yes", "off", "t", "ideal", "IDEAL", "calibrated", "9" * 30, "9" * 200, "a\udcff", 4096, 4096.0, 2 ** 60,
             True, False]


class Colour(str, Enum):
    red = "red"
    green = "green"


def _app():
    app = typer.Typer()

    @app.command()
    def run(s: str = "x", i: int = 1, f: float = 1.0, b: bool = False, c: Colour = Colour.red,
            oi: int | None = None, of: float | None = None) -> None:  # pragma: no cover - not invoked
        pass

    return app


def _params(native: bool):
    cmd = typer.main.get_command(_app())
    if native:
        native_coercion(cmd)
    return {p.name: p for p in cmd.params}


def _outcome(param, value):
    try:
        out = param.get_runtime_param().coerce(value, param=param, ctx=None)
        return "ok", repr(out), type(out)  # repr: nan == nan
    except Exception as exc:  # the refusal typer would print
        return "refused", type(exc).__name__, str(exc)


@pytest.mark.parametrize("name", ["s", "i", "f", "b", "c", "oi", "of"])
def test_native_coercion_matches_typers_pydantic_coercion(name):
    typer_param, native_param = _params(False)[name], _params(True)[name]
    assert isinstance(native_param.get_runtime_param(), _Native)
    for value in SPELLINGS:
        assert _outcome(native_param, value) == _outcome(typer_param, value), (name, value)


def test_plain_spellings_take_the_native_path():
    p = _params(True)
    assert p["i"].get_runtime_param().parse("12", p["i"], None) == 12
    assert p["f"].get_runtime_param().parse("1e3", p["f"], None) == 1000.0
    assert p["c"].get_runtime_param().parse("green", p["c"], None) is Colour.green
    assert p["i"].get_runtime_param().typer_param is None  # typer's coercer (pydantic) never built


def test_cli_refusals_keep_typers_messages():
    code, out = invoke(["analyze", "--mode", "ideal", "--tp", "4.5"])
    assert code == 2 and "Input should be a valid integer" in out
    code, out = invoke(["analyze", "--mode", "fast"])
    assert code == 2 and "'fast' is not one of 'ideal', 'calibrated'" in out


def test_analyze_does_not_import_pydantic():
    assert "pydantic" not in modules_after(["analyze", "--mode", "ideal", "--json", "--tp", "4", "--context",
                                            "8192", "--mode",
                                             "ideal"])


def test_help_does_not_import_pydantic():
    code = "import sys\nfrom llmecon.cli import main\ntry: main(['analyze', '--help'])\nexcept SystemExit: pass\n" \
           "print('pydantic' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], env={"PYTHONPATH": SRC, "PATH": ""}, capture_output=True,
                         text=True, check=True).stdout
    assert out.strip().endswith("False")
