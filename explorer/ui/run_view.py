"""What a page shows about one run: key metrics with their definitions, the timeline with
its view controls, the summary figures with their captions under them, and the long tail
a kernel page ends with, folded (``show_closing``: a reference figure, the numerical
check with its verdict as the expander's icon, then the downloads in one row and the
upload). The kernel pages put the answer first: tiles, timeline, the advisor's top
finding, then the figures, then that tail.

Everything here reads a cached ``Result`` and cached figures, so changing a view control
(cores, time window) or the language reruns in a blink without re-emulating. Figures are
pure functions of their inputs (``explorer.plots``); rebuilding a timeline of thousands of
bars on every rerun would dominate it, so they are cached as resources on the scenario,
the language and the view (shared, never mutated: ``st.plotly_chart`` only reads them).
"""
from __future__ import annotations

import json
from collections.abc import Callable

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from explorer import plots
from explorer.core import Result, Scenario
from explorer.core.i18n import has, t
from explorer.core.metrics import KEY_METRICS, METRIC_DEF_IDS
from explorer.core.verdict import verdict
from explorer.plots import report, report_figures, values
from explorer.ui import errors, state, uploads
from hardware_presets.errors import InputError

VIEW_CORES, VIEW_WINDOW = "view.cores", "w.view.window"
FULL_WINDOW = (0.0, 100.0)
#: cores drawn at first: 48 cores x 3 pipes would make a chart thousands of pixels tall
DEFAULT_CORES = 8
#: what each summary figure shows (the vector add page's words, shared by the kernel pages)
CAPTION_IDS = {"pipe_ratio": "ui.va.caption.pipe_ratio", "bandwidth": "ui.va.caption.bandwidth",
               "traffic": "ui.va.caption.traffic", "load_balance": "ui.va.caption.load_balance",
               "roofline": "ui.va.caption.roofline"}


# ---- cached figures ----------------------------------------------------------------------
@st.cache_resource(max_entries=48, show_spinner=False,
                   hash_funcs={Scenario: state.scenario_key})
def result_figure(kind: str, scenario: Scenario, lang: str) -> go.Figure:
    """One summary figure of a run: pipe_ratio, traffic, load_balance, bandwidth, roofline."""
    return report_figures.summary_figure(kind, state.simulate(scenario), lang)


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
    return report_figures.metric_label(name, state.language())


def metric_value(name: str, value: object, unit: str | None = None) -> str:
    """A metric, or a quantity of the page's own in ``unit``, as ``values`` writes it."""
    return values.format_metric(name, value, state.language(), unit)


def metric_delta(name: str, delta: object, unit: str | None = None) -> str:
    """A change of a metric (B − A), as ``values`` writes it."""
    return values.format_delta(name, delta, state.language(), unit)


#: characters a wide text column shows on one line, and the lines a table row may take
LINE_CHARS, MAX_LINES = 80, 4
ROW_PX, LINE_PX = 35, 20  # Streamlit's row height, and what each further line adds


