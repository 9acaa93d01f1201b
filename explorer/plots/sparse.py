"""Sparse-attention figures: how much attention every KV-compression policy keeps as the
keep ratio grows (mass recall, output error, top-k overlap), which tokens each policy keeps
for one head next to the dense attention, how key norms relate to attention on the data,
the KV bytes before and after, and the decode step with and without the sparse policy.

Pure functions of plain numbers and tidy tables (``explorer.core.sparse_study``'s summary,
a kept mask, bytes, nanoseconds), so the page and the tests draw the same pictures; no
streamlit. Every trace carries a ``meta`` tag ("recall:h2o", "kept", "attention",
"tokens", "bytes", "step", "compress") that tests and callers can find.
"""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from explorer.plots.style import (
    base_layout,
    byte_unit,
    empty_figure,
    format_bytes,
    log_axis,
    log_span,
    msg,
    panels,
    reference_line,
)

#: one colour per policy (Okabe-Ito), the same in every figure
COLOURS = {"norm_high": "#D55E00", "norm_low": "#0072B2", "h2o": "#009E73",
           "streaming": "#E69F00", "quest": "#CC79A7", "random": "#7F7F7F"}
METRICS = ("mass_recall", "output_error", "topk_overlap")
#: token columns drawn in the heat map; longer caches are binned (share kept per bin)
MAX_COLUMNS = 2048
#: points of the norm / attention scatter; beyond, every k-th token
MAX_POINTS = 8192
NS_PER_MS = 1e6
#: message ids under ``plots.sparse.`` (what ``_m`` takes): each policy's name, each
#: accuracy metric's panel title, each byte count's bar and each step's bar
POLICY_IDS = {"norm_high": "policy.norm_high", "norm_low": "policy.norm_low", "h2o": "policy.h2o",
              "streaming": "policy.streaming", "quest": "policy.quest", "random": "policy.random"}
METRIC_IDS = {"mass_recall": "metric.mass_recall", "output_error": "metric.output_error",
              "topk_overlap": "metric.topk_overlap"}
BYTES_IDS = {"dense": "bytes.dense", "stored": "bytes.stored", "read": "bytes.read"}
STEP_IDS = {"dense": "step.dense", "sparse": "step.sparse", "amortised": "step.amortised"}


def _m(msg_id: str, lang: str, **values: object) -> str:
    return msg(f"sparse.{msg_id}", lang, **values)


def policy_name(policy: str, lang: str) -> str:
    return _m(POLICY_IDS[policy], lang)


# ---- accuracy against the keep ratio -----------------------------------------------------
def _metric_line(rows: pd.DataFrame, metric: str, col: int, policy: str, lang: str,
                 chosen: bool) -> go.Scatter:
    return go.Scatter(
        x=rows["keep_ratio"].to_numpy(), y=rows[metric].to_numpy(), mode="lines+markers",
        meta=f"{metric}:{policy}", name=policy_name(policy, lang), legendgroup=policy,
        showlegend=col == 1,
        line=dict(color=COLOURS.get(policy, "#000000"), width=3.5 if chosen else 1.5),
        marker=dict(size=7 if chosen else 4), customdata=rows["kept"].to_numpy(),
        hovertemplate=_m("accuracy_hover", lang, ratio="%{x:.0%}", value="%{y:.3f}",
                         kept="%{customdata:,.0f}") + "<extra>%{fullData.name}</extra>")


