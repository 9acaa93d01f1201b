"""Controls of the "Sweep" page: the kernel, its base scenario, one or two knobs with
their values, the metric and chart, and where the points run.

The base scenario is the kernel page's own state when the user has been there (the
vector-add playground's ``va.*``, the GEMM page's ``gm.*``, the decode page's ``dc.*``
session values) on the sidebar's chip, else the kernel's defaults. Only numeric knobs
are offered; each shows its allowed range and its value in the base scenario, and its
values are typed as on the command line (``1024:65536:*4``, ``96,192``), so the page and
``python -m explorer sweep`` share one grammar and one set of refusals.
"""
from __future__ import annotations

import math
from collections.abc import Mapping

import streamlit as st

import kernels
from explorer.core import Scenario
from explorer.core.i18n import has, t
from explorer.core.metrics import METRIC_LABEL_IDS, METRICS
from explorer.core.sweep import CHIP, MAX_SCENARIOS, Knob, knobs
from explorer.ui import state, widgets
from explorer.ui.kernel_pages import names as kernel_names
from explorer.ui.kernel_pages import page_of
from hardware_presets import FIELDS
from hardware_presets.errors import InputError, Phrase

PREFIX = "sw."  # session keys of this page's values
METRIC_CHOICES = tuple(m for m in METRICS if m != "bound")
CHARTS, EXECUTORS = ("line", "heatmap"), ("local", "dask")
NONE = ""
DEFAULT_ADDRESS = "tcp://127.0.0.1:8786"
URL_NAMES = ("kernel", "x", "xv", "y", "yv", "metric", "chart")


def key(name: str) -> str:
    return PREFIX + name


def value(name: str, default: object = None) -> object:
    return st.session_state.get(key(name), default)


# ---- the base scenario -------------------------------------------------------------------
def _page_params(kernel: str) -> dict:
    """The kernel page's values found in this session (its defaults where it has some)."""
    page = page_of(kernel)
    found = {} if page.prefix is None else {
        s.name: st.session_state[page.prefix + s.name] for s in kernels.get(kernel).params
        if page.prefix + s.name in st.session_state}
    return {**page.defaults, **found}


def base_scenario(kernel: str) -> tuple[Scenario, str]:
    """(the base scenario, message id saying where it came from)."""
    params = _page_params(kernel)
    page = page_of(kernel)
    seed = int(st.session_state.get(page.seed_key, 0)) if page.seed_key else 0
    source = "ui.sweep.base_page" if len(params) > len(page.defaults) else \
        "ui.sweep.base_defaults"
    try:
        return Scenario.make(state.preset(), kernel, params, state.overrides(), seed), source
    except InputError:
        return Scenario.make(state.preset(), kernel, {}, state.overrides()), \
            "ui.sweep.base_invalid"


def _first(kernel: str) -> tuple[str, str]:
    """The sweep's first knob of a kernel and its values ("" = the knob's own default)."""
    return page_of(kernel).first_knob or (NONE, "")


# ---- labels and defaults of a knob -------------------------------------------------------
def _named(label: str, name: str) -> str:
    """The label, then the name as typed unless the label starts with it already."""
    return label if label.split(maxsplit=1)[0].rstrip(":") == name else f"{label} ({name})"


def knob_label(kernel: str, name: str, lang: str) -> str:
    """``Tile (elements) (tile)``: the translated label, then the name as typed (a chip
    field ``chip.<key>``, else a parameter of the kernel, a knob or not)."""
    field = FIELDS.get(name.removeprefix(CHIP)) if name.startswith(CHIP) else None
    if field is not None:
        return _named(t(field.label_id, lang), name)
    msg_id = page_of(kernel).label_id(name)
    return _named(t(msg_id, lang), name) if has(msg_id, lang) else name


