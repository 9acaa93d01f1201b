"""The generic kernel page "More kernels" under ``streamlit.testing.v1.AppTest``: every
kernel without a page of its own opens at ``kernels?kernel=<name>`` with its title, a
widget per parameter labelled from the catalogue, the metrics, the charts, the numerical
check, its explanation and the advisor; a changed widget, once applied, changes the run
the page shows (the duration ``explorer.core.simulate`` gives for the widgets' scenario)
and the URL, and the URL reopens it; bad links are translated messages naming field, value and what
is allowed; the picker lists exactly the kernels without a page; Chinese works.

Every expected value comes from the library (records, specs, catalogue, simulate).
"""
from __future__ import annotations

import functools
import re

import pytest
from streamlit.testing.v1 import AppTest

import kernels
from explorer.core import Scenario, simulate
from explorer.core.i18n import catalogue, has, t
from explorer.plots import report_figures
from explorer.ui import generic_kernel as generic
from explorer.ui import kernel_pages, state, widgets
from tests.apptest_helpers import apply, open_page, run, texts
from tests.apptest_helpers import widget as find

PAGE = "explorer/ui/pages/kernels.py"
#: each kernel on the generic page, with a change of one widget that changes its run
CHANGES = {"rmsnorm": {"rows": 128}, "rope": {"rows": 128}, "swiglu": {"rows": 128},
           "linear": {"weight_dtype": "int8"}}


# ---- reading the page --------------------------------------------------------------------
def kernel_page(kernel: str | None, **query: str) -> AppTest:
    """The app from its entry point, on the generic page, with ``kernel`` in its URL."""
    return open_page(PAGE, {**({"kernel": kernel} if kernel else {}), **query})


def widget(at: AppTest, kernel: str, name: str):
    return find(at, "w." + generic.key(kernel, name))


def shown_params(at: AppTest, kernel: str) -> tuple[dict, int]:
    """The kernel's parameters and the seed as the page's widgets hold them."""
    params = {s.name: widget(at, kernel, s.name).value for s in kernels.get(kernel).params}
    return params, int(widget(at, kernel, generic.SEED).value)


def duration(at: AppTest, lang: str = "en") -> str:
    label = report_figures.metric_label("makespan_us", lang)
    return next(m.value for m in at.metric if m.label == label)


@functools.cache
def _makespan_us(scenario: Scenario) -> float:
    """``explorer.core.simulate`` in this process (once per scenario and test worker)."""
    return simulate(scenario).metrics["makespan_us"]


def expected_duration(at: AppTest, kernel: str, lang: str = "en") -> str:
    """The duration of the scenario the widgets describe, from the library, as shown."""
    params, seed = shown_params(at, kernel)
    scenario = Scenario.make(at.session_state[state.PRESET], kernel, params, {}, seed)
    return report_figures.format_metric("makespan_us", _makespan_us(scenario), lang)


def label(kernel: str, name: str, lang: str = "en") -> str:
    """A parameter's label: the catalogue's (the page record's id), else its name."""
    msg_id = kernel_pages.page_of(kernel).label_id(name)
    return t(msg_id, lang) if has(msg_id, lang) else name


def shown_text(at: AppTest) -> list[str]:
    """Every text the page shows: bodies, labels, help, options, expanders' labels."""
    found: list[str] = []

    def walk(node) -> None:
        proto = getattr(node, "proto", None)
        fields = getattr(getattr(proto, "DESCRIPTOR", None), "fields_by_name", {})
        for name in ("body", "label", "help", "options", "placeholder"):
            if name in fields:
                value = getattr(proto, name)
                found.extend([value] if isinstance(value, str) else list(value))
        if "expandable" in fields:
            found.append(proto.expandable.label)
        for child in getattr(node, "children", {}).values():
            walk(child)

    walk(at._tree)  # noqa: SLF001  (AppTest has no public walk of every element)
    return [text.replace("\\", "") for text in found if text]


def errors_text(at: AppTest) -> str:
    return texts(at.error)


def expanders(at: AppTest) -> list[str]:
    return [e.label for e in at.expander]


