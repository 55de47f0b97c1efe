"""The typer app and the options every command shares: --model, --system, --weight-dtype,
--kv-dtype, --tp, --ep, --pp, --adp, --redundant-experts, --mode, --profile, --engine, --spec-tokens, --acceptance,
--draft, --json, and the helpers that turn them into
a Deployment, print tables and fail with one line. Command modules import from here; nothing here
imports a command module (``cli/__init__.py`` registers them)."""

from __future__ import annotations

import json
from enum import Enum
from typing import Annotated, Optional

import typer

app = typer.Typer(add_completion=False, no_args_is_help=True, rich_markup_mode=None, pretty_exceptions_enable=False,
                  context_settings={"help_option_names": ["-h", "--help"]},
                  help="llmecon: step time, batch economics and $/token of LLM serving, from any config.json.")


def _version(value: bool) -> None:
    if value:
        from .. import __version__

        typer.echo(f"llmecon {__version__}")
        raise typer.Exit()


@app.callback()
def _root(version: Annotated[bool, typer.Option("--version", "-V", callback=_version, is_eager=True,
                                                help="Print the version and exit.")] = False) -> None:
    """llmecon: step time, batch economics and $/token of LLM serving, from any config.json."""
catalog_app = typer.Typer(add_completion=False, no_args_is_help=True, help="List the built-in catalogue.")
app.add_typer(catalog_app, name="catalog")


class Phase(str, Enum):
    decode = "decode"
    prefill = "prefill"


class Schedule(str, Enum):
    gpipe = "gpipe"
    one_f_one_b = "1f1b"
    interleaved = "interleaved"
    zero_bubble = "zero-bubble"
    dualpipe = "dualpipe"


class Recompute(str, Enum):
    none = "none"
    selective = "selective"
    full = "full"
    reversible = "reversible"


class Objective(str, Enum):
    cost = "cost"
    throughput = "throughput"


class Mode(str, Enum):
    ideal = "ideal"
    calibrated = "calibrated"
    auto = "auto"


JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON object instead of tables.")]


def _fail(message: str) -> None:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(2)


def _emit_json(obj: dict) -> None:
    """Print one JSON object, made JSON-safe as the web's (``units.to_json``: numpy to Python,
    inf/NaN to null); ``allow_nan=False`` guards the rule."""
    from ..units import to_json

    typer.echo(json.dumps(to_json(obj), indent=2, allow_nan=False))


def _fidelity(mode: Mode, profile: str | None, system=None, engine: str | None = None):
    """(mode name, profile) from --mode/--profile/--engine (``resolve.fidelity``)."""
    from ..resolve import fidelity

    return fidelity(mode.value, profile, system, engine)


PIPE_WIDTH = 160  # text width when stdout is not a terminal and COLUMNS is unset (rich's default is 80)


def _console():
    """The console every command prints to. Tables never cut a cell to "…": every column folds
    (wraps) what does not fit, so a name stays whole and copyable; piped output is widened to
    ``PIPE_WIDTH`` unless COLUMNS says otherwise."""
    import os

    from rich.console import Console
    from rich.table import Table

    class _Folding(Console):
        def print(self, *objects, **kwargs):
            for obj in objects:
                if isinstance(obj, Table):
                    for i, column in enumerate(obj.columns):
                        column.overflow = "fold"
                        column.no_wrap = column.no_wrap or i == 0  # the name column shrinks last
            return super().print(*objects, **kwargs)

    console = _Folding()
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console.width = max(console.width, PIPE_WIDTH)
    return console


def _show(view: list, console=None) -> None:
    """Print a command's text view (report/: its tables and lines, in order) to ``console`` (default: a new one)."""
    from ..report.tables import Line

    console = console or _console()
    for item in view:
        if isinstance(item, Line):
            console.print(item.text, soft_wrap=item.soft_wrap, markup=item.markup, highlight=item.highlight)
        else:
            console.print(item)


