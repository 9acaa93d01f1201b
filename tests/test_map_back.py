"""Mapping the loop's results back while it runs: a block is taken only once every one of
its instructions is done, every block exactly once, and the schedule is the one-pass one,
bit for bit; a dropped stretch of an array gives its pages back and nothing else."""
from __future__ import annotations

import mmap
import threading

import numpy as np
import pytest
from numba import njit

import hardware_presets
from explorer.core.emulator import engine, map_back, side_thread
from explorer.core.emulator._jit.progress import complete_blocks, publish
from explorer.core.emulator._jit.state import loop_state, set_up
from explorer.core.emulator.lowering import EPS_NS, TOL_BYTES
from explorer.core.emulator.schedule import Schedule
from kernels.common.memory import drop_pages
from kernels.common.program import Level, Pipe, ProgramBuilder
from kernels.vector_add import kernel as vector_add

FIELDS = ("start_ns", "end_ns", "issue_end_ns", "served", "segments")


@njit
def _publish_all(done, ids, block_bits):
    for i in ids:
        publish(done, i, block_bits)


def test_a_block_is_complete_once_each_of_its_ids_is_published():
    done = np.zeros(3, np.int64)  # 10 ids in blocks of 4: 0-3, 4-7, 8-9
    taken = np.zeros(3, np.bool_)
    _publish_all(done, np.array([9, 0, 1, 2, 4, 5, 6, 7]), 2)
    assert complete_blocks(done, 2, 10, taken).tolist() == [1]  # 3 and 8 are missing
    _publish_all(done, np.array([8, 3]), 2)
    assert complete_blocks(done, 2, 10, taken).tolist() == [0, 1, 2]
    taken[1] = True
    assert complete_blocks(done, 2, 10, taken).tolist() == [0, 2]


def _program(chip):
    return vector_add.build(chip, dict(n=1_280_000, block_dim=48, tile=256, dtype="fp16"))


def test_blocks_mapped_as_they_complete_give_the_one_pass_schedule(monkeypatch):
    # the loop runs first, then the side thread maps whatever is complete while the loop
    # would still run (everything: each block is taken and its pages dropped), then the rest
    chip = hardware_presets.load("910B2", cluster_size=2, l2_MiB=1)
    inp = engine.prepare(_program(chip), chip)
    monkeypatch.setattr(map_back, "BLOCK_BITS", 10)  # 8 KB of times a block: a page dropped
    state = loop_state(inp.n, clustered=True)
    set_up(state, 0, inp.n)
    out = map_back.MapBack(inp, state)
    seg = np.zeros((4 * inp.copies + 4, 4))
    nseg = engine.run_events(inp, inp.dep_count.copy(), state, seg, EPS_NS, TOL_BYTES,
                             out.done, out.block_bits)
    expected = Schedule.from_internal(inp, out.start, out.end, out.served, seg[:nseg])
    assert out.done.sum() == inp.n and len(out.done) > 4
    side = threading.Thread(target=out.while_running)
    side.start()
    try:
        while not out._taken.all():  # (a condition the side thread makes true)
            side.join(0.01)
    finally:
        out.loop_over.set()
        side.join()
    assert (out.start == 0).sum() > inp.n // 3  # a page of each block's 2 was dropped
    got = out.schedule(seg[:nseg].copy())
    for name in FIELDS:
        np.testing.assert_array_equal(getattr(got, name), getattr(expected, name), name)


@pytest.mark.parametrize("block_bits", [3, 10, 16])
def test_a_side_thread_mapping_during_the_loop_changes_nothing(block_bits, monkeypatch):
    chip = hardware_presets.load("910B2", cluster_size=2, l2_MiB=1)
    program = _program(chip)
    monkeypatch.setattr(side_thread, "SIDE_THREAD_FROM", 10**12)  # no thread: one pass after
    expected = engine.run(program, chip)
    monkeypatch.setattr(side_thread, "SIDE_THREAD_FROM", 0)
    monkeypatch.setattr(map_back, "BLOCK_BITS", block_bits)
    got = engine.run(program, chip)
    for name in FIELDS:
        np.testing.assert_array_equal(getattr(got, name), getattr(expected, name), name)


def test_a_deadlock_leaves_blocks_open_that_are_mapped_after_the_loop(monkeypatch):
    monkeypatch.setattr(side_thread, "SIDE_THREAD_FROM", 0)
    monkeypatch.setattr(map_back, "BLOCK_BITS", 2)
    b = ProgramBuilder("deadlock")
    reads = [b.transfer(c, Pipe.MTE2, "CopyIn", Level.GM, Level.UB, 4096, s)
             for c in (0, 1) for s in range(6)]
    b.depend(reads[2], reads[9])  # core 0's third read waits for core 1's fourth,
    b.depend(reads[9], reads[3])  # which waits for core 0's fourth: a cycle
    program = b.build()
    chip = hardware_presets.load("910B2")
    got = engine.execute(engine.prepare(program, chip))
    expected = engine.execute(engine.prepare(program, chip), "reference")  # (no rounding here)
    assert np.isnan(got.end_ns).sum() == 7  # 2..5 on core 0, 9..11 on core 1
    for name in FIELDS:
        np.testing.assert_array_equal(getattr(got, name), getattr(expected, name), name)


def test_dropped_pages_read_zero_and_only_whole_pages_inside_are_dropped():
    per_page = mmap.PAGESIZE // 8
    array = np.arange(1.0, 6 * per_page + 1)  # over 6 pages (its start need not be aligned)
    lo, hi = per_page // 2, 4 * per_page + 3
    drop_pages(array, lo, hi)
    zero = np.flatnonzero(array == 0)
    assert len(zero) >= 2 * per_page  # at least the whole pages inside lo..hi
    assert zero.min() >= lo and zero.max() < hi
    assert len(zero) % per_page == 0 and (array.ctypes.data + 8 * zero.min()) % mmap.PAGESIZE == 0
    kept = np.setdiff1d(np.arange(len(array)), zero)
    np.testing.assert_array_equal(array[kept], kept + 1.0)
