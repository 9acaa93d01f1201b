"""Real-browser passes through the start page and the chip page's own address: ``/chip``
opens the chip page in both languages (not Streamlit's "Page not found"), ``/`` shows the
start page in one screen in English and Chinese, and its first card opens its gallery
scenario on its page with the charts drawn. Screenshots land in test-output/."""
from __future__ import annotations

from urllib.parse import parse_qsl, urlsplit

import pytest

import hardware_presets as hp
from explorer.core.i18n import t
from explorer.ui.pages import start
from tests.browser import (
    VIEWPORT,
    english_leftovers,
    exception_texts,
    main_text,
    open_app,
    open_rendered,
    screenshot,
    wait_for_charts,
    wait_for_run,
    wait_for_url,
)

NOT_FOUND = "Page not found"
LINK_BUTTON = '[data-testid="stLinkButton"] a'
#: the page is laid out for one screen of 1400 x 900 (the fixture's window is as wide)
SCREEN_HEIGHT = 900
# The lowest bottom edge of anything the main area shows (hidden elements have no height).
_CONTENT_BOTTOM_JS = """() => Math.max(...[...document.querySelectorAll(
    '[data-testid="stMain"] [data-testid="stElementContainer"]')]
    .map(e => e.getBoundingClientRect()).filter(r => r.height > 0).map(r => r.bottom))"""


@pytest.mark.parametrize(("query", "lang"), [("", "en"), ("?lang=zh", "zh")])
def test_chip_page_is_at_chip(app_url, page, query, lang):
    title = t("ui.chip.title", lang, chip=hp.load("910B2").display_name)
    open_rendered(page, f"{app_url}/chip{query}", title)  # its core diagram drawn
    assert NOT_FOUND not in page.locator("body").inner_text()
    assert urlsplit(page.url).path.endswith("/chip")
    assert exception_texts(page) == []


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_start_page_fits_one_screen(app_url, page, lang):
    open_app(page, f"{app_url}/?lang={lang}")
    page.locator(LINK_BUTTON).nth(len(start.CARDS) - 1).wait_for()  # the cards' row drawn
    text = main_text(page)
    for msg_id in ("app.title", "start.cards", "start.next_title", "start.caveat",
                   "nav.chip"):
        assert t(msg_id, lang) in text, msg_id
    assert page.locator(LINK_BUTTON).count() == len(start.CARDS)
    assert NOT_FOUND not in page.locator("body").inner_text()
    if lang == "zh":
        assert english_leftovers(text, ("start.",)) == []
    assert exception_texts(page) == []
    assert VIEWPORT["width"] == 1400
    assert page.evaluate(_CONTENT_BOTTOM_JS) <= SCREEN_HEIGHT  # no scrolling needed
    screenshot(page, f"start_{lang}", full_page=False)


def test_first_card_opens_its_scenario_with_its_charts(app_url, page):
    open_app(page, f"{app_url}/")
    scenario_id = start.CARDS[0][0]
    expected = urlsplit(start.card_link(scenario_id, "en"))
    # the first card's link by its address (not the first link drawn: once the decode
    # card's came first), which also checks the card links to its scenario
    button = page.locator(f'{LINK_BUTTON}[href="{start.card_link(scenario_id, "en")}"]')
    button.wait_for()
    assert button.count() == 1
    with page.context.expect_page() as opened:  # a link opens a new tab and session
        button.click()
    scenario_page = opened.value
    try:
        wait_for_run(scenario_page, 0)
        assert wait_for_charts(scenario_page).count() >= 3
        url = wait_for_url(scenario_page, f"/{expected.path[2:]}?")
        shown = dict(parse_qsl(urlsplit(url).query))
        for name, value in parse_qsl(expected.query):
            assert shown.get(name) == value, name  # the page runs the link's values
        assert exception_texts(scenario_page) == []
        assert scenario_page.locator('[data-testid="stAlertContentError"]').count() == 0
        screenshot(scenario_page, "start_first_card")
    finally:
        scenario_page.close()
