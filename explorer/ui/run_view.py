"""What a page shows about one run: key metrics with their definitions, the timeline with
its view controls, the summary figures, the numerical check and the downloads.

Everything here reads a cached ``Result`` and cached figures, so changing a view control
(cores, time window) or the language reruns in a blink without re-emulating. Figures are
pure functions of their inputs (``explorer.plots``); rebuilding a timeline of thousands of
bars on every rerun would dominate it, so they are cached as resources on the scenario,
the language and the view (shared, never mutated: ``st.plotly_chart`` only reads them).
"""
from __future__ import annotations

import json

import plotly.graph_objects as go
import streamlit as st

from explorer import plots
from explorer.core import Result, Scenario
from explorer.core.i18n import has, t
from explorer.core.metrics import METRICS
from explorer.ui import state

KEY_METRICS = ("makespan_us", "hbm_GBps", "hbm_utilization", "bound",
               "mte2_ratio", "aiv_vec_ratio", "overlap_ratio", "roofline_efficiency")
VIEW_CORES, VIEW_WINDOW = "view.cores", "w.view.window"
FULL_WINDOW = (0.0, 100.0)
#: cores drawn at first: 48 cores x 3 pipes would make a chart thousands of pixels tall
DEFAULT_CORES = 8


# ---- cached figures ----------------------------------------------------------------------
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
    st.plotly_chart(figure, key=key, config=state.CHART_CONFIG)


# ---- metrics -----------------------------------------------------------------------------
def metric_label(name: str) -> str:
    msg_id = f"metric.{name}.label"
    return state.tr(msg_id) if has(msg_id) else name


def metric_value(name: str, value: object) -> str:
    """A metric as text: ratios in %, µs and GB/s with their unit, the bound as a word."""
    if name == "bound":
        msg_id = f"metric.bound_value.{value}"
        return state.tr(msg_id) if has(msg_id) else str(value)
    unit = METRICS.get(name, "")
    if not unit:
        return f"{float(value):.1%}"
    return f"{float(value):,.2f} {unit}" if unit == "µs" else f"{float(value):,.0f} {unit}"


def show_metrics(result: Result, names: tuple[str, ...] = KEY_METRICS) -> None:
    """Key metrics in rows of four, each with its one-line definition as help."""
    for start in range(0, len(names), 4):
        row = names[start:start + 4]
        widths = [1.5 if name == "bound" else 1.0 for name in row]  # "latency / sync"
        for column, name in zip(st.columns(widths), row):
            help_id = f"metric.{name}.def"
            column.metric(metric_label(name), metric_value(name, result.metrics[name]),
                          help=state.tr(help_id) if has(help_id) else None, border=True)


def _view_controls(result: Result) -> tuple[tuple[int, ...] | None, tuple | None]:
    """Core filter (the first cores at first; empty = all) and time window (in % of the
    run, so it survives a new scenario)."""
    names = result.timeline.drop_duplicates("core").set_index("core")["core_name"]
    options = [int(c) for c in names.index]
    chosen = st.session_state.get(VIEW_CORES, options[:DEFAULT_CORES])
    st.session_state[VIEW_CORES] = [c for c in chosen if c in options]
    left, right = st.columns(2)
    cores = left.multiselect(state.tr("ui.va.cores"), options, help=state.tr(
        "ui.va.cores_help"), format_func=lambda c: str(names[c]),
        placeholder=state.tr("ui.va.cores_all"), **state.bound(VIEW_CORES, []))
    window = right.slider(state.tr("ui.va.window"), 0.0, 100.0, FULL_WINDOW, step=0.5,
                          format="%.1f%%", help=state.tr("ui.va.window_help"), key=VIEW_WINDOW)
    span = result.makespan_ns / 100.0
    window_ns = None if tuple(window) == FULL_WINDOW else (window[0] * span, window[1] * span)
    return (tuple(sorted(cores)) or None), window_ns


def show_timeline(scenario: Scenario, result: Result) -> None:
    """The timeline; exact segments once the cores or the window are narrowed enough."""
    st.subheader(state.tr("ui.va.timeline"))
    cores, window = _view_controls(result)
    show(timeline(scenario, state.language(), cores, window), key="timeline")
    st.caption(state.tr("ui.va.timeline_help"))


def show_figures(scenario: Scenario) -> None:
    """Pipe ratios, bandwidth, traffic, load balance and the roofline, two per row."""
    lang = state.language()
    rows = (("pipe_ratio", "bandwidth"), ("traffic", "load_balance"))
    for row in rows:
        for column, kind in zip(st.columns(2), row):
            with column:
                show(result_figure(kind, scenario, lang), key=kind)
                st.caption(state.tr(f"ui.va.caption.{kind}"))


def show_roofline(scenario: Scenario) -> None:
    show(result_figure("roofline", scenario, state.language()), key="roofline")
    st.caption(state.tr("ui.va.caption.roofline"))


def show_numerics(result: Result) -> None:
    """Pass / fail of the float64 check, its errors vs the bound, and what was verified."""
    check = result.numerics
    values = dict(abs=f"{check.max_abs_error:.3g}", rel=f"{check.max_rel_error:.3g}",
                  bound=f"{check.bound:.3g}", verified=f"{check.verified:,}",
                  total=f"{check.total:,}", dtype=result.params["dtype"])
    if check.passed:
        st.success(state.tr("ui.va.numerics_pass", **values), icon=":material/check_circle:")
    else:
        st.error(state.tr("ui.va.numerics_fail", **values), icon=":material/cancel:")
    for msg_id, note_values in result.notes:
        if has(msg_id):
            st.caption(state.tr(msg_id, **{k: f"{v:,}" if isinstance(v, int) else v
                                            for k, v in note_values.items()}))


def show_downloads(scenario: Scenario) -> None:
    """Scenario file, Chrome / Perfetto trace and timeline CSV (the last two made on click)."""
    stem = f"{scenario.kernel}_{scenario.preset}"
    common = {"on_click": "ignore", "width": "stretch"}
    st.download_button(state.tr("download.scenario"), scenario.to_toml(),
                       file_name=f"{stem}.toml", mime="application/toml", key="dl_scenario",
                       icon=":material/description:", **common)
    st.download_button(state.tr("download.trace"), lambda: _trace_json(scenario),
                       file_name=f"{stem}_trace.json", mime="application/json", key="dl_trace",
                       help=state.tr("ui.va.trace_help"), icon=":material/timeline:", **common)
    st.download_button(state.tr("download.csv"), lambda: _timeline_csv(scenario),
                       file_name=f"{stem}_timeline.csv", mime="text/csv", key="dl_csv",
                       icon=":material/table:", **common)


def _trace_json(scenario: Scenario) -> str:
    from explorer.core.trace import chrome_trace

    return json.dumps(chrome_trace(state.simulate(scenario)))


def _timeline_csv(scenario: Scenario) -> str:
    return state.simulate(scenario).timeline.to_csv(index=False)
