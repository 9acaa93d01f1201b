"""One real-browser pass through the Puzzles page: the code editor (the component's
iframe, or the text box that stands in for it) shows the starter code; Run grades it and
the verdict the grader gives the starter is shown; code typed into the editor is what the
next Run grades (``import os`` typed on line 1 is refused, pointing at line 1); and the
page reads in Chinese. Screenshots land in test-output/."""
from __future__ import annotations

import pytest

from explorer.core import puzzles as grader
from explorer.core.i18n import t
from explorer.ui.pages.puzzles import RUN_BUTTON
from explorer.ui.puzzles_view import VERDICT_IDS
from kernels.ascendc.puzzles import get
from tests.browser import (
    assert_chinese,
    exception_texts,
    main_text,
    open_app,
    rerun,
    screenshot,
    wait_for_charts,
    wait_for_text_drawn,
)
from tests.waiting import poll_until

PID = "vector_add_one_core"
EDITOR = 'iframe[title="code_editor.code_editor"]'
FALLBACK = '[data-testid="stTextArea"]'


def _open(page, app_url: str, lang: str) -> bool:
    """Open the puzzle; True when the editor component is there (False: the text box)."""
    open_app(page, f"{app_url}/puzzles?puzzle={PID}&lang={lang}")
    shown = page.locator(EDITOR).or_(page.locator(FALLBACK)).first
    shown.wait_for(state="visible")
    return page.locator(EDITOR).count() > 0


def _editor_text(page) -> str:
    return page.frame_locator(EDITOR).locator(".ace_content").inner_text()


def _run(page) -> None:
    with rerun(page):
        page.locator(f".st-key-{RUN_BUTTON}").get_by_role("button").first.click()


@pytest.mark.parametrize("lang", ("en", "zh"))
def test_the_starter_runs_and_gets_its_verdict(app_url, page, lang):
    has_editor = _open(page, app_url, lang)
    starter = get(PID).starter
    first_line = starter.strip().splitlines()[0]
    if has_editor:
        poll_until(lambda: _editor_text(page), lambda text: first_line in text,
                   f"{first_line!r} in the editor")
    else:
        assert page.locator(f"{FALLBACK} textarea").input_value() == starter
    expected = grader.check(PID, starter).status  # what the grader says of the starter
    _run(page)
    heading = t(VERDICT_IDS[expected], lang)
    wait_for_text_drawn(page, heading)
    assert exception_texts(page) == []
    wait_for_charts(page)
    page.mouse.move(0, 0)  # no tooltip over the page
    page.get_by_text(heading, exact=True).first.scroll_into_view_if_needed()
    screenshot(page, f"puzzles_starter_{lang}")
    if lang == "zh":
        assert_chinese(page, ("ui.puzzles.",), "ui.puzzles.title", "ui.puzzles.progress_title",
                       VERDICT_IDS[expected])


def test_code_typed_in_the_editor_is_what_runs(app_url, page):
    if not _open(page, app_url, "en"):
        pytest.skip("the code editor component is not installed: the text box stands in")
    editor = page.frame_locator(EDITOR)
    poll_until(lambda: _editor_text(page), lambda text: "def " in text, "the starter shown")
    editor.locator("textarea.ace_text-input").focus()
    page.keyboard.press("Control+Home")
    page.keyboard.type("import os\n")
    _run(page)  # the click takes the focus from the editor, which sends its text first
    wait_for_text_drawn(page, t("ui.puzzles.verdict.refused", "en"))
    text = main_text(page)
    assert t("ui.puzzles.at_line", "en", line=1) in text
    assert exception_texts(page) == []
    page.mouse.move(0, 0)
    page.get_by_text(t("ui.puzzles.verdict.refused", "en"), exact=True).first \
        .scroll_into_view_if_needed()
    screenshot(page, "puzzles_typed_refused")
