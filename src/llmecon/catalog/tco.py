"""TCO input files (``--tco FILE``): a flat TOML table of the inputs of ``econ.tco.TcoInputs``, read
strictly (unknown keys are errors with "did you mean"; numbers must be numbers). Every key is
optional here: a command's flags may give the rest, and ``resolve.tco`` names what is still missing.
The commented template is in docs/tco.md.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import CatalogError
from ._strict import check_keys, iso_date, read_toml

#: numeric inputs, in the order ``llmecon tco`` prints them
NUMBER_KEYS = ("chip_capex_usd", "system_capex_usd", "amortisation_years", "cost_of_capital", "watts_per_chip",
               "power_utilization", "pue", "usd_per_kwh", "hosting_usd_per_rack_month", "chips_per_rack",
               "hosting_usd_per_chip_month")
WHOLE_KEYS = ("chips_per_rack",)
TEXT_KEYS = ("source", "as_of", "notes")
#: inputs without any default (``watts_per_chip`` defaults to the catalogue TDP, ``power_utilization`` to
#: 1.0, and hosting is one of two forms, checked by ``econ.tco.hosting_usd_per_chip_hour``)
REQUIRED_KEYS = ("chip_capex_usd", "system_capex_usd", "amortisation_years", "cost_of_capital", "pue",
                 "usd_per_kwh")
HOSTING_KEYS = ("hosting_usd_per_rack_month", "hosting_usd_per_chip_month")


def parse_tco(text: str, where: str) -> dict:
    """The TCO table in TOML ``text`` as {key: value} (only the keys present), checked strictly."""
    table = read_toml(text, where)
    check_keys(table, required=(), optional=NUMBER_KEYS + TEXT_KEYS, where=where)
    out: dict = {}
    for key, value in table.items():
        if key in NUMBER_KEYS:
            whole = key in WHOLE_KEYS
            ok = isinstance(value, int if whole else (int, float)) and not isinstance(value, bool)
            if not ok:
                kind = "a whole number" if whole else "a number"
                raise CatalogError(f"{where}: {key} must be {kind}, got {value!r}",
                                   fix="write a bare number, no quotes or units (see docs/tco.md)")
            out[key] = int(value) if whole else float(value)
        elif key == "as_of":
            date = iso_date(value)
            if date is None:
                raise CatalogError(f"{where}: as_of must be a date YYYY-MM-DD, got {value!r}")
            out[key] = date
        else:
            if not isinstance(value, str):
                raise CatalogError(f"{where}: {key} must be a string, got {value!r}")
            out[key] = value.strip()
    return out


def load_tco(path: str | Path, *, field: str = "tco") -> dict:
    """The TCO file at ``path`` (``parse_tco``); ``field`` is the input that named it."""
    from ..files import read_text

    fix = "give a TOML file of TCO inputs (template: docs/tco.md)"
    return parse_tco(read_text(path, field=field, what="TCO file", fix=fix), where=f"TCO file {path}")
