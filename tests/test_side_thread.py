"""Lowering and mapping back on a side thread change nothing but the time: the same
schedule, bit for bit, and the same refusals, raised where the caller can catch them."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import hardware_presets
from explorer.core.emulator import lowering, side_thread
from explorer.core.emulator.engine import run
from hardware_presets.errors import InputError
from kernels.common.program import Level, Pipe, ProgramBuilder
from kernels.vector_add import kernel as vector_add

FIELDS = ("start_ns", "end_ns", "issue_end_ns", "served", "segments")


@pytest.fixture(params=["side thread", "one thread"])
def threads(request, monkeypatch):
    monkeypatch.setattr(side_thread, "SIDE_THREAD_FROM", 0 if request.param == "side thread"
                        else 10**12)
    return request.param


@pytest.mark.parametrize("engine", ["jit", "reference"])
def test_a_side_thread_runs_the_same_schedule(engine, monkeypatch):
    chip = hardware_presets.load("910B2", cluster_size=2, l2_MiB=1)
    program = vector_add.build(chip, dict(n=20_000, block_dim=48, tile=256, dtype="fp16"))
    schedules = {}
    for label, start_from in (("side", 0), ("one", 10**12)):
        monkeypatch.setattr(side_thread, "SIDE_THREAD_FROM", start_from)
        # small ranges: the side thread takes the rest of the gather at a range's end
        monkeypatch.setattr(lowering, "GATHER_CHUNK", 37 if label == "side" else 1 << 16)
        schedules[label] = run(program, chip, engine=engine)
    for name in FIELDS:
        np.testing.assert_array_equal(getattr(schedules["side"], name),
                                      getattr(schedules["one"], name), name)


def test_a_cost_model_refusal_comes_back_from_the_side_thread(threads):
    b = ProgramBuilder("fixpipe")  # the 910 has no FixPipe: the cost model refuses
    b.transfer(0, Pipe.FIX, "Fixpipe", Level.L0C, Level.GM, 64, 0)
    with pytest.raises(InputError) as err:
        run(b.build(), hardware_presets.load("910"))
    assert err.value.field == "pipe" and err.value.value == "FIX"


def test_a_thread_that_cannot_start_runs_the_call_at_once(monkeypatch):
    # the puzzle sandbox caps the address space: a thread's stack may not fit
    def refused(self, fn, *args, **kwargs):
        raise RuntimeError("can't start new thread")

    chip = hardware_presets.load("910B2")
    program = vector_add.build(chip, dict(n=20_000, block_dim=48, tile=256, dtype="fp16"))
    expected = run(program, chip)
    monkeypatch.setattr(side_thread, "SIDE_THREAD_FROM", 0)
    monkeypatch.setattr(ThreadPoolExecutor, "submit", refused)
    got = run(program, chip)
    for name in FIELDS:
        np.testing.assert_array_equal(getattr(got, name), getattr(expected, name), name)


@pytest.mark.parametrize("column, value, field", [("core", 72, "core"), ("core", -1, "core"),
                                                  ("pipe", 7, "pipe"), ("pipe", -2, "pipe")])
def test_a_lane_the_chip_lacks_is_refused_before_lowering_writes(threads, column, value,
                                                                 field):
    # lowering sorts by lane while the cost model (which refuses a core the chip lacks)
    # runs beside it: the sort itself must stop at a lane outside the chip
    chip = hardware_presets.load("910")  # 72 cores: ids 0..71
    b = ProgramBuilder("outside")
    b.scalar(list(range(8)), "s", 10, 0)
    program = b.build()
    program.cols[column] = program.cols[column].copy()
    program.cols[column][3] = value
    with pytest.raises(InputError) as err:
        run(program, chip)
    assert err.value.field == field
