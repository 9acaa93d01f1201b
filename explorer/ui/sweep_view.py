"""Running a sweep from the page and showing what it gave.

Streamlit reruns the page script on every click, so a sweep cannot simply run inside
one script run and still be cancellable. It runs on a thread of its own
(``explorer.core.sweep.BackgroundSweep``) that only touches plain Python state; the page
keeps it in session state and a fragment that reruns every half second draws its
progress bar and a Cancel button. Cancel sets the run's flag; the executor stops
submitting, drops what has not started and the run returns the finished part. When the
run ends the whole page reruns once and draws the chart, the table and the CSV download.

The local worker processes are one shared pool per worker count (``st.cache_resource``),
started by the first sweep and kept for the next; they refuse points above the
interactive instruction cap. Points already simulated in this server process come from
the core's result cache at once, so running the same grid again is immediate.
"""
from __future__ import annotations

import pandas as pd
import streamlit as st

from explorer.core.sweep import BackgroundSweep, Sweep, SweepResult
from explorer.core.sweep_exec import DaskExecutor, LocalExecutor
from explorer.plots import values
from explorer.plots.other_reports import sweep_report
from explorer.plots.sweep import sweep_figure
from explorer.ui import errors, run_view, state
from explorer.ui.sweep_controls import knob_label
from hardware_presets.errors import InputError

JOB, LAST = "sw.job", "sw.last"  # the running sweep; (grid TOML, kernel, result or error)
POLL_S = 0.5
FIRST_WAIT_S = 1.0  # a small or cached sweep finishes within the click's own run
#: points above this many instructions are refused, as on the kernel pages
UI_MAX_INSTRUCTIONS = 1_000_000


@st.cache_resource(show_spinner=False)
def local_executor(workers: int) -> LocalExecutor:
    """The shared pool of ``workers`` processes (started on its first sweep)."""
    return LocalExecutor(workers, instruction_cap=UI_MAX_INSTRUCTIONS)


def build(c: dict) -> Sweep | None:
    """The grid of the controls, or None after showing why it is refused."""
    texts = [f"{c['x']}={c['xv']}"] + ([f"{c['y']}={c['yv']}"] if c["y"] else [])
    try:
        sweep = Sweep.parse(c["base"], texts)
    except InputError as exc:
        errors.show(exc, state.language())
        return None
    st.caption(state.tr("ui.sweep.count", count=f"{sweep.size:,}", limit=f"{c['limit']:,}"))
    return sweep


def _executor(c: dict) -> tuple[object, bool]:
    """(executor, whether this run owns it and closes it at the end)."""
    if c["executor"] == "dask":
        return DaskExecutor(c["address"]), True
    return local_executor(c["workers"]), False


def start(sweep: Sweep, c: dict) -> None:
    """Start the sweep on its thread (a bad Dask address is shown, nothing starts)."""
    try:
        executor, owned = _executor(c)
    except InputError as exc:
        errors.show(exc, state.language())
        return
    job = BackgroundSweep(sweep, executor, close_executor=owned).start()
    st.session_state[JOB] = job
    job.wait(FIRST_WAIT_S)


def collect() -> None:
    """Move a finished run's outcome to the shown results."""
    job = st.session_state.get(JOB)
    if job is not None and not job.running:
        st.session_state.pop(JOB)
        st.session_state[LAST] = (job.sweep.to_toml(), job.sweep.base.kernel,
                                  job.result if job.error is None else job.error)


def running() -> bool:
    return st.session_state.get(JOB) is not None


def _cancel() -> None:
    job = st.session_state.get(JOB)
    if job is not None:
        job.cancel()


@st.fragment(run_every=POLL_S)
def progress() -> None:
    """Progress bar and Cancel button of the running sweep; reruns the page at its end."""
    job = st.session_state.get(JOB)
    if job is None:
        return
    if not job.running:
        st.rerun()
    st.progress(job.done / max(1, job.total),
                text=state.tr("ui.sweep.progress", done=job.done, total=job.total))
    if job.cancelling:
        st.caption(state.tr("ui.sweep.cancelling"))
    st.button(state.tr("ui.sweep.cancel"), key="sw_cancel", on_click=_cancel,
              disabled=job.cancelling, icon=":material/stop_circle:")


