"""Tests of explorer.plots.decode: the HBM budget stacks weights, held KV and layout waste
against the HBM line; the step split puts each phase's per-layer time on the bar and
hatches the estimated linear layers; the latency chart places every sequence and the
P50 / P99 lines; the append chart compares both strategies' bytes and times; every figure
follows the language and degrades to an empty figure with a message.
"""
from __future__ import annotations

import base64

import numpy as np
import pytest

from explorer.plots import decode as dp

GiB = 1 << 30


def values(array) -> np.ndarray:
    """A plotly data array as numpy (plotly may store it base64-encoded as ``bdata``)."""
    if isinstance(array, dict) and "bdata" in array:
        return np.frombuffer(base64.b64decode(array["bdata"]), dtype=np.dtype(array["dtype"]))
    return np.asarray(array, dtype=float)


def trace(fig, meta: str):
    (found,) = [t for t in fig.data if t.meta == meta]
    return found


def test_memory_figure_stacks_weights_kv_and_waste():
    layouts = {"contiguous": (8 * GiB, 32 * GiB), "paged": (8 * GiB, 9 * GiB)}
    fig = dp.kv_memory_figure(64 * GiB, 16 * GiB, layouts, "en")
    assert [t.meta for t in fig.data] == ["weights", "kv", "waste"]
    assert fig.layout.barmode == "stack"
    assert list(values(trace(fig, "weights").x)) == [16, 16]  # GiB
    assert list(values(trace(fig, "kv").x)) == [8, 8]
    assert list(values(trace(fig, "waste").x)) == [24, 1]
    assert list(trace(fig, "waste").y) == ["contiguous", "paged"]
    (line,) = fig.layout.shapes
    assert line.x0 == line.x1 == 64
    assert "HBM 64.00 GiB" in fig.layout.annotations[0].text
    assert fig.layout.xaxis.title.text == "bytes (GiB)"


def test_memory_figure_scales_to_an_overfull_batch():
    fig = dp.kv_memory_figure(64 * GiB, 141 * 10**9, {"paged": (200 * GiB, 201 * GiB)}, "en")
    total = sum(values(t.x)[0] for t in fig.data)
    assert total > fig.layout.shapes[0].x0  # the bar runs past the HBM line


def test_step_split_per_layer_and_step_with_the_estimate_hatched():
    parts = {"append": 5_000.0, "attention": 95_000.0, "linear": 400_000.0}
    fig = dp.step_split_figure(parts, 32, "en")
    assert [t.meta for t in fig.data] == ["append", "attention", "linear"]
    assert values(trace(fig, "attention").x)[0] == pytest.approx(95.0)  # µs per layer
    assert trace(fig, "linear").marker.pattern.shape == "/"
    assert trace(fig, "attention").marker.pattern.shape == ""
    assert trace(fig, "linear").name == "linear layers (estimate)"
    assert "3.04 ms per step" in trace(fig, "attention").text[0]  # 95 µs x 32
    assert "One layer: 500.0 µs; the step: 32 layers = 16.00 ms" in fig.layout.title.text


def test_step_split_skips_phases_that_did_not_run():
    fig = dp.step_split_figure({"append": 0.0, "attention": 1e4, "linear": 2e4}, 2, "en")
    assert [t.meta for t in fig.data] == ["attention", "linear"]
    assert not dp.step_split_figure({}, 2, "en").data


def test_latency_points_and_percentile_lines():
    done = np.array([10_000.0, 20_000.0, 40_000.0])
    lengths = np.array([512, 1024, 2048])
    fig = dp.latency_figure(done, lengths, 20_000.0, 39_600.0, "en")
    points = trace(fig, "sequences")
    assert list(values(points.x)) == [512, 1024, 2048]
    assert list(values(points.y)) == [10.0, 20.0, 40.0]  # µs
    assert sorted(s.y0 for s in fig.layout.shapes) == [20.0, 39.6]
    texts = {a.text for a in fig.layout.annotations}
    assert {"P50 20.0 µs", "P99 39.6 µs"} <= texts


def test_latency_thins_huge_batches():
    n = dp.MAX_POINTS * 2
    fig = dp.latency_figure(np.arange(n, dtype=float), np.arange(n), 1.0, 2.0, "en")
    assert len(values(trace(fig, "sequences").x)) == dp.MAX_POINTS


def test_append_figure_compares_bytes_and_times():
    fig = dp.append_figure({"incremental": 2 * 1024, "concat": 64 * 1024 * 1024},
                           {"incremental": 3_000.0, "concat": 90_000.0}, "concat", "en")
    bytes_bar, time_bar = trace(fig, "bytes"), trace(fig, "time")
    assert list(bytes_bar.x) == ["incremental", "concat"]
    assert list(values(bytes_bar.y)) == pytest.approx([2 / 1024, 64])  # MiB
    assert list(values(time_bar.y)) == pytest.approx([3.0, 90.0])  # µs
    assert list(bytes_bar.marker.line.width) == [0, 3]  # the chosen one outlined
    assert list(bytes_bar.text) == ["2.00 KiB", "64.00 MiB"]


def test_append_figure_without_a_time():
    fig = dp.append_figure({"incremental": 10, "concat": 1000}, {"incremental": 5.0},
                           "incremental", "en")
    assert list(trace(fig, "time").x) == ["incremental"]


def test_empty_inputs_give_messages():
    assert "No layout" in dp.kv_memory_figure(1, 1, {}, "en").layout.annotations[0].text
    assert "No attention" in dp.latency_figure([], [], 0, 0, "en").layout.annotations[0].text
    assert "No append" in dp.append_figure({}, {}, "concat", "en").layout.annotations[0].text


def test_chinese_figures():
    fig = dp.step_split_figure({"attention": 1e4, "linear": 2e4}, 4, "zh")
    assert trace(fig, "linear").name == "线性层（估计值）"
    assert "整步" in fig.layout.title.text
    fig = dp.kv_memory_figure(64 * GiB, GiB, {"paged": (GiB, 2 * GiB)}, "zh")
    assert list(trace(fig, "waste").y) == ["分页"]
    assert trace(fig, "kv").name == "token 占用的 KV"
