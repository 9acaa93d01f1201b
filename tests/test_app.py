"""The Streamlit app under ``streamlit.testing.v1.AppTest``: both pages run from app.py,
show their key content, react to their widgets, follow the language and the URL, and show
bad input as a translated message instead of an exception.
"""
from __future__ import annotations

import json

import pytest
from streamlit.testing.v1 import AppTest

from explorer.core import Scenario, simulate
from explorer.plots.report_figures import format_metric
from explorer.ui import playground as va
from explorer.ui import run_view, widgets
from explorer.ui.run_marker import TEST_ID as RUN_MARKER_ID
from explorer.ui.state import DEFAULT_PRESET
from explorer.version import __version__
from tests.apptest_helpers import apply, run, start_app, texts, widget

CHIP = "explorer/ui/pages/chip.py"
PLAYGROUND = "explorer/ui/pages/vector_add.py"
SMALL_N = 1 << 16  # a quick scenario: 8 tiles of 8192 elements


def start(query: dict | None = None) -> AppTest:
    """The app from its entry point, run once (on the start page, the default)."""
    return run(start_app(query))


def chip_page(query: dict | None = None) -> AppTest:
    """The app from its entry point with ``query`` in its URL, switched to the chip page
    (at ``/chip``)."""
    return run(start(query).switch_page(CHIP))


def playground(at: AppTest, n: int = SMALL_N, **widgets) -> AppTest:
    """Switch to the playground with a small n, set other widgets by session name, and
    apply them (the page runs the values applied, not the widgets' as they change)."""
    run(at.switch_page(PLAYGROUND))
    at.select_slider(key="w.va.n").set_value(n)
    for name, value in widgets.items():
        _set(at, name, value)
    return apply(at)


def _set(at: AppTest, name: str, value) -> None:
    widget(at, f"w.va.{name}").set_value(value)


def metric(at: AppTest, label_start: str) -> str:
    return next(m.value for m in at.metric if m.label.startswith(label_start))


def figures(at: AppTest) -> list[dict]:
    return [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]


# ---- the run marker ----------------------------------------------------------------------
def _run_markers(at: AppTest) -> list[str]:
    return [element.proto.body for element in at.get("html") if RUN_MARKER_ID in element.proto.body]


#: the sidebar's captions when no override is in use: the version alone
VERSION_ONLY = [f"Version {__version__}"]

def test_every_run_ends_with_its_number_even_when_the_page_raises(monkeypatch):
    at = start()
    assert _run_markers(at) == [f'<div data-testid="{RUN_MARKER_ID}" data-run="1" hidden></div>']
    last = at.main.children[max(at.main.children)]
    assert RUN_MARKER_ID in last.proto.body  # the last element of the run
    # the version under the sidebar of every page, the one --version and reports show
    assert [c.value for c in at.sidebar.caption][-1:] == VERSION_ONLY
    run(at.switch_page(PLAYGROUND))
    assert 'data-run="2"' in _run_markers(at)[0]
    assert 'data-run="1"' in _run_markers(start())[0]  # counted per session

    def broken() -> None:
        raise RuntimeError("a page that raises")

    monkeypatch.setattr(widgets, "sidebar", broken)
    at.run()
    assert "a page that raises" in at.exception[0].value
    assert len(_run_markers(at)) == 1 and 'data-run="3"' in _run_markers(at)[0]


# ---- chip page ---------------------------------------------------------------------------
def test_chip_page_shows_fields_peaks_and_diagram():
    at = chip_page()
    assert at.title[0].value == "Chip: Ascend 910B2"
    assert len(at.get("plotly_chart")) == 2  # the core block diagram, today's chips
    assert any(n.key == "w.field.ub_KiB" for n in at.number_input)
    fields = at.dataframe[-1].value
    assert "ub_KiB" in set(fields["Key"])
    statuses = set(fields["Status"])
    assert "⚠ estimate" in statuses and "published" in statuses
    assert metric(at, "HBM bandwidth").endswith("GB/s")
    assert "Split (910B)" in texts(at.markdown)


def test_invalid_override_is_an_error_message_not_an_exception():
    at = chip_page()
    at.number_input(key="w.field.vector_cores").set_value(10)
    run(at)
    message = texts(at.error)
    assert "Vector cores (AIV) (910B2 override: vector_cores) = 10 is not allowed" in message
    assert "exactly 2 x ai_cores = 48" in message
    assert at.number_input(key="w.field.vector_cores").value == 48  # not applied
    assert [c.value for c in at.sidebar.caption] == VERSION_ONLY  # no override in use


