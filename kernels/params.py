"""Kernel parameters: one spec per parameter drives validation, widgets, files and URLs."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from hardware_presets.errors import InputError


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

    def allowed(self) -> str:
        if self.choices is not None:
            return "one of " + ", ".join(map(str, self.choices))
        if self.kind is int:
            return f"an integer from {int(self.min)} to {int(self.max)}"
        return f"a number from {self.min:g} to {self.max:g}"

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
        if self.kind is bool:
            if isinstance(value, bool):
                return value
            raise InputError(field, value, "true or false")
        if self.kind is int:
            if isinstance(value, bool) or not isinstance(value, (int, float, str)):
                raise InputError(field, value, self.allowed())
            try:
                number = float(value)
            except (ValueError, OverflowError):
                raise InputError(field, value, self.allowed()) from None
            if not number.is_integer():
                raise InputError(field, value, "a whole number; " + self.allowed())
            return int(number)
        if self.kind is float:
            try:
                return float(value)
            except (TypeError, ValueError, OverflowError):
                raise InputError(field, value, self.allowed()) from None
        return str(value)


def validate_params(specs: tuple[ParamSpec, ...], params: Mapping[str, object],
                    where: str = "params") -> dict[str, object]:
    """All parameters, defaults filled in, each checked; unknown names are refused."""
    known = {s.name: s for s in specs}
    unknown = sorted(set(params) - set(known))
    if unknown:
        raise InputError(f"{where}.{unknown[0]}", params[unknown[0]],
                         "a parameter of this kernel: " + ", ".join(known))
    return {s.name: s.check(params.get(s.name, s.default), where) for s in specs}
