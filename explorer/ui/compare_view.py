"""What the Compare page shows about two runs: the scenario diff first, then the sentences
that say what changed and why, the metric table with each metric's definition, the two
timelines on one time axis, bytes per path of A next to B, B / A per metric, downloads.

Runs come from the cached ``state.simulate``; the comparison and its figures are cached
as resources on the two scenarios (and the language), so a rerun that changes nothing
(a language switch redraws the text only) does not re-emulate.
"""
from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

import kernels
from explorer.core import Scenario, gallery
from explorer.core import compare as cmp
from explorer.core.sweep import CHIP
from explorer.plots import compare as plots
from explorer.plots import values
from explorer.plots.other_reports import compare_report
from explorer.ui import decode_controls, gemm_controls, run_view, state
from explorer.ui.kernel_pages import page_of
from explorer.ui.sweep_controls import knob_label
from kernels.models import list_models, load_model

COLUMNS = ("metric", "a", "b", "delta", "ratio", "definition")  # every value with its unit
#: message ids: the table's column headings, the half-width figures' titles, the downloads
COLUMN_IDS = {"metric": "ui.compare.col.metric", "a": "ui.compare.col.a", "b": "ui.compare.col.b",
              "delta": "ui.compare.col.delta", "ratio": "ui.compare.col.ratio",
              "definition": "ui.compare.col.definition"}
FIGURE_TITLE_IDS = {"traffic": "ui.compare.traffic_title", "ratio": "ui.compare.ratio_title"}
DOWNLOAD_IDS = {"a": "ui.compare.download_a", "b": "ui.compare.download_b"}
#: the scenario's own fields in the diff, named as the report names them
FIELD_IDS = {"preset": "report.field.preset", "kernel": "report.field.kernel",
             "seed": "report.field.seed"}
#: the name of each choice of a kernel's parameters, by parameter (the kernel pages' tables)
CHOICE_IDS = {"decode": decode_controls.CHOICE_IDS,
              "gemm": {"policy": gemm_controls.POLICY_IDS, "balance": gemm_controls.BALANCE_IDS,
                       "split_k_mode": gemm_controls.SPLIT_K_MODE_IDS,
                       "sparsity": gemm_controls.SPARSITY_IDS}}


@st.cache_resource(max_entries=8, show_spinner=False,
                   hash_funcs={Scenario: state.scenario_key})
def comparison(a: Scenario, b: Scenario) -> cmp.Comparison:
    """Both runs (cached emulator) and their comparison."""
    with st.spinner(state.tr("ui.compare.running")):
        return cmp.compare(state.simulate(a), state.simulate(b))


_FIGURES = {"timelines": lambda c, lang: plots.timelines_figure(c.a, c.b, lang),
            "traffic": lambda c, lang: plots.traffic_figure(c.a, c.b, lang),
            "ratio": plots.ratio_figure}


@st.cache_resource(max_entries=24, show_spinner=False,
                   hash_funcs={Scenario: state.scenario_key})
def figure(kind: str, a: Scenario, b: Scenario, lang: str) -> go.Figure:
    """One figure of the comparison: timelines, traffic or ratio."""
    return _FIGURES[kind](comparison(a, b), lang)


# ---- text --------------------------------------------------------------------------------
def field_name(kernel: str, field: str) -> str:
    """A differing field as the pages label it: "Chip preset", "BUFFER_NUM (buffer_num)"."""
    if field in FIELD_IDS:
        return state.tr(FIELD_IDS[field])
    group, _, name = field.partition(".")
    return knob_label(kernel, CHIP + name if group == "overrides" else name, state.language())


def field_value(kernel: str, field: str, value: object) -> str:
    """A field's value as the pages show it: a model or a choice by its name, the kernel
    by its title, numbers and flags as every table writes them."""
    name = field.partition(".")[2]
    ids = CHOICE_IDS.get(kernel, {}).get(name, {})
    if value in ids:
        return state.tr(ids[value])
    if name == "model" and value in list_models():
        return load_model(value).display_name
    if field == "kernel" and value in kernels.KERNELS:
        return page_of(value).title(state.language())
    return run_view.metric_value(field, value, values.NUMBER)


