"""The per-core timeline figure: exact segments, the heat map above the segment cap, and
GM copies as issue bars plus thin in-flight bars (hand-worked on the tiny chip)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest

from explorer.plots import timeline_figure
from explorer.plots.lane_time import lane_union
from explorer.plots.style import format_bytes
from explorer.plots.timeline import HEATMAP_BINS, MAX_SUBLANES, flight_sublanes, lane_utilisation
from tests.engine_helpers import QUEUED
from tests.plot_helpers import SMALL, all_texts, make_timeline

# --- timeline ------------------------------------------------------------------------------

def test_timeline_exact_lanes_in_core_then_pipe_order():
    fig = timeline_figure(SMALL, 400.0)
    assert all(isinstance(trace, go.Bar) for trace in fig.data)
    assert list(fig.layout.yaxis.categoryarray) == [
        "AIC0 · CUBE", "AIC0 · MTE2", "AIV1 · VECTOR", "AIV1 · MTE2", "AIV1 · MTE3"]
    assert sum(len(trace.x) for trace in fig.data) == len(SMALL)
    assert len(fig.data) == 4  # one trace per pipe present: CUBE, VECTOR, MTE2, MTE3


def test_timeline_exact_segments_in_microseconds():
    fig = timeline_figure(SMALL, 400.0)
    mte2 = next(trace for trace in fig.data if trace.name.startswith("MTE2"))
    segments = sorted(zip(mte2.y, mte2.base, mte2.x))
    assert segments == [("AIC0 · MTE2", 0.0, 0.1), ("AIC0 · MTE2", 0.1, 0.1),
                        ("AIV1 · MTE2", 0.0, 0.1)]
    assert list(fig.layout.xaxis.range) == [0.0, 0.4]
    assert "µs" in fig.layout.xaxis.title.text
    row = next(c for c in mte2.customdata if c[0] == "op1")
    assert row[3] == format_bytes(65536) == "64.00 KiB" and row[4] == "HBM"


def test_timeline_filter_by_cores_and_window():
    fig = timeline_figure(SMALL, 400.0, cores=[1])
    lanes = ["AIV1 · VECTOR", "AIV1 · MTE2", "AIV1 · MTE3"]
    assert list(fig.layout.yaxis.categoryarray) == lanes
    fig = timeline_figure(SMALL, 400.0, window=(250.0, 400.0))
    # only segments overlapping [250, 400): AIC0 CUBE, AIV1 VECTOR, AIV1 MTE3
    lanes = ["AIC0 · CUBE", "AIV1 · VECTOR", "AIV1 · MTE3"]
    assert list(fig.layout.yaxis.categoryarray) == lanes
    assert list(fig.layout.xaxis.range) == [0.25, 0.4]
    fig = timeline_figure(SMALL, 400.0, cores=iter([0]), window=(0.0, 50.0))
    assert list(fig.layout.yaxis.categoryarray) == ["AIC0 · MTE2"]


def test_timeline_switches_to_heat_map_above_max_segments():
    fig = timeline_figure(SMALL, 400.0, max_segments=5, max_bar_lanes=0)
    assert len(fig.data) == 1 and isinstance(fig.data[0], go.Heatmap)
    z = np.asarray(fig.data[0].z)
    assert z.shape == (5, HEATMAP_BINS)
    assert z.min() >= 0.0 and z.max() <= 1.0
    assert list(fig.data[0].y) == ["AIC0 · CUBE", "AIC0 · MTE2", "AIV1 · VECTOR",
                                   "AIV1 · MTE2", "AIV1 · MTE3"]
    assert "6" in fig.layout.title.text and "5" in fig.layout.title.text
    # still exact at the limit
    assert isinstance(timeline_figure(SMALL, 400.0, max_segments=6).data[0], go.Bar)


def test_heat_map_values_match_hand_computed_utilisation():
    # makespan 400 ns over 400 bins: bin i covers [i, i+1) ns
    tl = make_timeline([(0, "AIV0", "VECTOR", 10.5, 12.25),
                        (0, "AIV0", "MTE2", 100.0, 300.5),
                        (0, "AIV0", "VECTOR", 12.25, 12.5)])
    z = np.asarray(timeline_figure(tl, 400.0, max_segments=0).data[0].z)
    vector, mte2 = z
    expected = np.zeros(HEATMAP_BINS)
    expected[10], expected[11], expected[12] = 0.5, 1.0, 0.5
    np.testing.assert_allclose(vector, expected, atol=1e-12)
    expected = np.zeros(HEATMAP_BINS)
    expected[100:300], expected[300] = 1.0, 0.5
    np.testing.assert_allclose(mte2, expected, atol=1e-12)
    x = np.asarray(timeline_figure(tl, 400.0, max_segments=0).data[0].x)
    np.testing.assert_allclose(x[:2], [0.0005, 0.0015])  # bin centres in µs


def brute_utilisation(start, end, lane, lanes_n, t0, t1, bins):
    """Busy fraction per bin of the union of each lane's intervals, by brute force."""
    width = (t1 - t0) / bins
    busy = np.zeros((lanes_n, bins))
    for ln in range(lanes_n):  # the reference may loop; the code may not
        spans = sorted(zip(start[lane == ln], end[lane == ln]))
        merged: list[list[float]] = []
        for s, e in spans:
            if merged and s <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], e)
            else:
                merged.append([s, e])
        for s, e in merged:
            for b in range(bins):
                lo, hi = t0 + b * width, t0 + (b + 1) * width
                busy[ln, b] += max(0.0, min(e, hi) - max(s, lo))
    return busy / width


