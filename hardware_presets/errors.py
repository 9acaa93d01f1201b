"""The one error type for bad user input, shared by every layer.

It carries the field, the offending value and the allowed range separately so that the UI
can translate the sentence while the CLI and library print it in English as it is. A
hostile value (an integer of thousands of digits, whose ``repr`` itself raises, a huge
text, a deeply nested list) is kept only as a short description, so that showing the
refusal can never fail or flood the page.

The parts a layer writes in words (what is allowed, the hint, a description of a value)
are `Phrase`s: English text, as every ``str`` is, that also carries its message id and
values. The English comes from this package's catalogue (``locales/en/refusals.toml``);
a page translates the same id from ``locales/<lang>/`` (``explorer.core.i18n.render``), so
that a refusal reads in one language. The ids are written as literals where the refusal is
raised (``Phrase("refusal.multiple_of", ...)``): they are data, as in ``kernels``.
"""
from __future__ import annotations

import functools
import math
import reprlib
import tomllib
from pathlib import Path

#: integers up to this many bits are shown as they are (about 38 decimal digits)
_SHOWN_INT_BITS = 128
#: texts up to this many characters are shown as they are
_SHOWN_TEXT = 200
_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxstring, _REPR.maxother = 2, 60, 60
_REPR.maxlist = _REPR.maxtuple = _REPR.maxdict = _REPR.maxset = 4
#: the catalogues of the refusals' words, one folder per language (read by explorer.core.i18n)
LOCALES = Path(__file__).with_name("locales")


def _flatten(table: dict, prefix: str = "") -> dict[str, str]:
    flat: dict[str, str] = {}
    for key, value in table.items():
        if isinstance(value, dict):
            flat.update(_flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = str(value)
    return flat


@functools.cache
def english() -> dict[str, str]:
    """The English refusal texts by message id (``locales/en/*.toml``)."""
    merged: dict[str, str] = {}
    for path in sorted((LOCALES / "en").glob("*.toml")):
        merged.update(_flatten(tomllib.loads(path.read_text(encoding="utf-8"))))
    return merged


def _phrase(cls: type, msg_id: str, values: dict) -> Phrase:
    return cls(msg_id, **values)


class Phrase(str):
    """A piece of a refusal: its English text (the string itself) with the message id and
    the values it was made from, so that a page can say it in the reader's language.

    Values are filled into the catalogue's ``{placeholders}`` as they are (format them,
    ``f"{n:,}"``, before); a value may itself be a Phrase, translated with it. Its repr is
    the text itself, so that a description standing in for a value is not quoted twice."""

    msg_id: str
    values: dict[str, object]

    def __new__(cls, msg_id: str, /, **values: object) -> Phrase:
        template = english().get(msg_id)
        try:
            text = template.format(**values) if template is not None else None
        except (KeyError, IndexError, ValueError):
            text = None
        if text is None:  # an id or placeholder the catalogue lacks: still a refusal
            text = " ".join([msg_id, *(f"{k}={v}" for k, v in values.items())])
        self = super().__new__(cls, text)
        self.msg_id, self.values = msg_id, dict(values)
        return self

    def __repr__(self) -> str:
        return str.__str__(self)

    def __reduce__(self):  # rebuilt from its id and values (a worker's refusal travels)
        return _phrase, (type(self), self.msg_id, self.values)


def _int_text(value: int) -> Phrase:
    digits = int(value.bit_length() * math.log10(2)) + 1
    return Phrase("refusal.value.big_int", digits=f"{digits:,}")


def shorten(value: object) -> object:
    """``value`` itself when it is small and plain, else a Phrase describing it."""
    if value is None or isinstance(value, (bool, float, Phrase)):
        return value
    if isinstance(value, int):
        return value if value.bit_length() <= _SHOWN_INT_BITS else _int_text(value)
    if isinstance(value, str):
        if len(value) <= _SHOWN_TEXT:
            return value
        return Phrase("refusal.value.long_text", start=repr(value[:60]),
                      length=f"{len(value):,}")
    kind = type(value).__name__
    try:
        text = _REPR.repr(value)
    except Exception:  # noqa: BLE001 - an object whose repr fails is still refused cleanly
        text = "..."
    return Phrase("refusal.value.other", text=text, kind=kind)


class InputError(ValueError):
    """Bad input: names the field, the value given and what is allowed (``allowed`` and
    ``hint`` are text, a `Phrase` where a page should translate them)."""

    def __init__(self, field: str, value: object, allowed: str, hint: str = "") -> None:
        self.field = field
        self.value = shorten(value)
        self.allowed = allowed
        self.hint = hint
        text = f"{field} = {self.value!r} is not allowed: {allowed}"
        super().__init__(f"{text}. {hint}" if hint else text)
