"""Sweep figures: a metric against one swept parameter (one line per value of a second
one), or a heat map over two parameters. Refused points are gaps: the line breaks and
the heat map cell stays empty, and a grey cross at the bottom of the plot (or the empty
cell) says in its hover why the point was refused.

Pure functions of the sweep table (``explorer.core.sweep.SweepResult.table``); the
caller passes the axis labels and the refusal texts in the reader's language. Traces
carry a ``meta`` tag ("line", "refused", "heatmap") that tests and callers can find.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from explorer.core.i18n import t
from explorer.core.metrics import METRIC_LABEL_IDS, METRICS
from explorer.plots import style
from explorer.plots.style import base_layout, empty_figure, msg

PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442",
           "#7F7F7F")
REFUSED_COLOUR = "#7F7F7F"
#: a numeric axis spanning at least this ratio (all values > 0) is drawn logarithmic
LOG_RATIO = 16


def _m(msg_id: str, lang: str, **values: object) -> str:
    return msg(f"sweep.{msg_id}", lang, **values)


def metric_label(metric: str, lang: str) -> str:
    """``Kernel duration (µs)``: the metric's translated name and its unit."""
    unit = METRICS.get(metric, "")
    label = t(METRIC_LABEL_IDS[metric], lang) if metric in METRICS else metric
    return f"{label} ({unit})" if unit else label


def log_axis(values) -> bool:
    """Whether a swept axis reads better on a log scale (positive, spanning >= 16x)."""
    numbers = pd.to_numeric(pd.Series(values), errors="coerce").dropna()
    return len(numbers) > 2 and bool((numbers > 0).all()) and \
        numbers.max() / numbers.min() >= LOG_RATIO


def _reasons(table: pd.DataFrame, reasons: pd.Series | None) -> pd.Series:
    """The hover text of each refused row (the table's own message unless given)."""
    base = table["error"].fillna("").astype(str)
    return base if reasons is None else reasons.reindex(table.index).fillna(base)


def _refused_trace(table: pd.DataFrame, x: str, text: pd.Series, lang: str) -> go.Scatter:
    """Grey crosses at the bottom of the plot (a y axis of its own) for refused points."""
    bad = table[table["error"].fillna("") != ""]
    return go.Scatter(
        x=bad[x], y=np.full(len(bad), 0.03), yaxis="y2", mode="markers", meta="refused",
        name=_m("refused", lang), text=text.loc[bad.index],
        marker=dict(symbol="x-thin-open", size=11, color=REFUSED_COLOUR, line=dict(width=2)),
        hovertemplate=_m("refused_hover", lang, x="%{x}", reason="%{text}")
        + "<extra></extra>")


def _series(table: pd.DataFrame, color: str | None):
    """(legend value, rows) per line: one line, or one per value of ``color``."""
    if color is None:
        return [(None, table)]
    return [(value, rows) for value, rows in table.groupby(color, sort=False)]


