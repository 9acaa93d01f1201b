"""What runs on the emulator: kernels, each described by one ``KernelRecord``
(``kernels.common.record``) that says everything the layers above ask about it: parameters,
validation, program, numerics, advisor hints, report figures, gallery examples.

``KERNELS`` maps a name to its record; ``get(name)`` looks one up with a clear refusal.
``register(record)`` adds a kernel (``registered`` for a block of code, as tests do):
nothing else in the project lists kernels, so a registered kernel appears in the CLI,
sweeps, compare, reports, the advisor and the gallery.
"""
from __future__ import annotations

import contextlib
import importlib
import pkgutil
from collections.abc import Iterator

from hardware_presets.errors import InputError, Phrase
from kernels.common.record import KernelRecord


def _discover() -> dict[str, KernelRecord]:
    """Every sub-package of ``kernels`` that defines ``RECORD`` is a kernel: adding a
    kernel is adding its folder (shared pieces such as ``common`` define no record)."""
    found = {}
    for info in pkgutil.iter_modules(__path__):
        if info.ispkg:
            record = getattr(importlib.import_module(f"{__name__}.{info.name}"), "RECORD", None)
            if isinstance(record, KernelRecord):
                found[record.name] = record
    return found


KERNELS: dict[str, KernelRecord] = _discover()


def get(name: str) -> KernelRecord:
    """The record of the kernel called ``name``, or an InputError listing the known ones."""
    try:
        return KERNELS[name]
    except (KeyError, TypeError):
        raise InputError("kernel", name, Phrase("refusal.one_of", options=", ".join(KERNELS))) \
            from None


def register(record: KernelRecord) -> None:
    """Add a kernel (refused when its name is taken)."""
    if record.name in KERNELS:
        raise ValueError(f"kernel {record.name!r} is already registered")
    KERNELS[record.name] = record


@contextlib.contextmanager
def registered(record: KernelRecord) -> Iterator[KernelRecord]:
    """``record`` registered for the duration of a ``with`` block."""
    register(record)
    try:
        yield record
    finally:
        KERNELS.pop(record.name, None)
