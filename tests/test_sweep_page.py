"""The "Sweep" page under ``streamlit.testing.v1.AppTest``: it renders with the kernel's
defaults, a tiny sweep runs in the background and draws its chart, table and CSV, a
second parameter gives a heat map with refused cells, Cancel stops a long sweep and
keeps what finished, a bad range or an unreachable Dask scheduler is a translated
message (never an exception), a link reopens the grid, and Chinese works.
"""
from __future__ import annotations

import threading

from streamlit.testing.v1 import AppTest

from explorer.core.i18n import t
from explorer.core.sweep import RESULTS
from explorer.ui import sweep_view
from explorer.ui.sweep_controls import knob_label
from tests.apptest_helpers import open_page, run, texts
from tests.sweep_helpers import InlineExecutor
from tests.waiting import DEADLINE_S, poll_until

PAGE = "explorer/ui/pages/sweep.py"


def sweep_page(query: dict | None = None) -> AppTest:
    return open_page(PAGE, query)


def values_input(at: AppTest, which: str = "x"):
    return at.text_input(key=f"w.sw.{which}v")


def running(at: AppTest) -> bool:
    return any(b.key == "sw_cancel" for b in at.button)


def finish(at: AppTest) -> AppTest:
    """Rerun (as the page's progress fragment does) until the background sweep ends."""
    poll_until(lambda: running(run(at)), lambda busy: not busy, "the sweep to finish")
    return at


def click_run(at: AppTest) -> AppTest:
    at.button(key="sw_run").click()
    return finish(run(at))


def test_tiny_sweep_draws_its_chart_table_and_csv():
    at = sweep_page({"xv": "65536:262144:*4"})
    assert at.title[0].value == "Sweep" and not at.error
    assert "Base scenario: the kernel's defaults on the Ascend 910B2" in texts(at.caption)
    assert "2 scenarios (at most 2,000)." in texts(at.caption)
    assert not at.get("plotly_chart")
    click_run(at)
    assert not at.error and len(at.get("plotly_chart")) == 1
    table = at.dataframe[0].value  # the knob by its label, values as every table writes them
    assert list(table[knob_label("vector_add", "n", "en")]) == ["65,536", "262,144"]
    assert (table[t("tables.sweep.error", "en")] == "").all()
    assert "2 scenarios: 0 refused, 0 failed the numerical check." in texts(at.caption)
    assert at.get("download_button")
    assert at.query_params["x"] == "n" and at.query_params["xv"] == "65536:262144:*4"


def test_two_parameters_heat_map_with_refused_cells_and_a_cached_rerun():
    at = sweep_page({"x": "tile", "xv": "1024:4096:*2", "y": "chip.ub_KiB", "yv": "16,192",
                     "chart": "heatmap", "metric": "mte2_ratio"})
    assert "6 scenarios" in texts(at.caption)
    hits, entries = RESULTS.hits, len(RESULTS)
    click_run(at)
    assert "6 scenarios: 2 refused" in texts(at.caption)
    chart = at.get("plotly_chart")[0].proto.spec
    assert '"type":"heatmap"' in chart.replace(" ", "") and "at most 1344 elements" in chart
    simulated = (RESULTS.hits - hits) + (len(RESULTS) - entries)  # points that reached a worker
    hits, entries = RESULTS.hits, len(RESULTS)
    click_run(at)  # the same grid: every point comes from the cache, none is simulated again
    assert simulated > 0 and RESULTS.hits - hits == simulated and len(RESULTS) == entries
    assert len(at.dataframe[0].value) == 6


class GatedExecutor(InlineExecutor):
    """Runs sweep points in this process, each only when the test lets one through, so the
    sweep is still running when the test presses Cancel, on any machine."""

    def __init__(self) -> None:
        super().__init__()
        self._passes = threading.Semaphore(0)

    def let_through(self, points: int) -> None:
        for _ in range(points):
            self._passes.release()

    def before_point(self) -> None:
        assert self._passes.acquire(timeout=DEADLINE_S), "no point was let through"


def test_cancel_stops_a_long_sweep_and_keeps_the_finished_part(monkeypatch):
    gated = GatedExecutor()
    monkeypatch.setattr(sweep_view, "local_executor", lambda workers: gated)
    at = sweep_page({"xv": "4099:819800:4099"})  # 200 points no other test simulates
    at.button(key="sw_run").click()
    run(at)
    assert running(at)
    job = at.session_state[sweep_view.JOB]
    assert job.done == 0
    gated.let_through(2)
    poll_until(lambda: job.done, lambda done: done == 2, "two points to finish")
    at.button(key="sw_cancel").click()
    run(at)
    gated.let_through(1)  # the next point sees the cancel and the run stops
    finish(at)
    assert "Stopped:" in texts(at.warning)
    assert len(at.dataframe[0].value) == 2
    assert not at.error


def test_bad_ranges_and_an_unreachable_scheduler_are_messages():
    at = sweep_page({"xv": "0:10:1"})
    assert "n (elements) (params.n) = 0 is not allowed" in texts(at.error)
    assert at.button(key="sw_run").disabled
    values_input(at).set_value("1:3000:1")
    run(at)
    assert "at most 2,000 values" in texts(at.error)
    values_input(at).set_value("4096,8192")
    at.radio(key="w.sw.executor").set_value("dask")
    run(at)
    at.text_input(key="w.sw.address").set_value("nonsense")
    at.button(key="sw_run").click()
    run(at)
    assert "dask = 'nonsense' is not allowed" in texts(at.error)
    assert not running(at) and not at.exception


def test_link_kernel_and_chinese():
    at = sweep_page({"lang": "zh", "kernel": "gemm", "x": "bogus", "metric": "nope"})
    assert at.title[0].value == "参数扫描"
    assert "metric = 'nope' 不合法" in texts(at.error)
    assert at.selectbox(key="w.sw.kernel").value == "gemm"
    assert at.selectbox(key="w.sw.x").value == "M"  # an unknown knob falls back
    assert "允许范围：1 到 65,536" in texts(at.caption)


def test_the_base_scenario_comes_from_the_kernel_page():
    at = open_page("explorer/ui/pages/vector_add.py", {"n": "65536", "tile": "2048"})
    run(at.switch_page(PAGE))
    assert "the current settings of the Vector add playground page" in texts(at.caption)
    base = at.code[0].value
    assert "n = 65536" in base and "tile = 2048" in base
    assert "now 65,536" in texts(at.caption)
