"""Load-balance figures: per-core loads against their mean, max and the lower bound; the
pieces of work per core over time coloured by sequence; every policy side by side; the
per-sequence completion percentiles; and a sweep over the batch size.

Pure functions of plain numbers (µs, per-core arrays, tidy tables), so the page and the
tests draw the same pictures; no streamlit. Every trace carries a ``meta`` tag ("loads",
"predicted", "pieces", a series or policy name) that tests and callers can find.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from explorer.plots.cores import _balance_lines
from explorer.plots.style import base_layout, empty_figure, log_axis, log_span, msg, reference_line

#: one colour per policy (Okabe-Ito), the same in every figure
COLOURS = {"static": "#D55E00", "round_robin": "#E69F00", "lpt": "#0072B2",
           "cluster_lpt": "#CC79A7", "dynamic": "#009E73"}
#: sequences cycle through these colours in the timeline (neighbours differ clearly)
SEQ_PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9",
               "#F0E442", "#7F7F7F", "#8C564B", "#17BECF", "#BCBD22", "#1F3A93")
SERIES_STYLE = {"unsplit": ("", 1.0), "split": ("/", 0.6), "predicted": ("x", 0.45),
                "emulated": ("", 1.0)}
#: pieces drawn one by one in the timeline; beyond, only the first cores are drawn
MAX_BARS = 4000
#: message ids under ``plots.lb.`` (what ``_m`` takes): each policy's and series' name
POLICY_IDS = {"static": "policy.static", "round_robin": "policy.round_robin",
              "lpt": "policy.lpt", "cluster_lpt": "policy.cluster_lpt",
              "dynamic": "policy.dynamic"}
SERIES_IDS = {"unsplit": "series.unsplit", "split": "series.split",
              "predicted": "series.predicted", "emulated": "series.emulated"}


def _m(msg_id: str, lang: str, **values: object) -> str:
    return msg(f"lb.{msg_id}", lang, **values)


def policy_name(policy: str, lang: str) -> str:
    return _m(POLICY_IDS[policy], lang)


def _hline(fig: go.Figure, value: float | None, text: str) -> None:
    if value is not None and np.isfinite(value) and value > 0:
        reference_line(fig, "y", float(value), dict(dash="dot", color="#009E73", width=2),
                       text)


# ---- per-core loads ----------------------------------------------------------------------
def loads_figure(loads_us, lower_bound_us: float, lang: str = "en", *,
                 predicted_us=None, names: Sequence[str] | None = None) -> go.Figure:
    """Busy time per core (µs) with dashed mean and max lines, the lower bound
    max(work / cores, longest task) dotted, and, when given, the predicted loads as ticks."""
    loads = np.asarray(loads_us, dtype=np.float64)
    if loads.size == 0 or loads.max() <= 0:
        return empty_figure(_m("loads_empty", lang), _m("loads_title_empty", lang))
    names = list(names) if names is not None else [str(i) for i in range(loads.size)]
    fig = go.Figure(go.Bar(
        x=names, y=loads, meta="loads", name=_m("busy", lang), marker_color="#0072B2",
        hovertemplate=_m("loads_hover", lang, core="%{x}", us="%{y:,.2f}") + "<extra></extra>"))
    if predicted_us is not None:
        fig.add_trace(go.Scatter(
            x=names, y=np.asarray(predicted_us, dtype=np.float64), mode="markers",
            meta="predicted", name=_m("predicted", lang),
            marker=dict(symbol="line-ew-open", size=14, color="#000000", line=dict(width=2)),
            hovertemplate=_m("loads_hover", lang, core="%{x}", us="%{y:,.2f}")
            + "<extra>%{fullData.name}</extra>"))
    _balance_lines(fig, loads, lang)
    _hline(fig, lower_bound_us, _m("bound_line", lang, value=f"{lower_bound_us:,.3f}"))
    title = _m("loads_title", lang, eff=f"{loads.mean() / loads.max():.1%}",
               ratio=f"{loads.min() / loads.max():.1%}")
    base_layout(fig, title, bargap=0.15)
    fig.update_xaxes(type="category", title_text=_m("core_axis", lang))
    fig.update_yaxes(title_text=_m("us_axis", lang), rangemode="tozero")
    return fig


# ---- pieces of work over time ------------------------------------------------------------
def _first_cores(pieces: pd.DataFrame, limit: int) -> pd.DataFrame:
    """The pieces of the first cores whose pieces together stay within ``limit``."""
    if len(pieces) <= limit:
        return pieces
    per_core = pieces.groupby("slot").size().sort_index()
    keep = per_core.index[per_core.cumsum().to_numpy() <= limit]
    keep = keep if len(keep) else per_core.index[:1]
    return pieces[pieces["slot"].isin(keep)]


def _pieces_trace(shown: pd.DataFrame, names: np.ndarray, lang: str) -> go.Bar:
    """One bar per piece, on its core's row, coloured by its sequence."""
    seq = shown["seq"].to_numpy(np.int64)
    start, end = shown["start_us"].to_numpy(np.float64), shown["end_us"].to_numpy(np.float64)
    palette = np.asarray(SEQ_PALETTE, dtype=object)
    return go.Bar(
        orientation="h", y=names[shown["slot"].to_numpy(np.int64)], base=start, x=end - start,
        meta="pieces", customdata=np.column_stack([seq, start, end]), showlegend=False,
        marker=dict(color=palette[seq % len(palette)], line=dict(width=0.5, color="#FFFFFF")),
        hovertemplate=_m("gantt_hover", lang, seq="%{customdata[0]}",
                         start="%{customdata[1]:,.2f}", end="%{customdata[2]:,.2f}")
        + "<extra>%{y}</extra>")


