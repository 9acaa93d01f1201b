"""The one error type for bad user input, shared by every layer.

It carries the field, the offending value and the allowed range separately so that the UI
can translate the sentence while the CLI and library print it in English as it is.
"""
from __future__ import annotations


class InputError(ValueError):
    """Bad input: names the field, the value given and what is allowed."""

    def __init__(self, field: str, value: object, allowed: str, hint: str = "") -> None:
        self.field = field
        self.value = value
        self.allowed = allowed
        self.hint = hint
        text = f"{field} = {value!r} is not allowed: {allowed}"
        super().__init__(f"{text}. {hint}" if hint else text)