def test_lane_utilisation_matches_brute_force():
    # overlapping intervals on a lane (copies in flight at once) count once: the union
    rng = np.random.default_rng(7)
    n, lanes_n, bins, t0, t1 = 300, 3, 37, 50.0, 2000.0
    lane = rng.integers(0, lanes_n, n)
    start = rng.uniform(0.0, 2100.0, n)
    end = start + rng.exponential(40.0, n)
    got = lane_utilisation(start, end, lane, lanes_n, t0, t1, bins)
    want = brute_utilisation(start, end, lane, lanes_n, t0, t1, bins)
    assert want.max() <= 1.0 + 1e-12
    np.testing.assert_allclose(got, want, atol=1e-9)


def test_lane_utilisation_counts_overlap_once_by_hand():
    # lane 0: [0, 10] and [5, 15] overlap on [5, 10]; bins of 10 ns over [0, 20].
    # Summed and clipped this would read [1, 1]; the union [0, 15] reads [1, 0.5].
    # lane 1: [2, 4] inside [1, 6], and [12, 13]: union [1, 6] + [12, 13]
    start = np.array([0.0, 5.0, 1.0, 2.0, 12.0])
    end = np.array([10.0, 15.0, 6.0, 4.0, 13.0])
    lane = np.array([0, 0, 1, 1, 1])
    got = lane_utilisation(start, end, lane, 2, 0.0, 20.0, 2)
    np.testing.assert_allclose(got, [[1.0, 0.5], [0.5, 0.1]], atol=1e-12)
    pieces = lane_union(start, end, lane)
    assert [p.tolist() for p in pieces] == [[0.0, 10.0, 1.0, 12.0], [10.0, 15.0, 6.0, 13.0],
                                            [0, 0, 1, 1]]


def test_flight_sublanes_by_hand():
    # in order arrivals, two in flight at once: round robin over 2 sub-lanes
    start, end = np.array([12.5, 25.0, 37.5, 50.0]), np.array([26.5, 39.0, 51.5, 64.0])
    sub, count = flight_sublanes(start, end, np.zeros(4, dtype=np.int64))
    assert sub.tolist() == [0, 1, 0, 1] and count.tolist() == [2] * 4
    # out of order arrivals: a long copy overlaps the two after it -> 3 sub-lanes; the
    # other lane (given in reverse order) never overlaps -> 1
    start = np.array([0.0, 10.0, 30.0, 50.0, 20.0])
    end = np.array([100.0, 20.0, 40.0, 60.0, 30.0])
    lane = np.array([3, 3, 3, 1, 1])
    sub, count = flight_sublanes(start, end, lane)
    assert sub.tolist() == [0, 1, 2, 0, 0] and count.tolist() == [3, 3, 3, 1, 1]
    # more overlapping than MAX_SUBLANES: the cap, round robin (these may overlap)
    n = MAX_SUBLANES + 2
    sub, count = flight_sublanes(np.arange(n, dtype=float), np.full(n, 100.0),
                                 np.zeros(n, dtype=np.int64))
    assert sub.tolist() == [k % MAX_SUBLANES for k in range(n)]
    assert count.tolist() == [MAX_SUBLANES] * n


def test_flight_sublanes_never_overlap_below_the_cap():
    rng = np.random.default_rng(3)
    n = 400
    lane = rng.integers(0, 6, n)
    start = np.sort(rng.uniform(0.0, 5000.0, n))
    end = start + rng.exponential(30.0, n)
    sub, count = flight_sublanes(start, end, lane)
    assert ((sub >= 0) & (sub < count) & (count <= MAX_SUBLANES)).all()
    for ln in np.unique(lane):
        on = lane == ln
        assert len(set(count[on])) == 1
        if count[on][0] == MAX_SUBLANES:
            continue  # the cap: overlap is allowed there
        for k in range(count[on][0]):
            idx = np.flatnonzero(on & (sub == k))
            idx = idx[np.argsort(start[idx])]
            assert (start[idx][1:] >= end[idx][:-1]).all()


