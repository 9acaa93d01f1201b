"""How a quantity is written, on pages, in tables and in reports alike: one rule per unit,
so that the same metric reads the same wherever it is shown (a tile, a table, a report).

At most four significant digits; ratios in %, their changes in percentage points; times
in µs below a millisecond and in ms above; bytes in KiB / MiB / GiB; counts with
separators; flags as yes / no; the bound as a word; "–" for what does not exist.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

from explorer.core.i18n import has, t
from explorer.core.metrics import BOUND_VALUE_IDS, METRICS
from explorer.plots.style import byte_unit
from explorer.plots.text import format_number

#: units of a page's own quantities, beyond those of ``explorer.core.metrics.METRICS``
#: (where "" is a ratio): a plain number, a whole count, a factor, a time in ms, yes / no
NUMBER, COUNT, TIMES, MS, FLAG = "number", "count", "×", "ms", "flag"
#: unitless metrics that count things rather than divide them
COUNTS = ("instructions", "cores_used")
DASH = "–"  # a value that does not exist (B / A of zero, a refused point)
#: the ids of yes and no, by the flag's value
FLAG_IDS = {True: "tables.yes", False: "tables.no"}


def metric_unit(name: str) -> str:
    """A metric's unit: METRICS's, COUNT for the counts among its unitless ones."""
    return COUNT if name in COUNTS else METRICS.get(name, "")


def _scaled(x: float) -> str:
    """A number already in a readable unit (µs, ms, KiB...): two decimals below 100, one
    below 1,000, none above, so that it shows at most four significant digits."""
    return f"{x:.2f}" if abs(x) < 100 else f"{x:.1f}" if abs(x) < 1000 else f"{x:,.0f}"


def _time(us: float) -> str:
    """A time in µs below a millisecond, in ms above."""
    return f"{_scaled(us)} µs" if abs(us) < 1000 else f"{_scaled(us / 1e3)} ms"


def _bytes(n: float) -> str:
    divisor, unit = byte_unit(abs(n))
    return f"{n:.0f} B" if unit == "B" else f"{_scaled(n / divisor)} {unit}"


def _percent(ratio: float) -> str:
    return f"{ratio:.1%}" if abs(ratio) < 10 else f"{ratio:,.0%}"


#: how a finite number is written, by its unit (any other unit follows the number)
_FORMATS: dict[str, Callable[[float], str]] = {
    "": _percent, NUMBER: format_number, COUNT: lambda x: f"{round(x):,}",
    TIMES: lambda x: f"{format_number(x)}×", "µs": _time, MS: lambda x: _time(x * 1e3),
    "B": _bytes,
}


def missing(value: object) -> bool:
    """None, NaN or an infinity: a value that does not exist (a refused point's)."""
    return not isinstance(value, str) and (pd.isna(value) or not np.isfinite(value))


def format_value(value: object, unit: str, lang: str = "en") -> str:
    """``value`` in ``unit`` (a METRICS unit or one of this module's) as text."""
    if isinstance(value, str):
        return value
    if missing(value):
        return DASH
    if unit == FLAG or isinstance(value, (bool, np.bool_)):
        return t(FLAG_IDS[bool(value)], lang)
    if unit == "" and isinstance(value, (int, np.integer)):
        unit = COUNT
    form = _FORMATS.get(unit)
    return form(float(value)) if form else f"{format_number(float(value))} {unit}"


def format_metric(name: str, value: object, lang: str = "en", unit: str | None = None) -> str:
    """The one way a metric (or a quantity of a page's own, in ``unit``) is written."""
    if name == "bound" and not missing(value):
        msg_id = BOUND_VALUE_IDS.get(str(value), "")
        return t(msg_id, lang) if has(msg_id, lang) else str(value)
    return format_value(value, metric_unit(name) if unit is None else unit, lang)


def format_delta(name: str, delta: object, lang: str = "en", unit: str | None = None) -> str:
    """A change of a metric (B − A), signed, in the metric's unit; a ratio's change in
    percentage points, since "+8.9%" would read as a relative change."""
    unit = metric_unit(name) if unit is None else unit
    if name == "bound" or missing(delta):
        return DASH
    sign = "+" if delta > 0 else "−" if delta < 0 else ""
    size = abs(float(delta))
    if unit == "":
        points = size * 100
        return sign + t("tables.unit.pp", lang, value=f"{points:.1f}" if points < 1000
                        else f"{points:,.0f}")
    return sign + format_value(size, unit, lang)
