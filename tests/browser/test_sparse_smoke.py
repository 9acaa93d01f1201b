"""One real-browser pass through the Sparse attention page: the accuracy curves and the
step draw, an example button changes the scenario and the URL, nothing raises; English
and Chinese screenshots land in test-output/."""
from __future__ import annotations

from tests.browser import (CHART, exception_texts, open_rendered, screenshot, wait_for_app,
                           wait_for_change, wait_for_chart)


def test_sparse_page_example_changes_the_scenario(app_url, page):
    page.goto(f"{app_url}/sparse")
    wait_for_app(page, timeout_ms=120_000)
    wait_for_chart(page)
    url = page.url
    page.get_by_role("button", name="StreamingLLM").click()
    wait_for_app(page, timeout_ms=120_000)
    wait_for_change(lambda: page.url, url)
    assert "sparse=streaming" in page.url
    wait_for_chart(page)
    assert page.locator(CHART).count() >= 3
    assert exception_texts(page) == []
    screenshot(page, "sparse_en")


def test_sparse_page_in_chinese(app_url, page):
    open_rendered(page, f"{app_url}/sparse?lang=zh", "稀疏注意力与 KV 压缩")
    assert exception_texts(page) == []
    screenshot(page, "sparse_zh")
