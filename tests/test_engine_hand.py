"""Hand-worked timelines on the tiny test chip (tests/data/tiny_chip.toml), both engines.

Tiny chip numbers used below (1000 MHz, so 1 cycle = 1 ns and B bytes/cycle = B bytes/ns):
GM read latency 10, HBM read cap 32 B/ns, L2 read cap 64 B/ns; GM write latency 10, cap
32 B/ns; DMA issue cost 0 (the pipelining tests set their own), up to 4 copies in flight
per pipe; HBM 64 GB/s, L2 256 GB/s, L2 1 MiB; vector: 10 cycles + bytes / 256;
SyncAll 100 cycles. Cores 0, 1 are AICs, 2..5 AIVs. So on an idle memory system a 3200-byte
read from HBM takes 10 + 3200/32 = 110 ns, from L2 10 + 3200/64 = 60 ns, a 3200-byte write
110 ns, a 6400-element fp16 Add 10 + 12800/256 = 60 ns. ``SERIAL`` keeps one read in
flight per pipe, for tests about what a read is served from.
"""
from __future__ import annotations

import numpy as np
import pytest

from explorer.core.emulator import engine as engine_module
from explorer.core.emulator.engine import DeadlockError, run
from explorer.core.emulator.schedule import SERVED_HBM, SERVED_L2, SERVED_MULTICAST
from hardware_presets.errors import InputError
from kernels.common.program import Level, Pipe, ProgramBuilder
from kernels.common.tque import Stage, staged_loop
from tests.engine_helpers import ENGINES, integrals, merged, tiny

pytestmark = pytest.mark.parametrize("engine", ENGINES)

AIV0, AIV1, AIV2, AIV3 = 2, 3, 4, 5
KIB = 1024
SERIAL = dict(gm_read_max_outstanding=1)


def span(schedule, i) -> tuple[float, float]:
    return (float(schedule.start_ns[i][0]), float(schedule.end_ns[i][0]))


def read(b, core, nbytes, seq, region=-1):
    return b.transfer(core, Pipe.MTE2, "CopyIn", Level.GM, Level.UB, nbytes, seq, region=region)


def write(b, core, nbytes, seq, region=-1):
    return b.transfer(core, Pipe.MTE3, "CopyOut", Level.UB, Level.GM, nbytes, seq,
                      region=region)


def test_dependency_chain_across_pipes(engine):
    b = ProgramBuilder("chain")
    r = read(b, AIV0, 3200, 0)
    v = b.vector(AIV0, "Add", 6400, "fp16", 1)
    w = write(b, AIV0, 3200, 2)
    s = b.scalar(AIV0, "loop", 7, 0)  # independent: runs at once on its own pipe
    b.depend(v, r)
    b.depend(w, v)
    sched = run(b.build(), tiny(), engine=engine)
    assert span(sched, r) == (0.0, 110.0)  # 10 latency + 3200 B at the 32 B/ns cap
    assert span(sched, v) == (110.0, 170.0)  # 10 + 12800 / 256
    assert span(sched, w) == (170.0, 280.0)  # 10 latency + 3200 B at 32 B/ns
    assert span(sched, s) == (0.0, 7.0)
    assert sched.served.tolist() == [SERVED_HBM, 0, SERVED_HBM, 0]
    assert merged(sched.segments) == [(0, 10, 0, 0), (10, 110, 32, 0), (110, 180, 0, 0),
                                      (180, 280, 32, 0)]
    assert sched.makespan_ns == 280.0


