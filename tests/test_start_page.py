"""The start page under ``streamlit.testing.v1.AppTest``: it is app.py's default page (``/``)
and the chip page is at ``/chip``; it renders in English and Chinese; its three cards each
link to a gallery scenario on that scenario's page, and the page the link opens runs the
scenario (its widgets hold the gallery's values, with no error); the "where to go next"
links and the cards together reach every other page.
"""
from __future__ import annotations

from urllib.parse import parse_qsl, urlsplit

import pytest
from streamlit.testing.v1 import AppTest

from explorer.core import gallery
from explorer.core.i18n import t
from explorer.ui import app_main
from explorer.ui.kernel_pages import page_of
from tests.apptest_helpers import APP, open_page, run, start_app, texts, widget

START = "explorer/ui/pages/start.py"
CHIP = "explorer/ui/pages/chip.py"
PAGE_FILE = "explorer/ui/pages/{}.py"
#: URL parameters every link carries that are not the kernel's
SHARED = ("lang", "preset")


def app_pages() -> dict[str, str]:
    """The app's PAGES (explorer/ui/app_main.py, which app.py runs) as {url path: page
    module}."""
    return {path: module for module, path, _, _ in app_main.PAGES}


def start(lang: str = "en") -> AppTest:
    return run(start_app({"lang": lang}))


def links(at: AppTest) -> list[tuple[str, dict[str, str]]]:
    """(url path, query) of every card's link button, in order."""
    found = []
    for button in at.get("link_button"):
        url = urlsplit(button.proto.url)
        assert url.path.startswith("./") and not url.scheme and not url.netloc, button.proto.url
        found.append((url.path[2:], dict(parse_qsl(url.query))))
    return found


def scenario_of(path: str, query: dict[str, str]) -> gallery.Entry:
    """The one gallery scenario that the link opens: on its kernel's page, with its chip
    and every parameter of the link equal to the scenario's."""
    def opens(entry: gallery.Entry) -> bool:
        scenario = gallery.load(entry.id)
        params = {k: str(v) for k, v in scenario.params_dict.items()}
        return (page_of(scenario.kernel).path == path and query["preset"] == scenario.preset
                and all(params.get(k) == v for k, v in query.items() if k not in SHARED))
    matches = [entry for entry in gallery.entries() if opens(entry)]
    assert len(matches) == 1, (path, query, [m.id for m in matches])
    return matches[0]


# ---- navigation --------------------------------------------------------------------------
def test_start_is_the_default_page_and_the_chip_page_is_at_chip():
    pages = app_pages()
    assert next(iter(pages)) == "" and pages[""] == "start"
    assert pages["chip"] == "chip"
    assert all((APP.parent / PAGE_FILE.format(module)).is_file() for module in pages.values())
    at = start()
    assert at.title[0].value == t("app.title", "en")  # / opens the start page
    run(at.switch_page(PAGE_FILE.format(pages["chip"])))
    assert at.title[0].value == "Chip: Ascend 910B2"


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_chip_page_opens_in_both_languages(lang):
    at = open_page(CHIP, {"lang": lang, "preset": "910B4"})
    assert at.title[0].value == t("ui.chip.title", lang, chip="Ascend 910B4")
    assert not at.error


# ---- the page ----------------------------------------------------------------------------
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_renders_what_it_is_three_cards_and_where_next(lang):
    at = start(lang)
    assert at.title[0].value == t("app.title", lang)
    shown = texts(at.markdown)
    for msg_id in ("start.what", "start.why", "start.card.double_buffer",
                   "start.card.split_k", "start.card.decode"):
        assert t(msg_id, lang).replace("\\", "") in shown, msg_id
    assert t("start.caveat", lang) in texts(at.caption)
    assert [h.value for h in at.subheader] == [t("start.cards", lang), t("start.next_title", lang)]
    buttons = at.get("link_button")
    assert len(buttons) == 3
    assert {b.proto.label for b in buttons} == {t("start.open", lang)}
    assert all(query["lang"] == lang for _, query in links(at))
    assert not at.error and not at.warning


def test_chinese_differs_from_english():
    en, zh = start("en"), start("zh")
    assert texts(en.markdown) != texts(zh.markdown)
    assert [link for _, link in links(en)] != [link for _, link in links(zh)]
    assert [path for path, _ in links(en)] == [path for path, _ in links(zh)]


def test_the_language_switch_rewrites_the_links():
    at = start("en")
    at.sidebar.radio[0].set_value("zh")
    run(at)
    assert at.title[0].value == t("app.title", "zh")
    assert all(query["lang"] == "zh" for _, query in links(at))


def test_the_cards_and_the_next_links_reach_every_other_page():
    at = start()
    pages = app_pages()
    cards = {path for path, _ in links(at)}
    following = [link.proto.page for link in at.get("page_link")]
    assert len(following) == len(set(following))
    assert "chip" in following
    assert cards | set(following) == set(pages) - {""}


# ---- each card opens its scenario ----------------------------------------------------------
def _card_links() -> list[tuple[str, dict[str, str]]]:
    return links(start())


@pytest.mark.parametrize("index", range(3))
def test_a_card_opens_a_gallery_scenario_that_its_page_runs(index):
    path, query = _card_links()[index]
    entry = scenario_of(path, query)
    scenario = gallery.load(entry.id)
    page = page_of(scenario.kernel)
    at = open_page(PAGE_FILE.format(app_pages()[path]), query)  # as app.py maps the path
    assert not at.error, texts(at.error)
    assert at.sidebar.selectbox[0].value == scenario.preset
    params = [name for name in query if name not in SHARED]
    assert params
    for name in params:
        assert widget(at, f"w.{page.prefix}{name}").value == scenario.params_dict[name], name
    assert "Passed" in texts(at.success)  # the run went through, checked in value
    assert len(at.get("plotly_chart")) >= 3
