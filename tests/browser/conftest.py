"""Fixtures for real-browser tests: the app served by Streamlit, seen through chromium.

* ``app_url`` (session): ``streamlit run app.py`` on a free loopback port, healthy, stopped
  (its whole process group) at the end of the session.
* ``browser`` (session): Debian's /usr/bin/chromium launched headless by Playwright.
* ``page``: a fresh 1400x1000 page with a 30 s default timeout; a screenshot of it lands in
  test-output/ when its test fails.

Without chromium the tests here are skipped on a developer's machine, but fail in CI (env
``CI`` set), so that a missing browser can never turn the browser tests green by skipping.
Every test in this folder gets the ``browser`` marker: ``make test ARGS='-m "not browser"'``
leaves them out.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.browser import (  # noqa: F401  (re-exported for tests that import from here)
    CHROMIUM,
    CHROMIUM_ARGS,
    CHROMIUM_MISSING,
    DEFAULT_TIMEOUT_MS,
    OUTPUT_DIR,
    REPO_ROOT,
    VIEWPORT,
    exception_texts,
    screenshot,
    start_streamlit,
    stop_process_group,
    wait_for_app,
    wait_for_chart,
)

_HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config, items):
    for item in items:
        if _HERE in Path(item.path).resolve().parents:
            item.add_marker(pytest.mark.browser)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    report = yield
    setattr(item, f"report_{report.when}", report)
    return report


def _unavailable(reason: str) -> None:
    """Skip on a developer's machine; fail in CI, where the browser tests must run."""
    if os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no"):
        pytest.fail(f"{reason} (CI is set, so browser tests may not be skipped)", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def browser():
    if not CHROMIUM.exists():
        _unavailable(CHROMIUM_MISSING)
    try:
        from playwright.sync_api import sync_playwright
    except ImportError as exc:
        _unavailable(f"playwright is not importable ({exc}); make venv installs it")
    playwright = sync_playwright().start()
    try:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=list(CHROMIUM_ARGS)
        )
        yield browser
        browser.close()
    finally:
        playwright.stop()


@pytest.fixture
def page(browser, request):
    context = browser.new_context(viewport=VIEWPORT)
    context.set_default_timeout(DEFAULT_TIMEOUT_MS)
    page = context.new_page()
    try:
        yield page
        report = getattr(request.node, "report_call", None)
        if report is not None and report.failed:
            screenshot(page, f"FAILED-{request.node.name}")
    finally:
        context.close()


@pytest.fixture(scope="session")
def app_url():
    """Base URL (no trailing slash) of the real app, started from the repository root."""
    url, proc = start_streamlit(REPO_ROOT / "app.py", OUTPUT_DIR / "streamlit-app.log")
    try:
        yield url
    finally:
        stop_process_group(proc)
