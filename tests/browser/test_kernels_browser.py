"""One real-browser pass through the generic kernel page ("More kernels") on RMSNorm: it
draws its charts, a number typed into the rows widget leaves the run as it was until Apply
re-emulates it (the duration the library gives for the new scenario) and writes it into
the URL, and nothing raises; then the same page in Chinese. Screenshots land in
test-output/ for a human look."""
from __future__ import annotations

import kernels
from explorer.core import Scenario, simulate
from explorer.core.i18n import has, t
from explorer.plots.report_figures import format_metric
from explorer.ui import kernel_pages, state
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
    wait_for_url,
)

KERNEL = "rmsnorm"


def _label(name: str) -> str:
    msg_id = kernel_pages.page_of(KERNEL).label_id(name)
    return t(msg_id, "en") if has(msg_id, "en") else name


def _duration(page) -> str:
    return metric_value(page, t("metric.makespan_us.label", "en")).inner_text()


def _expected(rows: int) -> str:
    scenario = Scenario.make(state.DEFAULT_PRESET, KERNEL, {"rows": rows})
    return format_metric("makespan_us", simulate(scenario).metrics["makespan_us"])


def test_kernels_page_reruns_when_rows_change(app_url, page):
    open_app(page, f"{app_url}/kernels?kernel={KERNEL}&rows=64")
    wait_for_charts(page)
    before = _duration(page)
    assert before == _expected(64)

    rows = page.get_by_label(_label("rows"), exact=True)
    rows.click()
    page.keyboard.press("ControlOrMeta+a")
    page.keyboard.type("128")
    page.keyboard.press("Enter")  # reruns the controls alone
    assert _duration(page) == before and "rows=64" in page.url
    apply(page)
    wait_for_url(page, "rows=128")
    after = _duration(page)
    assert after != before and after == _expected(128)
    wait_for_charts(page)
    assert exception_texts(page) == []
    screenshot(page, "kernels_en")


def test_kernels_page_in_chinese(app_url, page):
    title = t(kernels.get(KERNEL).title_key, "zh")
    open_rendered(page, f"{app_url}/kernels?kernel={KERNEL}&lang=zh",
                  t("ui.kernels.title", "zh"))
    assert exception_texts(page) == []
    assert_chinese(page, ("ui.kernels.",), "ui.kernels.title", "ui.kernels.results",
                   ("ui.kernels.params", {"title": title}),
                   ("ui.kernels.explain", {"title": title}), "metric.makespan_us.label")
    page.locator(CHART).first.scroll_into_view_if_needed()
    screenshot(page, "kernels_zh")
