"""Helpers for real-browser tests: Debian's chromium driven by Playwright for Python.

The fixtures (``browser``, ``page``, ``app_url``) live in ``conftest.py`` beside this file;
the helpers here are plain functions a test imports::

    from tests.browser import open_app, rerun, wait_for_charts, screenshot

Every wait is for something the app signals, never for a fixed time:

* a script run has ended: each run of the app ends with a hidden run marker numbered per
  session (`explorer.ui.run_marker`). ``open_app`` waits for the first run of a freshly
  opened page; ``with rerun(page): <click>`` reads the number before the click and waits
  for a larger one with the app idle, so it can never mistake the state before the rerun
  for the state after it;
* the charts are drawn: Plotly draws after the run has ended, so ``wait_for_charts``
  waits until every chart on the page has its SVG;
* a value has changed, the URL says something: ``wait_for_change``, ``wait_for_url``;
* a kernel page's controls apply on its Apply button (``explorer.ui.apply``): a changed
  control reruns only their fragment, and ``apply`` presses the button once the change
  has enabled it and waits for the page run the press starts.

Playwright's own waits use the suite's one deadline (`tests.waiting.DEADLINE_S`) as the
context's default timeout. Playwright never downloads a browser here (``playwright
install`` fails without internet): it launches Debian's ``chromium-headless-shell``
(Chromium's own headless build, the one Playwright itself uses for headless runs; it
draws a Streamlit page for about 30% less CPU than ``chromium --headless``), which CI
installs with apt.
"""
from __future__ import annotations

import re
from contextlib import contextmanager
from pathlib import Path

from explorer.ui.apply import BUTTON as APPLY_BUTTON
from explorer.ui.run_marker import TEST_ID as RUN_MARKER_ID
from tests.app_server import OUTPUT_DIR, REPO_ROOT  # noqa: F401  (re-exported)
from tests.waiting import DEADLINE_MS, POLL_INTERVAL_S, poll_until

CHROMIUM = Path("/usr/bin/chromium-headless-shell")
CHROMIUM_MISSING = (f"{CHROMIUM} not found; `apt-get install chromium-headless-shell` "
                    "(CI installs it)")
CHROMIUM_ARGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
VIEWPORT = {"width": 1400, "height": 1000}
# Playwright re-evaluates a wait_for_function condition on this interval (the suite's
# polling interval) rather than on every animation frame.
POLL_MS = POLL_INTERVAL_S * 1000

PLOT = '[data-testid="stPlotlyChart"]'
CHART = f"{PLOT} .main-svg"
EXCEPTION = '[data-testid="stException"]'
RUN_MARKER = f'[data-testid="{RUN_MARKER_ID}"]'

# Streamlit marks its root with the script's state; "notRunning" is idle (no run going on
# or requested).
_IDLE_JS = """(() => {
    const app = document.querySelector('[data-testid="stApp"]');
    const state = app && app.getAttribute('data-test-script-state');
    return state === 'notRunning' || state === 'compilationError';
})()"""
# The number of the session's last ended run (0 before the first one ends).
_RUN_COUNT_JS = f"""() => {{
    const marker = document.querySelector('{RUN_MARKER}');
    return marker ? Number(marker.dataset.run) : 0;
}}"""
# A run numbered above `after` has ended and the app is idle.
_RAN_AFTER_JS = f"(after) => ({_RUN_COUNT_JS})() > after && {_IDLE_JS}"
# `text` is on the page and the app is idle: the run that drew it has ended.
_DRAWN_AND_IDLE_JS = f"(text) => document.body.innerText.includes(text) && {_IDLE_JS}"
# Every chart on the page has drawn its SVG (and there is at least one chart).
_CHARTS_DRAWN_JS = f"""() => {{
    const charts = document.querySelectorAll('{PLOT}');
    return charts.length > 0
        && [...charts].every(chart => chart.querySelector('.main-svg') !== null);
}}"""


def new_context(browser, viewport: dict | None = None):
    """A fresh browser context whose waits time out only at the suite's deadline."""
    context = browser.new_context(viewport=viewport or VIEWPORT)
    context.set_default_timeout(DEADLINE_MS)
    return context


def key_class(key: str) -> str:
    """The CSS class Streamlit gives the element of a widget with ``key``: "st-key-" and the
    key with every character but letters, digits, "_" and "-" made "-" (its frontend's rule),
    so a key such as "cmp.a_source" is found as ".st-key-cmp-a_source"."""
    return "st-key-" + re.sub(r"[^a-zA-Z0-9_-]", "-", key.strip())


def run_count(page) -> int:
    """How many script runs of this page's session have ended."""
    return page.evaluate(_RUN_COUNT_JS)


def wait_for_run(page, after: int) -> None:
    """Wait until a run numbered above ``after`` has ended and the app is idle."""
    page.wait_for_function(_RAN_AFTER_JS, arg=after, polling=POLL_MS)


@contextmanager
def rerun(page):
    """Wrap the interaction that reruns the script: ``with rerun(page): button.click()``
    returns once the run it caused has ended."""
    before = run_count(page)
    yield
    wait_for_run(page, before)


