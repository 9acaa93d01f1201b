"""Per-core summaries: pipe busy ratios (named as Ascend's profiler) and load balance.

The ratio bars answer "which pipe is the bottleneck"; the load-balance bars answer "do all
cores finish together". Both read the emulator's ``per_core`` table only, and the
load-balance bars draw the metric's own definition (``explorer.core.metrics``).
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from explorer.core.metrics import balance_cores, critical_work_ns, load_balance, worked
from explorer.plots.style import (
    CORE_KIND_COLOURS,
    PIPES,
    RATIO_NAMES,
    base_layout,
    empty_figure,
    msg,
    reference_line,
)
from explorer.plots.values import format_metric

_NS_PER_US = 1000.0


def _cores_using(per_core: pd.DataFrame, pipe: str) -> pd.DataFrame:
    """Cores whose kind ever uses the pipe (an AIV has no CUBE; it must not dilute the mean).

    Mirrors the profiler, which reports aic_* ratios over AIC cores and aiv_* over AIV cores.
    """
    busy = per_core.get(f"busy_ns_{pipe}")
    if busy is None or "core_kind" not in per_core:
        return per_core
    kinds = per_core.loc[busy.to_numpy() > 0, "core_kind"].unique()
    return per_core[per_core["core_kind"].isin(kinds)] if len(kinds) else per_core


def ratio_summary(per_core: pd.DataFrame) -> pd.DataFrame:
    """Mean and max ratio per pipe, indexed by the profiler's ratio name, in lane order."""
    rows = []
    for pipe in PIPES:
        if f"ratio_{pipe}" not in per_core:
            continue
        used = _cores_using(per_core, pipe)
        ratio = used[f"ratio_{pipe}"].to_numpy(dtype=np.float64)
        kinds = used["core_kind"].astype(str).unique() if "core_kind" in used else []
        kinds = ", ".join(sorted(kinds))
        rows.append(dict(name=RATIO_NAMES[pipe], pipe=pipe, mean=float(ratio.mean()),
                         max=float(ratio.max()), cores=len(used), kinds=kinds))
    return pd.DataFrame(rows, columns=["name", "pipe", "mean", "max", "cores", "kinds"])


def pipe_ratio_figure(per_core: pd.DataFrame, lang: str = "en") -> go.Figure:
    """Grouped bars of mean and max busy ratio per pipe over the cores that use it."""
    summary = ratio_summary(per_core) if len(per_core) else pd.DataFrame()
    if summary.empty:
        return empty_figure(msg("ratio.empty", lang), msg("ratio.title", lang))
    fig = go.Figure()
    custom = summary[["cores", "kinds"]].to_numpy(dtype=object)
    for stat, name_id, hover_id, colour in (("mean", "ratio.mean", "ratio.hover_mean", "#0072B2"),
                                            ("max", "ratio.max", "ratio.hover_max", "#D55E00")):
        hover = msg(hover_id, lang, name="%{x}", value="%{y:.1%}",
                    cores="%{customdata[0]}", kinds="%{customdata[1]}")
        fig.add_trace(go.Bar(x=summary["name"], y=summary[stat], name=msg(name_id, lang),
                             marker_color=colour, customdata=custom,
                             hovertemplate=hover + "<extra></extra>"))
    base_layout(fig, msg("ratio.title", lang), barmode="group")
    fig.update_yaxes(range=[0, 1], tickformat=".0%", title_text=msg("ratio.y_title", lang))
    fig.update_xaxes(title_text=msg("ratio.x_title", lang))
    return fig


def _mean_max_lines(fig: go.Figure, mean: float, peak: float, lang: str) -> None:
    """Dashed mean and max lines across the bars, named with their values in the legend
    (on the plot the two labels sit on each other whenever the cores are balanced)."""
    for line_id, value, colour in (("balance.mean_line", mean, "#333333"),
                                   ("balance.max_line", peak, "#D55E00")):
        text = msg(line_id, lang, value=f"{value:.3f}")
        reference_line(fig, "y", float(value), dict(dash="dash", color=colour, width=1.5),
                       text)


def _balance_lines(fig: go.Figure, active: np.ndarray, lang: str) -> None:
    """`_mean_max_lines` of the values ``active`` (µs)."""
    _mean_max_lines(fig, float(active.mean()), float(active.max()), lang)


