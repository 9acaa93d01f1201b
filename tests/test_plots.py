"""Tests of explorer.plots: every figure builds from small synthetic tables and shows what it
should (lanes, segments, utilisation, ceilings, ridge points), in English and Chinese.

The emulator and the chip presets are written in parallel, so the tables here are built by
hand with the agreed columns and the chip is a SimpleNamespace stand-in.
"""
from __future__ import annotations

import re
import string
import tomllib
import types
from pathlib import Path

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest

from explorer.core.i18n import flatten_table
from explorer.plots import (bandwidth_figure, core_diagram_figure, load_balance_figure,
                            pipe_ratio_figure, roofline_figure, timeline_figure,
                            traffic_figure)
from explorer.plots.memory import MAX_SEGMENTS, binned_rate, step_points
from explorer.plots.roofline import ridge_intensity
from explorer.plots.style import PIPES, format_bytes
from explorer.plots.timeline import (HEATMAP_BINS, MAX_SUBLANES, flight_sublanes,
                                     lane_union, lane_utilisation)

LOCALES = Path(__file__).resolve().parents[1] / "explorer" / "core" / "locales"
COLUMNS = ["instr", "core", "core_name", "core_kind", "pipe", "op", "task", "start_ns",
           "end_ns", "bytes", "src", "dst", "served_from"]


def make_timeline(rows: list[tuple]) -> pd.DataFrame:
    """rows: (core, core_name, pipe, start_ns, end_ns[, bytes, served_from])."""
    records = []
    for i, row in enumerate(rows):
        core, name, pipe, start, end, *rest = row
        nbytes, served = (rest + [0, ""])[:2] if rest else (0, "")
        kind = re.match(r"[A-Z]+", name).group(0)
        records.append(dict(instr=i, core=core, core_name=name, core_kind=kind, pipe=pipe,
                            op=f"op{i}", task=0, start_ns=float(start), end_ns=float(end),
                            bytes=nbytes, src="GM" if nbytes else "", dst="UB" if nbytes else "",
                            served_from=served))
    return pd.DataFrame(records, columns=COLUMNS)


SMALL = make_timeline([
    (1, "AIV1", "VECTOR", 100, 300),
    (0, "AIC0", "MTE2", 0, 100, 65536, "HBM"),
    (0, "AIC0", "CUBE", 100, 400),
    (1, "AIV1", "MTE2", 0, 100, 4096, "L2"),
    (0, "AIC0", "MTE2", 100, 200, 65536, "L2"),
    (1, "AIV1", "MTE3", 300, 350, 4096, ""),
])


def chip_stub(**overrides) -> types.SimpleNamespace:
    """A 910B3-like chip with the attributes the plots read."""
    peaks = {"fp16": 294.9, "bf16": 294.9, "int8": 589.8}
    chip = dict(
        display_name="Ascend 910B3", architecture="split", ai_cores=20, vector_cores=40,
        clock_MHz=1800, l1_KiB=512, l0a_KiB=64, l0b_KiB=64, l0c_KiB=128, ub_KiB=192,
        l2_MiB=192, hbm_GiB=64, hbm_bandwidth_GBps=1600.0, l2_bandwidth_GBps=7000.0,
        mte1_l0a_bytes_per_cycle=256, mte1_l0b_bytes_per_cycle=128,
        fixpipe_gm_bytes_per_cycle=128, fixpipe_l1_bytes_per_cycle=128,
        gm_read_hbm_bytes_per_cycle=32, gm_read_l2_bytes_per_cycle=110,
        gm_write_bytes_per_cycle=64, vector_bytes_per_cycle=256, has_fixpipe=True,
        cube_precisions=tuple(peaks), peak_tflops=lambda p: peaks[p],
        vector_peak_gops=lambda dtype: 18432.0, hbm_bytes_per_ns=1600.0,
        l2_bytes_per_ns=7000.0)
    chip.update(overrides)
    return types.SimpleNamespace(**chip)


def coupled_stub() -> types.SimpleNamespace:
    peaks = {"fp16": 256.0, "int8": 512.0}
    return chip_stub(display_name="Ascend 910", architecture="coupled", ai_cores=32,
                     vector_cores=0, clock_MHz=1000, l1_KiB=1024, l0c_KiB=256, ub_KiB=256,
                     l2_MiB=32, hbm_GiB=32, has_fixpipe=False, cube_precisions=tuple(peaks),
                     peak_tflops=lambda p: peaks[p], hbm_bytes_per_ns=1200.0,
                     hbm_bandwidth_GBps=1200.0)