def line_figure(table: pd.DataFrame, x: str, metric: str, lang: str = "en", *,
                color: str | None = None, labels: dict[str, str] | None = None,
                reasons: pd.Series | None = None,
                units: dict[str, str] | None = None) -> go.Figure:
    """``metric`` against ``x``; one line per value of ``color``; refused points are gaps
    with a hover saying why. A wide numeric ``x`` is a log axis (``style.log_axis``)
    whose ticks carry ``units[x]`` when given."""
    labels = labels or {}
    if table.empty or table[metric].notna().sum() == 0:
        return empty_figure(_m("empty", lang), metric_label(metric, lang))
    fig = go.Figure()
    for i, (value, rows) in enumerate(_series(table, color)):
        name = f"{labels.get(color, color)} = {value}" if color else metric_label(metric, lang)
        fig.add_trace(go.Scatter(
            x=rows[x], y=pd.to_numeric(rows[metric], errors="coerce"), mode="lines+markers",
            name=name, meta="line", connectgaps=False,
            line=dict(color=PALETTE[i % len(PALETTE)], width=2),
            hovertemplate=f"{labels.get(x, x)} = %{{x}}<br>{metric_label(metric, lang)} = "
                          "%{y:,.4g}<extra>%{fullData.name}</extra>"))
    if (table["error"].fillna("") != "").any():
        fig.add_trace(_refused_trace(table, x, _reasons(table, reasons), lang))
    base_layout(fig, _m("line_title", lang, metric=metric_label(metric, lang),
                        x=labels.get(x, x)), hovermode="closest",
                yaxis2=dict(overlaying="y", range=[0, 1], visible=False, fixedrange=True))
    fig.update_xaxes(title_text=labels.get(x, x))
    if log_axis(table[x]):
        style.log_axis(fig, "xaxis", style.log_span(pd.to_numeric(table[x])),
                       (units or {}).get(x, ""))
    fig.update_yaxes(title_text=metric_label(metric, lang), selector=dict(anchor="x"))
    return fig


def _grid(table: pd.DataFrame, x: str, y: str, column: str | pd.Series) -> pd.DataFrame:
    values = table[column] if isinstance(column, str) else column
    frame = pd.DataFrame({"x": table[x], "y": table[y], "v": values})
    return frame.pivot_table(index="y", columns="x", values="v", aggfunc="first",
                             dropna=False, sort=False)


def heatmap_figure(table: pd.DataFrame, x: str, y: str, metric: str, lang: str = "en", *,
                   labels: dict[str, str] | None = None,
                   reasons: pd.Series | None = None) -> go.Figure:
    """``metric`` over the grid of ``x`` (columns) and ``y`` (rows); a refused point is an
    empty cell whose hover says why."""
    labels = labels or {}
    if table.empty or table[metric].notna().sum() == 0:
        return empty_figure(_m("empty", lang), metric_label(metric, lang))
    values = pd.to_numeric(table[metric], errors="coerce")
    z = _grid(table, x, y, values)
    why = _grid(table, x, y, _reasons(table, reasons)).reindex_like(z).fillna("")
    shown = z.map(lambda v: "" if pd.isna(v) else f"{v:,.4g}")
    text = np.where(why.to_numpy() != "", _m("refused_cell", lang) + " " + why.to_numpy(),
                    shown.to_numpy())
    fig = go.Figure(go.Heatmap(
        z=z.to_numpy(dtype=float), x=[str(v) for v in z.columns],
        y=[str(v) for v in z.index], text=text, meta="heatmap", colorscale="Viridis",
        hoverongaps=True, colorbar=dict(title=dict(text=METRICS.get(metric, ""))),
        hovertemplate=f"{labels.get(x, x)} = %{{x}}<br>{labels.get(y, y)} = %{{y}}<br>"
                      "%{text}<extra></extra>"))
    base_layout(fig, _m("heatmap_title", lang, metric=metric_label(metric, lang)))
    fig.update_xaxes(title_text=labels.get(x, x), type="category")
    fig.update_yaxes(title_text=labels.get(y, y), type="category")
    return fig


def sweep_figure(table: pd.DataFrame, names, metric: str, lang: str = "en", *,
                 kind: str = "line", labels: dict[str, str] | None = None,
                 reasons: pd.Series | None = None,
                 units: dict[str, str] | None = None) -> go.Figure:
    """The figure of a sweep over ``names`` (one or two columns): a line chart, or for
    two parameters and ``kind="heatmap"`` a heat map. ``units`` (a parameter's unit by
    name, optional) labels the ticks of a log axis."""
    names = list(names)
    if kind == "heatmap" and len(names) == 2:
        return heatmap_figure(table, names[0], names[1], metric, lang, labels=labels,
                              reasons=reasons)
    return line_figure(table, names[0], metric, lang, labels=labels, reasons=reasons,
                       color=names[1] if len(names) == 2 else None, units=units)
