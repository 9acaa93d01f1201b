"""Loading a scenario file (TOML or JSON) into the playground: the other half of the
"Download scenario" round trip, so a workshop can hand out a file instead of a recipe.

The file is parsed as data only (``Scenario.from_file_text``: no pickle, no eval) and
validated as a whole; then its preset, overrides, parameters and seed become the session's
values, which the widgets mirror on the rerun. A bad file leaves everything as it was and
says why, translated.
"""
from __future__ import annotations

import streamlit as st

from explorer.core import Scenario
from explorer.ui import errors, state
from hardware_presets.errors import InputError

KERNEL = "vector_add"
MAX_BYTES = 64 * 1024  # a scenario is a few hundred bytes; refuse anything huge
_ERROR = "scenario_file_error"
_LOADED = "scenario_file_loaded"


def _read(upload) -> Scenario:
    """The uploaded file as a validated scenario of this page's kernel."""
    data = upload.getvalue()
    if len(data) > MAX_BYTES:
        raise InputError(upload.name, f"{len(data):,} bytes", f"at most {MAX_BYTES:,} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(upload.name, "(file)", "UTF-8 text") from None
    scenario = Scenario.from_file_text(text, upload.name)
    if scenario.kernel != KERNEL:
        raise InputError(f"{upload.name}: kernel", scenario.kernel, KERNEL)
    return scenario


def apply(scenario: Scenario, prefix: str) -> None:
    """Make the scenario the session's chip and this page's parameters."""
    st.session_state[state.PRESET] = scenario.preset
    state.set_overrides(scenario.overrides_dict)
    for name, value in scenario.params_dict.items():
        st.session_state[prefix + name] = value
    st.session_state[prefix + "seed"] = scenario.seed


def _on_upload(prefix: str) -> None:
    upload = st.session_state.get("w.scenario_file")
    if upload is None:
        return
    try:
        scenario = _read(upload)
    except InputError as exc:
        st.session_state[_ERROR] = exc
        return
    apply(scenario, prefix)
    st.session_state[_LOADED] = scenario.name or upload.name


def uploader(prefix: str) -> None:
    """An expander with the file uploader, and the outcome of the last upload (once)."""
    with st.expander(state.tr("ui.scenario.load")):
        st.file_uploader(state.tr("ui.scenario.file"), type=["toml", "json"],
                         key="w.scenario_file", on_change=_on_upload, args=(prefix,),
                         help=state.tr("ui.scenario.file_help"))
    error = st.session_state.pop(_ERROR, None)
    if error is not None:
        errors.show(error, state.language())
    loaded = st.session_state.pop(_LOADED, None)
    if loaded is not None:
        st.success(state.tr("ui.scenario.loaded", name=errors.escape(loaded)))
