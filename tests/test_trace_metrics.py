"""Chrome trace export, scalar metrics on hand-checkable runs, and the table helpers."""
from __future__ import annotations

import functools
import json
import re
import types

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from explorer.core import Scenario, gallery, simulate
from explorer.core.metrics import METRICS, RATIO_LANES, compute_bound_ns
from explorer.core.tables import union_length
from explorer.core.trace import chrome_trace, flight_slots
from tests.engine_helpers import QUEUED

LANES = ["CUBE", "VECTOR", "SCALAR", "MTE1", "MTE2", "MTE3", "FIXP"]
RATIOS = ["hbm_utilization", "l2_hit_rate", *RATIO_LANES, "overlap_ratio",
          "load_balance_min_max", "load_balance_mean_max", "roofline_efficiency"]

#: small runs, by name (cached: each is simulated once per test session)
CASES = {
    "tiny": {"n": 1000, "block_dim": 1, "tile": 256},  # 4 tiles, the last one partial
    "three_cores_bf16": {"n": 5000, "block_dim": 3, "tile": 1024, "dtype": "bf16"},
    "two_cores_single_buffer": {"n": 16384, "block_dim": 2, "tile": 2048, "buffer_num": 1},
    "large": {"n": 1 << 20, "block_dim": 48, "tile": 4096},  # 256 tiles on 48 cores
}


@functools.cache
def run(case: str, preset: str = "910B2"):
    return simulate(Scenario.make(preset=preset, params=CASES[case]))


# ---- chrome trace ------------------------------------------------------------------------
def check_nesting(events) -> None:
    """X events of one thread never overlap (they may touch): Chrome's slices must nest."""
    by_thread: dict[tuple[int, int], list[tuple[float, float]]] = {}
    for e in events:
        if e["ph"] == "X":
            by_thread.setdefault((e["pid"], e["tid"]), []).append((e["ts"], e["ts"] + e["dur"]))
    for spans in by_thread.values():
        spans.sort()
        for (_, end), (start, _) in zip(spans, spans[1:]):
            assert start >= end - 1e-9, "two X events of one thread overlap"


def thread_names(events) -> dict[int, dict[int, str]]:
    threads: dict[int, dict[int, str]] = {}
    for e in events:
        if e["ph"] == "M" and e["name"] == "thread_name":
            threads.setdefault(e["pid"], {})[e["tid"]] = e["args"]["name"]
    return threads


