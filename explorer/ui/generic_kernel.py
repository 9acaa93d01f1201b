"""The generic kernel page's parts, driven by the kernel's record alone (``KernelRecord``):
any registered kernel without a bespoke page (``kernel_pages.PAGES``) gets controls, a run,
its results and its explanation here, with no page code of its own.

* the kernel chooser: every registered kernel without a page (``chooser``);
* controls generated from the record's ``ParamSpec``s (``controls``): a number input per
  number (the spec's range, a step, unit and range in the help), a selectbox per list of
  choices, a checkbox per flag, a text input per text; labels from the page record's
  ``label_id`` when the catalogue has it, else the parameter's name. Values live in session
  state under the page record's prefix (``kn.<kernel>.<name>``, so the sweep starts from
  them) and in the URL (``kernels?kernel=<name>&<param>=<value>&seed=<seed>``);
* the run through the pages' one path (``Scenario.make``, ``state.simulate`` on the shared
  worker pool), refusals shown with ``errors.show``;
* the results with the shared views (``run_view``, ``advisor_view``), the answer first:
  metric tiles, the per-core timeline, the advisor's top finding (its checklist folded),
  then the record's own figures and the summary figures with their captions, then the long
  tail folded (the roofline, the numerical verdict, the record's explanation paragraphs),
  the downloads and the upload.

The controls are drawn in the page's apply fragment (``apply.controls``, one per kernel:
its session prefix): a changed widget reruns them alone, and the results keep showing the
applied values, marked stale, until "Apply" runs the new ones.
"""
from __future__ import annotations

import math
from collections.abc import Mapping

import plotly.graph_objects as go
import streamlit as st

import kernels
from explorer.core import Result, Scenario
from explorer.core.i18n import has, t
from explorer.plots import report_figures
from explorer.ui import (
    advisor_view,
    errors,
    kernel_pages,
    quant_view,
    run_view,
    state,
    widgets,
)
from explorer.ui.kernel_pages import KernelPage
from explorer.ui.page_params import Taken
from hardware_presets.errors import InputError
from kernels.common.params import MAX_TEXT, ParamSpec

KERNEL = "kn.kernel"  # session key of the chosen kernel (and its URL name, "kernel")
URL_KERNEL = "kernel"
SEED = "seed"  # the scenario's seed, a page parameter beside the kernel's own
#: metric tiles of a vector kernel and of a cube kernel (the record's ``advice.block_cores``)
VECTOR_METRICS = run_view.KEY_METRICS
CUBE_METRICS = ("makespan_us", "achieved_tflops", "aic_cube_ratio", "bound",
                "mte2_ratio", "hbm_GBps", "l2_hit_rate", "roofline_efficiency")
SUMMARY_ROWS = (("pipe_ratio", "bandwidth"), ("traffic", "load_balance"))
#: summary figure -> message id of its caption
CAPTION_IDS = {"pipe_ratio": "ui.kernels.caption.pipe_ratio",
               "bandwidth": "ui.kernels.caption.bandwidth",
               "traffic": "ui.kernels.caption.traffic",
               "load_balance": "ui.kernels.caption.load_balance"}


# ---- which kernels, which parameters -----------------------------------------------------
def names() -> tuple[str, ...]:
    """Every registered kernel without a bespoke page, in registry order."""
    return tuple(k for k in kernel_pages.names() if k not in kernel_pages.PAGES)


def specs(kernel: str) -> dict[str, ParamSpec]:
    """The kernel's parameters and the page's seed (a kernel's own "seed" wins)."""
    return {SEED: widgets.SEED_SPEC, **{s.name: s for s in kernels.get(kernel).params}}


def page(kernel: str) -> KernelPage:
    return kernel_pages.page_of(kernel)


def key(kernel: str, name: str) -> str:
    """Session key of one of the kernel's values (``kn.<kernel>.<name>``)."""
    return page(kernel).prefix + name


def default(kernel: str, name: str) -> object:
    return page(kernel).defaults.get(name, specs(kernel)[name].default)


def chosen() -> str | None:
    """The chosen kernel (the first one when none, or a kernel no longer registered, is)."""
    offered = names()
    if not offered:
        return None
    if st.session_state.get(KERNEL) not in offered:
        st.session_state[KERNEL] = offered[0]
    return st.session_state[KERNEL]