def all_texts(fig: go.Figure) -> str:
    """Every user-visible string of a figure: title, axes, legend names, annotations."""
    parts = [fig.layout.title.text or "", fig.layout.xaxis.title.text or "",
             fig.layout.yaxis.title.text or ""]
    parts += [trace.name or "" for trace in fig.data]
    parts += [trace.hovertemplate or "" for trace in fig.data if "hovertemplate" in trace]
    parts += [a.text or "" for a in fig.layout.annotations]
    return "\n".join(parts)


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
    fig = timeline_figure(SMALL, 400.0, max_segments=5)
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
#: DataCopy issue cost 12 cycles + 0.5 per 128 B burst (tests/test_engine_hand.py); the tiny
#: chip runs at 1000 MHz (1 cycle = 1 ns), 10 ns read latency, 32 B/ns per core from HBM.
QUEUED = dict(gm_read_issue_cycles=12.0, gm_read_burst_cycles=0.5)


def queued_timeline(extra_vector: bool = False) -> tuple[pd.DataFrame, float]:
    """Four back-to-back 128 B reads on AIV0 (core 2): starts 0, 12.5, 25, 37.5 ns, issue
    ends 12.5 .. 50, arrivals 26.5, 39, 51.5, 64 ns (issue 12.5 + 10 latency + 128 / 32);
    optionally an Add after the first arrival: 10 + 256 / 256 = 11 ns, [26.5, 37.5]."""
    from explorer.core.emulator.engine import run
    from explorer.core.tables import timeline_table
    from kernels.program import Level, Pipe, ProgramBuilder
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


# --- per-core summaries --------------------------------------------------------------------

def make_per_core() -> pd.DataFrame:
    rows = []
    ratios = {0: dict(CUBE=0.8, MTE1=0.3, MTE2=0.5, FIXP=0.1, SCALAR=0.05),
              1: dict(CUBE=0.6, MTE1=0.2, MTE2=0.4, FIXP=0.1, SCALAR=0.05),
              2: dict(VECTOR=0.4, MTE2=0.7, MTE3=0.2, SCALAR=0.1),
              3: dict(VECTOR=0.2, MTE2=0.5, MTE3=0.2, SCALAR=0.1)}
    for core, ratio in ratios.items():
        kind = "AIC" if core < 2 else "AIV"
        row = dict(core=core, core_name=f"{kind}{core}", core_kind=kind,
                   active_ns=1000.0 * (core + 1), stall_ns=10.0 * core,
                   first_start_ns=0.0, last_end_ns=1000.0 * (core + 1))
        for pipe in PIPES:
            row[f"ratio_{pipe}"] = ratio.get(pipe, 0.0)
            row[f"busy_ns_{pipe}"] = ratio.get(pipe, 0.0) * 4000.0
        rows.append(row)
    return pd.DataFrame(rows)


def test_pipe_ratio_uses_profiler_names_and_cores_that_have_the_pipe():
    fig = pipe_ratio_figure(make_per_core(), "en")
    mean, peak = fig.data
    assert list(mean.x) == ["aic_cube_ratio", "aiv_vec_ratio", "scalar_ratio", "mte1_ratio",
                            "mte2_ratio", "mte3_ratio", "fixpipe_ratio"]
    got_mean, got_max = dict(zip(mean.x, mean.y)), dict(zip(peak.x, peak.y))
    assert got_mean["aic_cube_ratio"] == pytest.approx(0.7)  # over the 2 AIC only
    assert got_max["aic_cube_ratio"] == pytest.approx(0.8)
    assert got_mean["aiv_vec_ratio"] == pytest.approx(0.3)
    assert got_mean["mte2_ratio"] == pytest.approx(0.525)  # all four cores use MTE2
    assert got_max["mte2_ratio"] == pytest.approx(0.7)
    assert fig.layout.barmode == "group" and list(fig.layout.yaxis.range) == [0, 1]
    assert "%" in fig.layout.yaxis.tickformat
    assert all_texts(fig) != all_texts(pipe_ratio_figure(make_per_core(), "zh"))


def test_load_balance_bars_with_mean_and_max_lines():
    fig = load_balance_figure(make_per_core(), "en")
    assert [trace.name for trace in fig.data] == ["AIC", "AIV"]
    assert [list(trace.x) for trace in fig.data] == [["AIC0", "AIC1"], ["AIV2", "AIV3"]]
    assert list(fig.data[0].y) == [1.0, 2.0]  # µs
    lines = sorted(shape.y0 for shape in fig.layout.shapes)
    assert lines == [pytest.approx(2.5), pytest.approx(4.0)]
    assert "0.62" in fig.layout.title.text  # mean/max = 2.5 / 4
    assert all_texts(fig) != all_texts(load_balance_figure(make_per_core(), "zh"))


def test_per_core_figures_survive_empty_tables():
    empty = make_per_core().iloc[0:0]
    for fig in (pipe_ratio_figure(empty, "en"), load_balance_figure(empty, "zh")):
        assert len(fig.data) == 0 and fig.layout.annotations