#: message ids: each executor's and chart's name, each axis picker's label
EXECUTOR_IDS = {"local": "ui.sweep.executors.local", "dask": "ui.sweep.executors.dask"}
CHART_IDS = {"line": "ui.sweep.charts.line", "heatmap": "ui.sweep.charts.heatmap"}
AXIS_IDS = {"x": "ui.sweep.axis_x", "y": "ui.sweep.axis_y"}


def labeller(ids: Mapping[str, str]):
    """A ``format_func`` showing an option by its message id in ``ids``, in the session's
    language. The language is read now: AppTest calls format functions outside a script
    run."""
    lang = state.language()
    return lambda option: t(ids[option], lang)


def now(base: Scenario, knob: Knob) -> object:
    """The knob's value in the base scenario (a chip field: the tuned chip's value)."""
    if knob.target == "params":
        return base.params_dict[knob.key]
    return getattr(base.chip(), knob.key)


def _text(number: float, kind: type) -> str:
    return str(int(number)) if kind is int else f"{number:g}"


def default_values(knob: Knob, current: object) -> str:
    """Values around the base's: x/4 to x*4 doubling for sizes, else about five steps."""
    spec = knob.spec
    if getattr(spec, "choices", None):
        return ",".join(map(str, spec.choices))
    lo_limit, hi_limit, kind = spec.min, spec.max, spec.kind
    v = float(current)
    if kind is int and v >= 16 and (getattr(spec, "log_scale", False)
                                    or v == 2 ** round(math.log2(v))):
        lo, hi = max(lo_limit, v / 4), min(hi_limit, v * 4)
        return f"{_text(lo, kind)}:{_text(hi, kind)}:*2"
    lo, hi = max(lo_limit, v / 2), min(hi_limit, v * 2 if v > 0 else lo_limit + 4)
    step = max(1, (hi - lo) // 4) if kind is int else (hi - lo) / 4 or 1
    return f"{_text(lo, kind)}:{_text(hi, kind)}:{_text(step, kind)}"


def allowed_caption(knob: Knob, current: object) -> str:
    spec = knob.spec
    if getattr(spec, "choices", None):
        return state.tr("ui.sweep.choices", values=", ".join(map(str, spec.choices)),
                        now=current)
    return state.tr("ui.sweep.range", min=widgets.number(spec.min),
                    max=widgets.number(spec.max), unit=widgets.unit(spec.unit),
                    now=widgets.number(float(current)))


# ---- URL ---------------------------------------------------------------------------------
def _values_key(which: str, kernel: str, name: str) -> str:
    """Session key of the values typed for one knob (each knob keeps its own text)."""
    return key(f"{which}v.{kernel}.{name}")


def take_url() -> list[InputError]:
    """Copy this page's URL parameters into session state; returns the refused ones.
    A link's values (``xv``, ``yv``) belong to the knob it names (``x``, ``y``)."""
    refused, found = [], state.take_url_params()
    for name, text in found.items():
        options = {"kernel": kernel_names(), "metric": METRIC_CHOICES, "chart": CHARTS}.get(name)
        if name not in URL_NAMES or (options and text not in options):
            refused.append(InputError(name, text, Phrase(
                "refusal.one_of", options=", ".join(options or URL_NAMES))))
        elif name in ("xv", "yv"):
            kernel = found.get("kernel", value("kernel", kernel_names()[0]))
            knob = found.get(name[0]) or (_first(kernel)[0] if name == "xv" else NONE)
            st.session_state[_values_key(name[0], kernel, knob)] = text
        else:
            st.session_state[key(name)] = text
    return refused


def url_params(c: dict) -> dict:
    out = {"kernel": c["kernel"], "x": c["x"], "xv": c["xv"]}
    if c["y"]:
        out.update(y=c["y"], yv=c["yv"])
    return {**out, "metric": c["metric"], "chart": c["chart"]}


# ---- widgets -----------------------------------------------------------------------------
def _picker(c: dict, which: str, where, options: list[str]) -> str:
    """The knob of axis ``which`` ("x" or "y"; "" = no second axis)."""
    kernel, lang = c["kernel"], state.language()
    first = _first(kernel)[0] if which == "x" else NONE
    if value(which) not in options:
        st.session_state[key(which)] = first
    return where.selectbox(
        state.tr(AXIS_IDS[which]), options, help=state.tr("ui.sweep.axis_help"),
        format_func=lambda n: knob_label(kernel, n, lang) if n else t("ui.sweep.none", lang),
        **state.bound(key(which), first))


def _axis(c: dict, which: str, where, options: list[str]) -> None:
    """A knob picker, its values (text, as on the command line) and its allowed range;
    sets ``c[which]`` and ``c[which + "v"]``."""
    kernel = c["kernel"]
    name = c[which] = _picker(c, which, where, options)
    c[which + "v"] = ""
    if not name:
        return
    knob = knobs(kernel)[name]
    current = now(c["base"], knob)
    fallback = _first(kernel)[1] if (which, name) == ("x", _first(kernel)[0]) \
        and _first(kernel)[1] else default_values(knob, current)
    c[which + "v"] = where.text_input(
        state.tr("ui.sweep.values", name=name), help=state.tr("ui.sweep.values_help"),
        **state.bound(_values_key(which, kernel, name), fallback, widget=key(which + "v")))
    where.caption(allowed_caption(knob, current))


def _knob_options(kernel: str, exclude: str = "") -> list[str]:
    names = [n for n in knobs(kernel, numeric=True) if n != exclude]
    return [n for n in names if not n.startswith(CHIP)] + \
        [n for n in names if n.startswith(CHIP)]


def _run_on(where) -> dict:
    """Local worker processes (how many) or a Dask scheduler (its address)."""
    executor = where.radio(state.tr("ui.sweep.executor"), EXECUTORS, horizontal=True,
                           format_func=labeller(EXECUTOR_IDS),
                           **state.bound(key("executor"), "local"))
    if executor == "dask":
        address = where.text_input(state.tr("ui.sweep.address"),
                                   help=state.tr("ui.sweep.address_help"),
                                   **state.bound(key("address"), DEFAULT_ADDRESS))
        return {"executor": executor, "address": address, "workers": 2}
    workers = where.number_input(state.tr("ui.sweep.workers"), 1, 16, step=1,
                                 help=state.tr("ui.sweep.workers_help"),
                                 **state.bound(key("workers"), 2))
    return {"executor": executor, "address": "", "workers": int(workers)}


def controls() -> dict:
    """Draw the controls; the page's choices as a dict (``base`` is a Scenario)."""
    top, lang = st.columns([1, 2]), state.language()  # bound now: AppTest formats later
    kernel = top[0].selectbox(state.tr("ui.sweep.kernel"), kernel_names(),
                              format_func=lambda k: page_of(k).title(lang),
                              help=state.tr("ui.sweep.kernel_help"),
                              **state.bound(key("kernel"), kernel_names()[0]))
    base, source = base_scenario(kernel)
    top[1].caption(state.tr(source, page=page_of(kernel).title(lang),
                            chip=base.chip().display_name))
    with top[1].expander(state.tr("ui.sweep.base_title")):
        st.code(base.to_toml(), language="toml")
    c = {"kernel": kernel, "base": base}
    left, right = (column.container(border=True) for column in st.columns(2))
    _axis(c, "x", left, _knob_options(kernel))
    _axis(c, "y", right, [NONE, *_knob_options(kernel, exclude=c["x"])])
    row = st.columns(3)
    c["metric"] = row[0].selectbox(
        state.tr("ui.sweep.metric"), METRIC_CHOICES,
        format_func=lambda m: t(METRIC_LABEL_IDS[m], lang),
        **state.bound(key("metric"), "makespan_us"))
    c["chart"] = row[1].radio(state.tr("ui.sweep.chart"), CHARTS, horizontal=True,
                              format_func=labeller(CHART_IDS),
                              **state.bound(key("chart"), "line"))
    c.update(_run_on(row[2]))
    c["limit"] = MAX_SCENARIOS
    return c