def gantt_figure(pieces: pd.DataFrame, n_cores: int, lang: str = "en", *,
                 names: Sequence[str] | None = None,
                 lower_bound_us: float | None = None) -> go.Figure:
    """Each core's pieces of work (columns slot, seq, start_us, end_us) as bars over time,
    coloured by the sequence they belong to, idle cores included; the lower bound dotted.
    Beyond MAX_BARS pieces only the first cores are drawn (the title says so)."""
    if len(pieces) == 0:
        return empty_figure(_m("gantt_empty", lang), _m("gantt_title_empty", lang))
    shown = _first_cores(pieces, MAX_BARS)
    names = np.asarray(list(names) if names is not None else
                       [str(i) for i in range(n_cores)], dtype=object)
    rows = n_cores if len(shown) == len(pieces) else int(shown["slot"].max()) + 1
    fig = go.Figure(_pieces_trace(shown, names, lang))
    fig.add_trace(go.Scatter(x=np.zeros(rows), y=names[:rows], mode="markers", meta="cores",
                             showlegend=False, hoverinfo="skip",
                             marker=dict(opacity=0)))  # idle cores keep their row
    if lower_bound_us:
        reference_line(fig, "x", float(lower_bound_us),
                       dict(dash="dot", color="#009E73", width=2), _m("bound_short", lang))
    title = _m("gantt_title", lang, pieces=f"{len(pieces):,}") if rows == n_cores else \
        _m("gantt_title_cut", lang, pieces=f"{len(pieces):,}", shown=rows, cores=n_cores)
    base_layout(fig, title, barmode="overlay", bargap=0.2, height=max(300, 18 * rows + 140))
    fig.update_xaxes(title_text=_m("us_axis", lang), rangemode="tozero")
    fig.update_yaxes(type="category", categoryorder="array", categoryarray=list(names[:rows]),
                     autorange="reversed", title_text=_m("core_axis", lang))
    return fig


# ---- every policy ------------------------------------------------------------------------
def policies_figure(table: pd.DataFrame, lang: str = "en", chosen: str = "") -> go.Figure:
    """Efficiency (mean / max) of every policy, one bar group per policy and one bar per
    series ("unsplit" / "split" or "predicted" / "emulated"); the chosen policy's label
    is bold. Columns: policy, series, efficiency, makespan_us."""
    if len(table) == 0:
        return empty_figure(_m("policies_empty", lang), _m("policies_title", lang))
    fig = go.Figure()
    for series, rows in table.groupby("series", sort=False):
        pattern, opacity = SERIES_STYLE.get(series, ("", 1.0))
        fig.add_trace(go.Bar(
            x=[_policy_tick(p, chosen, lang) for p in rows["policy"]], y=rows["efficiency"],
            meta=series, name=_m(SERIES_IDS[series], lang), opacity=opacity,
            marker=dict(color=[COLOURS.get(p, "#7F7F7F") for p in rows["policy"]],
                        pattern_shape=pattern),
            text=[f"{e:.0%}" for e in rows["efficiency"]], textposition="outside",
            customdata=rows["makespan_us"],
            hovertemplate=_m("policies_hover", lang, eff="%{y:.1%}",
                             us="%{customdata:,.2f}") + "<extra>%{fullData.name}</extra>"))
    base_layout(fig, _m("policies_title", lang), barmode="group", height=380)
    fig.update_yaxes(range=[0, 1.12], tickformat=".0%", title_text=_m("eff_axis", lang))
    return fig


