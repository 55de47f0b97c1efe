"""Option values parsed without pydantic where that changes nothing (issue 23, cold start).

typer 0.28+ coerces every parameter through a pydantic ``TypeAdapter``, built when the parameter is
first processed: importing pydantic and building one adapter per option cost ~60 ms CPU of the
~240 ms that ``llmecon analyze`` took over ``import numpy``. ``native_coercion`` gives each plain
option (one ``str``, ``int``, ``float``, ``bool`` or ``Enum`` value; no parser, bounds, file or list)
a coercer that accepts only the unambiguous spellings -- an ASCII decimal integer, a decimal float,
an enum choice, an existing value of the right type -- with the result pydantic gives them
(``tests/cli/test_native_coercion.py`` checks it against typer's own adapters), and hands anything
else (``1_000``, `` 4``, ``inf``, ``4.0`` for an int, a typo) to typer's pydantic path, so values it
accepts and the messages it refuses with stay typer's. Relies on typer's ``_TyperParameter``
building its coercer lazily into ``_runtime_param``; with a typer that does not, it does nothing.
"""

from __future__ import annotations

import re
from enum import Enum

_INT = re.compile(r"[+-]?[0-9]+")
_FLOAT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_EXACT_INT_FLOAT = 2 ** 53  # ints that float() converts exactly


class _Defer(Exception):
    """The value is not one of the plain spellings: typer's own path decides."""


def _str(value, param, ctx):
    if type(value) is str:
        try:
            value.encode("utf-8")  # lone surrogates (undecodable argv bytes): typer's path decides
        except UnicodeError:
            raise _Defer from None
        return value
    raise _Defer


def _int(value, param, ctx):
    if type(value) is int:
        return value
    if type(value) is str and len(value) <= 100 and _INT.fullmatch(value):
        return int(value)
    raise _Defer


def _float(value, param, ctx):
    if type(value) is float:
        return value
    if type(value) is int and abs(value) <= _EXACT_INT_FLOAT:
        return float(value)
    if type(value) is str and len(value) <= 100 and _FLOAT.fullmatch(value):
        return float(value)
    raise _Defer


def _bool(value, param, ctx):
    if type(value) is bool:
        return value
    raise _Defer


def _choice(value, param, ctx):
    from typer._param_types import coerce_cli_choice

    choices = tuple(param.type_descriptor.annotation)
    try:
        return coerce_cli_choice(value, choices=choices, case_sensitive=param.type_descriptor.case_sensitive, ctx=ctx)
    except ValueError:
        raise _Defer from None


_BY_TYPE = {str: _str, int: _int, float: _float, bool: _bool}


class _Native:
    """Duck-typed stand-in for typer's ``RuntimeParam`` (its ``coerce`` is all ``process_value`` calls)."""

    __slots__ = ("parse", "typer_param")

    def __init__(self, parse) -> None:
        self.parse = parse
        self.typer_param = None  # typer's own coercer, built (with pydantic) only when a value needs it

    def coerce(self, value, param, ctx):
        if value is None:
            return None
        try:
            return self.parse(value, param, ctx)
        except _Defer:
            if self.typer_param is None:
                from typer._coercion import build_runtime_param

                self.typer_param = build_runtime_param(param.type_descriptor)
            return self.typer_param.coerce(value, param=param, ctx=ctx)


def _parser_for(param):
    desc = getattr(param, "type_descriptor", None)
    if desc is None or getattr(param, "_runtime_param", "absent") is not None:
        return None  # not typer's lazily-coercing parameter (or already built)
    info = desc.parameter_info
    if (param.multiple or param.nargs != 1 or desc.file_annotation is not None or info.parser is not None
            or info.min is not None or info.max is not None or getattr(info, "click_type", None) is not None):
        return None
    ann = desc.annotation
    if isinstance(ann, type) and issubclass(ann, Enum):
        return _choice
    return _BY_TYPE.get(ann)


def _native(param):
    parse = _parser_for(param)
    if parse is not None:
        param._runtime_param = _Native(parse)
    return param


def native_coercion(cmd) -> None:
    """Give every plain option of the click command tree ``cmd`` the pydantic-free coercer, the
    ``--help`` option included (click makes it per context, ``get_help_option``)."""
    for param in getattr(cmd, "params", ()):
        _native(param)
    get_help_option = getattr(cmd, "get_help_option", None)
    if get_help_option is not None:
        cmd.get_help_option = lambda ctx, _get=get_help_option: (lambda o: o if o is None else _native(o))(_get(ctx))
    for sub in getattr(cmd, "commands", {}).values():
        native_coercion(sub)
