"""Tests of explorer.plots.decode: the HBM budget stacks weights, held KV and layout waste
against the HBM line; the op breakdown stacks each op's share of the step's time and HBM
bytes; the latency chart places every sequence and the
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
    assert line.name == "HBM 64.00 GiB" and line.showlegend  # named in the legend
    assert fig.layout.xaxis.title.text == "bytes (GiB)"


def test_memory_figure_scales_to_an_overfull_batch():
    fig = dp.kv_memory_figure(64 * GiB, 141 * 10**9, {"paged": (200 * GiB, 201 * GiB)}, "en")
    total = sum(values(t.x)[0] for t in fig.data)
    assert total > fig.layout.shapes[0].x0  # the bar runs past the HBM line


def _ops(rows):
    """A DecodeStep.ops-like table from (op, count, ns, hbm_bytes)."""
    import pandas as pd
    table = pd.DataFrame(rows, columns=["op", "count", "ns", "hbm_bytes"])
    table["step_ns"] = table["ns"] * table["count"]
    return table


def test_op_breakdown_stacks_shares_of_time_and_bytes():
    ops = _ops([("qkv", 32, 30_000.0, 6e8), ("attention", 32, 10_000.0, 2e8),
                ("lm_head", 1, 40_000.0, 1e9), ("rope", 32, 0.0, 0.0)])
    fig = dp.op_breakdown_figure(ops, 32, "en")
    assert [t.meta for t in fig.data] == ["qkv", "attention", "lm_head"]  # rope: no time
    step = 32 * 30_000 + 32 * 10_000 + 40_000  # 1.32 ms
    bytes_ = 32 * 6e8 + 32 * 2e8 + 1e9
    qkv = values(trace(fig, "qkv").x)
    assert qkv[0] == pytest.approx(100 * 32 * 30_000 / step)
    assert qkv[1] == pytest.approx(100 * 32 * 6e8 / bytes_)
    assert sum(values(t.x)[0] for t in fig.data) == pytest.approx(100.0)
    assert "0.96 ms per step = 32 × 30.0 µs" == trace(fig, "qkv").customdata[0]
    assert list(trace(fig, "qkv").y) == ["time (1.32 ms)", "HBM bytes (24.77 GiB)"]
    assert "32 layers + the LM head" in fig.layout.title.text


def test_op_breakdown_without_ops_says_so():
    assert not dp.op_breakdown_figure(_ops([]), 2, "en").data
    assert "No op" in dp.op_breakdown_figure(_ops([]), 2, "en").layout.annotations[0].text


def test_latency_points_and_percentile_lines():
    done = np.array([10_000.0, 20_000.0, 40_000.0])
    lengths = np.array([512, 1024, 2048])
    fig = dp.latency_figure(done, lengths, 20_000.0, 39_600.0, "en")
    points = trace(fig, "sequences")
    assert list(values(points.x)) == [512, 1024, 2048]
    assert list(values(points.y)) == [10.0, 20.0, 40.0]  # µs
    assert sorted(s.y0 for s in fig.layout.shapes) == [20.0, 39.6]
    texts = {s.name for s in fig.layout.shapes if s.showlegend}  # named in the legend
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
    fig = dp.op_breakdown_figure(_ops([("attention", 4, 1e4, 1e6), ("down", 4, 2e4, 1e6)]),
                                 4, "zh")
    assert trace(fig, "down").name == "down 投影"
    assert "逐个算子" in fig.layout.title.text
    fig = dp.kv_memory_figure(64 * GiB, GiB, {"paged": (GiB, 2 * GiB)}, "zh")
    assert list(trace(fig, "waste").y) == ["分页"]
    assert trace(fig, "kv").name == "token 占用的 KV"
