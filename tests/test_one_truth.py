"""One truth per number (issue 19): the bound and the load balance have one definition
(``explorer.core.metrics``), and the metric tiles, the advisor and the report all show it.

* On every gallery scenario and every kernel's default scenario, ``advise(result)``
  reports the bound and the load balance that ``result.metrics`` holds.
* The load balance counts the cores that set the duration: a core that only waits at a
  SyncAll, or a core of the kind that finishes sooner, does not move it.
* The bound's definition, shown as the tile's help, states the thresholds the rule uses.
* On the vector add, GEMM and decode pages the Bound and Load balance tiles read as the
  advisor below them does, and the advisor shows no Markdown markup and no emoji (the
  sparse page too), in English and Chinese.
"""
from __future__ import annotations

import functools
import json

import pytest
from streamlit.testing.v1 import AppTest
from streamlit.testing.v1.element_tree import Block

import kernels
from explorer.core import Scenario, advisor, gallery, metrics, simulate
from explorer.core.advisor import BOUND_IDS, CHECK_IDS, CHECKS, advise, checklist_table
from explorer.core.i18n import LANGUAGES, has, t
from explorer.plots.report_figures import format_metric
from explorer.ui import advisor_view
from tests.apptest_helpers import open_page

#: gallery scenario ids and every kernel's defaults ("default:<kernel>")
SCENARIOS = gallery.ids() + [f"default:{name}" for name in sorted(kernels.KERNELS)]
PAGES = {"vector_add": "explorer/ui/pages/vector_add.py", "gemm": "explorer/ui/pages/gemm.py",
         "decode": "explorer/ui/pages/decode.py", "sparse": "explorer/ui/pages/sparse.py"}
#: (page, URL query, the tiles the page shows): the defaults, and a run where tile and
#: advisor disagreed (GEMM single-buffered: "latency" on the tile, "tail wave" in the
#: advisor). The decode page's tiles show the whole layer whatever its phases, so they are
#: compared on the default (phases = layer), where the advisor reads the same run.
TILE_CASES = [("vector_add", {}, ("bound",)),
              ("gemm", {}, ("bound", "load_balance_mean_max")),
              ("decode", {}, ("bound", "load_balance_mean_max")),
              ("gemm", {"M": "2048", "N": "2048", "K": "2048", "db_l1": "false",
                        "db_l0": "false"}, ("bound", "load_balance_mean_max"))]
#: code points that are pictographs or symbols chromium needs an emoji font for
EMOJI_RANGES = ((0x2190, 0x21FF), (0x2300, 0x23FF), (0x2460, 0x24FF), (0x25A0, 0x27BF),
                (0x2900, 0x297F), (0x2B00, 0x2BFF), (0xFE00, 0xFE0F), (0x1F000, 0x1FAFF))


def scenario_of(scenario_id: str) -> Scenario:
    kind, _, name = scenario_id.partition(":")
    return Scenario.make("910B2", name) if kind == "default" else gallery.load(scenario_id)


@functools.cache
def result_of(scenario_id: str):
    return simulate(scenario_of(scenario_id))


# ---- the library -------------------------------------------------------------------------
@pytest.mark.parametrize("scenario_id", SCENARIOS)
def test_the_advisor_reports_the_runs_own_bound_and_load_balance(scenario_id):
    result = result_of(scenario_id)
    advice = advise(result)
    assert advice.bound == result.metrics["bound"]
    checks = {c.key: c for c in advice.checks}
    assert checks["load_balance"].value == result.metrics["load_balance_mean_max"]


@pytest.mark.parametrize("scenario_id", SCENARIOS)
def test_the_advisor_table_writes_the_balance_as_the_tile_does(scenario_id):
    result = result_of(scenario_id)
    for lang in LANGUAGES:
        table = checklist_table(advise(result), lang)
        row = list(CHECKS).index("load_balance")
        shown = table.loc[row, t("advisor.col.value", lang)]
        assert shown == format_metric("load_balance_mean_max",
                                      result.metrics["load_balance_mean_max"], lang)


def test_cores_that_only_wait_at_a_barrier_do_not_count():
    result = simulate(Scenario.make("910B2", "decode", {"batch": 8, "phases": "both"}))
    pc = result.per_core
    worked = metrics.worked(pc)
    assert (~worked).any(), "the append's SyncAll should involve cores without work"
    only_syncall = pc.loc[~worked, "core"]
    ops = result.timeline.loc[result.timeline["core"].isin(only_syncall), "op"]
    assert set(ops.astype(str)) == {"SyncAll"}
    assert metrics.load_balance(pc) == metrics.load_balance(pc[worked])
    m = result.metrics
    assert (m["load_balance_min_max"], m["load_balance_mean_max"]) == metrics.load_balance(pc)


