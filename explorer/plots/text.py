"""How figures write text: widths of a text (Latin and CJK), wrapping, numbers in labels
and tables, and the ticks of a log axis. Pure functions of strings and numbers, used by
``style`` (whose docstring lists the conventions they serve) and by every figure.
"""
from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Iterable

import numpy as np
import pandas as pd

# ---- text: widths, wrapping, numbers -----------------------------------------------------
#: the narrowest column a page draws a figure in (px): two figures side by side at 1400 px,
#: and the width of a figure drawn across the page
NARROW_PX, WIDE_PX = 440, 880
#: average advance of a Latin character and of a CJK character, in font sizes
_LATIN_EM, _WIDE_EM = 0.58, 1.0
_TAG = re.compile(r"<[^>]+>")


def text_units(text: str) -> float:
    """Width of ``text`` in font sizes (markup removed): a CJK character is one, any other
    about 0.58 (a generous mean for the sans-serif fonts browsers pick)."""
    plain = _TAG.sub("", text)
    wide = sum(unicodedata.east_asian_width(c) in "WF" for c in plain)
    return wide * _WIDE_EM + (len(plain) - wide) * _LATIN_EM


#: one wrapping unit: a CJK character (or punctuation) with what closes it, or a word
_CJK = "\u2e80-\u9fff\u3000-\u303f\uff00-\uffef"
_TOKENS = re.compile(f"[{_CJK}][，。；：、）」,.;:)]*\\s*|[^\\s{_CJK}]+\\s*|\\s+")


def wrap(text: str, width_px: float = NARROW_PX, size: float = 12) -> str:
    """``text`` broken with <br> into lines of at most ``width_px`` at font ``size``:
    between words, or between any two CJK characters (never before closing punctuation)."""
    limit = width_px / size
    lines, line = [], ""
    for token in _TOKENS.findall(text):
        if line.strip() and text_units(line + token.rstrip()) > limit:
            lines.append(line.rstrip())
            line = token.lstrip()
        else:
            line += token
    return "<br>".join(lines + [line.rstrip()])


def format_number(value: object, digits: int = 3) -> str:
    """A number as a table or label shows it: integers with thousands separators, other
    numbers to ``digits`` significant digits (no exponent between 0.001 and 10^6);
    anything else as text."""
    if value is None or value is pd.NA:
        return "-"
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.number)):
        return str(value)
    if isinstance(value, (int, np.integer)):
        return f"{int(value):,}"
    number = float(value)
    if not math.isfinite(number):
        return "-"
    if number == int(number) and abs(number) < 1e15:
        return f"{int(number):,}"
    if 1e-3 <= abs(number) < 1e6:
        return f"{number:,.{max(0, digits - 1 - math.floor(math.log10(abs(number))))}f}"
    return f"{number:.{digits}g}"


def format_table(table: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``table`` whose cells are text, numbers formatted (``format_number``):
    a report's table shows 1,234 and 0.153, not 1234.0000001 and 0.15312345."""
    return table.map(format_number)



# ---- log-axis ticks ----------------------------------------------------------------------
#: ticks of a log axis: 1, 2, 5 in every decade, else decades, else every k-th decade
_MANTISSAS = (1, 2, 5)
#: a time axis in µs labels each tick in the unit that keeps its number in [1, 1000)
TIME_US = "µs"
_TIME_UNITS = ((1e6, "s"), (1e3, "ms"), (1.0, "µs"), (1e-3, "ns"))
#: (from, divisor, suffix): 20k, 5M; 2,000 stays a number
_SI = ((1e12, 1e12, "T"), (1e9, 1e9, "G"), (1e6, 1e6, "M"), (1e4, 1e3, "k"))
_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")
#: px an axis is assumed to span when thinning its ticks (a narrow column's plot area)
AXIS_PX = {"x": 360, "y": 240}
_TICK_FONT, _TICK_GAP_PX = 12, 10


def _number(value: float) -> str:
    """A tick's number: 0.005, 20, 2,000, 20k, 5M, or 2×10⁻⁴ below 0.001."""
    for start, divisor, suffix in _SI:
        if value >= start:
            return f"{value / divisor:g}{suffix}"
    if value >= 1e-3:
        return f"{value:,g}"
    exponent = math.floor(math.log10(value) + 1e-9)
    mantissa = round(value / 10.0 ** exponent, 6)
    power = "10" + str(exponent).translate(_SUPERSCRIPT)
    return power if mantissa == 1 else f"{mantissa:g}×{power}"


def tick_label(value: float, unit: str = "") -> str:
    """A log-axis tick with its unit: "50 µs" (a time in µs changes unit: "500 ns",
    "2 ms"), "200 flop/B", "0.5×" (a ratio), or the bare number for a quantity without
    a unit (a relative error, a count)."""
    if unit == TIME_US:
        scale, name = next(((s, n) for s, n in _TIME_UNITS if value >= s * (1 - 1e-9)),
                           _TIME_UNITS[-1])
        return f"{_number(value / scale)} {name}"
    if unit == "×":
        return f"{_number(value)}×"
    return f"{_number(value)} {unit}" if unit else _number(value)


def _decade_values(lo: float, hi: float, mantissas: Iterable[int], step: int) -> list[float]:
    first, last = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    values = [float(f"{m}e{k}") for k in range(first, last + 1) if k % step == 0
              for m in mantissas]
    return [v for v in values if lo * (1 - 1e-9) <= v <= hi * (1 + 1e-9)]


def _fits(values: list[float], labels: list[str], span: float, axis: str, length: float) -> bool:
    """Whether neighbouring tick labels keep a gap on an axis ``length`` pixels long."""
    px = [length * math.log10(b / a) / span for a, b in zip(values, values[1:])]
    if axis == "y":
        return all(gap >= _TICK_FONT + _TICK_GAP_PX / 2 for gap in px)
    widths = [text_units(label) * _TICK_FONT for label in labels]
    return all(gap >= (w0 + w1) / 2 + _TICK_GAP_PX
               for gap, w0, w1 in zip(px, widths, widths[1:]))


def log_ticks(lo: float, hi: float, unit: str = "", axis: str = "x",
              length: float | None = None) -> tuple[list[float], list[str], tuple[float, float]]:
    """(tick values, their labels, the range) of a log axis showing ``lo`` .. ``hi``:
    the densest of 1-2-5, decades, every k-th decade whose labels do not touch on an axis
    of ``length`` px (AXIS_PX by default); the range widens to the neighbouring 1-2-5
    values when it holds fewer than two."""
    if len(_decade_values(lo, hi, _MANTISSAS, 1)) < 2:
        below = [v for v in _decade_values(lo / 10, lo, _MANTISSAS, 1) if v <= lo]
        above = [v for v in _decade_values(hi, hi * 10, _MANTISSAS, 1) if v >= hi]
        lo, hi = below[-1], above[0]
    span = math.log10(hi / lo) or 1.0
    choices = [(_MANTISSAS, 1)] + [((1,), step) for step in range(1, 40)]
    for mantissas, step in choices:
        values = _decade_values(lo, hi, mantissas, step)
        labels = [tick_label(v, unit) for v in values]
        if len(values) <= 2 or _fits(values, labels, span, axis, length or AXIS_PX[axis]):
            return values, labels, (lo, hi)
    return values, labels, (lo, hi)
