"""One real-browser pass through the Mixed precision page: its charts draw, switching the
kernel redraws them and lands in the URL, a shared link reopens it, nothing raises."""
from __future__ import annotations

from tests.browser import (
    CHART,
    exception_texts,
    open_app,
    rerun,
    screenshot,
    wait_for_change,
    wait_for_charts,
)


def test_precision_page_switches_kernel_and_reopens(app_url, page):
    open_app(page, f"{app_url}/precision?M=64&N=64&K=256")
    wait_for_charts(page)
    first = page.locator(CHART).first.inner_html()
    page.locator('[data-testid="stSelectbox"]').filter(has_text="Kernel").click()
    with rerun(page):
        page.get_by_role("option").nth(1).click()
    assert "kernel=" in page.url
    wait_for_change(lambda: page.locator(CHART).first.inner_html(), first)
    shared = page.url
    assert exception_texts(page) == []
    screenshot(page, "precision_en")
    open_app(page, shared)
    wait_for_charts(page)
    assert page.url == shared and exception_texts(page) == []
