"""Routed (MoE) scaling law of Clark et al. 2022, "Unified Scaling Laws for Routed Language Models"
(ICML 2022, arXiv:2202.01169), with the coefficients as explicit inputs (SPEC D14).

    log L(N, E) = a·log N + b·log Ê + c·log N·log Ê + d
    1/Ê = 1/(E − 1 + (1/E_start − 1/E_max)^−1) + 1/E_max          (saturating expert count)
    N̄/N = Ê^((b + c·log N)/a)                                      (effective dense-equivalent size)

N is the routed model's base (active) parameter count, E the number of experts per routed layer
(the lecture's "64" is E, not total parameters). The paper's fitted table (a, b, c, d, E_start,
E_max per routing technique), its log base and the unit of N are NOT available here
(shared/reference/scaling_laws.yaml: fitted_coefficients status "missing"; the two forms above are
"secondary"), so nothing is defaulted: a ``RoutedLaw`` states every one of them. The only shipped
default is the one-parameter ``PowerFit`` N̄/N = E^γ implied by the lecture's reading of the paper's
Fig. 1 (catalog/routed_law_power_fit.toml). See docs/routed_scaling.md.

"Dense" in N̄: the closed form above is the exact solution of a·log N̄ + d = log L(N, E), i.e. the
reference dense model is the law's dense limb log Ê = 0 (Ê = 1). Because Ê(1) = E_start, a
one-expert model sits on that limb only when E_start = 1; otherwise N̄(N, E=1) = N·E_start^k.
``ExpertValue.gain_over_one_expert`` gives the ratio against E = 1 instead.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np

from ..catalog._strict import check_keys, read_toml, text as _text
from ..errors import CatalogError, InfeasibleError, SpecError, did_you_mean, require_array, require_number

LOG_BASES = {"e": np.log, "10": np.log10, "2": np.log2}
DEFAULT_LAW_FILE = "routed_law_power_fit.toml"


def _check_saturation(e_start, e_max) -> None:
    require_number("e_start", e_start, minimum=1.0,
                   hint="Ê(1) = E_start, the 1-expert model's effective expert count; use 1 <= e_start < e_max")
    require_number("e_max", e_max, minimum=1.0, exclusive=True, hint="E_max is where Ê saturates; use e_max > e_start")
    if not e_start < e_max:
        raise SpecError(f"e_start: must be < e_max, got e_start={e_start!r}, e_max={e_max!r}; routing starts to pay "
                        "at E_start and saturates at E_max, so e_start < e_max")


def _label(name: str, value) -> None:
    if not isinstance(value, str) or not value.strip():
        raise SpecError(f"{name}: must be a non-empty string, got {value!r}; say what the coefficients are and where "
                        "they come from")


@dataclass(frozen=True, kw_only=True)
class RoutedLaw:
    """Clark et al. 2022 Eq. 1 with the saturating Ê. Every coefficient, the log base ("e", "10" or
    "2", used for every log in Eq. 1) and the unit of N (1.0 = raw parameters, 1e9 = billions) must
    be stated: the paper's values are not available here, so none is assumed."""

    a: float
    b: float
    c: float
    d: float
    e_start: float
    e_max: float
    log_base: str
    n_unit_params: float
    label: str
    source: str

    def __post_init__(self):
        for name in ("a", "b", "c", "d"):
            require_number(name, getattr(self, name))
        if not self.a < 0:
            raise SpecError(f"a: must be < 0 (the dense slope: loss falls as N grows), got {self.a!r}; "
                            "check the sign convention of the table it came from")
        _check_saturation(self.e_start, self.e_max)
        if self.log_base not in LOG_BASES:
            raise SpecError(f"log_base: must be one of 'e', '10', '2' (the base of every log in Eq. 1), got "
                            f"{self.log_base!r}{did_you_mean(str(self.log_base), LOG_BASES)}")
        require_number("n_unit_params", self.n_unit_params, minimum=0.0, exclusive=True,
                       hint="the unit N is measured in: 1.0 for raw parameter counts, 1e9 for billions")
        _label("label", self.label)
        _label("source", self.source)

    def log(self, x):
        """Log in the law's base (every log of Eq. 1)."""
        return LOG_BASES[self.log_base](x)


@dataclass(frozen=True, kw_only=True)
class PowerFit:
    """One-parameter form N̄/N = E^γ (no saturation, no dependence on N): a reading, not Eq. 1."""

    gamma: float
    label: str
    source: str

    def __post_init__(self):
        require_number("gamma", self.gamma, minimum=0.0, exclusive=True,
                       hint="N̄/N = E^gamma; gamma <= 0 would mean experts never add effective size")
        _label("label", self.label)
        _label("source", self.source)


@dataclass(frozen=True, kw_only=True)
class ExpertValue:
    """What a given expert count buys, broadcast over experts and active params (all arrays)."""

    experts: np.ndarray
    active_params: np.ndarray
    effective_params: np.ndarray  # N̄: the dense size with the same loss
    ratio: np.ndarray  # N̄/N
    gain_per_doubling: np.ndarray  # N̄(2E)/N̄(E): what doubling the experts from here buys
    gain_over_one_expert: np.ndarray  # N̄(E)/N̄(1) (equals ratio for a PowerFit, or when E_start = 1)
    label: str