def test_lanes_run_in_program_order_one_at_a_time(engine):
    b = ProgramBuilder("in-order")
    a = b.scalar(AIV0, "a", 20, 0)
    c = b.scalar(AIV0, "c", 30, 1)
    late = b.scalar(AIV0, "late", 5, 3)  # emitted first, but seq 3 runs after seq 2
    early = b.scalar(AIV0, "early", 5, 2)
    # head-of-line blocking: y is independent but waits behind x, which waits for the read
    r = read(b, AIV1, 3200, 0)
    x = b.scalar(AIV1, "x", 10, 0)
    y = b.scalar(AIV1, "y", 10, 1)
    vec = b.vector(AIV1, "Add", 6400, "fp16", 0)  # another pipe of the same core: parallel
    b.depend(x, r)
    sched = run(b.build(), tiny(), engine=engine)
    assert span(sched, a) == (0.0, 20.0)
    assert span(sched, c) == (20.0, 50.0)
    assert span(sched, early) == (50.0, 55.0)
    assert span(sched, late) == (55.0, 60.0)
    assert span(sched, r) == (0.0, 110.0)
    assert span(sched, x) == (110.0, 120.0)
    assert span(sched, y) == (120.0, 130.0)
    assert span(sched, vec) == (0.0, 60.0)


def _vector_add_like(buffer_num: int):
    """Three tiles on one AIV: CopyIn (110 ns), Add (60 ns), CopyOut (110 ns), TQue deps."""
    b = ProgramBuilder("staged")
    x, z = b.regions([3200] * 3), b.regions([3200] * 3)
    stages = [Stage.copy("CopyIn", Pipe.MTE2, Level.GM, Level.UB, 3200, x),
              Stage.vector("Add", 6400, "fp16"),
              Stage.copy("CopyOut", Pipe.MTE3, Level.UB, Level.GM, 3200, z)]
    ids = staged_loop(b, np.full(3, AIV0), np.arange(3), np.arange(3), stages,
                      [(0, 1, buffer_num), (1, 2, buffer_num)])
    return b.build(), ids


def _spans(sched, ids):
    return [(float(sched.start_ns[i]), float(sched.end_ns[i])) for i in ids]


def test_double_buffering_overlaps_copy_in_with_compute(engine):
    program, (copy_in, add, copy_out) = _vector_add_like(2)
    sched = run(program, tiny(), engine=engine)
    # BUFFER_NUM = 2: CopyIn of tiles 0 and 1 both issue at 0 (two free slots); their
    # latencies overlap, their bytes stream one after the other on MTE2 (10..110, 110..210).
    # CopyIn 2 waits for Add 0 to free a slot (170), then for tile 1's bytes (210..310).
    # A read and a write at 32 B/ns each exactly fill the 64 GB/s HBM.
    assert _spans(sched, copy_in) == [(0, 110), (0, 210), (170, 310)]
    assert _spans(sched, add) == [(110, 170), (210, 270), (310, 370)]
    # CopyOut 1 issues at 270 while CopyOut 0 is in flight and streams after it (280)
    assert _spans(sched, copy_out) == [(170, 280), (270, 380), (370, 480)]
    assert sched.start_ns[copy_in[1]] < sched.end_ns[add[0]]  # the overlap
    assert sched.makespan_ns == 480.0


def test_single_buffering_serialises_copy_in_after_compute(engine):
    program, (copy_in, add, copy_out) = _vector_add_like(1)
    sched = run(program, tiny(), engine=engine)
    # BUFFER_NUM = 1: CopyIn of tile j+1 waits for Add of tile j to free the only slot,
    # and Add of tile j+1 waits for CopyOut of tile j to free the output slot.
    assert _spans(sched, copy_in) == [(0, 110), (170, 280), (340, 450)]
    assert _spans(sched, add) == [(110, 170), (280, 340), (450, 510)]
    assert _spans(sched, copy_out) == [(170, 280), (340, 450), (510, 620)]
    assert sched.start_ns[copy_in[1]] == sched.end_ns[add[0]]
    assert sched.makespan_ns == 620.0


@pytest.mark.parametrize("hbm, end, total", [
    (32.0, 210.0, 32.0),  # fair share 16 B/ns each (below the 32 cap): 10 + 3200/16
    (64.0, 110.0, 64.0),  # fair share 32 = cap: 10 + 3200/32
    (1000.0, 110.0, 64.0),  # bandwidth plenty: each capped at 32 B/ns
])
def test_two_reads_share_hbm_fairly(engine, hbm, end, total):
    b = ProgramBuilder("share")
    regions = b.regions([3200, 3200])
    r0 = read(b, AIV0, 3200, 0, regions[0])
    r1 = read(b, AIV1, 3200, 0, regions[1])
    sched = run(b.build(), tiny(hbm_bandwidth_GBps=hbm), engine=engine)
    assert span(sched, r0) == (0.0, end)
    assert span(sched, r1) == (0.0, end)
    assert merged(sched.segments) == [(0, 10, 0, 0), (10, end, total, 0)]


