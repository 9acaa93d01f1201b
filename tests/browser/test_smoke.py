"""One real-browser pass through the app: the playground draws its charts, a control
changes the run, the timeline redraws with a new makespan, and nothing raises. Screenshots
of both pages (English and Chinese) land in test-output/ for a human look.
"""
from __future__ import annotations

import time

from tests.browser import exception_texts, screenshot, wait_for_app, wait_for_chart

METRIC_VALUE = '[data-testid="stMetricValue"]'


def _wait_for_change(locator, before: str, timeout_s: float = 30.0) -> str:
    """Poll a locator's text until it differs from ``before`` (a rerun has redrawn it)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        text = locator.inner_text()
        if text != before:
            return text
        time.sleep(0.2)
    raise AssertionError(f"text stayed {before!r} for {timeout_s:.0f} s")


def test_playground_redraws_when_buffer_num_changes(app_url, page):
    page.goto(f"{app_url}/vector_add?n=262144&block_dim=4&buffer_num=2")
    wait_for_app(page)
    charts = wait_for_chart(page)
    assert charts.count() >= 6
    makespan = page.locator(METRIC_VALUE).first
    before = makespan.inner_text()
    assert before.endswith("µs")

    radio = page.locator('[data-testid="stRadio"]').filter(has_text="BUFFER_NUM")
    radio.get_by_text("1", exact=True).click()
    wait_for_app(page)
    after = _wait_for_change(makespan, before)
    assert float(after.split()[0].replace(",", "")) > float(before.split()[0].replace(",", ""))
    wait_for_chart(page)
    assert page.locator('[data-testid="stPlotlyChart"]').count() >= 6
    assert "buffer_num=1" in page.url
    assert exception_texts(page) == []
    screenshot(page, "playground_en")


def test_chinese_pages_render(app_url, page):
    page.goto(f"{app_url}/?lang=zh&preset=910B4")
    wait_for_app(page)
    wait_for_chart(page)
    assert page.get_by_text("芯片：Ascend 910B4").count() >= 1
    assert exception_texts(page) == []
    screenshot(page, "chip_zh")
    page.goto(f"{app_url}/vector_add?lang=zh&n=65536")
    wait_for_app(page)
    wait_for_chart(page)
    assert page.get_by_text("向量加法实验台").count() >= 1
    assert exception_texts(page) == []
    screenshot(page, "playground_zh")