def _params(value, name: str = "params") -> np.ndarray:
    return require_array(name, value, minimum=0.0, exclusive=True,
                         hint="a parameter count (raw, not in the law's unit)")


def _experts(value) -> np.ndarray:
    return require_array("experts", value, minimum=1.0, exclusive=False,
                  hint="E counts experts per routed layer (64 in the lecture's reading), not parameters")


def _law(law, *, power_ok: bool = True):
    if isinstance(law, RoutedLaw) or (power_ok and isinstance(law, PowerFit)):
        return law
    want = "a RoutedLaw or a PowerFit" if power_ok else "a RoutedLaw (a PowerFit has no loss, only N̄/N)"
    raise SpecError(f"law: expected {want}, got {type(law).__name__}; build one or call load_routed_law()")


def expert_transform(experts, *, e_start, e_max):
    """Saturating expert count Ê(E): 1/Ê = 1/(E − 1 + (1/E_start − 1/E_max)^−1) + 1/E_max.
    Ê(1) = E_start, increasing in E, Ê < E_max → E_max as E → ∞. The ^−1 is part of the form
    (scaling_laws.yaml warns of an implementation that drops it)."""
    _check_saturation(e_start, e_max)
    e = _experts(experts)
    offset = 1.0 / (1.0 / e_start - 1.0 / e_max)  # (1/E_start − 1/E_max)^−1 > 1 when e_start > 1
    return 1.0 / (1.0 / (e - 1.0 + offset) + 1.0 / e_max)


def _slope(params, law: RoutedLaw):
    """k = (b + c·log N)/a: N̄/N = Ê^k; k > 0 (experts help) iff b + c·log N < 0, since a < 0."""
    return (law.b + law.c * law.log(_params(params) / law.n_unit_params)) / law.a


def log_loss(params, experts, law: RoutedLaw):
    """log L = a·log N + b·log Ê + c·log N·log Ê + d, logs in ``law.log_base``, N in ``law.n_unit_params``."""
    law = _law(law, power_ok=False)
    log_n = law.log(_params(params) / law.n_unit_params)
    log_e = law.log(expert_transform(experts, e_start=law.e_start, e_max=law.e_max))
    return law.a * log_n + law.b * log_e + law.c * log_n * log_e + law.d


def dense_log_loss(params, law: RoutedLaw):
    """The law's dense limb a·log N + d (log Ê = 0): the reference that ``effective_params`` matches."""
    law = _law(law, power_ok=False)
    return law.a * law.log(_params(params) / law.n_unit_params) + law.d


def effective_ratio(params, experts, law):
    """N̄/N: Ê^((b + c·log N)/a) for a RoutedLaw, E^γ for a PowerFit (broadcast over both args)."""
    law = _law(law)
    if isinstance(law, PowerFit):
        return _experts(experts) ** law.gamma + 0.0 * _params(params)
    e_hat = expert_transform(experts, e_start=law.e_start, e_max=law.e_max)
    return e_hat ** _slope(params, law)


def effective_params(params, experts, law):
    """N̄, the dense-equivalent size: for a RoutedLaw the exact solution of
    dense_log_loss(N̄) = log_loss(N, E) (see the module docstring for what "dense" means)."""
    return _params(params) * effective_ratio(params, experts, law)


def power_fit_from_point(*, experts, dense_equivalent_params, active_params):
    """γ = ln(N̄/N)/ln E from one reading "E experts at N active ≈ N̄ dense" (64, 370M, 1.3B: 0.3022)."""
    e = require_array("experts", experts, minimum=1.0, exclusive=True, hint="one point needs E > 1 (ln 1 = 0)")
    return np.log(_params(dense_equivalent_params, "dense_equivalent_params")
                  / _params(active_params, "active_params")) / np.log(e)


def experts_for_ratio(ratio, law, *, active_params=None):
    """Experts needed for N̄/N = ratio: ratio^(1/γ) for a PowerFit (10× at γ = 0.30: ≈ 2,150);
    for a RoutedLaw (which needs ``active_params``) the inverse of Ê, or InfeasibleError where the
    ratio is out of reach: at or above the ceiling E_max^k, or below E_start^k (it would need E < 1)."""
    law = _law(law)
    r = require_array("ratio", ratio, minimum=1.0, exclusive=False, hint="N̄/N of at least one expert")
    if isinstance(law, PowerFit):
        return r ** (1.0 / law.gamma)
    if active_params is None:
        raise SpecError("active_params: required for a RoutedLaw (N̄/N depends on N); pass active_params=...")
    k = _slope(active_params, law)
    if np.any(k <= 0):
        raise InfeasibleError(f"experts do not raise the effective size at these active_params under {law.label!r} "
                              "(b + c·log N >= 0): no expert count gives a ratio > 1")
    e_hat = r ** (1.0 / k)
    lo, hi = law.e_start ** k, law.e_max ** k
    if np.any(e_hat < law.e_start * (1.0 - 1e-12)) or np.any(e_hat >= law.e_max):
        raise InfeasibleError(f"ratio: {ratio!r} is outside what {law.label!r} reaches at E >= 1: from "
                              f"{np.min(lo):.4g} (E = 1) up to, not including, {np.max(hi):.4g} (Ê -> E_max)")
    offset = 1.0 / (1.0 / law.e_start - 1.0 / law.e_max)  # clip rounding at E = 1 (ratio = E_start^k)
    return 1.0 / (1.0 / np.maximum(e_hat, law.e_start) - 1.0 / law.e_max) - offset + 1.0


