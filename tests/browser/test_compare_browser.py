"""One real-browser pass through the Compare page: it opens on a gallery pair, a pair
button fills both sides and redraws both timelines on one time axis, the URL follows,
and nothing raises. Screenshots in English and Chinese land in test-output/."""
from __future__ import annotations

from tests.browser import (
    CHART,
    PLOT,
    assert_chinese,
    assert_clean,
    open_rendered,
    rerun,
    wait_for_change,
    wait_for_charts,
)


def _timelines(page) -> str:
    """The first chart's markup (the timelines; subplot titles name A's and B's run)."""
    return page.locator(PLOT).first.inner_html()


def test_compare_page_opens_a_gallery_pair(app_url, page):
    open_rendered(page, f"{app_url}/compare", "Compare two scenarios")
    before = _timelines(page)
    assert "Vector add, BUFFER_NUM = 1" in before and "Vector add, BUFFER_NUM = 2" in before
    with rerun(page):
        page.get_by_role("button", name="Split-K for a skinny GEMM").click()
    assert "a=split_k_a" in page.url and "b=split_k_b" in page.url
    assert page.get_by_text("B is 5.14× faster").count() >= 1
    after = wait_for_change(lambda: _timelines(page), before)  # Plotly redraws after the run
    assert "no split-K" in after and "split-K by 8" in after  # both timelines, A and B
    wait_for_charts(page)
    page.locator(CHART).first.scroll_into_view_if_needed()
    assert_clean(page, "compare_en")


def test_compare_page_in_chinese(app_url, page):
    open_rendered(page, f"{app_url}/compare?lang=zh&a=int8_kv_a&b=int8_kv_b", "对比两个场景")
    assert page.get_by_text("HBM 流量").count() >= 1
    assert_chinese(page, ("ui.compare.", "plots.compare."), "ui.compare.title",
                   "ui.compare.sentences_title", "ui.compare.table_title")
    assert_clean(page, "compare_zh")
