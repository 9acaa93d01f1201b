"""The exported trace (explorer/core/trace.py, trace_counters.py) as the tools read it: it
validates against the Trace Event Format's schema (tests/data/chrome_trace.schema.json) for a
vector add, GEMMs on split and coupled chips and a decode step; complete events of a thread
nest or are disjoint (Perfetto requires it), every pid and tid is named, times are in µs;
processes are named and sorted as msprof op simulator names cores; the counters (HBM
throughput, UB held) are right by hand, keep bytes and peaks when binned, and a trace over
its size cap says where it was cut."""
from __future__ import annotations

import copy
import functools
import json
from pathlib import Path

import jsonschema
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hardware_presets as hp
from explorer.core import Scenario, simulate, trace_counters
from explorer.core import trace as trace_module
from explorer.core.trace import chrome_trace, msprof_core_names

SCHEMA = json.loads((Path(__file__).parent / "data" / "chrome_trace.schema.json")
                    .read_text(encoding="utf-8"))
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)
#: small runs of every kind the schema must hold: vector, cube, a mix, coupled chips
RUNS = {
    "vector_add": dict(params={"n": 16384, "block_dim": 2, "tile": 1024}),
    "vector_add_310P3": dict(preset="310P3", params={"n": 16384, "block_dim": 4, "tile": 1024}),
    "gemm": dict(kernel="gemm", params={"M": 256, "N": 256, "K": 256}),
    "gemm_910": dict(kernel="gemm", preset="910", params={"M": 256, "N": 256, "K": 256}),
    "decode": dict(kernel="decode", params={"batch": 2, "mean_len": 64, "max_len": 128,
                                            "phases": "attention", "impl": "cube_vector"}),
}


@functools.cache
def result(name: str):
    return simulate(Scenario.make(**RUNS[name]))


@functools.cache
def exported(name: str) -> dict:
    """The trace as a file holds it (through JSON: plain types, no NaN)."""
    return json.loads(json.dumps(chrome_trace(result(name)), allow_nan=False))


def of(trace: dict, ph: str) -> list[dict]:
    return [e for e in trace["traceEvents"] if e["ph"] == ph]


def named(trace: dict, name: str) -> dict:
    """Metadata ``name`` by (pid,) or (pid, tid)."""
    return {(e["pid"], *([e["tid"]] if "tid" in e else [])): e["args"]
            for e in of(trace, "M") if e["name"] == name}


# ---- the schema ----------------------------------------------------------------------------
def test_the_schema_is_a_valid_draft_2020_12_schema():
    jsonschema.Draft202012Validator.check_schema(SCHEMA)


@pytest.mark.parametrize("name", list(RUNS))
def test_traces_validate_against_the_trace_event_format(name):
    trace = exported(name)
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in VALIDATOR.iter_errors(trace)]
    assert not errors, "\n".join(errors[:5])
    assert trace["displayTimeUnit"] == "ns"
    assert {e["ph"] for e in trace["traceEvents"]} == {"X", "M", "C"}


@pytest.mark.parametrize(("ph", "change"), [
    ("X", lambda e: e.pop("dur")),
    ("X", lambda e: e.update(ts=-1.0)),
    ("X", lambda e: e.update(pid="core0.veccore0")),
    ("C", lambda e: e.update(args={"bytes": "many"})),
    ("C", lambda e: e.update(args={})),
    ("M", lambda e: e.pop("args")),
])
def test_the_schema_rejects_what_the_format_does_not_allow(ph, change):
    trace = copy.deepcopy(exported("vector_add"))
    change(next(e for e in trace["traceEvents"] if e["ph"] == ph))
    assert not VALIDATOR.is_valid(trace)


def test_a_thread_name_needs_its_tid():
    trace = copy.deepcopy(exported("vector_add"))
    next(e for e in of(trace, "M") if e["name"] == "thread_name").pop("tid")
    assert not VALIDATOR.is_valid(trace)


def test_mindstudio_insight_finds_profiling_type_before_the_first_bracket():
    text = json.dumps(chrome_trace(result("gemm")))
    assert text.index('"profilingType": "op"') < text.index("[")


