"""One real-browser pass through the Sweep page: a tiny two-parameter sweep runs in the
background (progress fragment, worker processes), its chart and table appear, switching
to the heat map redraws without re-running, the URL carries the grid, and nothing raises.
Screenshots in English and Chinese land in test-output/."""
from __future__ import annotations

from explorer.core.i18n import t
from tests.browser import (
    CHART,
    assert_chinese,
    exception_texts,
    open_app,
    rerun,
    screenshot,
    wait_for_change,
    wait_for_charts,
    wait_for_text_drawn,
)

GRID = "x=tile&xv=1024:4096:*2&y=chip.ub_KiB&yv=16,192"
SUMMARY = "6 scenarios: 2 refused"


def _chart(page) -> str:
    return page.locator(CHART).first.inner_html()


def _run_the_sweep(page, button: str, summary: str) -> None:
    """Click Run; the sweep may end in a later run than the click's (the progress fragment
    reruns the page when the background sweep is done): wait for the run that draws the
    summary, the chart and the table to end."""
    with rerun(page):
        page.get_by_role("button", name=button).click()
    wait_for_text_drawn(page, summary)
    wait_for_charts(page)


def test_sweep_page_runs_a_tiny_sweep(app_url, page):
    open_app(page, f"{app_url}/sweep?{GRID}")
    assert page.locator(CHART).count() == 0
    _run_the_sweep(page, "Run the sweep", SUMMARY)
    assert page.get_by_text(SUMMARY).count() == 1
    assert page.locator('[data-testid="stDataFrame"]').count() == 1
    before = _chart(page)
    with rerun(page):
        page.locator('[data-testid="stRadio"]').get_by_text("heat map", exact=True).click()
    assert "chart=heatmap" in page.url and "xv=1024" in page.url
    wait_for_change(lambda: _chart(page), before)
    assert exception_texts(page) == []
    screenshot(page, "sweep_en")


def test_sweep_page_in_chinese(app_url, page):
    open_app(page, f"{app_url}/sweep?lang=zh&{GRID}")
    summary = t("ui.sweep.summary", "zh", rows=6, refused=2, failed=0)  # as SUMMARY says
    _run_the_sweep(page, t("ui.sweep.run", "zh"), summary)
    assert exception_texts(page) == []
    assert_chinese(page, ("ui.sweep.", "plots.sweep."), "ui.sweep.title", "ui.sweep.run",
                   "ui.sweep.metric", ("ui.sweep.summary", {"rows": 6, "refused": 2,
                                                            "failed": 0}))
    screenshot(page, "sweep_zh")