def wrapped(table: pd.DataFrame) -> dict:
    """``st.dataframe`` options that show a table's long texts (definitions, sources)
    whole: their columns wide, and rows tall enough for the longest to wrap, where one
    line would cut them off. Empty when every text fits on a line."""
    lengths = {c: table[c].map(lambda v: len(v) if isinstance(v, str) else 0).max()
               for c in table.columns}
    long = [c for c, n in lengths.items() if n > LINE_CHARS]
    if not long:
        return {}
    lines = min(MAX_LINES, -(-max(lengths.values()) // LINE_CHARS))
    return {"row_height": ROW_PX + LINE_PX * (lines - 1),
            "column_config": {c: st.column_config.TextColumn(width="large") for c in long}}


#: characters of a tile's value that a quarter of the page's width shows whole
TILE_CHARS = 9


def tile_widths(names: tuple[str, ...], shown: list[str]) -> list[float]:
    """Relative widths of a row of tiles: the Bound tile wider ("latency / sync"), and any
    tile as wide as its value needs ("81.4 TFLOPS" is cut off in a quarter of the row)."""
    return [max(1.5 if name == "bound" else 1.0, len(text) / TILE_CHARS)
            for name, text in zip(names, shown)]


def show_metrics(result: Result, names: tuple[str, ...] = KEY_METRICS) -> None:
    """Key metrics in rows of four, each with its one-line definition as help."""
    for start in range(0, len(names), 4):
        row = names[start:start + 4]
        shown = [metric_value(name, result.metrics[name]) for name in row]
        for column, name, text in zip(st.columns(tile_widths(row, shown)), row, shown):
            help_id = METRIC_DEF_IDS.get(name, "")
            column.metric(metric_label(name), text,
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
                st.caption(state.tr(CAPTION_IDS[kind]))


def show_roofline(scenario: Scenario) -> None:
    show(result_figure("roofline", scenario, state.language()), key="roofline")
    st.caption(state.tr(CAPTION_IDS["roofline"]))


def show_check(check, subject: str | None, notes) -> None:
    """The float64 check in the words the CLI and reports use (`verdict`): the verdict in
    a box, what was compared against which bound below it, then the run's notes.
    ``subject`` names what was checked ("C (fp16 in, fp16 out)"; None: "the output")."""
    head, *rest = verdict(check, state.language(), subject)
    if check.passed:
        st.success(head, icon=":material/check_circle:")
    else:
        st.error(head, icon=":material/cancel:")
    for line in rest:
        st.caption(line)
    for msg_id, note_values in notes:
        if has(msg_id):
            st.caption(state.tr(msg_id, **{k: f"{v:,}" if isinstance(v, int) and
                                            not isinstance(v, bool) else v
                                            for k, v in note_values.items()}))


def show_numerics(result: Result) -> None:
    """The float64 check of the result in its precision, then the run's notes."""
    show_check(result.numerics, state.tr("verdict.subject.result", dtype=result.params["dtype"]),
               result.notes)


def show_downloads(scenario: Scenario, explanation: str = "") -> None:
    """Scenario file, reports (HTML; Markdown + PNG as a zip), Chrome / Perfetto trace and
    timeline CSV in one row (all but the scenario made on click), then the scenario
    upload, folded."""
    stem, lang = f"{scenario.kernel}_{scenario.preset}", state.language()
    common = {"on_click": "ignore", "width": "content"}
    row = st.container(horizontal=True, key="downloads")
    row.download_button(state.tr("download.scenario"), scenario.to_toml(),
                        file_name=f"{stem}.toml", mime="application/toml", key="dl_scenario",
                        icon=":material/description:", **common)
    row.download_button(state.tr("report.ui.download_html"), lambda: report.html_report(
        state.simulate(scenario), lang, explanation), file_name=f"{stem}_report.html",
        mime="text/html", key="dl_report_html", help=state.tr("report.ui.download_html_help"),
        icon=":material/article:", **common)
    row.download_button(state.tr("report.ui.download_md"), lambda: report.markdown_zip(
        state.simulate(scenario), lang, explanation), file_name=f"{stem}_report.zip",
        mime="application/zip", key="dl_report_md", help=state.tr("report.ui.download_md_help"),
        icon=":material/folder_zip:", **common)
    row.download_button(state.tr("download.trace"), lambda: _trace_json(scenario),
                        file_name=f"{stem}_trace.json", mime="application/json",
                        key="dl_trace", help=state.tr("ui.va.trace_help"),
                        icon=":material/timeline:", **common)
    row.download_button(state.tr("download.csv"), lambda: _timeline_csv(scenario),
                        file_name=f"{stem}_timeline.csv", mime="text/csv", key="dl_csv",
                        icon=":material/table:", **common)
    show_upload(scenario.kernel)


def _trace_json(scenario: Scenario) -> str:
    from explorer.core.trace import chrome_trace

    return json.dumps(chrome_trace(state.simulate(scenario)))


def _timeline_csv(scenario: Scenario) -> str:
    return state.simulate(scenario).timeline.to_csv(index=False)


# ---- loading a scenario file or a report -------------------------------------------------
UPLOAD_KEY = "w.scenario_upload"
_OUTCOME = "scenario_upload_outcome"  # the last upload's InputError or loaded name
SCENARIO_MAX_BYTES = 1 << 20  # a scenario is a few hundred bytes
#: a report carries Plotly's JavaScript (about 5 MB); only its first MiB, where the
#: scenario sits, is read
REPORT_MAX_BYTES = 32 << 20


def read_upload(name: str, data: bytes, kernel: str, lang: str = "en") -> Scenario:
    """An uploaded scenario (.toml, .json) or report (.html) as a validated scenario of
    ``kernel``; InputError (translated where it is ours) for anything else."""
    is_report = name.lower().endswith((".html", ".htm"))
    limit = REPORT_MAX_BYTES if is_report else SCENARIO_MAX_BYTES
    if len(data) > limit:
        allowed = "report.ui.allowed_report" if is_report else "report.ui.allowed_size"
        raise InputError(name, f"{len(data):,} bytes",
                         t(allowed, lang, limit=f"{limit >> 20} MiB"))
    try:  # a cut multi-byte character at the end of a report's first MiB is harmless
        text = data[:SCENARIO_MAX_BYTES].decode("utf-8",
                                                errors="ignore" if is_report else "strict")
    except UnicodeDecodeError:
        raise InputError(name, "(file)", t("report.ui.allowed_text", lang)) from None
    scenario = report.scenario_from_report(text, name) if is_report else \
        Scenario.from_file_text(text, name)
    if scenario.kernel != kernel:
        raise InputError(f"{name}: kernel", scenario.kernel, t(
            "report.ui.allowed_kernel", lang, kernel=kernel, found=scenario.kernel))
    return scenario


def _url_text(value: object) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def scenario_url(scenario: Scenario, current: dict[str, str], lang: str) -> dict[str, str]:
    """The URL that makes a page show ``scenario``: language, preset, chip overrides, and
    the parameters the page keeps in its URL (``current``) or that leave the defaults
    (the page refuses, with a message, those it cannot set)."""
    try:
        defaults = Scenario.make(scenario.preset, scenario.kernel,
                                 overrides=scenario.overrides_dict).params_dict
    except InputError:
        defaults = {}
    params = {k: v for k, v in scenario.params_dict.items()
              if k in current or k not in defaults or defaults[k] != v}
    if "seed" in current or scenario.seed:
        params["seed"] = scenario.seed
    chip = {f"{state.CHIP_PREFIX}{k}": v for k, v in sorted(scenario.overrides_dict.items())}
    wanted = {state.LANG: lang, state.PRESET: scenario.preset, **chip, **params}
    return {k: _url_text(v) for k, v in wanted.items()}


def reload_url() -> None:
    """Make the next run read the URL again, as on a session's first run (the chip preset
    comes from the URL; the language stays). ``state`` reads the URL once per session."""
    st.session_state.pop(state._LOADED, None)  # noqa: SLF001  (state's own flag)
    st.session_state.pop(state.PRESET, None)


def _on_upload(kernel: str) -> None:
    """Load the uploaded file through the URL, as a shared link would: every page already
    turns its URL into its widgets' values and refuses what it cannot use, visibly."""
    upload = st.session_state.get(UPLOAD_KEY)
    if upload is None:
        return
    lang = state.language()
    try:
        scenario = read_upload(upload.name, upload.getvalue(), kernel, lang)
    except InputError as exc:
        st.session_state[_OUTCOME] = exc
        return
    current = {k: st.query_params.get(k) for k in st.query_params}
    st.query_params.from_dict(scenario_url(scenario, current, lang))
    reload_url()
    st.session_state[_OUTCOME] = scenario.name or upload.name


def show_upload(kernel: str) -> None:
    """The upload box, and the outcome of the last upload (shown once)."""
    with st.expander(state.tr("report.ui.load"), icon=":material/upload_file:"):
        uploads.uploader(st, "report.ui.file", ("toml", "json", "html"), UPLOAD_KEY,
                         max_bytes=REPORT_MAX_BYTES, help_id="report.ui.file_help",
                         limit=state.tr("uploads.limit_report",
                                        scenario=uploads.size_text(SCENARIO_MAX_BYTES),
                                        report=uploads.size_text(REPORT_MAX_BYTES)),
                         on_change=_on_upload, args=(kernel,))
    outcome = st.session_state.pop(_OUTCOME, None)
    if isinstance(outcome, InputError):
        errors.show(outcome, state.language())
    elif outcome is not None:
        st.success(state.tr("report.ui.loaded", name=errors.escape(outcome)),
                   icon=":material/check_circle:")


def show_check_folded(result, numerics: Callable, passed: bool | None = None) -> None:
    """The numerical check ``numerics(result)``, folded under its title with its verdict
    (``passed``, else the result's) as the icon; open when it failed: that is news.
    ``result`` is what ``numerics`` reads: a Result, or a page's step built on one."""
    passed = result.numerics.passed if passed is None else passed
    with st.expander(state.tr("ui.va.numerics"), expanded=not passed,
                     icon=":material/check_circle:" if passed else ":material/cancel:"):
        numerics(result)


def show_closing(scenario: Scenario, result: Result, figure: Callable[[], None],
                 numerics: Callable[[Result], None], label_id: str = "apply.roofline") -> None:
    """How a kernel page ends, the long tail folded: a reference figure (the roofline,
    ``label_id`` its expander's title), the numerical check, then the downloads."""
    with st.expander(state.tr(label_id), icon=":material/show_chart:"):
        figure()
    show_check_folded(result, numerics)
    show_downloads(scenario)
