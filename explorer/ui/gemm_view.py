"""What the GEMM page shows about one scenario: the task grid on the cores (before any
emulation: the plan alone decides it), the key metrics with achieved TFLOPS against the
precision's peak, the timeline, the summary figures, the roofline and the numerical check.

Figures are cached as resources on the scenario and the language (``st.plotly_chart`` only
reads them; the plan and the task grid on the parameters alone, which is all they read), so
a rerun that changes nothing, or only the language, a view control, the seed or the chip,
redraws them in a blink; the emulation itself is cached in ``state.simulate``.
"""
from __future__ import annotations

import json

import plotly.graph_objects as go
import streamlit as st

from explorer import plots
from explorer.core import Result, Scenario
from explorer.core.i18n import has, t
from explorer.core.metrics import METRIC_DEF_IDS
from explorer.plots import gemm as gemm_plots
from explorer.ui import gemm_controls, run_view, state
from kernels.gemm import kernel as gemm

METRIC_ROWS = (("makespan_us", "achieved_tflops", "aic_cube_ratio", "bound"),
               ("mte2_ratio", "mte1_ratio", "fixpipe_ratio", "l2_hit_rate"),
               ("hbm_GBps", "arithmetic_intensity", "roofline_efficiency",
                "load_balance_mean_max"))
FIGURE_ROWS = (("roofline", "pipe_ratio"), ("traffic", "load_balance"))
#: figure -> message id of its caption (what to notice in it)
CAPTION_IDS = {"roofline": "ui.gemm.caption.roofline", "pipe_ratio": "ui.gemm.caption.pipe_ratio",
               "traffic": "ui.gemm.caption.traffic",
               "load_balance": "ui.gemm.caption.load_balance",
               "bandwidth": "ui.gemm.caption.bandwidth"}
COLOUR_BY = "gm.view.colour_by"


# ---- cached plan and figures -------------------------------------------------------------
def params_key(scenario: Scenario) -> str:
    """What the plan reads: the parameters alone (a new seed or chip keeps the task grid)."""
    return json.dumps(scenario.params_dict, sort_keys=True)


@st.cache_resource(max_entries=16, show_spinner=False, hash_funcs={Scenario: params_key})
def plan(scenario: Scenario) -> gemm.Plan:
    """The validated scenario's tiling resolved into tasks (grid, panels, K split)."""
    return gemm.plan(gemm.GemmParams.of(scenario.params_dict))


@st.cache_resource(max_entries=16, show_spinner=False, hash_funcs={Scenario: params_key})
def grid_figure(scenario: Scenario, lang: str, colour_by: str) -> go.Figure:
    """C cut into task panels, coloured by core slot or wave, one panel per K split."""
    pl, p = plan(scenario), scenario.params_dict
    return gemm_plots.task_grid_figure(pl.grid, lang, colour_by, panel=pl.single,
                                       size=(p["M"], p["N"], p["K"]), k_per_z=pl.k_per_z)


@st.cache_resource(max_entries=16, show_spinner=False,
                   hash_funcs={Scenario: state.scenario_key})
def roofline(scenario: Scenario, lang: str) -> go.Figure:
    """The run as one point under the input precision's cube roof, HBM and L2 slopes."""
    result = state.simulate(scenario)
    p, m = result.params, result.metrics
    point = {"label": t("ui.gemm.roofline_point", lang, dtype=p["dtype_in"], M=p["M"],
                        N=p["N"], K=p["K"]),
             "intensity": m["arithmetic_intensity"], "tflops": m["achieved_tflops"]}
    return plots.roofline_figure(result.chip, [point], lang, precision=p["dtype_in"])