# ---- each kernel -------------------------------------------------------------------------
@pytest.mark.parametrize("kernel", sorted(CHANGES))
def test_page_shows_the_kernel_and_follows_its_widgets(kernel):
    record = kernels.get(kernel)
    at = kernel_page(kernel)
    title = t(record.title_key, "en")
    assert at.title[0].value == t("ui.kernels.title", "en")
    assert t("ui.kernels.params", "en", title=title) in texts(at.markdown)
    subheaders = [h.value for h in at.subheader]
    assert t("ui.kernels.explain", "en", title=title) in expanders(at)
    assert not at.error

    # one widget per parameter (and the seed), labelled from the catalogue, at its default
    mine = {w.key for kind in ("number_input", "selectbox", "checkbox", "text_input")
            for w in at.get(kind) if str(w.key).startswith("w." + generic.key(kernel, ""))}
    assert mine == {"w." + generic.key(kernel, name) for name in generic.specs(kernel)}
    for spec in record.params:
        shown = widget(at, kernel, spec.name)
        assert shown.label == label(kernel, spec.name)
        assert shown.value == generic.default(kernel, spec.name)
        assert f"`{spec.name}`" in shown.help

    # the run: metrics, charts, numerical check, explanation, advisor
    headline = [report_figures.metric_label(name) for name in generic.metric_names(kernel)]
    assert [m.label for m in at.metric][:len(headline)] == headline
    assert duration(at) == expected_duration(at, kernel)
    own = [f for f in record.figures if f in report_figures.KERNEL_FIGURES]
    assert len(at.get("plotly_chart")) == 6 + len(own)  # timeline, 4 summaries, roofline
    assert "Passed" in texts(at.success)
    markdown = [m.value for m in at.markdown]
    for msg_id in record.explanation:
        assert t(msg_id, "en") in markdown, msg_id
    assert t("advisor.title", "en") in subheaders

    # a changed widget changes the run (as the library says it should) and the URL
    before = duration(at)
    for name, value in CHANGES[kernel].items():
        widget(at, kernel, name).set_value(value)
    apply(at)
    after = expected_duration(at, kernel)
    assert duration(at) == after != before
    assert "Passed" in texts(at.success)
    params, seed = shown_params(at, kernel)
    assert {k: v for k, v in params.items() if k in CHANGES[kernel]} == CHANGES[kernel]
    query = dict(at.query_params)
    assert query["kernel"] == kernel and query["seed"] == str(seed)
    assert {name: query[name] for name in params} == {k: str(v) for k, v in params.items()}

    # the URL reopens the same scenario
    again = open_page(PAGE, query)
    assert shown_params(again, kernel) == (params, seed)
    assert duration(again) == after
    assert not again.error


# ---- bad input ---------------------------------------------------------------------------
def _range(kernel: str, name: str, lang: str = "en") -> str:
    spec = generic.specs(kernel)[name]
    which = "ui.kernels.allowed_integer" if spec.kind is int else "ui.kernels.allowed_number"
    return t(which, lang, min=widgets.number(spec.min), max=widgets.number(spec.max))


def _check_refusal(kernel: str, params: dict) -> str:
    """What the kernel's own check says is allowed (it raises for ``params``)."""
    import hardware_presets as hp
    from hardware_presets.errors import InputError
    try:
        kernels.get(kernel).check(hp.load(state.DEFAULT_PRESET), params)
    except InputError as exc:
        return exc.allowed
    raise AssertionError(f"{kernel} accepts {params}")


def test_bad_values_in_a_link_are_named_and_the_page_runs_on():
    at = kernel_page("rmsnorm", rows="0", eps="abc", bogus="1")
    message = errors_text(at)
    for field, value, allowed in (
            ("params.rows", "= 0 ", _range("rmsnorm", "rows")),
            ("params.eps", "= 'abc' ", _range("rmsnorm", "eps")),
            ("bogus", "= '1' ", t("ui.kernels.allowed_param", "en", kernel="rmsnorm",
                                  names=", ".join(generic.specs("rmsnorm"))))):
        line = next(line for line in message.splitlines() if field in line)
        assert value in line and allowed in line, line
    assert label("rmsnorm", "rows") in message  # the field's label leads it
    # the refused values were not taken: the page runs the defaults
    assert shown_params(at, "rmsnorm")[0] == {s.name: s.default
                                              for s in kernels.get("rmsnorm").params}
    assert "Passed" in texts(at.success)
    assert at.query_params["rows"] == str(generic.specs("rmsnorm")["rows"].default)