def test_ub_override_limits_the_playground_tiles_and_resets():
    at = chip_page()
    at.number_input(key="w.field.ub_KiB").set_value(32)
    run(at)
    assert "ub_KiB = 32" in texts(at.sidebar.caption)
    assert "✎ override" in set(at.dataframe[-1].value["Status"])
    run(at.switch_page(PLAYGROUND))
    assert "tile (elements) (params.tile) = 8192" in texts(at.error)  # moved, and said so
    tiles = at.selectbox(key="w.va.tile").options
    assert max(int(t.split()[0].replace(",", "")) for t in tiles) <= 32 * 1024 // 12
    assert at.selectbox(key="w.va.tile").value <= 32 * 1024 // 12  # into UB
    run(at.switch_page(CHIP))
    at.button(key="chip_reset").click()
    run(at)
    assert at.number_input(key="w.field.ub_KiB").value == 192
    assert [c.value for c in at.sidebar.caption] == VERSION_ONLY


# ---- playground --------------------------------------------------------------------------
def test_playground_shows_metrics_figures_and_a_passed_check():
    at = playground(start())
    assert at.title[0].value == "Vector add playground"
    assert metric(at, "Kernel duration").endswith("µs")
    # the bound the library finds for the scenario the widgets show, as the page words it
    shown = {name: widget(at, f"w.va.{name}").value for name in va.SPECS}
    result = simulate(Scenario.make(DEFAULT_PRESET, "vector_add", shown, {}, 0))
    assert metric(at, "Bound") == format_metric("bound", result.metrics["bound"], "en")
    assert "Passed" in texts(at.success)
    specs = figures(at)
    assert len(specs) == 6  # timeline, ratios, bandwidth, traffic, balance, roofline
    assert specs[0]["data"], "the timeline has no traces"
    assert len(at.get("download_button")) == 5
    assert at.query_params["n"] == str(SMALL_N)


def test_buffer_num_changes_the_makespan():
    at = playground(start(), block_dim=2, buffer_num=2)  # 4 tiles per core: a pipeline
    double = metric(at, "Kernel duration")
    _set(at, "buffer_num", 1)
    single = metric(apply(at), "Kernel duration")
    assert single != double
    assert float(single.split()[0]) > float(double.split()[0])
    assert "BUFFER_NUM = 1" in texts(at.info)


def test_narrow_window_switches_the_timeline_to_exact_segments():
    at = playground(start(), n=1 << 24)  # 8192 instructions: above the exact-segment limit
    assert len(at.multiselect(key="w.view.cores").value) == 8  # the first cores at first
    at.multiselect(key="w.view.cores").set_value([])  # all cores
    assert figures(run(at))[0]["data"][0]["type"] == "heatmap"
    at.slider(key="w.view.window").set_value((0.0, 5.0))
    assert figures(run(at))[0]["data"][0]["type"] == "bar"


def test_too_big_a_program_is_refused_visibly_and_the_page_stays_usable():
    """n's widget stops at the playground's instruction budget for the tile and dtype (it
    used to offer 2^34 and the page then refused it). A dtype that needs more instructions
    per tile (bf16 on 910B2: Cast, Add, Cast) refuses that n visibly, and the page runs the
    largest n it accepts instead."""
    at = playground(start())
    top = int(at.select_slider(key="w.va.n").options[-1].split()[0].replace(",", ""))
    at.select_slider(key="w.va.n").set_value(top)
    assert not apply(at).error and "Passed" in texts(at.success)
    _set(at, "dtype", "bf16")
    message = texts(run(at).error)  # the controls refuse it at once, before any Apply
    assert f"n (elements) (params.n) = {top}" in message
    assert "at most 300,000 instructions" in message
    assert at.select_slider(key="w.va.n").value < top
    assert "Passed" in texts(apply(at).success)


def test_chinese_titles_and_labels():
    at = chip_page()
    at.sidebar.radio[0].set_value("zh")
    run(at)
    assert at.title[0].value == "芯片：Ascend 910B2"
    assert "⚠ 估计值" in set(at.dataframe[-1].value["状态"])
    at = playground(at)
    assert at.title[0].value == "向量加法实验台"
    assert metric(at, "内核耗时").endswith("µs")
    assert "通过" in texts(at.success)
    assert at.query_params["lang"] == "zh"