# ---- properties of every trace -------------------------------------------------------------
def check_trace(trace: dict, res) -> None:
    """Slices nest or are disjoint per thread; every pid and tid that carries events is
    named; times are µs (the last slice ends at the makespan); the HBM counter carries the
    run's HBM bytes."""
    spans: dict[tuple[int, int], list[tuple[float, float]]] = {}
    for e in of(trace, "X"):
        assert e["ts"] >= 0 and e["dur"] >= 0
        spans.setdefault((e["pid"], e["tid"]), []).append((e["ts"], e["ts"] + e["dur"]))
    for lane in spans.values():
        stack: list[float] = []  # ends of the open slices
        for start, end in sorted(lane, key=lambda s: (s[0], -s[1])):
            while stack and stack[-1] <= start + 1e-9:
                stack.pop()
            assert not stack or end <= stack[-1] + 1e-9, "two slices of a thread overlap"
            stack.append(end)
    processes, threads = named(trace, "process_name"), named(trace, "thread_name")
    assert {e["pid"] for e in trace["traceEvents"]} <= {pid for pid, in processes}
    assert set(spans) <= set(threads)
    assert max(end for lane in spans.values() for _, end in lane) == \
        pytest.approx(res.metrics["makespan_us"], rel=1e-12)
    hbm = sorted((e["ts"], e["args"]["GB/s"]) for e in of(trace, "C")
                 if e["name"] == "HBM throughput")
    moved = sum(v * (t1 - t0) * 1e3 for (t0, v), (t1, _) in zip(hbm, hbm[1:]))  # GB/s x ns
    assert moved == pytest.approx(res.metrics["hbm_bytes"], rel=1e-9)
    assert hbm[-1][1] == 0.0


@pytest.mark.parametrize("name", list(RUNS))
def test_every_trace_nests_names_its_lanes_and_keeps_time_and_bytes(name):
    check_trace(exported(name), result(name))


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(1, 40_000), block_dim=st.integers(1, 6),
       tile=st.sampled_from([256, 1024, 4096]), buffer_num=st.sampled_from([1, 2]))
def test_vector_add_traces_keep_their_properties(n, block_dim, tile, buffer_num):
    res = simulate(Scenario.make(params={"n": n, "block_dim": block_dim, "tile": tile,
                                         "buffer_num": buffer_num}))
    trace = json.loads(json.dumps(chrome_trace(res)))
    check_trace(trace, res)
    peak = max(e["args"]["bytes"] for e in of(trace, "C") if e["name"] == "UB held by copies")
    assert peak <= buffer_num * 3 * tile * 2 <= res.chip.ub_bytes  # x, y, z queues of fp16


# ---- msprof's names and order ----------------------------------------------------------------
def test_cores_are_named_and_sorted_as_msprof_op_simulator_names_them():
    names = msprof_core_names(hp.load("910B2"))  # 24 AIC, then 48 AIV (global ids 24..71)
    assert names[0] == ("core0.cubecore0", 1) and names[1] == ("core1.cubecore0", 4)
    assert names[24] == ("core0.veccore0", 2) and names[25] == ("core0.veccore1", 3)
    assert names[27] == ("core1.veccore1", 6) and names[71] == ("core23.veccore1", 72)
    ordered = [name for name, _ in sorted(names, key=lambda pair: pair[1])]
    assert ordered[:6] == ["core0.cubecore0", "core0.veccore0", "core0.veccore1",
                           "core1.cubecore0", "core1.veccore0", "core1.veccore1"]
    assert sorted(index for _, index in names) == list(range(1, 73))
    assert msprof_core_names(hp.load("910"))[31] == ("core31", 32)
    coupled = msprof_core_names(hp.load("310P3"))  # 8 AI cores, then 7 vector cores
    assert coupled[7] == ("core7", 8) and coupled[8] == ("veccore0", 9)


def test_a_mixed_run_labels_each_process_with_the_chips_core_name():
    trace, res = exported("decode"), result("decode")
    processes, labels = named(trace, "process_name"), named(trace, "process_labels")
    msprof, chip = msprof_core_names(res.chip), res.chip.core_names()
    cores = sorted(set(res.timeline["core"].tolist()))
    assert any(c < res.chip.ai_cores for c in cores) and any(c >= res.chip.ai_cores
                                                             for c in cores)
    for c in cores:
        assert processes[(c,)]["name"] == msprof[c][0] and labels[(c,)]["labels"] == chip[c]
    sort = named(trace, "process_sort_index")
    assert sort[(res.chip.num_cores,)]["sort_index"] == 0  # the memory tracks on top
    assert processes[(res.chip.num_cores,)]["name"] == "HBM / L2"


# ---- counters ----------------------------------------------------------------------------
def ub_track(trace: dict, pid: int) -> list[tuple[float, float]]:
    return [(e["ts"], e["args"]["bytes"]) for e in of(trace, "C")
            if e["name"] == "UB held by copies" and e["pid"] == pid]