#: grey of the cores the load balance does not count, and of the time spent at SyncAll
_EXCLUDED_GREY, _WAITING_GREY = "#9E9E9E", "#D9D9D9"


def _bar(fig: go.Figure, x, y, custom, name: str, meta: str, colour: str, hover: str,
         pattern: str = "") -> None:
    fig.add_trace(go.Bar(x=x, y=y, name=name, meta=meta, marker_color=colour,
                         marker_pattern_shape=pattern, customdata=custom,
                         hovertemplate=hover + "<extra></extra>"))


def load_balance_figure(per_core: pd.DataFrame, lang: str = "en") -> go.Figure:
    """Work time per core (µs), the load-balance metric's definition drawn: bars coloured
    by core kind for the cores the metric counts (``metrics.balance_cores``), grey for the
    cores it leaves out (another kind's, or cores that only wait at a SyncAll), each core's
    SyncAll waits stacked on top in light grey; the mean and max lines and the title's
    mean/max are the metric's own numbers. Each trace's ``meta`` says what it holds:
    "counted", "not_counted", "idle" or "waiting"."""
    if len(per_core) == 0 or not {"active_ns", "work_ns"} <= set(per_core.columns):
        return empty_figure(msg("balance.empty", lang), msg("balance.title", lang, ratio="-"))
    counted, did = balance_cores(per_core), worked(per_core)
    work_ns = critical_work_ns(per_core)
    _, mean_max = load_balance(per_core)
    order = np.argsort(per_core["core"].to_numpy(), kind="stable")
    table = per_core.iloc[order]
    counted, did = counted[order], did[order]
    work = table["work_ns"].to_numpy(np.float64) / _NS_PER_US
    waiting = np.maximum(table["active_ns"].to_numpy(np.float64) / _NS_PER_US - work, 0.0)
    stall = table.get("stall_ns", pd.Series(0.0, index=table.index)).to_numpy(np.float64)
    custom = np.column_stack([work, waiting, stall / _NS_PER_US])
    names = table["core_name"].astype(str).to_numpy()
    kinds = table.get("core_kind", pd.Series("", index=table.index)).astype(str).to_numpy()
    fig = go.Figure()
    hover = msg("balance.hover", lang, core="%{x}", work="%{customdata[0]:.3f}",
                wait="%{customdata[1]:.3f}", stall="%{customdata[2]:.3f}")
    for kind in dict.fromkeys(kinds[counted]):
        sel = counted & (kinds == kind)
        _bar(fig, names[sel], work[sel], custom[sel], kind or "-", "counted",
             CORE_KIND_COLOURS.get(kind, "#7F7F7F"), hover)
    for kind in dict.fromkeys(kinds[did & ~counted]):
        sel = did & ~counted & (kinds == kind)
        _bar(fig, names[sel], work[sel], custom[sel],
             msg("balance.not_counted", lang, kind=kind or "-"), "not_counted",
             _EXCLUDED_GREY, hover, "/")
    for kind in dict.fromkeys(kinds[~did]):
        sel = ~did & (kinds == kind)
        _bar(fig, names[sel], waiting[sel], custom[sel],
             msg("balance.idle", lang, kind=kind or "-"), "idle", _EXCLUDED_GREY, hover)
    if (waiting[did] > 0).any():
        _bar(fig, names[did], waiting[did], custom[did], msg("balance.waiting", lang),
             "waiting", _WAITING_GREY, hover)
    caption = ""
    if len(work_ns):
        _mean_max_lines(fig, float(work_ns.mean()) / _NS_PER_US,
                        float(work_ns.max()) / _NS_PER_US, lang)
        kind = str(kinds[counted][0]) or "-"
        caption = msg("balance.caption", lang, count=len(work_ns), kind=kind)
    title = msg("balance.title", lang,
                ratio=format_metric("load_balance_mean_max", mean_max, lang))
    base_layout(fig, title, caption=caption, bargap=0.15, barmode="stack")
    fig.update_xaxes(categoryorder="array", categoryarray=names,
                     title_text=msg("balance.x_title", lang))
    fig.update_yaxes(title_text=msg("balance.y_title", lang), rangemode="tozero")
    return fig
