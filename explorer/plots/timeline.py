"""Per-core x per-pipe timeline: exact segments when few, the busy time at the chart's
pixels when many on few lanes, a utilisation heat map when many on many lanes.

A browser draws a few thousand bars comfortably but not a million, and a million bars would
be unreadable anyway. Above ``max_segments`` the figure carries only what is drawn: each
lane's busy time merged at pixel resolution (``lane_time.pixel_bars``: busy time kept,
segments longer than a pixel exact), or, for many lanes or too many bars, the fraction
of every time bin each lane was busy; picking cores or a time window brings the exact
segments back (the trace download always has them). Everything here is vectorised:
10^6 instructions aggregate in well under 1 s.

A DMA pipe (MTE2, MTE3, FIXP writing to GM) is a queue: a GM copy holds its pipe only while
it issues (``start_ns`` .. ``issue_end_ns``, the full-height bar), then is in flight until its
data arrives (``end_ns``, a thin bar). Copies in flight at once are stacked in sub-lanes of
their lane; the heat map counts a lane busy while it issues or has a copy in flight, once
however many copies overlap (the union, as the pipe ratios count it).
"""
from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from explorer.plots.lane_time import (
    DISPLAY_PX,
    lane_order,
    lane_utilisation,
    pixel_bars,
)
from explorer.plots.style import (
    PIPE_COLOURS,
    PIPES,
    base_layout,
    empty_figure,
    format_bytes,
    msg,
    pipe_codes,
    pipe_name,
)
from explorer.plots.text import WIDE_PX

HEATMAP_BINS = 400
#: a long timeline of at most this many lanes is drawn as bars at the chart's pixels
#: (8 cores x 7 pipes); more lanes become the heat map (a bar chart would be too tall)
MAX_BAR_LANES = 56
_NS_PER_US = 1000.0
#: in the exact view: the band a lane's bars fill (1 - bargap), the thickness of a thin
#: in-flight bar, and the most sub-lanes copies in flight are stacked in before they overlap
_BAND = 0.75
_THIN = 0.3
MAX_SUBLANES = 4
_THIN_OPACITY = 0.55


def _filter(timeline: pd.DataFrame, cores: Iterable[int] | None,
            window: tuple[float, float] | None) -> pd.DataFrame:
    """Rows of the chosen cores that overlap the window (both optional)."""
    keep = np.ones(len(timeline), dtype=bool)
    if cores is not None:
        keep &= np.isin(timeline["core"].to_numpy(), np.fromiter(cores, dtype=np.int64))
    if window is not None:
        t0, t1 = float(window[0]), float(window[1])
        keep &= (timeline["end_ns"].to_numpy() > t0) & (timeline["start_ns"].to_numpy() < t1)
    return timeline if keep.all() else timeline.loc[keep]


def issue_ends(timeline: pd.DataFrame) -> np.ndarray:
    """Each row's end of issue: ``issue_end_ns`` (= ``end_ns`` but for GM copies), within
    [start_ns, end_ns]; a table without the column issues until the end."""
    start = timeline["start_ns"].to_numpy(dtype=np.float64)
    end = timeline["end_ns"].to_numpy(dtype=np.float64)
    if "issue_end_ns" not in timeline:
        return end.copy()
    issued = timeline["issue_end_ns"].to_numpy(dtype=np.float64)
    return np.minimum(np.maximum(issued, start), end)


def flight_sublanes(start: np.ndarray, end: np.ndarray, lane: np.ndarray,
                    max_sublanes: int = MAX_SUBLANES) -> tuple[np.ndarray, np.ndarray]:
    """Sub-lane of each in-flight span and the number of sub-lanes of its lane.

    A lane's spans, in start order, take sub-lanes round robin (rank mod k) with the smallest
    k <= ``max_sublanes`` under which no two spans of a sub-lane overlap; a DMA queue whose
    copies arrive in order needs k = its peak number of copies in flight. A lane no such k
    fits keeps ``max_sublanes`` and its spans may overlap (drawn translucent). Vectorised:
    one pass over the sorted spans per k.
    """
    start = np.asarray(start, dtype=np.float64)
    end = np.asarray(end, dtype=np.float64)
    lane = np.asarray(lane, dtype=np.int64)
    n = len(start)
    if n == 0:
        return np.zeros(0, dtype=np.int64), np.ones(0, dtype=np.int64)
    order = lane_order(lane, start, stable=True)
    s, e, g = start[order], end[order], lane[order]
    pos = np.arange(n)
    first = np.concatenate([[True], g[1:] != g[:-1]])
    rank = pos - np.maximum.accumulate(np.where(first, pos, 0))
    lanes_present = np.unique(g)
    n_sub = np.full(int(g.max()) + 1, max_sublanes, dtype=np.int64)
    undecided = np.zeros(len(n_sub), dtype=bool)
    undecided[lanes_present] = True
    for k in range(1, max_sublanes + 1):
        clash = np.zeros(len(n_sub), dtype=bool)
        if k < n:  # spans k apart in a lane share a sub-lane: the later must start after
            bad = (g[k:] == g[:-k]) & (s[k:] < e[:-k])
            clash[g[k:][bad]] = True
        fits = undecided & ~clash
        n_sub[fits] = k
        undecided &= ~fits
        if not undecided.any():
            break
    sub = np.empty(n, dtype=np.int64)
    count = np.empty(n, dtype=np.int64)
    count[order] = n_sub[g]
    sub[order] = rank % n_sub[g]
    return sub, count