@pytest.mark.parametrize("case", ["tiny", "three_cores_bf16", "two_cores_single_buffer"])
def test_chrome_trace_events(case):
    res = run(case)
    tl = res.timeline
    trace = json.loads(json.dumps(chrome_trace(res), allow_nan=False))  # plain, valid JSON
    events = trace["traceEvents"]
    xs = [e for e in events if e["ph"] == "X"]
    meta = [e for e in events if e["ph"] == "M"]
    assert {e["ph"] for e in events} == {"X", "M", "C"}  # counters: tests/test_trace_format.py
    # a process per core that ran, labelled as the chip names it (its name is msprof's),
    # and the memory system's process (pid = the chip's core count) for its counters
    cores = sorted(set(tl["core"].tolist()))
    procs = {e["pid"]: e["args"]["name"] for e in meta if e["name"] == "process_name"}
    assert sorted(procs) == [*cores, res.chip.num_cores]
    labels = {e["pid"]: e["args"]["labels"] for e in meta if e["name"] == "process_labels"}
    assert labels == {c: res.chip.core_names()[c] for c in cores}
    # thread names: the seven lanes, in Ascend's order, in every process (tids 0..6), then
    # the in-flight threads of DMA lanes, sorted right under their lane
    threads = thread_names(events)
    assert sorted(threads) == cores
    sort = {(e["pid"], e["tid"]): e["args"]["sort_index"] for e in meta
            if e["name"] == "thread_sort_index"}
    for pid in cores:
        assert [threads[pid][tid] for tid in range(7)] == LANES
        ordered = [threads[pid][tid] for tid in sorted(threads[pid], key=lambda t: sort[pid, t])]
        assert [name for name in ordered if name in LANES] == LANES
        for name in ordered:
            assert name in LANES or re.fullmatch(r"(MTE2|MTE3|FIXP) in flight \d+", name)
    pipe_xs = [e for e in xs if e["tid"] < 7]
    flight_xs = [e for e in xs if e["tid"] >= 7]
    assert len(pipe_xs) == len(tl) == res.metrics["instructions"]
    # one X event per instruction on its pipe's thread, in timeline order, times in µs:
    # a GM copy's issue slot (start .. issue end), then its flight (issue end .. arrival)
    flights = iter(flight_xs)
    for e, row in zip(pipe_xs, tl.itertuples(index=False)):
        assert e["name"] == str(row.op)
        assert e["pid"] == row.core
        assert threads[e["pid"]][e["tid"]] == str(row.pipe) == e["cat"]
        assert e["ts"] == pytest.approx(row.start_ns / 1000, abs=1e-9)
        assert e["ts"] + e["dur"] == pytest.approx(row.issue_end_ns / 1000, abs=1e-9)
        assert e["dur"] >= 0
        assert e["args"]["task"] == row.task
        if row.bytes:
            assert e["args"]["bytes"] == row.bytes
            assert e["args"]["served_from"] == str(row.served_from)
        else:
            assert "bytes" not in e["args"]
        if row.issue_end_ns < row.end_ns:
            f = next(flights)
            assert (f["name"], f["pid"], f["cat"]) == (e["name"], e["pid"], e["cat"])
            assert threads[f["pid"]][f["tid"]].startswith(f"{row.pipe} in flight ")
            assert f["ts"] == pytest.approx(row.issue_end_ns / 1000, abs=1e-9)
            assert f["ts"] + f["dur"] == pytest.approx(row.end_ns / 1000, abs=1e-9)
            assert f["args"]["in_flight"] is True
            assert e["args"]["arrival_us"] == pytest.approx(row.end_ns / 1000)
    assert next(flights, None) is None
    assert flight_xs, "the DMA queues of these runs have copies in flight"
    check_nesting(events)
    transfers = [e for e in pipe_xs if e["cat"] in ("MTE2", "MTE3")]
    assert transfers and all("bytes" in e["args"] for e in transfers)
    assert sum(e["args"]["bytes"] for e in transfers) == int(tl["bytes"].sum())
    assert trace["otherData"]["scenario"] == res.scenario.to_dict()


def test_chrome_trace_hand_checked_first_event():
    res = run("tiny")
    first = next(e for e in chrome_trace(res)["traceEvents"] if e["ph"] == "X")
    # the first CopyIn of x: 256 fp16 = 512 bytes, at t = 0 on AIV0 (global core 24)
    assert (first["name"], first["cat"], first["pid"], first["ts"]) == ("CopyIn x", "MTE2", 24,
                                                                        0.0)
    assert first["args"]["bytes"] == 512
    assert first["tid"] == LANES.index("MTE2")


def queued_result():
    """A Result-like run of four back-to-back 128 B reads on AIV0 (core 2) of the tiny chip:
    starts 0, 12.5, 25, 37.5 ns, issue ends 12.5 .. 50, arrivals 26.5, 39, 51.5, 64 ns."""
    from explorer.core.emulator.engine import run as run_engine
    from explorer.core.tables import bandwidth_table, timeline_table
    from kernels.common.program import Level, Pipe, ProgramBuilder
    from tests.engine_helpers import tiny

    b = ProgramBuilder("copies")
    for seq in range(4):
        b.transfer(2, Pipe.MTE2, "CopyIn", Level.GM, Level.UB, 128, seq)
    program, chip = b.build(), tiny(**QUEUED)
    schedule = run_engine(program, chip)
    scenario = types.SimpleNamespace(to_dict=lambda: {"name": "copies"})
    return types.SimpleNamespace(timeline=timeline_table(program, schedule, chip), chip=chip,
                                 scenario=scenario, bandwidth=bandwidth_table(schedule),
                                 program=program)


