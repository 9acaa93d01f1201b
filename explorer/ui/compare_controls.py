"""Controls of the "Compare" page: where scenario A and scenario B come from (a gallery
scenario or an uploaded scenario file), the gallery pairs that fill both sides in one
click, and the URL (``?a=<gallery id>&b=<gallery id>``; an upload leaves its side out of
the URL, since a link cannot carry a file).

Each side's choice lives under a plain session key (``cmp.a``, ``cmp.a_source``) bound to
its widget, as on the other pages. An uploaded file is read as data only, refused above
``MAX_UPLOAD_BYTES`` or when it is not UTF-8 text, and every refusal is an error box.
"""
from __future__ import annotations

import streamlit as st

from explorer.core import Scenario, gallery
from explorer.core.i18n import t
from explorer.ui import errors, state, uploads, widgets
from explorer.ui.kernel_pages import page_of
from hardware_presets.errors import InputError, Phrase

SIDES = ("a", "b")
SOURCES = ("gallery", "upload")
#: message ids of each side's heading and of each source's name
SIDE_IDS = {"a": "ui.compare.side_a", "b": "ui.compare.side_b"}
SOURCE_IDS = {"gallery": "ui.compare.source_choice.gallery",
              "upload": "ui.compare.source_choice.upload"}
PREFIX = "cmp."
MAX_UPLOAD_BYTES = 1 << 20
UPLOAD_TYPES = ("toml", "json")
#: the page opens on the first gallery pair
DEFAULTS = {"a": "double_buffer_a", "b": "double_buffer_b"}


def key(name: str) -> str:
    return PREFIX + name


def chosen_id(side: str) -> str:
    """The gallery id of one side (the default until the user picks another)."""
    return st.session_state.get(key(side), DEFAULTS[side])


def source(side: str) -> str:
    return st.session_state.get(key(f"{side}_source"), "gallery")


# ---- URL and the pair buttons ------------------------------------------------------------
def _take_side(side: str, text: str) -> None:
    if side not in SIDES:
        raise InputError(side, text, state.tr("ui.compare.url_side"))
    gallery.entry(text)  # an unknown id raises, naming the known ones
    st.session_state[key(side)] = text
    st.session_state[key(f"{side}_source")] = "gallery"


def take_url() -> list[InputError]:
    """Copy ``a`` / ``b`` from the URL into session state; returns the refused values."""
    refused = []
    for name, text in state.take_url_params().items():
        try:
            _take_side(name, text)
        except InputError as exc:
            refused.append(exc)
    return refused


def url_params() -> dict[str, str]:
    """The gallery ids of the sides that come from the gallery (uploads stay out)."""
    return {side: chosen_id(side) for side in SIDES if source(side) == "gallery"}


def fill_pair(lesson: str) -> None:
    """Both sides from one gallery pair (the buttons' callback)."""
    for side in SIDES:
        st.session_state[key(side)] = f"{lesson}_{side}"
        st.session_state[key(f"{side}_source")] = "gallery"


def pair_buttons() -> None:
    st.markdown(f"**{state.tr('ui.compare.pairs')}**")
    lessons = [lesson for lesson, _, _ in gallery.pairs()]
    widgets.example_buttons(lessons, "gallery", "cmp_pair", fill_pair)


# ---- reading a side ----------------------------------------------------------------------
def entry_label(scenario_id: str, lang: str | None = None) -> str:
    """"Double buffering (vector add) · BUFFER_NUM = 1" for half a pair, else the title
    (in ``lang``, the session's language by default)."""
    lang = lang or state.language()
    found = gallery.entry(scenario_id)
    title = t(gallery.lesson_ids(found.lesson)[0], lang)
    return f"{title} · {t(found.title_id, lang)}" if found.pair else title


def parse_upload(data: bytes, filename: str, lang: str = "en") -> Scenario:
    """A scenario from an uploaded file's bytes (TOML, or JSON by extension); InputError
    (its allowed part in ``lang``) when it is too large, not UTF-8 or not a scenario."""
    if len(data) > MAX_UPLOAD_BYTES:
        raise InputError(filename, Phrase("refusal.value.bytes", n=f"{len(data):,}"),
                         t("ui.compare.upload_too_big", lang, limit=f"{MAX_UPLOAD_BYTES:,}"))
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(filename, Phrase("refusal.value.file"),
                         t("ui.compare.upload_not_text", lang)) from None
    return Scenario.from_file_text(text, filename)


def _from_gallery(side: str, where) -> Scenario:
    lang = state.language()  # bound now: AppTest formats options outside the script run
    scenario_id = where.selectbox(
        state.tr("ui.compare.pick"), gallery.ids(),
        format_func=lambda i: entry_label(i, lang),
        help=state.tr("ui.compare.pick_help"), **state.bound(key(side), chosen_id(side)))
    found = gallery.entry(scenario_id)
    if not found.pair:
        where.caption(state.tr(gallery.lesson_ids(found.lesson)[1]))
    return gallery.load(scenario_id)


def _from_upload(side: str, where) -> Scenario | None:
    upload = uploads.uploader(where, "ui.compare.upload", UPLOAD_TYPES, f"cmp_upload_{side}",
                              max_bytes=MAX_UPLOAD_BYTES, help_id="ui.compare.upload_help",
                              help_values={"limit": f"{MAX_UPLOAD_BYTES:,}"})
    if upload is None:
        where.info(state.tr("ui.compare.upload_prompt"), icon=":material/upload_file:")
        return None
    try:
        return parse_upload(upload.getvalue(), upload.name, state.language())
    except InputError as exc:
        with where:
            errors.show(exc, state.language())
        return None


def _side(side: str, where) -> Scenario | None:
    """One side's heading, source and scenario (None until a valid one is chosen)."""
    where.subheader(state.tr(SIDE_IDS[side]))
    lang = state.language()  # bound now: AppTest formats options outside the script run
    chosen = where.radio(
        state.tr("ui.compare.source"), SOURCES, horizontal=True,
        format_func=lambda s: t(SOURCE_IDS[s], lang),
        help=state.tr("ui.compare.source_help"),
        **state.bound(key(f"{side}_source"), source(side)))
    scenario = (_from_gallery if chosen == "gallery" else _from_upload)(side, where)
    if scenario is not None:
        where.caption(state.tr("ui.compare.summary", chip=scenario.chip().display_name,
                               kernel=page_of(scenario.kernel).title(state.language()),
                               name=errors.escape(scenario_name(side, chosen, scenario))))
    return scenario


def scenario_name(side: str, chosen: str, scenario: Scenario) -> str:
    """What the side runs, in words: a gallery scenario's translated title (its file's
    ``name`` is English), an uploaded file's own name as the user wrote it."""
    if chosen == "gallery":
        return state.tr(gallery.entry(chosen_id(side)).title_id)
    return scenario.name or "-"


def sides() -> tuple[Scenario | None, Scenario | None]:
    """Scenario A and scenario B from two bordered columns."""
    columns = [column.container(border=True) for column in st.columns(2)]
    a, b = (_side(side, where) for side, where in zip(SIDES, columns))
    return a, b


def same_pair() -> str | None:
    """The lesson when both sides are the two halves of one gallery pair, else None."""
    if any(source(side) != "gallery" for side in SIDES):
        return None
    a, b = (gallery.entry(chosen_id(side)) for side in SIDES)
    return a.lesson if a.pair == b.id and a.side == "a" else None