def lanes(timeline: pd.DataFrame) -> tuple[np.ndarray, list[str], np.ndarray]:
    """Assign rows to lanes ordered by core then pipe order.

    Returns (lane index per row, lane labels "AIV3 · MTE2", pipe code per lane). Rows whose
    pipe is not one of the seven lanes get lane -1. O(n) with bincount, no sort per lane.
    """
    codes = pipe_codes(timeline["pipe"])
    cores = timeline["core"].to_numpy(dtype=np.int64)
    valid = codes >= 0
    keys = np.where(valid, cores * len(PIPES) + codes, 0)
    if not valid.any():
        return np.full(len(codes), -1), [], np.array([], dtype=np.int64)
    present = np.bincount(keys[valid], minlength=int(keys.max()) + 1) > 0
    lane_of_key = np.cumsum(present) - 1
    lane = np.where(valid, lane_of_key[keys], -1)
    row_of_key = np.zeros(len(present), dtype=np.int64)
    row_of_key[keys[valid]] = np.flatnonzero(valid)  # any row of the lane names its core
    lane_keys = np.flatnonzero(present)
    names = timeline["core_name"].to_numpy()[row_of_key[lane_keys]]
    lane_pipes = lane_keys % len(PIPES)
    labels = [f"{name} · {PIPES[p]}" for name, p in zip(names, lane_pipes)]
    return lane, labels, lane_pipes


def _us(ns: np.ndarray) -> np.ndarray:
    """Nanoseconds as µs to the femtosecond: exact for any clock and short in the figure's
    JSON, where a bar's base and its hover columns travel as decimal text."""
    return np.round(np.asarray(ns, dtype=np.float64) / _NS_PER_US, 6)


