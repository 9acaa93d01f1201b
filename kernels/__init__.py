"""What runs on the emulator. Every kernel module offers the same small protocol:

``NAME``, ``PARAMS`` (ParamSpecs), ``check(chip, params) -> params`` (validated, defaults
filled), ``build(chip, params) -> Program`` (work and dependencies, no time),
``make_inputs(params, rng)``, ``execute(params, inputs)`` (numerics in the emulated
precision), ``reference(inputs)`` (float64 truth) and ``unit_roundoff(params)``.
"""
from __future__ import annotations

from types import ModuleType

from hardware_presets.errors import InputError

from . import vector_add

KERNELS: dict[str, ModuleType] = {vector_add.NAME: vector_add}


def get(name: str) -> ModuleType:
    """The kernel module called ``name``, or an InputError listing the known ones."""
    try:
        return KERNELS[name]
    except KeyError:
        raise InputError("kernel", name, "one of " + ", ".join(KERNELS)) from None
