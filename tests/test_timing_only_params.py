"""A kernel's TIMING_ONLY_PARAMS really never reach its arithmetic.

simulate() keys its memo of numerical checks on the parameters without them and hands the
numerics only the rest, so a parameter wrongly declared timing-only would make two
different checks look alike. Here the numerics of representative scenarios (every
implementation, layout, cache format, split-K mode, ...) run on a dictionary that records
every key read, ``get`` and ``in`` included; none may be a timing-only one. A scenario
that changes only timing parameters then gets the same check and another time.
"""
from __future__ import annotations

import pytest

import kernels
from explorer.core import Scenario, simulate
from explorer.core.simulate import check_numerics, numerics_params

SMALL_DECODE = {"batch": 2, "mean_len": 256, "max_len": 512, "model": "llama3-8b"}
SMALL_GEMM = {"M": 256, "N": 256, "K": 512}
VARIANTS = {
    "decode": [{}, {"impl": "cube_vector"}, {"impl": "split_kv", "split_tokens": 128},
               {"layout": "contiguous"}, {"kv_dtype": "int8_token"},
               {"kv_dtype": "bf16"}, {"distribution": "uniform"}],
    "gemm": [{}, {"grid_z": 4}, {"grid_z": 4, "split_k_mode": "atomic"}, {"bias": True},
             {"dtype_in": "int8", "dtype_out": "int32"}, {"dtype_in": "bf16",
                                                         "dtype_out": "fp32"}],
}
SMALL = {"decode": SMALL_DECODE, "gemm": SMALL_GEMM}


class RecordingDict(dict):
    """A dict that remembers every key looked up."""

    def __init__(self, *args) -> None:
        super().__init__(*args)
        self.read: set[str] = set()

    def __getitem__(self, key):
        self.read.add(key)
        return super().__getitem__(key)

    def get(self, key, default=None):
        self.read.add(key)
        return super().get(key, default)

    def __contains__(self, key) -> bool:
        self.read.add(key)
        return super().__contains__(key)


CASES = [(name, variant) for name, variants in VARIANTS.items() for variant in variants]


@pytest.mark.parametrize(("name", "variant"), CASES, ids=[f"{n}-{v}" for n, v in CASES])
def test_the_numerics_never_read_a_timing_only_parameter(name, variant):
    kernel = kernels.get(name)
    scenario = Scenario.make(kernel=name, params={**SMALL[name], **variant})
    params = RecordingDict(scenario.params_dict)
    assert check_numerics(kernel, params, scenario.seed).passed
    assert params.read, "the recording saw no reads"
    assert not params.read & kernel.timing_only


def test_the_numerics_are_given_no_timing_only_parameter():
    kernel = kernels.get("decode")
    params = Scenario.make(kernel="decode", params=SMALL_DECODE).params_dict
    given = numerics_params(kernel, params)
    assert set(given) == set(params) - kernel.timing_only and "impl" in given
    assert numerics_params(kernels.get("vector_add"), {"n": 1}) == {"n": 1}


@pytest.mark.parametrize(("name", "change"), [
    ("decode", {"phases": "append", "append": "concat"}),
    ("decode", {"buffer_num": 1, "block_dim": 1}),
    ("gemm", {"db_l1": False, "policy": "row_major", "block_dim": 4}),
])
def test_timing_parameters_change_the_time_and_keep_the_check(name, change, fresh_numerics):
    base = Scenario.make(kernel=name, params=SMALL[name])
    other = base.replace(params=change)
    a, b = simulate(base), simulate(other)
    assert a.numerics == b.numerics and a.numerics.passed
    assert a.makespan_ns != b.makespan_ns
