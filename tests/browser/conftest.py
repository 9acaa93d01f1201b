"""Fixtures for real-browser tests: the app served by Streamlit, seen through chromium.

* ``app_url`` (session): the run's one ``streamlit run app.py`` on a free loopback port,
  shared by every xdist worker and stopped by the run's controller (`tests.app_server`).
* ``browser`` (session): Debian's chromium-headless-shell launched by Playwright, one per
  worker.
* ``page``: the worker's one 1400x1000 page, whose waits time out only at the suite's
  deadline (`tests.waiting`); each test opens its URL in it (a new Streamlit session every
  time), and a screenshot of it lands in test-output/ when its test fails. One page for
  all tests because a navigation inside one renderer process reuses the JavaScript it
  has compiled: a new page per test (a new renderer) costs chromium about twice the CPU
  per page load, most of the browser tests' time on a 2-core machine.
* ``fresh_page``: a page in a context of its own, for a test that downloads. Chromium
  treats a download that starts after the click's user activation has expired (the
  report is generated on the click, which takes seconds on a loaded machine) as an
  automatic one, and blocks the second automatic download of a site in one context.

Without chromium the tests here are skipped on a developer's machine, but fail in CI (env
``CI`` set), so that a missing browser can never turn the browser tests green by skipping.
Every test in this folder gets the ``browser`` marker: ``make test ARGS='-m "not browser"'``
leaves them out.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests import app_server
from tests.browser import (
    CHROMIUM,
    CHROMIUM_ARGS,
    CHROMIUM_MISSING,
    DEADLINE_MS,
    new_context,
    screenshot,
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
            executable_path=str(CHROMIUM), headless=True, args=list(CHROMIUM_ARGS),
            timeout=DEADLINE_MS)
        yield browser
        browser.close()
    finally:
        playwright.stop()


@pytest.fixture(scope="session")
def _shared_page(browser):
    context = new_context(browser)
    try:
        yield context.new_page()
    finally:
        context.close()


def _screenshot_if_failed(page, request) -> None:
    report = getattr(request.node, "report_call", None)
    if report is not None and report.failed:
        screenshot(page, f"FAILED-{request.node.name}")


@pytest.fixture
def page(_shared_page, request):
    yield _shared_page
    _screenshot_if_failed(_shared_page, request)


@pytest.fixture
def fresh_page(browser, request):
    context = new_context(browser)
    try:
        page = context.new_page()
        yield page
        _screenshot_if_failed(page, request)
    finally:
        context.close()


@pytest.fixture(scope="session")
def app_url():
    """Base URL (no trailing slash) of the real app, started from the repository root."""
    return app_server.shared_url()
