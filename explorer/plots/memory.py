"""Memory figures: bytes moved per path and HBM / L2 throughput over time.

Traffic shows where data went (and whether GM reads hit L2, HBM or a multicast); the
bandwidth plot shows whether the kernel ran against the HBM roof and when.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from explorer.core.tables import binned_rate, step_points
from explorer.plots.style import (
    SOURCE_COLOURS,
    SOURCE_ORDER,
    base_layout,
    byte_unit,
    empty_figure,
    format_bytes,
    msg,
    reference_line,
    source_name,
)

_NS_PER_US = 1000.0
#: above this many segments the throughput is drawn as averages over this many time bins
#: (thousands of short bursts would otherwise alias into a solid band at the peak)
MAX_SEGMENTS = 2000
BINS = 400
#: the throughput columns of ``Result.bandwidth``: their legend name (message id), colour
RATES = {"hbm_GBps": "bandwidth.hbm", "l2_GBps": "bandwidth.l2"}
RATE_COLOURS = {"hbm_GBps": SOURCE_COLOURS["HBM"], "l2_GBps": SOURCE_COLOURS["L2"]}


def traffic_figure(traffic: pd.DataFrame, lang: str = "en") -> go.Figure:
    """Bytes per path (largest first), stacked by where GM reads were served from."""
    if len(traffic) == 0 or float(traffic["bytes"].sum()) <= 0:
        return empty_figure(msg("traffic.empty", lang), msg("traffic.title_empty", lang))
    table = traffic.assign(served_from=traffic["served_from"].fillna("").astype(str))
    grid = table.groupby(["path", "served_from"], observed=True)[["bytes", "count"]].sum() \
        .unstack(fill_value=0)  # a pivot table, at half the cost
    order = grid["bytes"].sum(axis=1).sort_values(ascending=False).index
    grid = grid.loc[order]
    divisor, unit = byte_unit(grid["bytes"].sum(axis=1).max())
    sources = [s for s in SOURCE_ORDER if s in grid["bytes"].columns]
    sources += [s for s in grid["bytes"].columns if s not in sources]
    fig = go.Figure()
    hover = msg("traffic.hover", lang, path="%{x}", source="%{fullData.name}",
                bytes="%{customdata[0]}", count="%{customdata[1]}")
    for source in sources:
        values = grid["bytes"][source].to_numpy(dtype=np.float64)
        counts = grid["count"][source].to_numpy()
        custom = np.column_stack([[format_bytes(v) for v in values], counts]).astype(object)
        fig.add_trace(go.Bar(x=list(order), y=values / divisor, name=source_name(source, lang),
                             marker_color=SOURCE_COLOURS.get(source, "#999999"),
                             customdata=custom, hovertemplate=hover + "<extra></extra>"))
    base_layout(fig, msg("traffic.title", lang, total=format_bytes(grid["bytes"].sum().sum())),
                barmode="stack")
    fig.update_xaxes(title_text=msg("traffic.x_title", lang))
    fig.update_yaxes(title_text=msg("traffic.y_title", lang, unit=unit))
    return fig


def _peak_line(fig: go.Figure, peak: float | None, text_id: str, colour: str,
               lang: str) -> None:
    """A dashed horizontal line at a bandwidth peak, skipped when the peak is unknown."""
    if peak is None or not np.isfinite(peak) or peak <= 0:
        return
    text = msg(text_id, lang, value=f"{peak:,.0f}")
    reference_line(fig, "y", float(peak), dict(dash="dash", color=colour, width=1.5), text)


def idle_gaps(t0: np.ndarray, t1: np.ndarray, rate: np.ndarray) -> np.ndarray:
    """(start, end) rows of the stretches where nothing streams (rate 0, or no segment at
    all) between the first and the last moment something does."""
    order = np.argsort(t0, kind="stable")
    t0, t1, rate = t0[order], t1[order], rate[order]
    moving = np.flatnonzero(rate > 0)
    if moving.size < 2:
        return np.zeros((0, 2))
    inside = slice(moving[0], moving[-1] + 1)
    x, y = step_points(t0[inside], t1[inside], rate[inside])
    idle = np.flatnonzero((y[0::2] <= 0) & (x[1::2] > x[0::2]))
    return np.column_stack([x[0::2][idle], x[1::2][idle]])


def _drawn(t0: np.ndarray, t1: np.ndarray, rate: np.ndarray,
           binned: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The segments of a rate as the figure draws them: exact, or means over BINS bins."""
    return binned_rate(t0, t1, rate, BINS) if binned else (t0, t1, rate)


def _idle_caption(bandwidth: pd.DataFrame, binned: bool, lang: str) -> str:
    """Why the drawn throughput drops to 0 during the run, when it does; else ""."""
    t0, t1 = (bandwidth[c].to_numpy(np.float64) for c in ("t0_ns", "t1_ns"))
    total = sum(bandwidth[c].to_numpy(np.float64) for c in RATES if c in bandwidth)
    idle = idle_gaps(*_drawn(t0, t1, total, binned))
    return msg("figures.bandwidth.idle", lang) if len(idle) else ""


def bandwidth_figure(bandwidth: pd.DataFrame, hbm_peak_GBps: float, l2_peak_GBps: float,
                     lang: str = "en") -> go.Figure:
    """HBM and L2 throughput (GB/s) over time (µs) as step lines, peaks as dashed lines.
    Where the throughput drops to 0 during the run, the caption says why: no byte streams
    while every copy in flight still waits for its latency (MTE2 counts as busy then)."""
    if len(bandwidth) == 0:
        return empty_figure(msg("bandwidth.empty", lang), msg("bandwidth.title", lang))
    t0 = bandwidth["t0_ns"].to_numpy(dtype=np.float64)
    t1 = bandwidth["t1_ns"].to_numpy(dtype=np.float64)
    binned = len(t0) > MAX_SEGMENTS
    fig = go.Figure()
    hover = msg("bandwidth.hover", lang, time="%{x:.3f}", value="%{y:,.1f}")
    for column in (c for c in RATES if c in bandwidth):
        x, y = step_points(*_drawn(t0, t1, bandwidth[column].to_numpy(np.float64), binned))
        fig.add_trace(go.Scatter(x=x / _NS_PER_US, y=y, mode="lines", name=msg(RATES[column], lang),
                                 line=dict(color=RATE_COLOURS[column], width=2),
                                 hovertemplate=hover + "<extra>%{fullData.name}</extra>"))
    _peak_line(fig, hbm_peak_GBps, "bandwidth.hbm_peak", SOURCE_COLOURS["HBM"], lang)
    _peak_line(fig, l2_peak_GBps, "bandwidth.l2_peak", SOURCE_COLOURS["L2"], lang)
    width = (t1.max() - t0.min()) / BINS / _NS_PER_US
    notes = [msg("bandwidth.binned", lang, width=f"{width:.3g}") if binned else "",
             _idle_caption(bandwidth, binned, lang)]
    base_layout(fig, msg("bandwidth.title", lang), caption=notes, hovermode="x unified")
    fig.update_xaxes(title_text=msg("bandwidth.x_title", lang))
    fig.update_yaxes(title_text=msg("bandwidth.y_title", lang), rangemode="tozero")
    return fig
