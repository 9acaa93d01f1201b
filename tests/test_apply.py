"""Expensive inputs apply on a button, and the answer comes first (``explorer.ui.apply``),
on each of the five kernel pages under ``streamlit.testing.v1.AppTest``:

* changing an expensive widget leaves the shown result as it was (every metric tile the
  same), marks it stale and leaves the URL at the applied values;
* pressing Apply runs the new values: the tiles show what ``explorer.core.simulate`` (or
  the decode and sparse steps built on it) gives for the new scenario, the notice goes and
  the URL follows;
* opening a URL, a one-click example and a chip change apply at once; a view-only control
  (the timeline's window) reruns the page at once without marking anything stale;
* on each page the first metric tiles and the timeline come before any expander and any
  explanation text (the order of the elements in the tree).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest
from streamlit.testing.v1 import AppTest

import kernels
from explorer.core import Scenario, simulate
from explorer.core.decode_step import simulate_decode
from explorer.core.i18n import t
from explorer.core.sparse_step import simulate_sparse
from explorer.plots.report_figures import format_metric
from explorer.ui import apply as apply_ui
from explorer.ui import decode_controls, generic_kernel, sparse_controls, sparse_view
from explorer.ui.advisor_view import SECTION
from explorer.ui.state import DEFAULT_PRESET
from kernels.gemm import params as gp
from kernels.vector_add import kernel as vector_add
from tests.apptest_helpers import apply, open_page, run, texts, widget

STALE = t("apply.stale", "en")


def duration(result) -> str:
    return format_metric("makespan_us", result.metrics["makespan_us"], "en")


def session(at: AppTest, prefix: str, names, default=None) -> dict:
    """The page's values of ``names`` as its session holds them (``default(name)`` for one
    its widgets never drew)."""
    return {name: at.session_state[prefix + name] if prefix + name in at.session_state
            else default(name) for name in names}


# ---- what each page runs, from the library -----------------------------------------------
def va_expected(at: AppTest) -> dict[str, str]:
    p = session(at, "va.", [s.name for s in vector_add.PARAMS])
    scenario = Scenario.make(DEFAULT_PRESET, "vector_add", p, {}, at.session_state["va.seed"])
    return {"Kernel duration": duration(simulate(scenario))}


def gemm_expected(at: AppTest) -> dict[str, str]:
    p = session(at, "gm.", [s.name for s in gp.PARAMS])
    scenario = Scenario.make(DEFAULT_PRESET, "gemm", p, {}, at.session_state["gm.seed"])
    return {"Kernel duration": duration(simulate(scenario))}


def kernels_expected(at: AppTest) -> dict[str, str]:
    prefix = generic_kernel.page("rmsnorm").prefix
    p = session(at, prefix, [s.name for s in kernels.get("rmsnorm").params])
    scenario = Scenario.make(DEFAULT_PRESET, "rmsnorm", p, {}, at.session_state[prefix + "seed"])
    return {"Kernel duration": duration(simulate(scenario))}


def decode_expected(at: AppTest) -> dict[str, str]:
    """The layer's duration and the step time (the model fits one card: no split)."""
    names = [n for n in decode_controls.PAGE_NAMES if n not in ("cards", "seed")]
    p = session(at, decode_controls.PREFIX, names, decode_controls.default)
    scenario = Scenario.make(DEFAULT_PRESET, "decode", p, {}, at.session_state["dc.seed"])
    step = simulate_decode(scenario)
    return {"Kernel duration": duration(step.result),
            "Step time": f"{step.step_ns / 1e6:,.2f} ms"}


def sparse_expected(at: AppTest) -> dict[str, str]:
    p = session(at, sparse_controls.PREFIX, sparse_controls.SPECS)
    scenario = Scenario.make(DEFAULT_PRESET, "decode", sparse_view.decode_params(p), {},
                             sparse_view.SEED)
    step = simulate_sparse(scenario)
    return {"Sparse step": f"{step.sparse.step_ns / 1e6:,.3f} ms",
            "Dense step": f"{step.dense.step_ns / 1e6:,.3f} ms"}


@dataclass(frozen=True)
class Case:
    page: str
    query: dict
    widget: str  # the expensive widget changed
    value: object
    url: tuple[str, str]  # its URL parameter and the new value as the URL writes it
    expected: Callable[[AppTest], dict[str, str]]  # tile label -> value, from the library


CASES = {
    "vector_add": Case("explorer/ui/pages/vector_add.py", {"n": "65536", "block_dim": "2"},
                       "w.va.buffer_num", 1, ("buffer_num", "1"), va_expected),
    "gemm": Case("explorer/ui/pages/gemm.py", {"M": "512", "N": "512", "K": "512"},
                 "w.gm.K", 1024, ("K", "1024"), gemm_expected),
    "kernels": Case("explorer/ui/pages/kernels.py", {"kernel": "rmsnorm", "rows": "64"},
                    "w.kn.rmsnorm.rows", 128, ("rows", "128"), kernels_expected),
    "decode": Case("explorer/ui/pages/decode.py", {"batch": "8"}, "w.dc.batch", 4,
                   ("batch", "4"), decode_expected),
    "sparse": Case("explorer/ui/pages/sparse.py", {"batch": "2", "mean_len": "1024"},
                   "w.sa.keep_ratio", 0.1, ("keep_ratio", "0.1"), sparse_expected),
}


def tiles(at: AppTest) -> list[tuple[str, str]]:
    return [(m.label, m.value) for m in at.metric]


