"""The HTML report in a real browser: downloaded from the vector add page, opened from disk
with every network request refused, its Plotly charts draw; uploaded back on a page, it
restores its scenario (through the URL) or, on another kernel's page, says why not.
Screenshots land in test-output/."""
from __future__ import annotations

from tests.browser import (
    OUTPUT_DIR,
    exception_texts,
    new_context,
    open_app,
    rerun,
    screenshot,
    wait_for_charts,
    wait_for_url,
)

FIGURE = ".plotly-graph-div"
UPLOAD = '[data-testid="stFileUploaderDropzoneInput"][accept*=".html"]'  # ours


def _download_report(page, name: str):
    """Click "Download report (HTML)" and keep the file under test-output/."""
    button = page.get_by_role("button", name="Download report (HTML)")
    button.scroll_into_view_if_needed()
    with page.expect_download() as info:
        button.click()
    OUTPUT_DIR.mkdir(exist_ok=True)
    path = OUTPUT_DIR / name
    info.value.save_as(path)
    return path


def _offline(route) -> None:
    if route.request.url.startswith("file:"):
        route.continue_()
    else:
        route.abort()


def _open_with_charts(page, url: str) -> None:
    open_app(page, url)
    wait_for_charts(page)


def test_downloaded_report_draws_its_charts_offline(app_url, fresh_page, browser):
    page = fresh_page
    _open_with_charts(page, f"{app_url}/vector_add?n=65536&seed=5")
    path = _download_report(page, "report_vector_add.html")
    assert path.stat().st_size > 1_000_000  # Plotly's JavaScript is inside

    offline = new_context(browser, viewport={"width": 1300, "height": 900})
    try:
        view = offline.new_page()
        view.route("**/*", _offline)
        view.goto(path.as_uri())
        view.locator(f"{FIGURE} .main-svg").first.wait_for(state="visible")
        figures = view.locator(FIGURE).count()
        assert figures >= 6
        view.wait_for_function(
            f"document.querySelectorAll('{FIGURE} .main-svg').length >= {figures}")
        assert view.locator(".js-plotly-plot").count() == figures  # every one drawn
        assert view.get_by_text("Numerical check and notes").count() == 1
        screenshot(view, "report_offline")
    finally:
        offline.close()

    # upload the report on the same page with other values: the scenario comes back
    _open_with_charts(page, f"{app_url}/vector_add?n=131072")
    with rerun(page):
        page.locator(UPLOAD).set_input_files(str(path))
    wait_for_url(page, "n=65536")
    assert "seed=5" in page.url
    assert exception_texts(page) == []


def test_report_of_another_kernel_is_refused(app_url, fresh_page):
    page = fresh_page
    _open_with_charts(page, f"{app_url}/vector_add?n=65536")
    path = _download_report(page, "report_for_gemm.html")
    _open_with_charts(page, f"{app_url}/gemm?M=256&N=256&K=512")
    with rerun(page):
        page.locator(UPLOAD).set_input_files(str(path))
    alert = page.locator('[data-testid="stAlertContentError"]').filter(
        has_text="a gemm scenario on this page")
    alert.wait_for(state="visible")
    assert "M=256" in page.url
    assert exception_texts(page) == []
    alert.scroll_into_view_if_needed()
    screenshot(page, "report_upload_refused", full_page=False)
