"""Each kernel's typed parameters (the frozen dataclass its package works with after
``check``) have one field per parameter of its schema, with the same name and Python
type: a parameter added to PARAMS without its field fails here, not deep in a build."""
from __future__ import annotations

from dataclasses import fields

import pytest

from kernels.decode import params as decode_params
from kernels.gemm import params as gemm_params

TYPED = {"gemm": (gemm_params.GemmParams, gemm_params.PARAMS),
         "decode": (decode_params.DecodeParams, decode_params.PARAMS)}


@pytest.mark.parametrize("kernel", sorted(TYPED))
def test_one_field_per_parameter(kernel):
    cls, specs = TYPED[kernel]
    assert {f.name: f.type for f in fields(cls)} == {s.name: s.kind.__name__ for s in specs}


@pytest.mark.parametrize("kernel", sorted(TYPED))
def test_timing_only_parameters_are_the_subclass_fields(kernel):
    """The numerics see the value fields only; the rest shape the time alone."""
    cls = TYPED[kernel][0]
    base = cls.__mro__[1]
    own = {f.name for f in fields(cls)} - {f.name for f in fields(base)}
    timing = {"gemm": gemm_params.TIMING_ONLY_PARAMS, "decode": decode_params.TIMING_ONLY}
    assert own == set(timing[kernel]) and own
