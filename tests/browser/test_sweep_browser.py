"""One real-browser pass through the Sweep page: a tiny two-parameter sweep runs in the
background (progress fragment, worker processes), its chart and table appear, switching
to the heat map redraws without re-running, the URL carries the grid, and nothing raises.
Screenshots in English and Chinese land in test-output/."""
from __future__ import annotations

from tests.browser import (CHART, exception_texts, screenshot, wait_for_app, wait_for_change,
                           wait_for_chart)

GRID = "x=tile&xv=1024:4096:*2&y=chip.ub_KiB&yv=16,192"


def _chart(page) -> str:
    return page.locator(CHART).first.inner_html()


def test_sweep_page_runs_a_tiny_sweep(app_url, page):
    page.goto(f"{app_url}/sweep?{GRID}")
    wait_for_app(page)
    assert page.locator(CHART).count() == 0
    page.get_by_role("button", name="Run the sweep").click()
    wait_for_chart(page, timeout_ms=90_000)
    wait_for_app(page)
    assert page.get_by_text("6 scenarios: 2 refused").count() == 1
    assert page.locator('[data-testid="stDataFrame"]').count() == 1
    before = _chart(page)
    page.locator('[data-testid="stRadio"]').get_by_text("heat map", exact=True).click()
    wait_for_app(page)
    wait_for_change(lambda: _chart(page), before)
    assert "chart=heatmap" in page.url and "xv=1024" in page.url
    assert exception_texts(page) == []
    screenshot(page, "sweep_en")


def test_sweep_page_in_chinese(app_url, page):
    page.goto(f"{app_url}/sweep?lang=zh&{GRID}")
    wait_for_app(page)
    page.get_by_role("button", name="运行扫描").click()
    wait_for_chart(page, timeout_ms=90_000)
    wait_for_app(page)
    assert page.get_by_text("参数扫描").count() >= 1
    assert exception_texts(page) == []
    screenshot(page, "sweep_zh")