# --- memory --------------------------------------------------------------------------------

def make_traffic() -> pd.DataFrame:
    return pd.DataFrame([
        dict(path="GM→UB", src="GM", dst="UB", served_from="HBM", bytes=3 * 2**20, count=48),
        dict(path="GM→UB", src="GM", dst="UB", served_from="L2", bytes=2**20, count=16),
        dict(path="UB→GM", src="UB", dst="GM", served_from="", bytes=2**20, count=16),
        dict(path="L1→L0A", src="L1", dst="L0A", served_from="", bytes=2**19, count=8),
    ])


def test_traffic_stacked_by_source_in_human_units():
    fig = traffic_figure(make_traffic(), "en")
    assert fig.layout.barmode == "stack"
    assert "MiB" in fig.layout.yaxis.title.text
    by_name = {trace.name: dict(zip(trace.x, trace.y)) for trace in fig.data}
    assert set(by_name) == {"HBM", "L2 hit", "on-chip"}
    assert list(fig.data[0].x) == ["GM→UB", "UB→GM", "L1→L0A"]  # largest path first
    assert by_name["HBM"]["GM→UB"] == pytest.approx(3.0)
    assert by_name["on-chip"]["L1→L0A"] == pytest.approx(0.5)
    assert "5.50 MiB" in fig.layout.title.text
    assert all_texts(fig) != all_texts(traffic_figure(make_traffic(), "zh"))
    assert traffic_figure(make_traffic().iloc[0:0], "zh").layout.annotations


def test_format_bytes_units():
    assert [format_bytes(v) for v in (512, 1536, 3 * 2**20, 2**31)] == [
        "512 B", "1.50 KiB", "3.00 MiB", "2.00 GiB"]


def test_step_points_fill_gaps_with_zero():
    x, y = step_points(np.array([0.0, 10.0, 30.0]), np.array([10.0, 20.0, 40.0]),
                       np.array([5.0, 7.0, 9.0]))
    assert list(x) == [0, 10, 10, 20, 20, 30, 30, 40]
    assert list(y) == [5, 5, 7, 7, 0, 0, 9, 9]


def test_bandwidth_step_lines_and_dashed_peaks():
    bw = pd.DataFrame(dict(t0_ns=[0.0, 1000.0], t1_ns=[1000.0, 3000.0],
                           hbm_GBps=[1500.0, 800.0], l2_GBps=[3000.0, 0.0]))
    fig = bandwidth_figure(bw, 1600.0, 7000.0, "en")
    hbm, l2 = fig.data
    assert list(hbm.x) == [0.0, 1.0, 1.0, 3.0] and list(hbm.y) == [1500, 1500, 800, 800]
    assert list(l2.y) == [3000, 3000, 0, 0]
    peaks = sorted(shape.y0 for shape in fig.layout.shapes)
    assert peaks == [1600.0, 7000.0]
    assert all(shape.line.dash == "dash" for shape in fig.layout.shapes)
    assert all_texts(fig) != all_texts(bandwidth_figure(bw, 1600.0, 7000.0, "zh"))
    assert len(bandwidth_figure(bw.iloc[0:0], 1600.0, 7000.0, "en").data) == 0


def test_binned_rate_conserves_bytes_and_averages_bursts():
    t0 = np.arange(0.0, 100.0, 2.0)  # 1 ns bursts at 1000 GB/s every 2 ns, gaps between
    t0_, t1_, rate = binned_rate(t0, t0 + 1.0, np.full(len(t0), 1000.0), 10)
    assert np.allclose(rate, 500.0, rtol=0.1)  # busy half the time (bins cut bursts)
    assert np.sum(rate * (t1_ - t0_)) == pytest.approx(1000.0 * len(t0))


def test_bandwidth_of_many_segments_is_binned():
    n = MAX_SEGMENTS + 1
    bw = pd.DataFrame(dict(t0_ns=np.arange(n) * 2.0, t1_ns=np.arange(n) * 2.0 + 1.0,
                           hbm_GBps=np.full(n, 1600.0), l2_GBps=np.zeros(n)))
    hbm = bandwidth_figure(bw, 1600.0, 7000.0, "en").data[0]
    assert max(hbm.y) < 1000.0  # the mean, not the bursts' peak
    assert "bins" in bandwidth_figure(bw, 1600.0, 7000.0, "en").layout.title.text


# --- roofline ------------------------------------------------------------------------------

def trace_by_meta(fig: go.Figure, meta: str):
    return next(trace for trace in fig.data if trace.meta == meta)


