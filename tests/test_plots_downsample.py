"""A long timeline drawn at the chart's pixels: bars closer than a pixel merged, each lane's
busy time kept, the bar count bounded by the pixels, exact bars back in a narrow view."""
from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from explorer.plots import timeline_figure
from explorer.plots.lane_time import pixel_bars
from tests.plot_helpers import COLUMNS


def brute_union(start, end) -> float:
    """Length of the union of intervals, by a plain sweep."""
    total, reach = 0.0, -np.inf
    for s, e in sorted(zip(start, end)):
        if e > reach:
            total += e - max(s, reach)
            reach = e
    return total


def random_intervals(n: int, lanes: int, span: float, seed: int = 3):
    rng = np.random.default_rng(seed)
    lane = rng.integers(0, lanes, n)
    start = rng.uniform(-0.05 * span, span, n)  # some start before the window
    return start, start + rng.exponential(span / n * lanes * 2, n), lane


def test_drawn_busy_time_per_lane_is_the_true_busy_time():
    start, end, lane = random_intervals(3000, 4, 1e5)
    px = 300
    s, e, g = pixel_bars(start, end, lane, 4, 0.0, 1e5, px)
    for k in range(4):
        on = lane == k
        true = brute_union(np.clip(start[on], 0, 1e5), np.clip(end[on], 0, 1e5))
        assert abs((e - s)[g == k].sum() - true) <= 1e5 / px * 1e-6


def test_bars_are_bounded_by_the_pixels_disjoint_and_inside_the_window():
    start, end, lane = random_intervals(20_000, 3, 1e6)
    px = 200
    s, e, g = pixel_bars(start, end, lane, 3, 0.0, 1e6, px)
    assert len(s) <= 2 * px * 3
    assert (np.bincount(g, minlength=3) <= 2 * px).all()
    assert (s >= 0.0).all() and (e <= 1e6).all() and (e > s).all()
    same = g[1:] == g[:-1]
    assert (s[1:][same] > e[:-1][same]).all()  # sorted, apart: touching bars were merged


def test_segments_longer_than_a_pixel_keep_their_exact_ends():
    start = np.array([100.0, 5000.0, 20000.0, 20000.5])
    end = np.array([3000.0, 15000.0, 20001.0, 29000.0])  # the last two overlap: one run
    s, e, g = pixel_bars(start, end, np.zeros(4, dtype=np.int64), 1, 0.0, 30000.0, 300)
    np.testing.assert_allclose(s, [100.0, 5000.0, 20000.0])
    np.testing.assert_allclose(e, [3000.0, 15000.0, 29000.0])


def test_bars_closer_than_a_pixel_merge():
    start = np.arange(100) * 10.0  # 100 bars of 5 ns, 5 ns apart: a pixel is 100 ns
    s, e, _ = pixel_bars(start, start + 5.0, np.zeros(100, dtype=np.int64), 1, 0.0, 1000.0, 10)
    assert len(s) < 100
    assert abs((e - s).sum() - 500.0) < 1e-9


def long_timeline(n: int, cores: int) -> pd.DataFrame:
    """n back-to-back VECTOR and MTE2 segments of 3..9 ns with 0..4 ns gaps, per core."""
    rng = np.random.default_rng(7)
    core = np.arange(n) % cores
    dur, gap = rng.uniform(3.0, 9.0, n), rng.uniform(0.0, 4.0, n)
    end = np.empty(n)
    for c in range(cores):
        on = core == c
        end[on] = np.cumsum(dur[on] + gap[on])
    return pd.DataFrame(dict(
        instr=np.arange(n), core=core, core_name=[f"AIV{c}" for c in core], core_kind="AIV",
        pipe=np.where(np.arange(n) // cores % 2, "MTE2", "VECTOR"), op="Add", task=0,
        start_ns=end - dur, end_ns=end, bytes=0, src="", dst="", served_from=""))[COLUMNS]


def drawn_busy(fig: go.Figure, n_lanes: int) -> np.ndarray:
    busy = np.zeros(n_lanes)
    for trace in fig.data:
        np.add.at(busy, np.asarray(trace.y, dtype=np.int64), np.asarray(trace.x, dtype=float))
    return busy


def test_long_timeline_on_few_lanes_is_drawn_at_pixel_width():
    tl = long_timeline(40_000, 4)
    makespan = float(tl["end_ns"].max())
    px = 400
    fig = timeline_figure(tl, makespan, width_px=px)
    assert fig.data and all(isinstance(t, go.Bar) for t in fig.data)
    lanes = list(fig.layout.yaxis.ticktext)
    assert lanes == [f"AIV{c} · {p}" for c in range(4) for p in ("VECTOR", "MTE2")]
    assert sum(len(t.x) for t in fig.data) <= min(4000, 2 * px * len(lanes))
    assert "40000" in fig.layout.title.text
    true = [brute_union(tl["start_ns"][on], tl["end_ns"][on]) / 1e3
            for c in range(4) for p in ("VECTOR", "MTE2")
            for on in [(tl["core"] == c) & (tl["pipe"] == p)]]
    np.testing.assert_allclose(drawn_busy(fig, len(lanes)), true, atol=makespan / px / 1e3)


def test_narrowing_the_window_shows_exact_bars():
    tl = long_timeline(40_000, 4)
    fig = timeline_figure(tl, float(tl["end_ns"].max()), window=(0.0, 2000.0))
    kept = tl[(tl["end_ns"] > 0.0) & (tl["start_ns"] < 2000.0)]
    assert sum(len(t.x) for t in fig.data) == len(kept)  # one bar per instruction
    assert all(t.customdata[0][0] == "Add" for t in fig.data)  # the exact hover


def test_many_lanes_become_the_heat_map():
    tl = long_timeline(40_000, 40)  # 80 lanes
    fig = timeline_figure(tl, float(tl["end_ns"].max()))
    assert isinstance(fig.data[0], go.Heatmap)
