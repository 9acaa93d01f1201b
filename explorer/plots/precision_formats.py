"""Figures of the number-format study: how far each format rounds an element (the
distribution of relative errors), what happens to the elements (rounded, subnormal,
flushed to zero, saturated), and the error of dot products accumulated in fp32 against
the bound that follows from the inputs' rounding.

Pure functions of ``explorer.core.precision_formats``' results; strings come from the
``plots.precision.formats`` catalogue entries, format names stay as written.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from explorer.plots.style import base_layout, empty_figure, log_axis, log_span, msg

#: one colour per format of the study (Okabe-Ito, then greys for the 16-bit references)
FORMAT_COLOURS = {"bf16": "#999999", "fp16": "#555555", "fp8_e4m3": "#0072B2",
                  "fp8_e5m2": "#56B4E9", "hif8": "#D55E00", "mxfp8": "#009E73",
                  "mxfp4": "#CC79A7"}
#: colours and message ids (under ``plots.precision.formats.``) of the element outcomes
OUTCOME_COLOURS = {"rounded": "#0072B2", "subnormal": "#E69F00", "flushed": "#D55E00",
                   "saturated": "#000000"}
OUTCOME_IDS = {"rounded": "outcome.rounded", "subnormal": "outcome.subnormal",
               "flushed": "outcome.flushed", "saturated": "outcome.saturated"}
#: relative errors below this (exact values among them) are drawn at it
ERROR_FLOOR = 1e-6
#: points per curve of the distribution figure (quantiles of the errors)
CURVE_POINTS = 200


def _p(msg_id: str, lang: str, **values: object) -> str:
    return msg(f"precision.formats.{msg_id}", lang, **values)


def _colour(name: str) -> str:
    return FORMAT_COLOURS.get(name, "#333333")


def element_error_figure(rel_errors: dict[str, np.ndarray], lang: str = "en", *,
                         highlight: str | None = None) -> go.Figure:
    """The share of elements whose relative error is at most x, one curve per format
    (log x); ``highlight`` drawn thicker. Errors below ``ERROR_FLOOR`` sit at the floor."""
    title = _p("errors.title", lang)
    curves = {n: e for n, e in rel_errors.items() if np.asarray(e).size}
    if not curves:
        return empty_figure(_p("errors.empty", lang), title)
    fig = go.Figure()
    share = np.linspace(0.0, 1.0, CURVE_POINTS)
    hover = _p("errors.hover", lang, x="%{x:.3g}", share="%{y:.0%}")
    top = ERROR_FLOOR
    for name, errors in curves.items():
        x = np.quantile(np.clip(errors, ERROR_FLOOR, None), share)
        top = max(top, float(x[-1]))
        fig.add_trace(go.Scatter(
            x=x, y=share, mode="lines", name=name, meta=f"errors:{name}",
            line=dict(color=_colour(name), width=4 if name == highlight else 2),
            hovertemplate=f"{name}<br>{hover}<extra></extra>"))
    base_layout(fig, title, caption=_p("errors.caption", lang, floor="10⁻⁶"), height=460)
    log_axis(fig, "xaxis", (ERROR_FLOOR, max(top, 10 * ERROR_FLOOR)),
             title_text=_p("errors.x_title", lang))
    fig.update_yaxes(title_text=_p("errors.y_title", lang), range=[0, 1.02], tickformat=".0%")
    return fig


def outcome_figure(table: pd.DataFrame, lang: str = "en") -> go.Figure:
    """Stacked horizontal bars: the share of each format's elements rounded within the
    normal range, subnormal, flushed to zero and saturated."""
    title = _p("outcome.title", lang)
    if table.empty:
        return empty_figure(_p("errors.empty", lang), title)
    fig = go.Figure()
    for outcome, colour in OUTCOME_COLOURS.items():
        name = _p(OUTCOME_IDS[outcome], lang)
        fig.add_trace(go.Bar(
            y=table["format"], x=table[f"share_{outcome}"], orientation="h", name=name,
            meta=f"outcome:{outcome}", marker=dict(color=colour),
            hovertemplate=f"%{{y}}<br>{name}: %{{x:.1%}}<extra></extra>"))
    base_layout(fig, title, barmode="stack", height=140 + 34 * len(table))
    fig.update_xaxes(title_text=_p("outcome.x_title", lang), range=[0, 1], tickformat=".0%")
    fig.update_yaxes(autorange="reversed")
    return fig


def dot_figure(df: pd.DataFrame, lang: str = "en", *, highlight: str | None = None) -> go.Figure:
    """Log-log: the largest relative error of dot products of length k per format (solid)
    and its bound (dashed, same colour; left out where an input saturates: no bound)."""
    title = _p("dot.title", lang)
    if df.empty:
        return empty_figure(_p("errors.empty", lang), title)
    fig = go.Figure()
    hover = _p("dot.hover", lang, k="%{x}", value="%{y:.3g}")
    errors = df["rel_error"].clip(lower=1e-12)
    for name, part in df.groupby("format", sort=False):
        width = 4 if name == highlight else 2
        fig.add_trace(go.Scatter(
            x=part["k"], y=part["rel_error"].clip(lower=1e-12), mode="lines+markers",
            name=name, legendgroup=name, meta=f"error:{name}",
            line=dict(color=_colour(name), width=width),
            hovertemplate=f"{name}<br>{hover}<extra></extra>"))
        bound = part[np.isfinite(part["bound"])]
        fig.add_trace(go.Scatter(
            x=bound["k"], y=bound["bound"], mode="lines", name=name, legendgroup=name,
            showlegend=False, meta=f"bound:{name}", hoverinfo="skip",
            line=dict(color=_colour(name), width=1, dash="dash")))
    fig.add_trace(go.Scatter(x=[None], y=[None], mode="lines", name=_p("dot.bound", lang),
                             meta="legend:bound", hoverinfo="skip",
                             line=dict(color="#555555", width=1, dash="dash")))
    bounds = df["bound"][np.isfinite(df["bound"])]
    base_layout(fig, title, caption=_p("dot.caption", lang), height=500)
    log_axis(fig, "xaxis", log_span(df["k"]), title_text=_p("dot.x_title", lang))
    log_axis(fig, "yaxis", log_span([*errors, *bounds]), title_text=_p("dot.y_title", lang))
    return fig
