"""The one error type for bad user input, shared by every layer.

It carries the field, the offending value and the allowed range separately so that the UI
can translate the sentence while the CLI and library print it in English as it is. A
hostile value (an integer of thousands of digits, whose ``repr`` itself raises, a huge
text, a deeply nested list) is kept only as a short description, so that showing the
refusal can never fail or flood the page.
"""
from __future__ import annotations

import math
import reprlib

#: integers up to this many bits are shown as they are (about 38 decimal digits)
_SHOWN_INT_BITS = 128
#: texts up to this many characters are shown as they are
_SHOWN_TEXT = 200
_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxstring, _REPR.maxother = 2, 60, 60
_REPR.maxlist = _REPR.maxtuple = _REPR.maxdict = _REPR.maxset = 4


class Shown(str):
    """A short description standing in for a value too large or too nested to show;
    its repr is the text itself (so messages do not quote it twice)."""

    def __repr__(self) -> str:
        return str(self)


def _int_text(value: int) -> str:
    digits = int(value.bit_length() * math.log10(2)) + 1
    return f"an integer of about {digits:,} digits"


def shorten(value: object) -> object:
    """``value`` itself when it is small and plain, else a `Shown` description."""
    if value is None or isinstance(value, (bool, float)):
        return value
    if isinstance(value, int):
        return value if value.bit_length() <= _SHOWN_INT_BITS else Shown(_int_text(value))
    if isinstance(value, str):
        if len(value) <= _SHOWN_TEXT:
            return value
        return Shown(f"{value[:60]!r}... (a text of {len(value):,} characters)")
    kind = type(value).__name__
    try:
        text = _REPR.repr(value)
    except Exception:  # noqa: BLE001 - an object whose repr fails is still refused cleanly
        text = "..."
    return Shown(f"{text} (a {kind})")


class InputError(ValueError):
    """Bad input: names the field, the value given and what is allowed."""

    def __init__(self, field: str, value: object, allowed: str, hint: str = "") -> None:
        self.field = field
        self.value = shorten(value)
        self.allowed = allowed
        self.hint = hint
        text = f"{field} = {self.value!r} is not allowed: {allowed}"
        super().__init__(f"{text}. {hint}" if hint else text)
