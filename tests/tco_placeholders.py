"""TCO inputs the tests share: placeholders, not facts (docs/tco.md has no sourced capex, PUE or $/kWh), and what
they give by hand on hgx-h100 (8 chips per system, h100-sxm TDP 700 W)."""

from __future__ import annotations

# the TCO keys of `--tco FILE`, `/api/*` `tco` objects and `resolve.tco` (no system facts)
SITE = dict(chip_capex_usd=30_000.0, system_capex_usd=100_000.0, amortisation_years=5.0, cost_of_capital=0.08,
            pue=1.3, usd_per_kwh=0.08, hosting_usd_per_rack_month=15_000.0, chips_per_rack=32)

# the same as a `--tco FILE` (strict TOML)
SITE_TOML = 'source = "test placeholders"\nas_of = 2026-11-26\n' + "".join(
    f"{k} = {int(v) if float(v).is_integer() and k != 'cost_of_capital' else v}\n" for k, v in SITE.items())

CAPITAL = 42_500 * (0.08 / (1 - 1.08 ** -5)) / 8766   # (30,000 + 100,000 / 8) × CRF(8%, 5 y) per hour
POWER = 700 * 1.3 * 0.08 / 1000                         # W × PUE × $/kWh
HOSTING = 15_000 / 32 / 730.5                           # per rack-month over 32 chips and 730.5 h
TOTAL = CAPITAL + POWER + HOSTING                       # USD per chip-hour on hgx-h100


def tco_inputs(**kw):
    """``econ.tco.TcoInputs`` of ``SITE`` on an H100 system (8 chips, 700 W), ``kw`` overriding."""
    from llmecon.econ.tco import TcoInputs

    return TcoInputs(**{**SITE, "chips_per_system": 8, "watts_per_chip": 700.0, **kw})
