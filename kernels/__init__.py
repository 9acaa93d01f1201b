"""What runs on the emulator. Every kernel module offers the same small protocol:

``NAME``, ``PARAMS`` (ParamSpecs), ``check(chip, params) -> params`` (validated, defaults
filled), ``build(chip, params) -> Program`` (work and dependencies, no time),
``make_inputs(params, rng)``, ``execute(params, inputs)`` (numerics in the emulated
precision), ``reference(inputs)`` (float64 truth), ``error_bound(params, inputs, ref)``
(allowed error per element), ``unit_roundoff(params)`` and ``output_elements(params)``;
optionally ``as_real(params, outputs)`` to compare quantised outputs in the real domain,
and ``TIMING_ONLY_PARAMS``: parameters that shape the program's time but never its
arithmetic. The numerics are given the parameters without them (reading one is a
KeyError, not a silent mistake), so scenarios that differ only in them share one
numerical check.
"""
from __future__ import annotations

from types import ModuleType

from hardware_presets.errors import InputError

from . import decode, gemm, vector_add

KERNELS: dict[str, ModuleType] = {vector_add.NAME: vector_add, gemm.NAME: gemm,
                                   decode.NAME: decode}


def get(name: str) -> ModuleType:
    """The kernel module called ``name``, or an InputError listing the known ones."""
    try:
        return KERNELS[name]
    except KeyError:
        raise InputError("kernel", name, "one of " + ", ".join(KERNELS)) from None