# ---- the URL -----------------------------------------------------------------------------
def _kernel_refusal(text: str, lang: str) -> InputError:
    offered = names()
    allowed = t("ui.kernels.allowed_kernel", lang, names=", ".join(offered)) if offered \
        else t("ui.kernels.allowed_none", lang)
    hint = t("ui.kernels.has_page", lang, title=kernel_pages.PAGES[text].title(lang)) \
        if text in kernel_pages.PAGES else None
    return InputError(URL_KERNEL, text, allowed, hint)


def take_url() -> Taken:
    """Copy the URL's kernel and its parameters into session state (once per session);
    returns the names taken and the refused values: an unknown kernel (its parameters are
    then left alone), unknown names, values out of range (what is allowed said in the
    page's language)."""
    found = dict(state.take_url_params())
    lang, taken, refused = state.language(), [], []
    text = found.pop(URL_KERNEL, None)
    if text is not None:
        if text not in names():  # its parameters are meant for it, not for the one shown
            return Taken((), (_kernel_refusal(text, lang),))
        st.session_state[KERNEL] = text
        taken.append(URL_KERNEL)
    kernel = chosen()
    if kernel is None:
        return Taken(tuple(taken), tuple(refused))
    known = specs(kernel)
    for name, value in found.items():
        if name not in known:
            refused.append(InputError(name, value, t("ui.kernels.allowed_param", lang,
                                                     kernel=kernel, names=", ".join(known))))
            continue
        try:
            st.session_state[key(kernel, name)] = widgets.url_value(known[name], value)
            taken.append(name)
        except InputError as exc:  # the spec's words are English: say it in the page's
            refused.append(InputError(exc.field, exc.value, allowed(known[name], lang),
                                      exc.hint))
    return Taken(tuple(taken), tuple(refused))


def allowed(spec: ParamSpec, lang: str) -> str:
    """What a parameter takes, translated (``ParamSpec.allowed`` says it in English)."""
    if spec.choices is not None:
        return t("ui.kernels.allowed_choices", lang, choices=", ".join(map(str, spec.choices)))
    if spec.kind is bool:
        return t("ui.kernels.allowed_flag", lang)
    if spec.kind is str:
        return t("ui.kernels.allowed_text", lang, chars=f"{MAX_TEXT:,}")
    whole = spec.kind is int
    if spec.min is None or spec.max is None:
        return t("ui.kernels.allowed_whole" if whole else "ui.kernels.allowed_any", lang)
    return t("ui.kernels.allowed_integer" if whole else "ui.kernels.allowed_number", lang,
             min=widgets.number(spec.min), max=widgets.number(spec.max))


def url_params(kernel: str, params: Mapping[str, object], seed: int) -> dict[str, object]:
    """What the page keeps in its URL: the kernel, its parameters and the seed."""
    wanted = {URL_KERNEL: kernel, **params}
    wanted.setdefault(SEED, seed)
    return wanted


# ---- the widgets -------------------------------------------------------------------------
def label(kernel: str, name: str) -> str:
    """The catalogue's label of a parameter (the page record's id), else its name."""
    msg_id = page(kernel).label_id(name)
    return state.tr(msg_id) if has(msg_id, state.language()) else name


def _text(value: object) -> str:
    if isinstance(value, bool):
        return state.tr("ui.kernels.on" if value else "ui.kernels.off")
    if isinstance(value, (int, float)):
        return widgets.number(value)
    return str(value)


def help_text(spec: ParamSpec, value_default: object) -> str:
    """What a parameter takes: its name, unit, range or choices, default (translated)."""
    values = {"name": spec.name, "default": _text(value_default)}
    if spec.unit:
        values["unit"] = widgets.unit(spec.unit)
    unit = bool(spec.unit)
    if spec.kind is bool:
        text = state.tr("ui.kernels.help.flag", **values)
    elif spec.choices is not None:
        text = state.tr("ui.kernels.help.choices_unit" if unit else "ui.kernels.help.choices",
                        choices=", ".join(map(str, spec.choices)), **values)
    elif spec.kind is str:
        text = state.tr("ui.kernels.help.text_unit" if unit else "ui.kernels.help.text",
                        chars=f"{MAX_TEXT:,}", **values)
    elif spec.min is None or spec.max is None:
        text = state.tr("ui.kernels.help.number_unit" if unit else "ui.kernels.help.number",
                        **values)
    else:
        text = state.tr("ui.kernels.help.range_unit" if unit else "ui.kernels.help.range",
                        min=widgets.number(spec.min), max=widgets.number(spec.max), **values)
    if spec.log_scale:
        text += " " + state.tr("ui.kernels.help.log_scale")
    return text


