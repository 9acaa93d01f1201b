"""Kernel parameters: one spec per parameter drives validation, widgets, files and URLs."""
from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass, replace

import numpy as np

from hardware_presets.errors import InputError, Phrase

#: longest text a parameter takes (a decode "lengths" list of 4096 numbers fits)
MAX_TEXT = 65_536


@dataclass(frozen=True)
class ParamSpec:
    """A kernel parameter: its type, default and allowed values (range or choices)."""

    name: str
    kind: type  # int, float, str or bool
    default: object
    min: float | None = None
    max: float | None = None
    choices: tuple | None = None
    unit: str = ""
    log_scale: bool = False  # widgets step in powers of two

    def allowed(self) -> Phrase:
        """What the parameter takes, in words (a `Phrase` a page translates)."""
        if self.choices is not None:
            return Phrase("refusal.one_of", options=", ".join(map(str, self.choices)))
        if self.kind is bool:
            return Phrase("refusal.true_false")
        if self.kind is str:
            return Phrase("refusal.text_at_most", limit=f"{MAX_TEXT:,}")
        if self.kind is int:
            return Phrase("refusal.int_range", low=int(self.min), high=int(self.max))
        return Phrase("refusal.number_range", low=f"{self.min:g}", high=f"{self.max:g}")

    def check(self, value: object, where: str = "params") -> object:
        """The value converted to this parameter's type, or an InputError naming it."""
        field = f"{where}.{self.name}"
        value = self._coerce(value, field)
        if self.choices is not None and value not in self.choices:
            raise InputError(field, value, self.allowed())
        if self.min is not None and not (self.min <= value <= self.max):
            raise InputError(field, value, self.allowed())
        return value

    def _coerce(self, value: object, field: str) -> object:
        """The value as this parameter's type. A bool is never a number, a number never a
        bool, and a list or table never a scalar (YAML-like files and URLs give all three)."""
        if self.kind is bool:
            if isinstance(value, (bool, np.bool_)):
                return bool(value)
            raise InputError(field, value, self.allowed())
        if isinstance(value, (bool, np.bool_)):
            raise InputError(field, value, self.allowed())
        if isinstance(value, str) and len(value) > MAX_TEXT:
            raise InputError(field, value, Phrase("refusal.params.text_then",
                                                  limit=f"{MAX_TEXT:,}", allowed=self.allowed()))
        if self.kind is str:
            if isinstance(value, str) or isinstance(value, numbers.Real) and \
                    abs(value) < 2 ** 63:  # a file's lengths = 512; never a huge int's str
                return str(value)
            raise InputError(field, value, self.allowed())
        if isinstance(value, numbers.Integral):
            number = int(value)
        elif isinstance(value, (numbers.Real, str)):
            number = _number(value, field, self.allowed())
        else:
            raise InputError(field, value, self.allowed())
        if self.kind is float:
            return _number(number, field, self.allowed())
        if isinstance(number, float) and not number.is_integer():
            raise InputError(field, value, Phrase("refusal.params.whole_then",
                                                  allowed=self.allowed()))
        return int(number)


def _number(value: object, field: str, allowed: str) -> int | float:
    """A finite number from a number or a text ("12", "1e3"); exact for whole-number texts,
    a float otherwise (an integer beyond float range is refused, not an OverflowError)."""
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            pass
    try:
        number = float(value)
    except (ValueError, OverflowError):
        raise InputError(field, value, allowed) from None
    if not math.isfinite(number):
        raise InputError(field, value, allowed)
    return number


#: a parameter's chip-dependent largest value and what it counts ("vector cores of ...",
#: a `Phrase`)
Limit = tuple[int, str]


def validate_params(specs: tuple[ParamSpec, ...], params: Mapping[str, object],
                    where: str = "params", limits: Mapping[str, Limit] | None = None,
                    ) -> dict[str, object]:
    """All parameters, defaults filled in, each checked; unknown names are refused.

    ``limits`` narrows a parameter's range to what the chip has, checked in place of the
    schema's: a refusal then names the chip's range ("1 to 48 (vector cores of ...)"),
    never the schema's 1 to 128, which no chip has."""
    known = {s.name: s for s in specs}
    unknown = sorted(set(params) - set(known))
    if unknown:
        raise InputError(f"{where}.{unknown[0]}", params[unknown[0]],
                         Phrase("refusal.params.unknown", names=", ".join(known)))
    limits = limits or {}
    return {s.name: _checked(s, params.get(s.name, s.default), where, limits.get(s.name))
            for s in specs}


def _checked(spec: ParamSpec, value: object, where: str, limit: Limit | None) -> object:
    """``spec.check``, within ``limit`` when there is one (and refused naming it)."""
    if limit is None:
        return spec.check(value, where)
    most, what = min(limit[0], int(spec.max)), limit[1]
    try:
        return replace(spec, max=most).check(value, where)
    except InputError as exc:
        raise InputError(exc.field, exc.value, Phrase("refusal.params.limit", low=int(spec.min),
                                                      high=most, what=what)) from None
