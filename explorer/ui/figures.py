"""Figures of the pages, built once per (scenario, language, view) and then reused.

A page reruns on every widget change; rebuilding a timeline of thousands of bars each time
would dominate the rerun. Figures are pure functions of their inputs (``explorer.plots``),
so they are cached as resources (shared, never mutated: ``st.plotly_chart`` only reads
them) on the scenario, the language and the view options.
"""
from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st

from explorer import plots
from explorer.core import Scenario
from explorer.core.i18n import t
from explorer.ui import state
from hardware_presets import Chip

CHART_CONFIG = {"displaylogo": False}


@st.cache_resource(max_entries=16, show_spinner=False, hash_funcs={Chip: hash})
def core_diagram(chip: Chip, lang: str) -> go.Figure:
    """Block diagram of one core (coupled) or one AIC + 2 AIV group (split)."""
    return plots.core_diagram_figure(chip, lang)


def _roofline(result, lang: str) -> go.Figure:
    """The run as one point under the chip's roofs (vector ops count one per element)."""
    m = result.metrics
    point = {"label": t("ui.va.roofline_point", lang, dtype=result.params["dtype"]),
             "intensity": m["arithmetic_intensity"], "tflops": m["achieved_tflops"]}
    return plots.roofline_figure(result.chip, [point], lang)


_BUILDERS = {
    "pipe_ratio": lambda r, lang: plots.pipe_ratio_figure(r.per_core, lang),
    "traffic": lambda r, lang: plots.traffic_figure(r.traffic, lang),
    "load_balance": lambda r, lang: plots.load_balance_figure(r.per_core, lang),
    "bandwidth": lambda r, lang: plots.bandwidth_figure(
        r.bandwidth, r.chip.hbm_bandwidth_GBps, r.chip.l2_bandwidth_GBps, lang),
    "roofline": _roofline,
}


@st.cache_resource(max_entries=48, show_spinner=False,
                   hash_funcs={Scenario: state.scenario_key})
def result_figure(kind: str, scenario: Scenario, lang: str) -> go.Figure:
    """One summary figure of a run: pipe_ratio, traffic, load_balance, bandwidth, roofline."""
    return _BUILDERS[kind](state.simulate(scenario), lang)


@st.cache_resource(max_entries=24, show_spinner=False,
                   hash_funcs={Scenario: state.scenario_key})
def timeline(scenario: Scenario, lang: str, cores: tuple[int, ...] | None,
             window: tuple[float, float] | None) -> go.Figure:
    """The per-core x per-pipe timeline; exact segments once cores or a window narrow it."""
    result = state.simulate(scenario)
    return plots.timeline_figure(result.timeline, result.makespan_ns, lang,
                                 cores=cores, window=window)


def show(figure: go.Figure, key: str) -> None:
    """Draw a cached figure at full container width."""
    st.plotly_chart(figure, key=key, config=CHART_CONFIG)
