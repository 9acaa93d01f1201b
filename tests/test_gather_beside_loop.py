"""The event loop may start before the lowering's gather is done (``lowering.Gathering``):
it reads an instruction's gathered fields only once they are published, stops when the
gathering thread fails, and ``run`` then raises that failure instead of waiting."""
from __future__ import annotations

import threading

import numpy as np
import pytest

import hardware_presets
from explorer.core.emulator import engine, lowering, side_thread
from explorer.core.emulator._jit.progress import release
from explorer.core.emulator._jit.state import loop_state, set_up
from explorer.core.emulator.lowering import EPS_NS, TOL_BYTES
from kernels.vector_add import kernel as vector_add


def _input():
    chip = hardware_presets.load("910B2", cluster_size=2, l2_MiB=1)
    program = vector_add.build(chip, dict(n=1_280_000, block_dim=48, tile=256, dtype="fp16"))
    return engine.prepare(program, chip)


def _loop(inp):
    """The loop alone on ``inp``: its return value, starts and ends."""
    state = loop_state(inp.n, clustered=True)
    set_up(state, 0, inp.n)
    seg = np.zeros((4 * inp.copies + 4, 4))
    done = np.zeros((inp.n >> 16) + 1, np.int64)
    nseg = engine.run_events(inp, inp.dep_count.copy(), state, seg, EPS_NS, TOL_BYTES, done, 16)
    return nseg, state.start, state.end


def test_the_loop_reads_only_what_is_published():
    inp = _input()
    expected = _loop(inp)
    # times and sizes that would run differently, replaced by the right ones one id at a
    # time by another thread (far slower than the loop, which so waits at every id)
    blank = inp._replace(issue_ns=inp.issue_ns * 1000 + 7, nbytes=inp.nbytes * 3,
                         ready=np.zeros(1, np.int64))

    def publish():
        for i in range(inp.n):
            blank.issue_ns[i], blank.nbytes[i] = inp.issue_ns[i], inp.nbytes[i]
            release(blank.ready, 0, i + 1)

    writer = threading.Thread(target=publish)
    writer.start()
    try:
        got = _loop(blank)
    finally:
        writer.join()
    assert got[0] == expected[0] > 0
    np.testing.assert_array_equal(got[1], expected[1])
    np.testing.assert_array_equal(got[2], expected[2])


def test_the_loop_stops_when_the_gather_failed():
    inp = _input()
    assert _loop(inp._replace(ready=np.full(1, -1, np.int64)))[0] == -1


@pytest.mark.parametrize("side_from", [0, 10**12])
def test_run_raises_a_failed_gather(side_from, monkeypatch):
    # with a side thread the failure comes in the ranges it gathers while the loop runs
    # (the loop stops; run raises it), on one thread inside the lowering
    chip = hardware_presets.load("910B2")
    program = vector_add.build(chip, dict(n=20_000, block_dim=48, tile=256, dtype="fp16"))
    real = lowering.gather

    def failing(order, lo, hi, *rest):
        if hi >= len(order):
            raise MemoryError("the last range")
        return real(order, lo, hi, *rest)

    monkeypatch.setattr(side_thread, "SIDE_THREAD_FROM", side_from)
    monkeypatch.setattr(lowering, "GATHER_CHUNK", 37)
    monkeypatch.setattr(lowering, "gather", failing)
    with pytest.raises(MemoryError, match="the last range"):
        engine.run(program, chip)