def _check_plot_path(path: str, field: str = "plot") -> None:
    """A --plot path checked before any work (``files.check_output``)."""
    from ..files import check_output

    check_output(path, field=field, suffixes=(".png", ".svg", ".pdf"))


class PriceBasis(str, Enum):
    tco = "tco"
    rent = "rent"


class PowerBasisChoice(str, Enum):
    facility = "facility"
    tdp = "tdp"


def _power_basis(system, rate=None, basis="facility"):
    """The watts per chip tokens/s per MW divide by (``econ.tco.power_for``)."""
    from ..econ.tco import power_for

    return power_for(system, rate, getattr(basis, "value", basis))


# ---- options generated from the request classes (commands.args: each option declared once) ----------------

#: the CLI's type of each value kind the front-ends spell differently (``commands.args``)
_KINDS = {"mode": Mode, "phase": Phase, "price_basis": PriceBasis, "power_basis": PowerBasisChoice,
          "acceptance": Optional[str], "tco": Optional[str], "systems": str, "duration": str, "prices": Optional[str],
          "objective": Optional[Objective], "lengths": Optional[str], "repeated": list[str], "policy": str,
          "optional_mode": Optional[Mode], "schedule": Schedule, "recompute": Recompute,
          "repeated_float": list[float]}


def request_params(cls, *, exclude=(), defaults=None) -> list:
    """The typer parameters of request class ``cls``: one option per field the CLI offers (its flags, help,
    default and type from the field's ``commands.args.Opt``), ``exclude`` left out, ``defaults`` overriding."""
    import dataclasses
    import inspect
    from typing import get_type_hints

    from ..commands.args import flags_of, opt_of

    hints = get_type_hints(cls)
    params = []
    for f in dataclasses.fields(cls):
        opt = opt_of(f)
        if opt is None or not opt.cli or f.name in exclude:
            continue
        typ = _KINDS.get(opt.kind, hints[f.name])
        default = (defaults or {}).get(f.name, f.default)
        if isinstance(typ, type) and issubclass(typ, Enum) and default is not None:
            default = typ(default)
        elif isinstance(default, tuple):
            default = list(default)
        if opt.required:
            default = inspect.Parameter.empty
        how = typer.Argument(help=opt.help) if opt.positional else typer.Option(*flags_of(f.name, opt), help=opt.help)
        params.append(inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=default,
                                        annotation=Annotated[typ, how]))
    return params


def takes(cls, *, exclude=(), **defaults):
    """Decorator of a CLI command ``fn(req, **front_end_options)``: its options are request class ``cls``'s
    fields (``request_params``) followed by ``fn``'s own (``--json``, ``--plot``, a ``typer.Context``...); the
    values parsed become ``cls(...)`` (enums as their values), passed as ``req``."""
    import inspect
    from typing import get_type_hints

    def deco(fn):
        own = [p for p in inspect.signature(fn).parameters.values() if p.name != "req"]
        hints = get_type_hints(fn, include_extras=True)
        own = [p.replace(annotation=hints.get(p.name, p.annotation), kind=inspect.Parameter.KEYWORD_ONLY)
               for p in own]
        fields = request_params(cls, exclude=exclude, defaults=defaults)
        names = {p.name for p in fields}

        def command(**kw):
            req = cls(**{k: getattr(kw[k], "value", kw[k]) if isinstance(kw[k], Enum) else kw[k] for k in names})
            return fn(req=req, **{k: v for k, v in kw.items() if k not in names})

        params = fields + own
        command.__signature__ = inspect.Signature(params)
        command.__annotations__ = {p.name: p.annotation for p in params}
        command.__name__, command.__doc__, command.__module__ = fn.__name__, fn.__doc__, fn.__module__
        return command

    return deco


def option(cls, name: str):
    """The typer annotation of request field ``name`` of ``cls``, for a command that takes it beside
    positional arguments (predict, calibrate, validate)."""
    return next(p.annotation for p in request_params(cls) if p.name == name)
