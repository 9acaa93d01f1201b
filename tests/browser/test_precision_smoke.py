"""One real-browser pass through the Mixed precision page: its charts draw, switching the
kernel redraws them and lands in the URL, a shared link reopens it, nothing raises."""
from __future__ import annotations

from tests.browser import (CHART, exception_texts, screenshot, wait_for_app, wait_for_change,
                           wait_for_chart)


def test_precision_page_switches_kernel_and_reopens(app_url, page):
    page.goto(f"{app_url}/precision?M=64&N=64&K=256")
    wait_for_app(page, timeout_ms=120_000)
    wait_for_chart(page)
    first = page.locator(CHART).first.inner_html()
    page.locator('[data-testid="stSelectbox"]').filter(has_text="Kernel").click()
    page.get_by_role("option").nth(1).click()
    wait_for_app(page, timeout_ms=120_000)
    wait_for_change(lambda: page.locator(CHART).first.inner_html(), first)
    assert "kernel=" in page.url
    shared = page.url
    assert exception_texts(page) == []
    screenshot(page, "precision_en")
    page.goto(shared)
    wait_for_app(page, timeout_ms=120_000)
    wait_for_chart(page)
    assert page.url == shared and exception_texts(page) == []