# ---- URL ---------------------------------------------------------------------------------
def test_url_sets_language_preset_override_and_parameters():
    at = chip_page({"lang": "zh", "preset": "910B4", "chip.ub_KiB": "64", "n": "4096",
                    "block_dim": "4", "buffer_num": "1"})
    assert at.title[0].value == "芯片：Ascend 910B4"
    assert at.number_input(key="w.field.ub_KiB").value == 64
    run(at.switch_page(PLAYGROUND))
    assert at.select_slider(key="w.va.n").value == 4096
    assert at.slider(key="w.va.block_dim").value == 4
    assert at.radio(key="w.va.buffer_num").value == 1


def test_bad_url_values_are_reported_and_ignored():
    at = start({"preset": "nope", "chip.ub_KiB": "-1"})  # shown by the first page run
    message = texts(at.sidebar.error)
    assert "preset = 'nope' is not allowed" in message
    assert "ub_KiB" in message
    run(at.switch_page(CHIP))
    assert at.title[0].value == "Chip: Ascend 910B2"


@pytest.mark.parametrize("dtype", ["bf16", "int32"])
def test_other_dtypes_run_and_pass(dtype):
    at = playground(start(), dtype=dtype)
    assert "Passed" in texts(at.success)
    assert dtype in texts(at.success)


@pytest.mark.parametrize("preset", ["910", "310P3"])
def test_coupled_presets_run(preset):
    at = playground(start({"preset": preset}))
    assert "Passed" in texts(at.success)
    run(at.switch_page(CHIP))
    assert "Coupled (910, 310P)" in texts(at.markdown)


# ---- scenario files ----------------------------------------------------------------------
def test_uploaders_refuse_files_over_the_pages_caps_before_they_are_sent():
    """Streamlit's own upload limit (200 MB by default) is lowered per uploader to the
    page's cap in whole MiB, so a workshop server never receives a huge file. The page has
    one upload box: scenario files and reports both load through it."""
    at = run(start())
    at = run(at.switch_page("explorer/ui/pages/vector_add.py"))
    sizes = {u.key: u.proto.max_upload_size_mb for u in at.get("file_uploader")}
    assert sizes == {run_view.UPLOAD_KEY: run_view.REPORT_MAX_BYTES >> 20}
    assert (widgets.upload_limit_mb(64 << 10), widgets.upload_limit_mb((32 << 20) + 1)) == (1, 33)


def test_scenario_file_round_trip():
    at = playground(start(), n=4096, buffer_num=1, dtype="fp32")
    assert any(b.proto.label.startswith("Download scenario") for b in at.get("download_button"))
    text = ('preset = "910B4"\nkernel = "vector_add"\nseed = 7\n'
            '[params]\nn = 3000\nblock_dim = 3\ntile = 48\nbuffer_num = 2\ndtype = "fp16"\n'
            '[overrides]\nub_KiB = 128\n')
    at.file_uploader(key=run_view.UPLOAD_KEY).set_value(
        ("mine.toml", text.encode(), "text/plain"))
    run(at)
    assert "Loaded mine.toml." in texts(at.success)
    assert at.sidebar.selectbox[0].value == "910B4"
    assert at.select_slider(key="w.va.n").value == 3000  # not a power of two: kept
    assert at.selectbox(key="w.va.tile").value == 48  # a valid tile from a file: kept
    assert at.number_input(key="w.va.seed").value == 7
    assert "Passed" in texts(at.success)
    assert at.query_params["chip.ub_KiB"] == "128"


@pytest.mark.parametrize(("name", "text", "expect"), [
    ("bad.toml", b"preset = [", "valid TOML"),
    ("bad.json", b'{"params": {"tile": 100}}', "tile"),
    ("bad.toml", b'kernel = "gemm"', "kernel"),
])
def test_bad_scenario_file_is_an_error_message(name, text, expect):
    at = playground(start())
    at.file_uploader(key=run_view.UPLOAD_KEY).set_value((name, text, "text/plain"))
    run(at)
    assert expect in texts(at.error)
    assert "Passed" in texts(at.success)  # the previous scenario still runs