def accuracy_figure(summary: pd.DataFrame, lang: str = "en", chosen: str = "",
                    keep_ratio: float | None = None) -> go.Figure:
    """Mass recall, output error and top-k overlap (one panel each) against the keep
    ratio, one line per policy (the chosen one thicker), a dotted line at the chosen
    ratio. Columns: policy, keep_ratio, kept and the METRICS (``sparse_study.summary``)."""
    if len(summary) == 0:
        return empty_figure(_m("accuracy_empty", lang), _m("accuracy_title", lang))
    fig = panels([_m(METRIC_IDS[m], lang) for m in METRICS], 0.07)
    fig.add_traces([_metric_line(rows, metric, col, policy, lang, policy == chosen)
                    .update(xaxis=f"x{col}", yaxis=f"y{col}")
                    for col, metric in enumerate(METRICS, start=1)
                    for policy, rows in summary.groupby("policy", sort=False)])
    if keep_ratio is not None:
        for col in range(1, len(METRICS) + 1):
            reference_line(fig, "x", float(keep_ratio),
                           dict(dash="dot", color="#000000", width=1.5), panel=col)
    base_layout(fig, _m("accuracy_title", lang), height=480, yaxis_range=[0, 1.03],
                yaxis2_rangemode="tozero", yaxis3_range=[0, 1.03])
    fig.update_xaxes(tickformat=".0%", range=[0, 1.03], title_text=_m("ratio_axis", lang))
    return fig