def test_heat_map_conserves_busy_time_on_many_rows():
    rng = np.random.default_rng(1)
    n = 50_000
    core = rng.integers(0, 8, n)
    gaps = rng.uniform(0.0, 20.0, n)
    dur = rng.uniform(1.0, 300.0, n)
    tl = pd.DataFrame(dict(instr=np.arange(n), core=core, core_name=[f"AIV{c}" for c in core],
                           core_kind="AIV", pipe="VECTOR", op="Add", task=0, bytes=0, src="",
                           dst="", served_from=""))
    # per core, back-to-back segments: no overlap on a lane
    order = np.lexsort((np.arange(n), core))
    ends = np.empty(n)
    for c in range(8):
        idx = order[core[order] == c]
        ends[idx] = np.cumsum(gaps[idx] + dur[idx])
    tl["end_ns"], tl["start_ns"] = ends, ends - dur
    makespan = float(ends.max())
    fig = timeline_figure(tl, makespan)
    z = np.asarray(fig.data[0].z)
    assert isinstance(fig.data[0], go.Heatmap) and z.shape == (8, HEATMAP_BINS)
    busy = z.sum(axis=1) * makespan / HEATMAP_BINS
    expected = pd.Series(dur).groupby(core).sum().to_numpy()
    np.testing.assert_allclose(busy, expected, rtol=1e-9)


def test_empty_timeline_gives_message_not_exception():
    for fig in (timeline_figure(make_timeline([]), 0.0),
                timeline_figure(SMALL, 400.0, cores=[99]),
                timeline_figure(SMALL, 400.0, window=(1000.0, 2000.0))):
        assert len(fig.data) == 0
        assert fig.layout.annotations and fig.layout.annotations[0].text


def test_timeline_zh_differs_from_en():
    for kwargs in ({}, {"max_segments": 1}):
        en, zh = (all_texts(timeline_figure(SMALL, 400.0, lang, **kwargs)) for lang in ("en", "zh"))
        assert en != zh
        assert fig_lanes(timeline_figure(SMALL, 400.0, "zh", **kwargs))[0] == "AIC0 · CUBE"


# --- timeline of DMA queues, hand-worked on the tiny chip --------------------------------
#: DataCopy issue cost 12 cycles + 0.5 per 128 B burst (tests/test_engine_queues.py); the tiny
#: chip runs at 1000 MHz (1 cycle = 1 ns), 10 ns read latency, 32 B/ns per core from HBM.


def queued_timeline(extra_vector: bool = False) -> tuple[pd.DataFrame, float]:
    """Four back-to-back 128 B reads on AIV0 (core 2): starts 0, 12.5, 25, 37.5 ns, issue
    ends 12.5 .. 50, arrivals 26.5, 39, 51.5, 64 ns (issue 12.5 + 10 latency + 128 / 32);
    optionally an Add after the first arrival: 10 + 256 / 256 = 11 ns, [26.5, 37.5]."""
    from explorer.core.emulator.engine import run
    from explorer.core.tables import timeline_table
    from kernels.common.program import Level, Pipe, ProgramBuilder
    from tests.engine_helpers import tiny

    b = ProgramBuilder("copies")
    ids = [b.transfer(2, Pipe.MTE2, "CopyIn", Level.GM, Level.UB, 128, seq)
           for seq in range(4)]
    if extra_vector:
        b.depend(b.vector(2, "Add", 128, "fp16", 0), ids[0])
    program, chip = b.build(), tiny(**QUEUED)
    schedule = run(program, chip)
    return timeline_table(program, schedule, chip), schedule.makespan_ns