def apply(page) -> None:
    """Press a kernel page's Apply button and wait for the page run it starts to end.

    A changed control reruns only the controls' fragment (no run marker: the page does not
    run), which enables the button once the change has reached the app; Playwright's click
    waits for the button to be enabled, so the press always carries the change."""
    button = page.locator(f".st-key-{APPLY_BUTTON}").get_by_role("button")
    with rerun(page):
        button.click()


def wait_for_text_drawn(page, text: str) -> None:
    """Wait until ``text`` is on the page and the run that drew it has ended: for what a
    later run draws (a background job's result), not the one the last click caused."""
    page.wait_for_function(_DRAWN_AND_IDLE_JS, arg=text, polling=POLL_MS)


def open_app(page, url: str) -> None:
    """Open ``url`` (a new session) and wait for its first script run to end."""
    page.goto(url)
    wait_for_run(page, 0)


def wait_for_charts(page):
    """Wait until every Plotly chart on the page has drawn; returns the charts' SVGs."""
    page.wait_for_function(_CHARTS_DRAWN_JS, polling=POLL_MS)
    return page.locator(CHART)


def wait_for_change(read, before: str) -> str:
    """Poll ``read()`` (e.g. a locator's inner_text) until it differs from ``before``
    (a rerun has redrawn it); returns the new value."""
    return poll_until(read, lambda now: now != before, f"a change from {before[:200]!r}")


def wait_for_url(page, part: str) -> str:
    """Wait until the page's URL contains ``part`` (the app rewrites it in its run)."""
    return poll_until(lambda: page.url, lambda url: part in url, f"{part!r} in the URL")


def exception_texts(page) -> list[str]:
    """The text of every exception box Streamlit shows (an empty list on a healthy page)."""
    return page.locator(EXCEPTION).all_inner_texts()


def screenshot(page, name: str, full_page: bool = True) -> Path:
    """Save a PNG of the page under test-output/ (gitignored) and return its path."""
    OUTPUT_DIR.mkdir(exist_ok=True)
    path = OUTPUT_DIR / f"{re.sub(r'[^A-Za-z0-9_.-]+', '_', name)}.png"
    page.screenshot(path=str(path), full_page=full_page)
    return path


def microseconds(text: str) -> float:
    """A time metric such as "234.5 µs" or "1.23 ms" in µs."""
    number, unit = text.split()
    return float(number.replace(",", "")) * {"µs": 1.0, "ms": 1e3}[unit]


def metric_value(page, label: str):
    """The value of the metric tile labelled ``label`` (a locator: it follows reruns)."""
    return page.locator('[data-testid="stMetric"]').filter(has_text=label).locator(
        '[data-testid="stMetricValue"]').first


def open_rendered(page, url: str, title: str) -> None:
    """Open ``url``, wait for its run and every chart, and check the page's title text."""
    open_app(page, url)
    wait_for_charts(page)
    assert page.get_by_text(title).count() >= 1


def assert_clean(page, name: str) -> None:
    """No exception on the page; keep a screenshot under test-output/ as ``name``."""
    assert exception_texts(page) == []
    screenshot(page, name)



# ---- a page in Chinese -------------------------------------------------------------------
MAIN = '[data-testid="stMain"]'
_CJK = re.compile(r"[\u4e00-\u9fff]")


def main_text(page) -> str:
    """The visible text of the page's main area (widgets' labels included)."""
    return page.locator(MAIN).inner_text()


def english_leftovers(text: str, prefixes: tuple[str, ...]) -> list[str]:
    """The page's own English strings shown as a whole line of ``text`` (a label, a button,
    a heading, a paragraph): messages under ``prefixes`` without placeholders that Chinese
    words differently and that no Chinese message contains (so "HBM" or "DataCopy", kept
    as they are in Chinese, never count; nor does English data such as a paper's title)."""
    from explorer.core.i18n import catalogue

    en, zh = catalogue("en"), catalogue("zh")
    chinese = "\n".join(zh.values())
    lines = {line.strip() for line in text.splitlines()}
    return sorted(f"{msg_id}: {words!r}" for msg_id, words in en.items()
                  if msg_id.startswith(prefixes) and words != zh[msg_id] and "{" not in words
                  and re.search(r"[A-Za-z]{3}", words) and words not in chinese
                  and words.strip() in lines)


def assert_chinese(page, prefixes: tuple[str, ...], *ids: str | tuple[str, dict]) -> str:
    """The page reads in Chinese: the zh text of every message in ``ids`` (an id, or an id
    with its values) is shown, none of its own English strings (``english_leftovers``) is,
    and its charts are drawn with Chinese text in them. Returns the main area's text."""
    from explorer.core.i18n import t

    charts = wait_for_charts(page)
    text = main_text(page)
    for item in ids:
        msg_id, values = (item, {}) if isinstance(item, str) else item
        assert t(msg_id, "zh", **values) in text, f"{msg_id}: {t(msg_id, 'zh', **values)!r}"
    leftovers = english_leftovers(text, prefixes)
    assert not leftovers, f"English left on the Chinese page: {leftovers}"
    svg = " ".join(charts.all_text_contents())
    assert _CJK.search(svg), f"no Chinese in the charts: {svg[:300]!r}"
    return text