def test_chrome_trace_of_a_dma_queue_by_hand():
    res = queued_result()
    events = chrome_trace(res, res.program)["traceEvents"]
    check_nesting(events)
    threads = thread_names(events)[2]
    spans: dict[str, list[tuple[float, float]]] = {}
    # nothing reads the copies: each holds its 128 UB bytes from its issue to its arrival
    ub = [(round(e["ts"] * 1e3, 9), e["args"]["bytes"]) for e in events
          if e["ph"] == "C" and e["name"] == "UB held by copies"]
    assert ub == [(0.0, 128), (12.5, 256), (25.0, 384), (26.5, 256), (37.5, 384), (39.0, 256),
                  (51.5, 128), (64.0, 0)]
    for e in events:
        if e["ph"] == "X":
            assert e["pid"] == 2 and e["name"] == "CopyIn" and e["cat"] == "MTE2"
            spans.setdefault(threads[e["tid"]], []).append(
                (round(e["ts"] * 1e3, 9), round((e["ts"] + e["dur"]) * 1e3, 9)))
    # MTE2 issues one copy at a time; at most two copies are in flight at once, so two
    # in-flight threads, each copy on the lowest free one (copy 2 after copy 0 arrived)
    assert spans == {"MTE2": [(0.0, 12.5), (12.5, 25.0), (25.0, 37.5), (37.5, 50.0)],
                     "MTE2 in flight 1": [(12.5, 26.5), (37.5, 51.5)],
                     "MTE2 in flight 2": [(25.0, 39.0), (50.0, 64.0)]}
    sort = {threads[e["tid"]]: e["args"]["sort_index"] for e in events
            if e["ph"] == "M" and e["name"] == "thread_sort_index" and e["pid"] == 2}
    assert sort["MTE2"] < sort["MTE2 in flight 1"] < sort["MTE2 in flight 2"] < sort["MTE3"]
    issue = [e for e in events if e["ph"] == "X" and threads[e["tid"]] == "MTE2"]
    assert [e["args"]["arrival_us"] for e in issue] == pytest.approx([0.0265, 0.039, 0.0515,
                                                                      0.064])
    assert all(e["args"]["bytes"] == 128 for e in issue)


def test_flight_slots_reuse_the_lowest_free_thread():
    # one lane: [0, 10] [2, 5] [5, 8] [6, 12] [10, 11]; another lane's span never shares
    core = np.array([0, 0, 0, 0, 0, 1])
    tid = np.array([4, 4, 4, 4, 4, 4])
    start = np.array([0.0, 2.0, 5.0, 6.0, 10.0, 1.0])
    end = np.array([10.0, 5.0, 8.0, 12.0, 11.0, 3.0])
    assert flight_slots(core, tid, start, end).tolist() == [0, 1, 1, 2, 0, 0]


# ---- metrics -----------------------------------------------------------------------------
@pytest.mark.parametrize("case", list(CASES))
def test_metric_set_and_invariants(case):
    res = run(case)
    m = res.metrics
    assert list(m) == list(METRICS)
    chip = res.chip
    tl = res.timeline
    makespan_ns = m["makespan_us"] * 1e3
    assert makespan_ns == pytest.approx(tl["end_ns"].max())
    assert m["instructions"] == len(tl)
    # every byte is read from / written to HBM here: no L2 reuse in a streaming add
    assert m["hbm_bytes"] == tl["bytes"].sum() and m["l2_bytes"] == 0
    assert m["hbm_GBps"] == pytest.approx(m["hbm_bytes"] / makespan_ns)
    assert m["hbm_utilization"] == pytest.approx(m["hbm_GBps"] / chip.hbm_bandwidth_GBps)
    assert m["roofline_bound_us"] * 1e3 >= m["hbm_bytes"] / chip.hbm_bytes_per_ns * (1 - 1e-12)
    assert m["roofline_efficiency"] == pytest.approx(m["roofline_bound_us"] / m["makespan_us"])
    elems = CASES[case]["n"] * (4 if CASES[case].get("dtype") == "bf16" else 1)
    assert m["achieved_tflops"] == pytest.approx(elems / makespan_ns / 1e3)
    assert m["arithmetic_intensity"] == pytest.approx(elems / m["hbm_bytes"])
    for name in RATIOS:
        assert 0.0 <= m[name] <= 1.0, name
    assert 0.0 <= m["stall_ratio"] <= 1.0
    assert (res.per_core["stall_ns"] >= 0).all()
    assert (res.per_core["active_ns"] <= res.per_core["last_end_ns"]
            - res.per_core["first_start_ns"]).all()
    assert 0.0 < m["load_balance_min_max"] <= m["load_balance_mean_max"] <= 1.0
    assert m["aic_cube_ratio"] == m["mte1_ratio"] == m["fixpipe_ratio"] == 0.0
    assert m["aiv_vec_ratio"] > 0 and m["mte2_ratio"] > 0 and m["mte3_ratio"] > 0
    assert m["bound"] in ("memory", "compute", "latency", "imbalance")