def test_timeline_copies_issue_bars_and_thin_in_flight_bars():
    tl, makespan = queued_timeline(extra_vector=True)
    assert makespan == 64.0
    fig = timeline_figure(tl, makespan)
    names = [trace.name for trace in fig.data]
    assert names == ["VECTOR · UB→UB compute", "MTE2 · GM→L1/UB",
                     "MTE2 in flight (thin bars)"]
    vector, issue, flight = fig.data

    def ends(trace):  # Plotly keeps base as an object array (it may hold dates)
        base = np.asarray(trace.base, dtype=float)
        return base, base + np.asarray(trace.x, dtype=float)

    assert list(vector.base) == [0.0265] and list(vector.x) == pytest.approx([0.011])
    # the issue slots: full-height bars (the lane's default width), back to back
    assert issue.width is None and issue.offset is None
    assert list(issue.y) == ["AIV0 · MTE2"] * 4
    np.testing.assert_allclose(ends(issue), [[0.0, 0.0125, 0.025, 0.0375],
                                             [0.0125, 0.025, 0.0375, 0.05]])
    # in flight: from issue end to arrival, thin, translucent, same lane and pipe colour
    assert list(flight.y) == ["AIV0 · MTE2"] * 4
    np.testing.assert_allclose(ends(flight), [[0.0125, 0.025, 0.0375, 0.05],
                                              [0.0265, 0.039, 0.0515, 0.064]])
    band = 1.0 - fig.layout.bargap
    thick = np.broadcast_to(flight.width, (4,))
    assert (thick < band).all()
    assert flight.marker.color.startswith("rgba(0,158,115,")  # MTE2's #009E73, translucent
    assert flight.legendgroup == issue.legendgroup == "MTE2"
    # at most two copies in flight at once: two sub-lanes, copies alternate, never touching
    offset = np.asarray(flight.offset)
    assert offset[0] == offset[2] != offset[1] == offset[3]
    lo, hi = sorted([(offset[0], offset[0] + thick[0]), (offset[1], offset[1] + thick[1])])
    assert -band / 2 <= lo[0] and lo[1] <= hi[0] and hi[1] <= band / 2
    # hover of a copy: issue start, issue end, arrival (µs) and bytes
    for trace in (issue, flight):
        assert all(w in trace.hovertemplate for w in ("issue start", "issue end", "arrival"))
        row = trace.customdata[1]
        assert (row[0], row[1], row[5], row[2], row[3]) == ("CopyIn", 0.0125, 0.025, 0.039,
                                                            "128 B")
    assert "Thin bar" in fig.layout.title.text  # the caption explains the thin bars
    # Chinese: translated caption, legend and hover
    zh = timeline_figure(tl, makespan, "zh")
    assert "细条" in zh.layout.title.text and "在途" in zh.data[2].name
    assert "数据到达" in zh.data[2].hovertemplate


def test_timeline_without_copies_in_flight_has_no_caption():
    fig = timeline_figure(SMALL, 400.0)  # no issue_end_ns column: nothing is in flight
    assert "<sup>" not in fig.layout.title.text
    assert not any("in flight" in trace.name for trace in fig.data)


def test_heat_map_of_overlapping_copies_is_their_union():
    tl, makespan = queued_timeline(extra_vector=True)
    fig = timeline_figure(tl, makespan, max_segments=0)
    z = np.asarray(fig.data[0].z)
    assert list(fig.data[0].y) == ["AIV0 · VECTOR", "AIV0 · MTE2"]
    assert z.max() <= 1.0
    width = makespan / HEATMAP_BINS
    # MTE2 issues or has a copy in flight over all of [0, 64]: 100 % in every bin, while
    # the copies' durations sum to 4 x 26.5 = 106 ns
    np.testing.assert_allclose(z[1], 1.0, atol=1e-12)
    np.testing.assert_allclose(z[0].sum() * width, 11.0, rtol=1e-12)
    # the same busy time as per_core_table's (the pipe ratios' union) ...
    from explorer.core.tables import per_core_table
    from tests.engine_helpers import tiny

    per_core = per_core_table(tl, tiny(**QUEUED), makespan)
    busy = z.sum(axis=1) * width
    np.testing.assert_allclose(busy, per_core.loc[per_core["core"] == 2,
                                                  ["busy_ns_VECTOR", "busy_ns_MTE2"]].iloc[0],
                               rtol=1e-12)
    # ... and the union bin by bin over a window that cuts copies
    lane = np.zeros(len(tl), dtype=np.int64)
    copies = tl["pipe"].astype(str).to_numpy() == "MTE2"
    start, end = tl["start_ns"].to_numpy(), tl["end_ns"].to_numpy()
    got = lane_utilisation(start[copies], end[copies], lane[copies], 1, 20.0, 60.0, 8)
    want = brute_utilisation(start[copies], end[copies], lane[copies], 1, 20.0, 60.0, 8)
    np.testing.assert_allclose(got, want, atol=1e-12)
    # two copies overlapping on [12.5, 26.5]: busy up to 39 ns, never above 100 %, and the
    # busy time is the union's 39 ns, not the durations' 26.5 + 26.5 = 53 ns
    two = tl[copies].iloc[:2]  # [0, 26.5] and [12.5, 39]
    z = np.asarray(timeline_figure(two, 52.0, max_segments=0).data[0].z)
    bins = np.arange(HEATMAP_BINS) * 52.0 / HEATMAP_BINS
    np.testing.assert_allclose(z[0], np.clip((39.0 - bins) / (52.0 / HEATMAP_BINS), 0, 1),
                               atol=1e-9)
    assert z.max() <= 1.0
    assert z.sum() * 52.0 / HEATMAP_BINS == pytest.approx(39.0, rel=1e-12)


def fig_lanes(fig: go.Figure) -> list[str]:
    if isinstance(fig.data[0], go.Heatmap):
        return list(fig.data[0].y)
    return list(fig.layout.yaxis.categoryarray)
