"""Page "Sparse attention": one concept, what keeping only some of the KV cache costs in
accuracy and saves in memory and time. The blog keeps the sinks and the keys with the
largest norm; the literature keeps the smallest norm (Devoto et al.), the heavy hitters
(H2O), the sinks and a recent window (StreamingLLM), or reads the pages a query needs
(Quest). Every rule is measured on the same attention inputs, and the chosen one is
emulated in a decode step next to dense attention.

Read the widgets; measure every policy's accuracy against the keep ratio on the chosen
inputs (synthetic with its designed structure, or an uploaded dump) and show which tokens
each keeps and how key norms relate to attention; then emulate the dense step, the
sparse step and the compression (cached) and show the bytes, the times, the break-even,
the compression on the timeline and the check; explain each policy with its paper. Bad
input is shown translated and the page goes on. Streamlit runs this file as the page
script.
"""
from __future__ import annotations

import streamlit as st

from explorer.ui import advisor_view, errors, state, widgets
from explorer.ui import sparse_controls as controls
from explorer.ui import sparse_explain as explain
from explorer.ui import sparse_view as view
from hardware_presets import Chip
from hardware_presets.errors import InputError


def _inputs(p: dict):
    """(cache key, inputs) of the chosen data, or None after saying why there are none."""
    try:
        found = view.inputs(p)
    except InputError as exc:
        errors.show(exc, state.language(), controls.label_id)
        explain.show_format()
        return None
    if found is None:
        st.info(state.tr("ui.sparse.upload_prompt"), icon=":material/upload_file:")
        explain.show_format()
    return found


def _accuracy(p: dict) -> float | None:
    """Every policy's accuracy on the data, the kept tokens, the norm relation (rho)."""
    st.subheader(state.tr("ui.sparse.accuracy_title"))
    found = _inputs(p)
    if found is None:
        return None
    explain.show_data(p, found[1])
    try:
        view.show_accuracy(p, found)
    except InputError as exc:
        errors.show(exc, state.language(), controls.label_id)
        return None
    st.subheader(state.tr("ui.sparse.kept_title"))
    rho = view.show_kept(p, found)
    explain.show_relation(rho)
    return rho


def _cost(chip: Chip, p: dict) -> None:
    """Bytes and time of the decode step with and without the policy, from emulation."""
    st.subheader(state.tr("ui.sparse.memory_title"))
    try:
        scenario = view.scenario(chip, p)
        with st.spinner(state.tr("ui.sparse.running")):
            s = view.step(scenario)
    except InputError as exc:
        errors.show(exc, state.language(), controls.label_id)
        return
    explain.show_workload(p, s)
    view.show_memory(s)
    explain.show_blog(s)
    st.subheader(state.tr("ui.sparse.time_title"))
    view.show_time(s)
    explain.show_time(s)
    st.subheader(state.tr("ui.sparse.compress_title"))
    view.show_compression(scenario, s)
    view.show_check(scenario, s)
    advisor_view.show_advisor(state.simulate(scenario))


def main() -> None:
    """Draw the page: examples, controls, accuracy, bytes and time, explanation."""
    widgets.sidebar()
    chip = state.chip()
    explain.show_intro(chip)
    for exc in controls.take_url():
        errors.show(exc, state.language(), controls.label_id)
    controls.examples()
    p = controls.controls()
    rho = _accuracy(p)
    _cost(chip, p)
    explain.explain(rho)
    state.sync_url(controls.url_params(p))


if __name__ == "__main__":
    main()