def test_bandwidth_is_reshared_when_a_read_finishes(engine):
    b = ProgramBuilder("reshare")
    big = read(b, AIV0, 3200, 0)
    small = read(b, AIV1, 1600, 0)
    sched = run(b.build(), tiny(hbm_bandwidth_GBps=32.0), engine=engine)
    # 16 B/ns each until the small one ends at 10 + 1600/16 = 110; the big one then has
    # 3200 - 1600 = 1600 bytes left at min(cap 32, 32) = 32 B/ns: 50 ns more.
    assert span(sched, small) == (0.0, 110.0)
    assert span(sched, big) == (0.0, 160.0)
    assert integrals(sched.segments) == (4800.0, 0.0)


def test_unequal_caps_water_fill(engine):
    b = ProgramBuilder("water-fill")
    r = read(b, AIV0, 3200, 0)  # cap 32 B/ns
    w = write(b, AIV1, 11200, 0)  # cap overridden to 128 B/ns
    sched = run(b.build(), tiny(hbm_bandwidth_GBps=96.0, gm_write_bytes_per_cycle=128.0),
                engine=engine)
    # 10..110: the read is held at its cap of 32, the write gets the rest, 96 - 32 = 64
    # (6400 bytes); then the write alone runs at min(128, 96) = 96: 4800 / 96 = 50 ns.
    assert span(sched, r) == (0.0, 110.0)
    assert span(sched, w) == (0.0, 160.0)
    assert merged(sched.segments) == [(0, 10, 0, 0), (10, 160, 96, 0)]


def test_second_read_of_a_region_hits_l2(engine):
    b = ProgramBuilder("l2-hit")
    region = b.regions(3200)
    first = read(b, AIV0, 3200, 0, region)
    second = read(b, AIV0, 3200, 1, region)
    sched = run(b.build(), tiny(**SERIAL), engine=engine)
    assert span(sched, first) == (0.0, 110.0)  # HBM at the 32 B/ns cap
    assert span(sched, second) == (110.0, 170.0)  # L2 at the 64 B/ns cap: 10 + 3200/64
    assert sched.served.tolist() == [SERVED_HBM, SERVED_L2]
    assert merged(sched.segments) == [(0, 10, 0, 0), (10, 110, 32, 0), (110, 120, 0, 0),
                                      (120, 170, 0, 64)]


def test_l2_hit_limited_by_l2_bandwidth(engine):
    b = ProgramBuilder("l2-bound")
    region = b.regions(3200)
    read(b, AIV0, 3200, 0, region)
    hits = [read(b, core, 3200, 1, region) for core in (AIV0, AIV1)]
    for h in hits[1:]:
        b.depend(h, 0)
    sched = run(b.build(), tiny(l2_bandwidth_GBps=32.0, **SERIAL), engine=engine)
    # both hits start at 110; they share 32 GB/s of L2: 16 B/ns each, 10 + 3200/16
    assert [span(sched, h) for h in hits] == [(110.0, 320.0), (110.0, 320.0)]
    assert sched.served.tolist() == [SERVED_HBM, SERVED_L2, SERVED_L2]
    assert integrals(sched.segments) == (3200.0, 6400.0)


def test_write_allocates_in_l2(engine):
    b = ProgramBuilder("write-allocate")
    region = b.regions(3200)
    w = write(b, AIV0, 3200, 0, region)
    r = read(b, AIV1, 3200, 0, region)
    b.depend(r, w)
    sched = run(b.build(), tiny(), engine=engine)
    assert span(sched, w) == (0.0, 110.0)
    assert span(sched, r) == (110.0, 170.0)  # served by L2: 10 + 3200/64
    assert sched.served.tolist() == [SERVED_HBM, SERVED_L2]


