"""Command line: parse -> library call -> report view. No formulas here.

Flags mean the same in every command (``options.py``). Bad input exits 2 with one line on stderr;
--json prints one JSON object. Library imports are deferred so that ``llmecon --help`` stays fast.
"""

from __future__ import annotations


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


def _not_finite(value) -> bool:
    import math

    items = value if isinstance(value, (list, tuple)) else (value,)
    return any(isinstance(v, float) and not math.isfinite(v) for v in items)


def _harden(cmd) -> None:
    """Walk the command tree: every option that parses to a float refuses NaN and infinity
    (``--context nan`` would otherwise reach a formula or a fit check): one line, exit 2."""
    from ..errors import SpecError

    for param in getattr(cmd, "params", ()):
        def process(ctx, value, _orig=param.process_value, _param=param):
            v = _orig(ctx, value)
            if _not_finite(v):
                name = max(getattr(_param, "opts", None) or [_param.name], key=len)
                raise SpecError(f"must be a finite number, got {v!r}", field=name, fix="give a number such as 1.5")
            return v

        param.process_value = process
    for sub in getattr(cmd, "commands", {}).values():
        _harden(sub)


def _one_line(message: str) -> None:
    import typer

    typer.echo(f"error: {' '.join(message.split())}", err=True)


def command():
    """The click command behind ``llmecon``: every command registered, float options finite, and
    bad input as one line and exit 2 (``LlmeconError``; ``OSError`` on a path the user gave;
    ``MemoryError`` from sizes past what the machine holds). ``main`` runs it; tests drive it with
    ``typer.testing.CliRunner`` as a user does."""
    import typer

    from ..errors import LlmeconError

    cmd = typer.main.get_command(build_app())
    _harden(cmd)
    invoke = cmd.invoke

    def guarded(ctx):
        try:
            return invoke(ctx)
        except LlmeconError as exc:
            _one_line(exc.render(flag))
        except OSError as exc:  # a path the checks could not foresee (disk full, a name too long)
            where = f" {exc.filename}" if exc.filename else ""
            _one_line(f"cannot use{where}: {exc.strerror or exc}; check the path and the free space")
        except MemoryError:
            _one_line("ran out of memory; make the run smaller (fewer requests or tokens, a shorter sweep)")
        raise typer.Exit(2)

    cmd.invoke = guarded
    return cmd


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the app, turning bad input into one line and exit code 2."""
    command().main(args=argv, prog_name="llmecon", standalone_mode=True)
