"""Command line: parse -> library call -> report view. No formulas here.

Flags mean the same in every command (``options.py``). Bad input exits 2 with one line on stderr;
--json prints one JSON object. Library imports are deferred so that ``llmecon --help`` stays fast.
"""

from __future__ import annotations

import sys

COMMAND_MODULES = ("analyze", "context", "serving", "training", "moe", "plan", "measure", "sweep", "fidelity", "web",
                   "lecture")


def flag(field: str) -> str:
    """How the CLI spells a library field in messages: ``weight_dtype`` -> ``--weight-dtype``."""
    return field if field.startswith("-") else "--" + field.replace("_", "-")


# the command modules that register each top-level command (tests/cli/test_lazy_commands.py checks it
# against the full registration); ``main`` imports only the invoked command's, so that one command
# does not pay for the imports and the parameter building of all the others
COMMANDS = {"analyze": ("analyze",), "step": ("analyze",), "batch": ("analyze",), "model": ("analyze",),
            "catalog": ("analyze", "context"), "context": ("context",), "cost": ("context",), "cache": ("context",),
            "prices": ("context",), "simulate": ("serving",), "train": ("training",), "overtrain": ("training",),
            "moe": ("moe",), "plan": ("plan",), "measure": ("measure",), "sweep": ("sweep",),
            "predict": ("fidelity",), "calibrate": ("fidelity",), "validate": ("fidelity",), "web": ("web",),
            "lecture": ("lecture",)}


def _invoked(argv) -> str | None:
    """The command word of ``argv`` (its first argument not starting with '-'), or None."""
    return next((a for a in argv if not a.startswith("-")), None)


def build_app(argv: list[str] | None = None):
    """The typer app with the command modules registered (each decorates ``options.app``): only
    those of the command ``argv`` invokes when it names a known one, else all (help, no command, a
    misspelt one: typer then lists every command or suggests the nearest)."""
    import importlib

    from .options import app

    names = COMMANDS.get(_invoked(argv or []), COMMAND_MODULES) if argv is not None else COMMAND_MODULES
    for name in names:
        importlib.import_module(f".{name}", __name__)
    return app


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the app, turning library errors into one line and exit code 2."""
    import typer

    from ..errors import LlmeconError

    app = build_app(sys.argv[1:] if argv is None else argv)
    try:
        app(args=argv, prog_name="llmecon", standalone_mode=True)
    except LlmeconError as exc:
        typer.echo(f"error: {exc.render(flag)}", err=True)
        sys.exit(2)