def test_hbm_bytes_of_an_aligned_fp16_add():
    n = 1 << 20
    m = run("large").metrics
    assert m["hbm_bytes"] == 3 * n * 2  # read x, read y, write z; no padding
    assert m["hbm_GBps"] == pytest.approx(3 * n * 2 / (m["makespan_us"] * 1e3))
    # memory bound: the roofline bound is the HBM time itself
    assert m["roofline_bound_us"] == pytest.approx(3 * n * 2 / 1600 / 1e3)
    assert m["arithmetic_intensity"] == pytest.approx(1 / 6)


def test_partial_tile_padding_counts_in_hbm_bytes():
    # 1000 fp16 = 3 tiles of 512 B and one of 464 B padded to 480 B, three streams
    assert run("tiny").metrics["hbm_bytes"] == 3 * (3 * 512 + 480)


def test_the_roofline_bound_never_exceeds_the_emulated_time():
    """HBM and L2 serve reads side by side: each pool's time, not their sum, bounds the
    run. An MXFP4 linear layer on the 950PR streams its weights from HBM while the
    activations come from L2 (the summed "bound" was 1.34x its emulated time)."""
    r = simulate(gallery.load("linear_mxfp4_down"))
    m, chip = r.metrics, r.chip
    assert m["hbm_bytes"] > 0 and m["l2_bytes"] > 0
    assert m["roofline_bound_us"] == pytest.approx(max(
        m["hbm_bytes"] / chip.hbm_bytes_per_ns, m["l2_bytes"] / chip.l2_bytes_per_ns,
        compute_bound_ns(r.per_core)) / 1e3)
    assert 0 < m["roofline_efficiency"] <= 1


def test_bound_memory_for_a_large_add_on_all_cores_latency_for_a_tiny_one():
    large, tiny = run("large").metrics, run("tiny").metrics
    assert large["bound"] == "memory"
    assert large["roofline_efficiency"] > 0.6
    assert tiny["bound"] == "latency"
    assert tiny["roofline_efficiency"] < 0.1
    assert tiny["load_balance_min_max"] == tiny["load_balance_mean_max"] == 1.0  # one core


def test_load_balance_reflects_uneven_tile_counts():
    m = run("large").metrics  # 256 tiles over 48 cores: 16 cores run 6 tiles, 32 run 5
    assert m["load_balance_min_max"] < 1.0
    assert m["load_balance_mean_max"] > m["load_balance_min_max"]


