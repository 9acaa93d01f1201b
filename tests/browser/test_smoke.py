"""One real-browser pass through the app: the playground draws its charts, a control
marks the results stale without rerunning them, Apply changes the run, the timeline
redraws with a new makespan, and nothing raises. Screenshots
of both pages (English and Chinese) land in test-output/ for a human look.
"""
from __future__ import annotations

import hardware_presets as hp
from explorer.core.i18n import t
from tests.browser import (
    PLOT,
    apply,
    assert_chinese,
    assert_clean,
    exception_texts,
    metric_value,
    microseconds,
    open_app,
    open_rendered,
    screenshot,
    wait_for_charts,
    wait_for_text_drawn,
)


def test_playground_redraws_when_buffer_num_changes(app_url, page):
    open_app(page, f"{app_url}/vector_add?n=262144&block_dim=4&buffer_num=2")
    assert wait_for_charts(page).count() >= 6
    makespan = metric_value(page, "Kernel duration")
    before = makespan.inner_text()
    assert before.endswith(("µs", "ms"))

    radio = page.locator('[data-testid="stRadio"]').filter(has_text="BUFFER_NUM")
    radio.get_by_text("1", exact=True).click()  # reruns the controls alone
    wait_for_text_drawn(page, t("apply.stale", "en"))
    assert makespan.inner_text() == before and "buffer_num=2" in page.url  # not applied yet
    apply(page)
    assert page.get_by_text(t("apply.stale", "en")).count() == 0
    after = makespan.inner_text()
    assert microseconds(after) > microseconds(before)
    wait_for_charts(page)
    assert page.locator(PLOT).count() >= 6
    assert "buffer_num=1" in page.url
    assert exception_texts(page) == []
    screenshot(page, "playground_en")


def test_chinese_pages_render(app_url, page):
    open_rendered(page, f"{app_url}/chip?lang=zh&preset=910B4", "芯片：Ascend 910B4")
    assert_chinese(page, ("ui.chip.", "chip_section.", "architecture."),
                   ("ui.chip.title", {"chip": hp.load("910B4").display_name}),
                   "ui.chip.architecture", "chip_section.cores", "chip_section.memory")
    assert_clean(page, "chip_zh")
    open_rendered(page, f"{app_url}/vector_add?lang=zh&n=65536", "向量加法实验台")
    assert_chinese(page, ("ui.va.",), "ui.va.title", "ui.va.timeline",
                   "metric.makespan_us.label", "metric.bound.label")
    assert_clean(page, "playground_zh")
