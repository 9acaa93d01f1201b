"""One real-browser pass through the Load balance page: the synthetic plan draws, the
decode-kernel example emulates every policy and redraws, the URL follows, and nothing
raises. Screenshots in English and Chinese land in test-output/."""
from __future__ import annotations

from tests.browser import (
    CHART,
    assert_chinese,
    exception_texts,
    open_app,
    open_rendered,
    rerun,
    screenshot,
    wait_for_change,
    wait_for_charts,
)


def _loads_chart(page) -> str:
    return page.locator(CHART).first.inner_html()


def test_balance_page_emulates_the_decode_kernel(app_url, page):
    open_app(page, f"{app_url}/balance")
    wait_for_charts(page)
    before = _loads_chart(page)
    with rerun(page):
        page.get_by_role("button", name="Decode kernel").click()
    assert "source=decode" in page.url
    wait_for_change(lambda: _loads_chart(page), before)  # Plotly redraws after the run
    assert exception_texts(page) == []
    screenshot(page, "balance_en")


def test_balance_page_in_chinese(app_url, page):
    open_rendered(page, f"{app_url}/balance?lang=zh", "负载均衡")
    assert exception_texts(page) == []
    assert_chinese(page, ("ui.balance.", "plots.lb."), "ui.balance.title",
                   "ui.balance.metric.makespan", "ui.balance.metric.efficiency")
    screenshot(page, "balance_zh")
