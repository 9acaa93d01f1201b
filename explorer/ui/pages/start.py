"""Page "Start here", the app's default page (``/``): what the tool is in three lines, three
gallery runs to open first, each with the one thing to notice, and where to go next.

A card's scenario is the gallery's (``explorer.core.gallery``): its link is the relative URL
of its kernel's page with the scenario's own chip and parameters (``run_view.scenario_url``,
as the advisor's links) and the session's language, so the page it opens runs that very
scenario and the link can be shared. Like the other links between pages it opens a new
session (a new tab), which reads the URL as a shared link would. The page emulates nothing
itself and takes no page parameters, so a link into another page passes through it.
Streamlit runs this file as the page script (``__name__ == "__main__"``).
"""
from __future__ import annotations

import functools
import tomllib
from urllib.parse import parse_qsl, urlencode

import streamlit as st

from explorer.core import gallery
from explorer.ui import run_view, state, widgets
from explorer.ui.kernel_pages import page_of
from explorer.ui.pages import page_file

#: the cards, in order: (gallery scenario id, message id of the one thing to notice)
CARDS = (("double_buffer_b", "start.card.double_buffer"),
         ("split_k_b", "start.card.split_k"),
         ("decode_memory_bound", "start.card.decode"))
#: where to go next, in groups: (message id of the group's title, its pages as (module
#: under explorer/ui/pages, message id of what the page is for))
NEXT = (("start.group.chip", (("chip", "start.next.chip"), ("validation", "start.next.validation"),
                              ("claims", "start.next.claims"))),
        ("start.group.formats", (("precision", "start.next.precision"),
                                 ("sparse", "start.next.sparse"),
                                 ("kernels", "start.next.kernels"))),
        ("start.group.scale", (("balance", "start.next.balance"),
                               ("multicard", "start.next.multicard"),
                               ("sweep", "start.next.sweep"))),
        ("start.group.study", (("compare", "start.next.compare"), ("lab", "start.next.lab"),
                                ("puzzles", "start.next.puzzles"))))


@functools.cache
def _file_params(scenario_id: str) -> tuple[str, ...]:
    """The parameters the gallery file itself sets (the others are the kernel's defaults)."""
    with gallery.entry(scenario_id).path.open("rb") as file:
        return tuple(tomllib.load(file).get("params", {}))


def card_link(scenario_id: str, lang: str) -> str:
    """The relative URL that opens gallery scenario ``scenario_id`` on its kernel's page in
    ``lang``: the page's own query (the generic page's ``kernel=``), then the scenario's
    preset, overrides and parameters. Those the gallery file sets are written even when
    they equal a default, and so are those whose page default differs from the kernel's,
    so that the link says what it runs and the page cannot fall back to its own default."""
    scenario = gallery.load(scenario_id)
    page = page_of(scenario.kernel)
    path, _, own = page.path.partition("?")
    written = dict.fromkeys((*_file_params(scenario_id), *page.defaults))
    query = {**dict(parse_qsl(own)), **run_view.scenario_url(scenario, written, lang)}
    return f"./{path}?{urlencode(query)}"


def _card(scenario_id: str, notice_id: str) -> None:
    """One bordered card: the lesson's title, what to notice, where it runs, the button."""
    found = gallery.entry(scenario_id)
    scenario = gallery.load(scenario_id)
    title_id = gallery.lesson_ids(found.lesson)[0]
    lang = state.language()
    with st.container(border=True, height="stretch"):
        with st.container(height="stretch", gap="small"):  # the buttons line up below
            st.markdown(f"**{state.tr(title_id)}**")
            st.markdown(state.tr(notice_id))
        st.caption(state.tr("start.runs_on", kernel=page_of(scenario.kernel).title(lang),
                            chip=scenario.chip().name))
        st.link_button(state.tr("start.open"), card_link(scenario_id, lang), type="primary",
                       icon=":material/play_arrow:", width="stretch")


def _next() -> None:
    """The other pages in groups side by side: a link each (titled as the navigation
    titles it), what the page is for in its tooltip."""
    st.subheader(state.tr("start.next_title"))
    for column, (group_id, pages) in zip(st.columns(len(NEXT)), NEXT):
        column.caption(state.tr(group_id))
        for module, text_id in pages:
            column.page_link(page_file(module), help=state.tr(text_id))


def main() -> None:
    """Draw the start page: what the tool is, the three cards, where to go next."""
    widgets.sidebar()
    st.title(state.tr("app.title"))
    st.markdown(state.tr("start.intro", what=state.tr("start.what"), why=state.tr("start.why")))
    st.caption(state.tr("start.caveat"))
    st.subheader(state.tr("start.cards"), help=state.tr("start.cards_help"))
    for column, (scenario_id, notice_id) in zip(st.columns(len(CARDS)), CARDS):
        with column:
            _card(scenario_id, notice_id)
    _next()
    state.sync_url()


if __name__ == "__main__":
    main()
