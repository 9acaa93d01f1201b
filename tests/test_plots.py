"""Tests of explorer.plots: every figure builds from small synthetic tables and shows what it
should (lanes, segments, utilisation, ceilings, ridge points), in English and Chinese.

The emulator and the chip presets are written in parallel, so the tables here are built by
hand with the agreed columns and the chip is a SimpleNamespace stand-in.
"""
from __future__ import annotations

import string
import tomllib
from pathlib import Path

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest

from explorer.core.i18n import flatten_table
from explorer.plots import (
    bandwidth_figure,
    core_diagram_figure,
    load_balance_figure,
    pipe_ratio_figure,
    roofline_figure,
    traffic_figure,
)
from explorer.plots.memory import MAX_SEGMENTS, binned_rate, step_points
from explorer.plots.roofline import ridge_intensity
from explorer.plots.style import PIPES, format_bytes
from tests.plot_helpers import all_texts, chip_stub, coupled_stub

LOCALES = Path(__file__).resolve().parents[1] / "explorer" / "core" / "locales"


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
    # work as active time (no SyncAll) on AIC0..AIV3: 1, 2, 3, 4 µs; the busiest core is an
    # AIV, so the two AIV set the duration and the AIC are drawn grey, not counted
    per_core = make_per_core().assign(work_ns=lambda df: df["active_ns"])
    fig = load_balance_figure(per_core, "en")
    assert [trace.meta for trace in fig.data] == ["counted", "not_counted"]
    assert [list(trace.x) for trace in fig.data] == [["AIV2", "AIV3"], ["AIC0", "AIC1"]]
    assert fig.data[0].name == "AIV" and "AIC" in fig.data[1].name
    assert list(fig.data[0].y) == [3.0, 4.0]  # µs
    lines = sorted(shape.y0 for shape in fig.layout.shapes)
    assert lines == [pytest.approx(3.5), pytest.approx(4.0)]
    assert all(shape.showlegend and shape.name for shape in fig.layout.shapes)
    assert "87.5%" in fig.layout.title.text  # mean/max = 3.5 / 4
    assert all_texts(fig) != all_texts(load_balance_figure(per_core, "zh"))


def test_load_balance_draws_syncall_waits_apart_and_idle_cores_grey():
    # AIV3 waits 1 µs at a SyncAll, AIC1 only waits there: its work is 0
    per_core = make_per_core().assign(work_ns=[1000.0, 0.0, 3000.0, 3000.0])
    fig = load_balance_figure(per_core, "en")
    by_meta = {trace.meta: trace for trace in fig.data}
    assert list(by_meta) == ["counted", "not_counted", "idle", "waiting"]
    assert list(by_meta["counted"].x) == ["AIV2", "AIV3"]
    assert list(by_meta["not_counted"].x) == ["AIC0"]
    assert list(by_meta["idle"].x) == ["AIC1"] and list(by_meta["idle"].y) == [2.0]
    assert dict(zip(by_meta["waiting"].x, by_meta["waiting"].y)) == {
        "AIC0": 0.0, "AIV2": 0.0, "AIV3": 1.0}
    assert fig.layout.barmode == "stack"
    assert sorted(shape.y0 for shape in fig.layout.shapes) == [3.0, 3.0]  # balanced AIV


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
    ridges = [trace for trace in fig.data if trace.meta == "ridges"]  # one legend entry each
    hbm_ridge = 294.9e12 / (1600.0 * 1e9)
    l2_ridge = 294.9e12 / (7000.0 * 1e9)
    assert ridge_intensity(294.9, 1600.0) == pytest.approx(hbm_ridge)
    assert sorted(r.x[0] for r in ridges) == pytest.approx(
        sorted([hbm_ridge, l2_ridge, 18.432e12 / 1600e9]))
    assert "HBM ridge 184 flop/B" in [r.name for r in ridges]
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

