"""The chip page's comparison of today's chips with 910B2: a table of the key figures, each
cell marked and tinted by the status its number rests on (announced, estimate), and the
figure of cube peaks per precision and HBM bandwidth. It compares the presets as shipped,
whatever chip the session tunes.
"""
from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from explorer.core import chip_compare as cc
from explorer.plots.chip_compare import comparison_figure
from explorer.plots.text import format_number
from explorer.ui import state
from explorer.ui.chip_view import ROW_COLOURS, STATUS_MARK


def _cell(value: float | None, status: str) -> str:
    return "—" if value is None else STATUS_MARK.get(status, "") + format_number(value, 4)


def comparison_table() -> tuple[pd.DataFrame, pd.DataFrame]:
    """(the key figures' cells, their statuses): one row per figure, one column per chip."""
    chips = cc.compared_chips()
    rows = cc.comparison(chips)
    index = [state.tr(msg_id) for msg_id, _ in rows]
    names = [c.display_name for c in chips]
    cells = pd.DataFrame([[_cell(v, s) for v, s in values] for _, values in rows],
                         index=index, columns=names)
    statuses = pd.DataFrame([[s for _, s in values] for _, values in rows], index=index,
                            columns=names)
    return cells, statuses


@st.cache_resource(max_entries=4, show_spinner=False)
def _figure(lang: str) -> go.Figure:
    """Built once per language (the compared presets never change in a process)."""
    return comparison_figure(cc.compared_chips(), lang)


def show() -> None:
    """The table (tinted cells: amber an estimate, purple an announced figure), its legend
    and the figure."""
    cells, statuses = comparison_table()
    styled = cells.style.apply(
        lambda column: [ROW_COLOURS.get(s, "") for s in statuses[column.name]], axis=0)
    st.dataframe(styled, width="stretch", height="content", key="chip_compare_table")
    st.caption(state.tr("ui.chip.compare.marks"))
    st.plotly_chart(_figure(state.language()), key="chip_compare",
                    config=state.CHART_CONFIG)
