"""DESIGN.md §4's invariants hold on every schedule, for both engines.

No lane runs two instructions at once (and lanes keep program order); nothing starts before
its dependencies end; nothing beats its fixed cost or its path's best rate; SyncAll
members are released together; HBM and L2 throughput never exceed their bandwidth; bytes
are conserved per pool; the makespan is at least the roofline bound and the critical path.
The checkers live in tests/engine_helpers.py; the last tests show they do catch violations.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings

import hardware_presets
from explorer.core.emulator.engine import run
from kernels.common.program import Level, Pipe, ProgramBuilder
from kernels.vector_add import kernel as vector_add
from tests.engine_helpers import (
    ENGINES,
    build_program,
    check_invariants,
    critical_path,
    program_specs,
    tiny,
)


@pytest.mark.parametrize("engine", ENGINES)
@settings(max_examples=2 * settings.default.max_examples)
@given(spec=program_specs())
def test_invariants_on_random_programs(engine, spec):
    program, chip = build_program(spec)
    check_invariants(program, chip, run(program, chip, engine=engine))


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("preset, overrides", [
    ("910B2", {}),
    ("910B2", {"hbm_bandwidth_GBps": 200.0}),  # memory-bound: 16 readers share 200 GB/s
    ("910B2", {"cluster_size": 2, "l2_MiB": 1}),
    ("910", {}),
])
@pytest.mark.parametrize("buffer_num", [1, 2])
def test_invariants_on_vector_add(engine, preset, overrides, buffer_num):
    chip = hardware_presets.load(preset, **overrides)
    params = dict(n=40_000, block_dim=16, tile=512, buffer_num=buffer_num, dtype="fp16")
    program = vector_add.build(chip, params)
    check_invariants(program, chip, run(program, chip, engine=engine))


def test_critical_path_by_hand():
    # AIV0: scalar 5 -> (dep) vector 20; AIV1: scalar 30, then scalar 1 on the same lane;
    # the vector also waits for AIV1's first scalar: max(5, 30) + 20 = 50.
    b = ProgramBuilder("path")
    s0 = b.scalar(2, "a", 5, 0)
    v = b.vector(2, "v", 1280, "fp16", 1)  # 10 + 2560 / 256 = 20 ns
    s1 = b.scalar(3, "b", 30, 0)
    b.scalar(3, "c", 1, 1)
    b.depend(v, s0)
    b.depend(v, s1)
    program = b.build()
    assert critical_path(program, np.array([5.0, 20.0, 30.0, 1.0])) == 50.0
    check_invariants(program, tiny(), run(program, tiny()))


def _shifted(schedule, **changes):
    return dataclasses.replace(schedule, **changes)


def test_checkers_catch_violations():
    b = ProgramBuilder("victim")
    r = b.transfer(2, Pipe.MTE2, "CopyIn", Level.GM, Level.UB, 3200, 0)
    v = b.vector(2, "Add", 6400, "fp16", 1)
    b.depend(v, r)
    b.scalar(2, "s", 10, 0)
    b.scalar(2, "t", 10, 1)
    program, chip = b.build(), tiny()
    good = run(program, chip)
    check_invariants(program, chip, good)  # r 0..110, v 110..170, s 0..10, t 10..20
    cases = {
        "two instructions at once": dict(start_ns=good.start_ns - [0, 0, 0, 5],
                                         end_ns=good.end_ns - [0, 0, 0, 5]),
        "before a dependency ended": dict(start_ns=good.start_ns - [0, 1, 0, 0]),
        "shorter than its fixed cost": dict(end_ns=good.end_ns - [0, 1, 0, 0]),
        "faster than its path allows": dict(end_ns=good.end_ns - [1, 0, 0, 0]),
        "HBM above bandwidth": dict(segments=good.segments * [1, 1, 3, 1]),
        "HBM moved": dict(segments=good.segments * [1, 1, 0.5, 1]),
    }
    for message, change in cases.items():
        with pytest.raises(AssertionError, match=message):
            check_invariants(program, chip, _shifted(good, **change))
