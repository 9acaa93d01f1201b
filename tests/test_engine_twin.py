"""The numba engine and its readable twin give the same schedule.

Same served array exactly; start and end times within rtol 1e-9 / atol 1e-6 ns; the same
bytes through HBM and L2, in total and over time. On random programs of the tiny chip
(shared regions, multicast clusters, an L2 small enough to evict, SyncAlls, ids emitted
out of program order) and on the real vector_add kernel.
"""
from __future__ import annotations

import pytest
from hypothesis import given, settings

import hardware_presets
from kernels.vector_add import kernel as vector_add
from tests.engine_helpers import assert_twins, build_program, program_specs


# The twin check is the engine's main safety net: four times the active profile's budget
# (200 programs under "ci", a few seconds).
@settings(max_examples=4 * settings.default.max_examples)
@given(program_specs())
def test_twins_agree_on_random_programs(spec):
    program, chip = build_program(spec)
    assert_twins(program, chip)


@pytest.mark.parametrize("preset", ["910B2", "910"])
@pytest.mark.parametrize("buffer_num", [1, 2])
@pytest.mark.parametrize("dtype", vector_add.DTYPES)
def test_twins_agree_on_vector_add(preset, buffer_num, dtype):
    chip = hardware_presets.load(preset)
    # 12 tiles of 256 elements and a partial 13th over 5 cores: uneven per-core blocks
    params = dict(n=3 * 1024 + 77, block_dim=5, tile=256, buffer_num=buffer_num, dtype=dtype)
    program = vector_add.build(chip, params)
    jit, _ = assert_twins(program, chip)
    assert jit.makespan_ns > 0


@pytest.mark.parametrize("overrides", [{}, {"cluster_size": 2, "l2_MiB": 1,
                                            "hbm_bandwidth_GBps": 400.0}])
def test_twins_agree_on_vector_add_with_every_core(overrides):
    # all 48 AIVs of a 910B2 contend for HBM (48 x 57.6 GB/s caps > 1600 GB/s)
    chip = hardware_presets.load("910B2", **overrides)
    params = dict(n=200_000, block_dim=48, tile=1024, buffer_num=2, dtype="fp16")
    assert_twins(vector_add.build(chip, params), chip)