@pytest.mark.parametrize(("buffer_num", "tiles_held"), [(1, 3), (2, 6)])
def test_ub_held_peaks_at_the_queues_allocation(buffer_num, tiles_held):
    # 16 tiles of 1024 fp16 (2048 B) on one AIV: x, y and z each held in buffer_num slots
    res = simulate(Scenario.make(params={"n": 16384, "block_dim": 1, "tile": 1024,
                                         "buffer_num": buffer_num}))
    track = ub_track(chrome_trace(res), 24)
    assert max(v for _, v in track) == tiles_held * 2048
    assert track[0] == (0.0, 2048) and track[-1][1] == 0  # CopyIn x issues at 0
    assert track[-1][0] == pytest.approx(res.metrics["makespan_us"])  # CopyOut z's arrival


def test_a_cube_only_run_has_no_ub_track():
    trace = exported("gemm")
    assert not [e for e in of(trace, "C") if e["name"] == "UB held by copies"]
    assert set(trace["otherData"]["counters"]) == {"HBM throughput", "L2 throughput"}
    assert named(exported("gemm_910"), "process_name")  # the coupled GEMM goes through UB
    assert "UB held by copies" in exported("gemm_910")["otherData"]["counters"]


def test_binned_counters_keep_the_bytes_and_the_peaks(monkeypatch):
    res = simulate(Scenario.make(params={"n": 1 << 16, "block_dim": 1, "tile": 1024}))
    full = chrome_trace(res)
    monkeypatch.setattr(trace_counters, "COUNTER_MAX_POINTS", 8)
    binned = json.loads(json.dumps(chrome_trace(res)))
    for track in ("HBM throughput", "UB held by copies"):
        assert len([e for e in of(binned, "C") if e["name"] == track]) <= 8
        assert binned["otherData"]["counters"][track]["binned"]
    assert max(v for _, v in ub_track(binned, 24)) == max(v for _, v in ub_track(full, 24))
    check_trace(binned, res)  # the HBM bytes are kept


def test_bins_by_hand():
    # 0..4 ns at 2, 4..6 at 0 (a gap), 6..10 at 1: mean over two 5 ns bins: 8/5 and 4/5
    t, v, binned = trace_counters.throughput_samples(np.array([0.0, 6.0]), np.array([4.0, 10.0]),
                                                     np.array([2.0, 1.0]))
    assert (t.tolist(), v.tolist(), binned) == ([0.0, 4.0, 6.0, 10.0], [2.0, 0.0, 1.0, 0.0],
                                                False)
    lo, hi, mean = trace_counters.binned_rate(np.array([0.0, 6.0]), np.array([4.0, 10.0]),
                                              np.array([2.0, 1.0]), 2)
    assert mean.tolist() == pytest.approx([1.6, 0.8])
    # 100 B held 1..2, 50 B 2..7 (taken as the first is freed: never 150): bins of 4 ns
    t, level = trace_counters.held_samples(np.array([1.0, 2.0]), np.array([2.0, 7.0]),
                                           np.array([100.0, 50.0]))
    assert (t.tolist(), level.tolist()) == ([1.0, 2.0, 7.0], [100.0, 50.0, 0.0])
    edges, peak = trace_counters.peak_binned(t, level, (0.0, 8.0), 2)
    assert (edges.tolist(), peak.tolist()) == ([0.0, 4.0, 8.0], [100.0, 50.0, 0.0])


# ---- the size cap ------------------------------------------------------------------------
def test_a_trace_over_its_cap_keeps_whole_early_instructions_and_says_where_it_cut(monkeypatch):
    res = result("vector_add")
    monkeypatch.setattr(trace_module, "TRACE_MAX_SLICES", 40)
    trace = json.loads(json.dumps(chrome_trace(res)))
    assert VALIDATOR.is_valid(trace)
    cut = trace["otherData"]["truncated"]
    assert len(of(trace, "X")) <= 40 < len(of(exported("vector_add"), "X"))
    start_us = res.timeline["start_ns"].to_numpy() / 1e3
    before = int((start_us < cut["shown_before_us"]).sum())
    assert cut["instructions_shown"] == before < cut["instructions"] == len(res.timeline)
    pipe_slices = [e for e in of(trace, "X") if e["tid"] < 7]
    assert len(pipe_slices) == before and all(e["ts"] < cut["shown_before_us"]
                                              for e in pipe_slices)
    (instant,) = of(trace, "i")
    assert instant["ts"] == cut["shown_before_us"] and instant["s"] == "g"
    # the counters still cover the whole run
    assert max(e["ts"] for e in of(trace, "C")) == pytest.approx(res.metrics["makespan_us"])