@pytest.mark.parametrize("case", list(CASES))
def test_per_core_busy_is_the_union_of_each_lanes_spans(case):
    # a DMA pipe with several copies in flight is busy once, as the profiler counts it
    res = run(case)
    tl, pc = res.timeline, res.per_core
    assert sorted(pc["core"]) == sorted(set(tl["core"]))
    makespan = tl["end_ns"].max()
    for row in pc.itertuples(index=False):
        on_core = tl["core"] == row.core
        for lane in LANES:
            sel = on_core & (tl["pipe"].astype(str) == lane)
            want = brute_union(list(zip(tl.loc[sel, "start_ns"], tl.loc[sel, "end_ns"])))
            assert getattr(row, f"busy_ns_{lane}") == pytest.approx(want, rel=1e-12, abs=1e-9)
            assert getattr(row, f"ratio_{lane}") == pytest.approx(want / makespan)
        assert row.first_start_ns == tl.loc[on_core, "start_ns"].min()
        assert row.last_end_ns == tl.loc[on_core, "end_ns"].max()
        spans = list(zip(tl.loc[on_core, "start_ns"], tl.loc[on_core, "end_ns"]))
        assert row.active_ns == pytest.approx(brute_union(spans), rel=1e-12)
    # pipe ratios are the mean over the cores that used the lane
    for name, lane in RATIO_LANES.items():
        used = pc[f"busy_ns_{lane}"] > 0
        want = pc.loc[used, f"ratio_{lane}"].mean() if used.any() else 0.0
        assert res.metrics[name] == pytest.approx(want)


def test_stall_is_never_negative():
    # the default 910B2 scenario (2^22 fp16 on 48 cores) once gave stall_ratio = -5.5e-16 and
    # 29 cores with stall_ns down to -7.6e-11 (round-off in union_length's shifted sort)
    res = simulate(Scenario.make(params={"n": 1 << 22, "block_dim": 48, "tile": 8192}))
    assert res.metrics["stall_ratio"] >= 0
    assert (res.per_core["stall_ns"] >= 0).all()


# ---- union_length ------------------------------------------------------------------------
def brute_union(spans) -> float:
    total, cur_s, cur_e = 0.0, None, None
    for s, e in sorted(spans):
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    return total + (cur_e - cur_s if cur_e is not None else 0.0)


def _check_union(groups, starts, lengths, n_groups, exact):
    g = np.asarray(groups, np.int64)
    s = np.asarray(starts, np.float64)
    e = s + np.asarray(lengths, np.float64)
    got = union_length(g, s, e, n_groups)
    assert got.shape == (n_groups,)
    for k in range(n_groups):
        want = brute_union([(a, b) for gg, a, b in zip(g, s, e) if gg == k])
        if exact:
            assert got[k] == want
        else:
            scale = (float(e.max()) - float(s.min()) + 1.0) * n_groups if len(e) else 1.0
            assert got[k] == pytest.approx(want, rel=1e-9, abs=1e-12 * scale)


intervals = st.integers(1, 6).flatmap(lambda n_groups: st.tuples(
    st.just(n_groups),
    st.lists(st.tuples(st.integers(0, n_groups - 1), st.floats(-1e4, 1e4), st.floats(0, 1e3)),
             max_size=40)))


@given(intervals)
def test_union_length_matches_brute_force(case):
    n_groups, rows = case
    groups = [r[0] for r in rows]
    _check_union(groups, [r[1] for r in rows], [r[2] for r in rows], n_groups, exact=False)


@given(st.integers(1, 5).flatmap(lambda k: st.tuples(st.just(k), st.lists(
    st.tuples(st.integers(0, k - 1), st.integers(-1000, 1000), st.integers(0, 100)),
    max_size=40))))
def test_union_length_exact_on_integer_endpoints(case):
    n_groups, rows = case
    _check_union([r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows], n_groups,
                 exact=True)


def test_union_length_hand_cases():
    got = union_length(np.array([0, 0, 0, 1, 1, 2]), np.array([0., 5., 20., 3., 3., 7.]),
                       np.array([10., 15., 30., 4., 4., 7.]), 4)
    assert got.tolist() == [25.0, 1.0, 0.0, 0.0]  # [0,15] + [20,30]; duplicates; empty
    assert union_length(np.zeros(0, np.int64), np.zeros(0), np.zeros(0), 3).tolist() == [0.0] * 3


def test_union_length_negative_starts():
    # a group's interval with a negative start must not spill into another group's range
    got = union_length(np.array([0, 1]), np.array([0.0, -5.0]), np.array([10.0, 5.0]), 2)
    assert got.tolist() == [10.0, 10.0]
