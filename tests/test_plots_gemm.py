"""Tests of explorer.plots.gemm: the task-grid picture shows exactly the TaskGrid's core
slots and waves (for every policy), one panel per split-K layer, the tail wave marked and
stated in words, and large grids drawn as a corner that says so.
"""
from __future__ import annotations

import numpy as np
import pytest

from explorer.plots import gemm as gp
from kernels.gemm.grid import POLICIES, task_grid


def heatmaps(fig):
    return [trace for trace in fig.data if trace.type == "heatmap"]


def cells(trace) -> np.ndarray:
    return np.asarray(trace.z, dtype=float)


@pytest.mark.parametrize("policy", POLICIES)
def test_cells_are_the_grid_slots(policy):
    grid = task_grid(5, 7, 1, 4, policy, 2)
    fig = gp.task_grid_figure(grid, "en")
    (layer,) = heatmaps(fig)
    z = cells(layer)
    assert z.shape == (5, 7)
    for x, y, slot in zip(grid.x, grid.y, grid.slot):
        assert z[x, y] == slot
    custom = np.asarray(layer.customdata)
    assert (custom[grid.x, grid.y, 0] == grid.slot).all()
    assert (custom[grid.x, grid.y, 1] == grid.wave).all()


def test_colour_by_wave_shows_the_waves():
    grid = task_grid(4, 6, 1, 5, "row_major", 1)
    (layer,) = heatmaps(gp.task_grid_figure(grid, "en", "wave"))
    z = cells(layer)
    assert (z[grid.x, grid.y] == grid.wave).all()
    assert layer.zmax == grid.waves - 0.5
    assert "wave" in gp.task_grid_figure(grid, "en", "wave").layout.title.text


def test_policies_draw_different_pictures():
    pictures = [cells(heatmaps(gp.task_grid_figure(task_grid(8, 8, 1, 6, p, 2), "en"))[0])
                for p in POLICIES]
    assert all(not np.array_equal(pictures[0], other) for other in pictures[1:])


def test_split_k_layers_get_one_panel_each():
    grid = task_grid(2, 3, 4, 8, "swizzle", 2)
    fig = gp.task_grid_figure(grid, "en", panel=(128, 256), size=(256, 700, 1000),
                              k_per_z=256)
    layers = heatmaps(fig)
    assert [trace.meta for trace in layers] == [f"layer:{z}" for z in range(4)]
    for z, trace in enumerate(layers):
        sel = grid.z == z
        assert (cells(trace)[grid.x[sel], grid.y[sel]] == grid.slot[sel]).all()
    titles = [a.text for a in fig.layout.annotations]
    assert "z = 0 · K 0–255" in titles and "z = 3 · K 768–999" in titles
    assert sum(trace.showscale for trace in layers) == 1  # one colour bar


def test_many_layers_are_capped_and_said():
    grid = task_grid(1, 1, 12, 4, "row_major", 1)
    fig = gp.task_grid_figure(grid, "en")
    assert len(heatmaps(fig)) == gp.MAX_LAYERS
    assert f"first {gp.MAX_LAYERS} of 12 K layers" in fig.layout.title.text


def test_axes_are_elements_of_c_clipped_to_the_matrix():
    grid = task_grid(3, 2, 1, 4, "row_major", 1)
    (layer,) = heatmaps(gp.task_grid_figure(grid, "en", panel=(128, 256), size=(300, 400, 64)))
    assert list(layer.y) == [0, 128, 256, 300]
    assert list(layer.x) == [0, 256, 400]
    custom = np.asarray(layer.customdata)
    assert list(custom[2, 1, 5:]) == [256, 299, 256, 399]  # rows and columns of the last task


@pytest.mark.parametrize(("X", "Y", "cores", "words"), [
    (26, 20, 24, "520 tasks on 24 cores = 21 full waves + a tail of 16: the last wave "
                 "leaves 8 cores idle (98% of the wave slots busy)."),
    (6, 8, 24, "48 tasks on 24 cores = 2 full waves, no tail"),
    (2, 1, 24, "2 tasks on 24 cores: a single partial wave; 22 cores stay idle"),
])
def test_wave_text(X, Y, cores, words):
    grid = task_grid(X, Y, 1, cores, "swizzle", 4)
    assert words in gp.wave_text(grid, "en")
    assert words in gp.task_grid_figure(grid, "en").layout.title.text


def test_wave_summary_numbers():
    summary = gp.wave_summary(task_grid(26, 20, 1, 24, "row_major", 1))
    assert summary == {"tasks": 520, "cores": 24, "waves": 22, "full": 21, "tail": 16,
                       "idle": 8, "busy_cores": 24, "efficiency": 98}
    assert gp.wave_summary(task_grid(1, 1, 1, 24, "row_major", 1))["efficiency"] == 4


def test_tail_wave_tasks_are_marked():
    grid = task_grid(26, 20, 1, 24, "row_major", 1)
    fig = gp.task_grid_figure(grid, "en")
    (marks,) = [trace for trace in fig.data if trace.type == "scatter"]
    last = grid.wave == grid.waves - 1
    assert len(marks.x) == grid.tail_tasks == 16
    got = sorted(zip(np.asarray(marks.y) - 0.5, np.asarray(marks.x) - 0.5))
    assert got == sorted(zip(grid.x[last].astype(float), grid.y[last].astype(float)))
    assert "tail of 16" in marks.name


def test_no_tail_marks_when_waves_are_full_or_single():
    for X, Y in ((6, 8), (2, 1)):
        fig = gp.task_grid_figure(task_grid(X, Y, 1, 24, "row_major", 1), "en")
        assert not [trace for trace in fig.data if trace.type == "scatter"]


def test_large_grid_draws_a_corner_and_says_so():
    grid = task_grid(400, 300, 1, 24, "swizzle", 4)
    fig = gp.task_grid_figure(grid, "en")
    (layer,) = heatmaps(fig)
    side = int(np.sqrt(gp.MAX_CELLS))
    assert cells(layer).shape == (side, side)
    assert f"top-left {side} × {side} of 400 × 300 tasks" in fig.layout.title.text
    assert layer.text is None  # no per-cell numbers on a big picture
    narrow = heatmaps(gp.task_grid_figure(task_grid(2, 20000, 1, 24, "row_major", 1), "en"))[0]
    assert cells(narrow).shape == (2, gp.MAX_CELLS // 2)


def test_small_grid_writes_the_wave_in_each_cell():
    grid = task_grid(3, 4, 1, 5, "row_major", 1)
    (layer,) = heatmaps(gp.task_grid_figure(grid, "en"))
    text = np.asarray(layer.text)
    assert (text[grid.x, grid.y] == grid.wave.astype(str)).all()


def test_chinese_figure():
    grid = task_grid(26, 20, 1, 24, "swizzle", 4)
    en, zh = gp.task_grid_figure(grid, "en"), gp.task_grid_figure(grid, "zh")
    assert en.layout.title.text != zh.layout.title.text
    words = "520 个任务分给 24 个核 = 21 个满波 + 16 个任务的尾波"
    assert words in zh.layout.title.text
    assert "GetBlockIdx" in heatmaps(zh)[0].hovertemplate
