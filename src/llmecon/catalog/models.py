"""Model catalogue: the official config.json of each reference model, copied with its source.

Each file keeps the Hugging Face field names verbatim plus ``_source``, ``_published_params`` and
``_notes`` (see ``reference/models/README.md``). A name that is not in the catalogue but is a path
to a config.json is read from disk.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from pathlib import Path

from ..errors import unknown_name
from .hf_config import load_config_file, model_from_hf_config
from ..spec.model import Model

DEFAULT_MODEL = "deepseek-v3"


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


def get_model(name_or_path: str) -> Model:
    """A catalogue model by name (``deepseek-v3``), or a config.json by path."""
    if name_or_path in model_names():
        return _catalog_model(name_or_path)
    path = Path(name_or_path)
    if path.suffix == ".json" or path.exists() or "/" in name_or_path:
        if path.is_dir():
            path = path / "config.json"
        return load_config_file(path)
    raise unknown_name("model", name_or_path, model_names())