@pytest.mark.parametrize("scenario_id", ["split_k_b", "linear_w8a16_down"])
def test_the_kind_that_finishes_sooner_does_not_count(scenario_id):
    """Split-K's few AIV combining partials, the AIV dequantising int8 weights."""
    pc = result_of(scenario_id).per_core
    assert pc["core_kind"].nunique() == 2
    busiest = pc.loc[pc["work_ns"].idxmax(), "core_kind"]
    alone = pc[pc["core_kind"] == busiest]
    assert metrics.load_balance(pc) == metrics.load_balance(alone)


def test_the_bound_and_its_words_cover_every_value():
    assert set(metrics.BOUND_VALUE_IDS) == set(BOUND_IDS) == set(metrics.BOUNDS)
    for lang in LANGUAGES:
        for kind in metrics.BOUNDS:
            assert has(metrics.BOUND_VALUE_IDS[kind], lang) and has(BOUND_IDS[kind], lang)


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_bounds_definition_states_the_thresholds_the_rule_uses(lang):
    definition = t("metric.bound.def", lang)
    for share in (metrics.COMPUTE_SHARE, metrics.MEMORY_SHARE, metrics.STALL_SHARE,
                  metrics.COMM_SHARE, metrics.IMBALANCE_FLOOR):
        assert f"{share:.0%}" in definition, (share, definition)
    for kind in metrics.BOUNDS[:-1]:  # "none" is not a rule
        assert t(metrics.BOUND_VALUE_IDS[kind], lang) in definition, kind


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_report_names_the_runs_bound_without_markup(lang):
    result = result_of("tail_wave")
    texts = [item for item in advisor.report_content(result, lang) if isinstance(item, str)]
    word = format_metric("bound", result.metrics["bound"], lang)
    assert any(word in text for text in texts)
    assert not any("**" in text for text in texts[:-1])  # the tips' line is a Markdown list


# ---- the pages ---------------------------------------------------------------------------
@functools.cache
def page(name: str, query_json: str, lang: str) -> AppTest:
    """A page opened once per (page, query, language) for every test that reads it."""
    query = {**json.loads(query_json), **({"lang": lang} if lang != "en" else {})}
    return open_page(PAGES[name], query)


def advisor_section(at: AppTest) -> Block:
    """The advisor's container (``advisor_view.SECTION`` is its key)."""
    for node in at.main:
        if isinstance(node, Block) and str(getattr(node.proto, "id", "")).endswith(
                "-" + advisor_view.SECTION):
            return node
    raise AssertionError("the page shows no advisor section")


def elements(block: Block, kind: str) -> list:
    return [node for node in block if getattr(node, "type", None) == kind]


def advisor_balance(section: Block, lang: str) -> str:
    """The checklist's value of its load balance item."""
    tables = elements(section, "table")
    assert len(tables) == 1, "the checklist is one static table"
    table = tables[0].value
    row = table[t("advisor.col.item", lang)] == t(CHECK_IDS["load_balance"][1], lang)
    return table.loc[row, t("advisor.col.value", lang)].iloc[0]


@pytest.mark.parametrize("name, query, tiles", TILE_CASES)
def test_the_tiles_read_as_the_advisor_below_them(name, query, tiles):
    at = page(name, json.dumps(query), "en")
    section = advisor_section(at)
    inside = {id(node) for node in elements(section, "metric")}
    shown = {m.label: m.value for m in at.metric if id(m) not in inside}
    labels = {k: t(metrics.METRIC_LABEL_IDS[k], "en") for k in tiles}
    assert set(labels.values()) <= set(shown), (labels, sorted(shown))
    (bound,) = [m.value for m in elements(section, "metric")]
    assert shown[labels["bound"]] == bound
    if "load_balance_mean_max" in tiles:
        assert shown[labels["load_balance_mean_max"]] == advisor_balance(section, "en")


def is_emoji(char: str) -> bool:
    return any(lo <= ord(char) <= hi for lo, hi in EMOJI_RANGES)


@pytest.mark.parametrize("lang", LANGUAGES)
@pytest.mark.parametrize("name", PAGES)
def test_the_advisor_shows_no_markup_and_no_emoji(name, lang):
    section = advisor_section(page(name, "{}", lang))
    prose = [str(e.value) for kind in ("markdown", "caption") for e in elements(section, kind)]
    assert prose
    for text in prose:
        assert "**" not in text and "__" not in text and not text.lstrip().startswith("#"), text
    table = elements(section, "table")[0].value
    for cell in table.to_numpy().ravel():  # a static table's cells are Markdown too
        text = str(cell).lstrip()
        assert "**" not in text and not text.startswith(("-", "*", "+", "#", ">")), text
    status = table[t("advisor.col.status", lang)]
    assert not [cell for cell in status if any(is_emoji(ch) for ch in str(cell))]
    assert set(status) <= {t(i, lang) for i in advisor.STATUS_IDS.values()}
    # a static table wraps its long explanations; a data grid cuts them at its width
    assert not elements(section, "dataframe")