# ---- the task grid -----------------------------------------------------------------------
def show_grid(scenario: Scenario) -> None:
    """The tile-to-core picture with its colouring switch, and the waves in words."""
    st.subheader(state.tr("ui.gemm.grid.title"))
    colour_by = st.radio(state.tr("ui.gemm.grid.colour_by"), gemm_plots.COLOUR_BY,
                         horizontal=True, help=state.tr("ui.gemm.grid.colour_by_help"),
                         format_func=gemm_controls.labels(gemm_controls.COLOUR_BY_IDS),
                         **state.bound(COLOUR_BY, "slot"))
    pl = plan(scenario)
    run_view.show(grid_figure(scenario, state.language(), colour_by), key="task_grid")
    summary = gemm_plots.wave_summary(pl.grid)
    text = gemm_plots.wave_text(pl.grid, state.language())
    X, Y, Z = pl.grid.shape
    words = state.tr("ui.gemm.grid.shape", X=X, Y=Y, Z=Z, rows=pl.single[0],
                     cols=pl.single[1], k=pl.k_per_z)
    (st.warning if summary["idle"] or summary["tasks"] < summary["cores"] else st.info)(
        f"{words} {text}", icon=":material/grid_view:")
    st.caption(state.tr("ui.gemm.grid.caption"))


# ---- metrics -----------------------------------------------------------------------------
def _tflops_metric(column, result: Result) -> None:
    """Achieved TFLOPS with its share of the input precision's cube peak."""
    dtype = result.params["dtype_in"]
    achieved = float(result.metrics["achieved_tflops"])
    peak = result.chip.peak_tflops(dtype) if dtype in result.chip.cube_precisions else 0.0
    delta = state.tr("ui.gemm.of_peak", share=f"{achieved / peak:.0%}", peak=f"{peak:,.1f}",
                     dtype=dtype) if peak else None
    column.metric(run_view.metric_label("achieved_tflops"), f"{achieved:,.1f}",
                  delta=delta, delta_color="off", help=state.tr("metric.achieved_tflops.def"),
                  border=True)


def show_metrics(result: Result) -> None:
    """Key metrics in rows of four, each with its one-line definition as help."""
    for row in METRIC_ROWS:
        widths = [1.5 if name == "bound" else 1.0 for name in row]
        for column, name in zip(st.columns(widths), row):
            if name == "achieved_tflops":
                _tflops_metric(column, result)
                continue
            help_id = METRIC_DEF_IDS.get(name, "")
            column.metric(run_view.metric_label(name),
                          run_view.metric_value(name, result.metrics[name]),
                          help=state.tr(help_id) if has(help_id) else None, border=True)


# ---- timeline, figures, check ------------------------------------------------------------
def show_timeline(scenario: Scenario, result: Result) -> None:
    """The per-core x per-pipe timeline (cube lanes CUBE, MTE1, MTE2, FIXP)."""
    st.subheader(state.tr("ui.va.timeline"))
    cores, window = run_view._view_controls(result)
    run_view.show(run_view.timeline(scenario, state.language(), cores, window), key="timeline")
    st.caption(state.tr("ui.gemm.timeline_help"))


def _figure(kind: str, scenario: Scenario, lang: str) -> go.Figure:
    if kind == "roofline":
        return roofline(scenario, lang)
    return run_view.result_figure(kind, scenario, lang)


def show_figure(kind: str, scenario: Scenario) -> None:
    """One summary figure with what to notice in it."""
    run_view.show(_figure(kind, scenario, state.language()), key=kind)
    st.caption(state.tr(CAPTION_IDS[kind]))


def show_figures(scenario: Scenario) -> None:
    """Roofline, pipe ratios, traffic and load balance, two per row."""
    for row in FIGURE_ROWS:
        for column, kind in zip(st.columns(2), row):
            with column:
                show_figure(kind, scenario)


def show_numerics(result: Result) -> None:
    """The float64 check of C (explorer.core.verdict), how C is computed, the notes."""
    p = result.params
    subject = state.tr("verdict.subject.gemm", dtype_in=p["dtype_in"], dtype_out=p["dtype_out"])
    run_view.show_check(result.numerics, subject,
                        ((("ui.gemm.numerics_note", {}),) + tuple(result.notes)))