# ---- which tokens each policy keeps --------------------------------------------------------
def _bins(n: int, columns: int) -> np.ndarray:
    """Bin index of every token: one bin per token up to ``columns`` tokens."""
    width = max(1, -(-n // columns))
    return np.arange(n) // width


def _binned(mask: np.ndarray, attention: np.ndarray, columns: int):
    """(first token of each bin, share kept per policy and bin, attention per bin)."""
    n = attention.size
    bins = _bins(n, columns)
    count = np.bincount(bins)
    kept = np.stack([np.bincount(bins, weights=row.astype(np.float64)) for row in mask])
    return (np.flatnonzero(np.diff(bins, prepend=-1)), kept / count,
            np.bincount(bins, weights=attention))


def kept_figure(mask: pd.DataFrame, attention: pd.Series, lang: str = "en",
                chosen: str = "", keep_ratio: float | None = None) -> go.Figure:
    """Top: the dense attention per token (group mean, log scale). Below: one row per
    policy, dark where the token is kept (``sparse_study.kept_mask``). Caches longer than
    MAX_COLUMNS tokens are binned: the share of a bin kept and the bin's attention."""
    if mask.shape[0] == 0 or mask.shape[1] == 0:
        return empty_figure(_m("kept_empty", lang), _m("kept_title_empty", lang))
    values = mask.to_numpy(bool)
    start, share, attn = _binned(values, attention.to_numpy(np.float64), MAX_COLUMNS)
    names = [f"<b>{policy_name(p, lang)}</b>" if p == chosen else policy_name(p, lang)
             for p in mask.index]
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.04,
                        row_heights=[0.35, 0.65])
    fig.add_trace(go.Scatter(x=start, y=attn, mode="lines", meta="attention",
                             name=_m("dense_attention", lang), line=dict(color="#000000"),
                             hovertemplate=_m("attention_hover", lang, token="%{x}",
                                              p="%{y:.2e}") + "<extra></extra>"), row=1, col=1)
    fig.add_trace(go.Heatmap(
        x=start, y=names, z=share, meta="kept", zmin=0, zmax=1, showscale=False,
        colorscale=[[0, "#F2F2F2"], [1, "#0072B2"]],
        hovertemplate=_m("kept_hover", lang, token="%{x}", share="%{z:.0%}")
        + "<extra>%{y}</extra>"), row=2, col=1)
    binned = start.size < values.shape[1]
    ratio = f"{keep_ratio:.0%}" if keep_ratio is not None else "—"
    title = _m("kept_title_binned" if binned else "kept_title", lang, ratio=ratio,
               tokens=f"{values.shape[1]:,}", width=int(values.shape[1] // max(1, start.size)))
    base_layout(fig, title, height=260 + 34 * len(names), showlegend=False)
    log_axis(fig, "yaxis", log_span(attn), length=80, title_text=_m("attention_axis", lang))
    fig.update_yaxes(autorange="reversed", row=2, col=1)
    fig.update_xaxes(title_text=_m("token_axis", lang), row=2, col=1)
    return fig


# ---- key norm against attention ----------------------------------------------------------
def norm_figure(norms, attention, lang: str = "en", rho: float | None = None) -> go.Figure:
    """One point per token: its key's L2 norm against its dense attention (log scale);
    ``rho`` (Spearman, mean over the heads) goes into the title. The blog keeps the right
    side, Devoto et al. the left."""
    norms, attention = np.asarray(norms, np.float64), np.asarray(attention, np.float64)
    if norms.size == 0:
        return empty_figure(_m("norm_empty", lang), _m("norm_title_empty", lang))
    step = max(1, -(-norms.size // MAX_POINTS))
    fig = go.Figure(go.Scattergl(
        x=norms[::step], y=attention[::step], mode="markers", meta="tokens",
        marker=dict(size=5, color="#0072B2", opacity=0.6),
        hovertemplate=_m("norm_hover", lang, norm="%{x:.2f}", p="%{y:.2e}")
        + "<extra></extra>"))
    title = _m("norm_title", lang, rho=f"{rho:+.2f}") if rho is not None and np.isfinite(rho) \
        else _m("norm_title_empty", lang)
    base_layout(fig, title, height=380)
    fig.update_xaxes(title_text=_m("norm_axis", lang))
    log_axis(fig, "yaxis", log_span(attention[::step]), title_text=_m("attention_axis", lang))
    return fig


# ---- bytes and time ----------------------------------------------------------------------
def memory_figure(parts: Mapping[str, float], lang: str = "en") -> go.Figure:
    """KV bytes of the whole model and batch: ``parts`` maps "dense", "stored" and "read"
    to bytes (``sparse_attention.Footprint``); each bar says its share of dense."""
    if not parts or max(parts.values()) <= 0:
        return empty_figure(_m("memory_empty", lang), _m("memory_title", lang))
    names = list(parts)
    sizes = np.array([float(parts[n]) for n in names])
    divisor, unit = byte_unit(sizes.max())
    dense = float(parts.get("dense", sizes.max()))
    fig = go.Figure(go.Bar(
        x=sizes / divisor, y=[_m(BYTES_IDS[n], lang) for n in names], orientation="h",
        meta="bytes", marker_color=["#7F7F7F" if n == "dense" else "#0072B2" for n in names],
        text=[_m("bytes_text", lang, size=format_bytes(s), share=f"{s / dense:.0%}")
              for s in sizes], textposition="auto",
        hovertemplate="%{y}: %{text}<extra></extra>"))
    base_layout(fig, _m("memory_title", lang), height=120 + 60 * len(names))
    fig.update_yaxes(autorange="reversed")
    fig.update_xaxes(title_text=_m("bytes_axis", lang, unit=unit), rangemode="tozero")
    return fig


def time_figure(dense_ns: float, sparse_ns: float, compress_ns: float,
                lang: str = "en") -> go.Figure:
    """The decode step (ms): dense, sparse, and sparse with the compression amortised over
    its steps (``compress_ns`` per step, hatched on top of the sparse step)."""
    if dense_ns <= 0:
        return empty_figure(_m("time_empty", lang), _m("time_title", lang))
    rows = [_m(STEP_IDS[name], lang) for name in ("dense", "sparse", "amortised")]
    steps = np.array([dense_ns, sparse_ns, sparse_ns]) / NS_PER_MS
    totals = steps + np.array([0.0, 0.0, compress_ns / NS_PER_MS])
    fig = go.Figure(go.Bar(
        x=steps, y=rows, orientation="h", meta="step", name=_m("step_name", lang),
        marker_color=["#7F7F7F", "#0072B2", "#0072B2"], showlegend=False,
        text=[f"{s:,.3f} ms" for s in totals], textposition="inside",
        hovertemplate="%{y}: %{x:,.3f} ms<extra></extra>"))
    fig.add_trace(go.Bar(
        x=[0.0, 0.0, compress_ns / NS_PER_MS], y=rows, orientation="h", meta="compress",
        name=_m("compress_name", lang), marker=dict(color="#D55E00", pattern_shape="/"),
        hovertemplate="%{y}: + %{x:,.4f} ms<extra>%{fullData.name}</extra>"))
    base_layout(fig, _m("time_title", lang), barmode="stack", height=280)
    fig.update_yaxes(autorange="reversed")
    fig.update_xaxes(title_text=_m("ms_axis", lang), rangemode="tozero")
    return fig