def step(spec: ParamSpec) -> int | float:
    """The number input's step: the spec's own when it states one, 1 for an integer, for a
    float a tenth of the default's order of magnitude (0.1 for 3.0, 1e-7 for 1e-6)."""
    own = getattr(spec, "step", None)
    if own:
        return spec.kind(own)
    if spec.kind is int:
        return 1
    span = (spec.max - spec.min) if spec.min is not None and spec.max is not None else None
    scale = abs(float(spec.default)) or (span / 100 if span else 1.0)
    value = 10.0 ** (math.floor(math.log10(scale)) - 1)
    return min(value, span) if span else value


def _bound_number(spec: ParamSpec, value: object) -> object:
    """A session value the number input can show (its range refuses anything else: a
    page default outside the spec is brought back inside)."""
    number = spec.kind(value)
    if spec.min is not None:
        number = max(number, spec.kind(spec.min))
    if spec.max is not None:
        number = min(number, spec.kind(spec.max))
    return number


def widget(kernel: str, spec: ParamSpec, where=st) -> object:
    """One widget for one parameter, chosen by its spec; returns its value."""
    name, start = key(kernel, spec.name), default(kernel, spec.name)
    common = {"help": help_text(spec, start)}
    if spec.kind is bool:
        return where.checkbox(label(kernel, spec.name), **common, **state.bound(name, start))
    if spec.choices is not None:
        return where.selectbox(label(kernel, spec.name), list(spec.choices), **common,
                               **state.bound(name, start))
    if spec.kind is str:
        return where.text_input(label(kernel, spec.name), max_chars=MAX_TEXT, **common,
                                **state.bound(name, start))
    kind = spec.kind
    st.session_state[name] = _bound_number(spec, st.session_state.get(name, start))
    return where.number_input(
        label(kernel, spec.name), min_value=None if spec.min is None else kind(spec.min),
        max_value=None if spec.max is None else kind(spec.max), step=step(spec),
        format="%g" if kind is float else None, **common, **state.bound(name, start))


def chooser() -> str | None:
    """The kernel selectbox (titles in the session's language); None when every kernel
    has a page of its own."""
    kernel = chosen()
    if kernel is None:
        st.info(state.tr("ui.kernels.none"), icon=":material/info:")
        return None
    lang = state.language()
    return st.selectbox(state.tr("ui.kernels.kernel"), names(),
                        format_func=lambda k: f"{page(k).title(lang)} ({k})",
                        help=state.tr("ui.kernels.kernel_help"),
                        **state.bound(KERNEL, kernel))


def controls(kernel: str) -> dict:
    """A widget per parameter of the kernel, three to a row, then the seed folded under
    "More options"; returns the parameters and the seed (key "seed")."""
    record = kernels.get(kernel)
    params = {}
    with st.container(border=True):
        st.markdown(f"**{state.tr('ui.kernels.params', title=record_title(kernel))}**")
        columns = st.columns(3)
        for i, spec in enumerate(record.params):
            params[spec.name] = widget(kernel, spec, columns[i % 3])
        if SEED in params:  # a kernel's own "seed" is a parameter
            return params
        with columns[len(record.params) % 3].expander(state.tr("apply.more")):
            seed = widget(kernel, widgets.SEED_SPEC)
    return {**params, SEED: int(seed)}


def split(kernel: str, values: Mapping[str, object]) -> tuple[dict, int]:
    """The kernel's parameters and the scenario's seed of the page's values."""
    own = {s.name for s in kernels.get(kernel).params}
    params = {k: v for k, v in values.items() if k in own}
    return params, 0 if SEED in own else int(values[SEED])


def record_title(kernel: str) -> str:
    return page(kernel).title(state.language())


