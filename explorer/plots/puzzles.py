"""Figures of the Puzzles page: the student's per-pipe busy ratios next to the reference
solution's, and the progress over every puzzle (best time / reference time against each
puzzle's goal). The two timelines are ``explorer.plots.timeline.timeline_figure`` on one
shared time window (``shared_window``), so the shorter run visibly ends early.

Pure functions of plain data (pipe -> ratio mappings, progress rows); no streamlit. Every
trace carries a ``meta`` tag ("student", "reference", "best", "goal") that tests can find.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import plotly.graph_objects as go

from explorer.plots.style import PIPES, RATIO_NAMES, base_layout, empty_figure, msg
from explorer.plots.text import format_number

STUDENT_COLOUR, REFERENCE_COLOUR, GOAL_COLOUR = "#0072B2", "#7F7F7F", "#D55E00"


def shared_window(*makespans_ns: float) -> tuple[float, float]:
    """The time window (ns) both timelines are drawn on: 0 to the longer run's end."""
    return 0.0, max([1.0, *(float(m) for m in makespans_ns if m and m > 0)])


def ratio_comparison_figure(student: Mapping[str, float], reference: Mapping[str, float],
                            lang: str = "en") -> go.Figure:
    """Per pipe (named as the profiler names its ratio), the student's busy ratio next to
    the reference's: busy time / kernel duration, averaged over the cores that used it."""
    pipes = [p for p in PIPES if p in student or p in reference]
    if not pipes:
        return empty_figure(msg("puzzles.ratio_empty", lang), msg("puzzles.ratio_title", lang))
    names = [RATIO_NAMES[p] for p in pipes]
    fig = go.Figure()
    for meta, values, name_id, colour in (
            ("student", student, "puzzles.student", STUDENT_COLOUR),
            ("reference", reference, "puzzles.reference", REFERENCE_COLOUR)):
        name = msg(name_id, lang)
        hover = msg("puzzles.ratio_hover", lang, who=name, pipe="%{x}", value="%{y:.1%}")
        fig.add_trace(go.Bar(x=names, y=[float(values.get(p, 0.0)) for p in pipes], name=name,
                             meta=meta, marker_color=colour,
                             hovertemplate=hover + "<extra></extra>"))
    base_layout(fig, msg("puzzles.ratio_title", lang), barmode="group", height=360)
    fig.update_yaxes(range=[0, 1], tickformat=".0%", title_text=msg("ratio.y_title", lang))
    fig.update_xaxes(title_text=msg("ratio.x_title", lang))
    return fig


@dataclass(frozen=True)
class ProgressRow:
    """One puzzle on the progress figure: its label (order and title), its timing goal
    and the best passing run's time / the reference's (None: not solved yet)."""

    label: str
    goal: float
    best_ratio: float | None


def progress_figure(rows: Sequence[ProgressRow], lang: str = "en") -> go.Figure:
    """Each puzzle's best time / the reference's (bars, solved puzzles only) and its goal
    (markers): a bar at or under its marker meets the goal; lower is faster."""
    if not rows:
        return empty_figure(msg("puzzles.progress_none", lang),
                            msg("puzzles.progress_title", lang))
    labels = [row.label for row in rows]
    solved = [row for row in rows if row.best_ratio is not None]
    fig = go.Figure()
    fig.add_trace(go.Bar(
        y=[row.label for row in solved], x=[row.best_ratio for row in solved], orientation="h",
        name=msg("puzzles.best", lang), meta="best", marker_color=STUDENT_COLOUR,
        text=[f"{format_number(row.best_ratio)}×" for row in solved], textposition="auto",
        hovertemplate=msg("puzzles.best_hover", lang, puzzle="%{y}", ratio="%{x:.2f}")
        + "<extra></extra>"))
    fig.add_trace(go.Scatter(
        y=labels, x=[row.goal for row in rows], mode="markers", meta="goal",
        name=msg("puzzles.goal", lang),
        marker=dict(symbol="line-ns", size=18, line=dict(width=3, color=GOAL_COLOUR),
                    color=GOAL_COLOUR),
        hovertemplate=msg("puzzles.goal_hover", lang, puzzle="%{y}", goal="%{x:.2f}")
        + "<extra></extra>"))
    caption = "" if solved else msg("puzzles.progress_none", lang)
    top = max([1.0, *(row.goal for row in rows), *(row.best_ratio for row in solved)])
    base_layout(fig, msg("puzzles.progress_title", lang), caption=caption, showlegend=True,
                height=max(260, 28 * len(rows) + 170))
    fig.update_xaxes(range=[0, top * 1.15], title_text=msg("puzzles.progress_x", lang))
    fig.update_yaxes(categoryorder="array", categoryarray=labels, autorange="reversed",
                     title_text=msg("puzzles.progress_y", lang))
    return fig