def test_l2_evicts_least_recently_used_region(engine):
    b = ProgramBuilder("lru")
    a, bb, c, huge = b.regions([512 * KIB, 512 * KIB, 512 * KIB, 2048 * KIB])
    # one lane, 3200 bytes each (a region is the unit of residency, the read a part of it)
    order = [a, bb, a, c, a, bb, huge, huge]
    ids = [read(b, AIV0, 3200, seq, region) for seq, region in enumerate(order)]
    sched = run(b.build(), tiny(**SERIAL), engine=engine)
    # L2 holds 1 MiB = two regions. A, B fill it; the hit on A makes B least recently
    # used, so C evicts B (FIFO would have evicted A); A hits again; B misses. The 2 MiB
    # region never fits, so it misses every time.
    H, L = SERVED_HBM, SERVED_L2
    assert sched.served.tolist() == [H, H, L, H, L, H, H, H]
    assert [span(sched, i) for i in ids] == [
        (0.0, 110.0), (110.0, 220.0), (220.0, 280.0), (280.0, 390.0), (390.0, 450.0),
        (450.0, 560.0), (560.0, 670.0), (670.0, 780.0)]


def _multicast_program(delay: float):
    """AIV0 reads R at t=0; AIV1 (same cluster when k = 2) and AIV2 (other cluster) read R
    after a scalar of ``delay`` ns."""
    b = ProgramBuilder("multicast")
    region = b.regions(3200)
    leader = read(b, AIV0, 3200, 0, region)
    reads = [leader]
    for core in (AIV1, AIV2):
        wait = b.scalar(core, "wait", delay, 0)
        reads.append(read(b, core, 3200, 1, region))
        b.depend(reads[-1], wait)
    return b.build(), reads


def test_multicast_joins_the_fetch_in_flight(engine):
    program, (leader, joiner, other) = _multicast_program(50)
    sched = run(program, tiny(cluster_size=2, hbm_bandwidth_GBps=1000.0), engine=engine)
    assert span(sched, leader) == (0.0, 110.0)
    assert span(sched, joiner) == (50.0, 110.0)  # ends with the leader
    # AIV2 is in the next cluster: it waits for R's L2 fill (the leader), then streams
    # from L2: 110 + 3200 / 64 = 160
    assert span(sched, other) == (50.0, 160.0)
    assert sched.served[[leader[0], joiner[0], other[0]]].tolist() == [
        SERVED_HBM, SERVED_MULTICAST, SERVED_L2]
    assert integrals(sched.segments) == (3200.0, 3200.0)  # the joiner moved no bytes


def test_multicast_joiner_still_pays_its_latency(engine):
    program, (leader, joiner, _) = _multicast_program(105)
    sched = run(program, tiny(cluster_size=2, hbm_bandwidth_GBps=1000.0), engine=engine)
    assert span(sched, leader) == (0.0, 110.0)
    assert span(sched, joiner) == (105.0, 115.0)  # max(leader end 110, 105 + 10)
    assert sched.served[joiner[0]] == SERVED_MULTICAST


def test_l2_merges_misses_with_cluster_size_one(engine):
    program, (leader, second, third) = _multicast_program(50)
    sched = run(program, tiny(cluster_size=1, hbm_bandwidth_GBps=1000.0), engine=engine)
    # R's fill from HBM is in flight when AIV1 and AIV2 ask for it at 50: both wait for
    # it (110), then stream from L2 at their 64 B/ns cap, sharing 256 GB/s: 110 + 50
    assert span(sched, leader) == (0.0, 110.0)
    assert span(sched, second) == (50.0, 160.0)
    assert span(sched, third) == (50.0, 160.0)
    assert sched.served[[leader[0], second[0], third[0]]].tolist() == [
        SERVED_HBM, SERVED_L2, SERVED_L2]
    assert integrals(sched.segments) == (3200.0, 6400.0)  # one HBM fetch, two L2 reads