def _rgba(colour: str, alpha: float) -> str:
    """'#RRGGBB' as an rgba() string with the given opacity."""
    r, g, b = (int(colour[i:i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r},{g},{b},{alpha})"


def _exact_traces(fig: go.Figure, rows: pd.DataFrame, lane: np.ndarray,
                  labels: list[str], lang: str) -> bool:
    """Horizontal bars per pipe (base = start, length = duration, in µs); True if any GM
    copy was in flight.

    Per pipe, up to three traces, one legend group: the full-height bars of compute and
    on-chip instructions, the full-height issue slots of GM copies (start .. issue end),
    and the thin, translucent in-flight bars of those copies (issue end .. arrival), stacked
    in sub-lanes (:func:`flight_sublanes`) and drawn last, so they show over later issues.
    """
    codes = pipe_codes(rows["pipe"])
    start = rows["start_ns"].to_numpy(dtype=np.float64)
    end = rows["end_ns"].to_numpy(dtype=np.float64)
    issued = issue_ends(rows)
    copy = (issued < end) & (lane >= 0)  # a GM copy: issued, then in flight
    hover_segment = msg("timeline.hover_segment", lang, op="%{customdata[0]}",
                        start="%{customdata[1]:.3f}", end="%{customdata[2]:.3f}",
                        bytes="%{customdata[3]}", served_from="%{customdata[4]}")
    hover_copy = msg("timeline.hover_copy", lang, op="%{customdata[0]}",
                     start="%{customdata[1]:.3f}", issue_end="%{customdata[5]:.3f}",
                     end="%{customdata[2]:.3f}", bytes="%{customdata[3]}",
                     served_from="%{customdata[4]}")
    label_arr = np.asarray(labels, dtype=object)
    sub, n_sub = flight_sublanes(issued[copy], end[copy], lane[copy])
    sublane = np.zeros(len(rows), dtype=np.int64)
    sublanes = np.ones(len(rows), dtype=np.int64)
    sublane[copy], sublanes[copy] = sub, n_sub
    flights = []
    for code, pipe in enumerate(PIPES):
        on_pipe = (codes == code) & (lane >= 0)
        if not on_pipe.any():
            continue
        sub_rows = rows.loc[on_pipe]
        custom = np.column_stack([
            sub_rows["op"].to_numpy(dtype=object), _us(start[on_pipe]), _us(end[on_pipe]),
            [format_bytes(b) if b else "-" for b in sub_rows["bytes"].to_numpy()],
            [s if s else "-" for s in sub_rows["served_from"].to_numpy(dtype=object)],
            _us(issued[on_pipe])])
        is_copy = copy[on_pipe]
        name = pipe_name(pipe, lang)
        shown = False
        for part, hover in ((~is_copy, hover_segment), (is_copy, hover_copy)):
            if not part.any():
                continue
            sel = np.flatnonzero(on_pipe)[part]
            fig.add_trace(go.Bar(
                orientation="h", y=label_arr[lane[sel]], base=_us(start[sel]),
                x=_us(issued[sel] - start[sel]), name=name, legendgroup=pipe,
                showlegend=not shown,
                marker=dict(color=PIPE_COLOURS[pipe], line=dict(width=0)),
                customdata=custom[part], hovertemplate=hover + "<extra>%{y}</extra>"))
            shown = True
        if is_copy.any():
            flights.append((pipe, np.flatnonzero(on_pipe)[is_copy], custom[is_copy],
                            hover_copy))
    for pipe, sel, custom, hover in flights:
        slot = _BAND / sublanes[sel]
        thick = np.minimum(_THIN, 0.8 * slot)
        offset = -_BAND / 2 + (sublane[sel] + 0.5) * slot - thick / 2
        fig.add_trace(go.Bar(
            orientation="h", y=label_arr[lane[sel]], base=_us(issued[sel]),
            x=_us(end[sel] - issued[sel]), width=thick, offset=offset,
            name=msg("timeline.in_flight", lang, pipe=pipe), legendgroup=pipe,
            marker=dict(color=_rgba(PIPE_COLOURS[pipe], _THIN_OPACITY),
                        line=dict(color="rgba(0,0,0,0.45)", width=0.5)),
            customdata=custom, hovertemplate=hover + "<extra>%{y}</extra>"))
    return bool(flights)


def _exact_figure(rows: pd.DataFrame, lane: np.ndarray, labels: list[str], lang: str,
                  x_range: tuple[float, float]) -> go.Figure:
    """Exact segments, one lane per (core, pipe), first lane at the top; a caption explains
    the thin in-flight bars when there are any."""
    fig = go.Figure()
    in_flight = _exact_traces(fig, rows, lane, labels, lang)
    title = msg("timeline.title_exact", lang, segments=len(rows))
    caption = msg("timeline.caption_in_flight", lang) if in_flight else ""
    base_layout(fig, title, caption=caption, caption_px=WIDE_PX, barmode="overlay",
                bargap=1.0 - _BAND,
                height=max(300, 22 * len(labels) + 160) + (40 if in_flight else 0))
    fig.update_xaxes(title_text=msg("timeline.x_title", lang),
                     range=[x_range[0] / _NS_PER_US, x_range[1] / _NS_PER_US])
    fig.update_yaxes(categoryorder="array", categoryarray=labels, autorange="reversed",
                     title_text=msg("timeline.y_title", lang))
    return fig


def _heatmap_figure(rows: pd.DataFrame, lane: np.ndarray, labels: list[str], lang: str,
                    x_range: tuple[float, float], max_segments: int) -> go.Figure:
    """Utilisation of every lane over ``HEATMAP_BINS`` time bins."""
    t0, t1 = x_range
    ok = lane >= 0
    util = lane_utilisation(rows["start_ns"].to_numpy()[ok], rows["end_ns"].to_numpy()[ok],
                            lane[ok], len(labels), t0, t1, HEATMAP_BINS)
    centres = t0 + (np.arange(HEATMAP_BINS) + 0.5) * (t1 - t0) / HEATMAP_BINS
    hover = msg("timeline.hover_heat", lang, lane="%{y}", time="%{x:.3f}", util="%{z:.0%}")
    fig = go.Figure(go.Heatmap(
        z=util, x=centres / _NS_PER_US, y=labels, zmin=0.0, zmax=1.0, colorscale="Viridis",
        colorbar=dict(title=dict(text=msg("timeline.colorbar", lang)), tickformat=".0%"),
        hovertemplate=hover + "<extra></extra>"))
    caption = msg("figures.timeline.heat", lang, segments=len(rows), max_segments=max_segments)
    base_layout(fig, msg("timeline.title_heat", lang), caption=caption, caption_px=WIDE_PX,
                height=max(300, 16 * len(labels) + 200))
    fig.update_xaxes(title_text=msg("timeline.x_title", lang))
    fig.update_yaxes(autorange="reversed", title_text=msg("timeline.y_title", lang))
    return fig


def _pixel_figure(bars: tuple[np.ndarray, np.ndarray, np.ndarray], segments: int,
                  labels: list[str], lane_pipes: np.ndarray, lang: str,
                  x_range: tuple[float, float]) -> go.Figure:
    """Each lane's busy time as the bars ``pixel_bars`` merged at the chart's pixels: one
    trace per pipe, numbers only (lanes by index, named by the axis ticks)."""
    start, end, g = bars
    hover = msg("timeline.hover_pixels", lang, start="%{customdata[0]:.3f}",
                end="%{customdata[1]:.3f}")
    fig = go.Figure()
    for code in np.unique(lane_pipes[g]):
        sel = lane_pipes[g] == code
        pipe = PIPES[code]
        fig.add_trace(go.Bar(
            orientation="h", y=g[sel], base=_us(start[sel]), x=_us(end[sel] - start[sel]),
            name=pipe_name(pipe, lang), legendgroup=pipe,
            marker=dict(color=PIPE_COLOURS[pipe], line=dict(width=0)),
            customdata=np.column_stack([start[sel], end[sel]]) / _NS_PER_US,
            hovertemplate=hover + "<extra></extra>"))
    title = msg("timeline.title_pixels", lang, segments=segments, bars=len(start))
    base_layout(fig, title, caption=msg("figures.timeline.pixels", lang), caption_px=WIDE_PX,
                barmode="overlay", bargap=1.0 - _BAND, height=max(300, 22 * len(labels) + 180))
    fig.update_xaxes(title_text=msg("timeline.x_title", lang),
                     range=[x_range[0] / _NS_PER_US, x_range[1] / _NS_PER_US])
    fig.update_yaxes(tickvals=np.arange(len(labels)), ticktext=labels, autorange="reversed",
                     title_text=msg("timeline.y_title", lang))
    return fig


def timeline_figure(timeline: pd.DataFrame, makespan_ns: float, lang: str = "en", *,
                    max_segments: int = 4000, cores: Iterable[int] | None = None,
                    window: tuple[float, float] | None = None,
                    width_px: int = DISPLAY_PX, max_bar_lanes: int = MAX_BAR_LANES) -> go.Figure:
    """Per-core x per-pipe timeline (x in µs): exact segments up to ``max_segments``; above,
    up to ``max_bar_lanes`` lanes, the busy time at ``width_px`` pixels if that takes at
    most ``max_segments`` bars; else a utilisation heat map."""
    rows = _filter(timeline, cores, window) if len(timeline) else timeline
    if len(rows) == 0:
        return empty_figure(msg("timeline.empty", lang), msg("timeline.title_empty", lang))
    lane, labels, lane_pipes = lanes(rows)
    if not labels:
        return empty_figure(msg("timeline.empty", lang), msg("timeline.title_empty", lang))
    if window is not None:
        x_range = (float(window[0]), float(window[1]))
    else:
        x_range = (0.0, max(float(makespan_ns or 0.0), float(rows["end_ns"].max())))
    if x_range[1] <= x_range[0]:
        x_range = (x_range[0], x_range[0] + 1.0)
    if len(rows) <= max_segments:
        return _exact_figure(rows, lane, labels, lang, x_range)
    ok = lane >= 0
    if len(labels) <= max_bar_lanes:
        bars = pixel_bars(rows["start_ns"].to_numpy()[ok], rows["end_ns"].to_numpy()[ok],
                          lane[ok], len(labels), *x_range, width_px)
        if len(bars[0]) <= max_segments:
            return _pixel_figure(bars, len(rows), labels, lane_pipes, lang, x_range)
    return _heatmap_figure(rows, lane, labels, lang, x_range, max_segments)
