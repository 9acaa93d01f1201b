"""One real-browser pass through the KV cache and decode page: it draws its charts,
switching the attention implementation and pressing Apply re-emulates the layer and
lands in the URL, a
shared link reopens the same scenario, and nothing raises. Screenshots in English and
Chinese land in test-output/ for a human look."""
from __future__ import annotations

from tests.browser import (
    CHART,
    apply,
    assert_chinese,
    exception_texts,
    metric_value,
    open_app,
    open_rendered,
    screenshot,
    wait_for_charts,
)


def _step_time(page) -> str:
    return metric_value(page, "Step time").inner_text()


def test_decode_page_switches_implementation(app_url, page):
    open_app(page, f"{app_url}/decode")
    before = _step_time(page)
    page.locator('[data-testid="stRadio"]').get_by_text("cube + vector", exact=True).click()
    apply(page)  # the click reran the controls alone; Apply runs the page
    after = _step_time(page)
    assert after.endswith("ms") and after != before
    assert "impl=cube_vector" in page.url
    shared = page.url
    wait_for_charts(page)
    assert exception_texts(page) == []
    screenshot(page, "decode_en")

    open_app(page, shared)  # a copied link reopens the same scenario
    assert _step_time(page) == after
    wait_for_charts(page)


def test_decode_page_in_chinese(app_url, page):
    open_rendered(page, f"{app_url}/decode?lang=zh&batch=4", "KV 缓存与解码")
    assert exception_texts(page) == []
    assert_chinese(page, ("ui.decode.",), "ui.decode.title", "ui.decode.mem.title",
                   "ui.decode.mem.per_token")
    page.locator(CHART).first.scroll_into_view_if_needed()
    screenshot(page, "decode_zh")