def test_a_merged_miss_still_pays_its_latency(engine):
    program, (leader, second, _) = _multicast_program(105)
    sched = run(program, tiny(hbm_bandwidth_GBps=1000.0), engine=engine)
    # asked at 105: its latency ends at 115, after the fill (110): 115 + 3200 / 64 = 165
    assert span(sched, second) == (105.0, 165.0)
    assert sched.served[second[0]] == SERVED_L2


def test_sync_all_waits_for_the_slowest_core(engine):
    b = ProgramBuilder("sync")
    r = read(b, AIV0, 3200, 0)  # core 2's MTE2 drains before its SyncAll: 0..110
    b.scalar(AIV0, "s", 10, 0)
    b.scalar(AIV1, "s", 50, 0)
    b.scalar(AIV2, "s", 30, 0)
    bar = b.sync_all([AIV0, AIV1, AIV2], 1)
    v = b.vector(AIV0, "Add", 128, "fp16", 2)  # another pipe, after the SyncAll
    s1 = b.scalar(AIV1, "after", 5, 2)
    r2 = read(b, AIV2, 3200, 2)
    free = b.scalar(AIV3, "bystander", 5, 0)
    sched = run(b.build(), tiny(), engine=engine)
    assert span(sched, r) == (0.0, 110.0)
    # arrivals at 110 (AIV0, after its read), 50 and 30; release 110 + 100 for all
    assert sched.start_ns[bar].tolist() == [110.0, 50.0, 30.0]
    assert sched.end_ns[bar].tolist() == [210.0, 210.0, 210.0]
    assert span(sched, v) == (210.0, 221.0)  # 10 + 256 / 256
    assert span(sched, s1) == (210.0, 215.0)
    assert span(sched, r2) == (210.0, 320.0)
    assert span(sched, free) == (0.0, 5.0)


def test_sync_all_keeps_same_seq_instructions_in_program_order(engine):
    # Program order is (seq, id): an instruction emitted before a SyncAll with the same seq
    # comes before it, one emitted after comes after (on every pipe, the S pipe included).
    b = ProgramBuilder("sync-ties")
    before = b.scalar(AIV0, "before", 10, 0)
    bar = b.sync_all([AIV0, AIV1], 0)
    after = b.scalar(AIV0, "after", 10, 0)
    vec = b.vector(AIV0, "Add", 128, "fp16", 0)
    sched = run(b.build(), tiny(), engine=engine)
    assert span(sched, before) == (0.0, 10.0)
    assert sched.end_ns[bar].tolist() == [110.0, 110.0]
    assert span(sched, after) == (110.0, 120.0)
    assert span(sched, vec) == (110.0, 121.0)


def test_dependency_cycle_raises_deadlock(engine):
    b = ProgramBuilder("cycle")
    x = b.scalar(AIV0, "x", 10, 0)
    y = b.scalar(AIV1, "y", 10, 0)
    z = b.scalar(AIV2, "z", 10, 0)  # unaffected
    b.depend(x, y)
    b.depend(y, x)
    with pytest.raises(DeadlockError) as err:
        run(b.build(), tiny(), engine=engine)
    assert err.value.unfinished.tolist() == [int(x[0]), int(y[0])]
    text = str(err.value)
    assert "2 of 3 instructions never ran (deadlock)" in text
    assert "#0 'x' on core 2" in text
    assert int(z[0]) not in err.value.unfinished


def test_dependency_against_lane_order_raises_deadlock(engine):
    b = ProgramBuilder("lane-cycle")
    first = b.scalar(AIV0, "first", 10, 0)
    second = b.scalar(AIV0, "second", 10, 1)
    b.depend(first, second)  # first runs before second on the S pipe, yet waits for it
    with pytest.raises(DeadlockError, match="deadlock"):
        run(b.build(), tiny(), engine=engine)


