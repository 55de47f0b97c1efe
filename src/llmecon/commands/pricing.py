"""The price a command's request gives: ``price_per_chip_hour`` (a rent), ``tco`` (a TOML path, or TCO
input values as the web sends them) or the catalogue's ``price_basis`` default, through
``resolve.chip_hour_price(s)``, the one resolver of every front-end."""

from __future__ import annotations


def _tco_error(exc):
    """An error about one TCO input given as values, located under ``tco`` (``tco.pue``)."""
    if exc.field is None or exc.field in ("tco", "price_per_chip_hour", "price_per_gpu_hour"):
        return exc
    return type(exc)(exc.rule, field=f"tco.{exc.field}", value=exc.value, fix=exc.fix, show_value=exc.show_value)


def tco_parts(tco) -> tuple[str | None, dict | None]:
    """(TOML path, input values) of a request's ``tco``: a path (CLI), a mapping (web) or None."""
    if tco is None or isinstance(tco, str):
        return tco, None
    return None, dict(tco)


def priced(req, systems, *, default: str | None = None, required: bool = False) -> tuple[dict, dict]:
    """({system: USD per chip-hour}, {system: TcoRate or Rent}) for ``systems`` from the request's
    ``price_per_chip_hour`` and ``tco``; ``default``: the catalogue basis used when neither is given."""
    from ..catalog.hardware import get_system
    from ..errors import LlmeconError
    from ..resolve import chip_hour_price

    path, values = tco_parts(getattr(req, "tco", None))
    try:
        prices, rates = {}, {}
        for s in systems:
            s = get_system(s) if isinstance(s, str) else s
            price, rate = chip_hour_price(s, price_per_chip_hour=getattr(req, "price_per_chip_hour", None),
                                          tco_path=path, tco_values=values, required=required, default=default)
            if price is not None:
                prices[s.name] = price
            if rate is not None:
                rates[s.name] = rate
        return prices, rates
    except LlmeconError as exc:
        if values is None:
            raise
        raise _tco_error(exc) from None