def expert_value(experts_grid, active_params, law) -> ExpertValue:
    """Effective size, ratio, gain per doubling and gain over one expert across an expert grid."""
    law = _law(law)
    e, n = (np.array(x) for x in np.broadcast_arrays(_experts(experts_grid), _params(active_params, "active_params")))
    n_bar = effective_params(n, e, law)
    return ExpertValue(experts=e, active_params=n, effective_params=n_bar, ratio=n_bar / n,
                       gain_per_doubling=effective_params(n, 2.0 * e, law) / n_bar,
                       gain_over_one_expert=n_bar / effective_params(n, np.ones_like(e), law),
                       label=law.label)


# ---- coefficient files (TOML) -----------------------------------------------------------------------------

_FORMS = {
    "clark2022": (RoutedLaw, ("a", "b", "c", "d", "e_start", "e_max", "log_base", "n_unit_params", "label", "source")),
    "power": (PowerFit, ("gamma", "label", "source")),
}


def _parse(text: str, where: str) -> RoutedLaw | PowerFit:
    data = read_toml(text, where)
    form = data.get("form")
    if form not in _FORMS:
        got = "missing key 'form'" if form is None else f"unknown form {form!r}{did_you_mean(str(form), _FORMS)}"
        raise CatalogError(f"{where}: {got}; write form = \"clark2022\" (a, b, c, d, e_start, e_max, log_base, "
                           "n_unit_params, label, source) or form = \"power\" (gamma, label, source)")
    cls, keys = _FORMS[form]
    here = f"{where} (form = \"{form}\")"
    check_keys(data, required=("form",), optional=keys, where=here)
    missing = [k for k in keys if k not in data]
    if missing:
        raise CatalogError(f"{here}: missing required key(s) {', '.join(missing)}")
    fields = {}
    for key in keys:
        value = data[key]
        if key in ("label", "source"):
            fields[key] = _text(data, key, here)
        elif key == "log_base":  # "e", "10", "2"; the integers 10 and 2 are read as their strings
            is_int = isinstance(value, int) and not isinstance(value, bool)
            fields[key] = str(value) if is_int else value
        elif isinstance(value, bool) or not isinstance(value, (int, float)):
            raise CatalogError(f"{here} {key}: expected a plain number (e.g. {key} = -0.08), got {value!r}")
        else:
            fields[key] = float(value)
    try:
        return cls(**fields)
    except SpecError as exc:
        raise CatalogError(f"{here}: {exc}") from exc


def load_routed_law(path_or_text) -> RoutedLaw | PowerFit:
    """Read a coefficient file: a path (``os.PathLike``, or a ``str`` with no newline and no '=')
    or TOML text. Strict keys; ``form`` selects ``clark2022`` (RoutedLaw) or ``power`` (PowerFit)."""
    if isinstance(path_or_text, str) and ("\n" in path_or_text or "=" in path_or_text):
        return _parse(path_or_text, "<routed-law text>")
    if not isinstance(path_or_text, (str, os.PathLike)):
        raise CatalogError(f"routed law: expected a path or TOML text, got {type(path_or_text).__name__}")
    path = Path(path_or_text)
    from ..files import read_text

    text = read_text(path, what="routed-law file", fix="give the path of a .toml file or the TOML text itself")
    return _parse(text, str(path))


@functools.cache
def default_routed_law() -> RoutedLaw | PowerFit:
    """The shipped default, catalog/routed_law_power_fit.toml: LECTURE_POWER_FIT (γ = 0.3022)."""
    text = resources.files("llmecon.catalog").joinpath(DEFAULT_LAW_FILE).read_text(encoding="utf-8")
    return _parse(text, f"llmecon/catalog/{DEFAULT_LAW_FILE}")


# The lecture's reading of Clark et al. Fig. 1: 64 experts at 370M active params ≈ 1.3B dense.
# γ = ln(1.3e9/370e6)/ln 64 = ln(3.5135)/4.1589 = 0.302152 -> 0.3022 (lecture_cases.yaml writes 0.3012).
LECTURE_POWER_FIT = PowerFit(
    gamma=round(float(power_fit_from_point(experts=64, dense_equivalent_params=1.3e9, active_params=370e6)), 4),
    label="one-parameter power fit implied by the lecture's reading of Clark et al. Fig. 1; "
          "not the paper's coefficients",
    source="lecture reading of arXiv:2202.01169 Fig. 1: 64 experts at 370M active params ~ 1.3B dense; "
           "gamma = ln(1.3e9/370e6)/ln(64) = 0.3022",
)
