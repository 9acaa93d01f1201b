"""Multi-card decode figures: how throughput and per-token latency follow the card count
(with the ideal, linear line), and what one step is made of at each card count.

Pure functions of the table of `explorer.core.multicard.scaling` (columns N, step_ms,
tokens_per_s, per_token_latency_ms, speedup, efficiency, fits, append_ms, attention_ms,
linear_ms, allreduce_ms). Card counts whose share does not fit one card's HBM are drawn
hollow; the legend sits below the panels (``style.base_layout``), clear of their titles.
Traces carry a ``meta`` tag ("measured", "ideal", "split:<part>") for tests.
"""
from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from explorer.plots.style import base_layout, empty_figure, msg

#: the split's parts: column, name (message id under ``plots.multicard.``), colour
PARTS = (("attention_ms", "part.attention_ms", "#009E73"),
         ("append_ms", "part.append_ms", "#56B4E9"),
         ("linear_ms", "part.linear_ms", "#E69F00"),
         ("allreduce_ms", "part.allreduce_ms", "#D55E00"))
MEASURED, IDEAL = "#0072B2", "#7F7F7F"


def _m(msg_id: str, lang: str, **values: object) -> str:
    return msg(f"multicard.{msg_id}", lang, **values)


def _symbols(table: pd.DataFrame) -> list[str]:
    return ["circle" if fits else "circle-open" for fits in table["fits"]]


def _ideal(table: pd.DataFrame) -> tuple[pd.Series, pd.Series]:
    """Linear scaling from the one-card point: tokens/s x N and latency / N."""
    one = table["tokens_per_s"].iloc[0] / table["N"].iloc[0]
    lat = table["per_token_latency_ms"].iloc[0] * table["N"].iloc[0]
    return table["N"] * one, lat / table["N"]


def scaling_figure(table: pd.DataFrame, lang: str = "en") -> go.Figure:
    """Tokens/s (left) and per-token latency (right) against N, each with its ideal line
    drawn from the smallest N (the one-card step when N = 1 is in the table)."""
    if table.empty:
        return empty_figure(_m("empty", lang), _m("scaling_title", lang))
    fig = make_subplots(rows=1, cols=2, subplot_titles=(_m("tokens_axis", lang),
                                                        _m("latency_axis", lang)))
    ideal_tps, ideal_lat = _ideal(table)
    hover = [_m("hover", lang, n=n, eff=f"{e:.0%}", fits=_m("fits_yes" if f else "fits_no",
                                                             lang))
             for n, e, f in zip(table["N"], table["efficiency"], table["fits"])]
    for col, y, ideal in ((1, table["tokens_per_s"], ideal_tps),
                          (2, table["per_token_latency_ms"], ideal_lat)):
        fig.add_trace(go.Scatter(x=table["N"], y=ideal, mode="lines", name=_m("ideal", lang),
                                 line=dict(color=IDEAL, dash="dash"), meta="ideal",
                                 showlegend=col == 1, legendgroup="ideal"), row=1, col=col)
        fig.add_trace(go.Scatter(x=table["N"], y=y, mode="lines+markers",
                                 name=_m("model", lang), meta="measured", text=hover,
                                 marker=dict(size=10, symbol=_symbols(table), color=MEASURED),
                                 line=dict(color=MEASURED), showlegend=col == 1,
                                 legendgroup="model",
                                 hovertemplate="%{text}<br>%{y:,.1f}<extra></extra>"),
                      row=1, col=col)
    fig.update_xaxes(title_text=_m("cards_axis", lang), tickmode="array",
                     tickvals=list(table["N"]))
    fig.update_yaxes(title_text=_m("tokens_unit", lang), rangemode="tozero", row=1, col=1)
    fig.update_yaxes(title_text=_m("latency_unit", lang), rangemode="tozero", row=1, col=2)
    return base_layout(fig, _m("scaling_title", lang), height=440)


def split_figure(table: pd.DataFrame, lang: str = "en") -> go.Figure:
    """Stacked bars per N: one step's attention and append (emulated), linear layers
    (estimate) and all-reduce (alpha-beta estimate), in ms."""
    if table.empty:
        return empty_figure(_m("empty", lang), _m("split_title", lang))
    fig = go.Figure()
    x = [str(n) for n in table["N"]]
    for part, name_id, colour in PARTS:
        name = _m(name_id, lang)
        fig.add_trace(go.Bar(x=x, y=table[part], name=name, marker_color=colour,
                             meta=f"split:{part}",
                             hovertemplate=f"{name}<br>%{{y:,.2f}} ms<extra></extra>"))
    return base_layout(fig, _m("split_title", lang), height=400, barmode="stack",
                       xaxis=dict(title_text=_m("cards_axis", lang)),
                       yaxis=dict(title_text=_m("step_unit", lang)))
