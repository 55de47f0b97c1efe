"""Total cost of ownership: dollars per chip-hour from capex, power and hosting (issue 22 item 3).

$/chip-hour = capital + power + hosting, each per chip and per hour of the year (the chips are paid
whether busy or not; ``econ.context.usd_per_mtok`` divides by the share of time they serve):

* **capital** = (capex per chip + system capex / chips per system) x CRF(r, n) / hours per year, with the
  capital recovery factor CRF(r, n) = r / (1 - (1 + r)^-n): the level annual payment that repays one
  dollar over n years at cost of capital r (standard engineering economics, e.g. Newnan, Eschenbach &
  Lavelle, *Engineering Economic Analysis*, the (A/P, i, n) factor). r = 0 gives 1/n, straight-line.
* **power** = watts per chip x utilisation x PUE x $/kWh / 1000: the chip's average draw (utilisation =
  average draw / ``watts_per_chip``; 1.0 = the rated power, TDP, an upper bound for the chip alone),
  grossed up by the facility's power usage effectiveness (PUE = facility power / IT power, The Green
  Grid, WP#49).
* **hosting** = $/rack-month / chips per rack (or $/chip-month) / hours per month: space, cooling
  plant, staff, transit, whatever the colocation or internal charge covers, *except* the power billed
  above.

Hours per year are 8,766 (365.25 days x 24 h; a month is 1/12 of it, 730.5 h).

Omitted (fold them into an input if they matter): residual/resale value of the hardware, taxes and the
depreciation tax shield, insurance, maintenance and support contracts, spares and failed parts,
software licences, the power of hosts, NICs and switches unless ``watts_per_chip`` is given all-in,
price changes over the amortisation period, and any idle or unsold capacity (``utilization`` of the
serving reports). No figure here has a default except the chip's catalogue power (TDP, sourced in
``catalog/accelerators.toml``): every dollar figure and the PUE are the user's inputs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import SpecError, require_array, require_number, require_whole

HOURS_PER_YEAR = 8766.0                 # 365.25 d x 24 h (Julian year)
HOURS_PER_MONTH = HOURS_PER_YEAR / 12.0  # 730.5 h
WATTS_PER_MW = 1e6
_CRF_SERIES_BELOW = 1e-7                 # capital_recovery_factor: Taylor series where r and r x n are below it

#: (minimum, minimum exclusive, maximum, fix) of every numeric input of ``TcoInputs``: the one set of bounds the
#: CLI, Python and the web share (``web.schemas.TcoIn`` is built from it). Bounds are sanity limits, no data:
#: the amortisation period is at least a month (shorter ones give $10^300/chip-hour from a typo) and at most a
#: century; PUE >= 1 by definition (facility power includes IT power).
BOUNDS = {
    "chip_capex_usd": (0.0, False, 1e9, "USD per accelerator, 0 to 1e9"),
    "system_capex_usd": (0.0, False, 1e9, "USD per system, chips excluded, 0 to 1e9"),
    "amortisation_years": (1.0 / 12.0, False, 100.0, "years, from 1/12 (one month) to 100"),
    "cost_of_capital": (0.0, False, 10.0, "annual rate as a fraction, e.g. 0.08 for 8%; 0 to 10"),
    "watts_per_chip": (0.0, True, 1e6, "watts, above 0 and at most 1e6"),
    "power_utilization": (0.0, False, 1.0, "average draw / watts_per_chip; 1 = rated power (TDP)"),
    "pue": (1.0, False, 10.0, "facility power / IT power, 1 to 10"),
    "usd_per_kwh": (0.0, False, 100.0, "USD per kWh, 0 to 100"),
    "hosting_usd_per_rack_month": (0.0, False, 1e9, "USD per rack per month, power excluded, 0 to 1e9"),
    "chips_per_rack": (1, False, 1_000_000, "accelerators per rack, a whole number from 1 to 1,000,000"),
    "hosting_usd_per_chip_month": (0.0, False, 1e9, "USD per chip per month, power excluded, 0 to 1e9"),
}


# ---------------------------------------------------------------------------------------------
# Closed forms (numpy-broadcastable)
# ---------------------------------------------------------------------------------------------


def capital_recovery_factor(*, cost_of_capital, years):
    """CRF(r, n) = r / (1 - (1 + r)^-n) per year, the (A/P, r, n) factor of engineering economics:
    a dollar borrowed at annual rate r is repaid by n level payments of CRF dollars. r = 0 is the
    limit 1/n (straight-line). Computed as r / -expm1(-n log1p(r)), accurate to a few ulp for every r > 0
    whose n log1p(r) is a normal float; where both r and r n are below 1e-7 (r = 0 and subnormal products
    included) by its Taylor series in r, 1/n + r(n+1)/(2n) + r^2 (n^2-1)/(12n) (from x / (1 - e^-x) =
    1 + x/2 + x^2/12 - x^4/720 with x = n log1p(r)), whose dropped terms are below (r n)^2 r + r^3 < 1e-21 of
    the sum there. The series needs r n small, not r alone: at r = 1e-8 over 1e9 years it would be 43% high."""
    r = require_array("cost_of_capital", cost_of_capital, minimum=0, hint="annual rate, e.g. 0.08 for 8%")
    n = require_array("amortisation_years", years, minimum=0, exclusive=True, hint="years")
    r, n = np.broadcast_arrays(r, n)
    with np.errstate(all="ignore"):  # overflow past float range (a near-zero period) is inf, refused by tco_rate
        series = 1.0 / n + r * (n + 1.0) / (2.0 * n) + r * r * (n * n - 1.0) / (12.0 * n)
        exact = r / -np.expm1(-n * np.log1p(r))
        use_series = (r < _CRF_SERIES_BELOW) & (r * n < _CRF_SERIES_BELOW)
    return np.where(use_series, series, exact)


def capital_usd_per_chip_hour(*, chip_capex_usd, system_capex_usd, chips_per_system, amortisation_years,
                              cost_of_capital):
    """(capex per chip + system capex / chips per system) x CRF(r, n) / 8,766 h. ``system_capex_usd`` is
    everything of one system (scale-up domain) but its accelerators: hosts, NICs, switches, rack, its
    share of the scale-out network."""
    chip = require_array("chip_capex_usd", chip_capex_usd, minimum=0, hint="USD per accelerator")
    system = require_array("system_capex_usd", system_capex_usd, minimum=0, hint="USD per system, chips excluded")
    n_chips = require_array("chips_per_system", chips_per_system, minimum=1)
    crf = capital_recovery_factor(cost_of_capital=cost_of_capital, years=amortisation_years)
    with np.errstate(all="ignore"):  # inf past float range, refused by tco_rate
        return (chip + system / n_chips) * crf / HOURS_PER_YEAR


def power_usd_per_chip_hour(*, watts_per_chip, power_utilization, pue, usd_per_kwh):
    """W x utilisation x PUE / 1000 kW x $/kWh for one hour."""
    return facility_watts_per_chip(watts_per_chip=watts_per_chip, power_utilization=power_utilization, pue=pue) \
        / 1000.0 * require_array("usd_per_kwh", usd_per_kwh, minimum=0, hint="USD per kWh")


def facility_watts_per_chip(*, watts_per_chip, power_utilization, pue):
    """Average facility power per chip: W x utilisation x PUE."""
    w = require_array("watts_per_chip", watts_per_chip, minimum=0, exclusive=True, hint="watts")
    u = require_array("power_utilization", power_utilization, minimum=0, maximum=1,
                      hint="average draw / watts_per_chip; 1 = rated power (TDP)")
    p = require_array("pue", pue, minimum=1, hint="facility power / IT power, >= 1")
    return w * u * p


def hosting_usd_per_chip_hour(*, hosting_usd_per_rack_month=None, chips_per_rack=None,
                              hosting_usd_per_chip_month=None):
    """$/rack-month / chips per rack / 730.5 h, or $/chip-month / 730.5 h (exactly one form)."""
    if (hosting_usd_per_chip_month is None) == (hosting_usd_per_rack_month is None):
        raise SpecError("give one of {hosting_usd_per_rack_month} (with {chips_per_rack}) or "
                        "{hosting_usd_per_chip_month}, not both and not neither", field="hosting_usd_per_rack_month",
                        show_value=False)
    if hosting_usd_per_chip_month is not None:
        if chips_per_rack is not None:
            raise SpecError("applies to a per-rack hosting price only", field="chips_per_rack", value=chips_per_rack,
                            fix="drop it, or give {hosting_usd_per_rack_month} instead of {hosting_usd_per_chip_month}")
        return require_array("hosting_usd_per_chip_month", hosting_usd_per_chip_month, minimum=0,
                             hint="USD per chip per month") / HOURS_PER_MONTH
    if chips_per_rack is None:
        raise SpecError("missing: a per-rack hosting price is spread over the chips of a rack", field="chips_per_rack",
                        show_value=False, fix="give {chips_per_rack} (72 for an NVL72 rack; servers x GPUs per "
                                              "server otherwise)")
    rack = require_array("hosting_usd_per_rack_month", hosting_usd_per_rack_month, minimum=0,
                         hint="USD per rack per month, power excluded")
    return rack / require_array("chips_per_rack", chips_per_rack, minimum=1) / HOURS_PER_MONTH


def per_megawatt(tokens_per_s_per_chip, facility_watts_per_chip):
    """Tokens/s per megawatt: tokens/s per chip / facility W per chip x 1e6, numpy-broadcastable and
    unchecked (NaN in, NaN out: the sweeps' "no catalogued power"). The one place the formula is written;
    ``tokens_per_s_per_mw``, ``PowerBasis`` and the sweeps call it."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.asarray(tokens_per_s_per_chip, dtype=float) / facility_watts_per_chip * WATTS_PER_MW


def tokens_per_s_per_mw(tokens_per_s_per_chip, *, watts_per_chip, pue=1.0, power_utilization=1.0):
    """Tokens/s per megawatt of facility power: tokens/s per chip / (W x utilisation x PUE) x 1e6.
    With the catalogue TDP, utilisation 1 and PUE 1 it is per MW of accelerator power at TDP ("IT power at
    TDP"): hosts, network and cooling left out, so an upper bound on what a MW of a real site serves."""
    w = facility_watts_per_chip(watts_per_chip=watts_per_chip, power_utilization=power_utilization, pue=pue)
    return per_megawatt(tokens_per_s_per_chip, w)


# ---------------------------------------------------------------------------------------------
# Inputs and result
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class TcoInputs:
    """Every input of a TCO rate, SI-ish units in the names (USD, W, years, months). None of them has a
    default but ``power_utilization`` (1.0 = rated power) and ``watts_per_chip`` (the resolver fills it
    from the catalogue TDP); ``source``, ``as_of`` and ``notes`` say where the user's figures come from. Every
    number must lie within ``BOUNDS`` (an error names the input and its range)."""

    chip_capex_usd: float
    system_capex_usd: float
    chips_per_system: int
    amortisation_years: float
    cost_of_capital: float
    watts_per_chip: float
    pue: float
    usd_per_kwh: float
    power_utilization: float = 1.0
    hosting_usd_per_rack_month: float | None = None
    chips_per_rack: int | None = None
    hosting_usd_per_chip_month: float | None = None
    watts_source: str = ""
    source: str = ""
    as_of: str = ""
    notes: str = ""
    defaults_used: tuple[str, ...] = ()    # inputs taken from the catalogue's TCO defaults (catalog.tco_defaults)

    def __post_init__(self) -> None:
        require_whole("chips_per_system", self.chips_per_system)
        for name, (low, exclusive, high, fix) in BOUNDS.items():
            value = getattr(self, name)
            if value is None:
                continue  # the hosting form not used, checked below
            if name == "chips_per_rack":
                require_whole(name, value)
            require_number(name, value, minimum=low, exclusive=exclusive, maximum=high, hint=fix)
        hosting_usd_per_chip_hour(hosting_usd_per_rack_month=self.hosting_usd_per_rack_month,
                                  chips_per_rack=self.chips_per_rack,
                                  hosting_usd_per_chip_month=self.hosting_usd_per_chip_month)


@dataclass(frozen=True, kw_only=True)
class Rent:
    """A published rent per chip-hour from the catalogue (``catalog.tco_defaults``): the alternative to a TCO
    rate when no price is given (``--price-basis rent``)."""

    usd_per_chip_hour: float
    accelerator: str
    source: str
    as_of: str
    cite: str = ""


@dataclass(frozen=True, kw_only=True)
class TcoRate:
    """A TCO rate: its three parts per chip-hour, and the inputs that gave them."""

    inputs: TcoInputs
    capital_recovery_factor: float
    capital_usd_per_chip_hour: float
    power_usd_per_chip_hour: float
    hosting_usd_per_chip_hour: float

    @property
    def usd_per_chip_hour(self) -> float:
        return self.capital_usd_per_chip_hour + self.power_usd_per_chip_hour + self.hosting_usd_per_chip_hour

    @property
    def usd_per_system_hour(self) -> float:
        return self.usd_per_chip_hour * self.inputs.chips_per_system

    @property
    def facility_watts_per_chip(self) -> float:
        i = self.inputs
        return float(facility_watts_per_chip(watts_per_chip=i.watts_per_chip, power_utilization=i.power_utilization,
                                             pue=i.pue))


def tco_rate(inputs: TcoInputs) -> TcoRate:
    """$/chip-hour = capital + power + hosting (module docstring: formulas, sources, omissions)."""
    i = inputs
    crf = float(capital_recovery_factor(cost_of_capital=i.cost_of_capital, years=i.amortisation_years))
    capital = float(capital_usd_per_chip_hour(chip_capex_usd=i.chip_capex_usd, system_capex_usd=i.system_capex_usd,
                                              chips_per_system=i.chips_per_system,
                                              amortisation_years=i.amortisation_years,
                                              cost_of_capital=i.cost_of_capital))
    power = float(power_usd_per_chip_hour(watts_per_chip=i.watts_per_chip, power_utilization=i.power_utilization,
                                          pue=i.pue, usd_per_kwh=i.usd_per_kwh))
    hosting = float(hosting_usd_per_chip_hour(hosting_usd_per_rack_month=i.hosting_usd_per_rack_month,
                                              chips_per_rack=i.chips_per_rack,
                                              hosting_usd_per_chip_month=i.hosting_usd_per_chip_month))
    for name, value, fields in (("capital", capital, "{amortisation_years}, {cost_of_capital} and the capex"),
                                ("power", power, "{watts_per_chip} and {usd_per_kwh}"),
                                ("hosting", hosting, "the hosting price")):
        if not np.isfinite(value):
            raise SpecError(f"{name} per chip-hour is not a finite number; check {fields}",
                            field="amortisation_years" if name == "capital" else None, show_value=False)
    return TcoRate(inputs=i, capital_recovery_factor=crf, capital_usd_per_chip_hour=capital,
                   power_usd_per_chip_hour=power, hosting_usd_per_chip_hour=hosting)


# ---------------------------------------------------------------------------------------------
# Tokens per megawatt beside $/Mtok
# ---------------------------------------------------------------------------------------------

IT_POWER_AT_TDP = "IT power at TDP"


@dataclass(frozen=True, kw_only=True)
class PowerBasis:
    """The watts per chip that tokens/s per MW divides by, and what they are: the TCO's facility power
    (W x utilisation x PUE) or, without TCO inputs, the catalogue TDP at PUE 1 ("IT power at TDP").
    ``watts_per_chip`` None: the chip has no catalogued power (then no tokens/s per MW)."""

    watts_per_chip: float | None
    label: str
    kind: str | None = "tdp"    # POWER_BASES: "facility" or "tdp" (None: no power known)

    def tokens_per_s_per_mw(self, tokens_per_s_per_chip) -> float | None:
        if self.watts_per_chip is None or tokens_per_s_per_chip is None:
            return None
        return float(per_megawatt(tokens_per_s_per_chip, self.watts_per_chip))

    def as_dict(self) -> dict:
        return {"watts_per_chip": self.watts_per_chip, "basis": self.label, "power_basis": self.kind}


#: what tokens/s per MW divides by: "facility" (the default: the system's power per chip, hosts and network
#: included, x PUE) or "tdp" (the chip's TDP at PUE 1, on request)
POWER_BASES = ("facility", "tdp")


def power_basis(tdp_w: float | None, rate: TcoRate | None = None) -> PowerBasis:
    """``rate``'s facility watts per chip, else the chip's TDP ``tdp_w`` at PUE 1."""
    if isinstance(rate, TcoRate):
        i = rate.inputs
        return PowerBasis(watts_per_chip=rate.facility_watts_per_chip, kind="facility",
                          label=f"facility power: {i.watts_per_chip:g} W x utilisation {i.power_utilization:g} x "
                                f"PUE {i.pue:g}")
    if tdp_w is None:
        return PowerBasis(watts_per_chip=None, label="no catalogued chip power", kind=None)
    return PowerBasis(watts_per_chip=float(tdp_w), label=f"{IT_POWER_AT_TDP} ({tdp_w:g} W, PUE 1)")


def power_for(system, rate=None, basis: str = "facility") -> PowerBasis:
    """The power tokens/s per MW divides by on ``system`` (issue 35, item 3). "facility" (default): a TCO
    rate's facility watts (W x utilisation x PUE) where one is given, else the catalogue's system power per
    chip (hosts, NICs and switches included: ``catalog.tco_defaults.facility_watts``) x the default PUE, else
    the chip's TDP x that PUE (hosts and network unknown: said in the label). "tdp": the chip's TDP at PUE 1
    ("IT power at TDP", the lecture's figure and an upper bound on tokens per MW)."""
    from ..catalog.tco_defaults import common, facility_watts
    from ..errors import require_choice

    require_choice("power_basis", basis, POWER_BASES)
    tdp = system.accelerator.power_w
    if basis == "tdp":
        return power_basis(tdp)
    if isinstance(rate, TcoRate):
        return power_basis(tdp, rate)
    pue = common()["pue"]
    site = facility_watts(system)
    if site is not None:
        return PowerBasis(watts_per_chip=site.value * pue.value, kind="facility",
                          label=f"facility power: {site.value:,.0f} W system power per chip ({site.id}) x PUE "
                                f"{pue.value:g} ({pue.id})")
    if tdp is None:
        return PowerBasis(watts_per_chip=None, label="no catalogued chip or system power", kind=None)
    return PowerBasis(watts_per_chip=float(tdp) * pue.value, kind="facility",
                      label=f"facility power: {tdp:g} W TDP (no system power catalogued: hosts and network "
                            f"left out) x PUE {pue.value:g} ({pue.id})")
