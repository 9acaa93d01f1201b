"""Every page is legible as a browser draws it (issue 19): on each page of the app at
1400 x 900, in English and Chinese, no two visible texts of a chart overlap and none is
cut by the chart's edge, and no metric tile or static table cell cuts its text off.
Compared pairwise: the free texts (annotations, which include subplot titles; legend
entries; the title; text drawn at points), and the tick labels of each axis among
themselves. A full-page screenshot of each page lands in test-output/.

The boxes are the browser's own (each SVG text's box and its transform on screen), so
this catches what the estimates of tests/test_plot_conventions.py cannot: real fonts,
Chinese glyphs, Streamlit's theme, automatic margins.
"""
from __future__ import annotations

import numpy as np
import pytest

from explorer.ui import app_main
from tests.browser import (
    PLOT,
    exception_texts,
    new_context,
    open_app,
    screenshot,
    wait_for_charts,
)

VIEWPORT = {"width": 1400, "height": 900}
#: every page of the app, by its URL path (the start page is "")
PAGES = tuple(path for _, path, _, _ in app_main.PAGES)
#: overlap (px, both ways) two boxes may share: glyph boxes of neighbouring lines touch
SLACK_PX = 1.0

# Per chart: its title (to name it), the free texts and each axis' tick labels, each as
# its own box (getBBox: before any rotation) and the matrix from there to the screen, so
# that rotated tick labels are compared in their own frame; only visible, non-empty texts.
_TEXT_BOXES_JS = """(chart) => {
    const box = (el) => {
        const s = getComputedStyle(el);
        const r = el.getBoundingClientRect();
        if (s.visibility === 'hidden' || s.display === 'none' || Number(s.opacity || 1) === 0
            || !el.textContent.trim() || r.width === 0 || r.height === 0) return null;
        const b = el.getBBox();
        const m = el.getScreenCTM();
        return {text: el.textContent.trim(), box: [b.x, b.y, b.x + b.width, b.y + b.height],
                ctm: [m.a, m.b, m.c, m.d, m.e, m.f]};
    };
    const boxes = (root, selector) => [...root.querySelectorAll(selector)].map(box)
        .filter((b) => b !== null);
    const free = boxes(chart, '.annotation-text, .legendtext, .g-gtitle text, .textpoint text');
    const axes = [...chart.querySelectorAll('.xaxislayer-above, .yaxislayer-above')]
        .map((group) => boxes(group, '.xtick text, .ytick text'));
    const title = chart.querySelector('.g-gtitle text');
    const r = chart.querySelector('.main-svg').getBoundingClientRect();
    return {title: title ? title.textContent : '', free, axes,
            frame: [r.left, r.top, r.right, r.bottom]};
}"""


def _matrix(ctm: list[float]) -> np.ndarray:
    a, b, c, d, e, f = ctm
    return np.array([[a, c, e], [b, d, f], [0.0, 0.0, 1.0]])


def _corners(box: list[float]) -> np.ndarray:
    x0, y0, x1, y1 = box
    return np.array([[x0, x1, x1, x0], [y0, y0, y1, y1], [1.0, 1.0, 1.0, 1.0]])


def intersect(a: dict, b: dict) -> bool:
    """Whether b's box, carried into a's frame (exact when both are rotated alike),
    overlaps a's box by more than SLACK_PX both ways."""
    inside = np.linalg.solve(_matrix(a["ctm"]), _matrix(b["ctm"]) @ _corners(b["box"]))
    wide = min(a["box"][2], inside[0].max()) - max(a["box"][0], inside[0].min())
    tall = min(a["box"][3], inside[1].max()) - max(a["box"][1], inside[1].min())
    return wide > SLACK_PX and tall > SLACK_PX


def cut(boxes: list[dict], frame: list[float]) -> list[str]:
    """The texts that reach past the chart's edges (drawn cut off)."""
    found = []
    for b in boxes:
        x, y, _ = _matrix(b["ctm"]) @ _corners(b["box"])
        if x.min() < frame[0] - SLACK_PX or y.min() < frame[1] - SLACK_PX \
                or x.max() > frame[2] + SLACK_PX or y.max() > frame[3] + SLACK_PX:
            found.append(b["text"])
    return found


def overlaps(boxes: list[dict]) -> list[tuple[str, str]]:
    """The pairs of texts whose boxes intersect."""
    return [(a["text"], b["text"]) for i, a in enumerate(boxes) for b in boxes[i + 1:]
            if intersect(a, b)]


# Texts a page draws cut off: a metric tile's value or label, or a static table's cell,
# whose text is wider than its box (Streamlit ends it with an ellipsis).
_CUT_TEXTS_JS = """() => [...document.querySelectorAll(
        '[data-testid="stMetricValue"] div, [data-testid="stMetricLabel"] p, '
        + '[data-testid="stTable"] td, [data-testid="stTable"] th')]
    .filter((el) => el.offsetParent !== null && el.scrollWidth > el.clientWidth + 1)
    .map((el) => el.textContent.trim())"""


@pytest.fixture(scope="module")
def wide_page(browser):
    """A page at the size the issue was seen at (1400 x 900)."""
    context = new_context(browser, VIEWPORT)
    try:
        yield context.new_page()
    finally:
        context.close()


@pytest.mark.parametrize("lang", ("en", "zh"))
@pytest.mark.parametrize("name", PAGES)
def test_no_two_texts_of_a_chart_overlap(app_url, wide_page, name, lang):
    open_app(wide_page, f"{app_url}/{name}?lang={lang}")
    if wide_page.locator(PLOT).count():  # the start page and the sweep (before a run) have none
        wait_for_charts(wide_page)
    assert exception_texts(wide_page) == []
    screenshot(wide_page, f"page_{name or 'start'}_{lang}")
    assert wide_page.evaluate(_CUT_TEXTS_JS) == [], f"texts cut off on /{name} ({lang})"
    problems = {}
    charts = wide_page.locator(PLOT)
    for index in range(charts.count()):
        chart = charts.nth(index)
        if not chart.is_visible():  # folded in a closed expander: not drawn at its size
            continue
        seen = chart.evaluate(_TEXT_BOXES_JS)
        clashes = overlaps(seen["free"]) + [(text, "the chart's edge")
                                            for text in cut(seen["free"], seen["frame"])]
        for ticks in seen["axes"]:
            clashes += overlaps(ticks)
        if clashes:
            problems[f"{index}: {seen['title'][:60]}"] = clashes
    assert not problems, f"overlapping texts on /{name} ({lang}): {problems}"