def tile(at: AppTest, label: str) -> str:
    return next(m.value for m in at.metric if m.label == label)


def is_stale(at: AppTest) -> bool:
    return STALE in texts(at.warning)


# ---- apply on a button -------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(CASES))
def test_a_change_waits_for_apply_and_apply_runs_it(name):
    case = CASES[name]
    at = open_page(case.page, case.query)
    assert not at.error and not is_stale(at)  # the URL's values applied on opening
    assert at.button(key=apply_ui.BUTTON).disabled
    key, new = case.url
    before, url_before = tiles(at), at.query_params[key]
    assert url_before != new

    widget(at, case.widget).set_value(case.value)
    run(at)
    assert tiles(at) == before  # the result shown is the applied one
    assert is_stale(at) and not at.button(key=apply_ui.BUTTON).disabled
    assert at.query_params[key] == url_before  # a copied link reproduces the figures

    apply(at)
    assert not is_stale(at) and at.button(key=apply_ui.BUTTON).disabled
    assert at.query_params[key] == new
    expected = case.expected(at)
    assert {label: tile(at, label) for label in expected} == expected
    assert tiles(at) != before
    assert not at.error and not at.exception


def test_a_copied_link_reopens_what_the_figures_show():
    case = CASES["vector_add"]
    at = open_page(case.page, case.query)
    widget(at, case.widget).set_value(case.value)
    run(at)
    link = dict(at.query_params)  # copied while the change waits: the applied values
    again = open_page(case.page, link)
    assert tiles(again) == tiles(at)
    apply(at)
    again = open_page(case.page, dict(at.query_params))
    assert tiles(again) == tiles(at)


def test_examples_and_a_chip_change_apply_at_once():
    at = open_page(CASES["gemm"].page, CASES["gemm"].query)
    at.button(key="gm_example_small").click()
    run(at)
    assert not is_stale(at) and at.query_params["K"] == "8192"
    assert {k: tile(at, k) for k in gemm_expected(at)} == gemm_expected(at)
    at.sidebar.selectbox[0].set_value("910B4")
    run(at)
    assert not is_stale(at) and at.query_params["preset"] == "910B4"


def test_a_view_control_reruns_at_once_without_marking_the_results_stale():
    case = CASES["vector_add"]
    at = open_page(case.page, case.query)
    chart = [c for c in at.get("plotly_chart") if c.key == "timeline"][0].proto.spec
    at.slider(key="w.view.window").set_value((0.0, 50.0))
    run(at)
    assert not is_stale(at)
    assert [c for c in at.get("plotly_chart") if c.key == "timeline"][0].proto.spec != chart


# ---- the answer first --------------------------------------------------------------------
def _order(at: AppTest) -> list[tuple[str, str | None, str]]:
    """Every element of the main area in the order drawn: (type, key, the keyed container
    it is in: the controls, the advisor, or "" for the rest)."""
    found = []

    def walk(node, inside: str) -> None:
        kind, key = getattr(node, "type", ""), getattr(node, "key", None)
        if key in (apply_ui.CONTROLS, SECTION):
            inside = key
        found.append((kind, key, inside))
        for child in getattr(node, "children", {}).values():
            walk(child, inside)

    walk(at.main, "")
    return found


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_answer_comes_before_any_fold_or_explanation(name):
    case = CASES[name]
    order = _order(open_page(case.page, case.query))
    outside = [(i, kind, key, inside) for i, (kind, key, inside) in enumerate(order)
               if inside != apply_ui.CONTROLS]
    first_tile = next(i for i, kind, _, _ in outside if kind == "metric")
    timeline = next(i for i, kind, key, _ in outside
                    if kind == "plotly_chart" and key in ("timeline", "sa_timeline"))
    advisor = next(i for i, _, key, _ in outside if key == SECTION)
    folds = [i for i, kind, _, _ in outside if kind in ("expander", "markdown")]
    assert first_tile < folds[0] and timeline < folds[0], (name, order[:folds[0] + 1])
    # the advisor's top finding comes right after the answer, before the other figures
    figures = [i for i, kind, key, _ in outside
               if kind == "plotly_chart" and key not in ("timeline", "sa_timeline")]
    assert first_tile < advisor < figures[0]
    if name != "sparse":  # its timeline is the compression's, after the step's tiles
        assert timeline < advisor


def test_the_advisor_advises_on_the_layer_the_decode_tiles_show():
    """With phases other than "layer" the tiles show the whole layer; so does the advisor
    (it used to read the phases' own run)."""
    at = open_page(CASES["decode"].page, {"phases": "attention"})
    section = next(node for node in at.main if getattr(node, "key", None) == SECTION)
    inside = [n for n in section if getattr(n, "type", None) == "metric"]
    (bound,) = [n.value for n in inside]
    outside = [m for m in at.metric if id(m) not in {id(n) for n in inside}]
    assert next(m.value for m in outside if m.label == "Bound") == bound
    p = session(at, "dc.", [n for n in decode_controls.PAGE_NAMES
                            if n not in ("cards", "seed")], decode_controls.default)
    layer, phases = (simulate(Scenario.make(DEFAULT_PRESET, "decode", {**p, "phases": ph},
                                            {}, 0)) for ph in ("layer", "attention"))
    assert bound == format_metric("bound", layer.metrics["bound"], "en")
    assert layer.metrics["bound"] != phases.metrics["bound"]  # a different run would differ
    assert at.query_params["phases"] == "attention"