def test_a_value_the_kernel_refuses_stops_the_run_not_the_page():
    at = kernel_page("rmsnorm", hidden="100")
    message = errors_text(at)
    assert "params.hidden" in message and "= 100 " in message
    assert _check_refusal("rmsnorm", {"hidden": 100}) in message
    assert widget(at, "rmsnorm", "hidden").value == 100
    assert not at.get("plotly_chart") and not at.metric  # no run
    title = t(kernels.get("rmsnorm").title_key, "en")
    assert t("ui.kernels.explain", "en", title=title) in expanders(at)
    widget(at, "rmsnorm", "hidden").set_value(128)
    apply(at)
    assert not at.error and "Passed" in texts(at.success)


@pytest.mark.parametrize("name", ["nope", "gemm"])
def test_a_kernel_the_page_does_not_show_is_refused(name):
    at = kernel_page(name, rows="5")
    message = errors_text(at)
    offered = generic.names()
    assert f"kernel = '{name}'" in message
    assert t("ui.kernels.allowed_kernel", "en", names=", ".join(offered)) in message
    if name in kernel_pages.PAGES:
        assert t("ui.kernels.has_page", "en",
                 title=kernel_pages.PAGES[name].title("en")) in message
    assert len(at.error) == 1  # rows=5 was meant for that kernel: not applied to another
    first = offered[0]
    assert at.query_params["kernel"] == first
    assert "Passed" in texts(at.success)


def test_refusals_are_translated():
    at = kernel_page("rmsnorm", rows="abc", lang="zh")
    message = errors_text(at)
    assert t("error.invalid_input", "zh", field=f"{label('rmsnorm', 'rows', 'zh')} "
             "(params.rows)", value="'abc'", allowed=_range("rmsnorm", "rows", "zh")) in message
    assert "integer" not in message


# ---- the picker --------------------------------------------------------------------------
def test_picker_lists_exactly_the_kernels_without_a_page():
    at = kernel_page(None)
    offered = [k for k in kernel_pages.names() if k not in kernel_pages.PAGES]
    picker = find(at, "w." + generic.KERNEL)
    assert picker.options == [f"{kernel_pages.page_of(k).title('en')} ({k})" for k in offered]
    assert picker.value == offered[0]
    other = offered[-1]
    picker.set_value(other)
    run(at)
    assert at.query_params["kernel"] == other
    assert duration(at) == expected_duration(at, other)


# ---- language ----------------------------------------------------------------------------
def _english_leftovers(shown: list[str]) -> list[str]:
    """The page's own English (ui.kernels.*, nav.kernels) in what the page shows: every
    run of words between placeholders that the Chinese message does not keep as it is."""
    en, zh = catalogue("en"), catalogue("zh")
    text = "\n".join(shown)
    found = []
    for msg_id, words in en.items():
        if not (msg_id.startswith("ui.kernels.") or msg_id == "nav.kernels"):
            continue
        for part in re.split(r"\{[^}]*\}", words):
            part = part.strip(" .,:;()`\"'")
            if len(part) >= 6 and re.search(r"[A-Za-z]{3}", part) and part not in zh[msg_id] \
                    and part in text:
                found.append(f"{msg_id}: {part!r}")
    return found


def test_chinese():
    at = kernel_page("linear", lang="zh")
    title = t(kernels.get("linear").title_key, "zh")
    assert title != t(kernels.get("linear").title_key, "en")
    assert at.title[0].value == t("ui.kernels.title", "zh")
    subheaders = [h.value for h in at.subheader]
    assert t("ui.kernels.explain", "zh", title=title) in expanders(at)
    assert t("ui.kernels.results", "zh") in subheaders
    assert t("advisor.title", "zh") in subheaders
    assert "通过" in texts(at.success)
    assert duration(at, "zh") == expected_duration(at, "linear", "zh")
    for spec in kernels.get("linear").params:
        assert widget(at, "linear", spec.name).label == label("linear", spec.name, "zh")
    assert t("ui.kernels.help.log_scale", "zh") in widget(at, "linear", "M").help
    shown = shown_text(at)
    assert not _english_leftovers(shown), _english_leftovers(shown)
