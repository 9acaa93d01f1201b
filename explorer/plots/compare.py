"""Figures of the Compare page: the two runs' timelines stacked on one shared time axis,
bytes per path of A next to B, and B / A for every metric.

The timelines reuse ``explorer.plots.timeline``: the exact per-core x per-pipe segments
when both runs are small, else one row per core whose colour is the core's busiest pipe's
share of each time bin (a per-core utilisation heat map; 48 cores stay readable where 150
lanes would not). Both rows cover the same time range, so the shorter run visibly ends
early. Pure functions of ``Result`` / ``Comparison``; no streamlit. Every trace carries a
``meta`` tag ("A", "B", "ratio") that tests can find.
"""
from __future__ import annotations

import html

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from explorer.core.compare import EPS, TEXT_METRICS, Comparison
from explorer.core.i18n import t
from explorer.core.metrics import METRIC_LABEL_IDS
from explorer.core.simulate import Result
from explorer.plots.style import (
    base_layout,
    byte_unit,
    empty_figure,
    format_bytes,
    log_axis,
    log_span,
    msg,
    reference_line,
)
from explorer.plots.timeline import HEATMAP_BINS, lane_utilisation, lanes, timeline_figure

SIDES = ("A", "B")
SIDE_COLOURS = {"A": "#7F7F7F", "B": "#0072B2"}
#: both runs together at most this many segments and lanes: exact timelines, else heat maps
MAX_SEGMENTS = 4000
MAX_LANES = 48
MIN_ROWS = 4  # a run on one core still gets a readable band
BARRIER = "SyncAll"
_NS_PER_US = 1000.0


def _m(msg_id: str, lang: str, **values: object) -> str:
    return msg(f"compare.{msg_id}", lang, **values)


def _side_title(side: str, result: Result, lang: str) -> str:
    """"A: <name> (x µs)"; the name may come from an uploaded file, so it is escaped."""
    name = html.escape(result.scenario.name or result.scenario.kernel)
    return _m("side_title", lang, side=side, name=name, us=f"{result.metrics['makespan_us']:,.2f}")


# ---- per-core utilisation ----------------------------------------------------------------
def core_utilisation(timeline: pd.DataFrame, t0: float, t1: float,
                     bins: int = HEATMAP_BINS) -> tuple[np.ndarray, list[str]]:
    """Per core and time bin, the busiest of its pipes' busy share: (cores x bins, names).

    Waiting at a SyncAll barrier is not work: those rows are left out, so a core that only
    waits has no row. ``lanes`` orders lanes by core then pipe, so a core's lanes are
    contiguous and one ``maximum.reduceat`` folds them."""
    timeline = timeline[timeline["op"] != BARRIER]
    lane, labels, _ = lanes(timeline)
    if not labels:
        return np.zeros((0, bins)), []
    ok = lane >= 0
    util = lane_utilisation(timeline["start_ns"].to_numpy()[ok], timeline["end_ns"].to_numpy()[ok],
                            lane[ok], len(labels), t0, t1, bins)
    cores = [label.split(" · ")[0] for label in labels]
    starts = [i for i, name in enumerate(cores) if i == 0 or name != cores[i - 1]]
    return np.maximum.reduceat(util, starts, axis=0), [cores[i] for i in starts]


def _heat_traces(result: Result, side: str, end_ns: float, lang: str) -> tuple[list, list]:
    """The per-core heat map (colour bar once, on A) and its core names."""
    util, names = core_utilisation(result.timeline, 0.0, end_ns)
    centres = (np.arange(HEATMAP_BINS) + 0.5) * end_ns / HEATMAP_BINS / _NS_PER_US
    hover = _m("hover_heat", lang, core="%{y}", time="%{x:.3f}", util="%{z:.0%}")
    trace = go.Heatmap(z=util, x=centres, y=names, zmin=0.0, zmax=1.0, colorscale="Viridis",
                       showscale=side == "A", meta=side, hovertemplate=hover + "<extra></extra>",
                       colorbar=dict(title=dict(text=_m("colorbar", lang)), tickformat=".0%"))
    return [trace], names


def _exact_traces(result: Result, side: str, end_ns: float, lang: str) -> tuple[list, list]:
    """The exact timeline's bar traces (legend once, on A) and its lane labels."""
    fig = timeline_figure(result.timeline, result.makespan_ns, lang, window=(0.0, end_ns),
                          max_segments=MAX_SEGMENTS)
    for trace in fig.data:
        trace.update(meta=side, legendgroup=trace.name, showlegend=side == "A")
    return list(fig.data), list(fig.layout.yaxis.categoryarray or [])


def _exact(results: tuple[Result, Result]) -> bool:
    """Whether both runs together are small enough to draw every instruction."""
    if sum(len(r.timeline) for r in results) > MAX_SEGMENTS:
        return False
    return sum(len(lanes(r.timeline)[1]) for r in results) <= MAX_LANES