# ---- results -----------------------------------------------------------------------------
def _reasons(result: SweepResult) -> pd.Series:
    """Each refused row's reason in the reader's language (the table keeps English)."""
    lang = state.language()
    texts = {row: errors.message(exc, lang, markdown=False)
             for row, exc in result.refusals.items()}
    return pd.Series(texts, dtype=object)


#: message ids of the columns beside the knobs and the metrics, and each one's unit
COLUMN_IDS = {"error": "tables.sweep.error", "numerics_passed": "tables.sweep.numerics_passed",
              "bound_ratio": "tables.sweep.bound_ratio",
              "norm_rel_error": "tables.sweep.norm_rel_error"}
COLUMN_UNITS = {"error": "", "numerics_passed": values.FLAG,
                "bound_ratio": values.NUMBER, "norm_rel_error": values.NUMBER}


def _heading(kernel: str, name: str, knobs: tuple[str, ...]) -> str:
    if name in knobs:
        return knob_label(kernel, name, state.language())
    return state.tr(COLUMN_IDS[name]) if name in COLUMN_IDS else run_view.metric_label(name)


def display_table(result: SweepResult, kernel: str) -> pd.DataFrame:
    """The results as the page shows them (the CSV keeps the raw table): each knob by its
    label, its values and every metric in their units, the check as yes / no, a refusal
    in the reader's words."""
    table, names = result.table, result.names
    shown = {}
    for column in table.columns:
        unit = values.NUMBER if column in names else COLUMN_UNITS.get(column)
        shown[_heading(kernel, column, names)] = [
            run_view.metric_value(column, v, unit) for v in table[column]]
    out = pd.DataFrame(shown, index=table.index)
    reasons = _reasons(result)
    error = state.tr(COLUMN_IDS["error"])
    out.loc[reasons.index, error] = reasons
    return out


def _summary(result: SweepResult) -> None:
    if result.cancelled:
        st.warning(state.tr("ui.sweep.cancelled", done=len(result.table), total=result.total))
    st.caption(state.tr("ui.sweep.summary", rows=len(result.table), refused=result.refused,
                        failed=result.failed))


def show_results(c: dict, current: Sweep | None) -> None:
    """The last run's chart (the metric and chart kind of the controls), its table and
    its CSV; a note when the controls have moved on since."""
    last = st.session_state.get(LAST)
    if last is None:
        return
    grid, kernel, outcome = last
    if isinstance(outcome, Exception):
        if isinstance(outcome, InputError):
            errors.show(outcome, state.language())
        else:
            st.error(state.tr("ui.sweep.failed", error=errors.escape(outcome)))
        return
    if current is None or current.to_toml() != grid:
        st.info(state.tr("ui.sweep.stale"))
    _summary(outcome)
    labels = {n: knob_label(kernel, n, state.language()) for n in outcome.names}
    fig = sweep_figure(outcome.table, outcome.names, c["metric"], state.language(),
                       kind=c["chart"], labels=labels, reasons=_reasons(outcome))
    st.plotly_chart(fig, config=state.CHART_CONFIG, key="sw_chart")
    st.subheader(state.tr("ui.sweep.table"))
    table = display_table(outcome, kernel)
    st.dataframe(table, hide_index=True, **run_view.wrapped(table))
    left, right = st.columns(2)
    left.download_button(state.tr("ui.sweep.download"), outcome.to_csv(), "sweep.csv",
                         "text/csv", icon=":material/download:", key="sw_csv")
    lang, metric, kind = state.language(), c["metric"], c["chart"]
    right.download_button(state.tr("report.ui.download_html"), lambda: sweep_report(
        grid, outcome, metric, lang, kind=kind, labels=labels), "sweep.html", "text/html",
        icon=":material/summarize:", key="sw_report", on_click="ignore")