def show_diff(c: cmp.Comparison) -> None:
    """The fields that differ, A's value next to B's."""
    st.subheader(state.tr("ui.compare.diff_title"))
    if not c.diff:
        st.info(state.tr("ui.compare.no_diff"), icon=":material/drag_handle:")
        return
    kernel = c.a.scenario.kernel
    rows = pd.DataFrame([(field_name(kernel, f), field_value(kernel, f, a),
                          field_value(c.b.scenario.kernel, f, b)) for f, a, b in c.diff],
                        columns=[state.tr("ui.compare.field"), state.tr("ui.compare.col.a"),
                                 state.tr("ui.compare.col.b")])
    st.dataframe(rows, hide_index=True, width="stretch")


def show_sentences(c: cmp.Comparison) -> None:
    """Each rule's finding as a bullet, in the session's language."""
    st.subheader(state.tr("ui.compare.sentences_title"),
                 help=state.tr("ui.compare.sentences_help"))
    found = cmp.sentences(c)
    if not found:
        st.info(state.tr("ui.compare.no_sentences"), icon=":material/drag_handle:")
        return
    st.markdown("\n".join(f"- {cmp.say(s, state.language())}" for s in found))


def display_table(c: cmp.Comparison) -> pd.DataFrame:
    """The metric table as the page shows it: translated labels, every value and change
    in its metric's unit (a ratio's change in percentage points)."""
    table, value = c.table, run_view.metric_value
    return pd.DataFrame({
        "metric": [run_view.metric_label(m) for m in table["metric"]],
        "a": [value(m, v) for m, v in zip(table["metric"], table["a"])],
        "b": [value(m, v) for m, v in zip(table["metric"], table["b"])],
        "delta": [run_view.metric_delta(m, v) for m, v in zip(table["metric"], table["delta"])],
        "ratio": [value(m, v, values.NUMBER) for m, v in zip(table["metric"], table["ratio"])],
        "definition": [state.tr(d) for d in table["definition"]],
    }).rename(columns={k: state.tr(COLUMN_IDS[k]) for k in COLUMNS})


def show_table(c: cmp.Comparison) -> None:
    st.subheader(state.tr("ui.compare.table_title"))
    table = display_table(c)
    st.dataframe(table, hide_index=True, width="stretch", **run_view.wrapped(table))


# ---- figures and downloads ---------------------------------------------------------------
def show_figures(a: Scenario, b: Scenario) -> None:
    """Timelines across the page, then traffic and B / A side by side."""
    lang = state.language()
    st.subheader(state.tr("ui.compare.timelines_title"))
    run_view.show(figure("timelines", a, b, lang), key="cmp_timelines")
    st.caption(state.tr("ui.compare.timelines_help"))
    for column, kind in zip(st.columns(2), ("traffic", "ratio")):
        with column:
            st.subheader(state.tr(FIGURE_TITLE_IDS[kind]))
            run_view.show(figure(kind, a, b, lang), key=f"cmp_{kind}")
    st.caption(state.tr("ui.compare.ratio_help"))


def table_csv(c: cmp.Comparison) -> str:
    """The metric table as CSV: raw numbers, definitions in the session's language."""
    table = c.table.assign(definition=[state.tr(d) for d in c.table["definition"]])
    return table.to_csv(index=False)


def show_downloads(c: cmp.Comparison) -> None:
    st.subheader(state.tr("ui.compare.downloads"))
    common = {"on_click": "ignore", "width": "stretch"}
    report_col, left, middle, right = st.columns(4)
    lang = state.language()
    report_col.download_button(state.tr("report.ui.download_html"),
                               lambda: compare_report(c, lang), file_name="comparison.html",
                               mime="text/html", key="cmp_dl_report",
                               icon=":material/summarize:", **common)
    left.download_button(state.tr("ui.compare.download_csv"), table_csv(c),
                         file_name="comparison.csv", mime="text/csv", key="cmp_dl_csv",
                         icon=":material/table:", **common)
    for where, side, result in ((middle, "a", c.a), (right, "b", c.b)):
        where.download_button(state.tr(DOWNLOAD_IDS[side]),
                              result.scenario.to_toml(), file_name=f"scenario_{side}.toml",
                              mime="application/toml", key=f"cmp_dl_{side}",
                              icon=":material/description:", **common)


def show(a: Scenario, b: Scenario, lesson: str | None) -> None:
    """Everything about the pair of runs, diff first."""
    if lesson:
        title_id, help_id = gallery.lesson_ids(lesson)
        st.info(state.tr("ui.compare.lesson", title=state.tr(title_id), text=state.tr(help_id)),
                icon=":material/school:")
    c = comparison(a, b)
    show_diff(c)
    show_sentences(c)
    show_table(c)
    show_figures(a, b)
    show_downloads(c)
