"""Per-core summaries: pipe busy ratios (named as Ascend's profiler) and load balance.

The ratio bars answer "which pipe is the bottleneck"; the load-balance bars answer "do all
cores finish together". Both read the emulator's ``per_core`` table only.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from explorer.plots.style import (
    CORE_KIND_COLOURS,
    PIPES,
    RATIO_NAMES,
    base_layout,
    empty_figure,
    msg,
    reference_line,
)

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


def _balance_lines(fig: go.Figure, active: np.ndarray, lang: str) -> None:
    """Dashed mean and max lines across the bars, named with their values in the legend
    (on the plot the two labels sit on each other whenever the cores are balanced)."""
    for line_id, value, colour in (("balance.mean_line", active.mean(), "#333333"),
                                   ("balance.max_line", active.max(), "#D55E00")):
        text = msg(line_id, lang, value=f"{value:.3f}")
        reference_line(fig, "y", float(value), dict(dash="dash", color=colour, width=1.5),
                       text)


def load_balance_figure(per_core: pd.DataFrame, lang: str = "en") -> go.Figure:
    """Active time per core (µs) as bars coloured by core kind, with mean and max lines."""
    if len(per_core) == 0 or "active_ns" not in per_core:
        return empty_figure(msg("balance.empty", lang), msg("balance.title", lang, ratio="-"))
    table = per_core.sort_values("core")
    active = table["active_ns"].to_numpy(dtype=np.float64) / _NS_PER_US
    stall = table.get("stall_ns", pd.Series(0.0, index=table.index)).to_numpy(np.float64)
    names = table["core_name"].astype(str).to_numpy()
    kinds = table.get("core_kind", pd.Series("", index=table.index)).astype(str).to_numpy()
    fig = go.Figure()
    hover = msg("balance.hover", lang, core="%{x}", active="%{y:.3f}",
                stall="%{customdata:.3f}")
    for kind in dict.fromkeys(kinds):
        sel = kinds == kind
        fig.add_trace(go.Bar(x=names[sel], y=active[sel], name=kind or "-",
                             marker_color=CORE_KIND_COLOURS.get(kind, "#7F7F7F"),
                             customdata=stall[sel] / _NS_PER_US,
                             hovertemplate=hover + "<extra></extra>"))
    _balance_lines(fig, active, lang)
    peak = active.max()
    ratio = f"{active.mean() / peak:.2f}" if peak > 0 else "-"
    base_layout(fig, msg("balance.title", lang, ratio=ratio), bargap=0.15)
    fig.update_xaxes(categoryorder="array", categoryarray=names,
                     title_text=msg("balance.x_title", lang))
    fig.update_yaxes(title_text=msg("balance.y_title", lang), rangemode="tozero")
    return fig
