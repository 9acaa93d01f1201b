"""One real-browser pass through the GEMM page: it draws its charts, changing the task
order redraws the task-grid picture, the split-K example shortens a small GEMM, and
nothing raises. Screenshots in English and Chinese land in test-output/ for a human look.
"""
from __future__ import annotations

import time

from tests.browser import CHART, exception_texts, screenshot, wait_for_app, wait_for_chart

METRIC_VALUE = '[data-testid="stMetricValue"]'
CHARTS_PER_RUN = 7  # task grid, timeline, roofline, ratios, traffic, load balance, bandwidth


def _wait_for_change(read, before: str, timeout_s: float = 30.0) -> str:
    """Poll ``read()`` until it differs from ``before`` (a rerun has redrawn it)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        now = read()
        if now != before:
            return now
        time.sleep(0.2)
    raise AssertionError(f"stayed the same for {timeout_s:.0f} s")


def _microseconds(text: str) -> float:
    return float(text.split()[0].replace(",", ""))


def test_gemm_page_redraws_when_controls_change(app_url, page):
    page.goto(f"{app_url}/gemm?M=2048&N=2048&K=256")  # 16 x 8 tasks: policies differ
    wait_for_app(page)
    wait_for_chart(page)
    assert page.locator('[data-testid="stPlotlyChart"]').count() >= CHARTS_PER_RUN
    grid = page.locator(CHART).first
    picture = grid.inner_html()

    page.locator('[data-testid="stSelectbox"]').filter(has_text="Task order").click()
    page.get_by_role("option", name="column-major (y outer)").click()
    wait_for_app(page)
    _wait_for_change(grid.inner_html, picture)
    assert "policy=col_major" in page.url

    makespan = page.locator(METRIC_VALUE).first
    large = makespan.inner_text()
    page.get_by_role("button", name="Small: 256 × 256 × 8192").click()
    wait_for_app(page)
    before = _wait_for_change(makespan.inner_text, large)
    assert before.endswith("µs")
    page.get_by_role("button", name="Small + split-K (Z = 8)").click()
    wait_for_app(page)
    after = _wait_for_change(makespan.inner_text, before)
    assert _microseconds(after) < _microseconds(before)  # 16 tasks instead of 2
    wait_for_chart(page)
    assert "grid_z=8" in page.url
    assert exception_texts(page) == []
    page.locator(CHART).first.scroll_into_view_if_needed()
    screenshot(page, "gemm_en")


def test_gemm_page_in_chinese(app_url, page):
    page.goto(f"{app_url}/gemm?lang=zh&preset=910B4")
    wait_for_app(page)
    wait_for_chart(page)
    assert page.get_by_text("GEMM 与三维任务网格").count() >= 1
    assert page.get_by_text("哪个核计算 C 的哪一部分").count() >= 1
    assert exception_texts(page) == []
    page.locator(CHART).first.scroll_into_view_if_needed()
    screenshot(page, "gemm_zh")