def test_sync_all_never_reached_raises_deadlock(engine):
    b = ProgramBuilder("sync-deadlock")
    bar = b.sync_all([AIV0, AIV1], 1)
    y = b.scalar(AIV1, "y", 10, 0)  # before AIV1's SyncAll
    x = b.scalar(AIV0, "x", 10, 2)  # after AIV0's SyncAll
    b.depend(y, x)  # so AIV1 never reaches the SyncAll
    with pytest.raises(DeadlockError) as err:
        run(b.build(), tiny(), engine=engine)
    assert sorted(err.value.unfinished.tolist()) == sorted([*bar.tolist(), int(x[0]),
                                                           int(y[0])])
    text = str(err.value)
    assert "#0 'SyncAll' on core 2" in text and "SyncAll needs every participating core" in text


def test_a_deadlocked_schedule_says_what_started_and_what_ended(engine):
    # after a deadlock, what never started and what never ended read NaN, and only that
    b = ProgramBuilder("sync-deadlock")
    bar = b.sync_all([AIV0, AIV1], 1)
    y = b.scalar(AIV1, "y", 10, 0)
    x = b.scalar(AIV0, "x", 10, 2)
    done = b.vector(AIV2, "Add", 128, "fp16", 0)  # on a core the deadlock leaves alone
    b.depend(y, x)
    program = b.build()
    sched = engine_module.execute(engine_module.prepare(program, tiny()), engine)
    started = ~np.isnan(sched.start_ns)
    ended = ~np.isnan(sched.end_ns)
    aiv0_bar = int(bar[program.cols["core"][bar] == AIV0][0])
    assert set(np.flatnonzero(started)) == {aiv0_bar, int(done[0])}
    assert set(np.flatnonzero(ended)) == {int(done[0])}
    assert sched.start_ns[aiv0_bar] == 0.0 and sched.end_ns[done[0]] > 0.0


def test_run_refuses_programs_above_the_instruction_cap(engine, monkeypatch):
    b = ProgramBuilder("cap")
    b.scalar([AIV0, AIV1, AIV2], "s", 10, 0)
    program = b.build()

    def no_work(*args, **kwargs):
        raise AssertionError("the cap must be checked before any work")

    monkeypatch.setattr(engine_module, "prepare", no_work)
    with pytest.raises(InputError) as err:
        run(program, tiny(), engine=engine, max_instructions=2)
    assert err.value.field == "instructions" and err.value.value == 3
    monkeypatch.setenv("EXPLORER_MAX_INSTRUCTIONS", "2")
    with pytest.raises(InputError, match="at most 2"):
        run(program, tiny(), engine=engine)


def test_builder_refuses_programs_above_the_instruction_cap(engine, monkeypatch):
    b = ProgramBuilder("cap", max_instructions=3)
    b.scalar([AIV0, AIV1], "s", 10, 0)
    with pytest.raises(InputError) as err:
        b.scalar([AIV0, AIV1], "s", 10, 1)  # 4 > 3: refused, nothing added
    assert err.value.field == "instructions" and err.value.value == 4
    with pytest.raises(InputError):
        b.reserve(2, "use larger tiles")
    b.scalar(AIV0, "s", 10, 1)  # 3 still fits
    program = b.build()
    assert len(program) == 3
    assert run(program, tiny(), engine=engine).makespan_ns == 20.0
    monkeypatch.setenv("EXPLORER_MAX_INSTRUCTIONS", "1")
    with pytest.raises(InputError):
        ProgramBuilder("env-cap").scalar([AIV0, AIV1], "s", 10, 0)


def test_single_clustered_read_of_the_last_region(engine):
    """Regression: with one instruction and several regions the multicast bookkeeping was
    sized by instruction count, so a clustered read of region 1 wrote out of bounds."""
    b = ProgramBuilder("one read")
    regions = b.regions([KIB, 3200])
    i = read(b, AIV1, 3200, 0, region=regions[1])
    schedule = run(b.build(), tiny(cluster_size=2), engine=engine)
    assert span(schedule, i) == (0.0, 110.0)  # 10 ns latency + 3200 B at 32 B/ns
    assert schedule.served[i][0] == SERVED_HBM
