"""What runs on the emulator: kernels, each described by one ``KernelRecord``
(``kernels.record``) that says everything the layers above ask about it: parameters,
validation, program, numerics, advisor hints, report figures, gallery examples.

``KERNELS`` maps a name to its record; ``get(name)`` looks one up with a clear refusal.
``register(record)`` adds a kernel (``registered`` for a block of code, as tests do):
nothing else in the project lists kernels, so a registered kernel appears in the CLI,
sweeps, compare, reports, the advisor and the gallery.
"""
from __future__ import annotations

import contextlib
from collections.abc import Iterator

from hardware_presets.errors import InputError

from .decode_record import RECORD as _DECODE
from .gemm_record import RECORD as _GEMM
from .record import KernelRecord
from .vector_add_record import RECORD as _VECTOR_ADD

KERNELS: dict[str, KernelRecord] = {r.name: r for r in (_VECTOR_ADD, _GEMM, _DECODE)}


def get(name: str) -> KernelRecord:
    """The record of the kernel called ``name``, or an InputError listing the known ones."""
    try:
        return KERNELS[name]
    except (KeyError, TypeError):
        raise InputError("kernel", name, "one of " + ", ".join(KERNELS)) from None


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
