"""One real-browser pass through the GEMM page: it draws its charts, changing the task
order and pressing Apply redraws the task-grid picture, the split-K example (applied at
once) shortens a small GEMM, and nothing raises. Screenshots in English and Chinese land
in test-output/ for a human look.
"""
from __future__ import annotations

from tests.browser import (
    CHART,
    PLOT,
    apply,
    assert_chinese,
    exception_texts,
    metric_value,
    microseconds,
    open_app,
    open_rendered,
    rerun,
    screenshot,
    wait_for_change,
    wait_for_charts,
)

CHARTS_PER_RUN = 7  # task grid, timeline, roofline, ratios, traffic, load balance, bandwidth


def test_gemm_page_redraws_when_controls_change(app_url, page):
    open_app(page, f"{app_url}/gemm?M=2048&N=2048&K=256")  # 16 x 8 tasks: policies differ
    wait_for_charts(page)
    assert page.locator(PLOT).count() >= CHARTS_PER_RUN
    grid = page.locator(CHART).first
    picture = grid.inner_html()

    page.locator('[data-testid="stSelectbox"]').filter(has_text="Task order").click()
    page.get_by_role("option", name="column-major (y outer)").click()  # the controls alone
    apply(page)
    assert "policy=col_major" in page.url
    wait_for_change(grid.inner_html, picture)  # Plotly redraws after the run

    makespan = metric_value(page, "Kernel duration")
    large = makespan.inner_text()
    with rerun(page):
        page.get_by_role("button", name="Small: 256 × 256 × 8192").click()
    before = makespan.inner_text()
    assert before != large and before.endswith(("µs", "ms"))
    with rerun(page):
        page.get_by_role("button", name="Small + split-K (Z = 8)").click()
    after = makespan.inner_text()
    assert microseconds(after) < microseconds(before)  # 16 tasks instead of 2
    assert "grid_z=8" in page.url
    wait_for_charts(page)
    assert exception_texts(page) == []
    page.locator(CHART).first.scroll_into_view_if_needed()
    screenshot(page, "gemm_en")


def test_gemm_page_in_chinese(app_url, page):
    open_rendered(page, f"{app_url}/gemm?lang=zh&preset=910B4", "GEMM 与三维任务网格")
    assert exception_texts(page) == []
    assert_chinese(page, ("ui.gemm.", "plots.gemm."), "ui.gemm.title", "ui.gemm.grid.title",
                   "metric.makespan_us.label", "metric.bound.label")
    page.locator(CHART).first.scroll_into_view_if_needed()
    screenshot(page, "gemm_zh")
