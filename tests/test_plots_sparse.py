"""Tests of explorer.plots.sparse: the accuracy panels carry every policy's summary values
(the chosen one thicker, the chosen ratio marked); the heat map shows each policy's kept
tokens under the dense attention and bins long caches; the norm scatter, the byte bars
and the step bars carry their numbers; every figure follows the language and degrades to
an empty figure with a message.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from explorer.core import sparse_study as ss
from explorer.plots import sparse as sp
from kernels.sparse.data import synthetic
from tests.test_plots_decode import trace, values


@pytest.fixture(scope="module")
def data():
    return synthetic(np.random.default_rng(0), tokens=256, kv_heads=2)


def test_accuracy_panels_carry_every_policy(data):
    summary = ss.summary(ss.study(data, keep_ratios=(0.1, 0.3, 1.0)))
    fig = sp.accuracy_figure(summary, "en", "norm_low", 0.3)
    assert len(fig.data) == len(sp.METRICS) * 6
    rows = summary[summary["policy"] == "h2o"]
    for metric in sp.METRICS:
        line = trace(fig, f"{metric}:h2o")
        assert list(values(line.x)) == pytest.approx([0.1, 0.3, 1.0])
        assert list(values(line.y)) == pytest.approx(rows[metric].tolist())
    assert trace(fig, "mass_recall:norm_low").line.width > trace(fig, "mass_recall:h2o").line.width
    assert [t.showlegend for t in fig.data if t.meta.endswith(":h2o")] == [True, False, False]
    assert trace(fig, "mass_recall:norm_high").name == "largest norm (the blog)"
    assert [s.x0 for s in fig.layout.shapes] == [0.3, 0.3, 0.3]  # the chosen ratio
    assert [a.text for a in fig.layout.annotations][:3] == [
        "Mass recall (↑)", "Output error (↓)", "Top-k overlap (↑)"]


def test_kept_heat_map_shows_each_policy_under_the_dense_attention(data):
    mask, attention = ss.kept_mask(data, 1, keep_ratio=0.25)
    fig = sp.kept_figure(mask, attention, "en", "streaming", 0.25)
    kept = trace(fig, "kept")
    z = np.asarray(kept.z)
    assert z.shape == (6, 256)
    assert np.array_equal(z.astype(bool), mask.to_numpy())
    assert list(kept.y)[3] == "<b>StreamingLLM</b>"  # the chosen policy in bold
    assert list(values(trace(fig, "attention").y)) == pytest.approx(attention.tolist())
    assert fig.layout.yaxis.type == "log"
    assert "keep ratio 25%, 256 tokens" in fig.layout.title.text


def test_long_caches_are_binned():
    n = sp.MAX_COLUMNS * 3
    mask = pd.DataFrame(np.zeros((2, n), dtype=bool), index=["h2o", "random"])
    mask.iloc[0, :3] = True  # the first bin of h2o is fully kept
    attention = pd.Series(np.full(n, 1.0 / n))
    fig = sp.kept_figure(mask, attention, "en")
    z = np.asarray(trace(fig, "kept").z)
    assert z.shape == (2, sp.MAX_COLUMNS)
    assert z[0, 0] == 1.0 and z[0, 1:].sum() == 0 and z[1].sum() == 0
    assert sum(values(trace(fig, "attention").y)) == pytest.approx(1.0)
    assert list(values(trace(fig, "kept").x))[:2] == [0, 3]
    assert "bins of 3" in fig.layout.title.text


def test_norm_scatter_bytes_and_step():
    fig = sp.norm_figure([1.0, 2.0, 3.0], [0.5, 0.3, 0.2], "en", rho=-1.0)
    assert list(values(trace(fig, "tokens").x)) == [1, 2, 3]
    assert "(Spearman rank correlation -1.00)" in fig.layout.title.text
    assert fig.layout.yaxis.type == "log"
    gib = 1 << 30
    fig = sp.memory_figure({"dense": 4 * gib, "stored": gib, "read": 2 * gib}, "en")
    bars = trace(fig, "bytes")
    assert list(values(bars.x)) == [4, 1, 2]
    assert list(bars.text) == ["4.00 GiB (100%)", "1.00 GiB (25%)", "2.00 GiB (50%)"]
    fig = sp.time_figure(10e6, 6e6, 0.5e6, "en")
    assert list(values(trace(fig, "step").x)) == [10, 6, 6]
    assert list(values(trace(fig, "compress").x)) == [0, 0, 0.5]
    assert list(trace(fig, "step").text) == ["10.000 ms", "6.000 ms", "6.500 ms"]
    assert fig.layout.barmode == "stack"


def test_empty_inputs_give_messages():
    empty = pd.DataFrame(columns=["policy", "keep_ratio", "kept", *sp.METRICS])
    assert "No keep ratios" in sp.accuracy_figure(empty).layout.annotations[0].text
    assert "No tokens" in sp.kept_figure(pd.DataFrame(), pd.Series(dtype=float)) \
        .layout.annotations[0].text
    assert "No keys" in sp.norm_figure([], []).layout.annotations[0].text
    assert "No KV bytes" in sp.memory_figure({}).layout.annotations[0].text
    assert "No step" in sp.time_figure(0, 0, 0).layout.annotations[0].text


def test_chinese_figures(data):
    summary = ss.summary(ss.study(data, keep_ratios=(0.5, 1.0)))
    fig = sp.accuracy_figure(summary, "zh")
    assert trace(fig, "mass_recall:norm_low").name == "最小范数（Devoto）"
    assert fig.layout.title.text == "各策略随保留比例的变化"
    assert "稀疏" in [*sp.time_figure(2.0, 1.0, 0.0, "zh").data[0].y][1]