# ---- the run -----------------------------------------------------------------------------
def run(kernel: str, params: dict, seed: int) -> tuple[Scenario | None, Result | None]:
    """The scenario and its shared result, or None for what was refused (shown)."""
    scenario = None
    try:
        scenario = Scenario.make(state.preset(), kernel, params, state.overrides(), seed)
        with st.spinner(state.tr("ui.kernels.running", title=record_title(kernel))):
            return scenario, state.simulate(scenario)
    except InputError as exc:
        errors.show(exc, state.language())
        return scenario, None


# ---- the results (the shared views) ------------------------------------------------------
def metric_names(kernel: str) -> tuple[str, ...]:
    return CUBE_METRICS if kernels.get(kernel).advice.block_cores == "cube" else VECTOR_METRICS


def show_timeline(scenario: Scenario, result: Result) -> None:
    """The per-core x per-pipe timeline with the shared view controls."""
    st.subheader(state.tr("ui.va.timeline"))
    cores, window = run_view._view_controls(result)  # noqa: SLF001  (as gemm_view does)
    run_view.show(run_view.timeline(scenario, state.language(), cores, window), key="timeline")
    st.caption(state.tr("ui.kernels.caption.timeline"))


def show_figures(scenario: Scenario) -> None:
    """Pipe ratios, bandwidth, traffic and load balance, two per row."""
    lang = state.language()
    for row in SUMMARY_ROWS:
        for column, kind in zip(st.columns(2), row):
            with column:
                run_view.show(run_view.result_figure(kind, scenario, lang), key=kind)
                st.caption(state.tr(CAPTION_IDS[kind]))


def show_roofline(scenario: Scenario) -> None:
    """The run under the chip's roofs, labelled and roofed as the record says."""
    run_view.show(run_view.result_figure("roofline", scenario, state.language()),
                  key="roofline")
    st.caption(state.tr("ui.kernels.caption.roofline"))


def show_numerics(result: Result) -> None:
    """The float64 check of the output (explorer.core.verdict), then the run's notes."""
    run_view.show_check(result.numerics, None, result.notes)


@st.cache_resource(max_entries=16, show_spinner=False,
                   hash_funcs={Scenario: state.scenario_key})
def record_figure(kind: str, scenario: Scenario, lang: str) -> go.Figure:
    """One of the figures a record names (``report_figures.KERNEL_FIGURES``)."""
    return report_figures.KERNEL_FIGURES[kind](state.simulate(scenario), lang)


def show_record_figures(scenario: Scenario) -> None:
    """The figures the record names for its reports (a task grid, say)."""
    lang = state.language()
    for kind in kernels.get(scenario.kernel).figures:
        if kind not in report_figures.KERNEL_FIGURES:
            continue
        heading = report_figures.FIGURE_IDS.get(kind, "")
        st.subheader(state.tr(heading) if has(heading, lang) else kind)
        run_view.show(record_figure(kind, scenario, lang), key=f"record_{kind}")


def show_results(scenario: Scenario, result: Result) -> None:
    """The answer (metrics, timeline, the advisor's top finding), then the record's own
    figures and the summary figures, then the roofline, the verdict and the downloads."""
    st.subheader(state.tr("ui.kernels.results"))
    run_view.show_metrics(result, metric_names(scenario.kernel))
    show_timeline(scenario, result)
    advisor_view.show_advisor(result)
    show_record_figures(scenario)
    show_figures(scenario)
    # quantised inputs (the linear layer's MXFP4 weights), checked as stored
    quant_view.show_quantization(scenario, result.numerics, "stored")
    run_view.show_closing(scenario, result, lambda: show_roofline(scenario), show_numerics)


def explain(kernel: str) -> None:
    """The record's explanation paragraphs (the same a report quotes), folded."""
    lang = state.language()
    paragraphs = [msg_id for msg_id in kernels.get(kernel).explanation if has(msg_id, lang)]
    with st.expander(state.tr("ui.kernels.explain", title=record_title(kernel)),
                     icon=":material/school:"):
        if not paragraphs:
            st.caption(state.tr("ui.kernels.no_explanation"))
        for msg_id in paragraphs:
            st.markdown(state.tr(msg_id))
