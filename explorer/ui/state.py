"""Session state shared by every page: language, chip preset, chip overrides, the URL.

Streamlit forgets a widget's value when a page that does not draw it runs, and two widgets
cannot share one key. So every shared value lives under a plain session key (the truth);
widgets get their own key, are re-seeded from the truth before they are drawn and write
back through an ``on_change`` callback (see :func:`bound`). The URL mirrors the truth
(``?lang=zh&preset=910B4&chip.ub_KiB=128&n=65536``) so that a link reproduces a scenario
in a workshop; it is read once per session and rewritten at the end of every run.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping

import streamlit as st

import hardware_presets as hp
from explorer.core import Result, Scenario, shared_results
from explorer.core import simulate as core_simulate
from explorer.core.i18n import DEFAULT_LANGUAGE, LANGUAGES, t
from explorer.ui import worker_status
from hardware_presets.errors import InputError

DEFAULT_PRESET = "910B2"
LANG, PRESET, OVERRIDES = "lang", "preset", "overrides"
URL_ERRORS = "url_errors"  # InputErrors met while reading the URL, shown once
URL_PARAMS = "url_params"  # page parameters found in the URL, taken by their page
CHIP_PREFIX = "chip."  # URL prefix of a chip override: ?chip.ub_KiB=128
_LOADED = "_url_loaded"
CHART_CONFIG = {"displaylogo": False}  # plotly's mode bar on every chart


# ---- reading the URL once ----------------------------------------------------------------
def _load_url_once() -> None:
    """Seed the session from the URL on its first run; bad values become messages."""
    ss = st.session_state
    if ss.get(_LOADED):
        return
    ss[_LOADED] = True
    start_workers()
    query = {k: st.query_params.get(k) for k in st.query_params}
    errors: list[InputError] = []
    lang = query.pop(LANG, None)
    if lang is not None and lang not in LANGUAGES:
        errors.append(InputError("lang", lang, " / ".join(LANGUAGES)))
    ss.setdefault(LANG, lang if lang in LANGUAGES else DEFAULT_LANGUAGE)
    preset = query.pop(PRESET, None)
    if preset is not None and preset not in hp.list_presets():
        errors.append(InputError("preset", preset, ", ".join(hp.list_presets())))
    ss.setdefault(PRESET, preset if preset in hp.list_presets() else DEFAULT_PRESET)
    chip_keys = [k for k in query if k.startswith(CHIP_PREFIX)]
    overrides = {k[len(CHIP_PREFIX):]: query.pop(k) for k in chip_keys}
    _load_overrides(overrides, errors)
    ss[URL_PARAMS] = query
    ss[URL_ERRORS] = errors


def _number(text: str) -> int | float | str:
    """A URL value as int or float when it reads as one (else the text, refused later)."""
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            continue
    return text


def _load_overrides(raw: Mapping[str, str], errors: list[InputError]) -> None:
    """Keep the URL's chip overrides that are valid, one at a time, in URL order."""
    kept: dict[str, int | float] = {}
    for key, text in raw.items():
        trial = {**kept, key: _number(text)}
        try:
            hp.load(st.session_state[PRESET], **trial)
        except InputError as exc:
            errors.append(exc)
            continue
        kept = trial
    st.session_state.setdefault(OVERRIDES, {})[st.session_state[PRESET]] = kept


def take_url_params() -> dict[str, str]:
    """The page parameters of the URL, handed over once (a later page starts clean)."""
    return st.session_state.pop(URL_PARAMS, None) or {}


def url_errors() -> list[InputError]:
    """InputErrors of the URL, handed over once so the message is shown a single time."""
    return st.session_state.pop(URL_ERRORS, None) or []


# ---- the shared values -------------------------------------------------------------------
def language() -> str:
    """The UI language ("en" or "zh"); app.py needs it before any widget is drawn."""
    _load_url_once()
    return st.session_state[LANG]


def tr(msg_id: str, **values: object) -> str:
    """``t`` in the session's language: the one way pages turn ids into text."""
    return t(msg_id, language(), **values)


def preset() -> str:
    """The chip preset every page uses."""
    _load_url_once()
    return st.session_state[PRESET]


def overrides() -> dict[str, int | float]:
    """The user's chip overrides for the current preset (always a valid set)."""
    return dict(st.session_state.setdefault(OVERRIDES, {}).get(preset(), {}))


def set_overrides(values: Mapping[str, int | float]) -> None:
    """Replace the current preset's overrides (callers validate first, see ``chip``)."""
    st.session_state.setdefault(OVERRIDES, {})[preset()] = dict(values)


def chip() -> hp.Chip:
    """The current preset with the current overrides (``hp.load`` caches it)."""
    return hp.load(preset(), **overrides())


# ---- widgets bound to a session value ----------------------------------------------------
def _store(name: str, widget_key: str, convert: Callable | None) -> None:
    value = st.session_state[widget_key]
    st.session_state[name] = convert(value) if convert else value


def bound(name: str, default: object, *, widget: str = "",
          convert: Callable | None = None) -> dict:
    """Keyword arguments that bind a widget to the session value ``name``.

    The widget (key ``w.<widget or name>``) is seeded from the value (or ``default``)
    before it is drawn and writes back on change, so the value survives page switches
    and two widgets (sidebar and page) may share it.
    """
    key = f"w.{widget or name}"
    st.session_state.setdefault(name, default)
    st.session_state[key] = st.session_state[name]
    return {"key": key, "on_change": _store, "args": (name, key, convert)}


# ---- writing the URL ---------------------------------------------------------------------
def sync_url(page_params: Mapping[str, object] | None = None) -> None:
    """Make the URL show the language, preset, overrides and this page's parameters."""
    wanted = {LANG: language(), PRESET: preset()}
    wanted.update({f"{CHIP_PREFIX}{k}": f"{v:g}" if isinstance(v, float) else str(v)
                   for k, v in sorted(overrides().items())})
    wanted.update({k: str(v) for k, v in (page_params or {}).items()})
    current = {k: st.query_params.get(k) for k in st.query_params}
    if current != wanted:
        st.query_params.from_dict(wanted)


# ---- the emulator, shared by every session ----------------------------------------------
def scenario_key(scenario: Scenario) -> str:
    """What identifies a scenario for the caches: its canonical JSON."""
    return scenario.to_json()


def start_workers() -> None:
    """Start (and warm) the worker pool, if not yet: called when a session opens, so that
    the workers load while its first page draws."""
    shared_results.default_results()


def simulate(scenario: Scenario) -> Result:
    """``explorer.core.simulate`` on the worker pool, shared by every session.

    A widget that does not change the scenario (a core filter, the language) reruns the
    page without re-emulating, a room opening the same scenario emulates it once, and the
    work runs in a worker process while other sessions go on (``explorer.core.worker_pool``);
    meanwhile the page says where the request stands. The Result is shared: read-only.
    Errors of the run (InputError, DeadlockError, ...) are raised here as they were there."""
    results = shared_results.default_results()
    future = results.get(scenario_key(scenario), core_simulate, scenario)
    worker_status.wait(future, results.pool, language())
    return future.result()
