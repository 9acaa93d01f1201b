"""One real-browser pass through the Sparse attention page: the accuracy curves and the
step draw, an example button changes the scenario and the URL, nothing raises; English
and Chinese screenshots land in test-output/."""
from __future__ import annotations

from tests.browser import (
    assert_chinese,
    exception_texts,
    open_app,
    open_rendered,
    rerun,
    screenshot,
    wait_for_charts,
)


def test_sparse_page_example_changes_the_scenario(app_url, page):
    open_app(page, f"{app_url}/sparse")
    wait_for_charts(page)
    assert "sparse=streaming" not in page.url
    with rerun(page):
        page.get_by_role("button", name="StreamingLLM").click()
    assert "sparse=streaming" in page.url
    assert wait_for_charts(page).count() >= 3
    assert exception_texts(page) == []
    screenshot(page, "sparse_en")


def test_sparse_page_in_chinese(app_url, page):
    open_rendered(page, f"{app_url}/sparse?lang=zh", "稀疏注意力与 KV 压缩")
    assert exception_texts(page) == []
    assert_chinese(page, ("ui.sparse.", "plots.sparse."), "ui.sparse.title",
                   "ui.sparse.bytes.dense", "ui.sparse.time.sparse")
    screenshot(page, "sparse_zh")