def _policy_tick(policy: str, chosen: str, lang: str) -> str:
    name = policy_name(policy, lang)
    return f"<b>{name}</b>" if policy == chosen else name


def completion_figure(table: pd.DataFrame, lang: str = "en") -> go.Figure:
    """P50 and P99 of the sequences' completion times (µs) per policy. Columns: policy,
    p50_us, p99_us."""
    if len(table) == 0:
        return empty_figure(_m("completion_empty", lang), _m("completion_title", lang))
    ticks = [policy_name(p, lang) for p in table["policy"]]
    fig = go.Figure()
    for stat, colour in (("p50", "#56B4E9"), ("p99", "#D55E00")):
        values = table[f"{stat}_us"].to_numpy(np.float64)
        fig.add_trace(go.Bar(x=ticks, y=values, meta=stat, name=_m(stat, lang),
                             marker_color=colour, text=[f"{v:,.1f}" for v in values],
                             textposition="outside",
                             hovertemplate="%{x}: %{y:,.2f} µs<extra>%{fullData.name}</extra>"))
    base_layout(fig, _m("completion_title", lang), barmode="group", height=380)
    fig.update_yaxes(title_text=_m("us_axis", lang), rangemode="tozero")
    return fig


# ---- batch sweep -------------------------------------------------------------------------
def _sweep_line(fig: go.Figure, rows: pd.DataFrame, y, meta: str, name: str, lang: str,
                colour: str, dash: str = "solid") -> None:
    fig.add_trace(go.Scatter(
        x=rows["batch"], y=y, mode="lines+markers", meta=meta, name=name,
        line=dict(color=colour, dash=dash, width=2), customdata=rows["tasks"],
        hovertemplate=_m("sweep_hover", lang, batch="%{x}", tasks="%{customdata}",
                         eff="%{y:.1%}") + "<extra>%{fullData.name}</extra>"))


def sweep_figure(sweep: pd.DataFrame, n_cores: int, tasks_per_seq: int,
                 lang: str = "en") -> go.Figure:
    """Predicted efficiency against the batch size (``sweep_batches``' table): one line per
    policy without splitting, LPT with splitting dashed, and the best any schedule of
    whole tasks can reach, (work / cores) / max(work / cores, longest task), dotted; a
    vertical line where the tasks just fill the cores."""
    if len(sweep) == 0:
        return empty_figure(_m("sweep_empty", lang), _m("sweep_title", lang, cores=n_cores))
    fig = go.Figure()
    whole = sweep[~sweep["split"]]
    for policy, rows in whole.groupby("policy", sort=False):
        _sweep_line(fig, rows, rows["efficiency"], policy, policy_name(policy, lang), lang,
                    COLOURS.get(policy, "#7F7F7F"))
    split = sweep[sweep["split"] & (sweep["policy"] == "lpt")]
    if len(split):
        _sweep_line(fig, split, split["efficiency"], "lpt_split", _m("lpt_split", lang), lang,
                    COLOURS["lpt"], "dash")
    first = whole.drop_duplicates("batch")
    best = first["efficiency"] * first["makespan"] / first["lower_bound"]
    _sweep_line(fig, first, best, "bound", _m("sweep_bound", lang), lang, "#009E73", "dot")
    filled = n_cores / max(1, tasks_per_seq)
    if first["batch"].min() <= filled <= first["batch"].max():
        reference_line(fig, "x", filled, dict(dash="dash", color="#7F7F7F", width=1.5),
                       _m("sweep_filled", lang, cores=n_cores))
    base_layout(fig, _m("sweep_title", lang, cores=n_cores), height=460)
    log_axis(fig, "xaxis", log_span(sweep["batch"]), title_text=_m("batch_axis", lang))
    fig.update_yaxes(range=[0, 1.05], tickformat=".0%", title_text=_m("eff_axis", lang))
    return fig
