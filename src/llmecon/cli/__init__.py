"""Command line: parse -> library call -> report view. No formulas here.

Flags mean the same in every command (``options.py``). Bad input exits 2 with one line on stderr;
--json prints one JSON object. Library imports are deferred so that ``llmecon --help`` stays fast.
"""

from __future__ import annotations


COMMAND_MODULES = ("analyze", "context", "prices", "serving", "training", "moe", "plan", "measure", "sweep", "fidelity",
                   "web", "lecture", "tco")


def flag(field: str) -> str:
    """How the CLI spells a library field in messages: ``weight_dtype`` -> ``--weight-dtype``."""
    return field if field.startswith("-") else "--" + field.replace("_", "-")


# the command modules that register each top-level command (tests/cli/test_lazy_commands.py checks it
# against the full registration); ``main`` imports only the invoked command's, so that one command
# does not pay for the imports and the parameter building of all the others
COMMANDS = {"analyze": ("analyze",), "step": ("analyze",), "batch": ("analyze",), "model": ("analyze",),
            "catalog": ("analyze", "context", "training"), "context": ("context",), "cost": ("context",),
            "cache": ("context",), "prices": ("prices",), "simulate": ("serving",), "train": ("training",),
            "overtrain": ("training",),
            "moe": ("moe",), "plan": ("plan",), "measure": ("measure",), "sweep": ("sweep",),
            "predict": ("fidelity",), "calibrate": ("fidelity",), "validate": ("fidelity",), "web": ("web",),
            "lecture": ("lecture",), "tco": ("tco",)}


def _invoked(argv) -> str | None:
    """The command word of ``argv`` (its first argument not starting with '-'), or None."""
    try:
        argv = split_ignore_fields(list(argv))[0]
    except ValueError:
        pass
    return next((a for a in argv if not a.startswith("-")), None)


def build_app(argv: list[str] | None = None):
    """The typer app with the command modules registered (each decorates ``options.app``): only
    those of the command ``argv`` invokes when it names a known one, and then a copy of the app
    holding that command alone; else all (help, no command, a misspelt one: typer then lists every
    command or suggests the nearest)."""
    import importlib

    from .options import app

    invoked = _invoked(argv or []) if argv is not None else None
    names = COMMANDS.get(invoked, COMMAND_MODULES)
    for name in names:
        importlib.import_module(f".{name}", __name__)
    if invoked not in COMMANDS:
        return app
    # only the invoked command is built into click parameters (its module's others are not: ~3 ms);
    # a copy, so that the shared app keeps every registration
    import copy

    one = copy.copy(app)
    one.registered_commands = [c for c in app.registered_commands if (c.name or c.callback.__name__) == invoked]
    one.registered_groups = [g for g in app.registered_groups if g.name == invoked]
    return one


#: the largest magnitude any numeric option takes: no quantity llmecon reads is near it (a frontier
#: training run is ~1e27 FLOP but no option takes FLOPs; token counts stay below 1e15, prices below 1e6)
MAX_FLOAT_OPTION = 1e24
MAX_INT_OPTION = 2 ** 62  # numpy's int64 arrays hold it (larger whole numbers overflow them)


def _bad_value(value) -> str | None:
    """What is wrong with a parsed option value (or each item of a repeated one), or None."""
    import math

    for v in value if isinstance(value, (list, tuple)) else (value,):
        if isinstance(v, float) and not math.isfinite(v):
            return f"must be a finite number, got {v!r}"
        if isinstance(v, float) and abs(v) > MAX_FLOAT_OPTION:
            return f"must be at most {MAX_FLOAT_OPTION:g} in size (no input llmecon takes is larger), got {v:g}"
        if isinstance(v, int) and not isinstance(v, bool) and abs(v) > MAX_INT_OPTION:
            return f"must be at most 2^62 in size, got {v:,}"
        if isinstance(v, str) and not v.strip():
            return "is empty; give a value or leave the option out"
    return None


def _harden(cmd) -> None:
    """Walk the command tree: every option refuses, in one line with exit 2, a value that would be
    silently reinterpreted or reach a formula as garbage: NaN and infinity (``--context nan``), numbers
    past any sensible size, and empty strings (``--plot ''`` would otherwise mean "no plot")."""
    from ..errors import SpecError

    for param in getattr(cmd, "params", ()):
        def process(ctx, value, _orig=param.process_value, _param=param):
            v = _orig(ctx, value)
            problem = _bad_value(v) if v is not None else None
            if problem:
                name = max(getattr(_param, "opts", None) or [_param.name], key=len)
                raise SpecError(problem, field=name)
            return v

        param.process_value = process
    for sub in getattr(cmd, "commands", {}).values():
        _harden(sub)


