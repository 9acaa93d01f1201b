"""DMA queues by hand on the tiny chip, both engines (DESIGN.md §4 rule 1): a GM copy
holds its pipe for its issue cost, is in flight for its latency, streams behind its
pipe's earlier copies, and at most max_outstanding copies per pipe are in flight.

Tiny chip numbers: see tests/test_engine_hand.py. ``QUEUED`` gives reads the DataCopy
issue cost of the presets: 12 cycles + 0.5 per 128-byte burst.
"""
from __future__ import annotations

import pytest

from explorer.core.emulator.engine import run
from kernels.common.program import Level, Pipe, ProgramBuilder
from tests.engine_helpers import ENGINES, QUEUED, tiny
from tests.test_engine_hand import AIV0, read, span, write

pytestmark = pytest.mark.parametrize("engine", ENGINES)

def _copies(count: int, nbytes: int = 128):
    b = ProgramBuilder("copies")
    ids = [int(read(b, AIV0, nbytes, seq)[0]) for seq in range(count)]
    return b, ids


def test_back_to_back_copies_issue_then_arrive(engine):
    b, ids = _copies(4)
    sched = run(b.build(), tiny(**QUEUED), engine=engine)
    # issue 12 + 0.5 x 1 burst = 12.5 ns each: issue, issue, issue, issue ...
    assert sched.start_ns[ids].tolist() == [0.0, 12.5, 25.0, 37.5]
    assert sched.issue_end_ns[ids].tolist() == [12.5, 25.0, 37.5, 50.0]
    # ... then arrivals: 10 ns latency after the issue, 128 B at 32 B/ns = 4 ns
    assert sched.end_ns[ids].tolist() == [26.5, 39.0, 51.5, 64.0]
    assert sched.start_ns[ids[2]] < sched.end_ns[ids[0]]  # three copies in flight at once


def test_one_copy_in_flight_pays_every_latency_in_series(engine):
    b, ids = _copies(4)
    sched = run(b.build(), tiny(gm_read_max_outstanding=1, **QUEUED), engine=engine)
    assert sched.start_ns[ids].tolist() == [0.0, 26.5, 53.0, 79.5]
    assert sched.end_ns[ids].tolist() == [26.5, 53.0, 79.5, 106.0]


def test_issue_waits_for_the_oldest_copy_when_the_queue_is_full(engine):
    b, ids = _copies(4)
    sched = run(b.build(), tiny(gm_read_max_outstanding=2, **QUEUED), engine=engine)
    # copies 0, 1 issue at 0 and 12.5; copy 2 waits for copy 0 to arrive (26.5), copy 3
    # for copy 1 (39.0); each arrives 26.5 after its start
    assert sched.start_ns[ids].tolist() == [0.0, 12.5, 26.5, 39.0]
    assert sched.end_ns[ids].tolist() == [26.5, 39.0, 53.0, 65.5]


def test_bursts_add_to_the_issue_cost(engine):
    b, ids = _copies(2, nbytes=1000)  # ceil(1000 / 128) = 8 bursts: 12 + 8 x 0.5 = 16 ns
    sched = run(b.build(), tiny(**QUEUED), engine=engine)
    assert sched.start_ns[ids].tolist() == [0.0, 16.0]
    # 1000 B at 32 B/ns = 31.25 ns of streaming; copy 1's latency ends at 42, but its
    # bytes stream behind copy 0's (26..57.25): 57.25..88.5
    assert sched.end_ns[ids].tolist() == [57.25, 88.5]


def test_dependants_wait_for_arrival_the_pipe_only_for_its_issue(engine):
    b = ProgramBuilder("arrival")
    first = read(b, AIV0, 128, 0)
    second = read(b, AIV0, 128, 1)
    add = b.vector(AIV0, "Add", 128, "fp16", 0)
    b.depend(add, first)
    sched = run(b.build(), tiny(**QUEUED), engine=engine)
    assert span(sched, first) == (0.0, 26.5)
    assert span(sched, second) == (12.5, 39.0)  # issued while the first was in flight
    assert span(sched, add) == (26.5, 37.5)  # 10 + 256 / 256, after the data arrived


def test_writes_and_fixpipe_are_queues_too(engine):
    b = ProgramBuilder("writes")
    w = [int(write(b, AIV0, 128, seq)[0]) for seq in range(2)]
    f = [int(b.transfer(0, Pipe.FIX, "Fixpipe", Level.L0C, Level.GM, 128, seq)[0])
         for seq in range(2)]
    on_chip = b.transfer(0, Pipe.FIX, "Fixpipe", Level.L0C, Level.L1, 1280, 2)
    chip = tiny(gm_write_issue_cycles=5.0, fixpipe_gm_issue_cycles=3.0,
                hbm_bandwidth_GBps=1000.0)  # plenty: the two pipes never slow each other
    sched = run(b.build(), chip, engine=engine)
    # MTE3: issue 5, latency 10, 128 B at 32 B/ns: 0..19, 5..24
    assert sched.start_ns[w].tolist() == [0.0, 5.0]
    assert sched.end_ns[w].tolist() == [19.0, 24.0]
    # FIX to GM: issue 3, latency 20, 128 B at 64 B/ns: 0..25, 3..28
    assert sched.start_ns[f].tolist() == [0.0, 3.0]
    assert sched.end_ns[f].tolist() == [25.0, 28.0]
    # the on-chip L0C -> L1 move holds the pipe: it waits until both copies arrived,
    # then takes 20 + 1280 / 128 = 30 ns
    assert span(sched, on_chip) == (28.0, 58.0)
