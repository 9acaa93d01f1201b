"""Figures of the mixed-precision study: error against time (Pareto), error against K with
the classic bounds, the histogram of element errors, the "sandwich" of formats from GM to
L0C and back, and the seed blog's routine against true Kahan summation.

Pure functions of the tables and dicts of ``explorer.core.precision_study``; every string
comes from the ``plots.precision`` catalogue entries, format and API names stay as Ascend
writes them.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from explorer.plots.style import (
    PIPE_COLOURS,
    base_layout,
    empty_figure,
    log_axis,
    log_span,
    msg,
    reference_line,
)
from explorer.plots.text import TIME_US

STRATEGY_COLOURS = {"fp32": "#0072B2", "fp16": "#D55E00", "pairwise": "#009E73",
                    "kahan": "#CC79A7"}
_FRONT = "#D55E00"
#: one marker per configuration of the Pareto chart (a star is the user's)
POINT_SYMBOLS = ("circle", "square", "diamond", "triangle-up", "triangle-down", "pentagon",
                 "hexagon", "cross", "x", "triangle-left", "triangle-right", "hourglass")
_GM_FILL, _BUF_FILL, _UNUSED = "#FFF4D6", "#F2F2F2", "#FAFAFA"
#: compensations drawn at most (the rest are the same story)
MAX_COMP_POINTS = 2000
#: message ids under ``plots.precision.`` (what ``_p`` takes): the Pareto figure's y axis
#: per error column, each accumulation strategy, each method of the blog's sum, each
#: quantisation granularity, each accumulator and each operation's note in the sandwich
PARETO_Y_IDS = {"rel_fro": "pareto.y_rel_fro", "max_abs": "pareto.y_max_abs",
                "mean_rel": "pareto.y_mean_rel"}
STRATEGY_IDS = {"fp32": "strategy.fp32", "fp16": "strategy.fp16",
                "pairwise": "strategy.pairwise", "kahan": "strategy.kahan"}
BLOG_METHOD_IDS = {"fp32": "blog.method.fp32", "kahan": "blog.method.kahan"}
GRANULARITY_IDS = {"tensor": "granularity.tensor", "channel": "granularity.channel",
                   "token": "granularity.token", "group": "granularity.group"}
ACCUMULATOR_IDS = {"fp32": "sandwich.acc.fp32", "fp16": "sandwich.acc.fp16",
                   "pairwise": "sandwich.acc.pairwise", "kahan": "sandwich.acc.kahan",
                   "int32": "sandwich.acc.int32"}
NOTE_IDS = {"gemm": "sandwich.note.gemm", "attention_score": "sandwich.note.attention_score",
            "kv_storage": "sandwich.note.kv_storage"}


def _p(msg_id: str, lang: str, **values: object) -> str:
    return msg(f"precision.{msg_id}", lang, **values)


def _sci(value: float) -> str:
    return f"{value:.3g}"


# ---- Pareto ------------------------------------------------------------------------------
def pareto_front(times, errors) -> list[int]:
    """Indices of the points no other point beats on both time and error (lower is
    better), ordered by time; ties on time keep the smaller error."""
    pts = sorted((t, e, i) for i, (t, e) in enumerate(zip(times, errors)))
    front, best = [], math.inf
    for _, e, i in pts:
        if e < best:
            front.append(i)
            best = e
    return front


def merge_points(df: pd.DataFrame, label_col: str, error_col: str) -> pd.DataFrame:
    """One point per distinct (time, error): configurations that coincide (the user's
    choice equal to a standard one, several fp16 configurations with the same emulated
    time and error) share a point whose label joins theirs."""
    key = list(zip(df["time_us"].round(9), df[error_col].map(lambda v: f"{v:.6g}")))
    out = df.assign(_key=key).groupby("_key", sort=False).agg(
        time_us=("time_us", "first"), error=(error_col, "first"),
        label=(label_col, lambda v: " = ".join(v)), names=("name", tuple))
    return out.reset_index(drop=True)


def _point_trace(row: pd.Series, symbol: str, on_front: bool, lang: str) -> go.Scatter:
    """One configuration as its own legend entry (its label), grouped under "on the
    front" or "dominated": labels written next to the points collide where several
    configurations share a time."""
    group = "pareto.on_front" if on_front else "pareto.dominated"
    hover = _p("pareto.hover", lang, label="%{text}", time="%{x:.3g}", error="%{y:.3g}")
    return go.Scatter(
        x=[row["time_us"]], y=[row["error"]], text=[row["label"]], mode="markers",
        name=row["label"], meta=group, legendgroup=group,
        legendgrouptitle_text=_p(group, lang),
        marker=dict(color=_FRONT if on_front else "#7F7F7F", symbol=[symbol],
                    size=17 if symbol == "star" else 11, line=dict(color="#222222", width=1)),
        hovertemplate=hover + "<extra></extra>")


def pareto_figure(table: pd.DataFrame, lang: str = "en", *, label_col: str = "display",
                  error_col: str = "rel_fro", highlight: str | None = None,
                  estimate: bool = False) -> go.Figure:
    """Error (log) against time (log), one point per configuration that has both, named
    in the legend; the Pareto front as a highlighted step line; ``highlight`` (a row
    name) drawn as a star. ``estimate`` says the times are a memory-roofline estimate."""
    title = _p("pareto.title_estimate" if estimate else "pareto.title", lang)
    ok = table[(table["time_us"] > 0) & (table[error_col] > 0)
               & np.isfinite(table["time_us"]) & np.isfinite(table[error_col])]
    if ok.empty:
        return empty_figure(_p("pareto.empty", lang), title)
    pts = merge_points(ok, label_col, error_col).sort_values(["time_us", "error"])
    pts = pts.reset_index(drop=True)
    front = pareto_front(pts["time_us"], pts["error"])
    fr = pts.loc[front]
    fig = go.Figure(go.Scatter(x=fr["time_us"], y=fr["error"], mode="lines",
                               line=dict(color=_FRONT, width=2, shape="hv"), meta="front",
                               name=_p("pareto.front", lang), hoverinfo="skip"))
    symbols = iter(POINT_SYMBOLS * (len(pts) // len(POINT_SYMBOLS) + 1))
    for index, row in pts.iterrows():
        symbol = "star" if highlight in row["names"] else next(symbols)
        fig.add_trace(_point_trace(row, symbol, index in front, lang))
    base_layout(fig, title, height=440 + 26 * -(-len(pts) // 2))
    x_key = "pareto.x_estimate" if estimate else "pareto.x_title"
    log_axis(fig, "xaxis", log_span(pts["time_us"], pad=0.15), TIME_US,
             title_text=_p(x_key, lang))
    log_axis(fig, "yaxis", log_span(pts["error"], pad=0.2),
             title_text=_p(PARETO_Y_IDS[error_col], lang))
    return fig


# ---- error against K ---------------------------------------------------------------------
def error_vs_k_figure(df: pd.DataFrame, lang: str = "en", *, compute: str = "fp16",
                      highlight: str | None = None) -> go.Figure:
    """Log-log: measured accumulation error per strategy (solid, markers) and its bounds
    n*u (dashed) and sqrt(n)*u (dotted) in the same colour."""
    title = _p("vs_k.title", lang, compute=compute)
    if df.empty:
        return empty_figure(_p("vs_k.empty", lang), title)
    fig = go.Figure()
    hover = _p("vs_k.hover", lang, k="%{x}", value="%{y:.3g}")
    for strategy, part in df.groupby("strategy", sort=False):
        colour = STRATEGY_COLOURS.get(strategy, "#333333")
        width = 4 if strategy == highlight else 2
        name = _p(STRATEGY_IDS[strategy], lang)
        fig.add_trace(go.Scatter(x=part["k"], y=part["rel_error"].clip(lower=1e-18),
                                 mode="lines+markers", name=name, meta=f"error:{strategy}",
                                 legendgroup=strategy, line=dict(color=colour, width=width),
                                 hovertemplate=f"{name}<br>{hover}<extra></extra>"))
        for col, dash in (("bound_worst", "dash"), ("bound_prob", "dot")):
            fig.add_trace(go.Scatter(x=part["k"], y=part[col], mode="lines",
                                     name=name, legendgroup=strategy, showlegend=False,
                                     meta=f"{col}:{strategy}", hoverinfo="skip",
                                     line=dict(color=colour, width=1, dash=dash)))
    for key, dash in (("vs_k.worst", "dash"), ("vs_k.prob", "dot")):  # the line styles
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="lines", name=_p(key, lang),
                                 meta=f"legend:{key}", hoverinfo="skip",
                                 line=dict(color="#555555", width=1, dash=dash)))
    base_layout(fig, title, height=500)
    errors = df["rel_error"].clip(lower=1e-18)
    log_axis(fig, "xaxis", log_span(df["k"]), title_text=_p("vs_k.x_title", lang))
    log_axis(fig, "yaxis", log_span([*errors, *df["bound_worst"], *df["bound_prob"]]),
             title_text=_p("vs_k.y_title", lang))
    return fig


# ---- histogram ---------------------------------------------------------------------------
def error_histogram_figure(errors: np.ndarray, lang: str = "en", *, label: str = "",
                           bins: int = 60) -> go.Figure:
    """Histogram of log10(element error / RMS of the reference); exact elements (error 0)
    are counted in the title, since a log axis has no place for them."""
    errors = np.asarray(errors, dtype=np.float64)
    exact = int(np.count_nonzero(errors == 0))
    title = _p("hist.title", lang, label=label, count=f"{errors.size:,}", exact=f"{exact:,}")
    nonzero = errors[(errors > 0) & np.isfinite(errors)]
    if nonzero.size == 0:
        return empty_figure(_p("hist.empty", lang), title)
    logs = np.log10(nonzero)
    counts, edges = np.histogram(logs, bins=bins)
    centres = (edges[:-1] + edges[1:]) / 2
    fig = go.Figure(go.Bar(x=centres, y=counts, width=np.diff(edges), meta="histogram",
                           marker=dict(color=PIPE_COLOURS["VECTOR"]), showlegend=False,
                           name=_p("hist.name", lang),
                           hovertemplate=_p("hist.hover", lang, x="%{x:.2f}", n="%{y}")
                           + "<extra></extra>"))
    median = float(np.median(logs))
    reference_line(fig, "x", median, dict(color="#333333", dash="dash"),
                   _p("hist.median", lang, value=_sci(10 ** median)))
    base_layout(fig, title, bargap=0)
    fig.update_xaxes(title_text=_p("hist.x_title", lang))
    fig.update_yaxes(title_text=_p("hist.y_title", lang))
    return fig


# ---- blog routine vs Kahan ---------------------------------------------------------------
def blog_kahan_figure(result: dict, lang: str = "en") -> go.Figure:
    """Left: |sum error| against math.fsum per method (log). Right: the blog routine's
    compensation per element at beta = 0 (all zero) and at the other beta."""
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.12, subplot_titles=(
        _p("blog.errors_title", lang), _p("blog.comp_title", lang)))
    table = result["table"]
    names = [_p(BLOG_METHOD_IDS[m.replace(".", "_")], lang) if not m.startswith("blog_beta_")
             else _p("blog.method.blog", lang, beta=m.removeprefix("blog_beta_"))
             for m in table["method"]]
    colours = ["#0072B2", "#009E73", "#D55E00", "#E69F00"][:len(names)]
    fig.add_trace(go.Bar(x=names, y=table["abs_error"].clip(lower=1e-30), meta="errors",
                         marker=dict(color=colours), showlegend=False,
                         text=[_sci(v) for v in table["abs_error"]], textposition="outside",
                         hovertemplate="%{x}<br>%{y:.3g}<extra></extra>"), row=1, col=1)
    comps = sorted(result["compensation"].items(), key=lambda item: item[0] == 0)
    top = max(float(np.max(np.abs(c[:MAX_COMP_POINTS]), initial=0.0)) for _, c in comps)
    for beta, comp in comps:  # beta = 0 last: its flat zero line on top
        shown = np.asarray(comp)[:MAX_COMP_POINTS]
        fig.add_trace(go.Scatter(
            x=np.arange(shown.size), y=shown, mode="lines", meta=f"comp:{beta:g}",
            name=_p("blog.comp_name", lang, beta=f"{beta:g}"),
            line=dict(width=3 if beta == 0 else 1,
                      color="#D55E00" if beta == 0 else "#E69F00")), row=1, col=2)
    base_layout(fig, _p("blog.title", lang, n=f"{result['values']:,}",
                        alpha=f"{result['alpha']:g}"))
    errors = table["abs_error"].clip(lower=1e-30)
    log_axis(fig, "yaxis", (errors.min() / 3, errors.max() * 4),
             title_text=_p("blog.y_errors", lang))
    fig.update_yaxes(title_text=_p("blog.y_comp", lang), exponentformat="power", row=1, col=2,
                     range=[-1.1 * top, 1.1 * top] if top > 0 else [-1, 1])
    fig.update_xaxes(title_text=_p("blog.x_comp", lang), row=1, col=2)
    return fig


# ---- the sandwich ------------------------------------------------------------------------
def _box(fig: go.Figure, box, text: str, fill: str, *, dash: str = "solid") -> None:
    x0, y0, x1, y1 = box
    fig.add_shape(type="rect", x0=x0, y0=y0, x1=x1, y1=y1, fillcolor=fill, layer="below",
                  line=dict(color="#404040", width=1.2, dash=dash))
    fig.add_annotation(x=(x0 + x1) / 2, y=(y0 + y1) / 2, text=text, showarrow=False,
                       font=dict(size=11))


def _arrow(fig: go.Figure, tail, head, label: str, colour: str, shift: int = 14) -> None:
    fig.add_annotation(x=head[0], y=head[1], ax=tail[0], ay=tail[1], axref="x", ayref="y",
                       xref="x", yref="y", text="", showarrow=True, arrowhead=2,
                       arrowsize=1.2, arrowwidth=2, arrowcolor=colour)
    if label:
        fig.add_annotation(x=(tail[0] + head[0]) / 2, y=(tail[1] + head[1]) / 2, yshift=shift,
                           text=label, showarrow=False, bgcolor="rgba(255,255,255,0.85)",
                           font=dict(size=10, color=colour))


def _fmt(name: str, fmt: str) -> str:
    return f"<b>{name}</b><br>{fmt}"


def _operands(st: dict, lang: str) -> tuple[str, str]:
    """(the stored operand, the other one): B / A for GEMM, K,V / q for attention."""
    if st["operation"] == "gemm":
        return _p("sandwich.weights", lang), _p("sandwich.acts", lang)
    return _p("sandwich.kv", lang), _p("sandwich.query", lang)


def _cube_row(fig: go.Figure, st: dict, lang: str) -> None:
    """GM -> L1 -> L0A/L0B -> L0C -> Fixpipe (or UB Cast) -> GM along the top."""
    stored, other = _operands(st, lang)
    scales = _p("sandwich.scales", lang, granularity=_p(
        GRANULARITY_IDS[st["granularity"]], lang)) if st["quantized"] else ""
    _box(fig, (1, 58, 17, 90), f"<b>GM</b><br>{stored}: {st['gm_in']}"
         + (f"<br>{scales}" if scales else "") + f"<br>{other}: {st['gm_act']}", _GM_FILL)
    _box(fig, (23, 62, 35, 86), _fmt("L1", st["l1"]), _BUF_FILL)
    _box(fig, (41, 62, 53, 86), _fmt("L0A / L0B", st["l0"] + (" (HF32)" if st["hf32"] else "")),
         _BUF_FILL)
    _box(fig, (59, 62, 71, 86), _fmt("L0C", st["l0c"]) + "<br>" +
         _p(ACCUMULATOR_IDS[st["acc"]], lang), "#FBE3D6")
    if st["has_fixpipe"]:
        _box(fig, (76, 62, 87, 86), _fmt("Fixpipe", f"quantPre<br>{st['fixpipe']}"), "#FCEBC8")
    else:
        _box(fig, (76, 62, 87, 86), _fmt("UB", _p("sandwich.cast_out", lang, acc=st["l0c"])),
             "#D6E6F5")
    _box(fig, (91, 62, 99.5, 86), _fmt("GM", f"C: {st['gm_out']}"), _GM_FILL)
    _arrow(fig, (17, 78), (23, 78), "DataCopy<br>MTE2", PIPE_COLOURS["MTE2"], shift=28)
    _arrow(fig, (35, 74), (41, 74), "LoadData<br>MTE1", PIPE_COLOURS["MTE1"], shift=28)
    _arrow(fig, (53, 74), (59, 74), "Mmad<br>CUBE", PIPE_COLOURS["CUBE"], shift=28)
    out_op = "Fixpipe" if st["has_fixpipe"] else "DataCopy"
    _arrow(fig, (71, 74), (76, 74), out_op, PIPE_COLOURS["FIXP"], shift=28)
    _arrow(fig, (87, 74), (91, 74), "", PIPE_COLOURS["FIXP"])


def _vector_row(fig: go.Figure, st: dict, lang: str) -> None:
    """GM -> UB (DataCopy) -> AntiQuant / Cast on the vector unit -> L1, below the cube row."""
    used = bool(st["vector_op"])
    op = {"antiquant": "AscendAntiQuant", "cast": "Cast"}.get(st["vector_op"], "")
    text = (_fmt("UB", f"{st['ub_from']} → {st['ub_to']}") + f"<br>{op} (VECTOR)") if used \
        else _fmt("UB", _p("sandwich.unused", lang))
    _box(fig, (20, 14, 44, 40), text, "#D6E6F5" if used else _UNUSED,
         dash="solid" if used else "dot")
    colour = PIPE_COLOURS["VECTOR"] if used else "#BBBBBB"
    _arrow(fig, (9, 58), (20, 30), "DataCopy<br>MTE2", PIPE_COLOURS["MTE2"] if used
           else "#BBBBBB", shift=0)
    _arrow(fig, (44, 30), (29, 62), _p("sandwich.to_l1", lang), colour, shift=0)
    fig.add_annotation(x=72, y=27, text=_p(NOTE_IDS[st["operation"]], lang),
                       showarrow=False, align="left", font=dict(size=11), width=330)


def sandwich_figure(stages: dict, lang: str = "en", *, label: str = "") -> go.Figure:
    """Where each format lives for one configuration, as boxes and arrows (see
    ``precision_study.stages``)."""
    fig = go.Figure()
    _cube_row(fig, stages, lang)
    _vector_row(fig, stages, lang)
    base_layout(fig, _p("sandwich.title", lang, label=label), height=430, showlegend=False,
                margin=dict(l=10, r=10, b=10), plot_bgcolor="white")
    fig.update_xaxes(visible=False, range=[0, 100], fixedrange=True)
    fig.update_yaxes(visible=False, range=[8, 96], fixedrange=True)
    return fig
