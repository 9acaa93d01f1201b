"""Expensive inputs apply on a button: one mechanism for every kernel page.

A kernel page's controls are drawn in a fragment (``st.fragment``). Changing one of its
widgets reruns that fragment alone, not the page: the emulation, the figures and the
advisor below keep showing the values last applied, and the fragment compares what its
widgets hold now with them. While they differ it says, right above the results, that the
results show the applied values, and enables its "Apply" button; the button stores the
widgets' values as the applied ones and reruns the whole page (``st.rerun()``, app scope),
which then runs them. Cheap view-only controls (a timeline's cores and window, a chart's
colouring, the advisor's thresholds) stay outside the fragment and rerun the page at once.

The page runs the applied values and writes them into its URL, so a copied link always
reproduces what the figures show. Values are applied without the button when a page is
opened (its first draw in the session), when a link or an uploaded file brings values
(``fresh``), when a one-click example asks for it (``request``) and when the chip changed
(another preset or override: the controls were just settled for the new chip). Values
are kept per page, under the page's session prefix ("va.", "gm.", "kn.rmsnorm.", ...).
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import streamlit as st

from explorer.ui import state

#: session keys: prefix -> applied values, prefix -> the chip they were applied on, the
#: prefixes whose next draw applies, the prefixes whose draw is the page run's own
_APPLIED, _CHIPS, _REQUESTED, _FIRST = "_applied", "_applied_chip", "_apply_next", "_apply_first"
BUTTON = "apply"  # key of the Apply button (tests press it: ``at.button(key="apply")``)
CONTROLS = "apply_controls"  # key of the container of a page's controls
BAR = "apply_bar"  # key of the container of the stale notice and the button
#: a page's controls: draw the widgets (``first``: on the page's run, not the fragment's
#: own rerun) and return their values, or None when the page cannot run them at all
Draw = Callable[[bool], Any]


def request(prefix: str) -> None:
    """Apply the controls of the page under ``prefix`` on its next draw (an example)."""
    st.session_state.setdefault(_REQUESTED, set()).add(prefix)


def applied(prefix: str) -> Any:
    """The values last applied on the page under ``prefix`` (None before any)."""
    return st.session_state.get(_APPLIED, {}).get(prefix)


def _chip() -> tuple:
    return state.preset(), tuple(sorted(state.overrides().items()))


def comparable(value: Any) -> Any:
    """A value as the comparison sees it: an uploaded file by its id, a mapping item by
    item (a new UploadedFile object stands for the same upload)."""
    if isinstance(value, Mapping):
        return {k: comparable(v) for k, v in value.items()}
    return getattr(value, "file_id", value)


def is_stale(prefix: str, current: Any) -> bool:
    """Whether the widgets' values differ from the applied ones."""
    return comparable(current) != comparable(applied(prefix))


def _apply(prefix: str) -> None:
    """The button's callback: apply on the next draw, and rerun the whole page."""
    request(prefix)
    st.rerun()


def _settle(prefix: str, current: Any) -> None:
    """Take the widgets' values as the applied ones when asked, on the page's first draw,
    and when the chip changed since the last apply."""
    ss = st.session_state
    values, chips = ss.setdefault(_APPLIED, {}), ss.setdefault(_CHIPS, {})
    requested = ss.setdefault(_REQUESTED, set())
    chip = _chip()
    if prefix in requested or prefix not in values or chips.get(prefix) != chip:
        values[prefix], chips[prefix] = current, chip
        requested.discard(prefix)


def bar(prefix: str, stale: bool) -> None:
    """The stale notice (or what the button does) beside the Apply button."""
    with st.container(key=BAR):
        notice, button = st.columns([5, 1], vertical_alignment="center")
        if stale:
            notice.warning(state.tr("apply.stale"), icon=":material/update:")
        else:
            notice.caption(state.tr("apply.current"))
        button.button(state.tr("apply.button"), key=BUTTON, type="primary",
                      icon=":material/play_arrow:", disabled=not stale,
                      help=state.tr("apply.help"), on_click=_apply, args=(prefix,),
                      width="stretch")


@st.fragment
def _panel(prefix: str, draw: Draw) -> None:
    """The controls, then the stale notice and the button: rerun alone on a change."""
    first = st.session_state.setdefault(_FIRST, set())
    is_first = prefix in first
    first.discard(prefix)
    with st.container(key=CONTROLS):
        current = draw(is_first)
    _settle(prefix, current)
    bar(prefix, is_stale(prefix, current))


def controls(prefix: str, draw: Draw, *, fresh: bool = False) -> Any:
    """Draw a page's controls in a fragment (``draw``) and return the applied values the
    page runs. ``fresh``: a link or a file just brought values, which apply at once."""
    if fresh:
        request(prefix)
    st.session_state.setdefault(_FIRST, set()).add(prefix)
    _panel(prefix, draw)
    return applied(prefix)