def _one_line(message: str) -> None:
    import typer

    typer.echo(f"error: {' '.join(message.split())}", err=True)


def command(argv: list[str] | None = None):
    """The click command behind ``llmecon`` (the modules ``argv`` needs registered, all without it), its
    options hardened (``_harden``), and
    bad input as one line and exit 2 (``LlmeconError``; ``OSError`` on a path the user gave;
    ``MemoryError`` from sizes past what the machine holds). ``main`` runs it; tests drive it with
    ``typer.testing.CliRunner`` as a user does."""
    import typer

    from ..errors import LlmeconError

    from .coerce import native_coercion

    cmd = typer.main.get_command(build_app(argv))
    _harden(cmd)
    native_coercion(cmd)  # plain option values parsed without importing pydantic (typer 0.28+)
    invoke = cmd.invoke

    def guarded(ctx):
        from ..files import all_or_nothing

        try:
            with all_or_nothing():  # every output renamed into place only when the whole run succeeded
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
    cmd.main = _one_line_usage_errors(cmd.main)
    return cmd


def split_ignore_fields(argv: list[str]) -> tuple[list[str], tuple[str, ...]]:
    """(argv without its ``--ignore-field NAME`` / ``--ignore-field=NAME`` pairs, the names). The option
    belongs to every command that reads ``--model``: config fields the user knows to be harmless are read
    as absent (``catalog.models.ignoring_fields``) and listed in ``ignored_fields``."""
    out, names, i = [], [], 0
    while i < len(argv):
        a = argv[i]
        if a == "--ignore-field":
            if i + 1 >= len(argv) or argv[i + 1].startswith("-"):
                raise ValueError("--ignore-field needs a config field name (e.g. --ignore-field logit_scale)")
            names.append(argv[i + 1])
            i += 2
            continue
        if a.startswith("--ignore-field="):
            names.append(a.split("=", 1)[1])
        else:
            out.append(a)
        i += 1
    return out, tuple(names)


def _one_line_usage_errors(main):
    """``main`` with click's own input errors (an unknown option or choice, a value of the wrong type: raised
    while parsing, before ``guarded`` runs) shown as one ``error:`` line, exit 2, instead of click's usage block,
    as every other bad input is. Typer vendors click, so its exceptions are recognised by what they carry."""
    import sys

    def run(*args, standalone_mode: bool = True, **kwargs):
        given = kwargs.get("args") if "args" in kwargs else (args[0] if args else None)
        if given is not None:  # --ignore-field NAME, wherever it stands (the one shared --model option)
            kwargs.pop("args", None)
            argv = list(given)
            if args:
                args = args[1:]
            try:
                argv, ignore = split_ignore_fields(argv)
            except ValueError as exc:
                _one_line(str(exc))
                sys.exit(2)
            from ..catalog.models import ignoring_fields

            with ignoring_fields(ignore):
                return _run(argv, *args, standalone_mode=standalone_mode, **kwargs)
        return _run(None, *args, standalone_mode=standalone_mode, **kwargs)

    def _run(argv, *args, standalone_mode: bool = True, **kwargs):
        if argv is not None:
            kwargs["args"] = argv
        if not standalone_mode:
            return main(*args, standalone_mode=False, **kwargs)
        try:
            code = main(*args, standalone_mode=False, **kwargs)
        except Exception as exc:  # noqa: BLE001 - click's ClickException family, by duck type
            if not (hasattr(exc, "format_message") and isinstance(getattr(exc, "exit_code", None), int)):
                raise
            if type(exc).__name__ == "NoArgsIsHelpError":  # a bare group: its help, as click shows it
                exc.show()
                sys.exit(exc.exit_code)
            where = getattr(getattr(exc, "ctx", None), "command_path", None) or "llmecon"
            message = exc.format_message().replace("Value error, ", "").rstrip(".")  # pydantic's prefix
            _one_line(f"{message}; {where} -h lists the options")
            sys.exit(exc.exit_code)
        sys.exit(code if isinstance(code, int) else 0)

    return run


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the app (only the invoked command's module registered, ``build_app``), turning
    bad input into one line and exit code 2."""
    import sys

    args = sys.argv[1:] if argv is None else argv
    command(args).main(args=list(args), prog_name="llmecon", standalone_mode=True)
