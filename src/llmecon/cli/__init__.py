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


def build_app():
    """The typer app with every command registered (each command module decorates ``options.app``)."""
    import importlib

    from .options import app

    for name in COMMAND_MODULES:
        importlib.import_module(f".{name}", __name__)
    return app


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the app, turning library errors into one line and exit code 2."""
    import typer

    from ..errors import LlmeconError

    app = build_app()
    try:
        app(args=argv, prog_name="llmecon", standalone_mode=True)
    except LlmeconError as exc:
        typer.echo(f"error: {exc.render(flag)}", err=True)
        sys.exit(2)