def timelines_figure(a: Result, b: Result, lang: str = "en") -> go.Figure:
    """A above B on one time axis (µs): exact segments when small, else per-core heat maps."""
    if not len(a.timeline) and not len(b.timeline):
        return empty_figure(msg("timeline.empty", lang), msg("timeline.title_empty", lang))
    end_ns = max(a.makespan_ns, b.makespan_ns, 1.0)
    exact = _exact((a, b))
    build = _exact_traces if exact else _heat_traces
    rows = [build(result, side, end_ns, lang) for side, result in zip(SIDES, (a, b))]
    sizes = [max(len(labels), MIN_ROWS) for _, labels in rows]
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.1,
                        row_heights=[s / sum(sizes) for s in sizes],
                        subplot_titles=[_side_title(s, r, lang) for s, r in zip(SIDES, (a, b))])
    for row, (traces, labels) in enumerate(rows, start=1):
        for trace in traces:
            fig.add_trace(trace, row=row, col=1)
        fig.update_yaxes(autorange="reversed", categoryorder="array", categoryarray=labels,
                         row=row, col=1)
    title = _m("title_exact" if exact else "title_heat", lang)
    base_layout(fig, title, barmode="overlay", bargap=0.25,
                height=max(420, (22 if exact else 16) * sum(sizes) + 220),
                legend=dict(orientation="v", yref="paper", x=1.01, y=1.0, yanchor="top"))
    fig.update_xaxes(range=[0.0, end_ns / _NS_PER_US])
    fig.update_xaxes(title_text=msg("timeline.x_title", lang), row=2, col=1)
    return fig


# ---- traffic by path ---------------------------------------------------------------------
def _bytes_by_path(traffic: pd.DataFrame) -> pd.Series:
    if not len(traffic):
        return pd.Series(dtype=np.float64)
    return traffic.groupby("path", observed=True)["bytes"].sum().astype(np.float64)


def traffic_figure(a: Result, b: Result, lang: str = "en") -> go.Figure:
    """Bytes moved per path, A's bar next to B's, paths by their larger total first."""
    grid = pd.concat({s: _bytes_by_path(r.traffic) for s, r in zip(SIDES, (a, b))},
                     axis=1).fillna(0.0)
    if grid.empty or float(grid.to_numpy().sum()) <= 0:
        return empty_figure(msg("traffic.empty", lang), msg("traffic.title_empty", lang))
    grid = grid.loc[grid.max(axis=1).sort_values(ascending=False).index]
    divisor, unit = byte_unit(float(grid.to_numpy().max()))
    fig = go.Figure()
    for side in SIDES:
        hover = _m("hover_traffic", lang, side=side, path="%{x}", bytes="%{customdata}")
        fig.add_trace(go.Bar(x=list(grid.index), y=grid[side] / divisor, name=side, meta=side,
                             marker_color=SIDE_COLOURS[side],
                             customdata=[format_bytes(v) for v in grid[side]],
                             hovertemplate=hover + "<extra></extra>"))
    base_layout(fig, _m("traffic_title", lang, a=format_bytes(grid["A"].sum()),
                        b=format_bytes(grid["B"].sum())), barmode="group")
    fig.update_xaxes(title_text=msg("traffic.x_title", lang))
    fig.update_yaxes(title_text=msg("traffic.y_title", lang, unit=unit))
    return fig


# ---- B / A per metric --------------------------------------------------------------------
def ratio_table(comparison: Comparison) -> pd.DataFrame:
    """Rows of the table positive in both runs (a log axis needs both > 0; a value below
    ``EPS`` is rounding noise, not a change)."""
    table = comparison.table[~comparison.table["metric"].isin(TEXT_METRICS)]
    a, b = table["a"].astype(float), table["b"].astype(float)
    return table[(a > EPS) & (b > EPS)]


def ratio_figure(comparison: Comparison, lang: str = "en") -> go.Figure:
    """B / A of every metric positive in both runs: bars from 1 (no change) to the ratio on
    a log axis (``base`` 1, length ratio − 1)."""
    table = ratio_table(comparison)
    if table.empty:
        return empty_figure(_m("ratio_empty", lang), _m("ratio_title", lang))
    labels = [t(METRIC_LABEL_IDS[name], lang) for name in table["metric"]]
    ratio = table["ratio"].to_numpy(dtype=np.float64)
    colours = np.where(ratio >= 1.0, SIDE_COLOURS["B"], "#D55E00")
    hover = _m("hover_ratio", lang, metric="%{y}", ratio="%{customdata:.3f}")
    fig = go.Figure(go.Bar(x=ratio - 1.0, base=1.0, y=labels, orientation="h", meta="ratio",
                           customdata=ratio, marker_color=list(colours),
                           hovertemplate=hover + "<extra></extra>"))
    reference_line(fig, "x", 1.0, dict(color="#000000", width=1))
    base_layout(fig, _m("ratio_title", lang), height=max(360, 22 * len(labels) + 140),
                showlegend=False)
    log_axis(fig, "xaxis", log_span([*ratio, 1.0], pad=0.1), "×",
             title_text=_m("ratio_x", lang))
    fig.update_yaxes(autorange="reversed")
    return fig
