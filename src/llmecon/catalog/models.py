"""Model catalogue: the official config.json of each reference model, copied with its source.

Each file keeps the Hugging Face field names verbatim plus ``_source``, ``_published_params`` and
``_notes`` (see ``reference/models/README.md``). A name that is not in the catalogue but is a path
to a config.json is read from disk.
"""

from __future__ import annotations

import json
from contextlib import contextmanager
from contextvars import ContextVar
from functools import cache
from importlib import resources
from pathlib import Path

from ..errors import unknown_name
from .hf_config import load_config_file, model_from_hf_config
from ..spec.model import Model

DEFAULT_MODEL = "deepseek-v3"

# Config fields the user vouches for as harmless (``--ignore-field``): read as absent by every
# ``get_model`` in the context (hf_config ``ignore_fields``; listed in ``Model.ignored_fields``).
_IGNORE_FIELDS: ContextVar[tuple[str, ...]] = ContextVar("llmecon_ignore_fields", default=())


@contextmanager
def ignoring_fields(names):
    """Within the block, ``get_model`` reads configs with ``ignore_fields=names``."""
    token = _IGNORE_FIELDS.set(tuple(names))
    try:
        yield
    finally:
        _IGNORE_FIELDS.reset(token)


@cache
def model_names() -> tuple[str, ...]:
    folder = resources.files("llmecon.catalog") / "models"
    return tuple(sorted(p.name[:-5] for p in folder.iterdir() if p.name.endswith(".json")))


@cache
def raw_config(name: str) -> dict:
    """The catalogue's config.json for ``name`` (with its ``_source`` and notes)."""
    if name not in model_names():
        raise unknown_name("model", name, model_names())
    text = (resources.files("llmecon.catalog") / "models" / f"{name}.json").read_text(encoding="utf-8")
    return json.loads(text)


@cache
def _catalog_model(name: str) -> Model:
    config = raw_config(name)
    return model_from_hf_config(config, name=name, where=f"catalogue model {name}",
                                source=str(config.get("_source", "")))


def get_model(name_or_path: str, *, ignore_fields: tuple[str, ...] | None = None) -> Model:
    """A catalogue model by name (``deepseek-v3``), or a config.json by path. ``ignore_fields``
    (default: those of an enclosing ``ignoring_fields``): config keys read as absent."""
    ignore = _IGNORE_FIELDS.get() if ignore_fields is None else tuple(ignore_fields)
    if name_or_path in model_names():
        if ignore:
            config = raw_config(name_or_path)
            return model_from_hf_config(config, name=name_or_path, where=f"catalogue model {name_or_path}",
                                        source=str(config.get("_source", "")), ignore_fields=ignore)
        return _catalog_model(name_or_path)
    path = Path(name_or_path)
    if path.suffix == ".json" or path.exists() or "/" in name_or_path:
        if path.is_dir():
            path = path / "config.json"
        return load_config_file(path, ignore_fields=ignore)
    raise unknown_name("model", name_or_path, model_names())
