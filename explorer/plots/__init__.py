"""Figures of the explorer: pure functions from result tables or a chip to a plotly Figure.

Nothing here imports streamlit; every user-facing string comes from the ``plots`` message
catalogue (``explorer/core/locales/<lang>/plots.toml``) so each figure follows the language.
"""
from explorer.plots.core_diagram import core_diagram_figure
from explorer.plots.cores import load_balance_figure, pipe_ratio_figure
from explorer.plots.memory import bandwidth_figure, traffic_figure
from explorer.plots.roofline import roofline_figure
from explorer.plots.timeline import timeline_figure

__all__ = [
    "bandwidth_figure",
    "core_diagram_figure",
    "load_balance_figure",
    "pipe_ratio_figure",
    "roofline_figure",
    "timeline_figure",
    "traffic_figure",
]
