"""Tests of explorer.plots.balance: the load bars carry the loads, the mean / max / lower
bound lines and the predicted ticks; the timeline puts every piece on its core's row,
coloured by sequence, keeps idle cores and cuts huge plans to the first cores; the policy
bars and the P50 / P99 bars carry the table's values; the batch sweep draws the policies,
LPT + split, the bound and where the tasks fill the cores; every figure follows the
language and degrades to an empty figure with a message.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from explorer.core import scheduling as sc
from explorer.plots import balance as bp
from tests.test_plots_decode import trace, values


def pieces(slots, seqs, starts, ends) -> pd.DataFrame:
    return pd.DataFrame({"slot": slots, "seq": seqs, "start_us": starts, "end_us": ends})


def test_loads_bars_with_mean_max_bound_and_prediction():
    fig = bp.loads_figure([10.0, 20.0, 30.0, 0.0], 16.0, "en", predicted_us=[11, 19, 31, 0],
                          names=["AIV0", "AIV1", "AIV2", "AIV3"])
    assert [t.meta for t in fig.data] == ["loads", "predicted"]
    assert list(values(trace(fig, "loads").y)) == [10, 20, 30, 0]
    assert list(trace(fig, "loads").x) == ["AIV0", "AIV1", "AIV2", "AIV3"]
    assert list(values(trace(fig, "predicted").y)) == [11, 19, 31, 0]
    assert sorted(s.y0 for s in fig.layout.shapes) == [15.0, 16.0, 30.0]  # mean, bound, max
    texts = {s.name for s in fig.layout.shapes if s.showlegend}  # named in the legend
    assert {"mean 15.000 µs", "max 30.000 µs", "lower bound 16.000 µs"} <= texts
    assert "efficiency (mean/max) 50.0%, balance ratio (min/max) 0.0%" in fig.layout.title.text


def test_timeline_puts_pieces_on_their_cores_coloured_by_sequence():
    df = pieces([0, 0, 1], [0, 12, 1], [0.0, 5.0, 0.0], [5.0, 7.0, 3.0])
    fig = bp.gantt_figure(df, 3, "en", lower_bound_us=6.0)
    bars = trace(fig, "pieces")
    assert list(bars.y) == ["0", "0", "1"]
    assert list(values(bars.base)) == [0, 5, 0]
    assert list(values(bars.x)) == [5, 2, 3]  # durations
    colours = list(bars.marker.color)
    assert colours[0] == colours[1] == bp.SEQ_PALETTE[0]  # 12 sequences, then the colours repeat
    assert colours[2] == bp.SEQ_PALETTE[1]
    assert list(trace(fig, "cores").y) == ["0", "1", "2"]  # the idle core keeps its row
    assert list(fig.layout.yaxis.categoryarray) == ["0", "1", "2"]
    (line,) = fig.layout.shapes
    assert line.x0 == line.x1 == 6.0
    assert "(3 pieces)" in fig.layout.title.text


def test_timeline_of_a_huge_plan_draws_the_first_cores():
    n = bp.MAX_BARS * 2
    df = pieces(np.arange(n) % 100, np.arange(n), np.zeros(n), np.ones(n))
    fig = bp.gantt_figure(df, 100, "en")
    assert len(trace(fig, "pieces").y) <= bp.MAX_BARS
    assert "the first 50 of 100 cores" in fig.layout.title.text
    assert len(trace(fig, "cores").y) == 50


def test_timeline_of_a_real_plan():
    tasks = sc.synthetic_tasks("lognormal", 16, mean_len=1024, max_len=8192, seed=0,
                               kv_heads=8)
    plan = sc.plan(tasks, 48, "static")
    df = pieces(plan.slots, tasks.seq[plan.parent], plan.end - plan.costs, plan.end)
    fig = bp.gantt_figure(df, 48, "en")
    assert len(trace(fig, "pieces").y) == len(tasks) == 128
    assert set(trace(fig, "pieces").y) == {str(s) for s in range(43)}  # ceil(128/48) = 3 each
    assert len(trace(fig, "cores").y) == 48


def test_policy_bars_per_series_with_the_chosen_one_bold():
    table = pd.DataFrame({"policy": ["static", "lpt", "static", "lpt"],
                          "series": ["predicted", "predicted", "emulated", "emulated"],
                          "efficiency": [0.4, 0.95, 0.41, 0.93],
                          "makespan_us": [100.0, 42.0, 99.0, 43.0]})
    fig = bp.policies_figure(table, "en", chosen="lpt")
    assert [t.meta for t in fig.data] == ["predicted", "emulated"]
    assert list(values(trace(fig, "emulated").y)) == pytest.approx([0.41, 0.93])
    assert list(trace(fig, "emulated").x) == ["static blocks", "<b>LPT</b>"]
    assert list(trace(fig, "emulated").text) == ["41%", "93%"]
    assert trace(fig, "predicted").marker.pattern.shape == "x"


def test_completion_bars_carry_p50_and_p99():
    table = pd.DataFrame({"policy": ["static", "dynamic"], "p50_us": [50.0, 30.0],
                          "p99_us": [110.0, 60.0]})
    fig = bp.completion_figure(table, "en")
    assert list(values(trace(fig, "p99").y)) == [110, 60]
    assert list(trace(fig, "p50").x) == ["static blocks", "work queue"]


def test_sweep_lines_bound_and_where_tasks_fill_the_cores():
    df = sc.sweep_batches((8, 16, 48, 96), 48, distribution="bimodal", mean_len=1024,
                          max_len=8192, seed=0, policies=("static", "round_robin", "lpt"))
    fig = bp.sweep_figure(df, 48, 1, "en")
    assert [t.meta for t in fig.data] == ["static", "round_robin", "lpt", "lpt_split", "bound"]
    whole = df[~df["split"] & (df["policy"] == "lpt")]
    assert list(values(trace(fig, "lpt").y)) == pytest.approx(whole["efficiency"].tolist())
    bound = values(trace(fig, "bound").y)
    assert np.all(bound >= values(trace(fig, "lpt").y) - 1e-12)  # nothing whole beats it
    assert bound[0] == pytest.approx(whole["efficiency"].iloc[0])  # batch 8 < 48: reached
    split = values(trace(fig, "lpt_split").y)
    assert split[0] > bound[0]  # only splitting gets past the bound with few tasks
    (line,) = fig.layout.shapes
    assert line.x0 == 48  # 48 cores / 1 task per sequence
    assert line.name == "tasks = 48 cores" and line.showlegend  # named in the legend
    lo, hi = (10 ** r for r in fig.layout.xaxis.range)  # a log axis of 1-2-5 ticks
    ticks = np.asarray(fig.layout.xaxis.tickvals)
    assert lo <= 8 and hi >= 96 and len(ticks) >= 2 and np.all((ticks >= lo) & (ticks <= hi))
    assert set(np.round(ticks / 10 ** np.floor(np.log10(ticks)), 6)) <= {1, 2, 5}


def test_empty_inputs_give_messages():
    assert "No per-core" in bp.loads_figure([], 0, "en").layout.annotations[0].text
    assert "No tasks" in bp.gantt_figure(pieces([], [], [], []), 4, "en") \
        .layout.annotations[0].text
    empty = pd.DataFrame(columns=["policy", "series", "efficiency", "makespan_us"])
    assert "No policies" in bp.policies_figure(empty, "en").layout.annotations[0].text
    assert "No batch" in bp.sweep_figure(pd.DataFrame(), 48, 1, "en").layout.annotations[0].text


def test_chinese_figures():
    fig = bp.loads_figure([1.0, 2.0], 1.5, "zh")
    assert "效率" in fig.layout.title.text
    table = pd.DataFrame({"policy": ["lpt"], "series": ["emulated"], "efficiency": [0.9],
                          "makespan_us": [1.0]})
    assert trace(bp.policies_figure(table, "zh"), "emulated").name == "仿真值"