def test_roofline_ceiling_and_ridges_follow_the_chip():
    chip = chip_stub()
    fig = roofline_figure(chip, [], "en")
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.type == "log"
    assert set(trace_by_meta(fig, "roof:cube").y) == {chip.peak_tflops("fp16")}
    assert list(trace_by_meta(fig, "roof:vector").y) == pytest.approx([18.432, 18.432])
    ridges = trace_by_meta(fig, "ridges")
    hbm_ridge = 294.9e12 / (1600.0 * 1e9)
    l2_ridge = 294.9e12 / (7000.0 * 1e9)
    assert ridge_intensity(294.9, 1600.0) == pytest.approx(hbm_ridge)
    assert sorted(ridges.x) == pytest.approx(sorted([hbm_ridge, l2_ridge, 18.432e12 / 1600e9]))
    hbm = trace_by_meta(fig, "slope:hbm")
    assert hbm.x[-1] == pytest.approx(hbm_ridge) and hbm.y[-1] == pytest.approx(294.9)
    slope = hbm.y[0] / hbm.x[0]  # TFLOPS per flop/byte = GB/s / 1000
    assert slope == pytest.approx(1.6)
    int8 = roofline_figure(chip, [], "en", precision="int8")
    assert set(trace_by_meta(int8, "roof:cube").y) == {589.8}


def test_roofline_points_skip_zero_and_missing_intensity():
    points = [dict(label="gemm", intensity=120.0, tflops=200.0),
              dict(label="zero", intensity=0, tflops=1.0),
              dict(label="none", intensity=None, tflops=1.0),
              dict(label="nan", intensity=float("nan"), tflops=1.0),
              dict(label="no-tflops", intensity=3.0, tflops=None)]
    fig = roofline_figure(chip_stub(), points, "en")
    kernels = trace_by_meta(fig, "points")
    assert list(kernels.text) == ["gemm"] and list(kernels.x) == [120.0]
    assert not any(trace.meta == "points" for trace in roofline_figure(chip_stub(), None).data)


def test_roofline_without_the_cube_precision_keeps_the_vector_roof():
    fig = roofline_figure(coupled_stub(), [], "en", precision="bf16")
    assert not any(trace.meta == "roof:cube" for trace in fig.data)
    assert trace_by_meta(fig, "roof:vector")
    assert "bf16" in fig.layout.title.text
    en, zh = all_texts(fig), all_texts(roofline_figure(coupled_stub(), [], "zh", precision="bf16"))
    assert en != zh


# --- block diagram -------------------------------------------------------------------------

def arrows(fig: go.Figure) -> list:
    return [a for a in fig.layout.annotations if a.showarrow]


def test_split_diagram_has_aic_two_aivs_and_gm_only_exchange():
    fig = core_diagram_figure(chip_stub(), "en")
    text = all_texts(fig)
    for name in ("L1", "L0A", "L0B", "L0C", "CUBE", "FIXPIPE", "UB", "VECTOR", "SCALAR",
                 "512 KiB", "192 KiB", "MTE1", "MTE2", "MTE3", "FIXP", "256 B/cycle",
                 "128 B/cycle", "64 B/cycle", "1600 GB/s", "192 MiB"):
        assert name in text, name
    assert "only through GM/L2" in text
    assert text.count("<b>UB</b>") == 2 and text.count("<b>CUBE</b>") == 1
    assert len(arrows(fig)) == 17  # 6 cube side + 3 fixpipe + 4 per AIV
    assert not fig.layout.xaxis.visible and not fig.layout.yaxis.visible
    assert len(fig.data) == 0 and len(fig.layout.shapes) >= 14


def test_coupled_diagram_has_one_core_with_l0c_to_ub_via_vector():
    fig = core_diagram_figure(coupled_stub(), "en")
    text = all_texts(fig)
    assert "FIXPIPE" not in text and "only through GM/L2" not in text
    assert "L0C→UB via VECTOR" in text and "1024 KiB" in text and "256 KiB" in text
    assert text.count("<b>UB</b>") == 1
    assert len(arrows(fig)) >= 11


def test_diagram_zh_differs_but_keeps_technical_names():
    for chip in (chip_stub(), coupled_stub()):
        en, zh = (all_texts(core_diagram_figure(chip, lang)) for lang in ("en", "zh"))
        assert en != zh
        for name in ("L0A", "MTE2", "UB", "CUBE"):
            assert name in zh


# --- catalogues and layering ---------------------------------------------------------------

def placeholders(text: str) -> set[str]:
    return {field for _, field, _, _ in string.Formatter().parse(text) if field}


def test_en_and_zh_plot_catalogues_have_same_ids_and_placeholders():
    en, zh = ({k: v for k, v in flatten_table(tomllib.loads(
        (LOCALES / lang / "plots.toml").read_text(encoding="utf-8"))).items()}
        for lang in ("en", "zh"))
    assert en and set(en) == set(zh)
    assert all(msg_id.startswith("plots.") for msg_id in en)
    for msg_id, text in en.items():
        assert placeholders(text) == placeholders(zh[msg_id]), msg_id

