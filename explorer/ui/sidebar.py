"""The sidebar every page shares: language switch and chip preset picker.

Both are bound to session values (see ``state.bound``), so they keep their value across
page switches and the URL carries them (``?lang=zh&preset=910B4``). Problems met while
reading the URL (an unknown preset, a bad override) are shown here once, translated.
"""
from __future__ import annotations

import streamlit as st

import hardware_presets as hp
from explorer.core.i18n import LANGUAGES, t
from explorer.ui import errors, state


def _preset_name(name: str) -> str:
    """A preset as the picker lists it: its display name, with the file name for clarity."""
    return f"{hp.load(name).display_name} ({name})"


def preset_picker(where=st, widget: str = "preset") -> str:
    """The chip preset selectbox; the sidebar's and the chip page's share one value."""
    return where.selectbox(state.tr("sidebar.chip"), hp.list_presets(),
                           format_func=_preset_name, help=state.tr("ui.sidebar.chip_help"),
                           **state.bound(state.PRESET, state.preset(), widget=widget))


def render() -> None:
    """Draw the sidebar: title, language, preset, overrides in use, URL problems."""
    lang = state.language()
    side = st.sidebar
    side.markdown(f"**{state.tr('app.title')}**")
    side.radio(state.tr("sidebar.language"), LANGUAGES, horizontal=True,
               format_func=lambda code, lang=lang: t(f"ui.lang.{code}", lang),
               **state.bound(state.LANG, lang))
    preset_picker(side)
    changed = state.overrides()
    if changed:
        names = ", ".join(f"{k} = {v:g}" for k, v in sorted(changed.items()))
        side.caption(state.tr("ui.sidebar.overrides", fields=errors.escape(names)))
    for exc in state.url_errors():
        with side:
            errors.show(exc, state.language())
