"""Memory figures: bytes moved per path and HBM / L2 throughput over time.

Traffic shows where data went (and whether GM reads hit L2, HBM or a multicast); the
bandwidth plot shows whether the kernel ran against the HBM roof and when.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

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


def step_points(t0: np.ndarray, t1: np.ndarray, value: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Corner points of a piecewise-constant signal; gaps between segments read as zero."""
    order = np.argsort(t0, kind="stable")
    t0, t1, value = t0[order], t1[order], value[order]
    gap = np.flatnonzero(t0[1:] > t1[:-1])
    t0, t1 = np.insert(t0, gap + 1, t1[gap]), np.insert(t1, gap + 1, t0[gap + 1])
    value = np.insert(value, gap + 1, 0.0)
    x = np.column_stack([t0, t1]).ravel()
    y = np.column_stack([value, value]).ravel()
    return x, y


def binned_rate(t0: np.ndarray, t1: np.ndarray, value: np.ndarray,
                bins: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Average of a piecewise-constant rate over ``bins`` equal time bins: (bin starts,
    bin ends, mean rate). Exact: each bin's mean is the integral of the rate over it (the
    bytes moved) divided by its width, so the bytes are conserved."""
    order = np.argsort(t0, kind="stable")
    t0, t1, value = t0[order], t1[order], value[order]
    cum_end = np.cumsum(value * (t1 - t0))
    xp = np.column_stack([t0, t1]).ravel()  # the integral is linear inside a segment
    fp = np.column_stack([cum_end - value * (t1 - t0), cum_end]).ravel()
    edges = np.linspace(t0[0], t1.max(), bins + 1)
    cum = np.interp(edges, xp, fp)
    return edges[:-1], edges[1:], np.diff(cum) / np.diff(edges)


def _peak_line(fig: go.Figure, peak: float | None, text_id: str, colour: str,
               lang: str) -> None:
    """A dashed horizontal line at a bandwidth peak, skipped when the peak is unknown."""
    if peak is None or not np.isfinite(peak) or peak <= 0:
        return
    text = msg(text_id, lang, value=f"{peak:.0f}")
    reference_line(fig, "y", float(peak), dict(dash="dash", color=colour, width=1.5), text)


def bandwidth_figure(bandwidth: pd.DataFrame, hbm_peak_GBps: float, l2_peak_GBps: float,
                     lang: str = "en") -> go.Figure:
    """HBM and L2 throughput (GB/s) over time (µs) as step lines, peaks as dashed lines."""
    if len(bandwidth) == 0:
        return empty_figure(msg("bandwidth.empty", lang), msg("bandwidth.title", lang))
    t0 = bandwidth["t0_ns"].to_numpy(dtype=np.float64)
    t1 = bandwidth["t1_ns"].to_numpy(dtype=np.float64)
    binned = len(t0) > MAX_SEGMENTS
    fig = go.Figure()
    for column, name_id, colour in (("hbm_GBps", "bandwidth.hbm", SOURCE_COLOURS["HBM"]),
                                    ("l2_GBps", "bandwidth.l2", SOURCE_COLOURS["L2"])):
        if column not in bandwidth:
            continue
        rate = bandwidth[column].to_numpy(dtype=np.float64)
        x, y = step_points(*(binned_rate(t0, t1, rate, BINS) if binned else (t0, t1, rate)))
        hover = msg("bandwidth.hover", lang, time="%{x:.3f}", value="%{y:.1f}")
        fig.add_trace(go.Scatter(x=x / _NS_PER_US, y=y, mode="lines",
                                 name=msg(name_id, lang),
                                 line=dict(color=colour, width=2),
                                 hovertemplate=hover + "<extra>%{fullData.name}</extra>"))
    _peak_line(fig, hbm_peak_GBps, "bandwidth.hbm_peak", SOURCE_COLOURS["HBM"], lang)
    _peak_line(fig, l2_peak_GBps, "bandwidth.l2_peak", SOURCE_COLOURS["L2"], lang)
    width = (t1.max() - t0.min()) / BINS / _NS_PER_US
    title = msg("bandwidth.title", lang) + (msg("bandwidth.binned", lang, width=f"{width:.3g}")
                                            if binned else "")
    base_layout(fig, title, hovermode="x unified")
    fig.update_xaxes(title_text=msg("bandwidth.x_title", lang))
    fig.update_yaxes(title_text=msg("bandwidth.y_title", lang), rangemode="tozero")
    return fig
